package controller

import (
	"context"
	"encoding/binary"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

func TestOpenFlow10_Handshake(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	h.groups = true // a 1.0 switch is never asked
	_, got := h.connect10(t, 1,
		ofp.Port{PortNo: 1, Name: "veth1", HWAddr: [6]byte{0xaa, 0, 0, 0, 0, 1}, State: ofp.PortStateLive},
		ofp.Port{PortNo: 2, Name: "veth2", HWAddr: [6]byte{0xaa, 0, 0, 0, 0, 2}, State: ofp.PortStateLinkDown})

	var types []string
	var mods []ofp.FlowMod
	var probes int
	for _, r := range got {
		if isLLDPOut(r) {
			continue // discovery's, on port 1, which the features reply said is up
		}
		if r.nicira {
			probes++ // the Nicira probe, which the switch refused: nothing else is Nicira's
			continue
		}
		types = append(types, r.h.Type.String())
		switch m := r.m.(type) {
		case *ofp.Hello:
			if !m.Supports(1) || !m.Supports(ofp.Version) {
				t.Errorf("hello offers %v, want 1.0 and 1.3", m.Versions)
			}
		case *ofp.MultipartRequest:
			fsr, ok := m.Body.(ofp.FlowStatsRequest)
			if !ok || fsr.CookieMask != 0 || fsr.TableID != ofp.TableAll {
				t.Errorf("request %+v, want a read of every flow (1.0 cannot select by cookie)", m.Body)
			}
			if r.h.Version != 1 {
				t.Errorf("request in version %d", r.h.Version)
			}
		case *ofp.FlowMod:
			mods = append(mods, *m)
		}
	}
	if probes != 1 {
		t.Errorf("%d Nicira messages, want the one probe", probes)
	}
	// No port-desc, group features or role request: 1.0 has none.
	wantTypes := "HELLO FEATURES_REQUEST SET_CONFIG MULTIPART_REQUEST" + strings.Repeat(" FLOW_MOD", 10) + " PACKET_OUT BARRIER_REQUEST"
	if s := strings.Join(types, " "); s != wantTypes {
		t.Errorf("handshake sent\n  %s\nwant\n  %s", s, wantTypes)
	}
	// One table: the L2 miss is table 0's lowest row, and the controller
	// answers ARP for the VIP (no Nicira moves to build the answer with).
	testnet.AssertLines(t, testnet.FlowLines(t, mods), []string{
		"cookie=0x5d01000000000000, priority=0 actions=CONTROLLER:65535",
		"cookie=0x5d08000000000000, priority=2000, dl_dst=01:80:c2:00:00:0e,dl_type=0x88cc actions=CONTROLLER:65535",
		"cookie=0x5d07000001000000, priority=511, arp,arp_spa=10.0.0.100,arp_tpa=10.0.0.100,arp_op=1 actions=drop",
		"cookie=0x5d02000001000000, priority=500, arp,arp_tpa=10.0.0.100 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=500, arp,dl_dst=02:00:00:00:01:00 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=501, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
		"cookie=0x5d04000001000001, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=CONTROLLER:65535",
		"cookie=0x5d04000001000002, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
		"cookie=0x5d04000001000003, priority=900, tcp,nw_src=10.0.0.3,tp_src=8080 actions=CONTROLLER:65535",
	})

	// The ports come from the features reply.
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 1 })
	sws, _ := h.c.Switches(context.Background())
	s := sws[0]
	if s.OpenFlow != "1.0" || s.SelectGroups || len(s.Ports) != 2 || !s.Ports[0].Up || s.Ports[1].Up {
		t.Errorf("switch = %+v, want OpenFlow 1.0 without select groups, port 1 up and 2 down", s)
	}
	if !strings.Contains(h.log.String(), "openflow=1.0") {
		t.Errorf("no log line names the version in\n%s", h.log.String())
	}
}

