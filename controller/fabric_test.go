package controller

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// twoSwitches is switches 1 and 2 joined by two links, 1:1↔2:1 and
// 1:3↔2:3, with a host's port 2 on each.
func twoSwitches() ([]fabricSwitch, []linkState) {
	ports := func() []ofp.Port {
		return []ofp.Port{{PortNo: 1}, {PortNo: 2}, {PortNo: 3}}
	}
	var links []linkState
	for _, p := range []uint32{1, 3} {
		links = append(links,
			linkState{link: link{src: portRef{1, p}, dst: portRef{2, p}}, both: true},
			linkState{link: link{src: portRef{2, p}, dst: portRef{1, p}}, both: true})
	}
	return []fabricSwitch{{dpid: 1, ports: ports()}, {dpid: 2, ports: ports()}}, links
}

func idle(link, uint64, bool) float64 { return 0 }

func TestFabric_PlanSettlesPortsAndSpansATree(t *testing.T) {
	f := newFabric()
	switches, links := twoSwitches()
	t0 := time.Unix(1_700_000_000, 0)

	v := f.plan(t0, switches, links, idle)[1]
	if !slices.Equal(v.ingress, []uint32{1, 3}) || !slices.Equal(v.blocked, []uint32{3}) || !slices.Equal(v.carry, []uint32{1}) {
		t.Errorf("ingress %v, blocked %v, carry %v: want links 1 and 3, 3 off the tree, floods out of 1 only (2 not settled)",
			v.ingress, v.blocked, v.carry)
	}
	if got := f.nextRound(t0); got != settleTime {
		t.Errorf("next round in %v, want when port 2 settles, %v", got, settleTime)
	}
	if v.next[2] != 1 {
		t.Errorf("toward switch 2 by port %d, want 1 (the lowest of two equal links)", v.next[2])
	}

	v = f.plan(t0.Add(settleTime), switches, links, idle)[1]
	if !v.edge[2] || !slices.Equal(v.carry, []uint32{1, 2}) {
		t.Errorf("edge %v, carry %v: want port 2 a host's port once settled", v.edge, v.carry)
	}
	if !slices.Equal(v.floods[1], []uint32{2}) || !slices.Equal(v.floods[2], []uint32{1}) {
		t.Errorf("floods %v", v.floods)
	}

	// The link by port 1 busy with other traffic: switch 1 goes by 3.
	busy := func(l link, dst uint64, carries bool) float64 {
		if l.src == (portRef{1, 1}) {
			return 0.9
		}
		return 0
	}
	if v = f.plan(t0.Add(2*settleTime), switches, links, busy)[1]; v.next[2] != 3 {
		t.Errorf("toward switch 2 by port %d with port 1 busy, want 3", v.next[2])
	}
}

func TestFabric_HostsAndTheirPorts(t *testing.T) {
	f := newFabric()
	switches, links := twoSwitches()
	t0 := time.Unix(1_700_000_000, 0)
	f.plan(t0, switches, links, idle)
	a, b := [6]byte{2, 0, 0, 0, 0, 0xa}, [6]byte{2, 0, 0, 0, 0, 0xb}
	if !f.learn(a, addr4(0x0a000001), portRef{1, 2}, true) || !f.learn(b, netip.Addr{}, portRef{2, 2}, false) {
		t.Fatal("new hosts not learned")
	}
	if f.learn(a, netip.Addr{}, portRef{1, 2}, true) {
		t.Error("a host learned again where it was")
	}
	if _, ok := f.plan(t0, switches, links, idle)[1].portTo(b); ok {
		t.Error("a host on a port not settled yet has rows")
	}
	views := f.plan(t0.Add(settleTime), switches, links, idle)
	for _, tc := range []struct {
		on   uint64
		mac  [6]byte
		port uint32
	}{{1, a, 2}, {1, b, 1}, {2, a, 1}, {2, b, 2}} {
		if p, ok := views[tc.on].portTo(tc.mac); !ok || p != tc.port {
			t.Errorf("switch %d sends to %x by %d (%v), want %d", tc.on, tc.mac, p, ok, tc.port)
		}
	}

	// Port 2 of switch 1 turns out to be a link: its host is forgotten.
	links = append(links, linkState{link: link{src: portRef{1, 2}, dst: portRef{2, 4}}, both: false})
	views = f.plan(t0.Add(2*settleTime), switches, links, idle)
	if _, ok := views[1].portTo(a); ok {
		t.Error("a host on a port that became a link is still known")
	}
}

