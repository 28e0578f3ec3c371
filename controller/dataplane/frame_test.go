package dataplane

import (
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func TestTCPRST_Checksums(t *testing.T) {
	tests := []struct {
		name string
		r    tcpRST
	}{
		{"RSTACK", tcpRST{src: netip.AddrFrom4([4]byte{10, 0, 0, 100}), dst: netip.AddrFrom4([4]byte{10, 0, 1, 5}), sport: 80, dport: 40000, ack: 1001, withACK: true}},
		{"RST", tcpRST{src: netip.AddrFrom4([4]byte{192, 168, 255, 1}), dst: netip.AddrFrom4([4]byte{172, 16, 0, 9}), sport: 443, dport: 65535, seq: 0xfffffff0}},
		{"RSTACK/IPv6", tcpRST{src: netip.MustParseAddr("2001:db8::100"), dst: netip.MustParseAddr("2001:db8:1::5"), sport: 80, dport: 40000, ack: 1001, withACK: true}},
		{"RST/IPv6", tcpRST{src: netip.MustParseAddr("fd00:ffff::1"), dst: netip.MustParseAddr("2001:db8:ffff:ffff:ffff:ffff:ffff:fff9"), sport: 443, dport: 65535, seq: 0xfffffff0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.ethSrc, tt.r.ethDst = [6]byte{2, 0, 0, 0, 1, 0}, [6]byte{0xcc, 0, 0, 0, 0, 1}
			got := appendTCPRST(nil, tt.r)
			eth := &layers.Ethernet{SrcMAC: tt.r.ethSrc[:], DstMAC: tt.r.ethDst[:], EthernetType: layers.EthernetTypeIPv4}
			var ip gopacket.NetworkLayer = &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolTCP,
				SrcIP: tt.r.src.AsSlice(), DstIP: tt.r.dst.AsSlice()}
			if tt.r.src.Is6() {
				eth.EthernetType = layers.EthernetTypeIPv6
				ip = &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP, SrcIP: tt.r.src.AsSlice(), DstIP: tt.r.dst.AsSlice()}
			}
			tcp := &layers.TCP{SrcPort: layers.TCPPort(tt.r.sport), DstPort: layers.TCPPort(tt.r.dport), Seq: tt.r.seq, Ack: tt.r.ack, RST: true, ACK: tt.r.withACK, DataOffset: 5}
			if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
				t.Fatal(err)
			}
			buf := gopacket.NewSerializeBuffer()
			if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip.(gopacket.SerializableLayer), tcp); err != nil {
				t.Fatal(err)
			}
			if want := buf.Bytes(); string(got) != string(want) {
				t.Errorf("reset\n got % x\nwant % x", got, want)
			}
		})
	}
}
