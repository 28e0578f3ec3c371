//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
)

// bucketTarget finds the member one select-group bucket commits a
// connection to: the label (the member's address) of its first commit.
var bucketTarget = regexp.MustCompile(`exec\(set_field:(0x[0-9a-f]+)->ct_label`)

// flowCookie finds a dumped flow's cookie.
var flowCookie = regexp.MustCompile(`cookie=0x([0-9a-f]+)`)

// buckets returns, per group and member ("group_id=1 0xa4d000b"), how
// many buckets of the switch's groups send to it.
func (b *lbBed) buckets(tb testing.TB) map[string]int {
	tb.Helper()
	counts := groupBuckets(b.sw.Ofctl("dump-groups", b.sw.Name))
	for k, n := range slotBuckets(b.sw.Ofctl("dump-flows", "table=5")) {
		counts[k] += n
	}
	return counts
}

// slotGroup reads the group a slot row names its VIP by.
var slotGroup = regexp.MustCompile(`reg2=(0x[0-9a-f]+)`)

// slotBuckets is groupBuckets for the slot rows of the VIPs the switch
// dispatches by client (table 5), from the output of ovs-ofctl dump-flows:
// a slot is a bucket of the group its rows name.
func slotBuckets(dump string) map[string]int {
	counts := map[string]int{}
	for _, line := range strings.Split(dump, "\n") {
		g, m := slotGroup.FindStringSubmatch(line), bucketTarget.FindStringSubmatch(line)
		if g == nil || m == nil {
			continue
		}
		id, _ := strconv.ParseUint(g[1], 0, 32)
		counts[fmt.Sprintf("group_id=%d %s", id, m[1])]++
	}
	return counts
}

// groupBuckets is buckets of the output of ovs-ofctl dump-groups.
func groupBuckets(dump string) map[string]int {
	counts := map[string]int{}
	for _, b := range bucketOrder(dump) {
		counts[b]++
	}
	return counts
}

// bucketOrder lists, group by group, the member each bucket commits
// connections to ("group_id=1 0xa4d000b"), from the output of ovs-ofctl
// dump-groups.
func bucketOrder(dump string) []string {
	var order []string
	for _, line := range strings.Split(dump, "\n") {
		group, buckets, _ := strings.Cut(strings.TrimSpace(line), ",")
		for _, bucket := range strings.Split(buckets, "bucket=")[1:] {
			if m := bucketTarget.FindStringSubmatch(bucket); m != nil {
				order = append(order, group+" "+m[1])
			}
		}
	}
	return order
}

