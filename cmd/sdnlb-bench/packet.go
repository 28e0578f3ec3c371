package main

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Offsets into an untagged Ethernet frame carrying IPv4 without options
// or IPv6 without extension headers.
const (
	ethTypeOff = 12
	ipOff      = 14
	ip4CsumOff = ipOff + 10
	ip4SrcOff  = ipOff + 12
	ip4DstOff  = ipOff + 16
	ip6LenOff  = ipOff + 4
	ip6NextOff = ipOff + 6
	ip6SrcOff  = ipOff + 8
	ip6DstOff  = ipOff + 24
	ip6DataOff = ipOff + 40
)

// tcpFlagRST is the RST bit of the TCP flags byte.
const tcpFlagRST = 0x04

// Client addressing: setup n of a switch comes from a unique (ip, port).
// Each switch owns a /20 of 10.128.0.0/9 and uses its host addresses from
// .1 on; each client IP uses the ports 1024-65535 before the next is taken.
// These client numbers are the addresses of an IPv4 run; an IPv6 run puts
// them in the last 32 bits of clientPrefix6.
const (
	clientNet        uint32 = 0x0a800000 // 10.128.0.0
	clientIPsPerSW          = 1<<12 - 2  // not the /20's network and broadcast addresses
	clientPortBase          = 1024
	clientPortsPerIP        = 65536 - clientPortBase
	maxSetupsPerSW   uint64 = clientIPsPerSW * clientPortsPerIP
	maxSwitches             = 1024
)

// clientPrefix6 is the /96 the clients of an IPv6 run come from:
// 2001:db8:5db0:c100::/96.
var clientPrefix6 = [12]byte{0x20, 0x01, 0x0d, 0xb8, 0x5d, 0xb0, 0xc1, 0x00}

// clientBase is the first client number of switch index sw.
func clientBase(sw int) uint32 { return clientNet + uint32(sw)<<12 + 1 }

// clientAddr is the source of setup n of the switch whose clients start at base.
func clientAddr(base uint32, n uint64) (ip uint32, port uint16) {
	return base + uint32(n/clientPortsPerIP), uint16(clientPortBase + n%clientPortsPerIP)
}

// clientSeq inverts clientAddr; ok is false for an address that is not one
// of this switch's clients.
func clientSeq(base, ip uint32, port uint16) (n uint64, ok bool) {
	k := ip - base // wraps to a huge value below base
	if k >= clientIPsPerSW || port < clientPortBase {
		return 0, false
	}
	return uint64(k)*clientPortsPerIP + uint64(port-clientPortBase), true
}

// clientIP is the address of client number v in the family of like.
func clientIP(like netip.Addr, v uint32) netip.Addr {
	if like.Is4() {
		return netip.AddrFrom4(u32Bytes(v))
	}
	var a [16]byte
	copy(a[:], clientPrefix6[:])
	binary.BigEndian.PutUint32(a[12:], v)
	return netip.AddrFrom16(a)
}

// clientNum inverts clientIP; ok is false for an IPv6 address outside
// clientPrefix6.
func clientNum(a netip.Addr) (v uint32, ok bool) {
	if a.Is4() {
		b := a.As4()
		return binary.BigEndian.Uint32(b[:]), true
	}
	b := a.As16()
	if [12]byte(b[:12]) != clientPrefix6 {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[12:]), true
}

func u32Bytes(v uint32) (b [4]byte) {
	binary.BigEndian.PutUint32(b[:], v)
	return b
}

// familyName names a's IP version as the report does.
func familyName(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// serialize builds a frame with gopacket, lengths and checksums computed.
func serialize(ls ...gopacket.SerializableLayer) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		return nil, fmt.Errorf("serialize: %w", err)
	}
	return buf.Bytes(), nil
}

