//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/internal/testbed"
)

const (
	bgpRouterASN = 65000
	bgpNodeASN   = 65001
	// bgpBound is the loosest time the tests allow a route to follow a
	// member or an edge; what they measure, logged, is the figure.
	bgpBound = 5 * time.Second
)

// bgpBed is a router running FRR in front of two edge switches, which
// sdnlb drives under --l2 fabric and announces the VIPs from:
//
//	client ── router ─ r1 ─ E1 ─┐
//	              ╲             M ─ m1, m2
//	               ─ r2 ─ E2 ──┘
//
// E1 and M are bridges of one Open vSwitch; E2 is a separate switch, with
// a connection tracker of its own, so a connection the router moves
// between the edges meets a tracker that never saw it, as it would
// between two machines. Each edge's next hop is its bridge's own address
// (E1's LocalIP on r1's subnet, E2's on r2's): the router ARPs for it and
// hands the VIPs' packets to the bridge. The members, DSR members holding
// the VIP, reply through the router's r1 address, their gateway. sdnlb's
// BGP session runs from E1's LocalIP to the router's r1 address.
type bgpBed struct {
	e1, m, e2  *Switch
	router     *testbed.Router
	r1, r2     string // the router's links to E1 and E2
	client     *Host
	members    []*Host
	lb         *sdnlbProc
	lbArgs     []string // to restart sdnlb as it ran
	dpid1      string
	dpid2      string
	vip        string
	restartGap time.Duration
}