// waitBuckets waits until the switch's group spreads over n members and
// returns how long it took.
func (b *lbBed) waitBuckets(tb testing.TB, n int, timeout time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	var got map[string]int
	for i := 0; i < 1000 && time.Since(start) < timeout; i++ {
		if got = b.buckets(tb); len(got) == n {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("after %v the group spreads over %v, want %d members", timeout, got, n)
	return 0
}

// requireAll checks that every server answered some of the requests.
func requireAll(tb testing.TB, counts map[string]int, names []string) {
	tb.Helper()
	for _, n := range names {
		if counts[n] == 0 {
			tb.Errorf("%s answered none of the requests: %v", n, counts)
		}
	}
}

// A SWITCH NAT pool: the switch spreads connections by itself (no
// per-connection packet-in), members stay reachable at their own
// addresses, and balancing goes on after the controller is killed.
func TestDispatch_SwitchNAT(t *testing.T) {
	b := newDispatchBed(t, 2, 3, sdnlb.RoundRobin, sdnlb.DispatchSwitch, nil)
	counts := spread(t, b.clients, b.url, 30)
	requireAll(t, counts, b.serverNames())
	if n := b.lb.Metric("sdnlb_controller_setups_total"); n != 0 {
		t.Errorf("the controller set up %v connections, want none: the switch dispatches", n)
	}
	direct := "http://" + net.JoinHostPort(b.members[0].IP, strconv.Itoa(memberPort)) + "/"
	if body, err := get(b.clients[0], direct, 5*time.Second); err != nil || body != b.servers[0].Name {
		t.Errorf("direct request to %s: %q, %v", direct, body, err)
	}

	b.lb.Kill()
	requireAll(t, spread(t, b.clients, b.url, 30), b.serverNames())
	if body, err := get(b.clients[1], direct, 5*time.Second); err != nil || body != b.servers[0].Name {
		t.Errorf("direct request to %s with the controller dead: %q, %v", direct, body, err)
	}
}

// A SOURCE_IP pool the switch dispatches: the switch hashes each client's
// address onto its slots, so every connection of a client reaches one
// member with no packet-in, while the controller is dead, and after it
// comes back and adopts the switch's slots.
func TestDispatch_SwitchSourceIP(t *testing.T) {
	persistence := map[string]any{"session_persistence": map[string]any{"type": sdnlb.PersistenceSourceIP, "timeout": 30}}
	for _, tt := range []struct {
		name    string
		method  sdnlb.LBMethod
		vipWith map[string]any
	}{
		{"SourceIPMethod", sdnlb.SourceIP, nil},
		{"SourceIPPersistence", sdnlb.RoundRobin, persistence},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := newDispatchBed(t, 2, 3, tt.method, sdnlb.DispatchSwitch, tt.vipWith)
			var p sdnlb.Pool
			if b.lb.MustAPI(http.MethodGet, "/v1/pools/"+b.pool.ID, nil, http.StatusOK, &p); p.Dispatch != sdnlb.DispatchSwitch {
				t.Fatalf("the pool reads dispatch %s, want %s", p.Dispatch, sdnlb.DispatchSwitch)
			}
			first := b.clientMembers(t, "controller up")
			if n := b.lb.Metric("sdnlb_controller_setups_total"); n != 0 {
				t.Errorf("the controller set up %v connections, want none: the switch dispatches", n)
			}

			b.lb.Kill()
			if dead := b.clientMembers(t, "controller dead"); !maps.Equal(dead, first) {
				t.Errorf("clients' members %v with the controller dead, %v before", dead, first)
			}
			lb := startSDNLB(t, "--db", b.lb.DB)
			lb.Connect(b.sw)
			lb.WaitSwitches(1, 10*time.Second)
			for i := 0; i < 200 && len(lb.LogLines("switch adopted")) == 0; i++ {
				time.Sleep(25 * time.Millisecond)
			}
			if back := b.clientMembers(t, "controller restarted"); !maps.Equal(back, first) {
				t.Errorf("clients' members %v after the controller restarted, %v before", back, first)
			}
			t.Logf("each client kept its member: %v", first)
		})
	}
}

// clientMembers has each client open 12 connections to the VIP, which
// must reach one member, and returns each client's member (its server's
// name).
func (b *lbBed) clientMembers(t *testing.T, phase string) map[string]string {
	t.Helper()
	members := map[string]string{}
	for _, c := range b.clients {
		counts := spread(t, []*Host{c}, b.url, 12)
		if len(counts) != 1 {
			t.Errorf("%s: %s's 12 connections were answered by %v, want one member", phase, c.Name, counts)
		}
		for name := range counts {
			members[c.Name] = name
		}
	}
	return members
}

// newDSRBed is a bed whose switch speaks protocol, with two clients and
// three members holding the VIP on their loopback, and a DSR pool of
// dispatch behind the VIP, on the members' port.
func newDSRBed(t *testing.T, protocol string, dispatch sdnlb.Dispatch) (b *lbBed, url string, names []string) {
	t.Helper()
	sw := NewSwitch(t)
	sw.Protocol = protocol
	b = &lbBed{sw: sw, lb: startSDNLB(t)}
	for i := range 2 {
		b.clients = append(b.clients, sw.AddHost(t, "c"+strconv.Itoa(i+1), sw.Addr(byte(1+i))))
	}
	vipAddr := sw.Addr(100)
	for i := range 3 {
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		h.HoldVIP(t, vipAddr)
		h.ServeHTTP(t, memberPort, "srv"+strconv.Itoa(i+1))
		b.members, names = append(b.members, h), append(names, "srv"+strconv.Itoa(i+1))
	}
	b.lb.Connect(sw)
	dumpOnFailure(t, sw, b.lb)
	b.vip = b.lb.MustCreateVIP("dsr", vipAddr, sdnlb.ProtocolTCP, memberPort, nil)
	var pool sdnlb.Pool
	b.lb.MustAPI("POST", "/v1/pools", map[string]any{"name": "dsr", "vip_id": b.vip.ID, "lb_method": sdnlb.RoundRobin,
		"protocol": sdnlb.ProtocolTCP, "dispatch": dispatch, "forwarding": sdnlb.ForwardingDSR}, 201, &pool)
	b.pool = &pool
	for _, h := range b.members {
		b.lb.MustCreateMember(&pool, h.IP, 0)
	}
	b.lb.WaitPoolMembers(pool.ID, len(b.members), 10*time.Second)
	return b, "http://" + net.JoinHostPort(vipAddr, strconv.Itoa(memberPort)) + "/", names
}

