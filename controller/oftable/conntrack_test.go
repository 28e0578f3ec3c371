package oftable_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// ct_state bits, shorter.
const (
	csTrk = ofp.CTStateTrk
	csNew = ofp.CTStateNew
	csEst = ofp.CTStateEst
	csRpl = ofp.CTStateRpl
	csInv = ofp.CTStateInv
)

// A connection's packets one after another, each through ct in one zone,
// and the state the tracker gives each: the tracker keeps what the
// packets before committed.
func TestTracker_States(t *testing.T) {
	const zone = 5
	tbl := oftable.New()
	mustApply(t, tbl,
		add(1, 20, tcpTo(vip, 80), ct(ofp.CTCommit, zone, 1)),
		add(1, 20, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(1), ofp.MatchICMPv4Type(8)), ct(ofp.CTCommit, zone, 1)),
		add(1, 10, oxms(ofp.MatchEthType(0x0800)), ct(0, zone, 1)),
		add(1, 10, oxms(ofp.MatchEthType(0x86dd)), ct(0, zone, 1)),
		inTable(add(1, 0, nil, out(1)), 1))
	tcp := func(src [4]byte, sport uint16, dst [4]byte, dport uint16, flags uint16) oftable.Packet {
		return segment(clientPort, clientMAC, vipMAC, src, sport, dst, dport, flags)
	}
	icmp := func(src, dst [4]byte, typ uint8) oftable.Packet {
		return oftable.Packet{InPort: clientPort, EthType: 0x0800, IPProto: 1, IPv4Src: src, IPv4Dst: dst, ICMPType: typ}
	}
	udp := oftable.Packet{InPort: clientPort, EthType: 0x0800, IPProto: 17, IPv4Src: client, IPv4Dst: vip, L4Src: 5000, L4Dst: 53}
	udpReply := udp
	udpReply.IPv4Src, udpReply.IPv4Dst, udpReply.L4Src, udpReply.L4Dst = vip, client, 53, 5000
	tcp6 := oftable.Packet{InPort: clientPort, EthType: 0x86dd, IPProto: 6, IPv6Src: client6, IPv6Dst: vip6, L4Src: 1, L4Dst: 2,
		TCPFlags: ofp.TCPFlagSYN}
	const syn, ack, synAck = ofp.TCPFlagSYN, ofp.TCPFlagACK, ofp.TCPFlagSYN | ofp.TCPFlagACK
	steps := []struct {
		name string
		p    oftable.Packet
		want uint32
	}{
		{"CommittedSYN", tcp(client, 40000, vip, 80, syn), csTrk | csNew},
		{"AgainBeforeAReply", tcp(client, 40000, vip, 80, syn), csTrk | csNew},
		{"FirstReply", tcp(vip, 80, client, 40000, synAck), csTrk | csEst | csRpl},
		{"OriginalAfterAReply", tcp(client, 40000, vip, 80, ack), csTrk | csEst},
		{"SYNOnAHeldConnection", tcp(client, 40000, vip, 80, syn), csTrk | csEst},
		{"FINClosesNothing", tcp(client, 40000, vip, 80, ofp.TCPFlagFIN|ack), csTrk | csEst},
		{"ReplyAgain", tcp(vip, 80, client, 40000, ack), csTrk | csEst | csRpl},
		{"UncommittedNew", tcp(client, 40001, vip, 81, syn), csTrk | csNew},
		{"UncommittedStaysNew", tcp(client, 40001, vip, 81, syn), csTrk | csNew},
		{"SYNACKOfNoConnection", tcp(vip, 81, client, 40001, synAck), csTrk | csInv},
		{"SYNRSTOfNoConnection", tcp(client, 40002, vip, 81, syn|ofp.TCPFlagRST), csTrk | csInv},
		{"SYNFINOfNoConnection", tcp(client, 40002, vip, 81, syn|ofp.TCPFlagFIN), csTrk | csInv},
		{"ACKOfNoConnectionOpens", tcp(client, 40002, vip, 81, ack), csTrk | csNew},
		{"RSTACKOfNoConnectionOpens", tcp(client, 40003, vip, 81, ofp.TCPFlagRST|ack), csTrk | csNew},
		{"OtherZoneNotSeen", tcp(client, 40000, vip, 80, ack), csTrk | csEst}, // the same connection, its zone
		{"UDPUncommitted", udp, csTrk | csNew},
		{"UDPReplyOfNoConnection", udpReply, csTrk | csNew},
		{"EchoRequestCommitted", icmp(client, vip, 8), csTrk | csNew},
		{"EchoReply", icmp(vip, client, 0), csTrk | csEst | csRpl},
		{"EchoRequestAgain", icmp(client, vip, 8), csTrk | csEst},
		{"EchoRequestTheOtherWay", icmp(vip, client, 8), csTrk | csNew},
		{"EchoReplyOfNoConnection", icmp(member, client, 0), csTrk | csInv},
		{"ICMPErrorIsNotRelated", icmp(member, vip, 3), csTrk | csInv},
		{"TCP6", tcp6, csTrk | csNew},
	}
	for _, s := range steps {
		r := tbl.Process(s.p)
		if r.Err != nil || len(r.Ports) != 1 {
			t.Fatalf("%s: ports %v, %v", s.name, r.Ports, r.Err)
		}
		if r.Out.CTState != s.want || r.Out.CTZone != zone {
			t.Errorf("%s: ct_state %#x zone %d, want %#x zone %d", s.name, r.Out.CTState, r.Out.CTZone, s.want, zone)
		}
	}
	want := []oftable.Conn{
		{Zone: zone, Orig: oftable.Tuple{Proto: 1, Src: netip.AddrFrom4(vip), Dst: netip.AddrFrom4(client), ICMPType: 8}},
		{Zone: zone, Orig: oftable.Tuple{Proto: 1, Src: netip.AddrFrom4(client), Dst: netip.AddrFrom4(vip), ICMPType: 8}, Replied: true},
		{Zone: zone, Orig: tuple(client, 40000, vip, 80), Replied: true},
	}
	if got := tbl.Tracker().Conns(); !slices.Equal(got, want) {
		t.Errorf("connections:\n got  %+v\n want %+v", got, want)
	}
}

