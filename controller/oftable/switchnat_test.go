package oftable_test

import (
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// The tables, zones, registers and priorities of the controller's
// in-switch dispatch (controller/flows.go, controller/dispatch.go), copied
// here so that the test builds what the controller sends by hand.
const (
	tClassify, tTracked, tToMember, tFromMember, tL2 = 0, 1, 2, 3, 9

	zoneVIP, zoneMember = 0x5d, 0x5e
	dsrMemberReg        = 0
	clientPortReg       = 1
	groupReg            = 2

	natGroup = 1
)

// A SWITCH VIP on TCP port 80 of vip, its members at port 8080 of
// members[i], on switch ports memberPorts[i].
var (
	members     = [][4]byte{{10, 0, 0, 1}, {10, 0, 0, 2}}
	memberMACs  = [][6]byte{{0xaa, 0, 0, 0, 0, 1}, {0xaa, 0, 0, 0, 0, 2}}
	memberPorts = []uint32{1, 2}
)

const memberServicePort = 8080

// label is a tracker label holding an IPv4 address in its low 32 bits,
// as the controller's addressLabel builds it.
func label(ip [4]byte) [16]byte {
	var l [16]byte
	copy(l[12:], ip[:])
	return l
}

// serviceMark names the VIP's service in the member zone: protocol and
// port.
const serviceMark = 6<<16 | 80

func service() []ofp.OXM { return tcpTo(vip, 80) }

// switchNATFlows are what the controller installs on a switch with select
// groups for the VIP, with its group's buckets sending new connections to
// the members in turn, and an L2 table that knows the hosts' MACs.
func switchNATFlows(buckets int) (flows []*ofp.FlowMod, group *ofp.GroupMod) {
	const cookie = 0x5
	row := func(table uint8, prio uint16, match []ofp.OXM, next uint8, actions ...ofp.Action) *ofp.FlowMod {
		fm := inTable(add(cookie, prio, match, actions...), table)
		if next != 0 {
			goTo(fm, next)
		}
		return fm
	}
	with := func(pre []ofp.OXM, more ...ofp.OXM) []ofp.OXM { return append(slices.Clone(pre), more...) }
	// baseFlows (L2 by the controller's MAC rows)
	flows = append(flows,
		row(tClassify, 0, nil, tL2), row(tTracked, 0, nil, tL2), row(tToMember, 0, nil, tL2),
		row(tFromMember, 0, nil, 0), row(tL2, 0, nil, 0, toController),
		row(tL2, 100, oxms(ofp.MatchEthDst(clientMAC)), 0, out(clientPort)))
	for i := range members {
		flows = append(flows, row(tL2, 100, oxms(ofp.MatchEthDst(memberMACs[i])), 0, out(memberPorts[i])))
	}
	// memberReplyFlows, per member: into the member zone, on to tableFromMember
	for _, m := range members {
		reply := oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchIPv4Src(m), ofp.MatchTCPSrc(memberServicePort))
		flows = append(flows,
			row(tFromMember, 50, with(reply, ofp.MatchCTLabel([16]byte{})), tL2),
			row(tClassify, 898, tcpTo(m, memberServicePort), tL2,
				ct(ofp.CTCommit, zoneMember, ofp.CTRecircNone, set(ofp.MatchCTLabel([16]byte{})))),
			row(tClassify, 900, reply, 0, ct(0, zoneMember, tFromMember)))
	}
	// routeFlows, per member: its MAC, for the VIP's group; its replies back from the VIP
	for i, m := range members {
		route := oxms(ofp.MatchEthType(0x0800), ofp.MatchIPv4Dst(m), ofp.MatchReg(groupReg, natGroup, 0xffffffff))
		tcpRoute := oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchIPv4Dst(m), ofp.MatchReg(groupReg, natGroup, 0xffffffff))
		toMAC := set(ofp.MatchEthDst(memberMACs[i]))
		own := oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchCTLabel(label(vip)),
			ofp.MatchCTMark(serviceMark, 0xffffffff), ofp.MatchIPv4Src(m))
		fromVIP := []ofp.Action{set(ofp.MatchEthSrc(vipMAC)), set(ofp.MatchIPv4Src(vip)),
			ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: ofp.NXMTCPSrc}, ct(0, zoneVIP, ofp.CTRecircNone)}
		flows = append(flows,
			row(tToMember, 110, with(oxms(state(ofp.CTStateTrk|ofp.CTStateNew, 0)), route...), tL2, toMAC),
			row(tToMember, 106, with(tcpRoute, ofp.MatchTCPFlags(ofp.TCPFlagFIN, ofp.TCPFlagFIN)), tL2, toMAC),
			row(tToMember, 105, with(tcpRoute, ofp.MatchTCPFlags(ofp.TCPFlagRST, ofp.TCPFlagRST|ofp.TCPFlagFIN)), tL2, toMAC),
			row(tFromMember, 211, own, tL2, fromVIP...),
			row(tFromMember, 221, with(own, ofp.MatchTCPFlags(ofp.TCPFlagRST, ofp.TCPFlagRST)), tL2, fromVIP...),
			row(tToMember, 100, route, tL2, toMAC))
	}
	// trackedFlows and natTranslations: the rows behind the tracker, then
	// the service into it
	translate := []ofp.Action{set(ofp.MatchReg(groupReg, natGroup, 0xffffffff)),
		ofp.ActionRegMove{NBits: 32, Src: ofp.NXMCTLabel, Dst: ofp.NXMIPDst},
		ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: ofp.NXMTCPDst}}
	commit := append(slices.Clone(translate), ct(ofp.CTCommit, zoneMember, tToMember,
		set(ofp.MatchCTLabel(label(vip))), set(ofp.MatchCTMark(serviceMark, 0xffffffff))))
	toMember := append(slices.Clone(translate), ct(0, zoneMember, ofp.CTRecircNone))
	flows = append(flows,
		row(tTracked, 251, with(oxms(ofp.MatchCTLabel([16]byte{})), service()...), 0),
		row(tTracked, 211, with(oxms(state(ofp.CTStateTrk, ofp.CTStateNew)), with(service(),
			ofp.MatchTCPFlags(ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK))...), 0, commit...),
		row(tTracked, 201, with(oxms(state(ofp.CTStateTrk|ofp.CTStateNew, 0)), service()...), 0, commit...),
		row(tTracked, 201, with(oxms(state(ofp.CTStateTrk, ofp.CTStateNew)), service()...), tToMember, toMember...),
		row(tFromMember, 201, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchCTLabel(label(vip)),
			ofp.MatchCTMark(serviceMark, 0xffffffff)), tL2,
			set(ofp.MatchEthSrc(vipMAC)), set(ofp.MatchIPv4Src(vip)),
			ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: ofp.NXMTCPSrc}, ct(0, zoneVIP, ofp.CTRecircNone)),
		row(tClassify, 501, service(), 0, ct(0, zoneVIP, tTracked)),
		row(tClassify, 499, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPv4Dst(vip)), 0))
	// the group, then dispatchFlow, which sends new connections to it
	group = natGroupMod(ofp.GroupAdd, buckets, members)
	flows = append(flows, row(tTracked, 301, with(oxms(state(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateInv),
		ofp.MatchCTLabel([16]byte{})), service()...), 0, ofp.ActionGroup{GroupID: natGroup}))
	return flows, group
}

