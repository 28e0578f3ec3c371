package ofp

import (
	"reflect"
	"testing"
)

// TestRoundTrip covers encodings no golden vector has: masked and foreign
// OXMs, the rarer instructions, raw actions, pointer actions.
func TestRoundTrip(t *testing.T) {
	nxmReg0 := mustOXM(t, OXMClassNXM1, 0, []byte{0, 0, 0, 7}, []byte{0, 0, 0, 0xff})
	onfTCPFlags := mustOXM(t, OXMClassExperimenter, 42, []byte{0x4f, 0x4e, 0x46, 0x00, 0x00, 0x02}, nil)
	tests := []struct {
		name string
		msg  Message
		want Message // what Decode returns, when it differs from msg
	}{
		{name: "FlowModMaskedAndForeignOXMs", msg: &FlowMod{
			Command: FlowModifyStrict, BufferID: NoBuffer, OutPort: PortAny, OutGroup: GroupAny,
			Flags: FlagCheckOverlap | FlagResetCounts | FlagNoPktCounts | FlagNoBytCounts,
			Match: Match{OXMs: []OXM{
				MatchEthType(0x0800), MatchIPv4DstMasked([4]byte{10, 0, 0, 0}, [4]byte{255, 0, 0, 0}),
				nxmReg0, onfTCPFlags,
				mustOXM(t, OXMClassBasic, OXMIPv6Src, make([]byte, 16), make([]byte, 16)),
			}},
			Instructions: []Instruction{
				InstructionMeter{MeterID: 5},
				InstructionApplyActions{},
				InstructionClearActions{},
				InstructionWriteActions{Actions: []Action{ActionOutput{Port: PortFlood}}},
				InstructionWriteMetadata{Metadata: 0xabcdef, Mask: 0xffffff},
				InstructionRaw{Type: InstructionTypeExperimenter, Data: []byte{0, 0, 0x23, 0x20}},
				InstructionGotoTable{TableID: 3},
			},
		}},
		{name: "PacketOutPointerActions", msg: &PacketOut{
			BufferID: 7, InPort: 2,
			Actions: []Action{&ActionSetField{Field: MatchEthSrc([6]byte{2, 0, 0, 0, 0, 9})},
				&ActionOutput{Port: PortInPort}, &ActionGroup{GroupID: 4}},
		}, want: &PacketOut{
			BufferID: 7, InPort: 2,
			Actions: []Action{ActionSetField{Field: MatchEthSrc([6]byte{2, 0, 0, 0, 0, 9})},
				ActionOutput{Port: PortInPort}, ActionGroup{GroupID: 4}},
		}},
		{name: "PacketOutRawActionPadded", msg: &PacketOut{
			BufferID: NoBuffer, InPort: PortController,
			Actions: []Action{ActionRaw{Type: ActionTypeExperimenter, Data: []byte{0, 0, 0x23, 0x20, 0, 1}}},
		}, want: &PacketOut{
			BufferID: NoBuffer, InPort: PortController,
			Actions: []Action{ActionRaw{Type: ActionTypeExperimenter, Data: []byte{0, 0, 0x23, 0x20, 0, 1, 0, 0, 0, 0, 0, 0}}},
		}},
		{name: "FlowStatsRequestWithMatch", msg: &MultipartRequest{Flags: MultipartRequestMore, Body: FlowStatsRequest{
			TableID: 1, OutPort: 3, OutGroup: GroupAny, Cookie: 1, CookieMask: 1,
			Match: Match{OXMs: []OXM{MatchInPort(3)}},
		}}},
		{name: "PortNameFullLength", msg: &PortStatus{Reason: PortReasonModify,
			Desc: Port{PortNo: PortLocal, Name: "sixteen-chars-xx", Config: PortConfigDown, State: PortStateLinkDown}}},
		{name: "PortNameTruncated", msg: &PortStatus{Desc: Port{Name: "a-name-longer-than-sixteen"}},
			want: &PortStatus{Desc: Port{Name: "a-name-longer-th"}}},
		{name: "HelloManyVersions", msg: &Hello{Versions: []uint8{4, 33, 200}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil {
				want = tt.msg
			}
			wire := Append(nil, 99, tt.msg)
			h, got, err := Decode(wire)
			if err != nil {
				t.Fatalf("Decode(Append(m)): %v\nwire % x", err, wire)
			}
			if h.XID != 99 || h.Type != tt.msg.Type() {
				t.Errorf("header = %+v", h)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip:\n got %#v\nwant %#v", got, want)
			}
		})
	}
}

func TestAppend_NoAlloc(t *testing.T) {
	fm := natFlowMod()
	po := &PacketOut{BufferID: NoBuffer, InPort: 1, Actions: []Action{ActionOutput{Port: 3}}, Data: arpFrame}
	tests := []struct {
		name string
		msg  Message
	}{
		{"FlowMod", fm},
		{"PacketOut", po},
		{"BarrierValue", BarrierRequest{}},
		{"EchoReply", &EchoReply{Data: []byte("x")}},
	}
	buf := make([]byte, 0, 4096)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], 1, tt.msg) })
			if allocs != 0 {
				t.Errorf("Append allocated %.0f times", allocs)
			}
		})
	}
}

func TestDecodeInto_NoAlloc(t *testing.T) {
	tests := []struct {
		name string
		msg  BodyDecoder
	}{
		{"packet_in", &PacketIn{}},
		{"packet_in_ovs", &PacketIn{}},
		{"flow_removed", &FlowRemoved{}},
		{"echo_request", &EchoRequest{}},
		{"error", &ErrorMsg{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wire := mustGolden(t, tt.name)
			if _, err := DecodeInto(wire, tt.msg); err != nil { // warm the reused slices
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := DecodeInto(wire, tt.msg); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("DecodeInto allocated %.0f times", allocs)
			}
		})
	}
}