// A commit writes the connection's mark and label with the actions inside
// ct; bits they leave alone keep their value. Every packet of the
// connection then carries them, in its zone alone.
func TestTracker_MarkAndLabel(t *testing.T) {
	lbl := [16]byte{15: 0x2a}
	tbl := oftable.New()
	in := func(port uint32, match ...ofp.OXM) []ofp.OXM { return append(oxms(ofp.MatchInPort(port)), match...) }
	tcpMatch := oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6))
	mustApply(t, tbl,
		add(1, 10, in(10, tcpMatch...), ct(ofp.CTCommit, 7, 1, set(ofp.MatchCTMark(0xabcd0000, 0xffffffff)),
			ofp.ActionRegMove{NBits: 16, Src: ofp.NXMTCPSrc, Dst: ofp.NXMCTMark}, set(ofp.MatchCTLabel(lbl)))),
		add(1, 10, in(11, tcpMatch...), set(ofp.MatchReg(0, 0x11, 0xffffffff)),
			ct(ofp.CTCommit, 7, 1, ofp.ActionRegMove{NBits: 8, Src: ofp.NXMReg(0), Dst: ofp.NXMCTMark, DstOfs: 8})),
		add(1, 10, in(12, tcpMatch...), ct(0, 7, 1)),
		add(1, 10, in(13, tcpMatch...), ct(0, 8, 1)),
		inTable(add(1, 40, oxms(ofp.MatchCTZone(8)), out(9)), 1),
		inTable(add(1, 30, oxms(ofp.MatchCTMark(0xabcd1134, 0xffffffff)), out(2)), 1),
		inTable(add(1, 20, oxms(ofp.MatchCTMark(0xabcd0000, 0xffff0000)), out(3)), 1),
		inTable(add(1, 10, oxms(ofp.MatchCTLabel(lbl)), out(4)), 1),
		inTable(add(1, 0, nil, out(1)), 1))
	forward := func(inPort uint32) oftable.Packet {
		return segment(inPort, clientMAC, vipMAC, client, 0x1234, vip, 80, ofp.TCPFlagACK)
	}
	reply := segment(12, vipMAC, clientMAC, vip, 80, client, 0x1234, ofp.TCPFlagACK)
	steps := []struct {
		name      string
		p         oftable.Packet
		wantMark  uint32
		wantLabel [16]byte
		wantPort  uint32
	}{
		{"CommitSetsMarkAndLabel", forward(10), 0xabcd1234, lbl, 3},
		{"CommitMovesIntoPartOfTheMark", forward(11), 0xabcd1134, lbl, 2},
		{"ReplyCarriesThem", reply, 0xabcd1134, lbl, 2},
		{"OtherZoneHasNone", forward(13), 0, [16]byte{}, 9},
	}
	for _, s := range steps {
		r := tbl.Process(s.p)
		if r.Out.CTMark != s.wantMark || r.Out.CTLabel != s.wantLabel || !slices.Equal(r.Ports, []uint32{s.wantPort}) {
			t.Errorf("%s: mark %#x label %x to %v, want %#x %x to %d", s.name, r.Out.CTMark, r.Out.CTLabel, r.Ports,
				s.wantMark, s.wantLabel, s.wantPort)
		}
	}
}

