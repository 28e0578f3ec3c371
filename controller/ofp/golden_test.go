package ofp

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"reflect"
	"testing"
)

var (
	macF20B7D = [6]byte{0xf2, 0x0b, 0xa4, 0x7d, 0xf8, 0xea}
	macF20B3F = [6]byte{0xf2, 0x0b, 0xa4, 0xd0, 0x3f, 0x70}
	arpFrame  = []byte{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf2, 0x0b, 0xa4, 0x7d, 0xf8, 0xea, 0x08, 0x06,
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,
		0xf2, 0x0b, 0xa4, 0x7d, 0xf8, 0xea, 0x0a, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x03,
	}
	port7 = Port{PortNo: 7, HWAddr: macF20B3F, Name: "Port7", State: PortStateLive,
		Curr: 10248, Advertised: 10240, Supported: 10248, Peer: 10248, CurrSpeed: 5000, MaxSpeed: 5000}
	port6 = Port{PortNo: 6, HWAddr: macF20B7D, Name: "Port6", State: PortStateLive,
		Curr: 10248, Advertised: 10240, Supported: 10248, Peer: 10248, CurrSpeed: 5000, MaxSpeed: 5000}
)

type goldenCase struct {
	name string // testdata/golden/NAME.hex
	msg  Message
	// decodeOnly marks vectors that Append does not reproduce byte for
	// byte (a bare hello, a hello with another header version).
	decodeOnly bool
}