// The switch gets the fabric's rows once, only what changed after, and
// each row fits the pipeline (the decision checks every flow-mod).
func TestFabric_ReconcileSendsWhatChanged(t *testing.T) {
	f := newFabric()
	d := newDecisionWith(t, testConfig(nil), dataplaneConfig{l2: L2Fabric, dpid: 1, fabric: f})
	switches, links := twoSwitches()
	t0 := time.Unix(1_700_000_000, 0)
	f.plan(t0, switches, links, idle)
	a, b := [6]byte{2, 0, 0, 0, 0, 0xa}, [6]byte{2, 0, 0, 0, 0, 0xb}
	f.learn(a, netip.Addr{}, portRef{1, 2}, true)
	f.learn(b, addr4(0x0a000002), portRef{2, 2}, true)
	round := func(at time.Time) []string {
		v := f.plan(at, switches, links, idle)[1]
		d.dp.reconcileFabric(d.now, v, d.out)
		return d.sent(nil)
	}
	got := round(t0.Add(settleTime))
	slices.Sort(got)
	assertLines(t, got, []string{
		"flow_mod cookie=0x5d03000000000000, table=l2, priority=100, dl_dst=02:00:00:00:00:0a actions=output:2",
		"flow_mod cookie=0x5d03000000000000, table=l2, priority=100, dl_dst=02:00:00:00:00:0b actions=write_metadata:0x2/0xffffffffffffffff,goto_table:10",
		"flow_mod cookie=0x5d03000000000000, table=sources, priority=100, in_port=2,dl_src=02:00:00:00:00:0a actions=goto_table:9",
		"flow_mod cookie=0x5d09000000000000, priority=899, in_port=1 actions=goto_table:9",
		"flow_mod cookie=0x5d09000000000000, priority=899, in_port=3 actions=goto_table:9",
		"flow_mod cookie=0x5d09000000000000, table=fabric, priority=100, metadata=0x2 actions=output:1",
		"flow_mod cookie=0x5d09000000000000, table=l2, priority=10, in_port=1 actions=output:2",
		"flow_mod cookie=0x5d09000000000000, table=l2, priority=10, in_port=2 actions=output:1",
		"flow_mod cookie=0x5d09000000000000, table=l2, priority=10, in_port=3 actions=drop",
	})
	if e, ok := d.dp.learner.host(addr4(0x0a000002)); !ok || e.port != 1 || e.mac != b {
		t.Errorf("the host on switch 2 is known here as %+v (%v), want its MAC through port 1", e, ok)
	}
	if got := round(t0.Add(settleTime + time.Second)); len(got) != 0 {
		t.Errorf("a round with nothing new sent %v", got)
	}
	// a's port goes down: the link by 1 floods nowhere, and a is gone.
	switches[0].ports[1].State = ofp.PortStateLinkDown
	got = round(t0.Add(settleTime + 2*time.Second))
	slices.Sort(got)
	assertLines(t, got, []string{
		"flow_mod cookie=0x5d09000000000000, table=l2, priority=10, in_port=1 actions=drop",
		"flow_mod delete_strict table=l2, priority=10, in_port=2",
		"flow_mod delete_strict table=l2, priority=100, dl_dst=02:00:00:00:00:0a",
		"flow_mod delete_strict table=sources, priority=100, in_port=2,dl_src=02:00:00:00:00:0a",
	})
}

// ringOf is n switches in a ring with a chord from each of the first
// half to the one opposite, every link both ways, and hosts ports 1 to
// 4 on each; port 100+k of switch s leads to switch k.
func ringOf(n int) ([]fabricSwitch, []linkState) {
	var switches []fabricSwitch
	var links []linkState
	join := func(a, b uint64) {
		links = append(links,
			linkState{link: link{src: portRef{a, uint32(100 + b)}, dst: portRef{b, uint32(100 + a)}}, both: true},
			linkState{link: link{src: portRef{b, uint32(100 + a)}, dst: portRef{a, uint32(100 + b)}}, both: true})
	}
	for i := 1; i <= n; i++ {
		a := uint64(i)
		join(a, uint64(i%n+1))
		if i <= n/2 {
			join(a, uint64(i+n/2))
		}
	}
	for i := 1; i <= n; i++ {
		s := fabricSwitch{dpid: uint64(i)}
		for p := uint32(1); p <= 4; p++ {
			s.ports = append(s.ports, ofp.Port{PortNo: p})
		}
		for _, l := range links {
			if l.src.dpid == s.dpid {
				s.ports = append(s.ports, ofp.Port{PortNo: l.src.port})
			}
		}
		switches = append(switches, s)
	}
	return switches, links
}

// BenchmarkFabric_Round measures one round of the fabric at 64 switches
// (a ring with chords, 192 links each way) with 4 hosts on each: the
// paths toward every switch, the tree and every switch's view, with
// nothing changed since the last.
func BenchmarkFabric_Round(b *testing.B) {
	f := newFabric()
	switches, links := ringOf(64)
	t0 := time.Unix(1_700_000_000, 0)
	f.plan(t0, switches, links, idle)
	for _, s := range switches {
		for p := uint32(1); p <= 4; p++ {
			f.learn([6]byte{2, 0, 0, 0, byte(s.dpid), byte(p)}, addr4(uint32(s.dpid)<<8|p), portRef{s.dpid, p}, true)
		}
	}
	f.plan(t0.Add(settleTime), switches, links, idle)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.plan(t0.Add(settleTime+time.Duration(i)*time.Millisecond), switches, links, idle)
	}
}

// BenchmarkFabric_HostLearned measures what a new host costs at 64
// switches with 256 hosts: the round it starts and the row every switch
// gets for it.
func BenchmarkFabric_HostLearned(b *testing.B) {
	f := newFabric()
	switches, links := ringOf(64)
	t0 := time.Unix(1_700_000_000, 0)
	f.plan(t0, switches, links, idle)
	dps := make([]*decision, len(switches))
	for i, s := range switches {
		dps[i] = newDecisionWith(b, testConfig(nil), dataplaneConfig{l2: L2Fabric, dpid: s.dpid, fabric: f, groups: true})
	}
	round := func(at time.Time) {
		for i, v := range f.plan(at, switches, links, idle) {
			d := dps[i-1]
			d.dp.reconcileFabric(at, v, d.out)
			d.out.reset()
		}
	}
	for _, s := range switches {
		for p := uint32(1); p <= 4; p++ {
			f.learn([6]byte{2, 0, 0, 0, byte(s.dpid), byte(p)}, addr4(uint32(s.dpid)<<8|p), portRef{s.dpid, p}, true)
		}
	}
	round(t0.Add(settleTime))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := switches[i%len(switches)]
		f.learn([6]byte{2, 1, byte(i >> 16), byte(i >> 8), byte(i), 0}, netip.Addr{}, portRef{s.dpid, 1 + uint32(i%4)}, true)
		round(t0.Add(settleTime + time.Duration(i+1)*time.Millisecond))
	}
}