// A SWITCH DSR pool: members hold the VIP on their loopback and answer
// clients straight from it; the switch only rewrites the destination MAC.
func TestDispatch_SwitchDSR(t *testing.T) {
	b, url, names := newDSRBed(t, openFlow13, sdnlb.DispatchSwitch)
	b.waitBuckets(t, 3, 10*time.Second)
	requireAll(t, spread(t, b.clients, url, 30), names)
	if n := b.lb.Metric("sdnlb_controller_setups_total"); n != 0 {
		t.Errorf("the controller set up %v connections, want none: the switch dispatches", n)
	}
	b.lb.Kill()
	requireAll(t, spread(t, b.clients, url, 30), names)
}

// A CONTROLLER DSR pool: the controller picks each connection's member
// and its flow only rewrites the destination MAC (SET_DL_DST on 1.0); the
// members answer clients straight from the VIP.
func TestDispatch_ControllerDSR(t *testing.T) {
	forEachOpenFlow(t, func(t *testing.T, protocol string) {
		b, url, names := newDSRBed(t, protocol, sdnlb.DispatchController)
		counts := spread(t, b.clients[:1], url, 30)
		for _, n := range names {
			if counts[n] != 10 {
				t.Errorf("answers %v, want 10 from each of %v (round robin)", counts, names)
				break
			}
		}
		if n := b.lb.Metric("sdnlb_controller_setups_total"); n != 30 {
			t.Errorf("the controller set up %v connections, want 30", n)
		}
		for _, f := range b.sw.DumpFlows() {
			if m := flowCookie.FindStringSubmatch(f); m != nil {
				c, _ := strconv.ParseUint(m[1], 16, 64)
				if cat, _, _, _ := model.CookieParts(c); cat == model.CatConnReply {
					t.Errorf("a DSR connection has a member → client flow: %s", f)
				}
			}
		}
	})
}

// addSwitchedNATVIP adds a VIP whose pool, dispatched by the switch with
// NAT, has the bed's member hosts on memberPort, waits until the switch's
// group has them and returns the VIP's URL.
func (b *lbBed) addSwitchedNATVIP(tb testing.TB) string {
	url, _ := b.addSwitchedNATPool(tb)
	return url
}