func goldenCases(tb testing.TB) []goldenCase {
	tb.Helper()
	rawAction := func(t ActionType, data ...byte) Action { return ActionRaw{Type: t, Data: data} }
	ndTurn, ndAnswer := ndResponderFlowMods()
	return []goldenCase{
		{name: "hello", msg: &Hello{Versions: []uint8{1, 2, 3, 9, 10, 30}}},
		{name: "hello_no_elements", msg: &Hello{Versions: []uint8{4}}, decodeOnly: true},
		{name: "hello_of15", msg: &Hello{Versions: []uint8{1, 2, 3, 4, 5, 6}}, decodeOnly: true},
		{name: "error", msg: &ErrorMsg{ErrType: ErrTypeBadMatch, Code: BadMatchBadField,
			Data: []byte{0x04, 0x0e, 0x00, 0x08, 0, 0, 0, 0}}},
		{name: "error_experimenter", msg: &ErrorMsg{ErrType: ErrTypeExperimenter, Code: 7,
			Experimenter: 0x2320, Data: []byte{0xde, 0xad, 0xbe, 0xef}}},
		{name: "echo_request", msg: &EchoRequest{Data: []byte("hoge")}},
		{name: "echo_reply", msg: &EchoReply{Data: []byte("hoge")}},
		{name: "experimenter", msg: &Experimenter{Experimenter: 0x2320, ExpType: 10,
			Data: []byte{0xde, 0xad, 0xbe, 0xef}}},
		{name: "features_request", msg: &FeaturesRequest{}},
		{name: "features_reply", msg: &FeaturesReply{DatapathID: 603603843768844288, NTables: 255,
			AuxiliaryID: 99, Capabilities: 0x4f}},
		{name: "get_config_request", msg: &GetConfigRequest{}},
		{name: "get_config_reply", msg: &GetConfigReply{MissSendLen: ControllerMaxLenNoBuffer}},
		{name: "set_config", msg: &SetConfig{MissSendLen: 128}},
		{name: "packet_in", msg: &PacketIn{BufferID: 2, TotalLen: 42, Reason: ReasonAction, TableID: 1,
			Cookie: 283686884868096,
			Match: Match{OXMs: []OXM{
				MatchInPort(6), MatchEthType(0x0806), MatchEthDst([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
				MatchEthSrc(macF20B7D), MatchARPOp(1), MatchARPSPA([4]byte{10, 0, 0, 1}),
				MatchARPTPA([4]byte{10, 0, 0, 3}), MatchARPSHA(macF20B7D), MatchARPTHA([6]byte{}),
			}},
			Data: arpFrame}},
		{name: "packet_in_ovs", msg: &PacketIn{BufferID: NoBuffer, TotalLen: 42, Reason: ReasonNoMatch,
			Match: Match{OXMs: []OXM{MatchInPort(1)}}, Data: arpFrame}},
		{name: "packet_out", msg: &PacketOut{BufferID: NoBuffer, InPort: PortController,
			Actions: []Action{ActionOutput{Port: 1}}, Data: arpFrame}},
		{name: "flow_mod", msg: &FlowMod{TableID: 1, Command: FlowAdd, Priority: 123, BufferID: 0xffff,
			OutPort: PortAny, OutGroup: GroupAny,
			Match: Match{OXMs: []OXM{MatchEthDst(macF20B7D)}},
			Instructions: []Instruction{
				InstructionWriteActions{Actions: []Action{
					ActionSetField{Field: mustOXM(tb, OXMClassBasic, OXMVLANVID, []byte{0x01, 0x02}, nil)},
					rawAction(ActionTypeCopyTTLOut, 0, 0, 0, 0),
					rawAction(ActionTypeCopyTTLIn, 0, 0, 0, 0),
					rawAction(ActionTypeCopyTTLIn, 0, 0, 0, 0),
					rawAction(ActionTypePopPBB, 0, 0, 0, 0),
					rawAction(ActionTypePushPBB, 0x12, 0x34, 0, 0),
					rawAction(ActionTypePopMPLS, 0x98, 0x76, 0, 0),
					rawAction(ActionTypePushMPLS, 0x88, 0x47, 0, 0),
					ActionPopVLAN{},
					ActionPushVLAN{EtherType: 0x8100},
					rawAction(ActionTypeDecMPLSTTL, 0, 0, 0, 0),
					rawAction(ActionTypeSetMPLSTTL, 10, 0, 0, 0),
					ActionDecNwTTL{},
					rawAction(ActionTypeSetNwTTL, 10, 0, 0, 0),
					ActionSetQueue{QueueID: 3},
					ActionGroup{GroupID: 99},
					ActionOutput{Port: 6, MaxLen: ControllerMaxLenNoBuffer},
				}},
				InstructionApplyActions{Actions: []Action{
					ActionSetField{Field: MatchEthSrc([6]byte{1, 2, 3, 4, 5, 6})},
					ActionSetField{Field: mustOXM(tb, OXMClassBasic, 41, []byte{1}, nil)},
				}},
			}}},
		{name: "flow_mod_nat", msg: natFlowMod()},
		{name: "flow_mod_delete", msg: &FlowMod{Cookie: 2, CookieMask: 0xffffffff, TableID: TableAll,
			Command: FlowDelete, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny}},
		{name: "flow_removed", msg: &FlowRemoved{Priority: 65535, Reason: RemovedIdleTimeout,
			DurationSec: 3, DurationNsec: 48825000, IdleTimeout: 3, PacketCount: 1, ByteCount: 86,
			Match: Match{OXMs: []OXM{MatchEthDst(macF20B7D)}}}},
		{name: "port_status", msg: &PortStatus{Reason: PortReasonAdd, Desc: port7}},
		{name: "barrier_request", msg: &BarrierRequest{}},
		{name: "barrier_reply", msg: &BarrierReply{}},
		{name: "role_request", msg: &RoleRequest{Role: RoleMaster, GenerationID: 17294086455919964160}},
		{name: "role_reply", msg: &RoleReply{Role: RoleSlave, GenerationID: 17294086455919964160}},
		{name: "flow_stats_request", msg: &MultipartRequest{Body: FlowStatsRequest{
			OutPort: PortAny, OutGroup: GroupAny}}},
		{name: "aggregate_stats_request", msg: &MultipartRequest{Body: AggregateStatsRequest{
			TableID: TableAll, OutPort: PortAny, OutGroup: GroupAny,
			Cookie: 0x0000000200000000, CookieMask: 0xffffffff00000000}}},
		{name: "port_stats_request", msg: &MultipartRequest{Body: PortStatsRequest{PortNo: PortAny}}},
		{name: "port_desc_request", msg: &MultipartRequest{Body: PortDescRequest{}}},
		{name: "desc_request", msg: &MultipartRequest{Body: DescRequest{}}},
		{name: "flow_stats_reply", msg: &MultipartReply{Body: FlowStatsReply{Stats: []FlowStats{
			{DurationSec: 358, DurationNsec: 115277000, Priority: 65535},
			{DurationSec: 358, DurationNsec: 115055000, Priority: 65534,
				Match: Match{OXMs: []OXM{MatchEthType(0x0806)}},
				Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
					ActionOutput{Port: PortNormal}}}}},
			{DurationSec: 316220, DurationNsec: 511582000, Priority: 123, PacketCount: 3, ByteCount: 238,
				Match:        Match{OXMs: []OXM{MatchInPort(6), MatchEthSrc(macF20B7D)}},
				Instructions: []Instruction{InstructionGotoTable{TableID: 1}}},
			{DurationSec: 313499, DurationNsec: 980901000, PacketCount: 1, ByteCount: 98,
				Instructions: []Instruction{InstructionWriteActions{Actions: []Action{
					ActionOutput{Port: PortController, MaxLen: ControllerMaxLenNoBuffer}}}}},
		}}}},
		{name: "aggregate_stats_reply", msg: &MultipartReply{Body: AggregateStatsReply{
			PacketCount: 7, ByteCount: 574, FlowCount: 6}}},
		{name: "port_stats_reply", msg: &MultipartReply{Flags: MultipartReplyMore, Body: PortStatsReply{Stats: []PortStats{
			{PortNo: 7, TxPackets: 4, TxBytes: 336},
			{PortNo: 6, RxPackets: 4, TxPackets: 4, RxBytes: 336, TxBytes: 336, DurationSec: 10, DurationNsec: 11},
		}}}},
		{name: "port_desc_reply", msg: &MultipartReply{Body: PortDescReply{Ports: []Port{port7, port6}}}},
		{name: "desc_reply", msg: &MultipartReply{Body: DescReply{MfrDesc: "Open vSwitch", HWDesc: "None",
			SWDesc: "3.1.0", SerialNum: "None", DPDesc: "br0"}}},
		{name: "group_mod", msg: &GroupMod{Command: GroupAdd, GroupType: GroupTypeAll, GroupID: 1,
			Buckets: []Bucket{ryuBucket}}},
		{name: "group_mod_select", msg: lbGroupMod()},
		{name: "group_mod_delete", msg: &GroupMod{Command: GroupDelete, GroupID: 1}},
		{name: "group_stats_request", msg: &MultipartRequest{Body: GroupStatsRequest{GroupID: GroupAll}}},
		{name: "group_stats_reply", msg: &MultipartReply{Body: GroupStatsReply{Stats: []GroupStats{{
			GroupID: 1, RefCount: 2, PacketCount: 123, ByteCount: 12345, DurationSec: 9, DurationNsec: 609036000,
			Buckets: []BucketCounter{{PacketCount: 234, ByteCount: 2345}},
		}}}}},
		{name: "group_desc_request", msg: &MultipartRequest{Body: GroupDescRequest{}}},
		{name: "group_desc_reply", msg: &MultipartReply{Body: GroupDescReply{Groups: []GroupDesc{{
			GroupType: GroupTypeAll, GroupID: 1, Buckets: []Bucket{ryuBucket},
		}}}}},
		{name: "group_features_request", msg: &MultipartRequest{Body: GroupFeaturesRequest{}}},
		{name: "group_features_reply", msg: &MultipartReply{Body: GroupFeaturesReply{Types: 0xf,
			Capabilities: GroupCapSelectWeight | GroupCapChaining,
			MaxGroups:    [4]uint32{16777216, 16777216, 16777216, 16777216},
			Actions:      [4]uint32{67082241, 67082241, 67082241, 67082241}}}},
		{name: "flow_mod_ct_exec", msg: ryuOVSFlowMod(
			[]OXM{MatchEthType(0x0800), MatchCTState(CTStateEst|CTStateTrk, CTStateEst|CTStateTrk)},
			ActionCT{Flags: CTCommit, Table: CTRecircNone, Actions: []Action{
				ActionSetField{Field: MatchCTMark(0x654321, 0xffffffff)}}})},
		{name: "flow_mod_ct_nat", msg: ryuOVSFlowMod([]OXM{MatchEthType(0x0800)},
			ActionCT{Flags: CTCommit, Table: CTRecircNone, Actions: []Action{ActionNAT{Flags: NATSrc,
				AddrMin: netip.MustParseAddr("10.1.12.0"), AddrMax: netip.MustParseAddr("10.1.13.255"),
				PortMin: 1, PortMax: 1023}}})},
		{name: "flow_mod_ct_nat_v6", msg: ryuOVSFlowMod([]OXM{MatchEthType(0x86dd)},
			ActionCT{Flags: CTCommit, Table: CTRecircNone, Actions: []Action{ActionNAT{Flags: NATDst,
				AddrMin: netip.MustParseAddr("2001:1::1"), AddrMax: netip.MustParseAddr("2001:1::ffff")}}})},
		{name: "flow_mod_ct_clear", msg: ryuOVSFlowMod(
			[]OXM{MatchEthType(0x0800), MatchCTState(CTStateTrk, CTStateTrk)}, ActionCTClear{})},
		{name: "flow_mod_resubmit", msg: ryuOVSFlowMod([]OXM{
			MatchInPort(43981), MatchEthDst([6]byte{0xaa, 0xbb, 0xcc, 0x99, 0x88, 0x77}), MatchEthType(0x0800),
			MatchVLANVID(999), MatchIPv4Dst([4]byte{192, 168, 2, 1}), MatchTunnelID(50000),
			mustOXM(tb, OXMClassNXM1, 31, []byte{192, 168, 2, 3}, nil), // tun_src
			mustOXM(tb, OXMClassNXM1, 32, []byte{192, 168, 2, 4}, nil), // tun_dst
		}, ActionResubmit{InPort: 1234, Table: 99})},
		{name: "flow_mod_move", msg: func() *FlowMod {
			fm := ryuOVSFlowMod([]OXM{MatchReg(0, 0x1234, 0xffffffff), MatchReg(5, 0xabcd, 0xffff)},
				ActionRegMove{NBits: 6, SrcOfs: 10, DstOfs: 0, Src: NXMReg(0), Dst: NXMReg(1)})
			fm.Command, fm.Cookie, fm.CookieMask = FlowModify, 0x123456789abcdef0, 0xffffffffffffffff
			return fm
		}()},
		{name: "flow_mod_ct_lb", msg: lbEntryFlowMod()},
		{name: "flow_mod_arp_responder", msg: arpResponderFlowMod()},
		{name: "flow_mod_nat_v6", msg: natV6FlowMod()},
		{name: "flow_mod_ipv6_prefix", msg: &FlowMod{Priority: 10, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
			Match: Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPv6SrcMasked(
				netip.MustParseAddr("2001:db8:0:1::").As16(), mask64)}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{ActionOutput{Port: 2}}}}}},
		{name: "flow_mod_ct_nat_v6_port", msg: &FlowMod{Priority: 100, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
			Match: Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPv6Dst(vip6), MatchIPProto(6), MatchTCPDst(80)}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{ActionCT{Flags: CTCommit, Zone: 1, Table: 2,
				Actions: []Action{ActionNAT{Flags: NATDst, AddrMin: netip.MustParseAddr("2001:db8::2"), PortMin: 8080}}}}}}}},
		{name: "flow_mod_nd_responder", msg: ndTurn},
		{name: "flow_mod_nd_responder_tll", msg: ndAnswer},
	}
}

