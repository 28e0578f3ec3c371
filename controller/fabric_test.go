package controller

import (
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
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
			linkState{link: link{src: model.PortRef{DPID: 1, Port: p}, dst: model.PortRef{DPID: 2, Port: p}}, both: true},
			linkState{link: link{src: model.PortRef{DPID: 2, Port: p}, dst: model.PortRef{DPID: 1, Port: p}}, both: true})
	}
	return []fabricSwitch{{dpid: 1, ports: ports()}, {dpid: 2, ports: ports()}}, links
}

func idle(link, uint64, bool) float64 { return 0 }

func TestFabric_PlanSettlesPortsAndSpansATree(t *testing.T) {
	f := newFabric()
	switches, links := twoSwitches()
	t0 := time.Unix(1_700_000_000, 0)

	v := f.plan(t0, switches, links, idle)[1]
	if !slices.Equal(v.Ingress, []uint32{1, 3}) || !slices.Equal(v.Blocked, []uint32{3}) || !slices.Equal(v.Carry, []uint32{1}) {
		t.Errorf("ingress %v, blocked %v, carry %v: want links 1 and 3, 3 off the tree, floods out of 1 only (2 not settled)",
			v.Ingress, v.Blocked, v.Carry)
	}
	if got := f.nextRound(t0); got != settleTime {
		t.Errorf("next round in %v, want when port 2 settles, %v", got, settleTime)
	}
	if v.Next[2] != 1 {
		t.Errorf("toward switch 2 by port %d, want 1 (the lowest of two equal links)", v.Next[2])
	}

	v = f.plan(t0.Add(settleTime), switches, links, idle)[1]
	if !v.Edge[2] || !slices.Equal(v.Carry, []uint32{1, 2}) {
		t.Errorf("edge %v, carry %v: want port 2 a host's port once settled", v.Edge, v.Carry)
	}
	if !slices.Equal(v.Floods[1], []uint32{2}) || !slices.Equal(v.Floods[2], []uint32{1}) {
		t.Errorf("floods %v", v.Floods)
	}

	// The link by port 1 busy with other traffic: switch 1 goes by 3.
	busy := func(l link, dst uint64, carries bool) float64 {
		if l.src == (model.PortRef{DPID: 1, Port: 1}) {
			return 0.9
		}
		return 0
	}
	if v = f.plan(t0.Add(2*settleTime), switches, links, busy)[1]; v.Next[2] != 3 {
		t.Errorf("toward switch 2 by port %d with port 1 busy, want 3", v.Next[2])
	}
}

func TestFabric_HostsAndTheirPorts(t *testing.T) {
	f := newFabric()
	switches, links := twoSwitches()
	t0 := time.Unix(1_700_000_000, 0)
	f.plan(t0, switches, links, idle)
	a, b := [6]byte{2, 0, 0, 0, 0, 0xa}, [6]byte{2, 0, 0, 0, 0, 0xb}
	if !f.learn(a, testnet.Addr4(0x0a000001), model.PortRef{DPID: 1, Port: 2}, true) || !f.learn(b, netip.Addr{}, model.PortRef{DPID: 2, Port: 2}, false) {
		t.Fatal("new hosts not learned")
	}
	if f.learn(a, netip.Addr{}, model.PortRef{DPID: 1, Port: 2}, true) {
		t.Error("a host learned again where it was")
	}
	if _, ok := f.plan(t0, switches, links, idle)[1].PortTo(b); ok {
		t.Error("a host on a port not settled yet has rows")
	}
	views := f.plan(t0.Add(settleTime), switches, links, idle)
	for _, tc := range []struct {
		on   uint64
		mac  [6]byte
		port uint32
	}{{1, a, 2}, {1, b, 1}, {2, a, 1}, {2, b, 2}} {
		if p, ok := views[tc.on].PortTo(tc.mac); !ok || p != tc.port {
			t.Errorf("switch %d sends to %x by %d (%v), want %d", tc.on, tc.mac, p, ok, tc.port)
		}
	}

	// Port 2 of switch 1 turns out to be a link: its host is forgotten.
	links = append(links, linkState{link: link{src: model.PortRef{DPID: 1, Port: 2}, dst: model.PortRef{DPID: 2, Port: 4}}, both: false})
	views = f.plan(t0.Add(2*settleTime), switches, links, idle)
	if _, ok := views[1].PortTo(a); ok {
		t.Error("a host on a port that became a link is still known")
	}
}

