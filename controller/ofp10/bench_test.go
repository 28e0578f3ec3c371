package ofp10

import (
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// natFlowMod is a connection's client → member flow as the controller
// builds it, every action and instruction behind a pointer.
func natFlowMod() *ofp.FlowMod {
	sets := []ofp.ActionSetField{
		{Field: ofp.MatchEthDst([6]byte{2, 0, 0, 0, 0, 2})},
		{Field: ofp.MatchIPv4Dst([4]byte{10, 0, 0, 2})},
		{Field: ofp.MatchTCPDst(8080)},
	}
	return &ofp.FlowMod{
		Cookie: 0x0000000100000002, IdleTimeout: 60, Priority: 1000,
		BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Flags: ofp.FlagSendFlowRem,
		Match: ofp.Match{OXMs: []ofp.OXM{
			ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
			ofp.MatchIPv4Src([4]byte{10, 0, 0, 1}), ofp.MatchIPv4Dst([4]byte{10, 0, 0, 100}),
			ofp.MatchTCPSrc(40000), ofp.MatchTCPDst(80),
		}},
		Instructions: []ofp.Instruction{&ofp.InstructionApplyActions{Actions: []ofp.Action{
			&sets[0], &sets[1], &sets[2], &ofp.ActionOutput{Port: 3}}}},
	}
}

// BenchmarkAppendFlowMod is 1.0's encoding of a NAT flow, beside ofp's
// BenchmarkAppendFlowMod of the same flow in 1.3.
func BenchmarkAppendFlowMod(b *testing.B) {
	fm := natFlowMod()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = Append(buf[:0], 1, fm); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodePacketIn(b *testing.B) {
	wire, err := Append(nil, 1, &ofp.PacketIn{BufferID: ofp.NoBuffer, TotalLen: 54, Reason: ofp.ReasonAction,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(7)}}, Data: tcpFrame()})
	if err != nil {
		b.Fatal(err)
	}
	var pi ofp.PacketIn
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeInto(wire, &pi); err != nil {
			b.Fatal(err)
		}
	}
}
