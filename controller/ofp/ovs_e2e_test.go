//go:build e2e

package ofp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ovsParse runs `ovs-ofctl ofp-parse`, Open vSwitch's own decoder, on wire.
func ovsParse(tb testing.TB, wire []byte) string {
	tb.Helper()
	bin, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		tb.Skip("ovs-ofctl not installed")
	}
	path := filepath.Join(tb.TempDir(), "msg.bin")
	if err := os.WriteFile(path, wire, 0o600); err != nil {
		tb.Fatal(err)
	}
	out, err := exec.Command(bin, "ofp-parse", path).CombinedOutput()
	if err != nil {
		tb.Fatalf("ovs-ofctl ofp-parse: %v\n%s", err, out)
	}
	return string(out)
}

// TestOVS_ParsesGolden checks every golden vector against OVS 3.1's
// decoder, an implementation independent of this one.
func TestOVS_ParsesGolden(t *testing.T) {
	// Vectors OVS cannot fully decode, on purpose: Ryu's flow-mod sets an
	// OF1.4 field, and error/experimenter payloads are not OF messages.
	partial := map[string]bool{"flow_mod": true, "error": true, "error_experimenter": true, "experimenter": true}
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			out := ovsParse(t, mustGolden(t, tc.name))
			if !partial[tc.name] && strings.Contains(out, "error") {
				t.Fatalf("OVS could not decode the vector:\n%s", out)
			}
			var want []string
			switch m := tc.msg.(type) {
			case *FlowMod:
				if !partial[tc.name] {
					want = append(want, m.Match.String())
					if m.Command == FlowAdd {
						want = append(want, "actions="+FormatInstructions(m.Instructions))
					}
				}
			case *PacketIn:
				want = append(want, m.Match.String())
			case *FlowRemoved:
				want = append(want, m.Match.String())
			case *MultipartReply:
				if r, ok := m.Body.(FlowStatsReply); ok {
					for _, s := range r.Stats {
						line := "priority=" + strconv.Itoa(int(s.Priority))
						if ms := s.Match.String(); ms != "" {
							line += "," + ms
						}
						want = append(want, line+" actions="+FormatInstructions(s.Instructions))
					}
				}
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("OVS output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestOVS_RendersLikeUs encodes flows that exercise many field and action
// formats and checks that OVS decodes them to the strings we render.
func TestOVS_RendersLikeUs(t *testing.T) {
	ipv6 := mustOXM(t, OXMClassBasic, OXMIPv6Dst,
		[]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}, nil)
	flows := []*FlowMod{
		natFlowMod(),
		{Priority: 10, Match: Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPProto(17),
			MatchIPv4SrcMasked([4]byte{192, 168, 0, 0}, [4]byte{255, 255, 0, 0}), MatchUDPDst(53)}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
				ActionSetField{Field: MatchUDPDst(5353)}, ActionOutput{Port: PortNormal}}}}},
		{Priority: 20, Match: Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPProto(1),
			MatchICMPv4Type(8), MatchICMPv4Code(0)}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
				ActionOutput{Port: PortController, MaxLen: ControllerMaxLenNoBuffer}}}}},
		{Priority: 30, Match: Match{OXMs: []OXM{MatchInPort(PortLocal), MatchEthType(0x0806),
			MatchARPOp(1), MatchARPTPA([4]byte{10, 0, 0, 100})}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
				ActionOutput{Port: PortController, MaxLen: 128}}}}},
		{Priority: 40, Match: Match{OXMs: []OXM{MatchVLANVID(100), MatchEthDst([6]byte{2, 0, 0, 0, 0, 1})}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
				ActionPopVLAN{}, ActionOutput{Port: 4}}}}},
		{Priority: 50, Match: Match{OXMs: []OXM{MatchInPort(2)}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
				ActionPushVLAN{EtherType: 0x8100}, ActionSetField{Field: MatchVLANVID(7)},
				ActionOutput{Port: PortFlood}}}}},
		{Priority: 60, Match: Match{OXMs: []OXM{MatchEthType(0x0800),
			MatchIPv4DstMasked([4]byte{10, 0, 0, 0}, [4]byte{255, 0, 255, 0})}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
				ActionDecNwTTL{}, ActionSetField{Field: MatchEthSrc([6]byte{2, 0, 0, 0, 0, 0xaa})},
				ActionOutput{Port: PortInPort}}}}},
		{Priority: 70, Match: Match{OXMs: []OXM{MatchMetadata(0x1f)}},
			Instructions: []Instruction{InstructionWriteActions{Actions: []Action{ActionOutput{Port: PortAll}}},
				InstructionGotoTable{TableID: 2}}},
		{Priority: 80, Match: Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPProto(6), ipv6, MatchTCPDst(443)}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{ActionOutput{Port: PortLocal}}}}},
		{Priority: 90, Match: Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPProto(6),
			MatchIPv4Dst([4]byte{10, 0, 0, 100}), MatchTCPDst(80)}},
			Instructions: []Instruction{InstructionApplyActions{Actions: []Action{
				ActionSetField{Field: MatchIPv4Src([4]byte{10, 0, 0, 100})},
				ActionSetField{Field: MatchTCPSrc(80)}, ActionGroup{GroupID: 3}}}}},
		{Priority: 0},
	}
	for _, fm := range flows {
		if fm.BufferID == 0 {
			fm.BufferID, fm.OutPort, fm.OutGroup = NoBuffer, PortAny, GroupAny
		}
		t.Run(fm.Match.String(), func(t *testing.T) {
			out := ovsParse(t, Append(nil, 1, fm))
			line := "ADD priority=" + strconv.Itoa(int(fm.Priority))
			if ms := fm.Match.String(); ms != "" {
				line += "," + ms
			}
			for _, w := range []string{line + " ", "actions=" + FormatInstructions(fm.Instructions)} {
				if !strings.Contains(out, w) {
					t.Errorf("OVS output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
