package controller

import (
	"encoding/binary"
	"net/netip"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// ICMP errors to a VIP. A router between a VIP and its client that cannot
// carry a member's reply tells the reply's source, the VIP, that it was too
// big (IPv6 packet too big, IPv4 fragmentation needed). The member must get
// it, or path MTU discovery fails and the connection stalls. The switch's
// tracker finds the error related to the connection in the VIP zone and
// sends it up with the connection's label and mark (the member's address
// and, for NAT, port); the controller sends it on to that member as the
// member would have got it without the VIP between: for NAT the inner
// packet's source becomes the member's address and port again.

// icmpErrorHeader is the ICMP header before the packet an error quotes:
// type, code, checksum, and the MTU (IPv6) or unused and next-hop MTU
// (IPv4).
const icmpErrorHeader = 8

// forwardICMPError sends an ICMP error the tracker related to a SWITCH
// connection (match holds its label and mark) on to the connection's
// member, and reports whether it did. The VIP is the quoted packet's
// source.
func (dp *dataplane) forwardICMPError(p *packetIn, match *ofp.Match, out *outbox) bool {
	label, okLabel := match.GetNX(ofp.NXMCTLabel)
	if !okLabel || len(label.Value()) != 16 {
		return false
	}
	k, ok := quotedSource(p.frame, len(p.eth.Contents))
	if !ok {
		return false
	}
	v := p.snap.vip(k)
	if v == nil {
		return false
	}
	member := labelAddress([16]byte(label.Value()))
	h, known := dp.learner.host(member)
	if !known || h.port == 0 || member.Is4() != v.ip.Is4() {
		return false
	}
	dp.frame = append(dp.frame[:0], p.frame...)
	if !v.dsr() {
		port := uint16(0)
		if mark, ok := match.GetNX(ofp.NXMCTMark); ok {
			port = uint16(mark.Uint())
		}
		if !unNATError(dp.frame, len(p.eth.Contents), member, port) {
			return false
		}
	}
	copy(dp.frame[0:6], h.mac[:])
	dp.packetOut(p.inPort, h.port, dp.frame, out)
	return true
}

// quotedSource is the source of the packet the ICMP error in frame (its
// IP header at l3) quotes, as a VIP is keyed: address, protocol and port.
func quotedSource(frame []byte, l3 int) (vipKey, bool) {
	var k vipKey
	var l4 int
	if len(frame) > l3 && frame[l3]>>4 == 6 {
		inner := l3 + 40 + icmpErrorHeader
		if len(frame) < inner+40 {
			return k, false
		}
		k.ip, k.proto, l4 = netip.AddrFrom16([16]byte(frame[inner+8:inner+24])), frame[inner+6], inner+40
	} else {
		if len(frame) < l3+20 {
			return k, false
		}
		inner := l3 + int(frame[l3]&0x0f)*4 + icmpErrorHeader
		if len(frame) < inner+20 {
			return k, false
		}
		k.ip, k.proto, l4 = netip.AddrFrom4([4]byte(frame[inner+12:inner+16])), frame[inner+9], inner+int(frame[inner]&0x0f)*4
	}
	if hasPorts(k.proto) {
		if len(frame) < l4+2 {
			return k, false
		}
		k.port = binary.BigEndian.Uint16(frame[l4:])
	}
	if k.proto == protoICMPv6 {
		k.proto = protoICMP
	}
	return k, true
}

// unNATError rewrites, in place, the ICMP error in frame (its IP header at
// l3) for member: the error goes to the member, and the packet it quotes,
// a reply the switch sent from the VIP, comes from the member's address
// and, when port is not 0, port, as the member sent it. The checksums the
// rewrite touches are made again; the quoted packet's transport checksum,
// which no receiver checks, is left. It reports false for a frame too short
// to hold what it rewrites.
func unNATError(frame []byte, l3 int, member netip.Addr, port uint16) bool {
	if member.Is6() {
		const ipLen = 40 // an error that reaches the tracker has no extension header
		icmp := l3 + ipLen
		inner := icmp + icmpErrorHeader
		if len(frame) < inner+ipLen || frame[l3+6] != protoICMPv6 {
			return false
		}
		addr := member.As16()
		copy(frame[l3+24:l3+40], addr[:]) // destination
		copy(frame[inner+8:inner+24], addr[:])
		if next := frame[inner+6]; port != 0 && hasPorts(next) && len(frame) >= inner+ipLen+2 {
			binary.BigEndian.PutUint16(frame[inner+ipLen:], port)
		}
		src := netip.AddrFrom16([16]byte(frame[l3+8 : l3+24]))
		n := int(binary.BigEndian.Uint16(frame[l3+4:]))
		if icmp+n > len(frame) {
			return false
		}
		binary.BigEndian.PutUint16(frame[icmp+2:], 0)
		binary.BigEndian.PutUint16(frame[icmp+2:], checksum(frame[icmp:icmp+n], pseudoHeaderSum(src, member, protoICMPv6, n)))
		return true
	}
	ihl := int(frame[l3]&0x0f) * 4
	icmp := l3 + ihl
	inner := icmp + icmpErrorHeader
	total := int(binary.BigEndian.Uint16(frame[l3+2:]))
	if ihl < 20 || len(frame) < inner+20 || l3+total > len(frame) {
		return false
	}
	addr := member.As4()
	copy(frame[l3+16:l3+20], addr[:])
	binary.BigEndian.PutUint16(frame[l3+10:], 0)
	binary.BigEndian.PutUint16(frame[l3+10:], checksum(frame[l3:icmp], 0))
	innerIHL := int(frame[inner]&0x0f) * 4
	if innerIHL < 20 || len(frame) < inner+innerIHL {
		return false
	}
	copy(frame[inner+12:inner+16], addr[:])
	binary.BigEndian.PutUint16(frame[inner+10:], 0)
	binary.BigEndian.PutUint16(frame[inner+10:], checksum(frame[inner:inner+innerIHL], 0))
	if next := frame[inner+9]; port != 0 && hasPorts(next) && len(frame) >= inner+innerIHL+2 {
		binary.BigEndian.PutUint16(frame[inner+innerIHL:], port)
	}
	binary.BigEndian.PutUint16(frame[icmp+2:], 0)
	binary.BigEndian.PutUint16(frame[icmp+2:], checksum(frame[icmp:l3+total], 0))
	return true
}
