package main

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

func flowTo(cookie uint64, prio uint16, ports []uint32, oxms ...ofp.OXM) *ofp.FlowMod {
	fm := &ofp.FlowMod{Command: ofp.FlowAdd, Cookie: cookie, Priority: prio, Match: ofp.Match{OXMs: oxms},
		BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}
	var actions []ofp.Action
	for _, p := range ports {
		actions = append(actions, ofp.ActionOutput{Port: p, MaxLen: ofp.ControllerMaxLenNoBuffer})
	}
	if len(actions) > 0 { // none: drop
		fm.Instructions = []ofp.Instruction{ofp.InstructionApplyActions{Actions: actions}}
	}
	return fm
}

func puntFlow(cookie uint64, prio uint16, oxms ...ofp.OXM) *ofp.FlowMod {
	return flowTo(cookie, prio, []uint32{ofp.PortController}, oxms...)
}

// mustTable applies mods to a new table.
func mustTable(tb testing.TB, mods ...*ofp.FlowMod) *oftable.Table {
	tb.Helper()
	t := oftable.New()
	for _, fm := range mods {
		if _, err := t.Apply(fm); err != nil {
			tb.Fatalf("apply %s: %v", fm, err)
		}
	}
	return t
}

// punt13 is the reason and cookie of the 1.3 packet-in for frame.
func punt13(t *oftable.Table, port uint32, frame []byte) (reason uint8, cookie uint64, err error) {
	f, err := punt(t, port, frame)
	if err != nil {
		return 0, 0, err
	}
	reason, cookie = dialect13{}.puntedBy(f)
	return reason, cookie, nil
}