// ipLayer is the IPv4 or IPv6 header of a packet from src to dst.
func ipLayer(src, dst netip.Addr, proto layers.IPProtocol, hops uint8) gopacket.NetworkLayer {
	if src.Is4() {
		return &layers.IPv4{Version: 4, TTL: hops, Flags: layers.IPv4DontFragment, Id: 1,
			Protocol: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	}
	return &layers.IPv6{Version: 6, HopLimit: hops, NextHeader: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

// ethType is the EtherType of an IP packet from a.
func ethType(a netip.Addr) layers.EthernetType {
	if a.Is4() {
		return layers.EthernetTypeIPv4
	}
	return layers.EthernetTypeIPv6
}

// synFrame builds a TCP SYN from src to dst (IPv4 or IPv6) with the
// options a Linux client sends, so the controller parses a realistic
// packet.
func synFrame(srcMAC, dstMAC net.HardwareAddr, src, dst netip.Addr, sport, dport uint16) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: ethType(src)}
	ip := ipLayer(src, dst, layers.IPProtocolTCP, 64)
	tcp := &layers.TCP{
		SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport),
		Seq: 0x5db0_0001, SYN: true, Window: 64240,
		Options: []layers.TCPOption{
			{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{0x05, 0xb4}},
			{OptionType: layers.TCPOptionKindSACKPermitted, OptionLength: 2},
			{OptionType: layers.TCPOptionKindWindowScale, OptionLength: 3, OptionData: []byte{7}},
		},
	}
	if err := tcp.SetNetworkLayerForChecksum(ip); err != nil {
		return nil, err
	}
	return serialize(eth, ip.(gopacket.SerializableLayer), tcp)
}

// arpFrame builds an ARP packet; dstMAC is the Ethernet destination
// (broadcast for requests).
func arpFrame(op uint16, dstMAC, sha net.HardwareAddr, spa netip.Addr, tha net.HardwareAddr, tpa netip.Addr) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: sha, DstMAC: dstMAC, EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
		HwAddressSize: 6, ProtAddressSize: 4, Operation: op,
		SourceHwAddress: sha, SourceProtAddress: spa.AsSlice(),
		DstHwAddress: tha, DstProtAddress: tpa.AsSlice(),
	}
	return serialize(eth, arp)
}

// Neighbour discovery (RFC 4861), IPv6's ARP.
const (
	ndSolicitation  = 135
	ndAdvertisement = 136
	ndFlagSolicited = 0x40
	ndFlagOverride  = 0x20
)

// allNodes is the link's all-nodes group, where a host answers a
// solicitation from the unspecified address.
var allNodes = netip.MustParseAddr("ff02::1")

// solicitedNode is the group a solicitation for target goes to:
// ff02::1:ff00:0/104 and target's last 24 bits.
func solicitedNode(target netip.Addr) netip.Addr {
	t := target.As16()
	return netip.AddrFrom16([16]byte{0xff, 0x02, 11: 1, 12: 0xff, 13: t[13], 14: t[14], 15: t[15]})
}

// multicastMAC is the Ethernet address of IPv6 group g.
func multicastMAC(g netip.Addr) [6]byte {
	b := g.As16()
	return [6]byte{0x33, 0x33, b[12], b[13], b[14], b[15]}
}

// ndFrame builds a neighbour solicitation or advertisement about target
// from (src, mac) to dst, with the link-layer option for mac that its type
// carries: the source's in a solicitation, the target's in an
// advertisement. A solicitation from the unspecified address carries none.
func ndFrame(typ layers.ICMPv6TypeCode, ethDst, mac [6]byte, src, dst, target netip.Addr, flags uint8) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: mac[:], DstMAC: ethDst[:], EthernetType: layers.EthernetTypeIPv6}
	ip := ipLayer(src, dst, layers.IPProtocolICMPv6, 255) // a host takes neighbour discovery only from its link
	icmp := &layers.ICMPv6{TypeCode: typ}
	if err := icmp.SetNetworkLayerForChecksum(ip); err != nil {
		return nil, err
	}
	var body gopacket.SerializableLayer
	if typ.Type() == ndSolicitation {
		ns := &layers.ICMPv6NeighborSolicitation{TargetAddress: target.AsSlice()}
		if !src.IsUnspecified() {
			ns.Options = layers.ICMPv6Options{{Type: layers.ICMPv6OptSourceAddress, Data: mac[:]}}
		}
		body = ns
	} else {
		body = &layers.ICMPv6NeighborAdvertisement{Flags: flags, TargetAddress: target.AsSlice(),
			Options: layers.ICMPv6Options{{Type: layers.ICMPv6OptTargetAddress, Data: mac[:]}}}
	}
	return serialize(eth, ip.(gopacket.SerializableLayer), icmp, body)
}