// ryuBucket is the bucket of Ryu's group vectors (4-21, 4-34).
var ryuBucket = Bucket{Weight: 1, WatchPort: 1, WatchGroup: 1,
	Actions: []Action{ActionOutput{Port: 2, MaxLen: ControllerMaxLenNoBuffer}}}

// ryuOVSFlowMod is the flow-mod frame ovs-ofctl builds for the flows of
// Ryu's packet_data_generator3: table 3, default priority, one
// apply-actions instruction.
func ryuOVSFlowMod(match []OXM, actions ...Action) *FlowMod {
	return &FlowMod{TableID: 3, Priority: 32768, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
		Match:        Match{OXMs: match},
		Instructions: []Instruction{InstructionApplyActions{Actions: actions}}}
}

// lbGroupMod is a VIP's select group: one member reached directly, one
// behind conntrack DNAT.
func lbGroupMod() *GroupMod {
	return &GroupMod{Command: GroupAdd, GroupType: GroupTypeSelect, GroupID: 1, Buckets: []Bucket{
		{Weight: 10, WatchPort: PortAny, WatchGroup: GroupAny, Actions: []Action{ActionOutput{Port: 1}}},
		{Weight: 20, WatchPort: PortAny, WatchGroup: GroupAny, Actions: []Action{ActionCT{
			Flags: CTCommit, Zone: 1, Table: 2, Actions: []Action{ActionNAT{Flags: NATDst,
				AddrMin: netip.MustParseAddr("10.0.0.2"), PortMin: 8080}}}}},
	}}
}

