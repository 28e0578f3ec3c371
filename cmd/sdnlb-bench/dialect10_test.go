package main

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

// checkByModel10 is checkByHand through ofp10.Decode and oftable.
func checkByModel10(t *target, msg []byte) (int, error) {
	_, m, err := ofp10.Decode(msg)
	if err != nil {
		return -1, err
	}
	po := m.(*ofp.PacketOut)
	return memberByModel(t, po.InPort, po.Data, po.Actions)
}

// The 1.0 hand parser stays on the hot path; this keeps its verdict the
// one ofp10 and the shared flow-table model give.
func TestPacketOutCheck10_AgreesWithOftable(t *testing.T) {
	tg := ipv4.target(3)
	frame := natSYN(t, &tg)
	for _, tt := range checkCases(&tg) {
		t.Run(tt.name, func(t *testing.T) {
			msg := mustAppend10(t, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: clientPort, Actions: tt.actions, Data: frame})
			hand, err := checkByHand(&tg, dialect10{}, msg)
			if err != nil {
				t.Fatalf("by hand: %v", err)
			}
			model, err := checkByModel10(&tg, msg)
			if err != nil {
				t.Fatalf("through ofp10 and oftable: %v", err)
			}
			if hand != tt.want || model != tt.want {
				t.Errorf("%s: member %d by hand, %d through ofp10 and oftable; want %d", ofp.FormatActions(tt.actions), hand, model, tt.want)
			}
		})
	}
}

func TestParsePacketOut10(t *testing.T) {
	tg := ipv4.target(3)
	frame := natSYN(t, &tg)
	memberMAC := [6]byte{2, 0x5d, 0xb0, 10, 99, 1}
	nat := mustAppend10(t, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: clientPort, Data: frame, Actions: []ofp.Action{
		ofp.ActionSetField{Field: ofp.MatchEthDst(memberMAC)},
		ofp.ActionSetField{Field: ofp.MatchIPv4Dst([4]byte{10, 99, 0, 1})},
		ofp.ActionSetField{Field: ofp.MatchTCPDst(8080)},
		ofp.ActionOutput{Port: 3},
	}})
	reverse := mustAppend10(t, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: memberPort0, Data: frame, Actions: []ofp.Action{
		ofp.ActionSetField{Field: ofp.MatchEthSrc(memberMAC)},
		ofp.ActionSetField{Field: ofp.MatchIPv4Src([4]byte{10, 99, 0, 100})},
		ofp.ActionSetField{Field: ofp.MatchTCPSrc(80)},
		ofp.ActionOutput{Port: clientPort},
	}})
	flood := mustAppend10(t, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: ofp.PortController,
		Actions: []ofp.Action{ofp.ActionOutput{Port: ofp.PortFlood}}, Data: frame})
	const actionsOff = ofp.HeaderLen + 8
	patched := func(msg []byte, off int, v uint16) []byte {
		b := slices.Clone(msg)
		binary.BigEndian.PutUint16(b[off:], v)
		return b
	}
	// OFPAT_SET_VLAN_VID, which the parser skips (and ofp10 refuses).
	vlan := patched(flood, actionsOff, 1)

	tests := []struct {
		name    string
		msg     []byte
		want    rewrite
		wantErr bool
	}{
		{"NAT", nat, rewrite{
			ethDst: memberMAC, ipDst: netip.AddrFrom4([4]byte{10, 99, 0, 1}), tcpDst: 8080, outPort: 3,
			outputs: 1, has: 1<<oxmEthDst | 1<<oxmIPv4Dst | 1<<oxmTCPDst,
		}, false},
		{"Reverse", reverse, rewrite{
			ethSrc: memberMAC, ipSrc: netip.AddrFrom4([4]byte{10, 99, 0, 100}), tcpSrc: 80, outPort: clientPort,
			outputs: 1, has: 1<<oxmEthSrc | 1<<oxmIPv4Src | 1<<oxmTCPSrc,
		}, false},
		{"Flood", flood, rewrite{outPort: ofp.PortFlood, outputs: 1}, false},
		{"OtherActionSkipped", vlan, rewrite{}, false},
		{"ErrShort", nat[:actionsOff-1], rewrite{}, true},
		{"ErrActionsPastEnd", nat[:actionsOff+20], rewrite{}, true},
		{"ErrActionLength", patched(nat, actionsOff+2, 12), rewrite{}, true},
		{"ErrSetDLDstOf8", patched(nat, actionsOff+2, 8), rewrite{}, true},
		{"ErrOutputOf16", patched(flood, actionsOff+2, 16), rewrite{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rw rewrite
			got, err := parsePacketOut10(tt.msg, &rw)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %t", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if rw != tt.want {
				t.Errorf("rewrite = %s (%+v), want %s", describe(&rw), rw, describe(&tt.want))
			}
			if !bytes.Equal(got, frame) {
				t.Errorf("frame = %x, want %x", got, frame)
			}
		})
	}
}

// The setup path allocates nothing in any version and family: an
// embedded run counts the tool's allocations in the controller's per
// setup.
func TestFakeSwitch_HandlePacketOutAllocatesNothing(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name(), func(t *testing.T) {
			of := mode.of
			s, _ := pipeSwitchIn(t, of, mode.family)
			s.measuring, s.measureFrom = true, 1
			tg := &s.run.t
			frame, err := synFrame(testClientMAC, testVIPMAC, s.clientIP(), tg.vip, clientPortBase+1, tg.vipPort)
			if err != nil {
				t.Fatal(err)
			}
			msg, err := of.appendMsg(nil, 1, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: clientPort,
				Actions: natActions(&tg.members[1]), Data: frame})
			if err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				s.ring[1&s.mask] = pending{seq: 2} // setup 1 in flight
				s.outstanding++
				if err := s.handlePacketOut(msg); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 || s.stats.setups == 0 || s.stats.badRewrite != 0 {
				t.Errorf("%v allocations per packet-out, %d setups, %d bad rewrites; want none, some, none", allocs, s.stats.setups, s.stats.badRewrite)
			}
		})
	}
}