var (
	broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	zeroMAC      = net.HardwareAddr{0, 0, 0, 0, 0, 0}
)

// askFrame is how the host (src, mac) asks for target's MAC: an ARP
// request, or a neighbour solicitation to target's solicited-node group.
func askFrame(mac [6]byte, src, target netip.Addr) ([]byte, error) {
	if src.Is4() {
		return arpFrame(1, broadcastMAC, mac[:], src, zeroMAC, target)
	}
	group := solicitedNode(target)
	return ndFrame(layers.CreateICMPv6TypeCode(ndSolicitation, 0), multicastMAC(group), mac, src, group, target, 0)
}

// announceFrame is how the host (ip, mac) tells every host on the link
// where it is: a gratuitous ARP request, or an unsolicited neighbour
// advertisement to all nodes.
func announceFrame(mac [6]byte, ip netip.Addr) ([]byte, error) {
	if ip.Is4() {
		return arpFrame(1, broadcastMAC, mac[:], ip, zeroMAC, ip)
	}
	return ndFrame(layers.CreateICMPv6TypeCode(ndAdvertisement, 0), multicastMAC(allNodes), mac, ip, allNodes, ip, ndFlagOverride)
}

// replyFrame is the answer of the host (ip, mac) to req, which asked for
// ip: an ARP reply, or a neighbour advertisement back to the asker, to all
// nodes when it asked from the unspecified address (RFC 4861 §7.2.4).
func replyFrame(mac [6]byte, ip netip.Addr, req neighbour) ([]byte, error) {
	if ip.Is4() {
		return arpFrame(2, req.mac[:], mac[:], ip, req.mac[:], req.peer)
	}
	dst, dstMAC, flags := req.peer, req.mac, uint8(ndFlagSolicited|ndFlagOverride)
	if dst.IsUnspecified() {
		dst, dstMAC, flags = allNodes, multicastMAC(allNodes), ndFlagOverride
	}
	return ndFrame(layers.CreateICMPv6TypeCode(ndAdvertisement, 0), dstMAC, mac, ip, dst, ip, flags)
}

// synTemplate is a complete OFPT_PACKET_IN message carrying a SYN whose
// client address and port are patched in place for every setup, with the
// checksums updated incrementally (RFC 1624), so sending a setup costs a
// few stores instead of a serialization. The client number is the IPv4
// source address, or the last 32 bits of the IPv6 one.
type synTemplate struct {
	msg       []byte
	frame     []byte // the Ethernet frame inside msg
	clientOff int    // where the client number sits in frame
	csumOffs  []int  // the checksums that cover it: IPv4's and TCP's, or TCP's
	portOff   int    // the TCP source port
	ip        uint32 // client number currently in frame
	port      uint16 // client port currently in frame
}

func newSYNTemplate(msg []byte, frameLen int) *synTemplate {
	frame := msg[len(msg)-frameLen:]
	t := &synTemplate{msg: msg, frame: frame, clientOff: ip4SrcOff, portOff: ipOff + 20}
	t.csumOffs = []int{ip4CsumOff, t.portOff + 16} // the TCP pseudo-header holds the address too
	if binary.BigEndian.Uint16(frame[ethTypeOff:]) == ofp.EthTypeIPv6 {
		t.clientOff, t.portOff = ip6SrcOff+12, ip6DataOff
		t.csumOffs = []int{t.portOff + 16}
	}
	t.ip = binary.BigEndian.Uint32(frame[t.clientOff:])
	t.port = binary.BigEndian.Uint16(frame[t.portOff:])
	return t
}

