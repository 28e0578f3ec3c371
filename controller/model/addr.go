package model

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
	icmpv6EchoRequest uint8 = 128
	icmpv6EchoReply   uint8 = 129
)

// AddrFrom is the address in b, a 4- or 16-byte slice as packets carry
// them; any other length is the zero Addr.
func AddrFrom(b []byte) netip.Addr {
	switch len(b) {
	case 4:
		return netip.AddrFrom4([4]byte(b))
	case 16:
		return netip.AddrFrom16([16]byte(b))
	}
	return netip.Addr{}
}

// EthTypeOf is the EtherType of packets to and from a.
func EthTypeOf(a netip.Addr) uint16 {
	if a.Is6() {
		return ofp.EthTypeIPv6
	}
	return ofp.EthTypeIPv4
}

func MatchIPSrc(a netip.Addr) ofp.OXM {
	if a.Is6() {
		return ofp.MatchIPv6Src(a.As16())
	}
	return ofp.MatchIPv4Src(a.As4())
}

func MatchIPDst(a netip.Addr) ofp.OXM {
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

// matchedDst and MatchedSrc are a match's destination and source address.
func matchedDst(m *ofp.Match) (netip.Addr, bool) {
	return matchedAddr(m, ofp.OXMIPv4Dst, ofp.OXMIPv6Dst)
}

func MatchedSrc(m *ofp.Match) (netip.Addr, bool) {
	return matchedAddr(m, ofp.OXMIPv4Src, ofp.OXMIPv6Src)
}

// SetIPDst is the destination address actions set, in either family.
func SetIPDst(actions []ofp.Action) (netip.Addr, bool) {
	if o, ok := SetField(actions, ofp.OXMIPv4Dst); ok {
		return SetAddr(o), true
	}
	if o, ok := SetField(actions, ofp.OXMIPv6Dst); ok {
		return SetAddr(o), true
	}
	return netip.Addr{}, false
}

// SetAddr is the address a set-field of either family's field writes.
func SetAddr(o ofp.OXM) netip.Addr {
	if o.Field == ofp.OXMIPv6Src || o.Field == ofp.OXMIPv6Dst {
		return netip.AddrFrom16(o.IPv6())
	}
	return netip.AddrFrom4(o.IPv4())
}

// WireProto is the IP protocol number packets of a VIP protocol carry
// with a's family: ICMP is ICMPv6 on IPv6.
func WireProto(proto uint8, a netip.Addr) uint8 {
	if proto == ofp.IPProtoICMP && a.Is6() {
		return ofp.IPProtoICMPv6
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
		return ofp.MatchICMPv4Type(ICMPEchoRequest)
	}
	return ofp.MatchICMPv4Type(ICMPEchoReply)
}

// ICMP errors that say a packet was too big for the path, which a member
// must get for path MTU discovery to work.
const (
	ICMPv6PacketTooBig      uint8 = 2
	ICMPUnreachable         uint8 = 3
	ICMPFragmentationNeeded uint8 = 4 // the code of ICMPUnreachable
)

// matchTooBig matches the ICMP error of a's family that says a packet was
// too big for the path.
func matchTooBig(a netip.Addr) []ofp.OXM {
	if a.Is6() {
		return []ofp.OXM{ofp.MatchEthType(ofp.EthTypeIPv6), ofp.MatchIPProto(ofp.IPProtoICMPv6), ofp.MatchICMPv6Type(ICMPv6PacketTooBig)}
	}
	return []ofp.OXM{ofp.MatchEthType(ofp.EthTypeIPv4), ofp.MatchIPProto(ofp.IPProtoICMP), ofp.MatchICMPv4Type(ICMPUnreachable),
		ofp.MatchICMPv4Code(ICMPFragmentationNeeded)}
}

// Fold32 is a 32-bit digest of a for hashes: an IPv4 address as a number,
// an IPv6 address's words mixed.
func Fold32(a netip.Addr) uint32 {
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

// AddressLabel is a connection tracker label that holds a: an IPv4 address
// in its low 32 bits, an IPv6 address in all 128.
func AddressLabel(a netip.Addr) [16]byte {
	if a.Is6() {
		return a.As16()
	}
	var l [16]byte
	b := a.As4()
	copy(l[12:], b[:])
	return l
}

// LabelAddress is the address a label holds (AddressLabel): IPv4 when its
// first 96 bits are zero. No member has an IPv6 address there (the store
// refuses ::/96).
func LabelAddress(l [16]byte) netip.Addr {
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
