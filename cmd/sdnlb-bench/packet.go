package main

import (
	"encoding/binary"
	"fmt"
	"net"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Offsets into an untagged Ethernet frame carrying IPv4 without options.
const (
	ethTypeOff = 12
	ipOff      = 14
	ipCsumOff  = ipOff + 10
	ipSrcOff   = ipOff + 12
	ipDstOff   = ipOff + 16
	tcpOff     = ipOff + 20
	tcpCsumOff = tcpOff + 16
)

// tcpFlagRST is the RST bit of the TCP flags byte.
const tcpFlagRST = 0x04

// Client addressing: setup n of a switch comes from a unique (ip, port).
// Each switch owns a /20 of 10.128.0.0/9 and uses its host addresses from
// .1 on; each client IP uses the ports 1024-65535 before the next is taken.
const (
	clientNet        uint32 = 0x0a800000 // 10.128.0.0
	clientIPsPerSW          = 1<<12 - 2  // not the /20's network and broadcast addresses
	clientPortBase          = 1024
	clientPortsPerIP        = 65536 - clientPortBase
	maxSetupsPerSW   uint64 = clientIPsPerSW * clientPortsPerIP
	maxSwitches             = 1024
)

// clientBase is the first client address of switch index sw.
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

func ip4(v uint32) net.IP {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return net.IP(b[:])
}

func ipU32(ip [4]byte) uint32 { return binary.BigEndian.Uint32(ip[:]) }

// serialize builds a frame with gopacket, lengths and checksums computed.
func serialize(ls ...gopacket.SerializableLayer) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		return nil, fmt.Errorf("serialize: %w", err)
	}
	return buf.Bytes(), nil
}

// synFrame builds a TCP SYN from src to dst with the options a Linux
// client sends, so the controller parses a realistic packet.
func synFrame(srcMAC, dstMAC net.HardwareAddr, src, dst uint32, sport, dport uint16) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dstMAC, EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{
		Version: 4, TTL: 64, Flags: layers.IPv4DontFragment, Id: 1,
		Protocol: layers.IPProtocolTCP, SrcIP: ip4(src), DstIP: ip4(dst),
	}
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
	return serialize(eth, ip, tcp)
}

// arpFrame builds an ARP packet; dstMAC is the Ethernet destination
// (broadcast for requests).
func arpFrame(op uint16, dstMAC, sha net.HardwareAddr, spa uint32, tha net.HardwareAddr, tpa uint32) ([]byte, error) {
	eth := &layers.Ethernet{SrcMAC: sha, DstMAC: dstMAC, EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
		HwAddressSize: 6, ProtAddressSize: 4, Operation: op,
		SourceHwAddress: sha, SourceProtAddress: ip4(spa),
		DstHwAddress: tha, DstProtAddress: ip4(tpa),
	}
	return serialize(eth, arp)
}

var broadcastMAC = net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// synTemplate is a complete OFPT_PACKET_IN message carrying a SYN whose
// client address and port are patched in place for every setup, with both
// checksums updated incrementally (RFC 1624), so sending a setup costs a
// few stores instead of a serialization.
type synTemplate struct {
	msg   []byte
	frame []byte // the Ethernet frame inside msg
	ip    uint32 // client address currently in frame
	port  uint16 // client port currently in frame
}

func newSYNTemplate(msg []byte, frameLen int) *synTemplate {
	frame := msg[len(msg)-frameLen:]
	return &synTemplate{
		msg:   msg,
		frame: frame,
		ip:    binary.BigEndian.Uint32(frame[ipSrcOff:]),
		port:  binary.BigEndian.Uint16(frame[tcpOff:]),
	}
}

// set rewrites the client address and port.
func (t *synTemplate) set(ip uint32, port uint16) {
	f := t.frame
	if ip != t.ip {
		oldHi, oldLo := uint16(t.ip>>16), uint16(t.ip)
		newHi, newLo := uint16(ip>>16), uint16(ip)
		for _, off := range [...]int{ipCsumOff, tcpCsumOff} { // the TCP pseudo-header holds the address too
			c := binary.BigEndian.Uint16(f[off:])
			c = csumReplace(csumReplace(c, oldHi, newHi), oldLo, newLo)
			binary.BigEndian.PutUint16(f[off:], c)
		}
		binary.BigEndian.PutUint32(f[ipSrcOff:], ip)
		t.ip = ip
	}
	if port != t.port {
		c := binary.BigEndian.Uint16(f[tcpCsumOff:])
		binary.BigEndian.PutUint16(f[tcpCsumOff:], csumReplace(c, t.port, port))
		binary.BigEndian.PutUint16(f[tcpOff:], port)
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
	ipv4Src, ipv4Dst uint32
	tcpSrc, tcpDst   uint16
	ethSrc, ethDst   [6]byte
	outPort          uint32 // the last output's
	outputs          uint16 // output actions seen; a NAT rewrite has one
	has              uint16 // bits: 1<<OXM field for the set-fields seen
}

// OpenFlow-basic OXM field numbers the NAT path sets.
const (
	oxmEthDst  = 3
	oxmEthSrc  = 4
	oxmIPv4Src = 11
	oxmIPv4Dst = 12
	oxmTCPSrc  = 13
	oxmTCPDst  = 14
)

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
		r.ipv4Src = binary.BigEndian.Uint32(v)
	case field == oxmIPv4Dst && len(v) == 4:
		r.ipv4Dst = binary.BigEndian.Uint32(v)
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

// tcpInfo reads the addresses of an untagged IPv4/TCP frame.
type tcpInfo struct {
	src, dst     uint32
	sport, dport uint16
	flags        uint8
}

func parseTCP(f []byte) (t tcpInfo, ok bool) {
	if len(f) < ipOff+20 || binary.BigEndian.Uint16(f[ethTypeOff:]) != 0x0800 || f[ipOff+9] != 6 {
		return t, false
	}
	l4 := ipOff + int(f[ipOff]&0x0f)*4
	if len(f) < l4+14 {
		return t, false
	}
	return tcpInfo{
		src:   binary.BigEndian.Uint32(f[ipSrcOff:]),
		dst:   binary.BigEndian.Uint32(f[ipDstOff:]),
		sport: binary.BigEndian.Uint16(f[l4:]),
		dport: binary.BigEndian.Uint16(f[l4+2:]),
		flags: f[l4+13],
	}, true
}

// isLLDP reports whether f is an untagged LLDP frame.
func isLLDP(f []byte) bool {
	return len(f) >= ipOff && binary.BigEndian.Uint16(f[ethTypeOff:]) == 0x88cc
}

// arpInfo is an Ethernet/IPv4 ARP packet.
type arpInfo struct {
	op       uint16
	sha, tha [6]byte
	spa, tpa uint32
}

func parseARP(f []byte) (a arpInfo, ok bool) {
	const arpOff = 14
	if len(f) < arpOff+28 || binary.BigEndian.Uint16(f[ethTypeOff:]) != 0x0806 {
		return a, false
	}
	p := f[arpOff:]
	if binary.BigEndian.Uint16(p) != 1 || binary.BigEndian.Uint16(p[2:]) != 0x0800 || p[4] != 6 || p[5] != 4 {
		return a, false
	}
	return arpInfo{
		op:  binary.BigEndian.Uint16(p[6:]),
		sha: [6]byte(p[8:14]),
		spa: binary.BigEndian.Uint32(p[14:]),
		tha: [6]byte(p[18:24]),
		tpa: binary.BigEndian.Uint32(p[24:]),
	}, true
}
