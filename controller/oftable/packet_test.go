package oftable_test

import (
	"errors"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// mustSerialize builds a frame with lengths and checksums filled in.
func mustSerialize(tb testing.TB, ls ...gopacket.SerializableLayer) []byte {
	tb.Helper()
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestParseFrame(t *testing.T) {
	eth := func(t layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: clientMAC[:], DstMAC: vipMAC[:], EthernetType: t}
	}
	ipv4 := func(proto layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: client[:], DstIP: vip[:]}
	}
	tcp := &layers.TCP{SrcPort: 40000, DstPort: 80, SYN: true, Window: 1024}
	tcp.SetNetworkLayerForChecksum(ipv4(layers.IPProtocolTCP))
	udp := &layers.UDP{SrcPort: 5000, DstPort: 53}
	udp.SetNetworkLayerForChecksum(ipv4(layers.IPProtocolUDP))
	ipBase := oftable.Packet{InPort: 7, EthSrc: clientMAC, EthDst: vipMAC, EthType: 0x0800, IPv4Src: client, IPv4Dst: vip}
	with := func(f func(*oftable.Packet)) oftable.Packet {
		p := ipBase
		f(&p)
		return p
	}
	tcpFrame := mustSerialize(t, eth(layers.EthernetTypeIPv4), ipv4(layers.IPProtocolTCP), tcp)
	ipv6 := func(proto layers.IPProtocol, src, dst [16]byte) *layers.IPv6 {
		return &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: proto, SrcIP: src[:], DstIP: dst[:]}
	}
	tcp6 := &layers.TCP{SrcPort: 40000, DstPort: 80, SYN: true, Window: 1024}
	tcp6.SetNetworkLayerForChecksum(ipv6(layers.IPProtocolTCP, client6, vip6))
	udp6 := &layers.UDP{SrcPort: 5000, DstPort: 53}
	udp6.SetNetworkLayerForChecksum(ipv6(layers.IPProtocolUDP, client6, vip6))
	icmp6 := func(typ uint8) *layers.ICMPv6 {
		l := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
		l.SetNetworkLayerForChecksum(ipv6(layers.IPProtocolICMPv6, client6, vip6))
		return l
	}
	ip6Base := oftable.Packet{InPort: 7, EthSrc: clientMAC, EthDst: vipMAC, EthType: 0x86dd, IPv6Src: client6, IPv6Dst: vip6}
	with6 := func(f func(*oftable.Packet)) oftable.Packet {
		p := ip6Base
		f(&p)
		return p
	}
	tests := []struct {
		name    string
		frame   []byte
		want    oftable.Packet
		wantErr bool
	}{
		{"TCP", tcpFrame, with(func(p *oftable.Packet) { p.IPProto, p.L4Src, p.L4Dst, p.TCPFlags = 6, 40000, 80, ofp.TCPFlagSYN }), false},
		{"TCPFlags", mustSerialize(t, eth(layers.EthernetTypeIPv4), ipv4(layers.IPProtocolTCP), func() *layers.TCP {
			l := &layers.TCP{SrcPort: 40000, DstPort: 80, FIN: true, ACK: true, PSH: true, Window: 1024}
			l.SetNetworkLayerForChecksum(ipv4(layers.IPProtocolTCP))
			return l
		}()), with(func(p *oftable.Packet) {
			p.IPProto, p.L4Src, p.L4Dst, p.TCPFlags = 6, 40000, 80, ofp.TCPFlagFIN|ofp.TCPFlagACK|0x8
		}), false},
		{"UDP", mustSerialize(t, eth(layers.EthernetTypeIPv4), ipv4(layers.IPProtocolUDP), udp, gopacket.Payload("q")),
			with(func(p *oftable.Packet) { p.IPProto, p.L4Src, p.L4Dst = 17, 5000, 53 }), false},
		{"ICMP", mustSerialize(t, eth(layers.EthernetTypeIPv4), ipv4(layers.IPProtocolICMPv4),
			&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(3, 4)}),
			with(func(p *oftable.Packet) { p.IPProto, p.ICMPType, p.ICMPCode = 1, 3, 4 }), false},
		{"OtherIPProtocol", mustSerialize(t, eth(layers.EthernetTypeIPv4), ipv4(47), gopacket.Payload("gre")),
			with(func(p *oftable.Packet) { p.IPProto = 47 }), false},
		{"ARP", mustSerialize(t, eth(layers.EthernetTypeARP), &layers.ARP{
			AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: 1, SourceHwAddress: clientMAC[:], SourceProtAddress: client[:],
			DstHwAddress: make([]byte, 6), DstProtAddress: vip[:],
		}), oftable.Packet{InPort: 7, EthSrc: clientMAC, EthDst: vipMAC, EthType: 0x0806, ARPOp: 1, ARPSHA: clientMAC, ARPSPA: client, ARPTPA: vip}, false},
		{"OtherEtherTypeOnlyEthernet", mustSerialize(t, eth(0x88cc), gopacket.Payload("lldp")),
			oftable.Packet{InPort: 7, EthSrc: clientMAC, EthDst: vipMAC, EthType: 0x88cc}, false},
		{"TCP6", mustSerialize(t, eth(layers.EthernetTypeIPv6), ipv6(layers.IPProtocolTCP, client6, vip6), tcp6),
			with6(func(p *oftable.Packet) { p.IPProto, p.L4Src, p.L4Dst, p.TCPFlags = 6, 40000, 80, ofp.TCPFlagSYN }), false},
		{"UDP6", mustSerialize(t, eth(layers.EthernetTypeIPv6), ipv6(layers.IPProtocolUDP, client6, vip6), udp6, gopacket.Payload("q")),
			with6(func(p *oftable.Packet) { p.IPProto, p.L4Src, p.L4Dst = 17, 5000, 53 }), false},
		{"ICMPv6Echo", mustSerialize(t, eth(layers.EthernetTypeIPv6), ipv6(layers.IPProtocolICMPv6, client6, vip6), icmp6(128),
			&layers.ICMPv6Echo{Identifier: 1, SeqNumber: 1}),
			with6(func(p *oftable.Packet) { p.IPProto, p.ICMPType = 58, 128 }), false},
		{"OtherNextHeader", mustSerialize(t, eth(layers.EthernetTypeIPv6), ipv6(47, client6, vip6), gopacket.Payload("gre")),
			with6(func(p *oftable.Packet) { p.IPProto = 47 }), false},
		{"NeighbourSolicitation", mustSerialize(t, eth(layers.EthernetTypeIPv6), ipv6(layers.IPProtocolICMPv6, client6, vip6),
			icmp6(135), &layers.ICMPv6NeighborSolicitation{TargetAddress: vip6[:], Options: layers.ICMPv6Options{
				{Type: layers.ICMPv6OptSourceAddress, Data: clientMAC[:]}}}),
			with6(func(p *oftable.Packet) {
				p.IPProto, p.ICMPType, p.NDTarget, p.NDSLL, p.NDOptionsType = 58, 135, vip6, clientMAC, 1
			}), false},
		{"NeighbourAdvertisement", mustSerialize(t, eth(layers.EthernetTypeIPv6), ipv6(layers.IPProtocolICMPv6, client6, vip6),
			icmp6(136), &layers.ICMPv6NeighborAdvertisement{Flags: 0x60, TargetAddress: client6[:], Options: layers.ICMPv6Options{
				{Type: layers.ICMPv6OptTargetAddress, Data: clientMAC[:]}}}),
			with6(func(p *oftable.Packet) {
				p.IPProto, p.ICMPType, p.NDTarget, p.NDTLL, p.NDReserved, p.NDOptionsType = 58, 136, client6, clientMAC, 0x60000000, 2
			}), false},
		{"ErrVLAN", mustSerialize(t, eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeIPv4},
			ipv4(layers.IPProtocolTCP), tcp), oftable.Packet{}, true},
		{"ErrTruncatedTCP", tcpFrame[:14+20+10], oftable.Packet{}, true},
		{"ErrShortEthernet", tcpFrame[:10], oftable.Packet{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := oftable.ParseFrame(7, tt.frame)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseFrame: %v, want error: %t", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseFrame:\n got  %v (%+v)\n want %v", got, got, tt.want)
			}
		})
	}
	t.Run("ErrVLANIsErrVLAN", func(t *testing.T) {
		frame := mustSerialize(t, eth(layers.EthernetTypeDot1Q), &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeARP})
		if _, err := oftable.ParseFrame(1, frame); !errors.Is(err, oftable.ErrVLAN) {
			t.Errorf("ParseFrame = %v, want ErrVLAN", err)
		}
	})
}

