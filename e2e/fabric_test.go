//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// fabricBed is four bridges of one Open vSwitch under one sdnlb with
// --l2 fabric, linked in a loop with a tail:
//
//	c1 ─ E1 ──────── M1 ─ m1     E1→M1: one hop, or two through E2
//	      │        ╱  │
//	c2 ─ E2 ─────╱    M2 ─ m2    E1→M2: through M1 only
//
// Clients c1 and c2 sit on the edges E1 and E2, members m1 and m2 on M1
// and M2, each serving HTTP on memberPort.
type fabricBed struct {
	e1, e2, m1, m2 *Switch
	c1, c2         *Host
	mh1, mh2       *Host
	lb             *sdnlbProc
	links          [][2]string // the patch ports of each link, in the order the diagram draws them
	dpid           map[*Switch]string
}

func newFabricBed(t *testing.T, sdnlbArgs ...string) *fabricBed {
	t.Helper()
	b := &fabricBed{e1: NewSwitch(t)}
	b.e2, b.m1, b.m2 = b.e1.AddBridge(t), b.e1.AddBridge(t), b.e1.AddBridge(t)
	for _, pair := range [][2]*Switch{{b.e1, b.m1}, {b.e1, b.e2}, {b.e2, b.m1}, {b.m1, b.m2}} {
		b.link(t, pair[0], pair[1])
	}
	b.c1, b.c2 = b.e1.AddHost(t, "c1", b.e1.Addr(1)), b.e2.AddHost(t, "c2", b.e1.Addr(2))
	b.mh1, b.mh2 = b.m1.AddHost(t, "m1", b.e1.Addr(11)), b.m2.AddHost(t, "m2", b.e1.Addr(12))
	b.lb = startSDNLB(t, append([]string{"--l2", "fabric"}, sdnlbArgs...)...)
	b.dpid = map[*Switch]string{}
	for _, sw := range b.switches() {
		b.dpid[sw] = dpidOf(t, sw)
		sw.SetController(b.lb.OpenFlowAddr)
		dumpOnFailure(t, sw, b.lb)
	}
	b.lb.WaitSwitches(4, 20*time.Second)
	b.waitPaths(t, "all links found", func(top *sdnlb.Topology) bool {
		return len(top.Links) == 2*len(b.links) && len(top.Paths) == 12
	})
	return b
}

func (b *fabricBed) switches() []*Switch { return []*Switch{b.e1, b.e2, b.m1, b.m2} }

// link joins two bridges with a pair of patch ports.
func (b *fabricBed) link(t *testing.T, x, y *Switch) {
	t.Helper()
	px, py := x.Name+"-"+strconv.Itoa(len(b.links)), y.Name+"-"+strconv.Itoa(len(b.links))
	x.AddPatch(t, px, py)
	y.AddPatch(t, py, px)
	b.links = append(b.links, [2]string{px, py})
}

// path returns the switches traffic from one switch to another passes,
// as GET /v1/topology says, by bridge name.
func (b *fabricBed) path(top *sdnlb.Topology, from, to *Switch) []string {
	names := map[string]string{}
	for _, sw := range b.switches() {
		names[b.dpid[sw]] = sw.Name
	}
	for _, p := range top.Paths {
		if p.From == b.dpid[from] && p.To == b.dpid[to] {
			var hops []string
			for _, h := range p.Hops {
				hops = append(hops, names[h.DPID])
			}
			return append(hops, to.Name)
		}
	}
	return nil
}