// ct(commit,force) on a connection's reply direction forgets it and
// commits the packet's direction as a csNew one.
func TestTracker_Force(t *testing.T) {
	tbl := oftable.New()
	mustApply(t, tbl,
		add(1, 10, oxms(ofp.MatchInPort(clientPort), ofp.MatchEthType(0x0800)), ct(ofp.CTCommit, 1, 1)),
		add(1, 10, oxms(ofp.MatchInPort(memberPort), ofp.MatchEthType(0x0800)), ct(ofp.CTCommit|ofp.CTForce, 1, 1)),
		inTable(add(1, 0, nil, out(1)), 1))
	fromClient := segment(clientPort, clientMAC, vipMAC, client, 40000, vip, 80, ofp.TCPFlagSYN)
	fromVIP := segment(memberPort, vipMAC, clientMAC, vip, 80, client, 40000, ofp.TCPFlagSYN)
	if r := tbl.Process(fromClient); r.Out.CTState != csTrk|csNew {
		t.Fatalf("first: ct_state %#x", r.Out.CTState)
	}
	if r := tbl.Process(fromVIP); r.Out.CTState != csTrk|csNew {
		t.Errorf("forced: ct_state %#x, want +csTrk+new", r.Out.CTState)
	}
	want := []oftable.Conn{{Zone: 1, Orig: tuple(vip, 80, client, 40000)}}
	if got := tbl.Tracker().Conns(); !slices.Equal(got, want) {
		t.Errorf("connections %+v, want %+v", got, want)
	}
	if r := tbl.Process(fromClient); r.Out.CTState != csTrk|csEst|csRpl {
		t.Errorf("the client's next: ct_state %#x, want +csTrk+csEst+rpl", r.Out.CTState)
	}
}

func TestTracker_LookupDeleteFlush(t *testing.T) {
	tbl := oftable.New()
	mustApply(t, tbl, add(1, 10, oxms(ofp.MatchEthType(0x0800)), ct(ofp.CTCommit, 3, 1)))
	for sport := uint16(1); sport <= 3; sport++ {
		tbl.Process(segment(clientPort, clientMAC, vipMAC, client, sport, vip, 80, ofp.TCPFlagSYN))
	}
	tr := tbl.Tracker()
	if c, ok := tr.Lookup(3, tuple(vip, 80, client, 2)); !ok || c.Orig != tuple(client, 2, vip, 80) {
		t.Errorf("Lookup of the reply direction = %+v, %t", c, ok)
	}
	if _, ok := tr.Lookup(4, tuple(client, 2, vip, 80)); ok {
		t.Error("Lookup found the connection in another zone")
	}
	if !tr.Delete(3, tuple(vip, 80, client, 2)) || tr.Delete(3, tuple(client, 2, vip, 80)) {
		t.Error("Delete: want true, then false")
	}
	if n := len(tr.Conns()); n != 2 {
		t.Errorf("%d connections after Delete, want 2", n)
	}
	r := tbl.Process(segment(clientPort, clientMAC, vipMAC, client, 2, vip, 80, ofp.TCPFlagACK))
	if r.Out.CTState != csTrk|csNew {
		t.Errorf("a deleted connection's packet: ct_state %#x, want +csTrk+new", r.Out.CTState)
	}
	tr.Flush()
	if n := len(tr.Conns()); n != 0 {
		t.Errorf("%d connections after Flush", n)
	}
}