func TestOpenFlow10_VersionRefused(t *testing.T) {
	tests := []struct {
		name  string
		hello []byte
		named string
	}{
		// Versions 1.4 and 1.5 in a bitmap, header 1.5.
		{"BitmapWithoutCommonVersion", []byte{6, 0, 0, 16, 0, 0, 0, 9, 0, 1, 0, 8, 0, 0, 0, 0x60}, "the switch offered 1.4 and 1.5"},
		// A bare 1.1 hello: 1.1 is the highest version it speaks.
		{"Bare11", []byte{2, 0, 0, 8, 0, 0, 0, 9}, "the switch offered 1.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startController(t, testnet.Config(nil), Options{})
			sw := h.dial(t)
			sw.sendRaw(tt.hello)
			sw.nextOf(ofp.TypeHello)
			r := sw.nextOf(ofp.TypeError)
			e := r.m.(*ofp.ErrorMsg)
			if e.ErrType != ofp.ErrTypeHelloFailed || e.Code != ofp.HelloFailedIncompatible {
				t.Errorf("error %s/%d, want HELLO_FAILED/INCOMPATIBLE", e.ErrType, e.Code)
			}
			if msg := string(e.Data); !strings.Contains(msg, "sdnlb speaks OpenFlow 1.0 and 1.3") || !strings.Contains(msg, tt.named) {
				t.Errorf("error says %q, want the versions of both sides", msg)
			}
			sw.waitClosed()
			if log := h.log.String(); !strings.Contains(log, "remote=pipe") || !strings.Contains(log, tt.named) {
				t.Errorf("no line naming the switch and its versions in\n%s", log)
			}
		})
	}
}

func TestOpenFlow10_AnswersARP(t *testing.T) {
	_, sw := connected10(t, testnet.Config(nil), Options{})
	sw.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00"))
	for {
		po, ok := sw.nextOf(ofp.TypePacketOut).m.(*ofp.PacketOut)
		if !ok {
			continue
		}
		arp := testnet.LayerOf[*layers.ARP](t, testnet.ParseFrame(t, po.Data))
		if arp.Operation != layers.ARPReply {
			continue
		}
		if got := model.MACString([6]byte(arp.SourceHwAddress)); got != testnet.VIPMAC || testnet.PacketOutLine(po) != "in_port=10 actions=IN_PORT" {
			t.Errorf("ARP answer from %s, %s; want the VIP's MAC, back out of the asker's port", got, testnet.PacketOutLine(po))
		}
		return
	}
}

// A member going DOWN deletes its connections' flows by cookie, which 1.0
// cannot: the controller reads the flows and deletes the member's one by
// one, sparing a flow added again since it asked.
func TestOpenFlow10_DeletesByCookie(t *testing.T) {
	h, sw := connected10(t, testnet.Config(nil), Options{}, 1, 2, 3)
	var setups []setup
	for i := range 5 { // members 1, 2, 3, 1, 2
		sw.packetIn(testnet.ClientOF, testnet.SYN(t, uint16(40000+i)))
		setups = append(setups, nextSetup(t, sw))
	}
	h.src.set(testnet.Config(func(c *sdnlb.Config) { c.Members[1].Health.Status = sdnlb.MemberDown }))

	barrier := sw.nextOf(ofp.TypeBarrierRequest)
	req := sw.nextOf(ofp.TypeMultipartRequest)
	fsr := req.m.(*ofp.MultipartRequest).Body.(ofp.FlowStatsRequest)
	if fsr.CookieMask != 0 || fsr.TableID != ofp.TableAll || req.h.XID == barrier.h.XID {
		t.Fatalf("delete by cookie became %+v, want a read of every flow after a barrier", fsr)
	}
	sw.send(barrier.h.XID, ofp.BarrierReply{})
	// While the read is under way, setup 1's client port is set up
	// again, to a member that is up: its client → VIP flow is added again.
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40001))
	again := nextSetup(t, sw)
	if m := memberOf(t, &again.fwd); m == "10.0.0.2" {
		t.Fatalf("a setup went to the DOWN member")
	}
	stats := func(fms ...ofp.FlowMod) []ofp.FlowStats {
		var out []ofp.FlowStats
		for _, fm := range fms {
			out = append(out, ofp.FlowStats{Cookie: fm.Cookie, Priority: fm.Priority, Match: fm.Match, Instructions: fm.Instructions})
		}
		return out
	}
	base := ofp.FlowStats{Cookie: model.MakeCookie(model.CatBase, 0, 0)}
	sw.send(req.h.XID, ofp.MultipartReply{Flags: ofp.MultipartReplyMore, Body: ofp.FlowStatsReply{
		Stats: append(stats(setups[0].fwd, setups[0].rev, setups[1].fwd, setups[1].rev), base)}})
	sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{
		Stats: stats(setups[2].fwd, setups[3].rev, setups[4].fwd, setups[4].rev)}})

	var deleted []string
	for {
		r, quiet := sw.quiet(100 * time.Millisecond)
		if quiet {
			break
		}
		if fm, ok := r.m.(*ofp.FlowMod); ok {
			if fm.Command != ofp.FlowDeleteStrict {
				t.Errorf("unexpected %s", testnet.FlowLine(t, fm))
			}
			deleted = append(deleted, testnet.FlowLine(t, fm))
		}
	}
	// Member 2's flows (setups 1 and 4) but setup 1's client → VIP flow,
	// which was added again after the read was asked for.
	var want []string
	for _, fm := range []ofp.FlowMod{setups[1].rev, setups[4].fwd, setups[4].rev} {
		del := model.StrictDelete(&ofp.FlowStats{Priority: fm.Priority, Match: fm.Match})
		want = append(want, testnet.FlowLine(t, &del))
	}
	sort.Strings(deleted)
	testnet.AssertLines(t, deleted, want)
}