// waitPaths waits, up to 30 s, until the topology satisfies ok, and
// returns how long that took.
func (b *fabricBed) waitPaths(t *testing.T, what string, ok func(*sdnlb.Topology) bool) time.Duration {
	t.Helper()
	start := time.Now()
	var top sdnlb.Topology
	for i := 0; i < 600 && time.Since(start) < 30*time.Second; i++ {
		top = sdnlb.Topology{}
		b.lb.MustAPI(http.MethodGet, "/v1/topology", nil, http.StatusOK, &top)
		if ok(&top) {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var lines []string
	for _, l := range top.Links {
		lines = append(lines, fmt.Sprintf("link %v → %v: %d bit/s, utilisation %.2f", l.Src, l.Dst, l.RateBPS, l.Utilisation))
	}
	for _, p := range top.Paths {
		lines = append(lines, fmt.Sprintf("path %s → %s: %v", p.From, p.To, p.Hops))
	}
	t.Fatalf("%s: not within 30 s:\n%s", what, strings.Join(lines, "\n"))
	return 0
}

// ping checks that from reaches to's address, with an empty ARP cache on
// both, so that the ARP broadcast crosses the fabric first.
func ping(t *testing.T, from, to *Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	to.Exec(ctx, "ip", "neigh", "flush", "dev", "eth0")
	if out, err := from.Exec(ctx, "sh", "-c", "ip neigh flush dev eth0 && ping -c 2 -i 0.2 -W 5 "+to.IP); err != nil {
		t.Fatalf("%s cannot reach %s: %v\n%s", from.Name, to.Name, err, out)
	}
}

// rxPackets is what a host's eth0 received so far.
func rxPackets(t *testing.T, h *Host) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := h.Exec(ctx, "cat", "/sys/class/net/eth0/statistics/rx_packets")
	if err != nil {
		t.Fatalf("%s: rx_packets: %v", h.Name, err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("%s: rx_packets %q: %v", h.Name, out, err)
	}
	return n
}

// Four bridges with a loop among them, one sdnlb with --l2 fabric: a
// broadcast reaches every host once (the loop floods nothing back), hosts
// on different bridges reach each other, a SWITCH NAT VIP on the edges
// spreads the clients of both over members on two other bridges, and all
// of it goes on with the controller dead.
func TestFabric_FourBridges(t *testing.T) {
	b := newFabricBed(t)
	top := sdnlb.Topology{}
	b.lb.MustAPI(http.MethodGet, "/v1/topology", nil, http.StatusOK, &top)
	if got, want := b.path(&top, b.e1, b.m1), []string{b.e1.Name, b.m1.Name}; !slices.Equal(got, want) {
		t.Errorf("path E1→M1 %v, want the direct link %v", got, want)
	}
	if got, want := b.path(&top, b.e2, b.m2), []string{b.e2.Name, b.m1.Name, b.m2.Name}; !slices.Equal(got, want) {
		t.Errorf("path E2→M2 %v, want %v", got, want)
	}

	hosts := []*Host{b.c1, b.c2, b.mh1, b.mh2}
	for _, from := range hosts {
		for _, to := range hosts {
			if from != to {
				ping(t, from, to)
			}
		}
	}
	// The hosts at the edge: each on its own bridge's port.
	b.waitPaths(t, "every host at the edge", func(top *sdnlb.Topology) bool { return len(top.Hosts) >= len(hosts) })

	// 40 broadcasts from c1 (pings to the subnet's broadcast address,
	// which hosts do not answer): each other host receives each once.
	// Discovery's LLDP frames also reach hosts, one a second.
	broadcast := netip.PrefixFrom(b.e1.Subnet.Addr(), 24).Masked().Addr().As4()
	broadcast[3] = 255
	before := map[*Host]int{}
	for _, h := range hosts[1:] {
		before[h] = rxPackets(t, h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	b.c1.Exec(ctx, "ping", "-b", "-c", "40", "-i", "0.01", "-W", "1", netip.AddrFrom4(broadcast).String())
	lldp := int(time.Since(start)/time.Second) + 2
	for _, h := range hosts[1:] {
		if got := rxPackets(t, h) - before[h]; got < 40 || got > 40+lldp {
			t.Errorf("%s received %d frames during 40 broadcasts (and at most %d LLDP frames): want each broadcast once", h.Name, got, lldp)
		}
	}

	// A SWITCH NAT VIP: the switch each client enters at picks the member
	// and translates; the members are two and three bridges away.
	vip := b.lb.MustCreateVIP("web", b.e1.Addr(100), sdnlb.ProtocolTCP, vipPort, nil)
	pool := b.lb.MustCreatePool("web", vip, sdnlb.RoundRobin, sdnlb.DispatchSwitch)
	names := []string{"srv1", "srv2"}
	for i, h := range []*Host{b.mh1, b.mh2} {
		h.ServeHTTP(t, memberPort, names[i])
		b.lb.MustCreateMember(pool, h.IP, memberPort)
	}
	// A member at an address no host holds: no switch shows it, so it
	// stays out of the buckets, and its stats say so.
	ghost := b.lb.MustCreateMember(pool, b.e1.Addr(13), memberPort)
	b.lb.WaitPoolMembers(pool.ID, 3, 10*time.Second)
	for _, sw := range []*Switch{b.e1, b.e2} {
		waitGroupMembers(t, sw, 2)
	}
	// The edges hold the same buckets, in the same order: a connection
	// whose packets come in at another edge keeps its member.
	if e1, e2 := bucketOrder(b.e1.Ofctl("dump-groups", b.e1.Name)), bucketOrder(b.e2.Ofctl("dump-groups", b.e2.Name)); !slices.Equal(e1, e2) {
		t.Errorf("the edges' buckets differ:\nE1 %v\nE2 %v", e1, e2)
	}
	url := "http://" + net.JoinHostPort(vip.Address, strconv.Itoa(vipPort)) + "/"
	clients := []*Host{b.c1, b.c2}
	requireAll(t, spread(t, clients, url, 30), names)
	// The switches the clients enter at count the connections; the
	// controller reads them every stats interval.
	var counted uint64
	for deadline := time.Now().Add(15 * time.Second); counted < 60 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		counted = b.lb.PoolStats(pool.ID).TotalConnections
	}
	if counted != 60 {
		t.Errorf("the pool counted %d connections, want the 60 the clients opened", counted)
	}
	wantAt := map[string]*sdnlb.MemberLocation{
		b.mh1.IP:      {DPID: b.dpid[b.m1], Port: strconv.Itoa(b.mh1.OFPort)},
		b.mh2.IP:      {DPID: b.dpid[b.m2], Port: strconv.Itoa(b.mh2.OFPort)},
		ghost.Address: nil,
	}
	for _, m := range b.lb.PoolStats(pool.ID).Members {
		if want := wantAt[m.Address]; (m.Location == nil) != (want == nil) || want != nil && *m.Location != *want {
			t.Errorf("member %s located at %+v, want %+v", m.Address, m.Location, want)
		}
	}

	// The same members under SWITCH DSR: they answer the clients from
	// the VIP's address, across the fabric.
	dsrVIP := b.lb.MustCreateVIP("dsr", b.e1.Addr(101), sdnlb.ProtocolTCP, memberPort, nil)
	var dsrPool sdnlb.Pool
	b.lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"name": "dsr", "vip_id": dsrVIP.ID, "lb_method": sdnlb.RoundRobin,
		"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "forwarding": sdnlb.ForwardingDSR}, http.StatusCreated, &dsrPool)
	for _, h := range []*Host{b.mh1, b.mh2} {
		h.HoldVIP(t, dsrVIP.Address)
		b.lb.MustCreateMember(&dsrPool, h.IP, 0)
	}
	b.lb.WaitPoolMembers(dsrPool.ID, 2, 10*time.Second)
	for _, sw := range []*Switch{b.e1, b.e2} {
		waitGroupMembers(t, sw, 4)
	}
	dsrURL := "http://" + net.JoinHostPort(dsrVIP.Address, strconv.Itoa(memberPort)) + "/"
	requireAll(t, spread(t, clients, dsrURL, 30), names)

	// And under CONTROLLER dispatch: the switch a client enters at sends
	// the connection's first packet up, and the rows the controller
	// installs carry it, and its replies, across the fabric; the
	// switches between pass the replies on without the controller.
	ctlVIP := b.lb.MustCreateVIP("ctl", b.e1.Addr(102), sdnlb.ProtocolTCP, vipPort, nil)
	ctlPool := b.lb.MustCreatePool("ctl", ctlVIP, sdnlb.LeastConnections, sdnlb.DispatchController)
	for _, h := range []*Host{b.mh1, b.mh2} {
		b.lb.MustCreateMember(ctlPool, h.IP, memberPort)
	}
	b.lb.WaitPoolMembers(ctlPool.ID, 2, 10*time.Second)
	ctlURL := "http://" + net.JoinHostPort(ctlVIP.Address, strconv.Itoa(vipPort)) + "/"
	setups, replies := b.lb.Metric("sdnlb_controller_setups_total"), b.lb.Metric(`sdnlb_controller_packet_ins_total{kind="reply"}`)
	requireAll(t, spread(t, clients, ctlURL, 30), names)
	if n := b.lb.Metric("sdnlb_controller_setups_total") - setups; n != 60 {
		t.Errorf("the controller set up %v connections, want the 60 the clients opened", n)
	}
	// A reply may overtake its rows on the switches between, once per
	// connection at most.
	if n := b.lb.Metric(`sdnlb_controller_packet_ins_total{kind="reply"}`) - replies; n > 60 {
		t.Errorf("%v replies went through the controller for 60 connections", n)
	}

	// The controller dies: hosts still find each other (ARP floods along
	// the tree the switches hold), and the SWITCH VIPs still answer.
	b.lb.Kill()
	for _, pair := range [][2]*Host{{b.c2, b.mh1}, {b.mh2, b.c1}, {b.c1, b.c2}} {
		ping(t, pair[0], pair[1])
	}
	for _, c := range clients {
		c.Exec(ctx, "ip", "neigh", "flush", "dev", "eth0")
	}
	requireAll(t, spread(t, clients, url, 30), names)
	requireAll(t, spread(t, clients, dsrURL, 30), names)
}

// waitGroupMembers waits until the switch's select group spreads over n
// members.
func waitGroupMembers(t *testing.T, sw *Switch, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var got map[string]int
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		if got = groupBuckets(sw.Ofctl("dump-groups", sw.Name)); len(got) == n {
			return
		}
		time.Sleep(30 * time.Millisecond)
	}
	t.Fatalf("%s: the group spreads over %v, want %d members", sw.Name, got, n)
}

// loadLoop sends requests from c to url, one at a time, until stop is
// closed (or 3,000 requests, or 60 s), and counts the failures and the
// longest time between two answers.
type loadLoop struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	longestGap time.Duration
	done       chan struct{}
}

func startRequestLoop(c *Host, url string, stop <-chan struct{}) *loadLoop {
	l := &loadLoop{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		last, deadline := time.Now(), time.Now().Add(60*time.Second)
		for i := 0; i < 3000 && time.Now().Before(deadline); i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := get(c, url, 2*time.Second); err != nil {
				l.failed.Add(1)
				continue
			}
			l.ok.Add(1)
			l.mu.Lock()
			l.longestGap = max(l.longestGap, time.Since(last))
			l.mu.Unlock()
			last = time.Now()
		}
	}()
	return l
}

