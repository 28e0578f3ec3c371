package main

import (
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// natFlows is the flow pair DESIGN.md asks for, for the connection from
// client:cport to the VIP, sent to member m.
func natFlows(client uint32, cport uint16, vipMAC [6]byte, t *target, m *member) (fwd, rev *ofp.FlowMod) {
	ip := func(v uint32) [4]byte { return [4]byte(ip4(v).To4()) }
	fwd = &ofp.FlowMod{Command: ofp.FlowAdd, Priority: 1000,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
			ofp.MatchIPv4Src(ip(client)), ofp.MatchIPv4Dst(ip(t.vipIP)), ofp.MatchTCPSrc(cport), ofp.MatchTCPDst(t.vipPort)}},
		Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
			ofp.ActionSetField{Field: ofp.MatchEthDst(m.mac)},
			ofp.ActionSetField{Field: ofp.MatchIPv4Dst(ip(m.ip))},
			ofp.ActionSetField{Field: ofp.MatchTCPDst(m.port)},
			ofp.ActionOutput{Port: m.ofPort},
		}}}}
	rev = &ofp.FlowMod{Command: ofp.FlowAdd, Priority: 1000,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
			ofp.MatchIPv4Src(ip(m.ip)), ofp.MatchIPv4Dst(ip(client)), ofp.MatchTCPSrc(m.port), ofp.MatchTCPDst(cport)}},
		Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
			ofp.ActionSetField{Field: ofp.MatchEthSrc(vipMAC)},
			ofp.ActionSetField{Field: ofp.MatchIPv4Src(ip(t.vipIP))},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &run{t: newTarget([4]byte{10, 99, 0, 100}, 80, [4]byte{10, 99, 0, 1}, 3)}
			s := &fakeSwitch{run: r, base: clientBase(3), vipMAC: vipMAC}
			fwd, rev := natFlows(s.base, clientPortBase, vipMAC, &r.t, &r.t.members[1])
			tt.edit(&r.t, fwd, rev)
			s.warmFlows = []*ofp.FlowMod{{Command: ofp.FlowDelete}, fwd, rev}
			flows, err := s.checkFlows(tt.member)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("checkFlows: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("checkFlows = %v, want an error about %q", err, tt.wantErr)
			case err == nil && (len(flows) != 2 || flows[0] != fwd.String() || flows[1] != rev.String()):
				t.Errorf("checkFlows rendered %q, want the forward and the reverse flow", flows)
			}
		})
	}
}