func newBGPBed(t *testing.T) *bgpBed {
	t.Helper()
	b := &bgpBed{e1: NewSwitch(t)}
	b.m = b.e1.AddBridge(t)
	b.e1.AddPatch(t, b.e1.Name+"-m", b.m.Name+"-e1")
	b.m.AddPatch(t, b.m.Name+"-e1", b.e1.Name+"-m")
	b.e2 = testbed.NewSeparateSwitch(t)
	testbed.LinkSwitches(t, b.m, b.e2)
	b.vip = b.e1.Addr(100)
	gateway := b.e1.Addr(1)
	for i, name := range []string{"m1", "m2"} {
		h := b.m.AddHost(t, name, b.e1.Addr(byte(11+i)))
		h.HoldVIP(t, b.vip)
		mustExec(t, h, "ip", "route", "add", "default", "via", gateway)
		b.members = append(b.members, h)
	}
	b.router = testbed.NewRouter(t, "rt")
	b.r1 = b.router.Link(t, b.e1, gateway+"/24")
	b.r2 = b.router.Link(t, b.e2, b.e2.Addr(1)+"/24")
	b.client = b.router.AddHost(t, "c", b.router.Addr(2))

	b.dpid1, b.dpid2 = dpidOf(t, b.e1), dpidOf(t, b.e2)
	// A fixed OpenFlow port, so that the switches find a restarted sdnlb
	// where they found the last one.
	l, err := net.Listen("tcp", net.JoinHostPort(b.e2.ControllerAddr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	ofAddr := l.Addr().String()
	l.Close()
	b.lbArgs = []string{"--l2", "fabric", "--openflow-addr", ofAddr,
		"--bgp-asn", strconv.Itoa(bgpNodeASN), "--bgp-router-id", b.e1.LocalIP,
		"--bgp-peers", fmt.Sprintf("%s=%d", gateway, bgpRouterASN),
		"--bgp-next-hops", b.dpid1 + "=" + b.e1.LocalIP + "," + b.dpid2 + "=" + b.e2.LocalIP,
		"--bgp-graceful-restart", "60s"}
	b.lb = startSDNLB(t, b.lbArgs...)
	b.lbArgs = append(b.lbArgs, "--db", b.lb.DB)
	for _, sw := range []*Switch{b.e1, b.m, b.e2} {
		sw.SetController(b.lb.OpenFlowAddr)
		dumpOnFailure(t, sw, b.lb)
	}
	b.lb.WaitSwitches(3, 20*time.Second)

	// As the README configures FRR: sdnlb's routes to VIP addresses in,
	// nothing out. Without a delay timer the route-maps take effect at
	// once, not seconds after FRR starts (they refuse routes meanwhile).
	b.router.StartFRR(t, fmt.Sprintf(`frr defaults traditional
hostname %s
bgp route-map delay-timer 0
!
router bgp %d
 bgp router-id %s
 neighbor %s remote-as %d
 address-family ipv4 unicast
  maximum-paths 8
  neighbor %s route-map SDNLB-IN in
  neighbor %s route-map NOTHING out
 exit-address-family
!
ip prefix-list VIPS seq 5 permit %s ge 32
route-map SDNLB-IN permit 10
 match ip address prefix-list VIPS
route-map NOTHING deny 10
!
`, b.router.Name, bgpRouterASN, gateway, b.e1.LocalIP, bgpNodeASN, b.e1.LocalIP, b.e1.LocalIP, b.e1.Subnet))
	b.waitSession(t, 30*time.Second)
	// The session resolved E1's address at the router; E2's too, before
	// the tests ask RouteOf where the router sends a connection.
	b.router.Resolve(t, b.e2.LocalIP)
	return b
}

// mustExec runs a command in a host's namespace.
func mustExec(t *testing.T, h *Host, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := h.Exec(ctx, name, args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// bgp reads GET /v1/bgp.
func (b *bgpBed) bgp(t *testing.T) *sdnlb.BGP {
	t.Helper()
	var out sdnlb.BGP
	b.lb.MustAPI(http.MethodGet, "/v1/bgp", nil, http.StatusOK, &out)
	return &out
}

// waitSession waits until sdnlb's session with the router is established.
func (b *bgpBed) waitSession(t *testing.T, timeout time.Duration) {
	t.Helper()
	var got *sdnlb.BGP
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = b.bgp(t); len(got.Peers) == 1 && got.Peers[0].State == "ESTABLISHED" {
			return
		}
	}
	t.Fatalf("no BGP session with the router after %v: %+v %s", timeout, got, b.router.Vtysh(t, "show bgp summary"))
}

// createVIP creates the bed's VIP on port with a pool over both members,
// which serve on the port (DSR) or on 8000 more (NAT); pool sets the
// pool's fields besides its name, VIP and protocol (a SWITCH DSR
// ROUND_ROBIN pool by default), and monitor, when not nil, is its monitor.
func (b *bgpBed) createVIP(t *testing.T, port int, pool, monitor map[string]any) (*sdnlb.VIP, []*sdnlb.Member) {
	t.Helper()
	vip := b.lb.MustCreateVIP(fmt.Sprintf("bgp-%d", port), b.vip, sdnlb.ProtocolTCP, port, nil)
	fields := map[string]any{"name": vip.Name, "vip_id": vip.ID, "protocol": sdnlb.ProtocolTCP, "lb_method": sdnlb.RoundRobin,
		"dispatch": sdnlb.DispatchSwitch, "forwarding": sdnlb.ForwardingDSR}
	for k, v := range pool {
		fields[k] = v
	}
	var p sdnlb.Pool
	b.lb.MustAPI(http.MethodPost, "/v1/pools", fields, http.StatusCreated, &p)
	if monitor != nil {
		b.lb.MustCreateMonitor(&p, monitor)
	}
	var members []*sdnlb.Member
	for _, h := range b.members {
		port := port
		if p.Forwarding == sdnlb.ForwardingNAT {
			port += 8000
		}
		members = append(members, b.lb.MustCreateMember(&p, h.IP, port))
	}
	return vip, members
}

// route is the router's kernel route to the VIP, as "gateway dev" next
// hops, sorted.
func (b *bgpBed) route(t *testing.T) []string {
	t.Helper()
	var hops []string
	for _, h := range b.router.Route(t, b.vip+"/32") {
		hops = append(hops, h.Gateway+" "+h.Dev)
	}
	slices.Sort(hops)
	return hops
}

// both and one are the route through both edges, and through E1 alone.
func (b *bgpBed) both() []string {
	hops := []string{b.e1.LocalIP + " " + b.r1, b.e2.LocalIP + " " + b.r2}
	slices.Sort(hops)
	return hops
}

// waitRoute waits, up to bgpBound, until the router's route to the VIP
// has the next hops want (none: no route), polling every 20 ms, and
// returns when it first saw them.
func (b *bgpBed) waitRoute(t *testing.T, what string, want []string) time.Time {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(bgpBound); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = b.route(t); slices.Equal(got, want) {
			return time.Now()
		}
	}
	t.Fatalf("%s: the router's route to %s is %q after %v, want %q\n%s", what, b.vip, got, bgpBound, want,
		b.router.Vtysh(t, "show bgp ipv4 unicast"))
	return time.Time{}
}

// waitBuckets waits until the edges hold the same buckets, in groups (and
// slot rows) for n VIPs, each over both members, and each group's buckets
// in the same order, the order a packet's hash picks them by: until then
// an edge that is not ready for a member sends the VIP's new connections
// to the controller, which sets them up its own way.
func (b *bgpBed) waitBuckets(t *testing.T, n int) {
	t.Helper()
	var e1, e2 map[string]int
	var order1, order2 []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		e1, e2 = (&lbBed{sw: b.e1}).buckets(t), (&lbBed{sw: b.e2}).buckets(t)
		order1, order2 = b.bucketOrder(t, b.e1), b.bucketOrder(t, b.e2)
		members := map[string]int{} // by group
		for k := range e1 {
			group, _, _ := strings.Cut(k, " ")
			members[group]++
		}
		if maps.Equal(e1, e2) && slices.Equal(order1, order2) && len(members) == n &&
			!slices.ContainsFunc(slices.Collect(maps.Values(members)), func(m int) bool { return m != 2 }) {
			return
		}
	}
	t.Fatalf("the edges' buckets, want the same in the same order, %d groups over both members:\nE1 %v\nE2 %v\nE1's order %v\nE2's order %v",
		n, e1, e2, order1, order2)
}

// bucketOrder is bucketOrder of the edge's groups, by group id.
func (b *bgpBed) bucketOrder(t *testing.T, edge *Switch) []string {
	t.Helper()
	groups := strings.Split(edge.Ofctl("dump-groups"), "\n")
	slices.Sort(groups)
	return bucketOrder(strings.Join(groups, "\n"))
}

// The route to a VIP appears at the router once its first member comes UP
// and leaves once its last goes DOWN, through both edges; the times are
// measured from the member's transition. announce false withdraws it too.
// GET /v1/bgp, the metrics and the dashboard show the session and the
// routes.
func TestBGP_RouteFollowsMembers(t *testing.T) {
	b := newBGPBed(t)
	vip, members := b.createVIP(t, 80, nil,
		map[string]any{"type": sdnlb.MonitorTCP, "delay": 1, "timeout": 0.5, "max_retries": 1})
	for _, m := range members {
		b.lb.WaitMemberStatus(m.ID, sdnlb.MemberDown, 10*time.Second)
	}
	if got := b.route(t); len(got) != 0 {
		t.Fatalf("a route %q to the VIP without a member UP", got)
	}

	servers := []*HTTPServer{b.members[0].ServeHTTP(t, 80, "m1")}
	seen := b.waitRoute(t, "first member UP", b.both())
	up := b.lb.Member(members[0].ID).Health.Since
	t.Logf("route through both edges %v after the first member came UP", seen.Sub(up).Round(time.Millisecond))
	paths := b.router.Vtysh(t, "show bgp ipv4 unicast "+b.vip+"/32")
	if !strings.Contains(paths, "multipath") || strings.Count(paths, "from "+b.e1.LocalIP) != 2 {
		t.Errorf("the router's paths to the VIP, want two from sdnlb, multipath:\n%s", paths)
	}
	servers = append(servers, b.members[1].ServeHTTP(t, 80, "m2"))
	b.lb.WaitMemberStatus(members[1].ID, sdnlb.MemberUp, 10*time.Second)
	b.waitBuckets(t, 1)
	if got := b.get(t, 40); len(got) != 2 {
		t.Errorf("requests through the router reached %v, want both members", got)
	}

	st := b.bgp(t)
	if len(st.Routes) != 2 || st.Peers[0].Advertised != 2 || !st.Peers[0].AddPaths || !st.Peers[0].GracefulRestart {
		t.Errorf("GET /v1/bgp: %+v, peer %+v: want 2 routes advertised, several paths and graceful restart negotiated", st, st.Peers[0])
	}
	if n := b.lb.Metric("sdnlb_bgp_routes_announced"); n != 2 {
		t.Errorf("sdnlb_bgp_routes_announced %v, want 2", n)
	}
	if n := b.lb.Metric(`sdnlb_bgp_peer_up{peer="` + b.e1.Addr(1) + `"}`); n != 1 {
		t.Errorf("sdnlb_bgp_peer_up %v, want 1", n)
	}
	// The dashboard's BGP panel shows the session and the route.
	br := newBrowser(t)
	br.run("open the dashboard", chromedp.Navigate("http://"+b.lb.APIAddr+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS(`#bgp`)))
	br.waitText("#bgp h2", "1 of 1 up")
	br.waitText(fmt.Sprintf(`#bgp tr[data-peer=%q]`, b.e1.Addr(1)), "ESTABLISHED")
	br.waitText("#bgp ul.routes", b.vip+"/32 via "+b.e1.LocalIP+", "+b.e2.LocalIP)

	b.lb.MustAPI(http.MethodPatch, "/v1/vips/"+vip.ID, map[string]any{"announce": false}, http.StatusOK, nil)
	b.waitRoute(t, "announce false", nil)
	b.lb.MustAPI(http.MethodPatch, "/v1/vips/"+vip.ID, map[string]any{"announce": true}, http.StatusOK, nil)
	b.waitRoute(t, "announce true", b.both())

	servers[0].Stop()
	b.lb.WaitMemberStatus(members[0].ID, sdnlb.MemberDown, 10*time.Second)
	if got := b.route(t); !slices.Equal(got, b.both()) {
		t.Fatalf("one member of two DOWN: route %q, want %q", got, b.both())
	}
	servers[1].Stop()
	gone := b.waitRoute(t, "last member DOWN", nil)
	down := b.lb.Member(members[1].ID).Health.Since
	t.Logf("route gone %v after the last member went DOWN", gone.Sub(down).Round(time.Millisecond))
}

// get sends n requests from the client through the VIP, each on a new
// connection, and counts the answers by member.
func (b *bgpBed) get(t *testing.T, n int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := b.client.HTTPGet(ctx, "http://"+b.vip+"/")
		cancel()
		if err != nil {
			t.Fatalf("GET through the VIP: %v", err)
		}
		got[body]++
	}
	return got
}

