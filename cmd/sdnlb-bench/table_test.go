package main

import (
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

func puntFlow(cookie uint64, prio uint16, oxms ...ofp.OXM) *ofp.FlowMod {
	return &ofp.FlowMod{
		Command: ofp.FlowAdd, Cookie: cookie, Priority: prio, Match: ofp.Match{OXMs: oxms},
		Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
			ofp.ActionOutput{Port: ofp.PortController, MaxLen: ofp.ControllerMaxLenNoBuffer},
		}}},
	}
}

func TestLookupPunt(t *testing.T) {
	vip := [4]byte{10, 99, 0, 100}
	mods := []*ofp.FlowMod{
		puntFlow(0xa0, 0),
		puntFlow(0xa1, 500, ofp.MatchEthType(0x0806), ofp.MatchARPOp(1), ofp.MatchARPTPA(vip)),
		puntFlow(0xa2, 500, ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchIPv4Dst(vip), ofp.MatchTCPDst(80)),
		puntFlow(0xa3, 400, ofp.MatchEthType(0x0800), ofp.MatchIPv4DstMasked([4]byte{10, 99, 0, 0}, [4]byte{255, 255, 255, 0})),
		// Not a punt: must not shadow anything in the fake table.
		{Command: ofp.FlowAdd, Cookie: 0xb0, Priority: 900, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800)}}},
	}
	var flows []ctlFlow
	for _, fm := range mods {
		flows = applyFlowMod(flows, fm)
	}
	mustFrame := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	client := clientBase(0)
	tests := []struct {
		name       string
		frame      []byte
		wantReason uint8
		wantCookie uint64
	}{
		{"SYNToVIP", mustFrame(synFrame(testClientMAC, testVIPMAC, client, testVIP, 1024, 80)), ofp.ReasonAction, 0xa2},
		{"SYNToOtherPortMasked", mustFrame(synFrame(testClientMAC, testVIPMAC, client, testVIP, 1024, 443)), ofp.ReasonAction, 0xa3},
		{"SYNElsewhere", mustFrame(synFrame(testClientMAC, testVIPMAC, client, ipU32([4]byte{10, 1, 1, 1}), 1024, 80)), ofp.ReasonNoMatch, 0xa0},
		{"ARPForVIP", mustFrame(arpFrame(1, broadcastMAC, testClientMAC, client, zeroMAC, testVIP)), ofp.ReasonAction, 0xa1},
		{"ARPForOther", mustFrame(arpFrame(1, broadcastMAC, testClientMAC, client, zeroMAC, client+1)), ofp.ReasonNoMatch, 0xa0},
		{"ARPReplyFromVIP", mustFrame(arpFrame(2, testClientMAC, testVIPMAC, testVIP, testClientMAC, client)), ofp.ReasonNoMatch, 0xa0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, cookie := lookupPunt(flows, clientPort, tt.frame)
			if reason != tt.wantReason || cookie != tt.wantCookie {
				t.Errorf("lookupPunt = reason %d cookie %#x, want %d %#x", reason, cookie, tt.wantReason, tt.wantCookie)
			}
		})
	}

	t.Run("DeleteByCookieMask", func(t *testing.T) {
		left := applyFlowMod(append([]ctlFlow(nil), flows...), &ofp.FlowMod{Command: ofp.FlowDelete, Cookie: 0xa0, CookieMask: 0xf0})
		reason, cookie := lookupPunt(left, clientPort, tests[0].frame)
		if len(left) != 0 || reason != ofp.ReasonNoMatch || cookie != noFlowCookie {
			t.Errorf("after deleting cookie 0xa0/0xf0: %d flows left, reason %d cookie %#x", len(left), reason, cookie)
		}
	})
	t.Run("DeleteStrict", func(t *testing.T) {
		del := *mods[2]
		del.Command = ofp.FlowDeleteStrict
		del.CookieMask = ^uint64(0)
		left := applyFlowMod(append([]ctlFlow(nil), flows...), &del)
		if reason, cookie := lookupPunt(left, clientPort, tests[0].frame); len(left) != 3 || reason != ofp.ReasonAction || cookie != 0xa3 {
			t.Errorf("after a strict delete: %d flows, reason %d cookie %#x; want 3 flows and the masked flow 0xa3", len(left), reason, cookie)
		}
	})
	t.Run("AddReplaces", func(t *testing.T) {
		again := *mods[1]
		again.Cookie = 0xc1
		left := applyFlowMod(append([]ctlFlow(nil), flows...), &again)
		if _, cookie := lookupPunt(left, clientPort, tests[3].frame); len(left) != len(flows) || cookie != 0xc1 {
			t.Errorf("re-adding a flow: %d flows (want %d), cookie %#x (want 0xc1)", len(left), len(flows), cookie)
		}
	})
}