func TestTupleOf(t *testing.T) {
	tests := []struct {
		name string
		p    oftable.Packet
		want oftable.Tuple
		ok   bool
	}{
		{"TCP", tcpPacket(1, clientMAC, vipMAC, client, 1, vip, 2), tuple(client, 1, vip, 2), true},
		{"UDP6", oftable.Packet{EthType: 0x86dd, IPProto: 17, IPv6Src: client6, IPv6Dst: vip6, L4Src: 3, L4Dst: 4},
			oftable.Tuple{Proto: 17, Src: netip.AddrFrom16(client6), Dst: netip.AddrFrom16(vip6), SrcPort: 3, DstPort: 4}, true},
		{"GRE", oftable.Packet{EthType: 0x0800, IPProto: 47, IPv4Src: client, IPv4Dst: vip, L4Src: 9},
			oftable.Tuple{Proto: 47, Src: netip.AddrFrom4(client), Dst: netip.AddrFrom4(vip)}, true},
		{"EchoRequest6", oftable.Packet{EthType: 0x86dd, IPProto: 58, IPv6Src: client6, IPv6Dst: vip6, ICMPType: 128},
			oftable.Tuple{Proto: 58, Src: netip.AddrFrom16(client6), Dst: netip.AddrFrom16(vip6), ICMPType: 128}, true},
		{"ICMPv4TypeInICMPv6", oftable.Packet{EthType: 0x86dd, IPProto: 58, ICMPType: 8}, oftable.Tuple{}, false},
		{"NeighbourSolicitation", oftable.Packet{EthType: 0x86dd, IPProto: 58, ICMPType: 135}, oftable.Tuple{}, false},
		{"ARP", oftable.Packet{EthType: 0x0806, ARPOp: 1}, oftable.Tuple{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := oftable.TupleOf(tt.p)
			if got != tt.want || ok != tt.ok {
				t.Errorf("TupleOf = %+v, %t; want %+v, %t", got, ok, tt.want, tt.ok)
			}
		})
	}
	echo := oftable.Tuple{Proto: 1, Src: netip.AddrFrom4(client), Dst: netip.AddrFrom4(vip), ICMPType: 8}
	if r := echo.Reverse(); r != (oftable.Tuple{Proto: 1, Src: netip.AddrFrom4(vip), Dst: netip.AddrFrom4(client), ICMPType: 0}) {
		t.Errorf("the echo request's reverse is %+v", r)
	}
}