// natGroupMod is the VIP's select group: n equal buckets, bucket i for
// member to[i%len(to)], as groupMod builds them (bucketActions).
func natGroupMod(cmd ofp.GroupModCommand, n int, to [][4]byte) *ofp.GroupMod {
	gm := &ofp.GroupMod{Command: cmd, GroupType: ofp.GroupTypeSelect, GroupID: natGroup}
	for i := range n {
		gm.Buckets = append(gm.Buckets, ofp.Bucket{Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny,
			Actions: []ofp.Action{ct(ofp.CTCommit, zoneVIP, tTracked,
				set(ofp.MatchCTLabel(label(to[i%len(to)]))), set(ofp.MatchCTMark(memberServicePort, 0xffffffff)))}})
	}
	return gm
}

// mustSwitchNAT is a switch with switchNATFlows installed, the group
// before the flow that sends to it, as the controller sends them.
func mustSwitchNAT(tb testing.TB, buckets int) *oftable.Table {
	tb.Helper()
	tbl := oftable.New()
	flows, group := switchNATFlows(buckets)
	mustApply(tb, tbl, flows[:len(flows)-1]...)
	if _, err := tbl.ApplyGroup(group); err != nil {
		tb.Fatalf("apply %v: %v", group, err)
	}
	mustApply(tb, tbl, flows[len(flows)-1])
	return tbl
}