// addSwitchedNATPool is addSwitchedNATVIP, which also returns the pool.
func (b *lbBed) addSwitchedNATPool(tb testing.TB) (string, *sdnlb.Pool) {
	tb.Helper()
	before := len(b.buckets(tb)) // of the bed's own pool, when the switch dispatches it
	vip := b.lb.MustCreateVIP("switched", b.sw.Addr(101), sdnlb.ProtocolTCP, vipPort, nil)
	var pool sdnlb.Pool
	b.lb.MustAPI("POST", "/v1/pools", map[string]any{"name": "switched", "vip_id": vip.ID, "lb_method": sdnlb.RoundRobin,
		"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "forwarding": sdnlb.ForwardingNAT}, 201, &pool)
	for _, h := range b.members {
		b.lb.MustCreateMember(&pool, h.IP, memberPort)
	}
	b.lb.WaitPoolMembers(pool.ID, len(b.members), 10*time.Second)
	b.waitBuckets(tb, before+len(b.members), 10*time.Second)
	return "http://" + net.JoinHostPort(vip.Address, strconv.Itoa(vipPort)) + "/", &pool
}

// flowState is the switch's flows and groups with what differs between
// two processes for the same configuration taken out: cookies, group ids,
// counters and ages.
func flowState(sw *Switch) []string {
	strip := regexp.MustCompile(`(cookie|duration|n_packets|n_bytes|idle_age|hard_age)=[^ ,]+,? ?`)
	groupID := regexp.MustCompile(`group(_id)?[:=][0-9]+`)
	var state []string
	for _, f := range sw.DumpFlows() {
		state = append(state, groupID.ReplaceAllString(strip.ReplaceAllString(f, ""), "group:G"))
	}
	if sw.Protocol == openFlow10 {
		slices.Sort(state)
		return state // no groups in 1.0
	}
	for _, g := range strings.Split(sw.Ofctl("dump-groups", sw.Name), "\n") {
		if g = strings.TrimSpace(g); strings.HasPrefix(g, "group_id=") {
			state = append(state, groupID.ReplaceAllString(g, "group:G"))
		}
	}
	slices.Sort(state)
	return state
}

// sdnlb killed and started again on the same database: SWITCH traffic never
// stops, a connection held through a CONTROLLER VIP survives, and the new
// process adopts the switch's flows and groups as they are.
func TestRestart_AdoptsTheSwitch(t *testing.T) {
	const ctlPort = 8081
	b := newDispatchBed(t, 1, 3, sdnlb.RoundRobin, sdnlb.DispatchSwitch, nil)
	for i, h := range b.members {
		h.ServeHTTP(t, ctlPort, b.servers[i].Name)
	}
	ctl := &lbBed{sw: b.sw, lb: b.lb, vip: b.lb.MustCreateVIP("ctl", b.sw.Addr(102), sdnlb.ProtocolTCP, vipPort, nil)}
	ctl.pool = b.lb.MustCreatePool("ctl", ctl.vip, sdnlb.RoundRobin, sdnlb.DispatchController)
	for _, h := range b.members {
		b.lb.MustCreateMember(ctl.pool, h.IP, ctlPort)
	}
	b.lb.WaitPoolMembers(ctl.pool.ID, len(b.members), 10*time.Second)
	held := openHeld(t, ctl, b.clients[0])
	requireAll(t, spread(t, b.clients, b.url, 20), b.serverNames())
	before := flowState(b.sw)

	l := startLoad(b.clients, b.url, loadEvery, loadMax, clientTimeout)
	time.Sleep(500 * time.Millisecond)
	b.lb.Kill()
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := b.clients[0].Exec(ctx, "ping", "-c1", "-W2", b.members[0].IP); err != nil {
		t.Errorf("hosts cannot reach each other with the controller dead: %v\n%s", err, out)
	}
	lb := startSDNLB(t, "--db", b.lb.DB)
	lb.Connect(b.sw)
	time.Sleep(time.Second)
	results := l.Stop()
	if s := summarise(results, time.Time{}, time.Now()); s.failed > 0 {
		t.Errorf("SWITCH VIP through the restart: %v", s)
	}
	held.again(t)
	after := flowState(b.sw)
	if !slices.Equal(before, after) {
		t.Errorf("the switch after the restart differs from before:\nbefore:\n%s\nafter:\n%s",
			strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}

// sdnlb SIGKILLed and started again on the same database restartCycles
// times in a row, under load through a SWITCH NAT and a SWITCH DSR VIP:
// no request fails, and the switch ends holding what it held before. Each
// client uses one VIP, at a rate that reuses no source port.
func TestRestart_Cycles(t *testing.T) {
	const (
		restartCycles = 20
		dsrPort       = 8082
	)
	b := newDispatchBed(t, 2, 3, sdnlb.RoundRobin, sdnlb.DispatchSwitch, nil)
	dsrVIP := b.lb.MustCreateVIP("dsr", b.sw.Addr(101), sdnlb.ProtocolTCP, dsrPort, nil)
	var dsrPool sdnlb.Pool
	b.lb.MustAPI("POST", "/v1/pools", map[string]any{"name": "dsr", "vip_id": dsrVIP.ID, "lb_method": sdnlb.RoundRobin,
		"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "forwarding": sdnlb.ForwardingDSR}, 201, &dsrPool)
	for i, h := range b.members {
		h.HoldVIP(t, dsrVIP.Address)
		h.ServeHTTP(t, dsrPort, b.servers[i].Name)
		b.lb.MustCreateMember(&dsrPool, h.IP, 0)
	}
	b.lb.WaitPoolMembers(dsrPool.ID, len(b.members), 10*time.Second)
	b.waitBuckets(t, 2*len(b.members), 10*time.Second)
	dsrURL := "http://" + net.JoinHostPort(dsrVIP.Address, strconv.Itoa(dsrPort)) + "/"
	requireAll(t, spread(t, b.clients[:1], b.url, 30), b.serverNames())
	requireAll(t, spread(t, b.clients[1:], dsrURL, 30), b.serverNames())
	before := flowState(b.sw)

	const loadFor = 3 * time.Minute // a bound; the load stops after the last cycle
	nat := startLoad(b.clients[:1], b.url, loadEvery, loadFor, clientTimeout)
	dsr := startLoad(b.clients[1:], dsrURL, loadEvery, loadFor, clientTimeout)
	lb := b.lb
	for range restartCycles {
		time.Sleep(300 * time.Millisecond)
		lb.Kill()
		lb = startSDNLB(t, "--db", b.lb.DB)
		lb.Connect(b.sw)
	}
	time.Sleep(time.Second)
	for name, l := range map[string]*load{"SWITCH NAT": nat, "SWITCH DSR": dsr} {
		s := summarise(l.Stop(), time.Time{}, time.Now())
		t.Logf("%s through %d restarts: %v", name, restartCycles, s)
		if s.failed > 0 {
			t.Errorf("%s through %d restarts: %v", name, restartCycles, s)
		}
	}
	if after := flowState(b.sw); !slices.Equal(before, after) {
		t.Errorf("the switch after the restarts differs from before:\nbefore:\n%s\nafter:\n%s",
			strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}

// A VIP posted on a Floodlight route without a protocol serves every
// protocol (ANY), in both dispatches: a ping to it is answered by a member
// from the VIP's address, and TCP to any of its ports reaches a member on
// the member's port.
func TestDispatch_AnyProtocolVIP(t *testing.T) {
	for _, d := range sdnlb.Dispatches {
		t.Run(string(d), func(t *testing.T) {
			b := &lbBed{sw: NewSwitch(t)}
			b.lb = startSDNLB(t)
			c := b.sw.AddHost(t, "c1", b.sw.Addr(1))
			b.clients = append(b.clients, c)
			for range 2 {
				b.addMemberHost(t) // serves memberPort
			}
			b.lb.Connect(b.sw)
			dumpOnFailure(t, b.sw, b.lb)
			b.lb.MustAPI(http.MethodPost, "/quantum/v1.0/vips/", map[string]string{"id": "all", "name": "all", "address": b.sw.Addr(100)}, http.StatusOK, nil)
			b.vip = b.lb.VIP("all")
			if b.vip.Protocol != sdnlb.ProtocolAny {
				t.Fatalf("a Floodlight VIP without a protocol is %s, want %s", b.vip.Protocol, sdnlb.ProtocolAny)
			}
			b.pool = b.lb.MustCreatePool("all", b.vip, sdnlb.RoundRobin, d)
			for _, h := range b.members {
				b.mems = append(b.mems, b.lb.MustCreateMember(b.pool, h.IP, memberPort))
			}
			b.lb.WaitPoolMembers(b.pool.ID, 2, 10*time.Second)
			if d == sdnlb.DispatchSwitch {
				b.waitBuckets(t, 2, 10*time.Second)
			}
			for _, port := range []int{vipPort, 443} {
				url := "http://" + net.JoinHostPort(b.vip.Address, strconv.Itoa(port)) + "/"
				requireAll(t, spread(t, b.clients, url, 20), b.serverNames())
			}

			before := 0
			for _, h := range b.members {
				before += icmpOutEchoReps(t, h)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			out, err := c.Exec(ctx, "ping", "-c", "3", "-i", "0.2", "-W", "2", b.vip.Address)
			if err != nil {
				t.Fatalf("ping %s: %v\n%s", b.vip.Address, err, out)
			}
			after := 0
			for _, h := range b.members {
				after += icmpOutEchoReps(t, h)
			}
			if after-before < 3 {
				t.Errorf("members sent %d echo replies, want at least 3 (ping output:\n%s)", after-before, out)
			}
			if !strings.Contains(string(out), "from "+b.vip.Address) {
				t.Errorf("replies do not come from the VIP address:\n%s", out)
			}
			// The switch's connection tracker translated all of it, the
			// pings to a member whose NAT names a port included.
			if n := b.lb.Metric("sdnlb_controller_setups_total"); d == sdnlb.DispatchSwitch && n != 0 {
				t.Errorf("the controller set up %v connections, want none: the switch dispatches", n)
			}
		})
	}
}

// A VIP on port 0 serves every port of its address, in both dispatches:
// each connection reaches a member on the port the client asked for.
func TestDispatch_EveryPortVIP(t *testing.T) {
	for _, d := range sdnlb.Dispatches {
		t.Run(string(d), func(t *testing.T) {
			b := &lbBed{sw: NewSwitch(t)}
			b.lb = startSDNLB(t)
			b.clients = append(b.clients, b.sw.AddHost(t, "c1", b.sw.Addr(1)))
			for i := range 2 {
				h := b.addMemberHost(t) // serves memberPort
				h.ServeHTTP(t, memberPort+1, b.servers[i].Name)
			}
			b.lb.Connect(b.sw)
			dumpOnFailure(t, b.sw, b.lb)
			b.vip = b.lb.MustCreateVIP("all", b.sw.Addr(100), sdnlb.ProtocolTCP, 0, nil)
			b.pool = b.lb.MustCreatePool("all", b.vip, sdnlb.RoundRobin, d)
			for _, h := range b.members {
				b.mems = append(b.mems, b.lb.MustCreateMember(b.pool, h.IP, 0))
			}
			b.lb.WaitPoolMembers(b.pool.ID, 2, 10*time.Second)
			if d == sdnlb.DispatchSwitch {
				b.waitBuckets(t, 2, 10*time.Second)
			}
			for _, port := range []int{memberPort, memberPort + 1} {
				url := "http://" + net.JoinHostPort(b.vip.Address, strconv.Itoa(port)) + "/"
				requireAll(t, spread(t, b.clients, url, 20), []string{"srv1", "srv2"})
			}
		})
	}
}

// A SWITCH NAT VIP and a CONTROLLER VIP over the same member addresses
// and ports both balance, whichever pool came first: the members' replies
// meet the connection tracker first, and what it does not know goes on to
// the controller. Each client uses one VIP, so no member sees one client
// address and port from two client sockets within its TIME_WAIT.
func TestDispatch_SharedMembers(t *testing.T) {
	b := newLBBed(t, 2, 3, sdnlb.RoundRobin, nil) // the CONTROLLER pool first: its members get the lower numbers
	switchedURL := b.addSwitchedNATVIP(t)

	setups := b.lb.Metric("sdnlb_controller_setups_total")
	var switched, controlled map[string]int
	var wg sync.WaitGroup
	wg.Go(func() { switched = spread(t, b.clients[:1], switchedURL, 30) })
	wg.Go(func() { controlled = spread(t, b.clients[1:], b.url, 30) })
	wg.Wait()
	requireAll(t, switched, b.serverNames())
	requireAll(t, controlled, b.serverNames())
	if n := b.lb.Metric("sdnlb_controller_setups_total") - setups; n != 30 {
		t.Errorf("the controller set up %v connections, want the CONTROLLER VIP's 30", n)
	}
	if leaked := b.lb.Metric(`sdnlb_controller_refusals_total{reason="no_flow"}`); leaked != 0 {
		t.Errorf("%v packets reset for want of a flow", leaked)
	}
}
