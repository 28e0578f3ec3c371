package dataplane

import (
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// controlledTCP is a switch with select groups and Nicira actions whose
// VIP the controller dispatches, with a connection limit of limit (-1:
// none).
func controlledTCP(t *testing.T, limit int) *decision {
	t.Helper()
	d := newSwitchDecision(t, testnet.Config(func(c *sdnlb.Config) {
		c.Pools[0].Dispatch = sdnlb.DispatchController
		c.VIPs[0].ConnectionLimit = limit
	}))
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	return d
}

// flowHeldTCP is controlledTCP without a limit for a VIP whose
// connections have flows of their own: it keeps its clients' members
// (SOURCE_IP persistence), for which the controller reads the
// connections' ends from their flows.
func flowHeldTCP(t *testing.T) *decision {
	t.Helper()
	d := newSwitchDecision(t, persistentConfig(dispatchedBy(sdnlb.DispatchController)))
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	return d
}

// dispatchedBy sets the test pool's dispatch.
func dispatchedBy(dispatch sdnlb.Dispatch) func(*sdnlb.Config) {
	return func(c *sdnlb.Config) { c.Pools[0].Dispatch = dispatch }
}

// flowStats is what the switch reports of the client → member flow of
// the connection from sport to member i: its idle timeout, 10 once its
// FIN or reset passed it.
func flowStats(member int, sport, idle uint16) ofp.FlowStats {
	return ofp.FlowStats{Cookie: model.MakeCookie(model.CatConn, 1, uint32(member)), Priority: model.PrioConnection,
		IdleTimeout: idle, Match: clientFlowMatch(sport), PacketCount: 5, ByteCount: 500}
}

func (d *decision) pollOnce(stats ...ofp.FlowStats) {
	d.dp.BeginPoll()
	d.dp.PollPart(d.now, d.snap, stats, d.out)
	endPoll(d.dp, d.snap, everyFlow)
}

// endPoll ends a poll of scope, the last planned.
func endPoll(dp *Switch, snap *model.Snapshot, scope PollScope) {
	dp.EndPoll(snap, &Poll{Scope: scope, planned: dp.accounting.planned})
}

func (d *decision) activeCounts(member int) (memberActive, vipActive int64) {
	return testnet.MemberByID(d.snap, "m"+string(rune('0'+member))).Cnt.Active.Load(), d.snap.VIPByID["v1"].Cnt.Active.Load()
}

// clientFIN is the client's FIN of its connection from sport.
func clientFIN(t *testing.T, sport uint16) []byte {
	return testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100",
		Sport: sport, Dport: 80, FIN: true, ACK: true, Seq: 1001, AckNum: 5001})
}

// A TCP connection's flows have no idle timeout while it is open (the
// controller's polls age them); its client's FIN comes up, ends it at
// once and gives its flows a closing connection's idle timeout, and the
// polls that show that timeout end nothing more.
func TestAccounting_ConnectionEndsAtFIN(t *testing.T) {
	d := flowHeldTCP(t)
	got := d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	if n := connFlowMods(got, 0); n != 2 {
		t.Fatalf("the setup got\n  %s\nwant the connection's flows", strings.Join(got, "\n  "))
	}
	for _, l := range got {
		if strings.Contains(l, "idle_timeout") || strings.Contains(l, "fin_timeout") {
			t.Errorf("an open connection's flow with a timeout: %s", l)
		}
	}
	if m, v := d.activeCounts(1); m != 1 || v != 1 {
		t.Fatalf("after the setup: member active %d, VIP active %d, want 1 and 1", m, v)
	}
	d.pollOnce(flowStats(1, 40000, 0))
	if m, v := d.activeCounts(1); m != 1 || v != 1 {
		t.Errorf("open: member active %d, VIP active %d, want 1 and 1", m, v)
	}
	if got := d.forward(testnet.ClientOF, clientFIN(t, 40000)); got != "CONTROLLER" {
		t.Fatalf("the client's FIN went %s, want CONTROLLER", got)
	}
	got = d.packetIn(testnet.ClientOF, clientFIN(t, 40000))
	if connFlowMods(got, 0) != 2 || strings.Count(strings.Join(got, "\n"), "idle_timeout=10,") != 2 ||
		countPrefix(got, "packet_out in_port=10 actions=set_field:aa:00:00:00:00:01") != 1 {
		t.Fatalf("the FIN got\n  %s\nwant the flows at a closing connection's idle timeout and the FIN sent on", strings.Join(got, "\n  "))
	}
	if m, v := d.activeCounts(1); m != 0 || v != 0 {
		t.Errorf("after its FIN: member active %d, VIP active %d, want 0 and 0", m, v)
	}
	// A retransmitted FIN goes on alone; the polls that show the end, and
	// the flows' removal, end nothing more.
	if got := d.packetIn(testnet.ClientOF, clientFIN(t, 40000)); countPrefix(got, "packet_out") != 1 || countPrefix(got, "flow_mod") != 0 {
		t.Errorf("the FIN again got\n  %s\nwant it sent on alone", strings.Join(got, "\n  "))
	}
	d.pollOnce(flowStats(1, 40000, 10))
	fs := flowStats(1, 40000, 10)
	d.dp.FlowRemoved(d.now, d.snap, &ofp.FlowRemoved{Cookie: fs.Cookie, Priority: fs.Priority, IdleTimeout: 10, Match: fs.Match,
		Reason: ofp.RemovedIdleTimeout})
	if m, v := d.activeCounts(1); m != 0 || v != 0 {
		t.Errorf("after its flows idled out: member active %d, VIP active %d, want 0 and 0", m, v)
	}
	if st := testnet.MemberByID(d.snap, "m1").Stats(""); st.ActiveConnections != 0 || st.TotalConnections != 1 {
		t.Errorf("member stats: active %d total %d, want 0 and 1", st.ActiveConnections, st.TotalConnections)
	}
}