// conn is a long-lived connection through the VIP: its member, the edge
// the router sends it through, and how it fared.
type conn struct {
	k    *keptConn
	edge string // the router's link
	err  error  // the first failure: an error, or another member
}

// openConns opens n connections from the client to the VIP's port and
// asks which edge the router sends each through.
func (b *bgpBed) openConns(t *testing.T, n, port int) []*conn {
	t.Helper()
	addr := net.JoinHostPort(b.vip, strconv.Itoa(port))
	conns := make([]*conn, n)
	for i := range conns {
		k := keepOpen(t, b.client, addr)
		local := k.conn.LocalAddr().(*net.TCPAddr)
		edge, err := b.router.RouteOf(b.client.Link, b.client.IP, local.Port, b.vip, port)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = &conn{k: k, edge: edge}
	}
	return conns
}

// askAll asks on every connection, one request a connection at a time, every
// 100 ms, until stop closes; each records its first failure.
func askAll(conns []*conn, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				member, err := c.k.askWithin(10 * time.Second) // a request into a dead edge waits for TCP to send it again
				if err == nil && member != c.k.member {
					err = fmt.Errorf("moved from %s to %s", c.k.member, member)
				}
				if err != nil {
					c.err = err
					return
				}
			}
		})
	}
	return &wg
}

