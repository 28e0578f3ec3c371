package ofp10

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// TestRoundTrip: every 1.3-model message 1.0 can express decodes back
// from its 1.0 encoding unchanged, passed as T or *T.
func TestRoundTrip(t *testing.T) {
	msgs := []ofp.Message{
		ofp.GetConfigRequest{},
		&ofp.GetConfigReply{Flags: ofp.ConfigFragReasm, MissSendLen: ofp.ControllerMaxLenNoBuffer},
		&ofp.EchoRequest{Data: []byte{1, 2, 3}},
		&ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBufferUnknown, Data: []byte{1, 0, 0, 8, 0, 0, 0, 1}},
		&ofp.ErrorMsg{ErrType: ofp.ErrTypeFlowModFailed, Code: ofp.FlowModFailedUnknown},
		&ofp.MultipartRequest{Body: ofp.PortStatsRequest{PortNo: 7}},
		&ofp.MultipartReply{Body: ofp.FlowStatsReply{}},
		&ofp.PacketOut{BufferID: 12, InPort: 3, Actions: []ofp.Action{
			ofp.ActionOutput{Port: ofp.PortController, MaxLen: 128},
			ofp.ActionSetField{Field: ofp.MatchIPv4Dst(vip)},
			ofp.ActionOutput{Port: ofp.PortTable}}},
		&ofp.FlowMod{Command: ofp.FlowModifyStrict, Cookie: 9, Priority: 7, BufferID: 5, OutPort: 2,
			OutGroup: ofp.GroupAny, Flags: ofp.FlagCheckOverlap,
			Match: ofp.Match{OXMs: []ofp.OXM{
				ofp.MatchEthType(0x0806), ofp.MatchARPOp(2),
				ofp.MatchARPSPA([4]byte{10, 0, 0, 1}),
				ofp.MatchIPv4DstMasked([4]byte{10, 1, 0, 0}, [4]byte{255, 255, 0, 0}), // reset below
			}}},
		&ofp.FlowMod{Priority: 1, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchVLANVID(10), ofp.MatchVLANPCP(5),
				mustOXM(ofp.OXMIPDSCP, []byte{46}, nil), ofp.MatchIPProto(17), ofp.MatchUDPDst(53)}},
			Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
				ofp.ActionSetField{Field: ofp.MatchUDPDst(5353)}}}}},
		&ofp.FlowRemoved{Reason: ofp.RemovedDelete, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(ofp.PortLocal)}}},
		&FeaturesReply{Ports: []ofp.Port{port2Blocked}},
	}
	// ARP with an ipv4 field is not a valid match; give it an ARP one.
	msgs[8].(*ofp.FlowMod).Match.OXMs[3] = mustOXM(ofp.OXMARPTPA, []byte{10, 1, 0, 0}, []byte{255, 255, 0, 0})
	cases := goldenCases()
	for _, m := range msgs {
		cases = append(cases, goldenCase{msg: m})
	}
	for _, tc := range cases {
		m := tc.msg
		b, err := tc.append(nil, 42)
		if err != nil {
			t.Errorf("Append %#v: %v", m, err)
			continue
		}
		h, got, err := Decode(b)
		if err != nil || h.XID != 42 {
			t.Errorf("Decode of %T: %v, header %+v", m, err, h)
			continue
		}
		want := m
		if v := reflect.ValueOf(m); v.Kind() != reflect.Pointer {
			p := reflect.New(v.Type()) // Decode returns pointers
			p.Elem().Set(v)
			want = p.Interface().(ofp.Message)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip:\n got %#v\nwant %#v", got, want)
		}
	}
}