// bulk sends bytes from one host to a sink on another, as fast as TCP
// goes, until stop is closed or for d at most.
func bulk(t *testing.T, from, to *Host, stop <-chan struct{}, d time.Duration) {
	t.Helper()
	ln, err := to.Listen("tcp4", net.JoinHostPort(to.IP, "9100"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		io.Copy(io.Discard, conn)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	conn, err := from.DialContext(ctx, "tcp4", net.JoinHostPort(to.IP, "9100"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(d))
	buf := make([]byte, 256<<10)
	for ctx.Err() == nil {
		if _, err := conn.Write(buf); err != nil {
			return
		}
	}
}

// Paths follow load and failures: a link cut under load moves the
// traffic to the other path at once; bulk traffic on the short path
// from E1 (to M2, which has no other way) moves E1's traffic to M1 onto
// the longer, idle path, and it comes back when the link calms.
func TestFabric_PathsFollowLoadAndFailures(t *testing.T) {
	// Patch ports report no speed: measure their load against 100 Mbit/s,
	// which a bulk TCP stream through the userspace datapath exceeds.
	b := newFabricBed(t, "--link-capacity-mbps", "100", "--stats-interval", "1s")
	vip := b.lb.MustCreateVIP("web", b.e1.Addr(100), sdnlb.ProtocolTCP, vipPort, nil)
	pool := b.lb.MustCreatePool("web", vip, sdnlb.RoundRobin, sdnlb.DispatchSwitch)
	b.mh1.ServeHTTP(t, memberPort, "srv1")
	b.lb.MustCreateMember(pool, b.mh1.IP, memberPort)
	b.lb.WaitPoolMembers(pool.ID, 1, 10*time.Second)
	waitGroupMembers(t, b.e1, 1)
	url := "http://" + net.JoinHostPort(vip.Address, strconv.Itoa(vipPort)) + "/"
	direct, around := []string{b.e1.Name, b.m1.Name}, []string{b.e1.Name, b.e2.Name, b.m1.Name}
	onPath := func(want []string) func(*sdnlb.Topology) bool {
		return func(top *sdnlb.Topology) bool { return slices.Equal(b.path(top, b.e1, b.m1), want) }
	}
	b.waitPaths(t, "E1→M1 direct", onPath(direct))

	// Cut E1–M1 under load: E1 sees its port go and routes around.
	stop := make(chan struct{})
	load := startRequestLoop(b.c1, url, stop)
	time.Sleep(2 * time.Second)
	cut := time.Now()
	b.e1.Vsctl("del-port", b.e1.Name, b.links[0][0])
	moved := b.waitPaths(t, "E1→M1 around the cut", onPath(around))
	time.Sleep(3 * time.Second)
	close(stop)
	<-load.done
	t.Logf("link cut under load: path moved after %v; %d requests answered, %d failed, longest wait for an answer %v (from the cut %v)",
		moved, load.ok.Load(), load.failed.Load(), load.longestGap, time.Since(cut).Round(time.Millisecond))
	if load.failed.Load() > 0 {
		t.Errorf("%d requests failed across the cut", load.failed.Load())
	}

	// Put the link back: the direct path returns.
	b.e1.AddPatch(t, b.links[0][0], b.links[0][1])
	b.waitPaths(t, "E1→M1 direct again", onPath(direct))

	// Bulk traffic c1 → m2 fills E1→M1; E1's path to M2 has no other
	// way worth taking, its path to M1 has.
	x1, x2 := b.e1.AddHost(t, "x1", b.e1.Addr(21)), b.m2.AddHost(t, "x2", b.e1.Addr(22))
	ping(t, x1, x2)
	punted := b.lb.Metric(`sdnlb_controller_packet_ins_total{kind="l2"}`)
	stopBulk, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); bulk(t, x1, x2, stopBulk, 25*time.Second) }()
	moved = b.waitPaths(t, "E1→M1 around the busy link", onPath(around))
	var busiest sdnlb.Link
	var top sdnlb.Topology
	b.lb.MustAPI(http.MethodGet, "/v1/topology", nil, http.StatusOK, &top)
	for _, l := range top.Links {
		if l.RateBPS > busiest.RateBPS {
			busiest = *l
		}
	}
	t.Logf("bulk traffic: E1→M1 moved after %v; busiest link %v → %v at %d Mbit/s (utilisation %.2f)",
		moved, busiest.Src, busiest.Dst, busiest.RateBPS/1_000_000, busiest.Utilisation)
	if got, want := b.path(&top, b.e1, b.m2), []string{b.e1.Name, b.m1.Name, b.m2.Name}; !slices.Equal(got, want) {
		t.Errorf("path E1→M2 %v under its own load, want it kept: %v", got, want)
	}
	requireAll(t, spread(t, []*Host{b.c1}, url, 20), []string{"srv1"})
	close(stopBulk)
	<-done
	// The switches carried the bulk traffic themselves: the controller
	// saw a few of its first packets at most.
	if n := b.lb.Metric(`sdnlb_controller_packet_ins_total{kind="l2"}`) - punted; n > 100 {
		t.Errorf("%v packets of plain traffic reached the controller during the bulk transfer", n)
	}
	b.waitPaths(t, "E1→M1 direct once the link calmed", onPath(direct))
}