// The polls delete a connection flow once they saw its packet count stand
// still for its idle timeout, as the switch would have removed it, and
// never a flow that moved since, nor one that has a timeout of its own.
func TestAccounting_PollsAgeConnectionFlows(t *testing.T) {
	d := flowHeldTCP(t) // idle timeout 30 s
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001))
	poll := func(stats ...ofp.FlowStats) []string {
		t.Helper()
		d.pollOnce(stats...)
		return d.sent(nil)
	}
	busy, quiet, closing := flowStats(1, 40000, 0), flowStats(1, 40001, 0), flowStats(1, 40002, 10)
	for step := range 3 { // 0, 10, 20 s
		busy.PacketCount += 3
		if got := poll(busy, quiet, closing); len(got) != 0 {
			t.Fatalf("%d s: the poll sent\n  %s\nwant nothing", 10*step, strings.Join(got, "\n  "))
		}
		d.advance(10 * time.Second)
	}
	busy.PacketCount++
	got := poll(busy, quiet, closing)
	want := fmt.Sprintf("flow_mod delete_strict cookie=%#x/0xffffffffffffffff table=classify, priority=1000, tcp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40001,tp_dst=80", quiet.Cookie)
	if len(got) != 1 || got[0] != want {
		t.Errorf("30 s after the first read, the poll sent\n  %s\nwant\n  %s", strings.Join(got, "\n  "), want)
	}
}

// Every SYN to a VIP the controller dispatches reaches it, also one that
// reuses the ports of a connection whose flows remain; the connection's
// other packets stay in the switch.
func TestAccounting_SYNPunt(t *testing.T) {
	d := flowHeldTCP(t)
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	if got := d.forward(testnet.ClientOF, testnet.SYN(t, 40000)); got != "CONTROLLER" {
		t.Errorf("a SYN on the ports of a connection with flows went %s, want CONTROLLER", got)
	}
	ack := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100",
		Sport: 40000, Dport: 80, ACK: true, Seq: 1001, AckNum: 5001})
	if got := d.forward(testnet.ClientOF, ack); !strings.HasPrefix(got, "output:1 ") {
		t.Errorf("the connection's ACK went %s, want member 1", got)
	}

	// The pool moves to the switch's dispatch: the punt goes, and SYNs go
	// to the group.
	d.configure(persistentConfig(dispatchedBy(sdnlb.DispatchSwitch)))
	if got := d.forward(testnet.ClientOF, testnet.SYN(t, 40001)); got == "CONTROLLER" {
		t.Errorf("a SYN to a VIP the switch dispatches went to the controller")
	}
	// And back.
	d.configure(persistentConfig(dispatchedBy(sdnlb.DispatchController)))
	if got := d.forward(testnet.ClientOF, testnet.SYN(t, 40000)); got != "CONTROLLER" {
		t.Errorf("back under the controller's dispatch, a reusing SYN went %s, want CONTROLLER", got)
	}
}

// A SYN of a connection counted already, retransmitted past the recent
// window, gets its member again and counts once; a limited VIP does not
// refuse it. A client reusing the ports once the end shows is a new
// connection.
func TestAccounting_SYNAgainCountsOnce(t *testing.T) {
	d := controlledTCP(t, 1)
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	d.advance(time.Duration(model.RecentWindow) + time.Second)
	got := d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	if connFlowMods(got, 1) != 2 || !strings.Contains(strings.Join(got, "\n"), "output:1 data=<in>") {
		t.Errorf("the retransmitted SYN got\n  %s\nwant member 1's flows and its packet-out", strings.Join(got, "\n  "))
	}
	if m, v := d.activeCounts(1); m != 1 || v != 1 {
		t.Errorf("after the retransmission: member active %d, VIP active %d, want 1 and 1", m, v)
	}
	// The limit of 1 holds against another connection ...
	if got := d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001)); !strings.Contains(strings.Join(got, "\n"), "RST") {
		t.Errorf("a second connection past the limit got\n  %s\nwant a reset", strings.Join(got, "\n  "))
	}
	// ... until the first one's FIN shows.
	d.pollOnce(flowStats(1, 40000, 10))
	if got := d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001)); connFlowMods(got, 0) != 2 {
		t.Errorf("after the first connection's end, a second got\n  %s\nwant its flows", strings.Join(got, "\n  "))
	}
	if _, v := d.activeCounts(1); v != 1 {
		t.Errorf("VIP active %d, want 1", v)
	}
}