// TestAppend_Unsupported: what 1.0 cannot express is an error naming
// it, wrapping ofp.ErrUnsupported, and b comes back unchanged.
func TestAppend_Unsupported(t *testing.T) {
	add := func(match []ofp.OXM, instructions ...ofp.Instruction) *ofp.FlowMod {
		return &ofp.FlowMod{Priority: 1, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: match}, Instructions: instructions}
	}
	apply := func(actions ...ofp.Action) ofp.Instruction {
		return ofp.InstructionApplyActions{Actions: actions}
	}
	ip := []ofp.OXM{ofp.MatchEthType(0x0800)}
	tcp := []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6)}
	udp := []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(17)}
	tests := []struct {
		name string
		msg  ofp.Message
		want string // in the error text
	}{
		{"goto_table", add(nil, apply(ofp.ActionOutput{Port: 1}), ofp.InstructionGotoTable{TableID: 9}), "goto_table:9"},
		{"write_actions", add(nil, ofp.InstructionWriteActions{}), "instruction"},
		{"two apply_actions", add(nil, apply(), apply()), "more than one apply_actions"},
		{"group action", add(nil, apply(ofp.ActionGroup{GroupID: 1})), "group:1"},
		{"ct action", add(ip, apply(ofp.ActionCT{Table: ofp.CTRecircNone})), "ct("},
		{"set_field ip_proto", add(ip, apply(ofp.ActionSetField{Field: ofp.MatchIPProto(6)})), "set_field"},
		{"tcp set_field in udp flow", add(udp, apply(ofp.ActionSetField{Field: ofp.MatchTCPDst(1)})), "does not match its protocol"},
		{"tcp set_field in packet-out", &ofp.PacketOut{InPort: ofp.PortController,
			Actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchTCPDst(1)}}}, "does not match its protocol"},
		{"metadata match", add([]ofp.OXM{ofp.MatchMetadata(1)}), "metadata"},
		{"ct_state match", add([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk)}), "ct_state"},
		{"masked eth_dst", add([]ofp.OXM{mustOXM(ofp.OXMEthDst, make([]byte, 6), []byte{1, 0, 0, 0, 0, 0})}), "masked"},
		{"non-prefix mask", add(append(ip, ofp.MatchIPv4SrcMasked(vip, [4]byte{255, 0, 255, 0}))), "prefixes"},
		{"ipv4 without eth_type", add([]ofp.OXM{ofp.MatchIPv4Dst(vip)}), "without eth_type 0x0800"},
		{"tcp_dst without ip_proto", add(append(ip, ofp.MatchTCPDst(80))), "without ip_proto 6"},
		{"udp_dst in tcp flow", add(append(tcp, ofp.MatchUDPDst(80))), "without ip_proto 17"},
		{"vlan_pcp alone", add([]ofp.OXM{ofp.MatchVLANPCP(1)}), "without a vlan_vid"},
		{"duplicate field", add([]ofp.OXM{ofp.MatchInPort(1), ofp.MatchInPort(2)}), "twice"},
		{"wide port", add([]ofp.OXM{ofp.MatchInPort(0x10000)}), "port 65536"},
		{"table 9", &ofp.FlowMod{TableID: 9, OutGroup: ofp.GroupAny}, "table 9"},
		{"delete in table 9", &ofp.FlowMod{TableID: 9, Command: ofp.FlowDelete, OutGroup: ofp.GroupAny}, "table 9"},
		{"cookie mask on add", &ofp.FlowMod{Cookie: 1, CookieMask: 1, OutGroup: ofp.GroupAny}, "cookie_mask"},
		{"delete by cookie", &ofp.FlowMod{Command: ofp.FlowDelete, TableID: ofp.TableAll, Cookie: 1 << 32,
			CookieMask: 0xffffffff00000000, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}, "cookie_mask"},
		{"delete by out_group", &ofp.FlowMod{Command: ofp.FlowDelete, OutGroup: 1}, "out_group"},
		{"reset_counts", &ofp.FlowMod{Flags: ofp.FlagResetCounts}, "flags"},
		{"flow stats by cookie", &ofp.MultipartRequest{Body: ofp.FlowStatsRequest{TableID: ofp.TableAll,
			OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, CookieMask: 1}}, "cookie_mask"},
		{"port desc", &ofp.MultipartRequest{Body: ofp.PortDescRequest{}}, "features reply"},
		{"group stats", &ofp.MultipartRequest{Body: ofp.GroupStatsRequest{GroupID: ofp.GroupAll}}, "multipart type 6"},
		{"group mod", &ofp.GroupMod{}, "GROUP_MOD"},
		{"role request", &ofp.RoleRequest{}, "ROLE_REQUEST"},
		{"hello 1.3 only", &ofp.Hello{Versions: []uint8{4}}, "version 1.0"},
		{"bad match error", &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadMatch, Code: ofp.BadMatchBadField}, "BAD_MATCH"},
		{"packet-in from table 1", &ofp.PacketIn{TableID: 1, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(1)}}}, "table 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte{0xaa}
			b, err := Append(prefix, 1, tc.msg)
			if !errors.Is(err, ofp.ErrUnsupported) {
				t.Fatalf("Append = %v, want ErrUnsupported", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not name %q", err, tc.want)
			}
			if len(b) != 1 || b[0] != 0xaa {
				t.Errorf("Append changed b: % x", b)
			}
		})
	}
}

