package main

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

var (
	testClientMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	testVIPMAC    = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
)

// mustSYNTemplate builds the packet-in template of switch sw in family f.
func mustSYNTemplate(tb testing.TB, f testFamily, sw int) *synTemplate {
	tb.Helper()
	frame, err := synFrame(testClientMAC, testVIPMAC, clientIP(f.vip.Addr(), clientBase(sw)), f.vip.Addr(), clientPortBase, 80)
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
		for _, f := range testFamilies {
			t.Run(tt.name+"/"+f.name, func(t *testing.T) {
				tmpl := mustSYNTemplate(t, f, tt.sw)
				for _, n := range tt.seqs {
					v, port := clientAddr(clientBase(tt.sw), n)
					tmpl.set(v, port)
					checkSYN(t, tmpl.msg, clientIP(f.vip.Addr(), v), port)
				}
			})
		}
	}
}

// checkSYN decodes a SYN packet-in and checks its client, its port and
// its checksums.
func checkSYN(t *testing.T, msg []byte, ip netip.Addr, port uint16) {
	t.Helper()
	_, m, err := ofp.Decode(msg)
	if err != nil {
		t.Fatalf("%v:%d: the patched packet-in does not decode: %v", ip, port, err)
	}
	pkt := gopacket.NewPacket(m.(*ofp.PacketIn).Data, layers.LayerTypeEthernet, gopacket.Default)
	tcp, _ := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
	var src net.IP
	var network gopacket.NetworkLayer
	switch l := pkt.NetworkLayer().(type) {
	case *layers.IPv4:
		if err, res := l.VerifyChecksum(); err != nil || !res.Valid {
			t.Errorf("%v:%d: IPv4 checksum %#04x, want %#04x (%v)", ip, port, res.Actual, res.Correct, err)
		}
		src, network = l.SrcIP, l
	case *layers.IPv6:
		src, network = l.SrcIP, l
	}
	if network == nil || tcp == nil {
		t.Fatalf("%v:%d: no IP/TCP in %v", ip, port, pkt)
	}
	if got, _ := netip.AddrFromSlice(src); got.Unmap() != ip || uint16(tcp.SrcPort) != port || !tcp.SYN || uint16(tcp.DstPort) != 80 {
		t.Errorf("got %v:%d SYN=%t dport %d, want %v:%d SYN to 80", src, tcp.SrcPort, tcp.SYN, tcp.DstPort, ip, port)
	}
	if err := tcp.SetNetworkLayerForChecksum(network); err != nil {
		t.Fatal(err)
	}
	if err, res := tcp.VerifyChecksum(); err != nil || !res.Valid {
		t.Errorf("%v:%d: TCP checksum %#04x, want %#04x (%v)", ip, port, res.Actual, res.Correct, err)
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
		{"ErrVIP", 0x0a630064, 80, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := clientSeq(base, tt.ip, tt.port)
			if ok != tt.wantOK || ok && n != tt.want {
				t.Fatalf("clientSeq(%#x, %d) = %d, %t; want %d, %t", tt.ip, tt.port, n, ok, tt.want, tt.wantOK)
			}
			if ok {
				if ip, port := clientAddr(base, n); ip != tt.ip || port != tt.port {
					t.Errorf("clientAddr(%d) = %#x:%d, want %#x:%d", n, ip, port, tt.ip, tt.port)
				}
			}
		})
	}
}