// set rewrites the client number and port.
func (t *synTemplate) set(ip uint32, port uint16) {
	f := t.frame
	tcpCsumOff := t.portOff + 16
	if ip != t.ip {
		oldHi, oldLo := uint16(t.ip>>16), uint16(t.ip)
		newHi, newLo := uint16(ip>>16), uint16(ip)
		for _, off := range t.csumOffs {
			c := binary.BigEndian.Uint16(f[off:])
			c = csumReplace(csumReplace(c, oldHi, newHi), oldLo, newLo)
			binary.BigEndian.PutUint16(f[off:], c)
		}
		binary.BigEndian.PutUint32(f[t.clientOff:], ip)
		t.ip = ip
	}
	if port != t.port {
		c := binary.BigEndian.Uint16(f[tcpCsumOff:])
		binary.BigEndian.PutUint16(f[tcpCsumOff:], csumReplace(c, t.port, port))
		binary.BigEndian.PutUint16(f[t.portOff:], port)
		t.port = port
	}
}

// csumReplace updates an Internet checksum for one 16-bit word changing
// from old to new: HC' = ~(~HC + ~m + m') (RFC 1624, eqn. 3).
func csumReplace(hc, old, new uint16) uint16 {
	sum := uint32(^hc) + uint32(^old) + uint32(new)
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	return ^uint16(sum)
}

// rewrite is what a packet-out's actions (or a flow's apply-actions) do
// to the frame, read minimally: the set-fields the NAT path uses and the
// output port.
//
// It reads the action bytes by hand instead of through ofp.DecodeInto and
// oftable.ApplyActions because the codec boxes every decoded action, which
// costs a NAT packet-out 5 allocations and about 450 ns against none and
// 50 ns here (BenchmarkPacketOutCheck), and an embedded run counts those
// allocations in the controller's allocations per setup;
// TestPacketOutCheck_AgreesWithOftable keeps the two readings in step.
type rewrite struct {
	ipSrc, ipDst   netip.Addr // set by ipv4_* or ipv6_*, as has tells
	tcpSrc, tcpDst uint16
	ethSrc, ethDst [6]byte
	outPort        uint32 // the last output's
	outputs        uint16 // output actions seen; a NAT rewrite has one
	has            uint32 // bits: 1<<OXM field for the set-fields seen
}

// OpenFlow-basic OXM field numbers the NAT path sets.
const (
	oxmEthDst  = 3
	oxmEthSrc  = 4
	oxmIPv4Src = 11
	oxmIPv4Dst = 12
	oxmTCPSrc  = 13
	oxmTCPDst  = 14
	oxmIPv6Src = 26
	oxmIPv6Dst = 27
)

// oxmIPSrc and oxmIPDst are the fields that set a's family's addresses.
func oxmIPSrc(a netip.Addr) uint16 {
	if a.Is4() {
		return oxmIPv4Src
	}
	return oxmIPv6Src
}

func oxmIPDst(a netip.Addr) uint16 {
	if a.Is4() {
		return oxmIPv4Dst
	}
	return oxmIPv6Dst
}

func (r *rewrite) set(field uint16) bool { return r.has&(1<<field) != 0 }

// parseActions reads a list of ofp_action structures.
func parseActions(a []byte, r *rewrite) error {
	for len(a) > 0 {
		if len(a) < 8 {
			return errBadActions
		}
		typ := binary.BigEndian.Uint16(a)
		n := int(binary.BigEndian.Uint16(a[2:]))
		if n < 8 || n > len(a) || n%8 != 0 {
			return errBadActions
		}
		switch typ {
		case 0: // OFPAT_OUTPUT
			r.outPort = binary.BigEndian.Uint32(a[4:])
			r.outputs++
		case 25: // OFPAT_SET_FIELD
			readSetField(a[4:n], r)
		}
		a = a[n:]
	}
	return nil
}