func TestDecode_Malformed(t *testing.T) {
	flowMod := mustGolden(t, "flow_mod_nat")
	withLen := func(b []byte) []byte {
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		return b
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ofp.ErrShort},
		{"short header", []byte{1, 0, 0}, ofp.ErrShort},
		{"length disagrees", []byte{1, 2, 0, 9, 0, 0, 0, 0}, ofp.ErrBadLength},
		{"1.3 echo", []byte{4, 2, 0, 8, 0, 0, 0, 0}, ofp.ErrBadVersion},
		{"truncated flow mod", withLen(append([]byte(nil), flowMod[:50]...)), ofp.ErrShort},
		{"action cut short", withLen(append([]byte(nil), flowMod[:len(flowMod)-4]...)), ofp.ErrShort},
		{"action longer than the message", withLen(append(append([]byte(nil), flowMod[:72]...), 0, 0, 0, 16, 0, 1, 0, 0)), ofp.ErrBadLength},
		{"action length 0", withLen(append(append([]byte(nil), flowMod[:72]...), 0, 0, 0, 0, 0, 0, 0, 0)), ofp.ErrBadLength},
		{"unknown action", withLen(append(append([]byte(nil), flowMod[:72]...), 0, 11, 0, 8, 0, 0, 0, 0)), ofp.ErrUnsupported},
		{"vendor message", []byte{1, 4, 0, 16, 0, 0, 0, 0, 0, 0, 0x23, 0x21, 0, 0, 0, 13}, ofp.ErrUnsupported},
		{"nicira set_flow_format", []byte{1, 4, 0, 20, 0, 0, 0, 0, 0, 0, 0x23, 0x20, 0, 0, 0, 12, 0, 0, 0, 2}, ofp.ErrUnsupported},
		{"nicira header cut", []byte{1, 4, 0, 12, 0, 0, 0, 0, 0, 0, 0x23, 0x20}, ofp.ErrShort},
		{"nicira flow_mod cut", withLen(mustGolden(t, "nx_flow_mod_syn_punt")[:40]), ofp.ErrShort},
		{"nicira match past the message", withLen(mustGolden(t, "nx_flow_mod_syn_punt")[:72]), ofp.ErrBadLength},
		{"nicira match field past its match", withLen(nxMatchLen(mustGolden(t, "nx_flow_mod_syn_punt"), 42)), ofp.ErrBadLength},
		{"nicira cookie on an add", withLen(nxCookieOnAdd(t)), ofp.ErrUnsupported},
		{"nicira flow stats of another vendor", withLen(nxVendor(mustGolden(t, "nx_flow_stats_request_cookie"), 0x2321)), ofp.ErrUnsupported},
		{"nicira flow stats entry cut", withLen(mustGolden(t, "nx_flow_stats_reply")[:60]), ofp.ErrShort},
		{"nicira error", []byte{1, 1, 0, 12, 0, 0, 0, 0, 0xb0, 0xc2, 0, 0}, ofp.ErrUnsupported},
		{"queue stats", []byte{1, 17, 0, 12, 0, 0, 0, 0, 0, 5, 0, 0}, ofp.ErrUnsupported},
		{"features reply half a port", withLen(append(append([]byte(nil), mustGolden(t, "features_reply")...), 0)), ofp.ErrBadLength},
		{"barrier with a body", []byte{1, 18, 0, 9, 0, 0, 0, 0, 0}, ofp.ErrBadLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, m, err := Decode(tc.b)
			if !errors.Is(err, tc.want) || m != nil {
				t.Errorf("Decode = %T, %v; want %v", m, err, tc.want)
			}
		})
	}
}