// lbEntryFlowMod sends an untracked VIP packet through conntrack (zone 5,
// undoing the NAT of a known connection) and on to table 1.
func lbEntryFlowMod() *FlowMod {
	return &FlowMod{Priority: 100, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
		Match: Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPv4Dst([4]byte{10, 0, 0, 100}), MatchIPProto(6),
			MatchTCPDst(80), MatchCTState(0, CTStateTrk)}},
		Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
			ActionCT{Table: 1, Zone: 5, Actions: []Action{ActionNAT{}}}}}}}
}

// arpResponderFlowMod answers an ARP request for 10.0.0.100 in the
// switch: the request turned into the reply from the VIP's MAC, sent
// back where it came from.
func arpResponderFlowMod() *FlowMod {
	vip, vipMAC := [4]byte{10, 0, 0, 100}, [6]byte{2, 0, 0, 0, 1, 0}
	return &FlowMod{Priority: 510, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
		Match: Match{OXMs: []OXM{MatchEthType(0x0806), MatchARPOp(1), MatchARPTPA(vip)}},
		Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
			ActionRegMove{NBits: 48, Src: NXMEthSrc, Dst: NXMEthDst},
			ActionSetField{Field: MatchEthSrc(vipMAC)},
			ActionSetField{Field: MatchARPOp(2)},
			ActionRegMove{NBits: 48, Src: NXMARPSHA, Dst: NXMARPTHA},
			ActionSetField{Field: MatchARPSHA(vipMAC)},
			ActionRegMove{NBits: 32, Src: NXMARPSPA, Dst: NXMARPTPA},
			ActionSetField{Field: MatchARPSPA(vip)},
			ActionOutput{Port: PortInPort},
		}}}}
}