// The switch gets the fabric's rows once, only what changed after, and
// each row fits the pipeline (the decision checks every flow-mod).
func TestFabric_ReconcileSendsWhatChanged(t *testing.T) {
	f := newFabric()
	dp, out := fabricDecision(f, 1, false)
	switches, links := twoSwitches()
	t0 := time.Unix(1_700_000_000, 0)
	f.plan(t0, switches, links, idle)
	a, b := [6]byte{2, 0, 0, 0, 0, 0xa}, [6]byte{2, 0, 0, 0, 0, 0xb}
	f.learn(a, netip.Addr{}, model.PortRef{DPID: 1, Port: 2}, true)
	f.learn(b, testnet.Addr4(0x0a000002), model.PortRef{DPID: 2, Port: 2}, true)
	round := func(at time.Time) []string {
		v := f.plan(at, switches, links, idle)[1]
		dp.ReconcileFabric(at, v, out)
		defer out.Reset()
		return testnet.FlowModLines(t, out.Buf)
	}
	got := round(t0.Add(settleTime))
	slices.Sort(got)
	testnet.AssertLines(t, got, []string{
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
	if e, ok := dp.Learner.Host(testnet.Addr4(0x0a000002)); !ok || e.Port != 1 || e.MAC != b {
		t.Errorf("the host on switch 2 is known here as %+v (%v), want its MAC through port 1", e, ok)
	}
	if got := round(t0.Add(settleTime + time.Second)); len(got) != 0 {
		t.Errorf("a round with nothing new sent %v", got)
	}
	// a's port goes down: the link by 1 floods nowhere, and a is gone.
	switches[0].ports[1].State = ofp.PortStateLinkDown
	got = round(t0.Add(settleTime + 2*time.Second))
	slices.Sort(got)
	testnet.AssertLines(t, got, []string{
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
			linkState{link: link{src: model.PortRef{DPID: a, Port: uint32(100 + b)}, dst: model.PortRef{DPID: b, Port: uint32(100 + a)}}, both: true},
			linkState{link: link{src: model.PortRef{DPID: b, Port: uint32(100 + a)}, dst: model.PortRef{DPID: a, Port: uint32(100 + b)}}, both: true})
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
			if l.src.DPID == s.dpid {
				s.ports = append(s.ports, ofp.Port{PortNo: l.src.Port})
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
			f.learn([6]byte{2, 0, 0, 0, byte(s.dpid), byte(p)}, testnet.Addr4(uint32(s.dpid)<<8|p), model.PortRef{DPID: s.dpid, Port: p}, true)
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
	dps := make([]*dataplane.Switch, len(switches))
	outs := make([]*dataplane.Outbox, len(switches))
	for i, s := range switches {
		dps[i], outs[i] = fabricDecision(f, s.dpid, true)
	}
	round := func(at time.Time) {
		for i, v := range f.plan(at, switches, links, idle) {
			dps[i-1].ReconcileFabric(at, v, outs[i-1])
			outs[i-1].Reset()
		}
	}
	for _, s := range switches {
		for p := uint32(1); p <= 4; p++ {
			f.learn([6]byte{2, 0, 0, 0, byte(s.dpid), byte(p)}, testnet.Addr4(uint32(s.dpid)<<8|p), model.PortRef{DPID: s.dpid, Port: p}, true)
		}
	}
	round(t0.Add(settleTime))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := switches[i%len(switches)]
		f.learn([6]byte{2, 1, byte(i >> 16), byte(i >> 8), byte(i), 0}, netip.Addr{}, model.PortRef{DPID: s.dpid, Port: 1 + uint32(i%4)}, true)
		round(t0.Add(settleTime + time.Duration(i+1)*time.Millisecond))
	}
}

// fabricDecision is switch dpid's decision under L2Fabric, reading f, and
// the outbox it decides into.
func fabricDecision(f *fabric, dpid uint64, groups bool) (*dataplane.Switch, *dataplane.Outbox) {
	dp := dataplane.New(dataplane.Config{L2: model.L2Fabric, DPID: dpid, Fabric: f, Groups: groups,
		Ledger: dataplane.NewFlowLedger(), Metrics: dataplane.NewMetrics(nil, nil), Log: slog.New(slog.DiscardHandler)})
	return dp, dataplane.NewOutbox(new(atomic.Uint32), nil)
}