// Flows a switch holds at its handshake count as active connections
// unless they show their end.
func TestAccounting_AdoptsOpenConnections(t *testing.T) {
	d := controlledTCP(t, -1)
	open, ended := flowStats(1, 40000, 0), flowStats(2, 40001, 10)
	for i, f := range []*ofp.FlowStats{&open, &ended} {
		member := byte(i + 1)
		f.Instructions = []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
			ofp.ActionSetField{Field: ofp.MatchEthDst([6]byte{0xaa, 0, 0, 0, 0, member})},
			ofp.ActionSetField{Field: ofp.MatchIPv4Dst([4]byte{10, 0, 0, member})},
			ofp.ActionSetField{Field: ofp.MatchTCPDst(8080)}, ofp.ActionOutput{Port: uint32(member)}}}}
	}
	next := New(d.dp.Config)
	out := NewOutbox(&d.xids, nil)
	next.Adopt(d.now, d.snap, SwitchState{Flows: []ofp.FlowStats{open, ended}}, out)
	if n := next.accounting.total(); n != 1 {
		t.Errorf("adopted %d active connections, want the open one", n)
	}
}

// A VIP with a connection limit counts open connections exactly: each
// FIN ends its connection at once, so a client's next connection is
// admitted however soon it follows, and the packet goes on to the member.
func TestAccounting_LimitedVIPEndsAtFIN(t *testing.T) {
	fin := func(sport uint16) []byte { return clientFIN(t, sport) }
	d := controlledTCP(t, 1)
	for i := range 10 { // sequential connections, each closed before the next
		sport := uint16(40000 + i)
		got := d.packetIn(testnet.ClientOF, testnet.SYN(t, sport))
		if connFlowMods(got, 0) != 2 {
			t.Fatalf("connection %d: got\n  %s\nwant its flows", i, strings.Join(got, "\n  "))
		}
		if got := d.forward(testnet.ClientOF, fin(sport)); got != "CONTROLLER" {
			t.Fatalf("connection %d: its FIN went %s, want CONTROLLER", i, got)
		}
		got = d.packetIn(testnet.ClientOF, fin(sport))
		joined := strings.Join(got, "\n  ")
		if connFlowMods(got, 0) != 2 || !strings.Contains(joined, "idle_timeout=10,") ||
			countPrefix(got, "packet_out in_port=10 actions=set_field:aa:00:00:00:00:0") != 1 {
			t.Fatalf("connection %d: its FIN got\n  %s\nwant its flows at the FIN's idle timeout and the FIN sent on", i, joined)
		}
		if _, v := d.activeCounts(1); v != 0 {
			t.Fatalf("connection %d: VIP active %d after its FIN, want 0", i, v)
		}
		// A retransmitted FIN goes on too, and ends nothing more.
		if got := d.packetIn(testnet.ClientOF, fin(sport)); countPrefix(got, "packet_out") != 1 || countPrefix(got, "flow_mod") != 0 {
			t.Fatalf("connection %d: the FIN again got\n  %s\nwant it sent on alone", i, strings.Join(got, "\n  "))
		}
	}
	if refused := d.snap.VIPByID["v1"].Cnt.Refused.Load(); refused != 0 {
		t.Errorf("%d of 10 sequential connections refused under a limit of 1, want 0", refused)
	}
}

// A member at its capacity takes no new connection: the controller picks
// the next member with room, and refuses once none has any.
func TestCapacity_ControllerPicksAround(t *testing.T) {
	d := newDecision(t, testnet.Config(func(c *sdnlb.Config) {
		c.Pools[0].Dispatch = sdnlb.DispatchController
		c.Members[0].Capacity = 1
		c.Members[1].Capacity = 1
		c.Members[2].Capacity = 2
	}))
	d.teach(1, 2, 3)
	var got []int
	for i := range 4 {
		sent := d.packetIn(testnet.ClientOF, testnet.SYN(t, uint16(40000+i)))
		got = append(got, memberOfSent(t, sent))
	}
	if want := []int{1, 2, 3, 3}; !slices.Equal(got, want) {
		t.Errorf("members %v, want %v: round robin past the full ones", got, want)
	}
	sent := d.packetIn(testnet.ClientOF, testnet.SYN(t, 40004))
	if !strings.Contains(strings.Join(sent, "\n"), "RST") {
		t.Errorf("a connection with every member at capacity got\n  %s\nwant a reset", strings.Join(sent, "\n  "))
	}
	if refused := d.snap.VIPByID["v1"].Cnt.Refused.Load(); refused != 1 {
		t.Errorf("refused %d, want 1", refused)
	}
	// Member 1's connection ends: it has room again.
	d.dp.FlowRemoved(d.now, d.snap, &ofp.FlowRemoved{Cookie: model.MakeCookie(model.CatConn, 1, 1), Match: clientFlowMatch(40000)})
	if m := memberOfSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40005))); m != 1 {
		t.Errorf("after member 1's connection ended, the next went to member %d, want 1", m)
	}
}