// A poll reads every flow of a 1.0 switch, in parts; what is not
// sdnlb's counts for nothing.
func TestOpenFlow10_PollReadsOnlySdnlbFlows(t *testing.T) {
	h, sw := connected10(t, testnet.Config(nil), Options{}, 1)
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	s := nextSetup(t, sw)
	h.c.switchConns()[0].pollStats()
	req := sw.nextOf(ofp.TypeMultipartRequest)
	if fsr := req.m.(*ofp.MultipartRequest).Body.(ofp.FlowStatsRequest); fsr.CookieMask != 0 {
		t.Fatalf("poll asks for cookie %#x/%#x on 1.0", fsr.Cookie, fsr.CookieMask)
	}
	foreign := ofp.FlowStats{Cookie: 0x5d10000001000001 &^ (0xffff << 48), PacketCount: 1000, ByteCount: 100000, Match: s.fwd.Match}
	sw.send(req.h.XID, ofp.MultipartReply{Flags: ofp.MultipartReplyMore, Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
		foreign,
		{Cookie: s.fwd.Cookie, PacketCount: 3, ByteCount: 300, Match: s.fwd.Match},
	}}})
	sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
		{Cookie: s.rev.Cookie, PacketCount: 2, ByteCount: 200, Match: s.rev.Match},
		foreign,
	}}})
	st := waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.BytesOut == 200 })
	if st.BytesIn != 300 || st.PacketsIn != 3 {
		t.Errorf("after the poll: in %d bytes %d packets, want 300 and 3 (another application's flow is not sdnlb's)", st.BytesIn, st.PacketsIn)
	}
	if n := h.c.switchConns()[0].wire.(*wire10).pending.Load(); n != 0 {
		t.Errorf("%d requests selecting by cookie still wait after the poll's last part", n)
	}

	// The flow ends; its 1.0 flow-removed adds what it counted since.
	sw.send(0, ofp.FlowRemoved{Cookie: s.fwd.Cookie, Reason: ofp.RemovedIdleTimeout, PacketCount: 4, ByteCount: 400, Match: s.fwd.Match})
	waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.BytesIn == 400 && st.ActiveConnections == 0 })
}

