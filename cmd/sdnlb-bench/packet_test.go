package main

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

var (
	testClientMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	testVIPMAC    = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
	testVIP       = ipU32([4]byte{10, 99, 0, 100})
)

// mustSYNTemplate builds the packet-in template of switch sw.
func mustSYNTemplate(tb testing.TB, sw int) *synTemplate {
	tb.Helper()
	frame, err := synFrame(testClientMAC, testVIPMAC, clientBase(sw), testVIP, clientPortBase, 80)
	if err != nil {
		tb.Fatal(err)
	}
	pin := &ofp.PacketIn{BufferID: ofp.NoBuffer, TotalLen: uint16(len(frame)), Data: frame,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(clientPort)}}}
	return newSYNTemplate(ofp.Append(nil, 0, pin), len(frame))
}

func TestSYNTemplate_Set(t *testing.T) {
	tests := []struct {
		name string
		sw   int
		seqs []uint64
	}{
		{"SamePort", 0, []uint64{0, 0}},
		{"NextPorts", 1, []uint64{1, 2, 3, 1000}},
		{"LastPortOfAnIP", 2, []uint64{clientPortsPerIP - 1}},
		{"NextIP", 3, []uint64{clientPortsPerIP, clientPortsPerIP + 1}},
		{"BackAndForth", 4, []uint64{5, 3*clientPortsPerIP + 7, 2, maxSetupsPerSW - 1, 0}},
		{"LastSwitch", maxSwitches - 1, []uint64{maxSetupsPerSW - 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := mustSYNTemplate(t, tt.sw)
			for _, n := range tt.seqs {
				ip, port := clientAddr(clientBase(tt.sw), n)
				tmpl.set(ip, port)

				_, m, err := ofp.Decode(tmpl.msg)
				if err != nil {
					t.Fatalf("seq %d: the patched packet-in does not decode: %v", n, err)
				}
				pkt := gopacket.NewPacket(m.(*ofp.PacketIn).Data, layers.LayerTypeEthernet, gopacket.Default)
				ip4l, _ := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
				tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
				if ip4l == nil || tcp == nil {
					t.Fatalf("seq %d: no IPv4/TCP in %v", n, pkt)
				}
				if !ip4l.SrcIP.Equal(ip4(ip)) || uint16(tcp.SrcPort) != port || !tcp.SYN || uint16(tcp.DstPort) != 80 {
					t.Errorf("seq %d: got %v:%d SYN=%t dport %d, want %v:%d SYN to 80", n, ip4l.SrcIP, tcp.SrcPort, tcp.SYN, tcp.DstPort, ip4(ip), port)
				}
				if err, res := ip4l.VerifyChecksum(); err != nil || !res.Valid {
					t.Errorf("seq %d: IPv4 checksum %#04x, want %#04x (%v)", n, res.Actual, res.Correct, err)
				}
				if err := tcp.SetNetworkLayerForChecksum(ip4l); err != nil {
					t.Fatal(err)
				}
				if err, res := tcp.VerifyChecksum(); err != nil || !res.Valid {
					t.Errorf("seq %d: TCP checksum %#04x, want %#04x (%v)", n, res.Actual, res.Correct, err)
				}
			}
		})
	}
}

func TestClientSeq(t *testing.T) {
	base := clientBase(7)
	tests := []struct {
		name   string
		ip     uint32
		port   uint16
		want   uint64
		wantOK bool
	}{
		{"First", base, clientPortBase, 0, true},
		{"LastPortOfFirstIP", base, 65535, clientPortsPerIP - 1, true},
		{"SecondIP", base + 1, clientPortBase, clientPortsPerIP, true},
		{"Last", base + clientIPsPerSW - 1, 65535, maxSetupsPerSW - 1, true},
		{"ErrLowPort", base, clientPortBase - 1, 0, false},
		{"ErrNextSwitch", clientBase(8), clientPortBase, 0, false},
		{"ErrPreviousSwitch", clientBase(6), clientPortBase, 0, false},
		{"ErrVIP", testVIP, 80, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := clientSeq(base, tt.ip, tt.port)
			if ok != tt.wantOK || ok && n != tt.want {
				t.Fatalf("clientSeq(%v, %d) = %d, %t; want %d, %t", ip4(tt.ip), tt.port, n, ok, tt.want, tt.wantOK)
			}
			if ok {
				if ip, port := clientAddr(base, n); ip != tt.ip || port != tt.port {
					t.Errorf("clientAddr(%d) = %v:%d, want %v:%d", n, ip4(ip), port, ip4(tt.ip), tt.port)
				}
			}
		})
	}
}

