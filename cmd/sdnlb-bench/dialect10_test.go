package main

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

// flowMod10Len is a 1.0 ofp_flow_mod before its actions.
const flowMod10Len = ofp.HeaderLen + match10Len + 24

// packetOut10 is the 1.0 packet-out of the TCP frame from port in with
// actions, and the actions as ofp10 decodes them back. ofp10 writes and
// reads SET_TP_SRC/DST only in a flow that matches TCP or UDP (a 1.0
// action does not say which transport it rewrites), so the actions are
// encoded in a flow-mod matching TCP and spliced into the packet-out.
// Where ofp10 can encode the packet-out itself, the splice must give the
// same bytes.
func packetOut10(tb testing.TB, in uint32, frame []byte, actions []ofp.Action) (msg []byte, decoded []ofp.Action) {
	tb.Helper()
	fm := &ofp.FlowMod{Command: ofp.FlowAdd, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6)}}}
	if len(actions) > 0 {
		fm.Instructions = []ofp.Instruction{ofp.InstructionApplyActions{Actions: actions}}
	}
	fmMsg := mustAppend10(tb, 9, fm)
	_, m, err := ofp10.Decode(fmMsg)
	if err != nil {
		tb.Fatalf("decode the flow-mod: %v", err)
	}
	if is := m.(*ofp.FlowMod).Instructions; len(is) > 0 {
		decoded = is[0].(ofp.InstructionApplyActions).Actions
	}

	const actionsOff = ofp.HeaderLen + 8
	bare := mustAppend10(tb, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: in, Data: frame})
	acts := fmMsg[flowMod10Len:]
	msg = slices.Concat(bare[:actionsOff], acts, bare[actionsOff:])
	binary.BigEndian.PutUint16(msg[2:], uint16(len(msg)))
	binary.BigEndian.PutUint16(msg[actionsOff-2:], uint16(len(acts)))
	if direct, err := ofp10.Append(nil, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: in, Actions: actions, Data: frame}); err == nil && !bytes.Equal(direct, msg) {
		tb.Fatalf("spliced packet-out\n%x\nofp10 encodes\n%x", msg, direct)
	}
	return msg, decoded
}

// The 1.0 hand parser stays on the hot path; this keeps its verdict the
// one ofp10 and the shared flow-table model give.
func TestPacketOutCheck10_AgreesWithOftable(t *testing.T) {
	tg := newTarget([4]byte(ip4(testVIP)), 80, [4]byte{10, 99, 0, 1}, 3)
	frame := natSYN(t, &tg)
	for _, tt := range checkCases(&tg) {
		t.Run(tt.name, func(t *testing.T) {
			msg, decoded := packetOut10(t, clientPort, frame, tt.actions)
			hand, err := checkByHand(&tg, dialect10{}, msg)
			if err != nil {
				t.Fatalf("by hand: %v", err)
			}
			if model := memberByModel(&tg, clientPort, frame, decoded); hand != tt.want || model != tt.want {
				t.Errorf("%s: member %d by hand, %d through ofp10 and oftable; want %d", ofp.FormatActions(tt.actions), hand, model, tt.want)
			}
		})
	}
}

func TestParsePacketOut10(t *testing.T) {
	frame := []byte{0xde, 0xad, 0xbe, 0xef}
	memberMAC := [6]byte{2, 0x5d, 0xb0, 10, 99, 1}
	nat, _ := packetOut10(t, clientPort, frame, []ofp.Action{
		ofp.ActionSetField{Field: ofp.MatchEthDst(memberMAC)},
		ofp.ActionSetField{Field: ofp.MatchIPv4Dst([4]byte{10, 99, 0, 1})},
		ofp.ActionSetField{Field: ofp.MatchTCPDst(8080)},
		ofp.ActionOutput{Port: 3},
	})
	reverse, _ := packetOut10(t, memberPort0, frame, []ofp.Action{
		ofp.ActionSetField{Field: ofp.MatchEthSrc(memberMAC)},
		ofp.ActionSetField{Field: ofp.MatchIPv4Src([4]byte{10, 99, 0, 100})},
		ofp.ActionSetField{Field: ofp.MatchTCPSrc(80)},
		ofp.ActionOutput{Port: clientPort},
	})
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
			ethDst: memberMAC, ipv4Dst: ipU32([4]byte{10, 99, 0, 1}), tcpDst: 8080, outPort: 3,
			outputs: 1, has: 1<<oxmEthDst | 1<<oxmIPv4Dst | 1<<oxmTCPDst,
		}, false},
		{"Reverse", reverse, rewrite{
			ethSrc: memberMAC, ipv4Src: ipU32([4]byte{10, 99, 0, 100}), tcpSrc: 80, outPort: clientPort,
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

// The setup path allocates nothing in either version: an embedded run
// counts the tool's allocations in the controller's per setup.
func TestFakeSwitch_HandlePacketOutAllocatesNothing(t *testing.T) {
	for _, of := range dialects {
		t.Run("OpenFlow"+of.name(), func(t *testing.T) {
			s, _ := pipeSwitch(t, of)
			s.measuring, s.measureFrom = true, 1
			tg := &s.run.t
			frame, err := synFrame(testClientMAC, testVIPMAC, s.base, tg.vipIP, clientPortBase+1, tg.vipPort)
			if err != nil {
				t.Fatal(err)
			}
			// The members listen on the VIP's port: no tcp_dst, which a 1.0
			// packet-out could not carry through ofp10.
			m := &tg.members[1]
			actions := []ofp.Action{
				ofp.ActionSetField{Field: ofp.MatchEthDst(m.mac)},
				ofp.ActionSetField{Field: ofp.MatchIPv4Dst([4]byte(ip4(m.ip)))},
				ofp.ActionOutput{Port: m.ofPort},
			}
			msg, err := of.appendMsg(nil, 1, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: clientPort, Actions: actions, Data: frame})
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