// A 1.0 switch that reconnects holding sdnlb's flows keeps them: the
// controller reads them from 1.0 flow stats and sends only what differs.
func TestOpenFlow10_AdoptsFlows(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	_, got := h.connect10(t, 1)
	var held []ofp.FlowStats
	for _, r := range got {
		if fm, ok := r.m.(*ofp.FlowMod); ok {
			held = append(held, ofp.FlowStats{Cookie: fm.Cookie, Priority: fm.Priority, IdleTimeout: fm.IdleTimeout,
				Match: fm.Match, Instructions: fm.Instructions})
		}
	}
	h2 := startController(t, testnet.Config(nil), Options{})
	sw := h2.dial(t)
	sw.v10 = true
	sw.sendRaw([]byte{1, 0, 0, 8, 0, 0, 0, 0})
	var mods []string
	for {
		r := sw.next()
		switch m := r.m.(type) {
		case *ofp.FeaturesRequest:
			sw.send(r.h.XID, ofp10.FeaturesReply{FeaturesReply: ofp.FeaturesReply{DatapathID: 1, NTables: 1}})
		case *ofp.MultipartRequest:
			if !sw.refusesNicira(r) {
				sw.send(r.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: held}})
			}
		case *ofp.FlowMod:
			mods = append(mods, testnet.FlowLine(t, m))
		}
		if r.h.Type == ofp.TypeBarrierRequest {
			break
		}
	}
	if len(mods) != 0 {
		t.Errorf("reconnecting with every flow, the switch got\n  %s", strings.Join(mods, "\n  "))
	}
}

func TestOpenFlow10_MalformedClosesOnlyThatSwitch(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	good, _ := h.connect(t, 1)
	bad, _ := h.connect10(t, 2)
	// A 1.0 packet-in cut short: 6 bytes of its 10-byte head.
	bad.sendRaw([]byte{1, 10, 0, 14, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 64})
	bad.waitClosed()
	good.send(5, ofp.EchoRequest{})
	if r := good.nextOf(ofp.TypeEchoReply); r.h.XID != 5 {
		t.Errorf("the other switch's echo got xid %d", r.h.XID)
	}
	if log := h.log.String(); strings.Count(log, `msg="malformed OpenFlow`) != 1 {
		t.Errorf("want one line for the malformed message in\n%s", log)
	}
}

// A SWITCH pool falls back to the controller on a 1.0 switch, which has
// no select groups, and its stats say on which switches.
func TestOpenFlow10_SwitchPoolFallsBack(t *testing.T) {
	cfg := testnet.Config(func(c *sdnlb.Config) { c.Pools[0].Dispatch = sdnlb.DispatchSwitch })
	h := startController(t, cfg, Options{})
	h.groups = true
	h.connect(t, 1)
	sw, _ := h.connect10(t, 2)
	teachMember(t, sw, 1)
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	if s := nextSetup(t, sw); memberOf(t, &s.fwd) != "10.0.0.1" {
		t.Errorf("setup on the 1.0 switch went to %s", memberOf(t, &s.fwd))
	}
	st := waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.TotalConnections == 1 })
	if want := []string{"00:00:00:00:00:00:00:02"}; !slices.Equal(st.ControllerDispatchedOn, want) {
		t.Errorf("controller_dispatched_on = %v, want %v", st.ControllerDispatchedOn, want)
	}

	h.src.set(testnet.Config(nil)) // CONTROLLER: nothing falls back
	waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return len(st.ControllerDispatchedOn) == 0 })
}

// Links to and from a 1.0 switch are found: its LLDP packet-ins carry no
// cookie, the frame says what they are.
func TestOpenFlow10_DiscoversLinks(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	sw13, _ := h.connect(t, 1)
	sw10, _ := h.connect10(t, 2, ofp.Port{PortNo: 4, Name: "s2-eth4", State: ofp.PortStateLive})
	sw13.send(0, ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: 3, Name: "s1-eth3", State: ofp.PortStateLive}})
	sw10.lldpIn(4, sw13.lldpOut(3))
	sw13.lldpIn(3, sw10.lldpOut(4))
	waitTopology(t, h.c, func(top *sdnlb.Topology) bool {
		return len(top.Links) == 2 && top.Links[0].Bidirectional && top.Links[1].Bidirectional
	})
}

