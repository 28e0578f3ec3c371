package dataplane

import (
	"encoding/binary"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/flowhash"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// decoder parses packet-in frames with preallocated layers, so parsing
// allocates nothing (but the options of a neighbour discovery message).
// One per switch; not safe for concurrent use.
type decoder struct {
	parser  *gopacket.DecodingLayerParser
	decoded []gopacket.LayerType
	eth     layers.Ethernet
	arp     layers.ARP
	ip4     layers.IPv4
	ip6     layers.IPv6
	tcp     layers.TCP
	udp     layers.UDP
	icmp    layers.ICMPv4
	icmp6   layers.ICMPv6
	ns      layers.ICMPv6NeighborSolicitation
	na      layers.ICMPv6NeighborAdvertisement

	hasARP, hasIPv4, hasIPv6, hasTCP, hasUDP, hasICMP, hasICMPv6, hasNS, hasNA bool
}

func newDecoder() *decoder {
	d := &decoder{decoded: make([]gopacket.LayerType, 0, 8)}
	d.parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &d.eth, &d.arp, &d.ip4, &d.ip6,
		&d.tcp, &d.udp, &d.icmp, &d.icmp6, &d.ns, &d.na)
	// Payloads and protocols we do not model end the parse without error.
	d.parser.IgnoreUnsupported = true
	return d
}

// decode parses frame; ok is false when not even Ethernet could be read.
func (d *decoder) decode(frame []byte) (ok bool) {
	d.hasARP, d.hasIPv4, d.hasIPv6, d.hasTCP, d.hasUDP = false, false, false, false, false
	d.hasICMP, d.hasICMPv6, d.hasNS, d.hasNA = false, false, false, false
	err := d.parser.DecodeLayers(frame, &d.decoded)
	for _, t := range d.decoded {
		switch t {
		case layers.LayerTypeARP:
			d.hasARP = d.arpOfIPv4()
		case layers.LayerTypeIPv4:
			d.hasIPv4 = true
		case layers.LayerTypeIPv6:
			d.hasIPv6 = true
		case layers.LayerTypeTCP:
			d.hasTCP = true
		case layers.LayerTypeUDP:
			d.hasUDP = true
		case layers.LayerTypeICMPv4:
			d.hasICMP = true
		case layers.LayerTypeICMPv6:
			d.hasICMPv6 = true
		case layers.LayerTypeICMPv6NeighborSolicitation:
			d.hasNS = true
		case layers.LayerTypeICMPv6NeighborAdvertisement:
			d.hasNA = true
		}
	}
	// A truncated inner layer still leaves the outer ones usable.
	return len(d.decoded) > 0 || err == nil && len(frame) >= 14
}

// arpOfIPv4 reports whether the decoded ARP packet maps IPv4 addresses to
// Ethernet ones, the only ARP the dataplane reads.
func (d *decoder) arpOfIPv4() bool {
	return len(d.arp.SourceHwAddress) == 6 && len(d.arp.SourceProtAddress) == 4 &&
		len(d.arp.DstHwAddress) == 6 && len(d.arp.DstProtAddress) == 4
}

func (d *decoder) ethSrc() (mac [6]byte) { copy(mac[:], d.eth.SrcMAC); return mac }

func (d *decoder) ethDst() (mac [6]byte) { copy(mac[:], d.eth.DstMAC); return mac }

// hasIP reports whether the frame carries an IP packet of either family.
func (d *decoder) hasIP() bool { return d.hasIPv4 || d.hasIPv6 }

// hasND reports whether the frame carries a neighbour solicitation or
// advertisement, IPv6's ARP.
func (d *decoder) hasND() bool { return d.hasNS || d.hasNA }

// srcIP and dstIP are the IP packet's addresses.
func (d *decoder) srcIP() netip.Addr {
	if d.hasIPv6 {
		return model.AddrFrom(d.ip6.SrcIP)
	}
	return model.AddrFrom(d.ip4.SrcIP)
}

func (d *decoder) dstIP() netip.Addr {
	if d.hasIPv6 {
		return model.AddrFrom(d.ip6.DstIP)
	}
	return model.AddrFrom(d.ip4.DstIP)
}