func readSetField(oxm []byte, r *rewrite) {
	if len(oxm) < 4 || binary.BigEndian.Uint16(oxm) != 0x8000 || oxm[2]&1 != 0 {
		return
	}
	field, v := uint16(oxm[2]>>1), oxm[4:]
	if int(oxm[3]) > len(v) {
		return
	}
	v = v[:oxm[3]]
	switch {
	case field == oxmIPv4Src && len(v) == 4:
		r.ipSrc = netip.AddrFrom4([4]byte(v))
	case field == oxmIPv4Dst && len(v) == 4:
		r.ipDst = netip.AddrFrom4([4]byte(v))
	case field == oxmIPv6Src && len(v) == 16:
		r.ipSrc = netip.AddrFrom16([16]byte(v))
	case field == oxmIPv6Dst && len(v) == 16:
		r.ipDst = netip.AddrFrom16([16]byte(v))
	case field == oxmTCPSrc && len(v) == 2:
		r.tcpSrc = binary.BigEndian.Uint16(v)
	case field == oxmTCPDst && len(v) == 2:
		r.tcpDst = binary.BigEndian.Uint16(v)
	case field == oxmEthSrc && len(v) == 6:
		r.ethSrc = [6]byte(v)
	case field == oxmEthDst && len(v) == 6:
		r.ethDst = [6]byte(v)
	default:
		return
	}
	r.has |= 1 << field
}

// parsePacketOut splits an OFPT_PACKET_OUT message into its rewrite and
// the frame it carries.
func parsePacketOut(msg []byte, r *rewrite) (frame []byte, err error) {
	const actionsOff = 8 + 16
	if len(msg) < actionsOff {
		return nil, errShortPacketOut
	}
	n := int(binary.BigEndian.Uint16(msg[16:]))
	if actionsOff+n > len(msg) {
		return nil, errShortPacketOut
	}
	*r = rewrite{}
	if err := parseActions(msg[actionsOff:actionsOff+n], r); err != nil {
		return nil, err
	}
	return msg[actionsOff+n:], nil
}

// tcpInfo reads the addresses of an untagged IPv4 or IPv6 TCP frame.
type tcpInfo struct {
	src, dst     netip.Addr
	sport, dport uint16
	flags        uint8
}

func parseTCP(f []byte) (t tcpInfo, ok bool) {
	if len(f) < ip6DataOff {
		return t, false
	}
	var l4 int
	switch binary.BigEndian.Uint16(f[ethTypeOff:]) {
	case ofp.EthTypeIPv4:
		if f[ipOff+9] != ofp.IPProtoTCP {
			return t, false
		}
		l4 = ipOff + int(f[ipOff]&0x0f)*4
		t.src, t.dst = netip.AddrFrom4([4]byte(f[ip4SrcOff:])), netip.AddrFrom4([4]byte(f[ip4DstOff:]))
	case ofp.EthTypeIPv6:
		if f[ip6NextOff] != ofp.IPProtoTCP {
			return t, false
		}
		l4 = ip6DataOff
		t.src, t.dst = netip.AddrFrom16([16]byte(f[ip6SrcOff:])), netip.AddrFrom16([16]byte(f[ip6DstOff:]))
	default:
		return t, false
	}
	if len(f) < l4+14 {
		return tcpInfo{}, false
	}
	t.sport, t.dport, t.flags = binary.BigEndian.Uint16(f[l4:]), binary.BigEndian.Uint16(f[l4+2:]), f[l4+13]
	return t, true
}