// memberOfSent is the member whose port a setup's packet-out leaves by.
func memberOfSent(t *testing.T, sent []string) int {
	t.Helper()
	for _, l := range sent {
		if strings.HasPrefix(l, "packet_out in_port=10 actions=set_field:aa:00:00:00:00:0") {
			return int(l[len("packet_out in_port=10 actions=set_field:aa:00:00:00:00:0")] - '0')
		}
	}
	t.Fatalf("no setup in\n  %s", strings.Join(sent, "\n  "))
	return 0
}

// Under the switch's dispatch a member at its capacity loses its slots
// at the next weighing, and gets them back once below it.
func TestCapacity_SwitchDropsFullMember(t *testing.T) {
	d := newSwitchDecision(t, switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) { c.Members[0].Capacity = 2 }))
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	syn := testnet.SYN(t, 40000)
	if got := shares(d.bucketMembers(syn), 1, 2, 3); got[0] == 0 {
		t.Fatalf("buckets %v, want member 1 in them while it has room", got)
	}
	m1 := d.snap.Pools["p1"].ByNum[1]
	m1.Cnt.Opened.Store(2) // the switch counted two connections opened and none closed
	d.now = d.now.Add(2 * time.Second)
	d.reweigh()
	if got := shares(d.bucketMembers(syn), 1, 2, 3); got[0] != 0 || got[1]+got[2] != model.GroupSlots {
		t.Errorf("buckets %v with member 1 at its capacity, want none for it", got)
	}
	if !d.snap.Pools["p1"].ByNum[1].Full {
		t.Errorf("member 1 at its capacity is not marked full")
	}
	m1.Cnt.Closed.Store(1)
	d.now = d.now.Add(2 * time.Second)
	d.reweigh()
	if got := shares(d.bucketMembers(syn), 1, 2, 3); got[0] == 0 {
		t.Errorf("buckets %v with member 1 below its capacity again, want some for it", got)
	}
}

// A client that reuses the ports of a connection that ended while its
// flows remain gets that connection's member again, as a new connection:
// the switch may still send the packets after the SYN by the old flows
// for a moment, so another member would lose them.
func TestAccounting_ReusedPortsKeepTheirMember(t *testing.T) {
	// Members with ample capacities: the connections have flows, and go
	// round robin.
	d := newSwitchDecision(t, testnet.Config(func(c *sdnlb.Config) {
		dispatchedBy(sdnlb.DispatchController)(c)
		for i := range c.Members {
			c.Members[i].Capacity = 100
		}
	}))
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	if m := memberOfSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))); m != 1 {
		t.Fatalf("first connection to member %d, want 1", m)
	}
	d.pollOnce(flowStats(1, 40000, 10)) // it ended
	if _, v := d.activeCounts(1); v != 0 {
		t.Fatalf("VIP active %d after the end, want 0", v)
	}
	d.advance(time.Duration(model.RecentWindow) + time.Second)
	if m := memberOfSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))); m != 1 {
		t.Errorf("the reused ports went to member %d, want 1, the ended connection's", m)
	}
	if m, v := d.activeCounts(1); m != 1 || v != 1 {
		t.Errorf("after the reuse: member active %d, VIP active %d, want 1 and 1: a new connection", m, v)
	}
	if st := testnet.MemberByID(d.snap, "m1").Stats(""); st.TotalConnections != 2 {
		t.Errorf("member 1 total %d, want 2", st.TotalConnections)
	}
	// Other ports follow the rotation.
	if m := memberOfSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001))); m != 2 {
		t.Errorf("new ports went to member %d, want 2", m)
	}
	// Reused again within a moment of the setup before: still a new
	// connection, admitted and counted, not a packet of the one before.
	d.pollOnce(flowStats(1, 40000, 10), flowStats(2, 40001, 30))
	if m := memberOfSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))); m != 1 {
		t.Errorf("the ports reused at once went to member %d, want 1", m)
	}
	if st := testnet.MemberByID(d.snap, "m1").Stats(""); st.TotalConnections != 3 || st.ActiveConnections != 1 {
		t.Errorf("member 1 after the ports were reused at once: total %d, active %d; want 3 and 1", st.TotalConnections, st.ActiveConnections)
	}
}