// memberOf returns the index of the member a packet the switch sent out
// was addressed to, checking it is addressed as the member expects.
func memberOf(tb testing.TB, r oftable.Result) int {
	tb.Helper()
	if r.Err != nil || len(r.Outputs) != 1 {
		tb.Fatalf("outputs %v (%v), want one", r.Outputs, r.Err)
	}
	o := r.Outputs[0]
	for i := range members {
		if o.Port == memberPorts[i] {
			if o.Packet.IPv4Dst != members[i] || o.Packet.L4Dst != memberServicePort || o.Packet.EthDst != memberMACs[i] {
				tb.Fatalf("sent to member %d's port as %v, not addressed to it", i, o.Packet)
			}
			return i
		}
	}
	tb.Fatalf("sent to port %d, no member's", o.Port)
	return -1
}

// A client's connection through the switch's own dispatch: its SYN goes
// through the VIP zone, the group, the member zone and the member's
// route, the member's reply comes back from the VIP, and the rest of the
// connection keeps the member without the group.
func TestSwitchNAT_Connection(t *testing.T) {
	tbl := mustSwitchNAT(t, 4)
	const sport = 40000
	syn := segment(clientPort, clientMAC, vipMAC, client, sport, vip, 80, ofp.TCPFlagSYN)

	r := tbl.Process(syn)
	m := memberOf(t, r)
	bucket, ok := tbl.Select(natGroup, syn)
	if !ok || len(r.Selected) != 1 || r.Selected[0] != (oftable.Selection{GroupID: natGroup, Bucket: bucket}) {
		t.Fatalf("selected %v, want bucket %d of group %d (Select: %t)", r.Selected, bucket, natGroup, ok)
	}
	if m != bucket%len(members) {
		t.Errorf("bucket %d sent the SYN to member %d, want %d", bucket, m, bucket%len(members))
	}
	want := syn
	want.EthDst, want.IPv4Dst, want.L4Dst = memberMACs[m], members[m], memberServicePort
	if got := r.Outputs[0].Packet; got != want {
		t.Errorf("SYN to the member:\n got  %s\n want %s", full(got), full(want))
	}
	if r.Out.Regs[groupReg] != natGroup || r.Out.CTZone != zoneMember || r.Out.CTMark != serviceMark {
		t.Errorf("SYN as the last pass left it: %s; want the group in reg%d, the member zone's mark", full(r.Out), groupReg)
	}
	assertPath(t, r, []pathStep{{tClassify, 501}, {tTracked, 301}, {tTracked, 201}, {tToMember, 110}, {tL2, 100}})

	synAck := segment(memberPorts[m], memberMACs[m], clientMAC, members[m], memberServicePort, client, sport, ofp.TCPFlagSYN|ofp.TCPFlagACK)
	r = tbl.Process(synAck)
	back := synAck
	back.EthSrc, back.IPv4Src, back.L4Src = vipMAC, vip, 80
	if len(r.Outputs) != 1 || r.Outputs[0] != (oftable.Output{Port: clientPort, Packet: back}) || r.Err != nil {
		t.Fatalf("the member's SYN-ACK: %+v, want to port %d as %v", r.Outputs, clientPort, back)
	}
	assertPath(t, r, []pathStep{{tClassify, 900}, {tFromMember, 211}, {tL2, 100}})

	ack := segment(clientPort, clientMAC, vipMAC, client, sport, vip, 80, ofp.TCPFlagACK)
	r = tbl.Process(ack)
	if got := memberOf(t, r); got != m || len(r.Selected) != 0 {
		t.Errorf("the client's ACK went to member %d (selected %v), want %d without the group", got, r.Selected, m)
	}
	assertPath(t, r, []pathStep{{tClassify, 501}, {tTracked, 201}, {tToMember, 100}, {tL2, 100}})

	fin := segment(clientPort, clientMAC, vipMAC, client, sport, vip, 80, ofp.TCPFlagFIN|ofp.TCPFlagACK)
	r = tbl.Process(fin)
	if got := memberOf(t, r); got != m {
		t.Errorf("the client's FIN went to member %d, want %d", got, m)
	}
	assertPath(t, r, []pathStep{{tClassify, 501}, {tTracked, 201}, {tToMember, 106}, {tL2, 100}})

	wantConns := []oftable.Conn{
		{Zone: zoneVIP, Orig: tuple(client, sport, vip, 80), Mark: memberServicePort, Label: label(members[m]), Replied: true},
		{Zone: zoneMember, Orig: tuple(client, sport, members[m], memberServicePort), Mark: serviceMark, Label: label(vip), Replied: true},
	}
	if got := tbl.Tracker().Conns(); !slices.Equal(got, wantConns) {
		t.Errorf("tracker:\n got  %+v\n want %+v", got, wantConns)
	}
}