// A switch moved from OpenFlow 1.3 to 1.0 still holds the 1.3 pipeline,
// whose Nicira actions 1.0 cannot read: the controller reads what it can,
// deletes every flow (1.0 shows the unreadable ones' matches only in
// part, so they cannot be deleted one by one), installs what a switch
// holding nothing gets, says so once, and the session stays up.
func TestOpenFlow10_DeletesUnreadableFlows(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	sw := h.dial(t)
	sw.v10 = true
	sw.sendRaw([]byte{1, 0, 0, 8, 0, 0, 0, 0})
	lldp := model.BaseFlows(model.L2Learn, true)[0]
	held := ofp.FlowStats{Cookie: lldp.Cookie, Priority: lldp.Priority, Match: lldp.Match, Instructions: lldp.Instructions}
	// The 1.3 pipeline's classify miss as a 1.0 switch shows it:
	// priority=0 actions=resubmit(,9).
	resubmit := ofp.FlowStats{Cookie: model.MakeCookie(model.CatBase, 0, 0)}
	var mods []ofp.FlowMod
	for done := false; !done; {
		r := sw.next()
		switch m := r.m.(type) {
		case *ofp.FeaturesRequest:
			sw.send(r.h.XID, ofp10.FeaturesReply{FeaturesReply: ofp.FeaturesReply{DatapathID: 1, NTables: 1}})
		case *ofp.MultipartRequest:
			if !sw.refusesNicira(r) {
				sw.sendRaw(flowStatsWithResubmit(t, r.h.XID, held, resubmit))
			}
		case *ofp.FlowMod:
			mods = append(mods, *m)
		case *ofp.ErrorMsg:
			t.Errorf("the controller answered the flow stats with an error %s/%d", m.ErrType, m.Code)
		case *ofp.BarrierRequest:
			sw.send(r.h.XID, ofp.BarrierReply{})
			done = true
		}
	}
	if len(mods) == 0 || mods[0].Command != ofp.FlowDelete || len(mods[0].Match.OXMs) != 0 {
		t.Fatalf("the switch got\n  %s\nwant a delete of every flow first", strings.Join(testnet.FlowLines(t, mods), "\n  "))
	}
	_, fresh := h.connect10(t, 2)
	var want []ofp.FlowMod
	for _, r := range fresh {
		if fm, ok := r.m.(*ofp.FlowMod); ok {
			want = append(want, *fm)
		}
	}
	testnet.AssertLines(t, testnet.FlowLines(t, mods[1:]), testnet.FlowLines(t, want))

	// The poll meets the flow again, which no longer matters.
	h.c.switchConn(1).pollStats()
	req := sw.nextOf(ofp.TypeMultipartRequest)
	sw.sendRaw(flowStatsWithResubmit(t, req.h.XID, held, resubmit))
	sw.send(7, ofp.EchoRequest{})
	for r := sw.next(); r.h.Type != ofp.TypeEchoReply; r = sw.next() {
		if r.h.Type == ofp.TypeError {
			t.Errorf("the controller answered the poll's reply with an error")
		}
	}
	if n := strings.Count(h.log.String(), "deleting every flow"); n != 1 {
		t.Errorf("%d lines about the unreadable flow, want 1:\n%s", n, h.log.String())
	}
}

// flowStatsWithResubmit is a 1.0 flow stats reply of xid with the flows
// readable and unreadable, the latter with a Nicira resubmit(,9) action
// appended, as Open vSwitch shows a goto_table to a 1.0 controller.
func flowStatsWithResubmit(tb testing.TB, xid uint32, readable, unreadable ofp.FlowStats) []byte {
	tb.Helper()
	b, err := ofp10.Append(nil, xid, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{unreadable, readable}}})
	if err != nil {
		tb.Fatal(err)
	}
	const entryAt = ofp.HeaderLen + 4 // after the stats type and flags
	entryLen := binary.BigEndian.Uint16(b[entryAt:])
	resubmit := []byte{0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 14, 0xff, 0xf8, 9, 0, 0, 0} // NXAST_RESUBMIT_TABLE
	b = slices.Insert(b, entryAt+int(entryLen), resubmit...)
	binary.BigEndian.PutUint16(b[entryAt:], entryLen+uint16(len(resubmit)))
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	return b
}