// A ledger counts in epochs: the first poll after a takeover reads what
// the flows counted before into the overlap, which counts once settled;
// a reconnect under the same generation goes on counting; the readings
// sum the live flows.
func TestFlowLedger_Epochs(t *testing.T) {
	d := controlledTCP(t, -1)
	l := NewFlowLedger(true)
	d.dp.accounting.ledger = l
	m1 := testnet.MemberByID(d.snap, "m1").Cnt
	reading := func(packets uint64) ofp.FlowStats {
		fs := flowStats(1, 40000, 30)
		fs.PacketCount, fs.ByteCount = packets, packets*100
		return fs
	}
	counted := func(want uint64, when string) {
		t.Helper()
		if got := m1.PacketsIn.Load(); got != want {
			t.Errorf("%s: member counted %d packets in, want %d", when, got, want)
		}
	}
	live := func() (uint64, bool) {
		l.Lock()
		defer l.Unlock()
		_, sums, ok := l.Readings()
		return sums[1].PacketsIn, ok
	}

	l.Begin(7)
	d.pollOnce(reading(5))
	counted(0, "the first poll of a takeover")
	gen, overlap, prior, _, ok := l.Overlap()
	if !ok || gen != 7 || overlap[1].PacketsIn != 5 || overlap[1].BytesIn != 500 || prior != nil {
		t.Fatalf("overlap: generation %d, %+v, prior %v, ok %v; want generation 7, 5 packets and 500 bytes in, no prior", gen, overlap[1], prior, ok)
	}
	if _, ok := live(); ok {
		t.Error("readings given while the overlap waits to be settled")
	}
	d.pollOnce(reading(8))
	counted(3, "the poll after")
	l.Settle(d.snap, 7, map[uint32]sdnlb.Counts{1: {PacketsIn: 2, BytesIn: 200}})
	counted(5, "settled")
	if n, ok := live(); !ok || n != 8 {
		t.Errorf("readings %d packets in (given: %v), want the flow's 8", n, ok)
	}

	l.Begin(7) // the switch reconnects to the same master
	d.pollOnce(reading(9))
	counted(6, "after a reconnect")

	l.Begin(8) // taken over again
	d.pollOnce(reading(10))
	counted(6, "the first poll of the second takeover")
	if gen, overlap, prior, priorGen, ok := l.Overlap(); !ok || gen != 8 || overlap[1].PacketsIn != 10 || prior[1].PacketsIn != 9 || priorGen != 7 {
		t.Errorf("second overlap: generation %d, %+v, prior %+v of %d; want generation 8, 10 packets, prior 9 of generation 7", gen, overlap[1], prior[1], priorGen)
	}
	l.Settle(d.snap, 8, nil)
	d.pollOnce()
	if n, ok := live(); !ok || n != 0 {
		t.Errorf("readings %d packets in once the flow is gone, want 0", n)
	}
	counted(6, "the flow gone")

	// Without shared stats the first poll counts at once.
	alone := NewFlowLedger(false)
	d.dp.accounting.ledger = alone
	alone.Begin(0)
	fs := reading(4)
	fs.Match = clientFlowMatch(40001)
	d.pollOnce(fs)
	counted(10, "the first poll of a node alone")
}

// A switch that holds more connection flows than a poll should read is
// read a shard of connections at a time, with every other flow, once its
// epoch's first poll has read every flow; a shard's read forgets only
// that shard's flows it did not find.
func TestAccounting_PollsByShard(t *testing.T) {
	d := flowHeldTCP(t)
	d.dp.accounting.ledger.Begin(1)
	if p := d.dp.NextPoll(); len(p.Requests) != 1 || p.Scope != everyFlow || p.Requests[0].CookieMask != model.MaskApp {
		t.Fatalf("the epoch's first poll asks %+v, want every flow", p)
	}
	client := netip.MustParseAddr(testnet.ClientIP)
	var even, odd uint16 // client ports of connections in an even and an odd shard
	for port := uint16(40000); even == 0 || odd == 0; port++ {
		if model.ConnShard(client, port)%2 == 0 {
			even = port
		} else {
			odd = port
		}
	}
	read := func(sport uint16, packets uint64) ofp.FlowStats {
		st := flowStats(1, sport, 30)
		st.Cookie, st.PacketCount = model.ConnCookie(model.CatConn, model.ConnShard(client, sport), 1, 1), packets
		return st
	}
	packetsIn := func() uint64 { return testnet.MemberByID(d.snap, "m1").Cnt.PacketsIn.Load() }
	d.pollOnce(read(even, 5), read(odd, 5)) // the overlap: counted at once, without shared stats
	if p := d.dp.NextPoll(); len(p.Requests) != 1 || p.Scope != everyFlow {
		t.Fatalf("a poll of a few connections asks %+v, want every flow", p)
	}

	for port := range pollFlowBudget { // connections enough for two shards
		d.dp.accounting.conns[model.ConnKey{ClientIP: client, ClientPort: uint16(port), Proto: ofp.IPProtoTCP, VIPNum: 1}] = countedConn{member: 1}
	}
	first, second := d.dp.NextPoll(), d.dp.NextPoll()
	if first.Scope.of != 2 || !first.Scope.rest || second.Scope.shard == first.Scope.shard {
		t.Fatalf("polls of %d connections read %+v, then %+v; want the rest and a shard of two, the other the next time", pollFlowBudget, first.Scope, second.Scope)
	}
	// The rest comes from the tables whose rows count, the shard by the
	// cookies of the flows read before: no request walks the table of
	// connections.
	evenPoll := first
	if first.Scope.shard != 0 {
		evenPoll = second
	}
	rest, restMask := model.NotConnCookie()
	want := []ofp.FlowStatsRequest{flowsIn(model.TableToMember, rest, restMask), flowsIn(model.TableFromMember, rest, restMask), flowsOf(read(even, 0).Cookie, ^uint64(0))}
	if !reflect.DeepEqual(evenPoll.Requests, want) {
		t.Errorf("the even shard's poll asks\n%+v\nwant\n%+v", evenPoll.Requests, want)
	}

	// A read of the even shard that finds neither flow forgets the even
	// one, which then counts afresh, and keeps the odd one's reading.
	before := packetsIn()
	d.dp.BeginPoll()
	d.dp.EndPoll(d.snap, &evenPoll)
	d.pollOnce(read(even, 7), read(odd, 7))
	if got := packetsIn() - before; got != 7+2 {
		t.Errorf("after the even shard's read found nothing, the flows counted %d packets more, want 9 (7 afresh, 2 since the odd one's reading)", got)
	}
}