// Before the member answers, the client's next packets are still new to
// the tracker: they commit the member zone again and reach the same
// member.
func TestSwitchNAT_RetransmittedSYN(t *testing.T) {
	tbl := mustSwitchNAT(t, 4)
	syn := segment(clientPort, clientMAC, vipMAC, client, 40000, vip, 80, ofp.TCPFlagSYN)
	first := memberOf(t, tbl.Process(syn))
	r := tbl.Process(syn)
	if got := memberOf(t, r); got != first || len(r.Selected) != 0 {
		t.Errorf("the retransmitted SYN went to member %d (selected %v), want %d without the group", got, r.Selected, first)
	}
	assertPath(t, r, []pathStep{{tClassify, 501}, {tTracked, 201}, {tToMember, 110}, {tL2, 100}})
}

// A client reusing the ports of a connection the tracker still holds:
// its SYN commits the member zone again, and reaches the member the
// connection had.
func TestSwitchNAT_ReusedPorts(t *testing.T) {
	tbl := mustSwitchNAT(t, 4)
	syn := segment(clientPort, clientMAC, vipMAC, client, 40000, vip, 80, ofp.TCPFlagSYN)
	m := memberOf(t, tbl.Process(syn))
	tbl.Process(segment(memberPorts[m], memberMACs[m], clientMAC, members[m], memberServicePort, client, 40000, ofp.TCPFlagSYN|ofp.TCPFlagACK))
	r := tbl.Process(syn)
	if got := memberOf(t, r); got != m {
		t.Errorf("the SYN on the held connection went to member %d, want %d", got, m)
	}
	assertPath(t, r, []pathStep{{tClassify, 501}, {tTracked, 211}, {tToMember, 100}, {tL2, 100}})
}

// An established connection keeps its member when the buckets change
// (the tracker holds it); new connections follow the new buckets.
func TestSwitchNAT_BucketsChange(t *testing.T) {
	tbl := mustSwitchNAT(t, 4)
	var ports []uint16
	at := map[uint16]int{}
	for sport := uint16(40000); len(ports) < 2 || len(at) < 2; sport++ {
		ports = append(ports, sport)
		m := memberOf(t, tbl.Process(segment(clientPort, clientMAC, vipMAC, client, sport, vip, 80, ofp.TCPFlagSYN)))
		if _, ok := at[sport]; !ok {
			at[sport] = m
		}
		if sport > 40100 {
			t.Fatal("100 connections all went to one member")
		}
	}
	// Every bucket to member 1 now, as when member 0 drains.
	if _, err := tbl.ApplyGroup(natGroupMod(ofp.GroupModify, 4, [][4]byte{members[1]})); err != nil {
		t.Fatal(err)
	}
	for _, sport := range ports {
		ack := segment(clientPort, clientMAC, vipMAC, client, sport, vip, 80, ofp.TCPFlagACK)
		if got := memberOf(t, tbl.Process(ack)); got != at[sport] {
			t.Errorf("connection from port %d moved from member %d to %d", sport, at[sport], got)
		}
	}
	for sport := uint16(50000); sport < 50020; sport++ {
		if got := memberOf(t, tbl.Process(segment(clientPort, clientMAC, vipMAC, client, sport, vip, 80, ofp.TCPFlagSYN))); got != 1 {
			t.Errorf("new connection from port %d went to member %d, want 1", sport, got)
		}
	}
}