// Long-lived DSR connections keep their member when the router moves them
// to the other edge: the edges hold the same buckets and the switches hash
// a packet alike, so the edge that takes a connection over, whose tracker
// never saw it, sends it to the member it had. While both edges are up the
// router spreads new connections over both; one edge dies under the load,
// its route is withdrawn, and the connections it carried go on through
// the other.
func TestBGP_EdgeLostUnderLoad(t *testing.T) {
	const n = 200
	b := newBGPBed(t)
	b.createVIP(t, 80, nil, nil)
	for i, h := range b.members {
		h.ServeHTTP(t, 80, fmt.Sprintf("m%d", i+1))
	}
	b.waitRoute(t, "members in rotation", b.both())
	b.waitBuckets(t, 1)

	conns := b.openConns(t, n, 80)
	edges, members := map[string]int{}, map[string]int{}
	for _, c := range conns {
		edges[c.edge]++
		members[c.k.member]++
	}
	t.Logf("%d connections: %d through E1, %d through E2; members %v", n, edges[b.r1], edges[b.r2], members)
	if edges[b.r1] == 0 || edges[b.r2] == 0 || len(members) != 2 {
		t.Fatalf("connections by edge %v, by member %v: want both edges and both members", edges, members)
	}

	// E1's tracker holds the connections E1 took in and none of E2's:
	// once they move, E1 meets them as new.
	tracked := b.e1.Appctl("dpctl/dump-conntrack", "zone=93")
	for _, c := range conns {
		port := c.k.conn.LocalAddr().(*net.TCPAddr).Port
		if held := strings.Contains(tracked, fmt.Sprintf("sport=%d,", port)); held != (c.edge == b.r1) {
			t.Fatalf("the connection from port %d went through %s, and E1's tracker holds it: %v\n%s", port, c.edge, held, tracked)
		}
	}

	stop := make(chan struct{})
	asking := askAll(conns, stop)
	time.Sleep(time.Second)
	killed := time.Now()
	b.e2.Kill()
	moved := b.waitRoute(t, "E2 died", []string{b.e1.LocalIP + " " + b.r1})
	t.Logf("route through E1 alone %v after E2 died", moved.Sub(killed).Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	close(stop)
	asking.Wait()

	kept := map[string]int{}
	var lost []string
	for _, c := range conns {
		if c.err == nil {
			var member string
			if member, c.err = c.k.askWithin(10 * time.Second); c.err == nil && member != c.k.member {
				c.err = fmt.Errorf("moved from %s to %s", c.k.member, member)
			}
		}
		if c.err != nil {
			lost = append(lost, fmt.Sprintf("through %s: %v", c.edge, c.err))
			continue
		}
		kept[c.edge]++
	}
	t.Logf("kept their member: %d of %d through E1, %d of %d through E2 (moved to E1)",
		kept[b.r1], edges[b.r1], kept[b.r2], edges[b.r2])
	if 100*(kept[b.r1]+kept[b.r2]) < 99*n {
		t.Fatalf("%d of %d connections lost, first: %s", len(lost), n, strings.Join(lost[:min(5, len(lost))], "; "))
	}
}

// A router that helps sdnlb restart gracefully keeps its routes while
// sdnlb is dead, so traffic goes on through the edges (they keep their
// flows), and takes the restarted sdnlb's announcement over: the route
// never loses a next hop.
func TestBGP_GracefulRestartKeepsTheRoute(t *testing.T) {
	b := newBGPBed(t)
	b.createVIP(t, 80, nil, nil)
	for i, h := range b.members {
		h.ServeHTTP(t, 80, fmt.Sprintf("m%d", i+1))
	}
	b.waitRoute(t, "members in rotation", b.both())
	b.waitBuckets(t, 1)

	// A new connection every 50 ms, until stop closes.
	stop := make(chan struct{})
	var mu sync.Mutex
	var sent int
	var failed []string
	var traffic sync.WaitGroup
	traffic.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := b.client.HTTPGet(ctx, "http://"+b.vip+"/")
			cancel()
			mu.Lock()
			sent++
			if err != nil {
				failed = append(failed, err.Error())
			}
			mu.Unlock()
		}
	})
	defer func() { close(stop); traffic.Wait() }()

	// keep checks that the route keeps both next hops until until says
	// the wait is over, within d, and returns how long it took; with a nil
	// until it checks for d.
	keep := func(what string, d time.Duration, until func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < d {
			if got := b.route(t); !slices.Equal(got, b.both()) {
				t.Fatalf("%s: the router's route is %q, want %q", what, got, b.both())
			}
			if until != nil && until() {
				return time.Since(start)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if until != nil {
			t.Fatalf("%s: not within %v", what, d)
		}
		return d
	}
	stale := func() bool {
		var dest struct {
			Paths []struct {
				Stale bool `json:"stale"`
			} `json:"paths"`
		}
		out := b.router.Vtysh(t, "show bgp ipv4 unicast "+b.vip+"/32 json")
		if err := json.Unmarshal([]byte(out), &dest); err != nil || len(dest.Paths) != 2 {
			t.Fatalf("the router's paths to the VIP: %v\n%s", err, out)
		}
		return dest.Paths[0].Stale && dest.Paths[1].Stale
	}

	b.lb.Kill()
	keep("sdnlb killed", 10*time.Second, stale)
	keep("sdnlb dead", 3*time.Second, nil)
	b.lb = startSDNLB(t, b.lbArgs...)
	back := keep("sdnlb restarted", 60*time.Second, func() bool { return !stale() })
	t.Logf("the router took the restarted sdnlb's routes over %v after it started", back.Round(time.Millisecond))
	keep("after the restart", time.Second, nil)

	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d requests through the VIP across the restart", sent)
	if len(failed) > 0 {
		t.Fatalf("%d of %d requests failed, first: %s", len(failed), sent, failed[0])
	}
}

// edgePorts returns n client ports whose connections to the VIP's port the
// router sends through each of its links to the edges, by link.
func (b *bgpBed) edgePorts(t *testing.T, port, from, n int) map[string][]int {
	t.Helper()
	ports := map[string][]int{}
	for p := from; len(ports[b.r1]) < n || len(ports[b.r2]) < n; p++ {
		if p > from+100*n {
			t.Fatalf("the router sends %v of the ports from %d through each edge, want %d", ports, from, n)
		}
		edge, err := b.router.RouteOf(b.client.Link, b.client.IP, p, b.vip, port)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports[edge]) < n {
			ports[edge] = append(ports[edge], p)
		}
	}
	return ports
}