// A connection set up since its shard was last read is read by the
// cookies of its flows, which the switch finds by its index of cookies,
// until a poll planned after its setup read that shard; a shard of more
// cookies than maxCookieReads is read by cookie mask.
func TestAccounting_ShardReadsByCookie(t *testing.T) {
	d := flowHeldTCP(t)
	d.dp.accounting.ledger.Begin(1)
	d.pollOnce() // the epoch's first poll, of every flow
	client := netip.MustParseAddr(testnet.ClientIP)
	for port := range 3 * pollFlowBudget / 2 { // connections enough for four shards
		d.dp.accounting.conns[model.ConnKey{ClientIP: client, ClientPort: uint16(port), Proto: ofp.IPProtoTCP, VIPNum: 1}] = countedConn{member: 1}
	}
	const sport = 40000
	d.packetIn(testnet.ClientOF, testnet.SYN(t, sport))
	shard := model.ConnShard(client, sport)
	m := d.dp.accounting.conns[model.ConnKey{ClientIP: client, ClientPort: sport, Proto: ofp.IPProtoTCP, VIPNum: 1}].member
	cookies := []uint64{model.ConnCookie(model.CatConn, shard, 1, m), model.ConnCookie(model.CatConnReply, shard, 1, m)}
	shardPoll := func() Poll {
		t.Helper()
		for range 4 {
			if p := d.dp.NextPoll(); p.Scope.shard == shard%4 {
				return p
			}
		}
		t.Fatalf("four polls read no shard of %d", shard)
		return Poll{}
	}
	asked := func(p Poll) (exact []uint64) {
		for _, r := range p.Requests {
			if r.CookieMask == ^uint64(0) {
				exact = append(exact, r.Cookie)
			}
		}
		slices.Sort(exact)
		return exact
	}
	p := shardPoll()
	if got := asked(p); !slices.Equal(got, cookies) {
		t.Errorf("the shard's read of a connection set up since asks the cookies %#x, want %#x", got, cookies)
	}
	// Another connection of the shard, to the same member, set up after
	// the poll was planned.
	another := uint16(sport + 1)
	for model.ConnShard(client, another) != shard {
		another++
	}
	d.packetIn(testnet.ClientOF, testnet.SYN(t, another))
	d.dp.BeginPoll()
	d.dp.EndPoll(d.snap, &p)
	if got := asked(shardPoll()); !slices.Equal(got, cookies) {
		t.Errorf("after a read planned before its setup, the shard's read asks %#x, want %#x", got, cookies)
	}
	p = shardPoll()
	d.dp.BeginPoll()
	d.dp.EndPoll(d.snap, &p)
	if got := asked(shardPoll()); len(got) != 0 {
		t.Errorf("after a read planned after its setup found none of its flows, the shard's read asks %#x, want none", got)
	}

	for i := range maxCookieReads + 1 {
		d.dp.accounting.unread[model.ConnCookie(model.CatConn, shard, 1, uint32(100+i))] = d.dp.accounting.planned
	}
	p = shardPoll()
	if cookie, mask := model.ShardCookie(shard%4, 4); len(asked(p)) != 0 || !reflect.DeepEqual(p.Requests[len(p.Requests)-1], flowsOf(cookie, mask)) {
		t.Errorf("a shard of more than %d cookies is read by %d requests for %d cookies, want the rest's and one by its cookie mask", maxCookieReads, len(p.Requests), len(asked(p)))
	}
}