// hashedFlow is what Open vSwitch's multipath hashes of the IP packet.
func (d *decoder) hashedFlow() flowhash.Flow {
	f := flowhash.Flow{EthSrc: d.ethSrc(), EthDst: d.ethDst(), EthType: ofp.EthTypeIPv4, Src: d.srcIP(), Dst: d.dstIP(),
		Proto: uint8(d.ip4.Protocol)}
	if d.hasIPv6 {
		f.EthType, f.Proto = ofp.EthTypeIPv6, uint8(d.ip6.NextHeader)
	}
	switch {
	case d.hasTCP:
		f.SrcPort, f.DstPort = uint16(d.tcp.SrcPort), uint16(d.tcp.DstPort)
	case d.hasUDP:
		f.SrcPort, f.DstPort = uint16(d.udp.SrcPort), uint16(d.udp.DstPort)
	}
	return f
}

// proto is the IP packet's protocol as a VIP names it: ICMPv6 counts as
// ICMP.
func (d *decoder) proto() uint8 {
	if d.hasIPv6 {
		if d.ip6.NextHeader == layers.IPProtocolICMPv6 {
			return ofp.IPProtoICMP
		}
		return uint8(d.ip6.NextHeader)
	}
	return uint8(d.ip4.Protocol)
}

// isTooBig reports whether the packet is an ICMP error saying that a
// packet was too big for the path: IPv6 packet too big, IPv4
// fragmentation needed.
func (d *decoder) isTooBig() bool {
	if d.hasICMPv6 {
		return d.icmp6.TypeCode.Type() == model.ICMPv6PacketTooBig
	}
	return d.hasICMP && d.icmp.TypeCode == layers.CreateICMPv4TypeCode(model.ICMPUnreachable, model.ICMPFragmentationNeeded)
}

// isEcho reports whether the packet is an ICMP echo request (request
// true) or reply, in its family.
func (d *decoder) isEcho(request bool) bool {
	switch {
	case d.hasICMPv6 && request:
		return d.icmp6.TypeCode.Type() == layers.ICMPv6TypeEchoRequest
	case d.hasICMPv6:
		return d.icmp6.TypeCode.Type() == layers.ICMPv6TypeEchoReply
	case d.hasICMP && request:
		return d.icmp.TypeCode.Type() == model.ICMPEchoRequest
	case d.hasICMP:
		return d.icmp.TypeCode.Type() == model.ICMPEchoReply
	}
	return false
}

var broadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func isMulticast(mac [6]byte) bool { return mac[0]&1 != 0 }

// appendARP appends an Ethernet+ARP frame.
func appendARP(b []byte, op uint16, ethDst, sha [6]byte, spa [4]byte, tha [6]byte, tpa [4]byte) []byte {
	start := len(b)
	b = append(b, ethDst[:]...)
	b = append(b, sha[:]...)
	b = binary.BigEndian.AppendUint16(b, ofp.EthTypeARP)
	b = append(b, 0, 1, 0x08, 0x00, 6, 4) // Ethernet, IPv4, address sizes
	b = binary.BigEndian.AppendUint16(b, op)
	b = append(b, sha[:]...)
	b = append(b, spa[:]...)
	b = append(b, tha[:]...)
	b = append(b, tpa[:]...)
	return PadFrame(b, start)
}

// minFrameLen is the shortest Ethernet frame without FCS; shorter ones are
// padded as a NIC would.
const minFrameLen = 60

func PadFrame(b []byte, start int) []byte {
	for len(b)-start < minFrameLen {
		b = append(b, 0)
	}
	return b
}