// Client numbers are IPv4 addresses, or the last 32 bits of an IPv6 one
// in clientPrefix6.
func TestClientIP(t *testing.T) {
	v := clientBase(7) + 3
	for _, tt := range []struct {
		like netip.Addr
		want string
	}{
		{ipv4.vip.Addr(), "10.128.112.4"},
		{ipv6.vip.Addr(), "2001:db8:5db0:c100::a80:7004"},
	} {
		ip := clientIP(tt.like, v)
		if ip.String() != tt.want {
			t.Errorf("clientIP(%v, %#x) = %v, want %s", tt.like, v, ip, tt.want)
		}
		if got, ok := clientNum(ip); !ok || got != v {
			t.Errorf("clientNum(%v) = %#x, %t; want %#x", ip, got, ok, v)
		}
	}
	for _, a := range []string{"2001:db8:5db0:c101::a80:7004", "2001:db8:99::1", "::ffff:10.128.112.4"} {
		if got, ok := clientNum(netip.MustParseAddr(a)); ok {
			t.Errorf("clientNum(%s) = %#x, want no client", a, got)
		}
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
	member6 := netip.MustParseAddr("2001:db8:99::1")
	nat6 := ofp.Append(nil, 9, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: 1, Data: frame, Actions: []ofp.Action{
		ofp.ActionSetField{Field: ofp.MatchEthDst(memberMAC)},
		ofp.ActionSetField{Field: ofp.MatchIPv6Dst(member6.As16())},
		ofp.ActionSetField{Field: ofp.MatchIPv6Src(ipv6.vip.Addr().As16())},
		ofp.ActionOutput{Port: 3},
	}})
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
			ethDst: memberMAC, ipDst: netip.AddrFrom4([4]byte{10, 99, 0, 1}), tcpDst: 8080, outPort: 3,
			outputs: 1, has: 1<<oxmEthDst | 1<<oxmIPv4Dst | 1<<oxmTCPDst,
		}, false},
		{"NATIPv6", nat6, rewrite{
			ethDst: memberMAC, ipDst: member6, ipSrc: ipv6.vip.Addr(), outPort: 3,
			outputs: 1, has: 1<<oxmEthDst | 1<<oxmIPv6Dst | 1<<oxmIPv6Src,
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

func TestParseTCP(t *testing.T) {
	for _, f := range testFamilies {
		t.Run(f.name, func(t *testing.T) {
			client, vip := clientIP(f.vip.Addr(), clientBase(0)+5), f.vip.Addr()
			syn, err := synFrame(testClientMAC, testVIPMAC, client, vip, 4242, 80)
			if err != nil {
				t.Fatal(err)
			}
			ask, err := askFrame([6]byte(testClientMAC), client, vip)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := parseTCP(syn)
			want := tcpInfo{src: client, dst: vip, sport: 4242, dport: 80, flags: 0x02}
			if !ok || got != want {
				t.Errorf("parseTCP = %+v, %t; want %+v", got, ok, want)
			}
			if _, ok := parseTCP(ask); ok {
				t.Error("parseTCP accepted an ARP or neighbour discovery frame")
			}
			if _, ok := parseTCP(syn[:len(syn)-30]); ok {
				t.Error("parseTCP accepted a truncated frame")
			}
		})
	}
}

// The neighbour discovery frames the tool builds read back as the ARP
// ones do, and a solicitation to another host's group is not taken.
func TestParseNeighbour(t *testing.T) {
	clientMAC, memberMAC, ctlMAC := [6]byte(testClientMAC), [6]byte{2, 0x5d, 0xb0, 0, 0, 1}, [6]byte{2, 0xcc, 0, 0, 0, 1}
	must := func(b []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type frameCase struct {
		name  string
		frame []byte
		want  neighbour
	}
	var tests []frameCase
	for _, f := range testFamilies {
		client, vip, member := clientIP(f.vip.Addr(), clientBase(0)), f.vip.Addr(), f.firstMember
		// A gratuitous ARP request, an unsolicited advertisement to all nodes.
		announce := neighbour{request: true, about: member, mac: memberMAC, peer: member}
		if member.Is6() {
			announce.request, announce.peer = false, allNodes
		}
		tests = append(tests,
			frameCase{"Ask/" + f.name, must(askFrame(clientMAC, client, vip)), neighbour{request: true, about: vip, mac: clientMAC, peer: client}},
			frameCase{"Announce/" + f.name, must(announceFrame(memberMAC, member)), announce},
			frameCase{"ReplyToClient/" + f.name, must(replyFrame(memberMAC, member, neighbour{request: true, about: member, mac: clientMAC, peer: client})),
				neighbour{about: member, mac: memberMAC, peer: client}},
		)
		if member.Is6() {
			probe := neighbour{request: true, about: member, mac: ctlMAC, peer: netip.IPv6Unspecified()}
			tests = append(tests,
				frameCase{"Probe/" + f.name, must(ndFrame(layers.CreateICMPv6TypeCode(ndSolicitation, 0), multicastMAC(solicitedNode(member)), ctlMAC,
					netip.IPv6Unspecified(), solicitedNode(member), member, 0)), probe},
				frameCase{"ReplyToProbe/" + f.name, must(replyFrame(memberMAC, member, probe)), neighbour{about: member, mac: memberMAC, peer: allNodes}})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseNeighbour(tt.frame)
			if !ok || got != tt.want {
				t.Errorf("parseNeighbour = %+v, %t; want %+v", got, ok, tt.want)
			}
			if _, ok := parseNeighbour(tt.frame[:40]); ok {
				t.Error("parseNeighbour accepted a truncated frame")
			}
		})
	}
	member := ipv6.firstMember
	for _, tt := range []struct {
		name   string
		ethDst [6]byte
		dst    netip.Addr
	}{
		{"OtherGroup", multicastMAC(solicitedNode(member.Next())), solicitedNode(member.Next())},
		{"GroupAtOtherMAC", multicastMAC(allNodes), solicitedNode(member)},
		{"AllNodes", multicastMAC(allNodes), allNodes},
	} {
		t.Run("ErrSolicitation"+tt.name, func(t *testing.T) {
			ns := must(ndFrame(layers.CreateICMPv6TypeCode(ndSolicitation, 0), tt.ethDst, ctlMAC, netip.IPv6Unspecified(), tt.dst, member, 0))
			if got, ok := parseNeighbour(ns); ok {
				t.Errorf("parseNeighbour took a solicitation for %v sent to %v (%v): %+v", member, tt.dst, net.HardwareAddr(tt.ethDst[:]), got)
			}
		})
	}
}

// The neighbour discovery frames carry the right checksums, hop limit and
// options, as read by gopacket.
func TestNDFrames(t *testing.T) {
	member, memberMAC := ipv6.firstMember, [6]byte{2, 0x5d, 0xb0, 0, 0, 1}
	probe := neighbour{request: true, about: member, mac: [6]byte{2, 0xcc, 0, 0, 0, 1}, peer: netip.IPv6Unspecified()}
	na, err := replyFrame(memberMAC, member, probe)
	if err != nil {
		t.Fatal(err)
	}
	pkt := gopacket.NewPacket(na, layers.LayerTypeEthernet, gopacket.Default)
	eth, _ := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	ip, _ := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
	icmp, _ := pkt.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
	adv, _ := pkt.Layer(layers.LayerTypeICMPv6NeighborAdvertisement).(*layers.ICMPv6NeighborAdvertisement)
	if eth == nil || ip == nil || icmp == nil || adv == nil {
		t.Fatalf("not an Ethernet/IPv6 neighbour advertisement: %v", pkt)
	}
	if eth.DstMAC.String() != "33:33:00:00:00:01" || !ip.DstIP.Equal(allNodes.AsSlice()) || !ip.SrcIP.Equal(member.AsSlice()) || ip.HopLimit != 255 {
		t.Errorf("advertisement from %v to %v (%v), hop limit %d; want from %v to ff02::1 (33:33:00:00:00:01), 255", ip.SrcIP, ip.DstIP, eth.DstMAC, ip.HopLimit, member)
	}
	if !adv.TargetAddress.Equal(member.AsSlice()) || adv.Flags != ndFlagOverride || len(adv.Options) != 1 ||
		adv.Options[0].Type != layers.ICMPv6OptTargetAddress || string(adv.Options[0].Data) != string(memberMAC[:]) {
		t.Errorf("advertisement of %v flags %#x options %v; want %v, override alone, the target link-layer address %v",
			adv.TargetAddress, adv.Flags, adv.Options, member, net.HardwareAddr(memberMAC[:]))
	}
	if err := icmp.SetNetworkLayerForChecksum(ip); err != nil {
		t.Fatal(err)
	}
	if err, res := icmp.VerifyChecksum(); err != nil || !res.Valid {
		t.Errorf("ICMPv6 checksum %#04x, want %#04x (%v)", res.Actual, res.Correct, err)
	}
}

func BenchmarkSYNTemplate_Set(b *testing.B) {
	for _, f := range testFamilies {
		b.Run(f.name, func(b *testing.B) {
			tmpl := mustSYNTemplate(b, f, 0)
			base := clientBase(0)
			b.ReportAllocs()
			for i := range b.N {
				tmpl.set(clientAddr(base, uint64(i)))
			}
		})
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
	return memberByModel(t, po.InPort, po.Data, po.Actions)
}

// memberByModel runs actions on frame, from port in, through oftable and
// returns the member the packet leaves to, rewritten to it, or -1.
func memberByModel(t *target, in uint32, frame []byte, actions []ofp.Action) (int, error) {
	p, err := oftable.ParseFrame(in, frame)
	if err != nil {
		return -1, err
	}
	out, ports := oftable.ApplyActions(actions, p)
	dst := netip.AddrFrom16(out.IPv6Dst)
	if t.vip.Is4() {
		dst = netip.AddrFrom4(out.IPv4Dst)
	}
	i := t.memberIndex(dst)
	if i < 0 {
		return -1, nil
	}
	m := &t.members[i]
	if out.EthDst != m.mac || out.L4Dst != m.port || len(ports) != 1 || ports[0] != m.ofPort {
		return -1, nil
	}
	return i, nil
}

// natSYN is the frame of a SYN to the VIP the controller sends back out.
func natSYN(tb testing.TB, t *target) []byte {
	tb.Helper()
	frame, err := synFrame(testClientMAC, testVIPMAC, t.client(clientBase(0)+5), t.vip, clientPortBase+7, t.vipPort)
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
		&ofp.ActionSetField{Field: matchIPDst(m.ip)},
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
// of both versions and both families run.
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
		{"ErrNoIPDst", replace(natActions(m2), 1, ofp.ActionSetField{Field: matchIPSrc(m2.ip)}), -1},
		{"ErrFlood", replace(natActions(m2), 3, ofp.ActionOutput{Port: ofp.PortFlood}), -1},
		{"ErrNoOutput", natActions(m2)[:3], -1},
		{"ErrTwoOutputs", append(natActions(m2), ofp.ActionOutput{Port: m2.ofPort}), -1},
		{"ErrFloodThenMember", append([]ofp.Action{ofp.ActionOutput{Port: ofp.PortFlood}}, natActions(m2)...), -1},
		{"ErrNone", nil, -1},
	}
}

// The hand parser stays on the hot path; this keeps its verdict the one
// the shared flow-table model gives, in both families.
func TestPacketOutCheck_AgreesWithOftable(t *testing.T) {
	for _, f := range testFamilies {
		tg := f.target(3)
		for _, tt := range checkCases(&tg) {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
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
}

// BenchmarkPacketOutCheck compares the per-setup check by hand with the
// same check through ofp.DecodeInto and oftable.ApplyActions.
func BenchmarkPacketOutCheck(b *testing.B) {
	tg := ipv4.target(3)
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