// Two switches with the same flows and group send a client's connection
// to the same member, whatever port it arrives by.
func TestSwitchNAT_TwoEdgesAgree(t *testing.T) {
	a, b := mustSwitchNAT(t, 16), mustSwitchNAT(t, 16)
	for sport := uint16(40000); sport < 40050; sport++ {
		syn := segment(clientPort, clientMAC, vipMAC, client, sport, vip, 80, ofp.TCPFlagSYN)
		other := syn
		other.InPort, other.EthSrc = 77, [6]byte{0x02, 9, 9, 9, 9, 9}
		if ma, mb := memberOf(t, a.Process(syn)), memberOf(t, b.Process(other)); ma != mb {
			t.Errorf("client port %d: member %d on one switch, %d on the other", sport, ma, mb)
		}
	}
}

// ProcessAll shows every member a new connection may get, and leaves the
// tracker as it was.
func TestSwitchNAT_ProcessAll(t *testing.T) {
	tbl := mustSwitchNAT(t, 4)
	syn := segment(clientPort, clientMAC, vipMAC, client, 40000, vip, 80, ofp.TCPFlagSYN)
	results := tbl.ProcessAll(syn)
	if len(results) != 4 {
		t.Fatalf("%d results, want one per bucket", len(results))
	}
	for i, r := range results {
		if got := memberOf(t, r); got != i%len(members) || !slices.Equal(r.Selected, []oftable.Selection{{GroupID: natGroup, Bucket: i}}) {
			t.Errorf("result %d: member %d, selected %v", i, got, r.Selected)
		}
	}
	if conns := tbl.Tracker().Conns(); len(conns) != 0 {
		t.Errorf("ProcessAll left connections %+v", conns)
	}
}

// The member's reply to a client that reached it directly, not through
// the VIP, is of no VIP connection and goes on untranslated.
func TestSwitchNAT_DirectClient(t *testing.T) {
	tbl := mustSwitchNAT(t, 4)
	direct := segment(clientPort, clientMAC, memberMACs[0], client, 41000, members[0], memberServicePort, ofp.TCPFlagSYN)
	r := tbl.Process(direct)
	if len(r.Outputs) != 1 || r.Outputs[0] != (oftable.Output{Port: memberPorts[0], Packet: direct}) {
		t.Fatalf("direct SYN: %+v", r.Outputs)
	}
	reply := segment(memberPorts[0], memberMACs[0], clientMAC, members[0], memberServicePort, client, 41000, ofp.TCPFlagSYN|ofp.TCPFlagACK)
	r = tbl.Process(reply)
	if len(r.Outputs) != 1 || r.Outputs[0] != (oftable.Output{Port: clientPort, Packet: reply}) {
		t.Fatalf("direct reply: %+v", r.Outputs)
	}
	assertPath(t, r, []pathStep{{tClassify, 900}, {tFromMember, 50}, {tL2, 100}})
}