// How ct forks the pipeline: the packet the actions go on with is
// untracked, the tracked one goes on from the recirculation table once the
// current pass ends, with its registers.
func TestTable_Process_CT(t *testing.T) {
	ip := oxms(ofp.MatchEthType(0x0800))
	syn := segment(clientPort, clientMAC, vipMAC, client, 40000, vip, 80, ofp.TCPFlagSYN)
	untracked := oxms(state(0, csTrk))
	tracked := oxms(state(csTrk, 0))
	tests := []struct {
		name      string
		flows     []*ofp.FlowMod
		wantPorts []uint32
		wantPath  []pathStep
		wantErr   error
	}{
		{"WithoutRecirculationGoesOnUntracked", []*ofp.FlowMod{
			goTo(add(1, 1, ip, ct(ofp.CTCommit, 1, ofp.CTRecircNone), out(1)), 2),
			inTable(add(1, 2, untracked, out(2)), 2), inTable(add(1, 1, tracked, out(3)), 2),
		}, []uint32{1, 2}, []pathStep{{0, 1}, {2, 2}}, nil},
		{"RecirculatesAfterThePass", []*ofp.FlowMod{
			goTo(add(1, 1, ip, ct(0, 1, 1), out(5)), 2),
			inTable(add(1, 2, untracked, out(2)), 2),
			inTable(add(1, 1, tracked, out(1)), 1),
		}, []uint32{5, 2, 1}, []pathStep{{0, 1}, {2, 2}, {1, 1}}, nil},
		{"TrackedFieldsClearedAfterCT", []*ofp.FlowMod{
			add(1, 1, ip, ct(0, 1, 1)),
			goTo(inTable(add(1, 1, append(slices.Clone(tracked), ip...), ct(0, 2, ofp.CTRecircNone)), 1), 2),
			inTable(add(1, 2, untracked, out(2)), 2),
		}, []uint32{2}, []pathStep{{0, 1}, {1, 1}, {2, 2}}, nil},
		{"RegistersRecirculate", []*ofp.FlowMod{
			add(1, 1, ip, set(ofp.MatchReg(5, 9, 0xffffffff)), ct(0, 1, 1)),
			inTable(add(1, 2, oxms(ofp.MatchReg(5, 9, 0xffffffff)), out(1)), 1),
		}, []uint32{1}, []pathStep{{0, 1}, {1, 2}}, nil},
		{"ZoneFromAField", []*ofp.FlowMod{
			add(1, 1, ip, set(ofp.MatchReg(3, 0x420000, 0xffffffff)),
				ofp.ActionCT{ZoneField: ofp.NXMReg(3), ZoneOfs: 16, Table: 1}),
			inTable(add(1, 2, oxms(ofp.MatchCTZone(0x42)), out(1)), 1),
		}, []uint32{1}, []pathStep{{0, 1}, {1, 2}}, nil},
		{"CTClear", []*ofp.FlowMod{
			add(1, 1, ip, ct(0, 1, 1)),
			goTo(inTable(add(1, 1, tracked, ofp.ActionCTClear{}), 1), 2),
			inTable(add(1, 2, untracked, out(2)), 2),
		}, []uint32{2}, []pathStep{{0, 1}, {1, 1}, {2, 2}}, nil},
		{"BackToTheSameTable", []*ofp.FlowMod{
			add(1, 2, append(oxms(state(csTrk, 0)), ip...), out(1)),
			add(1, 1, ip, ct(0, 1, 0)),
		}, []uint32{1}, []pathStep{{0, 1}, {0, 2}}, nil},
		{"ErrLoop", []*ofp.FlowMod{add(1, 1, ip, ct(0, 1, 0))}, nil, slices.Repeat([]pathStep{{0, 1}}, 64), oftable.ErrLoop},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := oftable.New()
			mustApply(t, tbl, tt.flows...)
			r := tbl.Process(syn)
			if !slices.Equal(r.Ports, tt.wantPorts) || !errors.Is(r.Err, tt.wantErr) {
				t.Errorf("ports %v (%v), want %v (%v)", r.Ports, r.Err, tt.wantPorts, tt.wantErr)
			}
			assertPath(t, r, tt.wantPath)
			for _, o := range r.Outputs {
				if o.Packet != syn {
					t.Errorf("output to %d sent %s, want the packet's headers alone", o.Port, full(o.Packet))
				}
			}
		})
	}
}

// The rows sdnlb writes around the tracker, accepted and rendered as
// ovs-ofctl dump-flows prints them.
func TestTable_Apply_TrackerFields(t *testing.T) {
	tbl := oftable.New()
	mustApply(t, tbl,
		inTable(add(1, 5, oxms(state(csTrk|csNew, csInv), ofp.MatchCTLabel([16]byte{}), ofp.MatchCTZone(0x5d),
			ofp.MatchCTMark(0x60000, 0xffff0000), ofp.MatchReg(2, 7, 0xffffffff), ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
			ofp.MatchTCPFlags(ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK)),
			ofp.ActionRegMove{NBits: 32, Src: ofp.NXMCTLabel, Dst: ofp.NXMIPDst},
			ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: ofp.NXMTCPDst},
			ct(ofp.CTCommit, 0x5e, 2, set(ofp.MatchCTLabel([16]byte{15: 1})), set(ofp.MatchCTMark(0x60050, 0xffffffff)),
				ofp.ActionRegMove{NBits: 16, Src: ofp.NXMReg(1), Dst: ofp.NXMCTMark})), 1))
	want := []string{"cookie=0x1, table=1, priority=5, ct_state=+new-inv+trk,ct_zone=93,ct_mark=0x60000/0xffff0000,ct_label=0," +
		"tcp,reg2=0x7,tcp_flags=+syn-ack actions=move:NXM_NX_CT_LABEL[0..31]->NXM_OF_IP_DST[],move:NXM_NX_CT_MARK[0..15]->NXM_OF_TCP_DST[]," +
		"ct(commit,table=2,zone=94,exec(set_field:0x1->ct_label,set_field:0x60050->ct_mark,move:NXM_NX_REG1[0..15]->NXM_NX_CT_MARK[0..15]))"}
	assertLines(t, "table", tbl.Lines(), want)
}