// isLLDP reports whether f is an untagged LLDP frame.
func isLLDP(f []byte) bool {
	return len(f) >= ipOff && binary.BigEndian.Uint16(f[ethTypeOff:]) == 0x88cc
}

// neighbour is an ARP packet or an IPv6 neighbour solicitation or
// advertisement: a host asking for an address's MAC, or telling it.
type neighbour struct {
	request bool       // ARP request, neighbour solicitation
	about   netip.Addr // the address asked for or told: ARP tpa (request) or spa (reply), the ND target
	// mac is the sender's link-layer address as it gives it: ARP sha,
	// the ND link-layer option, or the Ethernet source without one.
	mac [6]byte
	// peer is the asker (ARP spa, IPv6 source: :: for a probe) in a
	// request, and whom a reply answers (ARP tpa, IPv6 destination:
	// ff02::1 for all nodes).
	peer netip.Addr
}

// parseNeighbour reads an ARP packet or a neighbour discovery message.
func parseNeighbour(f []byte) (neighbour, bool) {
	if n, ok := parseARP(f); ok {
		return n, true
	}
	return parseND(f)
}

func parseARP(f []byte) (n neighbour, ok bool) {
	const arpOff = 14
	if len(f) < arpOff+28 || binary.BigEndian.Uint16(f[ethTypeOff:]) != ofp.EthTypeARP {
		return n, false
	}
	p := f[arpOff:]
	if binary.BigEndian.Uint16(p) != 1 || binary.BigEndian.Uint16(p[2:]) != ofp.EthTypeIPv4 || p[4] != 6 || p[5] != 4 {
		return n, false
	}
	op := binary.BigEndian.Uint16(p[6:])
	spa, tpa := netip.AddrFrom4([4]byte(p[14:])), netip.AddrFrom4([4]byte(p[24:]))
	n = neighbour{request: op == 1, mac: [6]byte(p[8:14]), about: tpa, peer: spa}
	switch op {
	case 1:
	case 2:
		n.about, n.peer = spa, tpa
	default:
		return neighbour{}, false
	}
	return n, true
}

// parseND reads a neighbour solicitation or advertisement in an untagged
// frame without extension headers. A solicitation must go to its target's
// solicited-node group (at that group's MAC) or to the target itself, as
// the target's host takes no other.
func parseND(f []byte) (n neighbour, ok bool) {
	const icmpOff = ip6DataOff
	const optsOff = icmpOff + 24
	if len(f) < optsOff || binary.BigEndian.Uint16(f[ethTypeOff:]) != ofp.EthTypeIPv6 || f[ip6NextOff] != ofp.IPProtoICMPv6 {
		return n, false
	}
	end := ip6DataOff + int(binary.BigEndian.Uint16(f[ip6LenOff:]))
	typ := f[icmpOff]
	if end < optsOff || end > len(f) || typ != ndSolicitation && typ != ndAdvertisement || f[icmpOff+1] != 0 {
		return n, false
	}
	src, dst := netip.AddrFrom16([16]byte(f[ip6SrcOff:])), netip.AddrFrom16([16]byte(f[ip6DstOff:]))
	n = neighbour{request: typ == ndSolicitation, about: netip.AddrFrom16([16]byte(f[icmpOff+8:])), mac: [6]byte(f[6:12])}
	opt := byte(layers.ICMPv6OptTargetAddress)
	if n.request {
		n.peer, opt = src, byte(layers.ICMPv6OptSourceAddress)
		if dst != n.about && (dst != solicitedNode(n.about) || [6]byte(f[:6]) != multicastMAC(dst)) {
			return neighbour{}, false
		}
	} else {
		n.peer = dst
	}
	for o := f[optsOff:end]; len(o) >= 8; {
		l := int(o[1]) * 8
		if l == 0 || l > len(o) {
			return neighbour{}, false
		}
		if o[0] == opt {
			n.mac = [6]byte(o[2:8])
		}
		o = o[l:]
	}
	return n, true
}