func TestPunt(t *testing.T) {
	vip := [4]byte{10, 99, 0, 100}
	learnedMAC := net.HardwareAddr{0x02, 0, 0, 0, 0, 9}
	mods := []*ofp.FlowMod{
		puntFlow(0xa0, 0),
		puntFlow(0xa1, 500, ofp.MatchEthType(0x0806), ofp.MatchARPOp(1), ofp.MatchARPTPA(vip)),
		puntFlow(0xa2, 500, ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchIPv4Dst(vip), ofp.MatchTCPDst(80)),
		puntFlow(0xa3, 400, ofp.MatchEthType(0x0800), ofp.MatchIPv4DstMasked([4]byte{10, 99, 0, 0}, [4]byte{255, 255, 255, 0})),
		// Flows that take packets elsewhere. The hand model this replaced
		// skipped them and let a lower punt answer; a real switch stops
		// at them and sends no packet-in, and so does the fake switch now.
		flowTo(0xb0, 900, nil, ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchTCPDst(22)),
		flowTo(0xb1, 100, []uint32{3}, ofp.MatchEthDst([6]byte(learnedMAC))),
	}
	flows := mustTable(t, mods...)
	testVIP := netip.AddrFrom4(vip)
	client := clientIP(testVIP, clientBase(0))
	mustFrame := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	syn := func(dst netip.Addr, dport uint16) []byte {
		return mustFrame(synFrame(testClientMAC, testVIPMAC, client, dst, 1024, dport))
	}
	arp := func(op uint16, dstMAC, sha net.HardwareAddr, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) []byte {
		return mustFrame(arpFrame(op, dstMAC, sha, spa, tha, tpa))
	}
	synToVIP := syn(testVIP, 80)
	arpForVIP := arp(1, broadcastMAC, testClientMAC, client, zeroMAC, testVIP)
	tests := []struct {
		name          string
		frame         []byte
		wantReason    uint8
		wantCookie    uint64
		wantNotPunted bool
	}{
		{"SYNToVIP", synToVIP, ofp.ReasonAction, 0xa2, false},
		{"SYNToOtherPortMasked", syn(testVIP, 443), ofp.ReasonAction, 0xa3, false},
		{"SYNElsewhere", syn(netip.AddrFrom4([4]byte{10, 1, 1, 1}), 80), ofp.ReasonNoMatch, 0xa0, false},
		{"ARPForVIP", arpForVIP, ofp.ReasonAction, 0xa1, false},
		{"ARPForOther", arp(1, broadcastMAC, testClientMAC, client, zeroMAC, client.Next()), ofp.ReasonNoMatch, 0xa0, false},
		{"ARPReplyFromVIP", arp(2, testClientMAC, testVIPMAC, testVIP, testClientMAC, client), ofp.ReasonNoMatch, 0xa0, false},
		// The hand model gave these 0xa3 and the table miss 0xa0.
		{"SYNShadowedByDrop", syn(testVIP, 22), 0, 0, true},
		{"ARPReplyToLearnedMAC", arp(2, learnedMAC, testVIPMAC, testVIP, learnedMAC, client), 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, cookie, err := punt13(flows, clientPort, tt.frame)
			switch {
			case tt.wantNotPunted:
				if !errors.Is(err, errNotPunted) {
					t.Errorf("punt = reason %d cookie %#x, %v; want errNotPunted", reason, cookie, err)
				}
			case err != nil || reason != tt.wantReason || cookie != tt.wantCookie:
				t.Errorf("punt = reason %d cookie %#x, %v; want %d %#x", reason, cookie, err, tt.wantReason, tt.wantCookie)
			}
		})
	}

	t.Run("DeleteByCookieMask", func(t *testing.T) {
		left := mustTable(t, append(mods, &ofp.FlowMod{Command: ofp.FlowDelete, Cookie: 0xa0, CookieMask: 0xf0,
			TableID: ofp.TableAll, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny})...)
		reason, cookie, err := punt13(left, clientPort, synToVIP)
		if n := len(left.Flows()); n != 2 || err != nil || reason != ofp.ReasonNoMatch || cookie != noFlowCookie {
			t.Errorf("after deleting cookie 0xa0/0xf0: %d flows left, reason %d cookie %#x, %v; want the two 0xb* flows and no match", n, reason, cookie, err)
		}
	})
	t.Run("DeleteStrict", func(t *testing.T) {
		del := *mods[2]
		del.Command = ofp.FlowDeleteStrict
		del.CookieMask = ^uint64(0)
		left := mustTable(t, append(mods, &del)...)
		reason, cookie, err := punt13(left, clientPort, synToVIP)
		if n := len(left.Flows()); n != len(mods)-1 || err != nil || reason != ofp.ReasonAction || cookie != 0xa3 {
			t.Errorf("after a strict delete: %d flows, reason %d cookie %#x, %v; want %d flows and the masked flow 0xa3", n, reason, cookie, err, len(mods)-1)
		}
	})
	t.Run("AddReplaces", func(t *testing.T) {
		again := *mods[1]
		again.Cookie = 0xc1
		left := mustTable(t, append(mods, &again)...)
		_, cookie, err := punt13(left, clientPort, arpForVIP)
		if n := len(left.Flows()); n != len(mods) || err != nil || cookie != 0xc1 {
			t.Errorf("re-adding a flow: %d flows (want %d), cookie %#x, %v (want 0xc1)", n, len(mods), cookie, err)
		}
	})
	t.Run("ModifiedToDropShadows", func(t *testing.T) {
		drop := *mods[2]
		drop.Command, drop.Instructions = ofp.FlowModifyStrict, nil
		left := mustTable(t, append(mods, &drop)...)
		if reason, cookie, err := punt13(left, clientPort, synToVIP); !errors.Is(err, errNotPunted) {
			t.Errorf("0xa2 modified to drop: reason %d cookie %#x, %v; want errNotPunted, not the lower 0xa3", reason, cookie, err)
		}
	})
	t.Run("OutputAndPunt", func(t *testing.T) {
		both := mustTable(t, flowTo(0xd0, 600, []uint32{3, ofp.PortController}, ofp.MatchEthType(0x0806)))
		if reason, cookie, err := punt13(both, clientPort, arpForVIP); err != nil || reason != ofp.ReasonAction || cookie != 0xd0 {
			t.Errorf("punt = reason %d cookie %#x, %v; want %d 0xd0", reason, cookie, err, ofp.ReasonAction)
		}
	})
	t.Run("TableMissThatDrops", func(t *testing.T) {
		drop := mustTable(t, flowTo(0xe0, 0, nil))
		if reason, cookie, err := punt13(drop, clientPort, arpForVIP); !errors.Is(err, errNotPunted) {
			t.Errorf("punt = reason %d cookie %#x, %v; want errNotPunted", reason, cookie, err)
		}
	})
}

// Of two flows on a frame's way that punt it, the first gives the
// packet-in: the controller acts on the first of a real switch's two. The
// controller copies neighbour advertisements to all nodes (the answers to
// its solicitations) to itself and sends them on to its L2 table.
func TestPunt_FirstFlowThatPunts(t *testing.T) {
	l2Miss := puntFlow(0xc0, 0)
	l2Miss.TableID = 1
	flows := mustTable(t, puntFlow(0xa0, 0), ndCopyFlow(0x5d07000000000000, 1), l2Miss)
	member, mac := ipv6.firstMember, [6]byte{0x02, 0x5d, 0xb0, 0, 0, 1}
	for _, tt := range []struct {
		name       string
		frame      func() ([]byte, error)
		wantReason uint8
		wantCookie uint64
	}{
		{"AdvertisementToAllNodes", func() ([]byte, error) { return announceFrame(mac, member) }, ofp.ReasonAction, 0x5d07000000000000},
		{"Solicitation", func() ([]byte, error) { return askFrame(mac, member, member.Next()) }, ofp.ReasonNoMatch, 0xa0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := tt.frame()
			if err != nil {
				t.Fatal(err)
			}
			reason, cookie, err := punt13(flows, memberPort0, frame)
			if err != nil || reason != tt.wantReason || cookie != tt.wantCookie {
				t.Errorf("punt = reason %d cookie %#x, %v; want %d %#x", reason, cookie, err, tt.wantReason, tt.wantCookie)
			}
		})
	}
}