func TestParsePacketOut(t *testing.T) {
	frame := []byte{0xde, 0xad, 0xbe, 0xef}
	memberMAC := [6]byte{2, 0x5d, 0xb0, 10, 99, 1}
	natActions := []ofp.Action{
		ofp.ActionSetField{Field: ofp.MatchEthDst(memberMAC)},
		ofp.ActionSetField{Field: ofp.MatchIPv4Dst([4]byte{10, 99, 0, 1})},
		ofp.ActionSetField{Field: ofp.MatchTCPDst(8080)},
		ofp.ActionOutput{Port: 3},
	}
	nat := ofp.Append(nil, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: 1, Actions: natActions, Data: frame})
	flood := ofp.Append(nil, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: 1,
		Actions: []ofp.Action{ofp.ActionOutput{Port: ofp.PortFlood}}, Data: frame})
	// An action length of 12 is not a multiple of 8.
	badLen := append([]byte(nil), nat...)
	binary.BigEndian.PutUint16(badLen[ofp.HeaderLen+16+2:], 12)

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
		{"Flood", flood, rewrite{outPort: ofp.PortFlood, outputs: 1}, false},
		{"ErrShort", nat[:20], rewrite{}, true},
		{"ErrActionsPastEnd", nat[:ofp.HeaderLen+16+20], rewrite{}, true},
		{"ErrActionLength", badLen, rewrite{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rw rewrite
			got, err := parsePacketOut(tt.msg, &rw)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error: %t", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if rw != tt.want {
				t.Errorf("rewrite = %s (%+v), want %s", describe(&rw), rw, describe(&tt.want))
			}
			if string(got) != string(frame) {
				t.Errorf("frame = %x, want %x", got, frame)
			}
		})
	}
}

func TestParseFrames(t *testing.T) {
	syn, err := synFrame(testClientMAC, testVIPMAC, clientBase(0)+5, testVIP, 4242, 80)
	if err != nil {
		t.Fatal(err)
	}
	arp, err := arpFrame(2, testClientMAC, testVIPMAC, testVIP, testClientMAC, clientBase(0))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("TCP", func(t *testing.T) {
		got, ok := parseTCP(syn)
		want := tcpInfo{src: clientBase(0) + 5, dst: testVIP, sport: 4242, dport: 80, flags: 0x02}
		if !ok || got != want {
			t.Errorf("parseTCP = %+v, %t; want %+v", got, ok, want)
		}
		if _, ok := parseTCP(arp); ok {
			t.Error("parseTCP accepted an ARP frame")
		}
		if _, ok := parseTCP(syn[:30]); ok {
			t.Error("parseTCP accepted a truncated frame")
		}
	})
	t.Run("ARP", func(t *testing.T) {
		got, ok := parseARP(arp)
		want := arpInfo{op: 2, sha: [6]byte(testVIPMAC), spa: testVIP, tha: [6]byte(testClientMAC), tpa: clientBase(0)}
		if !ok || got != want {
			t.Errorf("parseARP = %+v, %t; want %+v", got, ok, want)
		}
		if _, ok := parseARP(syn); ok {
			t.Error("parseARP accepted a TCP frame")
		}
		if _, ok := parseARP(arp[:30]); ok {
			t.Error("parseARP accepted a truncated frame")
		}
	})
}

func BenchmarkSYNTemplate_Set(b *testing.B) {
	tmpl := mustSYNTemplate(b, 0)
	base := clientBase(0)
	b.ReportAllocs()
	for i := range b.N {
		tmpl.set(clientAddr(base, uint64(i)))
	}
}

// checkByHand is the per-setup check of a packet-out as handlePacketOut
// does it: the member it rewrites to, or -1.
func checkByHand(t *target, of dialect, msg []byte) (int, error) {
	rw, frame, err := of.parsePacketOut(msg)
	if err != nil {
		return -1, err
	}
	if _, ok := parseTCP(frame); !ok {
		return -1, nil
	}
	return t.checkRewrite(&rw), nil
}

// checkByModel is the same check through the codec and oftable: decode
// into po, run the actions on the frame and look at the packet that
// leaves and where.
func checkByModel(t *target, msg []byte, po *ofp.PacketOut) (int, error) {
	if _, err := ofp.DecodeInto(msg, po); err != nil {
		return -1, err
	}
	return memberByModel(t, po.InPort, po.Data, po.Actions), nil
}

// memberByModel runs actions on frame, from port in, through oftable and
// returns the member the packet leaves to, rewritten to it, or -1.
func memberByModel(t *target, in uint32, frame []byte, actions []ofp.Action) int {
	tcp, ok := parseTCP(frame)
	if !ok {
		return -1
	}
	p := oftable.Packet{
		InPort: in, EthDst: [6]byte(frame[:6]), EthType: 0x0800, IPProto: 6,
		IPv4Src: [4]byte(ip4(tcp.src)), IPv4Dst: [4]byte(ip4(tcp.dst)), L4Src: tcp.sport, L4Dst: tcp.dport,
	}
	out, ports := oftable.ApplyActions(actions, p)
	i := t.memberIndex(ipU32(out.IPv4Dst))
	if i < 0 {
		return -1
	}
	m := &t.members[i]
	if out.EthDst != m.mac || out.L4Dst != m.port || len(ports) != 1 || ports[0] != m.ofPort {
		return -1
	}
	return i
}