// A DSR VIP: the bucket names the member in the label, tableTracked moves
// it into dsrMemberReg, and the member's route sets its MAC alone; its
// replies go through the VIP zone untouched.
func TestSwitchDSR_Connection(t *testing.T) {
	const cookie = 0x6
	tbl := oftable.New()
	serviceToVIP := service()
	mustApply(t, tbl, goTo(add(cookie, 0, nil), tL2), inTable(add(cookie, 0, nil, toController), tL2),
		inTable(add(cookie, 100, oxms(ofp.MatchEthDst(clientMAC)), out(clientPort)), tL2))
	for i, m := range members {
		mustApply(t, tbl, inTable(add(cookie, 100, oxms(ofp.MatchEthDst(memberMACs[i])), out(memberPorts[i])), tL2),
			goTo(inTable(add(cookie, 100, oxms(ofp.MatchEthType(0x0800), ofp.MatchReg(dsrMemberReg, ipUint(m), 0xffffffff),
				ofp.MatchReg(groupReg, natGroup, 0xffffffff)), set(ofp.MatchEthDst(memberMACs[i]))), tToMember), tL2))
	}
	mustApply(t, tbl,
		inTable(add(cookie, 251, append(oxms(ofp.MatchCTLabel([16]byte{})), serviceToVIP...)), tTracked),
		goTo(inTable(add(cookie, 201, append(oxms(state(ofp.CTStateTrk, 0)), serviceToVIP...),
			ofp.ActionRegMove{NBits: 32, Src: ofp.NXMCTLabel, Dst: ofp.NXMReg(dsrMemberReg)},
			set(ofp.MatchReg(groupReg, natGroup, 0xffffffff))), tTracked), tToMember),
		goTo(add(cookie, 902, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchIPv4Src(vip), ofp.MatchTCPSrc(80)),
			ct(0, zoneVIP, ofp.CTRecircNone)), tL2),
		add(cookie, 501, serviceToVIP, ct(0, zoneVIP, tTracked)))
	gm := &ofp.GroupMod{Command: ofp.GroupAdd, GroupType: ofp.GroupTypeSelect, GroupID: natGroup}
	for _, m := range members {
		gm.Buckets = append(gm.Buckets, ofp.Bucket{Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny,
			Actions: []ofp.Action{ct(ofp.CTCommit, zoneVIP, tTracked, set(ofp.MatchCTLabel(label(m))))}})
	}
	if _, err := tbl.ApplyGroup(gm); err != nil {
		t.Fatal(err)
	}
	mustApply(t, tbl, inTable(add(cookie, 301, append(oxms(state(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateInv),
		ofp.MatchCTLabel([16]byte{})), serviceToVIP...), ofp.ActionGroup{GroupID: natGroup}), tTracked))

	syn := segment(clientPort, clientMAC, vipMAC, client, 40000, vip, 80, ofp.TCPFlagSYN)
	r := tbl.Process(syn)
	if len(r.Outputs) != 1 || len(r.Selected) != 1 {
		t.Fatalf("SYN: outputs %+v, selected %v", r.Outputs, r.Selected)
	}
	m := r.Selected[0].Bucket
	want := syn
	want.EthDst = memberMACs[m]
	if r.Outputs[0] != (oftable.Output{Port: memberPorts[m], Packet: want}) {
		t.Errorf("SYN:\n got  %d %s\n want %d %s", r.Outputs[0].Port, full(r.Outputs[0].Packet), memberPorts[m], full(want))
	}
	if r.Out.Regs[dsrMemberReg] != ipUint(members[m]) || r.Out.Regs[groupReg] != natGroup {
		t.Errorf("registers %v, want the member's address and the group", r.Out.Regs)
	}
	reply := segment(memberPorts[m], memberMACs[m], clientMAC, vip, 80, client, 40000, ofp.TCPFlagSYN|ofp.TCPFlagACK)
	if r := tbl.Process(reply); len(r.Outputs) != 1 || r.Outputs[0] != (oftable.Output{Port: clientPort, Packet: reply}) {
		t.Errorf("reply: %+v", r.Outputs)
	}
	c, ok := tbl.Tracker().Lookup(zoneVIP, tuple(client, 40000, vip, 80))
	if !ok || !c.Replied || c.Label != label(members[m]) {
		t.Errorf("VIP zone connection %+v, %t; want replied, labelled with member %d", c, ok, m)
	}
}

func ipUint(ip [4]byte) uint32 {
	return uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
}
