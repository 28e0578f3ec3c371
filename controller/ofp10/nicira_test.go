package ofp10

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// AppendNicira writes plain 1.0 where 1.0 suffices: a flow-mod whose
// match ofp_match expresses and that selects no cookie, and messages
// other than flow stats.
func TestAppendNicira_PlainWherePossible(t *testing.T) {
	for _, tc := range goldenCases() {
		if tc.nicira {
			continue
		}
		if _, ok := tc.msg.(*ofp.MultipartRequest); ok {
			continue // flow stats requests are Nicira's
		}
		if r, ok := tc.msg.(*ofp.MultipartReply); ok {
			if _, flows := r.Body.(ofp.FlowStatsReply); flows {
				continue
			}
		}
		t.Run(tc.name, func(t *testing.T) {
			plain, err := Append(nil, 7, tc.msg)
			if err != nil {
				t.Skip("not a message 1.0 sends")
			}
			nx, err := AppendNicira(nil, 7, tc.msg)
			if err != nil || !bytes.Equal(nx, plain) {
				t.Errorf("AppendNicira = % x, %v; want Append's % x", nx, err, plain)
			}
		})
	}
}

// A flow-mod with fields ofp_match lacks goes as NXT_FLOW_MOD and decodes
// as it was: in_port maps to NXM's 16 bits where it has a 1.0 number and
// stays a 32-bit OXM where it has none; fields NXM names otherwise (the
// VLAN, IPv6, registers) pass as they are. Plain Append refuses it.
func TestAppendNicira_FlowModRoundTrip(t *testing.T) {
	ipv6 := [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}
	for _, oxms := range [][]ofp.OXM{
		{ofp.MatchInPort(ofp.PortLocal), ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchTCPFlags(ofp.TCPFlagFIN, ofp.TCPFlagFIN)},
		{ofp.MatchInPort(0x10000), ofp.MatchEthType(0x0800)},
		{ofp.MatchVLANVID(10), ofp.MatchEthType(0x86dd), ofp.MatchIPv6Dst(ipv6), ofp.MatchReg(3, 7, 0xff)},
		{ofp.MatchEthType(0x0806), ofp.MatchARPOp(2), ofp.MatchARPSHA(macHost), ofp.MatchARPTPA(vip)},
	} {
		fm := &ofp.FlowMod{Cookie: 5, Priority: 9, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: oxms}, Instructions: toController()}
		t.Run(fm.Match.String(), func(t *testing.T) {
			if _, err := Append(nil, 1, fm); err == nil {
				t.Fatal("plain Append took a match ofp_match lacks a field of")
			}
			b, err := AppendNicira(nil, 1, fm)
			if err != nil {
				t.Fatal(err)
			}
			h, m, err := Decode(b)
			if err != nil || h.Type != TypeVendor {
				t.Fatalf("Decode: %v, %+v", err, h)
			}
			if !reflect.DeepEqual(m, fm) {
				t.Errorf("round trip:\n got %#v\nwant %#v", m, fm)
			}
			if _, ok := KeyOf(b); ok {
				t.Error("KeyOf keyed an NXT_FLOW_MOD")
			}
		})
	}
}

// Adds and modifies cannot select by cookie on NXT_FLOW_MOD either.
func TestAppendNicira_Refuses(t *testing.T) {
	for name, fm := range map[string]*ofp.FlowMod{
		"cookie mask on modify": {Command: ofp.FlowModify, CookieMask: 1, OutGroup: ofp.GroupAny},
		"table 3":               {TableID: 3, OutGroup: ofp.GroupAny, Match: synPunt(ofp.TCPFlagSYN, ofp.TCPFlagSYN)},
		"goto_table": {OutGroup: ofp.GroupAny, Match: synPunt(ofp.TCPFlagSYN, ofp.TCPFlagSYN),
			Instructions: []ofp.Instruction{ofp.InstructionGotoTable{TableID: 1}}},
	} {
		if b, err := AppendNicira([]byte{0xaa}, 1, fm); err == nil || len(b) != 1 {
			t.Errorf("%s: AppendNicira = % x, %v; want an error and b unchanged", name, b, err)
		}
	}
}