// answered counts the requests to the VIP's port that get an answer, each
// on a new connection from one of ports, within 2 s. (An HTTP client would
// go on dialing past its request's end, and hold the client's threads.)
func (b *bgpBed) answered(ports []int, port int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	for _, p := range ports {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			c, err := b.client.DialFrom(ctx, p, "tcp", net.JoinHostPort(b.vip, strconv.Itoa(port)))
			if err != nil {
				return
			}
			defer c.Close()
			if _, err := (&keptConn{conn: c, r: bufio.NewReader(c)}).askWithin(2 * time.Second); err == nil {
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return n
}

// keptFrom opens a long-lived connection to the VIP's port from the
// client's port p and asks once.
func (b *bgpBed) keptFrom(t *testing.T, p, port int) *keptConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), reuseTimeout)
	defer cancel()
	c, err := b.client.DialFrom(ctx, p, "tcp", net.JoinHostPort(b.vip, strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("connect from port %d: %v", p, err)
	}
	t.Cleanup(func() { c.Close() })
	k := &keptConn{conn: c, r: bufio.NewReader(c)}
	if k.member, err = k.ask(); err != nil {
		t.Fatalf("first request from port %d: %v", p, err)
	}
	return k
}

// What a move between edges does to the connections of the other pools,
// measured (docs/CAPABILITIES.md states it). SWITCH NAT: a connection
// works only where its member's replies pass the tracker of the edge that
// took it in first, the only one that can give them the VIP's address
// back; here the members' replies leave through E1, so new connections
// through E2 fail, and those that E1 took in keep working when the router
// moves them to E2. CONTROLLER: the edge that takes a connection over has
// no flow for it and resets it. CONSISTENT_HASH by CONNECTION hashes the
// Ethernet addresses too, which differ from edge to edge: a moved
// connection keeps its member only by chance; by CLIENT it always does.
func TestBGP_EdgeMoveLimits(t *testing.T) {
	const n = 20
	b := newBGPBed(t)
	b.createVIP(t, 81, map[string]any{"forwarding": sdnlb.ForwardingNAT}, nil)
	b.createVIP(t, 82, map[string]any{"dispatch": sdnlb.DispatchController}, nil)
	b.createVIP(t, 83, map[string]any{"lb_method": sdnlb.ConsistentHash, "hash_key": sdnlb.HashKeyConnection}, nil)
	b.createVIP(t, 84, map[string]any{"lb_method": sdnlb.ConsistentHash, "hash_key": sdnlb.HashKeyClient}, nil)
	for i, h := range b.members {
		for _, port := range []int{8081, 82, 83, 84} {
			h.ServeHTTP(t, port, fmt.Sprintf("m%d", i+1))
		}
	}
	b.waitRoute(t, "members in rotation", b.both())
	b.waitBuckets(t, 3)

	nat := b.edgePorts(t, 81, 20000, 2*n)
	through1, through2 := b.answered(nat[b.r1][:n], 81), b.answered(nat[b.r2][:n], 81)
	t.Logf("SWITCH NAT, both edges announced: %d of %d new connections through E1 answered, %d of %d through E2", through1, n, through2, n)
	if through1 != n || through2 != 0 {
		t.Errorf("SWITCH NAT: %d of %d new connections through E1 answered, %d of %d through E2; want all, and none", through1, n, through2, n)
	}

	// Connections to each VIP that E1 takes in, to move to E2.
	kept := map[int][]*keptConn{}
	for _, port := range []int{82, 83, 84} {
		for _, p := range b.edgePorts(t, port, 100*port, n)[b.r1] {
			kept[port] = append(kept[port], b.keptFrom(t, p, port))
		}
	}
	for _, p := range nat[b.r1][n:] {
		kept[81] = append(kept[81], b.keptFrom(t, p, 81))
	}
	// E1 leaves the route (its node loses it) and keeps forwarding what
	// it is sent, the members' replies among it.
	b.e1.Disconnect()
	b.waitRoute(t, "E1 withdrawn", []string{b.e2.LocalIP + " " + b.r2})
	survived := func(conns []*keptConn) int {
		kept := 0
		for _, k := range conns {
			if member, err := k.askWithin(5 * time.Second); err == nil && member == k.member {
				kept++
			}
		}
		return kept
	}
	natNew := b.answered(nat[b.r2][n:], 81)
	t.Logf("%d of %d new SWITCH NAT connections through E2 alone answered", natNew, n)
	if natNew != 0 {
		t.Errorf("%d of %d new SWITCH NAT connections through E2 alone answered, want none", natNew, n)
	}
	for _, tc := range []struct {
		port int
		pool string
		want int // connections of n that keep their member
	}{
		{81, "SWITCH NAT", n},
		{82, "CONTROLLER DSR", 0},
		{83, "SWITCH DSR CONSISTENT_HASH by CONNECTION", -1},
		{84, "SWITCH DSR CONSISTENT_HASH by CLIENT", n},
	} {
		got := survived(kept[tc.port])
		t.Logf("moved from E1 to E2: %d of %d %s connections kept their member", got, n, tc.pool)
		if tc.want >= 0 && got != tc.want {
			t.Errorf("moved from E1 to E2: %d of %d %s connections kept their member, want %d", got, n, tc.pool, tc.want)
		}
	}
}