// A poll of flows the ledger knows allocates nothing, however many they
// are: the flows that show a connection's end, and what each flow counted
// since, are read in place.
func TestAccounting_PollAllocatesNothing(t *testing.T) {
	d := flowHeldTCP(t)
	var stats []ofp.FlowStats
	for i := range 100 {
		sport := uint16(40000 + i)
		d.packetIn(testnet.ClientOF, testnet.SYN(t, sport))
		fwd := flowStats(1+i%3, sport, 30)
		if i%10 == 0 {
			fwd.IdleTimeout = 10 // its FIN passed
		}
		rev := fwd
		rev.Cookie = model.MakeCookie(model.CatConnReply, 1, uint32(1+i%3))
		stats = append(stats, fwd, rev)
	}
	d.pollOnce(stats...)
	allocs := testing.AllocsPerRun(20, func() {
		for i := range stats {
			stats[i].PacketCount++
			stats[i].ByteCount += 100
		}
		d.pollOnce(stats...)
	})
	if allocs != 0 {
		t.Errorf("a poll of %d flows allocated %.0f times", len(stats), allocs)
	}
	if got := testnet.MemberByID(d.snap, "m1").Stats("").PacketsIn; got != 34*(5+21) {
		t.Errorf("member 1 counted %d packets in, want %d", got, 34*(5+21))
	}
}

// routeStats is what the member routes counted of the packets whose ways
// results are, as a poll reads them: a packet each time a route matched.
func routeStats(results ...oftable.Result) []ofp.FlowStats {
	var stats []ofp.FlowStats
	for _, r := range results {
		for _, f := range r.Path {
			if cat, _, _, _ := model.CookieParts(f.Cookie); cat != model.CatMemberRoute {
				continue
			}
			i := slices.IndexFunc(stats, func(st ofp.FlowStats) bool {
				return st.Cookie == f.Cookie && st.TableID == f.TableID && st.Priority == f.Priority && st.Match.String() == f.Match.String()
			})
			if i < 0 {
				stats = append(stats, ofp.FlowStats{Cookie: f.Cookie, TableID: f.TableID, Priority: f.Priority, Match: f.Match})
				i = len(stats) - 1
			}
			stats[i].PacketCount++
			stats[i].ByteCount += 60
		}
	}
	return stats
}

// A TCP connection to a VIP the controller dispatches, on a switch with
// the tracker, costs one packet-in and no flow-mod: the packet-out of its
// first packet commits it with its member, the tracker carries the rest
// both ways. It counts as active from its setup, by the controller until
// the poll that reads its member's routes, by the routes from then on,
// until its FIN.
func TestAccounting_TrackedConnection(t *testing.T) {
	d := controlledTCP(t, -1)
	c := conn{t, ipv4, false, 40000}
	if r := d.process(testnet.ClientOF, c.fromClient(true, false)); !slices.Equal(r.Ports, []uint32{ofp.PortController}) {
		t.Fatalf("the SYN went %v, want to the controller", r.Ports)
	}
	got := d.packetIn(testnet.ClientOF, c.fromClient(true, false))
	if n := countPrefix(got, "flow_mod"); n != 0 || len(got) != 1 ||
		got[0] != "packet_out in_port=10 actions=ct(commit,table=1,zone=93,exec(set_field:0xa000001->ct_label,set_field:0x1f90->ct_mark)) data=<in>" {
		t.Fatalf("the setup sent\n  %s\nwant the SYN committed with member 1, and no flow", strings.Join(got, "\n  "))
	}
	assertOutput(t, d.released, 1, testnet.ClientOF, c.toMember(1, true, false))
	setup := d.released
	assertOutput(t, d.process(1, c.fromMember(1, true, true)), testnet.ClientOF, c.replyFrom(1), c.toClient(1, true, true))
	d.assertKept(c, 1)

	m1, v1 := testnet.MemberByID(d.snap, "m1"), d.snap.VIPByID["v1"]
	active := func(when string, member, vip uint64) {
		t.Helper()
		if m, v := m1.Cnt.ActiveConns(), v1.ActiveConns(); m != member || v != vip {
			t.Errorf("%s: member active %d, VIP active %d; want %d and %d", when, m, v, member, vip)
		}
	}
	active("after the setup", 1, 1)
	d.dp.NextPoll()
	d.packetIn(testnet.ClientOF, conn{t, ipv4, false, 40001}.fromClient(true, false)) // after the poll was sent: not in it
	second := d.released
	d.pollOnce(routeStats(setup)...)
	if own, _ := d.activeCounts(1); own != 0 {
		t.Errorf("the controller still counts %d connections of member 1 that its routes count", own)
	}
	active("the routes read", 1, 2)
	if st := m1.Stats(""); st.TotalConnections != 1 {
		t.Errorf("member 1 total %d, want 1", st.TotalConnections)
	}
	fin := c.seg(testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: c.fam.client, Dst: c.fam.vip,
		Sport: c.sport, Dport: 80, FIN: true, ACK: true})
	d.dp.NextPoll()
	d.pollOnce(routeStats(setup, second, d.process(testnet.ClientOF, fin))...)
	active("after its FIN", 0, 1)

	// A third connection, set up since: the switch goes before a poll
	// read it, and it goes with it; the second stays counted by its routes.
	d.packetIn(testnet.ClientOF, conn{t, ipv4, false, 40002}.fromClient(true, false))
	active("a third set up", 0, 2)
	d.dp.Settle(d.snap)
	active("the switch gone", 0, 1)
}

