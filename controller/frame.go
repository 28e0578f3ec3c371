package controller

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// decoder parses packet-in frames with preallocated layers, so parsing
// allocates nothing. One per switch; not safe for concurrent use.
type decoder struct {
	parser  *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
	eth     layers.Ethernet
	arp     layers.ARP
	ip4     layers.IPv4
	tcp     layers.TCP
	udp     layers.UDP
	icmp    layers.ICMPv4

	hasARP, hasIPv4, hasTCP, hasUDP, hasICMP bool
}

func newDecoder() *decoder {
	d := &decoder{decoded: make([]gopacket.LayerType, 0, 8)}
	d.parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &d.eth, &d.arp, &d.ip4, &d.tcp, &d.udp, &d.icmp)
	// Payloads and protocols we do not model end the parse without error.
	d.parser.IgnoreUnsupported = true
	return d
}

// decode parses frame; ok is false when not even Ethernet could be read.
func (d *decoder) decode(frame []byte) (ok bool) {
	d.hasARP, d.hasIPv4, d.hasTCP, d.hasUDP, d.hasICMP = false, false, false, false, false
	err := d.parser.DecodeLayers(frame, &d.decoded)
	for _, t := range d.decoded {
		switch t {
		case layers.LayerTypeARP:
			d.hasARP = len(d.arp.SourceHwAddress) == 6 && len(d.arp.SourceProtAddress) == 4 &&
				len(d.arp.DstHwAddress) == 6 && len(d.arp.DstProtAddress) == 4
		case layers.LayerTypeIPv4:
			d.hasIPv4 = true
		case layers.LayerTypeTCP:
			d.hasTCP = true
		case layers.LayerTypeUDP:
			d.hasUDP = true
		case layers.LayerTypeICMPv4:
			d.hasICMP = true
		}
	}
	// A truncated inner layer still leaves the outer ones usable.
	return len(d.decoded) > 0 || err == nil && len(frame) >= 14
}

func (d *decoder) ethSrc() (mac [6]byte) { copy(mac[:], d.eth.SrcMAC); return mac }
func (d *decoder) ethDst() (mac [6]byte) { copy(mac[:], d.eth.DstMAC); return mac }

func ip4(b []byte) (ip [4]byte) { copy(ip[:], b); return ip }

var broadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func isMulticast(mac [6]byte) bool { return mac[0]&1 != 0 }

// appendARP appends an Ethernet+ARP frame.
func appendARP(b []byte, op uint16, ethDst, sha [6]byte, spa [4]byte, tha [6]byte, tpa [4]byte) []byte {
	start := len(b)
	b = append(b, ethDst[:]...)
	b = append(b, sha[:]...)
	b = binary.BigEndian.AppendUint16(b, ethTypeARP)
	b = append(b, 0, 1, 0x08, 0x00, 6, 4) // Ethernet, IPv4, address sizes
	b = binary.BigEndian.AppendUint16(b, op)
	b = append(b, sha[:]...)
	b = append(b, spa[:]...)
	b = append(b, tha[:]...)
	b = append(b, tpa[:]...)
	return padFrame(b, start)
}

// minFrameLen is the shortest Ethernet frame without FCS; shorter ones are
// padded as a NIC would.
const minFrameLen = 60

func padFrame(b []byte, start int) []byte {
	for len(b)-start < minFrameLen {
		b = append(b, 0)
	}
	return b
}

// tcpRST describes the reset sent to a client that cannot be served.
type tcpRST struct {
	ethDst, ethSrc [6]byte
	src, dst       [4]byte
	sport, dport   uint16
	seq, ack       uint32
	withACK        bool
}

// rstFor answers the segment in d as RFC 793 says for a connection that
// does not exist: seq from the segment's ACK if it has one, else seq 0 and
// an ACK of everything the segment occupied.
func rstFor(d *decoder, vipMAC [6]byte) tcpRST {
	r := tcpRST{
		ethDst: d.ethSrc(), ethSrc: vipMAC,
		src: ip4(d.ip4.DstIP), dst: ip4(d.ip4.SrcIP),
		sport: uint16(d.tcp.DstPort), dport: uint16(d.tcp.SrcPort),
	}
	if d.tcp.ACK {
		r.seq = d.tcp.Ack
		return r
	}
	n := uint32(len(d.tcp.Payload))
	if d.tcp.SYN {
		n++
	}
	if d.tcp.FIN {
		n++
	}
	r.ack, r.withACK = d.tcp.Seq+n, true
	return r
}

// appendTCPRST appends an Ethernet+IPv4+TCP reset with correct checksums.
func appendTCPRST(b []byte, r tcpRST) []byte {
	start := len(b)
	b = append(b, r.ethDst[:]...)
	b = append(b, r.ethSrc[:]...)
	b = binary.BigEndian.AppendUint16(b, ethTypeIPv4)
	ipStart := len(b)
	b = append(b, 0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, protoTCP, 0, 0) // 20+20 bytes, DF, TTL 64
	b = append(b, r.src[:]...)
	b = append(b, r.dst[:]...)
	binary.BigEndian.PutUint16(b[ipStart+10:], checksum(b[ipStart:ipStart+20], 0))
	tcpStart := len(b)
	b = binary.BigEndian.AppendUint16(b, r.sport)
	b = binary.BigEndian.AppendUint16(b, r.dport)
	b = binary.BigEndian.AppendUint32(b, r.seq)
	b = binary.BigEndian.AppendUint32(b, r.ack)
	flags := byte(0x04) // RST
	if r.withACK {
		flags |= 0x10
	}
	b = append(b, 5<<4, flags, 0, 0, 0, 0, 0, 0) // offset, flags, window, checksum, urgent
	pseudo := uint32(ipUint(r.src)>>16) + uint32(ipUint(r.src)&0xffff) +
		uint32(ipUint(r.dst)>>16) + uint32(ipUint(r.dst)&0xffff) + uint32(protoTCP) + 20
	binary.BigEndian.PutUint16(b[tcpStart+16:], checksum(b[tcpStart:], pseudo))
	return padFrame(b, start)
}

// checksum is the Internet checksum of b added to a partial sum.
func checksum(b []byte, sum uint32) uint16 {
	for ; len(b) >= 2; b = b[2:] {
		sum += uint32(b[0])<<8 | uint32(b[1])
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