// natSYN is the frame of a SYN to the VIP the controller sends back out.
func natSYN(tb testing.TB, t *target) []byte {
	tb.Helper()
	frame, err := synFrame(testClientMAC, testVIPMAC, clientBase(0)+5, t.vipIP, clientPortBase+7, t.vipPort)
	if err != nil {
		tb.Fatal(err)
	}
	return frame
}

// natPacketOut is the packet-out of a SYN to the VIP with actions
// (pointers into reused structs, as the controller builds them).
func natPacketOut(tb testing.TB, t *target, actions ...ofp.Action) []byte {
	tb.Helper()
	return ofp.Append(nil, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: clientPort, Actions: actions, Data: natSYN(tb, t)})
}

// natActions are the actions of the NAT rewrite to member m.
func natActions(m *member) []ofp.Action {
	return []ofp.Action{
		&ofp.ActionSetField{Field: ofp.MatchEthDst(m.mac)},
		&ofp.ActionSetField{Field: ofp.MatchIPv4Dst([4]byte(ip4(m.ip)))},
		&ofp.ActionSetField{Field: ofp.MatchTCPDst(m.port)},
		&ofp.ActionOutput{Port: m.ofPort},
	}
}

// checkCase is a packet-out's actions and the member the per-setup check
// should find in them (-1: none).
type checkCase struct {
	name    string
	actions []ofp.Action
	want    int
}

// checkCases are the NAT rewrites, right and wrong, the agreement tests
// of both versions run.
func checkCases(tg *target) []checkCase {
	m0, m2 := &tg.members[0], &tg.members[2]
	replace := func(actions []ofp.Action, i int, a ofp.Action) []ofp.Action {
		actions[i] = a
		return actions
	}
	return []checkCase{
		{"Member0", natActions(m0), 0},
		{"Member2", natActions(m2), 2},
		{"ErrNoEthDst", natActions(m2)[1:], -1},
		{"PortSetFieldLeftOut", append(natActions(m2)[:2:2], &ofp.ActionOutput{Port: m2.ofPort}), 2},
		{"ErrWrongPort", replace(natActions(m2), 2, ofp.ActionSetField{Field: ofp.MatchTCPDst(81)}), -1},
		{"ErrOtherMembersMAC", replace(natActions(m2), 0, ofp.ActionSetField{Field: ofp.MatchEthDst(m0.mac)}), -1},
		{"ErrOtherMembersPort", replace(natActions(m2), 3, ofp.ActionOutput{Port: m0.ofPort}), -1},
		{"ErrNoIPv4Dst", replace(natActions(m2), 1, ofp.ActionSetField{Field: ofp.MatchIPv4Src([4]byte{1, 2, 3, 4})}), -1},
		{"ErrFlood", replace(natActions(m2), 3, ofp.ActionOutput{Port: ofp.PortFlood}), -1},
		{"ErrNoOutput", natActions(m2)[:3], -1},
		{"ErrTwoOutputs", append(natActions(m2), ofp.ActionOutput{Port: m2.ofPort}), -1},
		{"ErrFloodThenMember", append([]ofp.Action{ofp.ActionOutput{Port: ofp.PortFlood}}, natActions(m2)...), -1},
		{"ErrNone", nil, -1},
	}
}

// The hand parser stays on the hot path; this keeps its verdict the one
// the shared flow-table model gives.
func TestPacketOutCheck_AgreesWithOftable(t *testing.T) {
	tg := newTarget([4]byte(ip4(testVIP)), 80, [4]byte{10, 99, 0, 1}, 3)
	for _, tt := range checkCases(&tg) {
		t.Run(tt.name, func(t *testing.T) {
			msg := natPacketOut(t, &tg, tt.actions...)
			hand, err := checkByHand(&tg, dialect13{}, msg)
			if err != nil {
				t.Fatalf("by hand: %v", err)
			}
			var po ofp.PacketOut
			model, err := checkByModel(&tg, msg, &po)
			if err != nil {
				t.Fatalf("through oftable: %v", err)
			}
			if hand != tt.want || model != tt.want {
				t.Errorf("%s: member %d by hand, %d through oftable; want %d", ofp.FormatActions(tt.actions), hand, model, tt.want)
			}
		})
	}
}

// BenchmarkPacketOutCheck compares the per-setup check by hand with the
// same check through ofp.DecodeInto and oftable.ApplyActions.
func BenchmarkPacketOutCheck(b *testing.B) {
	tg := newTarget([4]byte(ip4(testVIP)), 80, [4]byte{10, 99, 0, 1}, 3)
	msg := natPacketOut(b, &tg, natActions(&tg.members[1])...)
	b.Run("ByHand", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if i, err := checkByHand(&tg, dialect13{}, msg); i != 1 || err != nil {
				b.Fatal(i, err)
			}
		}
	})
	b.Run("Oftable", func(b *testing.B) {
		var po ofp.PacketOut
		b.ReportAllocs()
		for range b.N {
			if i, err := checkByModel(&tg, msg, &po); i != 1 || err != nil {
				b.Fatal(i, err)
			}
		}
	})
}