func TestPacket_String(t *testing.T) {
	syn := tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 80)
	udp := syn
	udp.IPProto = 17
	icmp := syn
	icmp.IPProto, icmp.ICMPType, icmp.L4Src, icmp.L4Dst = 1, 8, 0, 0
	gre := syn
	gre.IPProto = 47
	tests := []struct {
		name string
		p    oftable.Packet
		want string
	}{
		{"TCP", syn, "tcp 10.0.1.5:40000 > 10.0.0.100:80 in_port=10 dl_src=02:00:00:00:01:05 dl_dst=02:00:00:00:00:64"},
		{"UDP", udp, "udp 10.0.1.5:40000 > 10.0.0.100:80 in_port=10 dl_src=02:00:00:00:01:05 dl_dst=02:00:00:00:00:64"},
		{"ICMP", icmp, "icmp 10.0.1.5 > 10.0.0.100 type=8 code=0 in_port=10 dl_src=02:00:00:00:01:05 dl_dst=02:00:00:00:00:64"},
		{"OtherIP", gre, "ip proto=47 10.0.1.5 > 10.0.0.100 in_port=10 dl_src=02:00:00:00:01:05 dl_dst=02:00:00:00:00:64"},
		{"ARP", oftable.Packet{InPort: 0xfffffffd, EthType: 0x0806, ARPOp: 2, ARPSHA: vipMAC, ARPSPA: vip, ARPTHA: clientMAC, ARPTPA: client},
			"arp op=2 10.0.0.100 (02:00:00:00:00:64) > 10.0.1.5 (02:00:00:00:01:05) in_port=CONTROLLER dl_src=00:00:00:00:00:00 dl_dst=00:00:00:00:00:00"},
		{"OtherEtherType", oftable.Packet{InPort: 1, EthType: 0x88cc},
			"dl_type=0x88cc in_port=1 dl_src=00:00:00:00:00:00 dl_dst=00:00:00:00:00:00"},
		{"TCP6", oftable.Packet{InPort: 1, EthType: 0x86dd, IPProto: 6, IPv6Src: client6, IPv6Dst: vip6, L4Src: 40000, L4Dst: 80},
			"tcp6 [2001:db8:1::5]:40000 > [2001:db8::64]:80 in_port=1 dl_src=00:00:00:00:00:00 dl_dst=00:00:00:00:00:00"},
		{"ICMPv6", oftable.Packet{InPort: 1, EthType: 0x86dd, IPProto: 58, IPv6Src: client6, IPv6Dst: vip6, ICMPType: 128},
			"icmp6 2001:db8:1::5 > 2001:db8::64 type=128 code=0 in_port=1 dl_src=00:00:00:00:00:00 dl_dst=00:00:00:00:00:00"},
		{"NeighbourAdvertisement", oftable.Packet{InPort: 1, EthType: 0x86dd, IPProto: 58, IPv6Src: vip6, IPv6Dst: client6,
			ICMPType: 136, NDTarget: vip6, NDTLL: vipMAC, NDReserved: 0x60000000, NDOptionsType: 2},
			"icmp6 2001:db8::64 > 2001:db8:1::5 type=136 code=0 nd_target=2001:db8::64 nd_sll=00:00:00:00:00:00 nd_tll=02:00:00:00:00:64" +
				" nd_reserved=0x60000000 nd_options_type=2 in_port=1 dl_src=00:00:00:00:00:00 dl_dst=00:00:00:00:00:00"},
		{"OtherIPv6", oftable.Packet{InPort: 1, EthType: 0x86dd, IPProto: 47, IPv6Src: client6, IPv6Dst: vip6},
			"ipv6 proto=47 2001:db8:1::5 > 2001:db8::64 in_port=1 dl_src=00:00:00:00:00:00 dl_dst=00:00:00:00:00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p.String(); got != tt.want {
				t.Errorf("String() =\n %q, want\n %q", got, tt.want)
			}
		})
	}
}