// TestDecode_UnreadableFlowStats: an entry whose actions 1.0 cannot
// read (a Nicira vendor action) is reported apart, the rest of the reply
// decodes as usual; a malformed entry still fails the reply. A part read
// for its counters (ofp.FlowStatsPart) reads the entry with the others.
func TestDecode_UnreadableFlowStats(t *testing.T) {
	golden := mustGolden(t, "flow_stats_reply")
	const entryAt = ofp.HeaderLen + 4 // after the stats type and flags
	withFirstEntryAction := func(action []byte) []byte {
		b := append([]byte(nil), golden...)
		n := int(binary.BigEndian.Uint16(b[entryAt:]))
		b = append(b[:entryAt+n], append(action, golden[entryAt+n:]...)...)
		binary.BigEndian.PutUint16(b[entryAt:], uint16(n+len(action)))
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
		return b
	}
	resubmit := []byte{0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 14, 0xff, 0xf8, 9, 0, 0, 0} // resubmit(,9)
	_, m, err := Decode(withFirstEntryAction(resubmit))
	if err != nil {
		t.Fatal(err)
	}
	var all []ofp.FlowStats
	for _, tc := range goldenCases() {
		if tc.name == "flow_stats_reply" {
			all = tc.msg.(*ofp.MultipartReply).Body.(ofp.FlowStatsReply).Stats
		}
	}
	unreadable := all[0]
	unreadable.Instructions = nil
	want := ofp.FlowStatsReply{Stats: all[1:], Unreadable: []ofp.FlowStats{unreadable}}
	if got := m.(*ofp.MultipartReply).Body; !reflect.DeepEqual(got, want) {
		t.Errorf("decoded\n %#v\nwant\n %#v", got, want)
	}
	// Read for the counters, it is an entry like the others, in its place.
	var part ofp.FlowStatsPart
	if _, err := DecodeInto(withFirstEntryAction(resubmit), &part); err != nil || !reflect.DeepEqual(counters(part.Stats), counters(all)) {
		t.Errorf("as a FlowStatsPart (%v):\n %#v\nwant\n %#v", err, part.Stats, counters(all))
	}
	if _, _, err := Decode(withFirstEntryAction(resubmit[:12])); !errors.Is(err, ofp.ErrBadLength) {
		t.Errorf("an action claiming more bytes than it has: %v, want ErrBadLength", err)
	}
}

// TestDecode_HelloVersion: a hello decodes at any version, with its
// header version as the offer, so the caller can negotiate.
func TestDecode_HelloVersion(t *testing.T) {
	h, m, err := Decode([]byte{4, 0, 0, 16, 0, 0, 0, 1, 0, 1, 0, 8, 0, 0, 0, 0x12})
	if err != nil || h.Version != 4 || !reflect.DeepEqual(m, &ofp.Hello{Versions: []uint8{4}}) {
		t.Errorf("Decode = %+v, %#v, %v", h, m, err)
	}
}

// tcpFrame is an untagged Ethernet frame with an IPv4 TCP header.
func tcpFrame() []byte {
	f := make([]byte, 14+20+20)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	f[14] = 0x45
	f[14+9] = 6
	return f
}

// A packet-out's SET_TP_* rewrites the transport of the frame it
// carries, so its tcp or udp set_field goes by the frame's protocol.
func TestPacketOutTransportRewrite(t *testing.T) {
	po := &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: 3, Data: tcpFrame(), Actions: []ofp.Action{
		ofp.ActionSetField{Field: ofp.MatchTCPDst(8080)}, ofp.ActionOutput{Port: 1}}}
	b, err := Append(nil, 1, po)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := Decode(b)
	if err != nil || !reflect.DeepEqual(got, po) {
		t.Errorf("decoded %+v (%v), want %+v", got, err, po)
	}
	for _, frame := range [][]byte{nil, append(tcpFrame()[:23], 17)} {
		po.Data = frame
		if _, err := Append(nil, 1, po); !errors.Is(err, ofp.ErrUnsupported) {
			t.Errorf("tcp_dst rewrite of a frame of protocol %v: %v, want ErrUnsupported", frame, err)
		}
	}
}