// A tracked connection set up before an epoch's first poll counts by the
// controller until the overlap is settled: the routes' count of it waits
// there, and the member would meanwhile show none.
func TestAccounting_TrackedWaitsForOverlap(t *testing.T) {
	d := controlledTCP(t, -1)
	l := NewFlowLedger(true)
	d.dp.accounting.ledger = l
	l.Begin(1)
	d.packetIn(testnet.ClientOF, conn{t, ipv4, false, 40000}.fromClient(true, false))
	setup := d.released
	m1 := testnet.MemberByID(d.snap, "m1")
	d.dp.NextPoll()
	d.pollOnce(routeStats(setup)...)
	if n := m1.Cnt.ActiveConns(); n != 1 {
		t.Errorf("the overlap unsettled: member active %d, want 1", n)
	}
	gen, overlap, _, _, _ := l.Overlap()
	l.Settle(d.snap, gen, overlap)
	d.dp.NextPoll()
	d.pollOnce(routeStats(setup)...)
	if own, _ := d.activeCounts(1); own != 0 || m1.Cnt.ActiveConns() != 1 {
		t.Errorf("settled: the controller counts %d, member active %d; want 0 and 1", own, m1.Cnt.ActiveConns())
	}
}

// On one table (OpenFlow 1.0), a switch with Nicira matches (Open
// vSwitch) gets the punts 1.3 has: a SYN that reuses a connection's ports
// and its FIN come up, and the FIN ends the connection at once and gives
// its flows a closing connection's idle timeout. A plain 1.0 switch has no
// punts: both follow the flows, which keep their idle timeout.
func TestAccounting_OneTablePunts(t *testing.T) {
	fin := clientFIN(t, 40000)
	for _, nicira := range []bool{true, false} {
		d := newDecisionWith(t, testnet.Config(func(c *sdnlb.Config) {
			c.Pools[0].Dispatch = sdnlb.DispatchController
			c.VIPs[0].ConnectionLimit = 1
		}), Config{L2: model.L2Normal, OneTable: true, Nicira: nicira})
		for i := 1; i <= 3; i++ {
			d.learnMember(i)
		}
		d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
		want := "output:1 "
		if nicira {
			want = "CONTROLLER"
		}
		if got := d.forward(testnet.ClientOF, testnet.SYN(t, 40000)); !strings.HasPrefix(got, want) {
			t.Errorf("Nicira %v: a SYN on the ports of a connection with flows went %s, want %s", nicira, got, want)
		}
		if got := d.forward(testnet.ClientOF, fin); !strings.HasPrefix(got, want) {
			t.Errorf("Nicira %v: the FIN went %s, want %s", nicira, got, want)
		}
		if !nicira {
			continue
		}
		got := d.packetIn(testnet.ClientOF, fin)
		if connFlowMods(got, 0) != 2 || strings.Count(strings.Join(got, "\n"), "idle_timeout=10,") != 2 || countPrefix(got, "packet_out") != 1 {
			t.Errorf("the FIN got\n  %s\nwant the flows at a closing connection's idle timeout and the FIN sent on", strings.Join(got, "\n  "))
		}
		if _, v := d.activeCounts(1); v != 0 {
			t.Errorf("VIP active %d after the FIN, want 0", v)
		}
	}
}

// On one table the polls read by shard only where the switch selects by
// cookie (Nicira's flow stats); a plain 1.0 switch is read whole.
func TestAccounting_OneTablePollsByShard(t *testing.T) {
	client := netip.MustParseAddr(testnet.ClientIP)
	for _, nicira := range []bool{true, false} {
		d := newDecisionWith(t, testnet.Config(func(c *sdnlb.Config) { c.Pools[0].Dispatch = sdnlb.DispatchController }),
			Config{L2: model.L2Normal, OneTable: true, Nicira: nicira})
		d.dp.accounting.ledger.Begin(1)
		d.pollOnce() // the epoch's first poll, of every flow
		for port := range pollFlowBudget {
			d.dp.accounting.conns[model.ConnKey{ClientIP: client, ClientPort: uint16(port), Proto: ofp.IPProtoTCP, VIPNum: 1}] = countedConn{member: 1}
		}
		want := everyFlow
		if nicira { // a shard, and no rest: one table holds no member routes
			want = PollScope{of: 2, shard: 1}
		}
		if p := d.dp.NextPoll(); p.Scope != want {
			t.Errorf("Nicira %v: a poll of %d connections reads %+v, want %+v", nicira, pollFlowBudget, p.Scope, want)
		}
	}
}
