package controller

import (
	"encoding/binary"
	"net/netip"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Addresses are netip.Addr of either family, without a zone. What differs
// by family on the wire (the EtherType, the address fields, the ICMP
// protocol and its echo types, ARP or neighbour discovery) is chosen here
// by the address, so the rest of the controller builds one flow for both.

const (
	ethTypeIPv6 uint16 = 0x86dd

	protoICMPv6 uint8 = 58

	icmpv6EchoRequest uint8 = 128
	icmpv6EchoReply   uint8 = 129
)

// addrFrom is the address in b, a 4- or 16-byte slice as packets carry
// them; any other length is the zero Addr.
func addrFrom(b []byte) netip.Addr {
	switch len(b) {
	case 4:
		return netip.AddrFrom4([4]byte(b))
	case 16:
		return netip.AddrFrom16([16]byte(b))
	}
	return netip.Addr{}
}

// ethTypeOf is the EtherType of packets to and from a.
func ethTypeOf(a netip.Addr) uint16 {
	if a.Is6() {
		return ethTypeIPv6
	}
	return ethTypeIPv4
}

func matchIPSrc(a netip.Addr) ofp.OXM {
	if a.Is6() {
		return ofp.MatchIPv6Src(a.As16())
	}
	return ofp.MatchIPv4Src(a.As4())
}

func matchIPDst(a netip.Addr) ofp.OXM {
	if a.Is6() {
		return ofp.MatchIPv6Dst(a.As16())
	}
	return ofp.MatchIPv4Dst(a.As4())
}

// matchedAddr is the address m matches in field v4 or v6, one family's
// and the other's field for the same side of the packet.
func matchedAddr(m *ofp.Match, v4, v6 ofp.OXMField) (netip.Addr, bool) {
	if o, ok := m.Get(v4); ok {
		return netip.AddrFrom4(o.IPv4()), true
	}
	if o, ok := m.Get(v6); ok {
		return netip.AddrFrom16(o.IPv6()), true
	}
	return netip.Addr{}, false
}

// matchedDst and matchedSrc are a match's destination and source address.
func matchedDst(m *ofp.Match) (netip.Addr, bool) {
	return matchedAddr(m, ofp.OXMIPv4Dst, ofp.OXMIPv6Dst)
}

func matchedSrc(m *ofp.Match) (netip.Addr, bool) {
	return matchedAddr(m, ofp.OXMIPv4Src, ofp.OXMIPv6Src)
}

// setIPDst is the destination address actions set, in either family.
func setIPDst(actions []ofp.Action) (netip.Addr, bool) {
	if o, ok := setField(actions, ofp.OXMIPv4Dst); ok {
		return setAddr(o), true
	}
	if o, ok := setField(actions, ofp.OXMIPv6Dst); ok {
		return setAddr(o), true
	}
	return netip.Addr{}, false
}

// setAddr is the address a set-field of either family's field writes.
func setAddr(o ofp.OXM) netip.Addr {
	if o.Field == ofp.OXMIPv6Src || o.Field == ofp.OXMIPv6Dst {
		return netip.AddrFrom16(o.IPv6())
	}
	return netip.AddrFrom4(o.IPv4())
}

// wireProto is the IP protocol number packets of a VIP protocol carry
// with a's family: ICMP is ICMPv6 on IPv6.
func wireProto(proto uint8, a netip.Addr) uint8 {
	if proto == protoICMP && a.Is6() {
		return protoICMPv6
	}
	return proto
}

// matchEcho matches ICMP echo requests (request true) or replies in a's
// family.
func matchEcho(a netip.Addr, request bool) ofp.OXM {
	switch {
	case a.Is6() && request:
		return ofp.MatchICMPv6Type(icmpv6EchoRequest)
	case a.Is6():
		return ofp.MatchICMPv6Type(icmpv6EchoReply)
	case request:
		return ofp.MatchICMPv4Type(icmpEchoRequest)
	}
	return ofp.MatchICMPv4Type(icmpEchoReply)
}

// ICMP errors that say a packet was too big for the path, which a member
// must get for path MTU discovery to work.
const (
	icmpv6PacketTooBig      uint8 = 2
	icmpUnreachable         uint8 = 3
	icmpFragmentationNeeded uint8 = 4 // the code of icmpUnreachable
)

// matchTooBig matches the ICMP error of a's family that says a packet was
// too big for the path.
func matchTooBig(a netip.Addr) []ofp.OXM {
	if a.Is6() {
		return []ofp.OXM{ofp.MatchEthType(ethTypeIPv6), ofp.MatchIPProto(protoICMPv6), ofp.MatchICMPv6Type(icmpv6PacketTooBig)}
	}
	return []ofp.OXM{ofp.MatchEthType(ethTypeIPv4), ofp.MatchIPProto(protoICMP), ofp.MatchICMPv4Type(icmpUnreachable),
		ofp.MatchICMPv4Code(icmpFragmentationNeeded)}
}

// fold32 is a 32-bit digest of a for hashes: an IPv4 address as a number,
// an IPv6 address's words mixed.
func fold32(a netip.Addr) uint32 {
	if a.Is4() {
		b := a.As4()
		return binary.BigEndian.Uint32(b[:])
	}
	b := a.As16()
	h := binary.BigEndian.Uint64(b[:8])*0x9e3779b97f4a7c15 ^ binary.BigEndian.Uint64(b[8:])
	h ^= h >> 29
	h *= 0xbf58476d1ce4e5b9
	return uint32(h>>32 ^ h)
}

// addressLabel is a connection tracker label that holds a: an IPv4 address
// in its low 32 bits, an IPv6 address in all 128.
func addressLabel(a netip.Addr) [16]byte {
	if a.Is6() {
		return a.As16()
	}
	var l [16]byte
	b := a.As4()
	copy(l[12:], b[:])
	return l
}

// labelAddress is the address a label holds (addressLabel): IPv4 when its
// first 96 bits are zero. No member has an IPv6 address there (the store
// refuses ::/96).
func labelAddress(l [16]byte) netip.Addr {
	if binary.BigEndian.Uint64(l[:8]) == 0 && binary.BigEndian.Uint32(l[8:12]) == 0 {
		return netip.AddrFrom4([4]byte(l[12:]))
	}
	return netip.AddrFrom16(l)
}

// labelToDst moves a connection's label, its member's address, into the
// destination address of a packet in a's family.
func labelToDst(a netip.Addr) ofp.ActionRegMove {
	if a.Is6() {
		return ofp.ActionRegMove{NBits: 128, Src: ofp.NXMCTLabel, Dst: ofp.NXMIPv6Dst}
	}
	return ofp.ActionRegMove{NBits: 32, Src: ofp.NXMCTLabel, Dst: ofp.NXMIPDst}
}