// DecodeInto agrees with Decode for the messages it takes, and reuses the
// storage it is given.
func TestDecodeInto(t *testing.T) {
	msgs := []struct {
		msg  ofp.Message
		into ofp.Message
	}{
		{&ofp.PacketIn{BufferID: ofp.NoBuffer, TotalLen: 54, Reason: ofp.ReasonAction,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(7)}}, Data: tcpFrame()}, new(ofp.PacketIn)},
		{&ofp.FlowRemoved{Cookie: 5, Priority: 1000, Reason: ofp.RemovedIdleTimeout, IdleTimeout: 30, PacketCount: 3, ByteCount: 300,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchTCPDst(80)}}}, new(ofp.FlowRemoved)},
	}
	for _, tc := range msgs {
		b, err := Append(nil, 9, tc.msg)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := DecodeInto(b, tc.into); err != nil || h.XID != 9 || !reflect.DeepEqual(tc.into, tc.msg) {
			t.Errorf("DecodeInto %T: %+v (%v), want %+v", tc.msg, tc.into, err, tc.msg)
		}
		if n := testing.AllocsPerRun(100, func() { DecodeInto(b, tc.into) }); n != 0 {
			t.Errorf("DecodeInto %T allocates %v times with storage to reuse", tc.msg, n)
		}
		if _, err := DecodeInto(b, new(ofp.EchoRequest)); !errors.Is(err, ofp.ErrUnsupported) {
			t.Errorf("DecodeInto an echo request: %v, want ErrUnsupported", err)
		}
	}
	if _, err := DecodeInto([]byte{1, byte(TypePacketIn), 0, 12, 0, 0, 0, 1, 0, 0, 0, 0}, new(ofp.PacketIn)); !errors.Is(err, ofp.ErrShort) {
		t.Errorf("short packet-in: %v, want ErrShort", err)
	}
}

func TestTypeModel(t *testing.T) {
	for t10, want := range map[Type]ofp.Type{
		TypeHello: ofp.TypeHello, TypeVendor: ofp.TypeExperimenter, TypePacketIn: ofp.TypePacketIn,
		TypeFlowMod: ofp.TypeFlowMod, TypePortMod: ofp.TypePortMod, TypeStatsRequest: ofp.TypeMultipartRequest,
		TypeStatsReply: ofp.TypeMultipartReply, TypeBarrierReply: ofp.TypeBarrierReply,
		TypeQueueGetConfigReply: ofp.TypeQueueGetConfigReply,
	} {
		if got := t10.Model(); got != want {
			t.Errorf("1.0 type %d is %s, want %s", t10, got, want)
		}
	}
}

// KeyOf tells flows apart as a 1.0 switch does: by priority and match,
// whatever the cookie, actions or command.
func TestKeyOf(t *testing.T) {
	match := ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPv4Dst(vip)}}
	key := func(fm *ofp.FlowMod) FlowKey {
		b, err := Append(nil, 1, fm)
		if err != nil {
			t.Fatal(err)
		}
		k, ok := KeyOf(b)
		if !ok {
			t.Fatal("no key for a flow-mod")
		}
		return k
	}
	add := &ofp.FlowMod{Cookie: 1, Priority: 10, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Match: match,
		Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{ofp.ActionOutput{Port: 1}}}}}
	del := &ofp.FlowMod{Command: ofp.FlowDeleteStrict, Cookie: 2, Priority: 10, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny,
		OutGroup: ofp.GroupAny, Match: match}
	other := *add
	other.Priority = 11
	if key(add) != key(del) || key(add) == key(&other) {
		t.Error("keys do not follow priority and match alone")
	}
	if _, ok := KeyOf(ofp.Append(nil, 1, add)); ok {
		t.Error("a 1.3 flow-mod has a 1.0 key")
	}
}

// nxMatchLen is the NXT_FLOW_MOD b with match_len n.
func nxMatchLen(b []byte, n uint16) []byte {
	binary.BigEndian.PutUint16(b[ofp.HeaderLen+niciraHeaderLen+24:], n)
	return b
}

// nxCookieOnAdd is the delete-by-cookie vector turned into an add, which
// cannot select by cookie.
func nxCookieOnAdd(tb testing.TB) []byte {
	b := mustGolden(tb, "nx_flow_mod_delete_cookie")
	binary.BigEndian.PutUint16(b[ofp.HeaderLen+niciraHeaderLen+8:], uint16(ofp.FlowAdd))
	return b
}

// nxVendor is the NXST_FLOW request b with vendor id v.
func nxVendor(b []byte, v uint32) []byte {
	binary.BigEndian.PutUint32(b[ofp.HeaderLen+4:], v)
	return b
}
