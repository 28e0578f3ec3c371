package controller

import (
	"reflect"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// A controller that shares its stats counts what a switch's flows held
// when it took the switch over only once settled, records the switch's
// readings after that, and shows its own counts with the rest of the
// cluster's, each node's share apart.
func TestClusterStats_SharedCounters(t *testing.T) {
	h, sw := connected(t, testnet.Config(nil), Options{ShareStats: true, Node: "a"}, 1, 2, 3)
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	s := nextSetup(t, sw)
	poll := func(packets uint64) {
		t.Helper()
		h.c.switchConns()[0].pollStats()
		req := sw.nextOf(ofp.TypeMultipartRequest)
		for !asksFlows(req) { // the port counters' request of the poll before
			req = sw.nextOf(ofp.TypeMultipartRequest)
		}
		sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
			{Cookie: s.fwd.Cookie, PacketCount: packets, ByteCount: packets * 100, Match: s.fwd.Match},
		}}})
	}
	poll(3)
	overlaps := waitFor(t, func() []sdnlb.StatsOverlap { return h.c.Overlaps() }, func(o []sdnlb.StatsOverlap) bool { return len(o) == 1 })
	const dpid = "00:00:00:00:00:00:00:01"
	if o := overlaps[0]; o.DPID != dpid || o.Members["m1"].PacketsIn != 3 || o.Members["m1"].BytesIn != 300 {
		t.Fatalf("overlap %+v, want switch 1's flows' 3 packets and 300 bytes to m1", o)
	}
	if own := h.c.OwnStats(); own.Members["m1"].PacketsIn != 0 || len(own.Switches) != 0 {
		t.Fatalf("before the overlap is settled: m1 %+v, readings %+v; want nothing counted, no readings", own.Members["m1"], own.Switches)
	}
	h.c.Settle(dpid, overlaps[0].Generation, map[string]sdnlb.Counts{"m1": {PacketsIn: 1, BytesIn: 100}})
	poll(5)
	own := waitFor(t, h.c.OwnStats, func(p *sdnlb.StatsPart) bool { return p.Members["m1"].PacketsIn == 3 })
	if m := own.Members["m1"]; m.Connections != 1 || m.Active != 1 || m.BytesIn != 300 {
		t.Errorf("own m1 %+v, want 1 connection, 1 active, 300 bytes in", m)
	}
	want := []sdnlb.SwitchReadings{{DPID: dpid, Members: map[string]sdnlb.Counts{"m1": {PacketsIn: 5, BytesIn: 500}}}}
	if !reflect.DeepEqual(own.Switches, want) {
		t.Errorf("readings %+v, want %+v", own.Switches, want)
	}

	h.c.SetElsewhere(&sdnlb.Elsewhere{Members: map[string]*sdnlb.MemberElsewhere{"m1": {
		Counts: sdnlb.Counts{Connections: 10, PacketsIn: 50}, Active: 2,
		Nodes: []sdnlb.NodeStats{{Node: "b", TotalConnections: 10, PacketsIn: 50, ActiveConnections: 2}},
	}}})
	st := waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.TotalConnections == 11 })
	if st.PacketsIn != 53 || st.ActiveConnections != 3 {
		t.Errorf("pool with the cluster's counts: %d packets in, %d active; want 53 and 3", st.PacketsIn, st.ActiveConnections)
	}
	wantNodes := []sdnlb.NodeStats{{Node: "a", ActiveConnections: 1, TotalConnections: 1, PacketsIn: 3, BytesIn: 300},
		{Node: "b", ActiveConnections: 2, TotalConnections: 10, PacketsIn: 50}}
	if !reflect.DeepEqual(st.Nodes, wantNodes) {
		t.Errorf("shares by node %+v, want %+v", st.Nodes, wantNodes)
	}

	// What a part the leader absorbed held leaves this node's counts.
	h.c.Forget(&sdnlb.StatsPart{Members: map[string]sdnlb.MemberPart{"m1": {Counts: sdnlb.Counts{Connections: 1, PacketsIn: 3, BytesIn: 300}}}})
	if m := h.c.OwnStats().Members["m1"]; m.Connections != 0 || m.PacketsIn != 0 || m.BytesIn != 0 {
		t.Errorf("own m1 after forgetting the part absorbed: %+v, want nothing", m)
	}
}

// asksFlows reports whether r asks for flow counters.
func asksFlows(r received) bool {
	_, ok := r.m.(*ofp.MultipartRequest).Body.(ofp.FlowStatsRequest)
	return ok
}

// waitFor polls get until ok holds, and returns what it got.
func waitFor[T any](tb testing.TB, get func() T, ok func(T) bool) T {
	tb.Helper()
	deadline := time.Now().Add(testnet.WaitFor)
	for {
		v := get()
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %+v", testnet.WaitFor, v)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
