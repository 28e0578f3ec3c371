package main

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// natFlows is the flow pair DESIGN.md asks for, for the connection from
// client:cport to the VIP, sent to member m.
func natFlows(client netip.Addr, cport uint16, vipMAC [6]byte, t *target, m *member) (fwd, rev *ofp.FlowMod) {
	fwd = &ofp.FlowMod{Command: ofp.FlowAdd, Priority: 1000,
		Match: ofp.Match{OXMs: []ofp.OXM{matchEthType(t.vip), ofp.MatchIPProto(6),
			matchIPSrc(client), matchIPDst(t.vip), ofp.MatchTCPSrc(cport), ofp.MatchTCPDst(t.vipPort)}},
		Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
			ofp.ActionSetField{Field: ofp.MatchEthDst(m.mac)},
			ofp.ActionSetField{Field: matchIPDst(m.ip)},
			ofp.ActionSetField{Field: ofp.MatchTCPDst(m.port)},
			ofp.ActionOutput{Port: m.ofPort},
		}}}}
	rev = &ofp.FlowMod{Command: ofp.FlowAdd, Priority: 1000,
		Match: ofp.Match{OXMs: []ofp.OXM{matchEthType(t.vip), ofp.MatchIPProto(6),
			matchIPSrc(m.ip), matchIPDst(client), ofp.MatchTCPSrc(m.port), ofp.MatchTCPDst(cport)}},
		Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
			ofp.ActionSetField{Field: ofp.MatchEthSrc(vipMAC)},
			ofp.ActionSetField{Field: matchIPSrc(t.vip)},
			ofp.ActionSetField{Field: ofp.MatchTCPSrc(t.vipPort)},
			ofp.ActionOutput{Port: clientPort},
		}}}}
	return fwd, rev
}

// setAction replaces the action at i of a flow's apply-actions.
func setAction(fm *ofp.FlowMod, i int, a ofp.Action) {
	apply := fm.Instructions[0].(ofp.InstructionApplyActions)
	actions := append([]ofp.Action(nil), apply.Actions...)
	if a == nil {
		actions = append(actions[:i], actions[i+1:]...)
	} else {
		actions[i] = a
	}
	fm.Instructions = []ofp.Instruction{ofp.InstructionApplyActions{Actions: actions}}
}

func TestCheckFlows(t *testing.T) {
	vipMAC := [6]byte{2, 0xaa, 0, 0, 0, 1}
	tests := []struct {
		name    string
		member  int // the member the packet-out went to
		edit    func(t *target, fwd, rev *ofp.FlowMod)
		wantErr string
	}{
		{"OK", 1, func(*target, *ofp.FlowMod, *ofp.FlowMod) {}, ""},
		{"OKPortsLeftAlone", 1, func(_ *target, fwd, rev *ofp.FlowMod) {
			setAction(fwd, 2, nil)
			setAction(rev, 2, nil)
		}, ""},
		{"ErrOtherMemberThanPacketOut", 0, func(*target, *ofp.FlowMod, *ofp.FlowMod) {}, "client→VIP flow"},
		{"ErrWrongOutPort", 1, func(_ *target, fwd, _ *ofp.FlowMod) {
			setAction(fwd, 3, ofp.ActionOutput{Port: 7})
		}, "client→VIP flow"},
		{"ErrNoEthDst", 1, func(_ *target, fwd, _ *ofp.FlowMod) { setAction(fwd, 0, nil) }, "client→VIP flow"},
		{"ErrWrongMemberPort", 1, func(_ *target, fwd, _ *ofp.FlowMod) {
			setAction(fwd, 2, ofp.ActionSetField{Field: ofp.MatchTCPDst(81)})
		}, "client→VIP flow"},
		{"ErrReverseKeepsMemberIP", 1, func(_ *target, _, rev *ofp.FlowMod) { setAction(rev, 1, nil) }, "member→client flow"},
		{"ErrReverseWrongMAC", 1, func(_ *target, _, rev *ofp.FlowMod) {
			setAction(rev, 0, ofp.ActionSetField{Field: ofp.MatchEthSrc([6]byte{2, 0, 0, 0, 0, 9})})
		}, "member→client flow"},
		{"ErrReverseToMemberPort", 1, func(_ *target, _, rev *ofp.FlowMod) {
			setAction(rev, 3, ofp.ActionOutput{Port: memberPort0})
		}, "member→client flow"},
		{"ErrNoReverse", 1, func(_ *target, _, rev *ofp.FlowMod) { rev.Command = ofp.FlowDelete }, "no member→client flow-mod"},
		{"ErrForwardMatchesOtherClient", 1, func(_ *target, fwd, _ *ofp.FlowMod) {
			fwd.Match.OXMs[4] = ofp.MatchTCPSrc(clientPortBase + 1)
		}, "no client→VIP flow-mod"},
		{"ErrForwardMatchesOtherFamily", 1, func(_ *target, fwd, _ *ofp.FlowMod) {
			fwd.Match.OXMs[0] = ofp.MatchEthType(0x0806)
		}, "no client→VIP flow-mod"},
		{"ErrReverseMatchesOtherMember", 1, func(t *target, _, rev *ofp.FlowMod) {
			rev.Match.OXMs[2] = matchIPSrc(t.members[2].ip)
		}, "no member→client flow-mod"},
	}
	for _, tt := range tests {
		for _, f := range testFamilies {
			t.Run(tt.name+"/"+f.name, func(t *testing.T) {
				testCheckFlows(t, f, vipMAC, tt.member, tt.edit, tt.wantErr)
			})
		}
	}
}

func testCheckFlows(t *testing.T, f testFamily, vipMAC [6]byte, member int, edit func(t *target, fwd, rev *ofp.FlowMod), wantErr string) {
	r := &run{t: f.target(3)}
	s := &fakeSwitch{run: r, base: clientBase(3), vipMAC: vipMAC}
	fwd, rev := natFlows(s.clientIP(), clientPortBase, vipMAC, &r.t, &r.t.members[1])
	edit(&r.t, fwd, rev)
	s.warmFlows = []*ofp.FlowMod{{Command: ofp.FlowDelete}, fwd, rev}
	flows, err := s.checkFlows(member)
	switch {
	case wantErr == "" && err != nil:
		t.Fatalf("checkFlows: %v", err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Fatalf("checkFlows = %v, want an error about %q", err, wantErr)
	case err == nil && (len(flows) != 2 || flows[0] != fwd.String() || flows[1] != rev.String()):
		t.Errorf("checkFlows rendered %q, want the forward and the reverse flow", flows)
	}
}