var (
	// vip6 is the IPv6 VIP of the IPv6 vectors.
	vip6   = netip.MustParseAddr("2001:db8::64").As16()
	mask64 = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
)

// ndResponderFlowMods answer a neighbour solicitation for vip6 in the
// switch, as arpResponderFlowMod answers ARP: the first turns the
// solicitation into the solicited advertisement from the VIP, its source
// link-layer option retyped as a target one, and goes to table 1, where
// the second writes the VIP's MAC into that option and sends the packet
// back where it came from. One flow cannot do both: OVS refuses a set of
// nd_tll in a flow that matches a solicitation, and writes nd_sll only
// into an option still of type 1, after the retyping in its datapath.
func ndResponderFlowMods() (turn, answer *FlowMod) {
	vipMAC := [6]byte{2, 0, 0, 0, 1, 0}
	match := func(icmpv6Type uint8) Match {
		return Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPProto(58), MatchICMPv6Type(icmpv6Type), MatchIPv6NDTarget(vip6)}}
	}
	turn = &FlowMod{Priority: 520, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Match: match(135),
		Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
			ActionRegMove{NBits: 48, Src: NXMEthSrc, Dst: NXMEthDst},
			ActionSetField{Field: MatchEthSrc(vipMAC)},
			ActionRegMove{NBits: 128, Src: NXMIPv6Src, Dst: NXMIPv6Dst},
			ActionSetField{Field: MatchIPv6Src(vip6)},
			ActionSetField{Field: MatchNDOptionsType(NDOptionTargetLL)},
			ActionSetField{Field: MatchNDReserved(NDFlagSolicited | NDFlagOverride)},
			ActionSetField{Field: MatchICMPv6Type(136)},
		}}, InstructionGotoTable{TableID: 1}}}
	answer = &FlowMod{TableID: 1, Priority: 520, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Match: match(136),
		Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
			ActionSetField{Field: MatchIPv6NDTLL(vipMAC)},
			ActionOutput{Port: PortInPort},
		}}}}
	return turn, answer
}