func TestTable_Apply_TrackerErrors(t *testing.T) {
	ip := oxms(ofp.MatchEthType(0x0800))
	tests := []struct {
		name     string
		fm       *ofp.FlowMod
		wantType ofp.ErrorType
		wantCode uint16
		wantText string
	}{
		{"ErrCTWithoutIP", add(1, 1, nil, ct(0, 1, 1)), ofp.ErrTypeBadAction, 10, "needs eth_type=0x0800 or 0x86dd in the match"},
		{"ErrCTOnARP", add(1, 1, oxms(ofp.MatchEthType(0x0806)), ct(0, 1, 1)), ofp.ErrTypeBadAction, 10, "needs eth_type"},
		{"ErrExecWithoutCommit", add(1, 1, ip, ct(0, 1, 1, set(ofp.MatchCTMark(1, 0xffffffff)))),
			ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "need commit"},
		{"ErrForceWithoutCommit", add(1, 1, ip, ct(ofp.CTForce, 1, 1)), ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "bad flags"},
		{"ErrOutputInsideCT", add(1, 1, ip, ct(ofp.CTCommit, 1, 1, out(1))), ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "inside ct"},
		{"ErrSetIPInsideCT", add(1, 1, ip, ct(ofp.CTCommit, 1, 1, set(ofp.MatchIPv4Dst(vip)))),
			ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "only ct_mark and ct_label"},
		{"ErrMoveIntoIPInsideCT", add(1, 1, ip, ct(ofp.CTCommit, 1, 1, move(32, ofp.NXMCTMark, ofp.NXMIPDst))),
			ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "only ct_mark and ct_label"},
		{"ErrNAT", add(1, 1, ip, ct(ofp.CTCommit, 1, 1, ofp.ActionNAT{})), ofp.ErrTypeBadAction, ofp.BadActionBadType, "nat"},
		{"ErrALG", add(1, 1, ip, ofp.ActionCT{Flags: ofp.CTCommit, Alg: 21, Table: 1}), ofp.ErrTypeBadAction, ofp.BadActionBadType, "alg"},
		{"ErrZoneFieldUnmodelled", add(1, 1, ip, ofp.ActionCT{ZoneField: 0x00012008, Table: 1}),
			ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "zone field"},
		{"ErrZoneFieldTooShort", add(1, 1, ip, ofp.ActionCT{ZoneField: ofp.NXMReg(1), ZoneOfs: 17, Table: 1}),
			ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "zone field"},
		{"ErrSetCTMarkOutsideCT", add(1, 1, ip, set(ofp.MatchCTMark(1, 0xffffffff))), ofp.ErrTypeBadAction, 15, "outside ct"},
		{"ErrMoveIntoCTLabelOutsideCT", add(1, 1, ip, move(32, ofp.NXMIPSrc, ofp.NXMCTLabel)), ofp.ErrTypeBadAction, 15, "only ct may write"},
		{"ErrTCPFlagsWithoutTCP", add(1, 1, oxms(ofp.MatchEthType(0x0800), ofp.MatchTCPFlags(ofp.TCPFlagSYN, ofp.TCPFlagSYN))),
			ofp.ErrTypeBadMatch, 9, "needs ip_proto=6"},
		{"ErrTunnelID", add(1, 1, oxms(func() ofp.OXM {
			o, err := ofp.NewOXM(ofp.OXMClassNXM1, 16, []byte{0, 0, 0, 0, 0, 0, 0, 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}())), ofp.ErrTypeBadMatch, ofp.BadMatchBadField, "not modelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := oftable.New()
			_, err := tbl.Apply(tt.fm)
			var msg *ofp.ErrorMsg
			if !errors.As(err, &msg) || msg.ErrType != tt.wantType || msg.Code != tt.wantCode {
				t.Fatalf("Apply = %v, want %v code %d", err, tt.wantType, tt.wantCode)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Apply = %q, want it to say %q", err, tt.wantText)
			}
		})
	}
}