// ndCopyFlow is the controller's row that copies neighbour advertisements
// to all nodes to it and goes on to table next.
func ndCopyFlow(cookie uint64, next uint8) *ofp.FlowMod {
	fm := puntFlow(cookie, 400, ofp.MatchEthDst([6]byte{0x33, 0x33, 0, 0, 0, 1}), ofp.MatchEthType(ofp.EthTypeIPv6),
		ofp.MatchIPProto(ofp.IPProtoICMPv6), ofp.MatchICMPv6Type(ndAdvertisement))
	fm.Instructions = append(fm.Instructions, ofp.InstructionGotoTable{TableID: next})
	return fm
}

// A switch answers ARP for the VIP with its flows: answer reads the reply
// the client gets; a flow that only punts answers nothing.
func TestAnswer(t *testing.T) {
	vip, vipMAC := [4]byte{10, 99, 0, 100}, [6]byte(testVIPMAC)
	testVIP, client := netip.AddrFrom4(vip), clientIP(netip.AddrFrom4(vip), clientBase(0))
	request, err := arpFrame(1, broadcastMAC, testClientMAC, client, zeroMAC, testVIP)
	if err != nil {
		t.Fatal(err)
	}
	answerFlow := puntFlow(0xa1, 510, ofp.MatchEthType(0x0806), ofp.MatchARPOp(1), ofp.MatchARPTPA(vip))
	answerFlow.Instructions = []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
		ofp.ActionRegMove{NBits: 48, Src: ofp.NXMEthSrc, Dst: ofp.NXMEthDst}, ofp.ActionSetField{Field: ofp.MatchEthSrc(vipMAC)},
		ofp.ActionSetField{Field: ofp.MatchARPOp(2)},
		ofp.ActionRegMove{NBits: 48, Src: ofp.NXMARPSHA, Dst: ofp.NXMARPTHA}, ofp.ActionSetField{Field: ofp.MatchARPSHA(vipMAC)},
		ofp.ActionRegMove{NBits: 32, Src: ofp.NXMARPSPA, Dst: ofp.NXMARPTPA}, ofp.ActionSetField{Field: ofp.MatchARPSPA(vip)},
		ofp.ActionOutput{Port: ofp.PortInPort}}}}
	got, ok := answer(mustTable(t, answerFlow), clientPort, request)
	want := neighbour{about: testVIP, mac: vipMAC, peer: client}
	if !ok || got != want {
		t.Errorf("answer = %+v, %t; want %+v", got, ok, want)
	}
	if got, ok := answer(mustTable(t, puntFlow(0xa1, 500, ofp.MatchEthType(0x0806), ofp.MatchARPTPA(vip))), clientPort, request); ok {
		t.Errorf("a punt answered %+v", got)
	}
}

// A flow that punts gives OFPR_ACTION on 1.0 whatever its priority and
// match (1.0 has no table-miss flow), and a 1.0 packet-in no cookie.
func TestPuntedBy(t *testing.T) {
	tableMiss := &oftable.Flow{Cookie: 0xa0}
	arp := &oftable.Flow{Cookie: 0xa1, Priority: 500, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0806)}}}
	tests := []struct {
		name       string
		of         dialect
		f          *oftable.Flow
		wantReason uint8
		wantCookie uint64
	}{
		{"NoFlow13", dialect13{}, nil, ofp.ReasonNoMatch, noFlowCookie},
		{"TableMiss13", dialect13{}, tableMiss, ofp.ReasonNoMatch, 0xa0},
		{"Flow13", dialect13{}, arp, ofp.ReasonAction, 0xa1},
		{"NoFlow10", dialect10{}, nil, ofp.ReasonNoMatch, 0},
		{"TableMiss10", dialect10{}, tableMiss, ofp.ReasonAction, 0},
		{"Flow10", dialect10{}, arp, ofp.ReasonAction, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if reason, cookie := tt.of.puntedBy(tt.f); reason != tt.wantReason || cookie != tt.wantCookie {
				t.Errorf("puntedBy = reason %d cookie %#x, want %d %#x", reason, cookie, tt.wantReason, tt.wantCookie)
			}
		})
	}
}
