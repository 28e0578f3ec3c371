package controller

import (
	"log/slog"
	"net/netip"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
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

// lineOf3 is switches 1, 2 and 3 in a line, 1:1↔2:1 and 2:3↔3:3, each
// link both ways, with a host's port 2 on each.
func lineOf3() ([]fabricSwitch, []linkState) {
	var links []linkState
	join := func(a, b model.PortRef) {
		links = append(links, linkState{link: link{src: a, dst: b}, both: true}, linkState{link: link{src: b, dst: a}, both: true})
	}
	join(model.PortRef{DPID: 1, Port: 1}, model.PortRef{DPID: 2, Port: 1})
	join(model.PortRef{DPID: 2, Port: 3}, model.PortRef{DPID: 3, Port: 3})
	return []fabricSwitch{
		{dpid: 1, ports: []ofp.Port{{PortNo: 1}, {PortNo: 2}}},
		{dpid: 2, ports: []ofp.Port{{PortNo: 1}, {PortNo: 2}, {PortNo: 3}}},
		{dpid: 3, ports: []ofp.Port{{PortNo: 2}, {PortNo: 3}}},
	}, links
}

// fabricNet is switches under L2Fabric, each a decision and the model of
// its switch, the models joined by the links as an oftable.Fabric: what a
// decision sends goes to its switch's tables, and what it tells the
// fabric (hosts it saw, rows it asks other switches for) to the fabric
// and the other switches' tables, as the runtime hands them on.
type fabricNet struct {
	tb       testing.TB
	f        *fabric
	switches []fabricSwitch
	links    []linkState
	fab      oftable.Fabric
	dps      map[uint64]*dataplane.Switch
	outs     map[uint64]*dataplane.Outbox
}

// newFabricNet is f's switches with their base rows, and decisions that
// have decided nothing yet.
func newFabricNet(tb testing.TB, f *fabric, switches []fabricSwitch, links []linkState) *fabricNet {
	tb.Helper()
	n := &fabricNet{tb: tb, f: f, switches: switches, links: links,
		dps: map[uint64]*dataplane.Switch{}, outs: map[uint64]*dataplane.Outbox{}}
	for _, l := range links {
		n.fab.Link(oftable.Port{DPID: l.src.DPID, Port: l.src.Port}, oftable.Port{DPID: l.dst.DPID, Port: l.dst.Port})
	}
	for _, s := range switches {
		base := model.BaseFlows(model.L2Fabric, false)
		for i := range base {
			mustApply(tb, n.fab.Switch(s.dpid), &base[i])
		}
		n.dps[s.dpid], n.outs[s.dpid] = fabricDecision(f, s.dpid, false)
	}
	return n
}

// round has every switch follow a round of the fabric at now.
func (n *fabricNet) round(now time.Time, load loadFunc) {
	n.tb.Helper()
	views := n.f.plan(now, n.switches, n.links, load)
	for _, s := range n.switches {
		n.dps[s.dpid].ReconcileFabric(now, views[s.dpid], n.outs[s.dpid])
		n.deliver(s.dpid)
	}
}

// decide runs a decision of switch dpid and delivers what it sends.
func (n *fabricNet) decide(dpid uint64, decision func(dp *dataplane.Switch, out *dataplane.Outbox)) {
	n.tb.Helper()
	decision(n.dps[dpid], n.outs[dpid])
	n.deliver(dpid)
}

// deliver applies the flow-mods in switch dpid's outbox to its tables
// and the transit rows to the other switches', records the hosts it saw,
// and empties it.
func (n *fabricNet) deliver(dpid uint64) {
	n.tb.Helper()
	out := n.outs[dpid]
	for b := out.Buf; len(b) > 0; {
		h, err := ofp.ParseHeader(b)
		if err != nil || int(h.Length) > len(b) {
			n.tb.Fatalf("switch %d: broken message: %v", dpid, err)
		}
		_, m, err := ofp.Decode(b[:h.Length])
		if err != nil {
			n.tb.Fatalf("switch %d: undecodable %s: %v", dpid, h.Type, err)
		}
		b = b[h.Length:]
		if fm, ok := m.(*ofp.FlowMod); ok {
			mustApply(n.tb, n.fab.Switch(dpid), fm)
		}
	}
	for _, h := range out.Hosts {
		if h.Seed {
			n.f.seed(h.MAC, h.At)
		} else {
			n.f.learn(h.MAC, h.IP, h.At, h.Settled)
		}
	}
	for _, t := range out.Transit {
		mustApply(n.tb, n.fab.Switch(t.DPID), &t.FM)
	}
	out.Reset()
}

func mustApply(tb testing.TB, sw *oftable.Table, fm *ofp.FlowMod) {
	tb.Helper()
	if _, err := sw.Apply(fm); err != nil {
		tb.Fatalf("the switch rejects %s: %v", testnet.FlowLine(tb, fm), err)
	}
}

// The fabric's rows carry a frame between hosts on different switches:
// a unicast from its host's port to the other host's port alone, across
// the switch between them, as it was sent; a broadcast along the tree to
// every other host once. A path that moves takes the frames along.
func TestFabric_FramesReachHosts(t *testing.T) {
	f := newFabric()
	t0 := time.Unix(1_700_000_000, 0)
	macs := map[uint64][6]byte{1: {2, 0, 0, 0, 0, 0xa}, 2: {2, 0, 0, 0, 0, 0xb}, 3: {2, 0, 0, 0, 0, 0xc}}
	switches, links := lineOf3()
	f.plan(t0, switches, links, idle)
	for dpid, mac := range macs {
		f.learn(mac, testnet.Addr4(0x0a000000|uint32(dpid)), model.PortRef{DPID: dpid, Port: 2}, true)
	}
	frame := func(src, dst uint64) oftable.Packet {
		dstMAC := [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		if dst != 0 {
			dstMAC = macs[dst]
		}
		return oftable.Packet{EthSrc: macs[src], EthDst: dstMAC, EthType: ofp.EthTypeIPv4, IPProto: ofp.IPProtoUDP,
			IPv4Src: testnet.Addr4(0x0a000000 | uint32(src)).As4(), IPv4Dst: testnet.Addr4(0x0a000000 | uint32(dst)).As4(), L4Src: 1000, L4Dst: 53}
	}
	host := func(dpid uint64) oftable.Port { return oftable.Port{DPID: dpid, Port: 2} }
	n := newFabricNet(t, f, switches, links)
	n.round(t0.Add(settleTime), idle)
	fab := &n.fab
	for _, tc := range []struct {
		name     string
		from, to uint64 // to 0: broadcast
		exits    []oftable.Port
		hops     []uint64
	}{
		{"ToTheNextSwitch", 1, 2, []oftable.Port{host(2)}, []uint64{1, 2}},
		{"AcrossASwitch", 1, 3, []oftable.Port{host(3)}, []uint64{1, 2, 3}},
		{"Back", 3, 1, []oftable.Port{host(1)}, []uint64{3, 2, 1}},
		{"Broadcast", 2, 0, []oftable.Port{host(1), host(3)}, []uint64{2, 1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := frame(tc.from, tc.to)
			trip := fab.Send(host(tc.from), p)
			var hops []uint64
			inPort := map[uint64]uint32{} // where the frame came into each switch
			for _, h := range trip.Hops {
				hops, inPort[h.DPID] = append(hops, h.DPID), h.In.InPort
			}
			if trip.Err != nil || !slices.Equal(trip.ExitPorts(), tc.exits) || !slices.Equal(hops, tc.hops) {
				t.Fatalf("left by %v through switches %v (%v), want %v through %v", trip.ExitPorts(), hops, trip.Err, tc.exits, tc.hops)
			}
			for _, e := range trip.Exits {
				want := p
				want.InPort = inPort[e.At.DPID]
				if e.Packet != want {
					t.Errorf("left by %v as %v, want %v", e.At, e.Packet, want)
				}
			}
		})
	}
}

// Between two switches joined twice, frames take the path the round
// chose, and move with it; a broadcast crosses once: it is flooded along
// the tree, and dropped where it comes in by the link off it.
func TestFabric_FramesFollowThePath(t *testing.T) {
	f := newFabric()
	t0 := time.Unix(1_700_000_000, 0)
	switches, links := twoSwitches()
	f.plan(t0, switches, links, idle)
	a, b := [6]byte{2, 0, 0, 0, 0, 0xa}, [6]byte{2, 0, 0, 0, 0, 0xb}
	f.learn(a, netip.Addr{}, model.PortRef{DPID: 1, Port: 2}, true)
	f.learn(b, netip.Addr{}, model.PortRef{DPID: 2, Port: 2}, true)
	fromA := oftable.Port{DPID: 1, Port: 2}
	toB := oftable.Packet{EthSrc: a, EthDst: b, EthType: ofp.EthTypeIPv4, IPProto: ofp.IPProtoUDP,
		IPv4Src: [4]byte{10, 0, 0, 0xa}, IPv4Dst: [4]byte{10, 0, 0, 0xb}, L4Src: 1000, L4Dst: 53}
	broadcast := toB
	broadcast.EthDst, broadcast.IPv4Dst = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, [4]byte{255, 255, 255, 255}
	busy := func(l link, dst uint64, carries bool) float64 {
		if l.src == (model.PortRef{DPID: 1, Port: 1}) {
			return 0.9
		}
		return 0
	}
	for _, tc := range []struct {
		name string
		at   time.Time
		load loadFunc
		by   uint32 // the port the frame comes into switch 2 by
	}{
		{"Idle", t0.Add(settleTime), idle, 1},
		{"Port1Busy", t0.Add(2 * settleTime), busy, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newFabricNet(t, f, switches, links)
			n.round(tc.at, tc.load)
			fab := &n.fab
			for _, p := range []oftable.Packet{toB, broadcast} {
				trip := fab.Send(fromA, p)
				if want := []oftable.Port{{DPID: 2, Port: 2}}; trip.Err != nil || !slices.Equal(trip.ExitPorts(), want) {
					t.Errorf("%v left by %v (%v), want %v alone", p, trip.ExitPorts(), trip.Err, want)
				}
				if n := len(trip.Hops); n != 2 || p == toB && trip.Hops[1].In.InPort != tc.by {
					t.Errorf("%v went through %d switches, into switch 2 by %d; want 2, by %d", p, n, trip.Hops[n-1].In.InPort, tc.by)
				}
			}
			// A broadcast that comes in by the link off the tree (from a
			// switch that has not heard of the tree yet) goes no further.
			if trip := fab.Send(oftable.Port{DPID: 2, Port: 3}, broadcast); len(trip.Exits) != 0 || len(trip.Hops) != 1 {
				t.Errorf("a broadcast in by the link off the tree left by %v after %d switches, want dropped", trip.ExitPorts(), len(trip.Hops))
			}
		})
	}
}

// A CONTROLLER VIP's connection from a client on switch 1 to its member
// on switch 3 is carried by the switches alone once set up: switch 1,
// where the client enters, punts the first packet and gets the
// connection's flows, which address the client's packets to the member,
// and the rows it asks of the switches between (which would otherwise
// send the member's replies to the controller), so the replies reach the
// client from the VIP.
func TestFabric_ConnectionAcrossSwitches(t *testing.T) {
	f := newFabric()
	t0 := time.Unix(1_700_000_000, 0)
	switches, links := lineOf3()
	f.plan(t0, switches, links, idle)
	client, member := [6]byte(testnet.MustMAC(t, testnet.ClientMAC)), [6]byte(testnet.MustMAC(t, testnet.MemberMAC(1)))
	f.learn(client, netip.MustParseAddr(testnet.ClientIP), model.PortRef{DPID: 1, Port: 2}, true)
	f.learn(member, netip.MustParseAddr("10.0.0.1"), model.PortRef{DPID: 3, Port: 2}, true)
	now := t0.Add(settleTime)
	snap, skipped := model.NewBuilder(func() time.Time { return now }).Build(testnet.Config(func(c *sdnlb.Config) { c.Members = c.Members[:1] }))
	if len(skipped) > 0 {
		t.Fatalf("configuration objects skipped: %v", skipped)
	}
	n := newFabricNet(t, f, switches, links)
	for _, s := range switches {
		n.decide(s.dpid, func(dp *dataplane.Switch, out *dataplane.Outbox) { dp.Configure(now, snap, out) })
	}
	n.round(now, idle)

	atClient, atMember := oftable.Port{DPID: 1, Port: 2}, oftable.Port{DPID: 3, Port: 2}
	seg := func(s testnet.TCPSeg) ([]byte, oftable.Packet) {
		frame := testnet.TCPFrame(t, s)
		p, err := oftable.ParseFrame(0, frame)
		if err != nil {
			t.Fatal(err)
		}
		return frame, p
	}
	syn, synPacket := seg(testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 80, SYN: true})
	trip := n.fab.Send(atClient, synPacket)
	if len(trip.Hops) != 1 || trip.Hops[0].Result.Flow == nil || !slices.Equal(trip.ExitPorts(), []oftable.Port{{DPID: 1, Port: ofp.PortController}}) {
		t.Fatalf("the first packet left by %v after %d switches, want to switch 1's controller", trip.ExitPorts(), len(trip.Hops))
	}
	punt := trip.Hops[0].Result.Flow
	n.decide(1, func(dp *dataplane.Switch, out *dataplane.Outbox) {
		dp.PacketIn(now, snap, &ofp.PacketIn{BufferID: ofp.NoBuffer, TotalLen: uint16(len(syn)), Reason: ofp.ReasonAction,
			TableID: punt.TableID, Cookie: punt.Cookie, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(atClient.Port)}}, Data: syn}, out)
	})

	for _, tc := range []struct {
		name          string
		from, to      oftable.Port
		sent, arrives testnet.TCPSeg
		hops          []uint64
	}{
		{"ClientToMember", atClient, atMember,
			testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 80, ACK: true},
			testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.MemberMAC(1), Src: testnet.ClientIP, Dst: "10.0.0.1", Sport: 40000, Dport: 8080, ACK: true},
			[]uint64{1, 2, 3}},
		{"MemberToClient", atMember, atClient,
			testnet.TCPSeg{SrcMAC: testnet.MemberMAC(1), DstMAC: testnet.ClientMAC, Src: "10.0.0.1", Dst: testnet.ClientIP, Sport: 8080, Dport: 40000, SYN: true, ACK: true},
			testnet.TCPSeg{SrcMAC: testnet.VIPMAC, DstMAC: testnet.ClientMAC, Src: "10.0.0.100", Dst: testnet.ClientIP, Sport: 80, Dport: 40000, SYN: true, ACK: true},
			[]uint64{3, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, sent := seg(tc.sent)
			_, want := seg(tc.arrives)
			trip := n.fab.Send(tc.from, sent)
			var hops []uint64
			for _, h := range trip.Hops {
				hops = append(hops, h.DPID)
			}
			if trip.Err != nil || !slices.Equal(trip.ExitPorts(), []oftable.Port{tc.to}) || !slices.Equal(hops, tc.hops) {
				t.Fatalf("left by %v through switches %v (%v), want %v through %v", trip.ExitPorts(), hops, trip.Err, tc.to, tc.hops)
			}
			want.InPort = trip.Hops[len(trip.Hops)-1].In.InPort
			if got := trip.Exits[0].Packet; got != want {
				t.Errorf("arrived as\n  %v\nwant\n  %v", got, want)
			}
		})
	}
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
		Ledger: dataplane.NewFlowLedger(false), Metrics: dataplane.NewMetrics(nil, nil), Log: slog.New(slog.DiscardHandler)})
	return dp, dataplane.NewOutbox(new(atomic.Uint32), nil)
}