// natV6FlowMod is natFlowMod for an IPv6 connection.
func natV6FlowMod() *FlowMod {
	client, member := netip.MustParseAddr("2001:db8::1").As16(), netip.MustParseAddr("2001:db8::2").As16()
	return &FlowMod{
		Cookie: 0x0000000100000002, IdleTimeout: 60, HardTimeout: 300, Priority: 1000,
		BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Flags: FlagSendFlowRem,
		Match: Match{OXMs: []OXM{
			MatchInPort(1), MatchEthType(0x86dd), MatchIPv6Src(client), MatchIPv6Dst(vip6),
			MatchIPProto(6), MatchTCPSrc(40000), MatchTCPDst(80),
		}},
		Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
			ActionSetField{Field: MatchEthDst([6]byte{2, 0, 0, 0, 0, 2})},
			ActionSetField{Field: MatchIPv6Dst(member)},
			ActionSetField{Field: MatchTCPDst(8080)},
			ActionOutput{Port: 3},
		}}},
	}
}

// natFlowMod is the client->member flow of one load-balanced connection:
// 7 match fields, 3 set-fields and an output.
func natFlowMod() *FlowMod {
	return &FlowMod{
		Cookie: 0x0000000100000002, IdleTimeout: 60, HardTimeout: 300, Priority: 1000,
		BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny, Flags: FlagSendFlowRem,
		Match: Match{OXMs: []OXM{
			MatchInPort(1), MatchEthType(0x0800), MatchIPProto(6),
			MatchIPv4Src([4]byte{10, 0, 0, 1}), MatchIPv4Dst([4]byte{10, 0, 0, 100}),
			MatchTCPSrc(40000), MatchTCPDst(80),
		}},
		Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
			ActionSetField{Field: MatchEthDst([6]byte{2, 0, 0, 0, 0, 2})},
			ActionSetField{Field: MatchIPv4Dst([4]byte{10, 0, 0, 2})},
			ActionSetField{Field: MatchTCPDst(8080)},
			ActionOutput{Port: 3},
		}}},
	}
}

func TestGolden_Decode(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			wire := mustGolden(t, tc.name)
			h, m, err := Decode(wire)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if h.Type != tc.msg.Type() || int(h.Length) != len(wire) {
				t.Errorf("header = %+v, want type %v length %d", h, tc.msg.Type(), len(wire))
			}
			if !reflect.DeepEqual(m, tc.msg) {
				t.Errorf("Decode:\n got %#v\nwant %#v", m, tc.msg)
			}
		})
	}
}

func TestGolden_Append(t *testing.T) {
	for _, tc := range goldenCases(t) {
		if tc.decodeOnly {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			wire := mustGolden(t, tc.name)
			h, err := ParseHeader(wire)
			if err != nil {
				t.Fatal(err)
			}
			prefix := []byte{0xaa, 0xbb} // Append must keep what is already in b
			got := Append(prefix, h.XID, tc.msg)
			if !bytes.Equal(got[:2], prefix) || !bytes.Equal(got[2:], wire) {
				t.Errorf("Append:\n got %s\nwant %s", hex.EncodeToString(got[2:]), hex.EncodeToString(wire))
			}
		})
	}
}

func TestGolden_DecodeInto(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			wire := mustGolden(t, tc.name)
			// Decode twice into one struct: the second decode must not
			// accumulate into the slices the first one filled.
			m := newMessage(tc.msg.Type())
			for range 2 {
				if _, err := DecodeInto(wire, m); err != nil {
					t.Fatalf("DecodeInto: %v", err)
				}
			}
			if !reflect.DeepEqual(m, tc.msg) {
				t.Errorf("DecodeInto:\n got %#v\nwant %#v", m, tc.msg)
			}
		})
	}
}