// tcpRST describes the reset sent to a client that cannot be served.
type tcpRST struct {
	ethDst, ethSrc [6]byte
	src, dst       netip.Addr
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
		src: d.dstIP(), dst: d.srcIP(),
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

// appendTCPRST appends an Ethernet+IP+TCP reset with correct checksums,
// in the family of its addresses.
func appendTCPRST(b []byte, r tcpRST) []byte {
	const tcpLen = 20
	start := len(b)
	b = append(b, r.ethDst[:]...)
	b = append(b, r.ethSrc[:]...)
	b = binary.BigEndian.AppendUint16(b, model.EthTypeOf(r.src))
	b = appendIPHeader(b, r.src, r.dst, ofp.IPProtoTCP, tcpLen)
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
	binary.BigEndian.PutUint16(b[tcpStart+16:], checksum(b[tcpStart:], pseudoHeaderSum(r.src, r.dst, ofp.IPProtoTCP, tcpLen)))
	return PadFrame(b, start)
}

// appendIPHeader appends the IP header of a packet from src to dst
// carrying n bytes of proto: IPv4 with DF and TTL 64 and its checksum, or
// IPv6 with hop limit 64 (255 for neighbour discovery, which a host
// takes only from its link).
func appendIPHeader(b []byte, src, dst netip.Addr, proto uint8, n int) []byte {
	if src.Is6() {
		hops := byte(64)
		if proto == ofp.IPProtoICMPv6 {
			hops = 255
		}
		b = append(b, 0x60, 0, 0, 0)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
		b = append(b, proto, hops)
		b = append(b, src.AsSlice()...)
		return append(b, dst.AsSlice()...)
	}
	ipStart := len(b)
	b = append(b, 0x45, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(20+n))
	b = append(b, 0, 0, 0x40, 0, 64, proto, 0, 0)
	b = append(b, src.AsSlice()...)
	b = append(b, dst.AsSlice()...)
	binary.BigEndian.PutUint16(b[ipStart+10:], checksum(b[ipStart:ipStart+20], 0))
	return b
}

// pseudoHeaderSum is the partial sum of the pseudo-header that TCP, UDP
// and ICMPv6 checksums cover: the addresses, the protocol and the length.
func pseudoHeaderSum(src, dst netip.Addr, proto uint8, n int) uint32 {
	sum := uint32(proto) + uint32(n)
	for _, a := range [2]netip.Addr{src, dst} {
		b := model.AddressLabel(a) // an IPv4 address in the last 4 bytes, zeros before
		for i := 0; i < 16; i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
	}
	return sum
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

// solicitedNode is the multicast address a solicitation for target goes
// to: ff02::1:ff00:0/104 and target's last 24 bits.
func solicitedNode(target netip.Addr) netip.Addr {
	t := target.As16()
	return netip.AddrFrom16([16]byte{0xff, 0x02, 10: 0, 11: 1, 12: 0xff, 13: t[13], 14: t[14], 15: t[15]})
}

// appendNA appends an Ethernet+IPv6 neighbour advertisement saying that
// target is at mac, from target to dst (the asker, or AllNodes) with
// flags (NDFlagSolicited, NDFlagOverride).
func appendNA(b []byte, ethDst, mac [6]byte, target, dst netip.Addr, flags uint8) []byte {
	return appendND(b, ethDst, mac, target, dst, model.NDAdvertisement, flags, target, model.NDOptionTargetLL)
}

// appendNS appends an Ethernet+IPv6 neighbour solicitation for target from
// mac, to target's solicited-node group, sent from the unspecified address
// as duplicate address detection does (RFC 4861 §7.2.2 without a source
// link-layer option): a host that holds target on another interface (a
// DSR member) answers it as well, to AllNodes.
func appendNS(b []byte, mac [6]byte, target netip.Addr) []byte {
	group := solicitedNode(target)
	return appendND(b, model.MulticastMAC(group), mac, netip.IPv6Unspecified(), group, model.NDSolicitation, 0, target, 0)
}

// appendND appends a neighbour discovery message of type typ about target,
// with a link-layer address option of optType for mac (none when 0).
func appendND(b []byte, ethDst, mac [6]byte, src, dst netip.Addr, typ, flags uint8, target netip.Addr, optType uint8) []byte {
	n := 24
	if optType != 0 {
		n += 8
	}
	start := len(b)
	b = append(b, ethDst[:]...)
	b = append(b, mac[:]...)
	b = binary.BigEndian.AppendUint16(b, ofp.EthTypeIPv6)
	b = appendIPHeader(b, src, dst, ofp.IPProtoICMPv6, n)
	icmpStart := len(b)
	b = append(b, typ, 0, 0, 0, flags, 0, 0, 0)
	b = append(b, target.AsSlice()...)
	if optType != 0 {
		b = append(b, optType, 1)
		b = append(b, mac[:]...)
	}
	binary.BigEndian.PutUint16(b[icmpStart+2:], checksum(b[icmpStart:], pseudoHeaderSum(src, dst, ofp.IPProtoICMPv6, n)))
	return PadFrame(b, start)
}
