// Package flowhash computes Open vSwitch's hashes of a packet that the
// multipath action stores (flow_hash_fields, multipath_execute), bit for
// bit as Open vSwitch 3.1 does on a little-endian host, so that the
// controller knows the link a switch's multipath gives a packet without
// asking it, and the switch model (controller/oftable) gives the same.
// It covers the fields and the algorithm sdnlb's flows use: the source
// address (nw_src) and the connection both ways alike (symmetric_l4),
// modulo the links (modulo_n). Both hashes are Jenkins' lookup3
// (jhash_bytes), which every build of Open vSwitch uses alike.
package flowhash

import (
	"encoding/binary"
	"math/bits"
	"net/netip"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Flow is what the hashes read of an untagged frame (sdnlb neither
// sends nor takes VLAN tags), as Open vSwitch's struct flow holds it.
type Flow struct {
	EthSrc, EthDst [6]byte
	EthType        uint16
	// Src and Dst are the IP addresses, of the EthType's family.
	Src, Dst netip.Addr
	Proto    uint8
	// SrcPort and DstPort are the TCP, UDP or SCTP ports.
	SrcPort, DstPort uint16
}

// Supported reports whether Link computes a's link: a modulo_n multipath
// over the source address or the connection.
func Supported(a ofp.ActionMultipath) bool {
	return (a.Fields == ofp.HashFieldsNWSrc || a.Fields == ofp.HashFieldsSymmetricL4) && a.Algorithm == ofp.MultipathModuloN
}

// Link is the link a's multipath stores for f (multipath_execute): the
// hash of f's fields modulo the links. It is 0 for an action Supported
// refuses.
func Link(a ofp.ActionMultipath, f *Flow) uint16 {
	if !Supported(a) {
		return 0
	}
	return uint16(Hash(f, a.Fields, a.Basis) % (uint32(a.MaxLink) + 1))
}

// Hash is flow_hash_fields for the fields Supported names; 0 for others.
func Hash(f *Flow, fields, basis uint16) uint32 {
	switch fields {
	case ofp.HashFieldsNWSrc:
		return nwSrc(f, uint32(basis))
	case ofp.HashFieldsSymmetricL4:
		return symmetricL4(f, uint32(basis))
	}
	return 0
}

// nwSrc hashes the source address, 4 or 16 bytes in network order; a
// packet of neither family hashes to the basis.
func nwSrc(f *Flow, basis uint32) uint32 {
	switch f.EthType {
	case ofp.EthTypeIPv4:
		a := f.Src.As4()
		return jhashBytes(a[:], basis)
	case ofp.EthTypeIPv6:
		a := f.Src.As16()
		return jhashBytes(a[:], basis)
	}
	return basis
}

// symmetricL4 is flow_hash_symmetric_l4: it hashes a 32-byte struct that
// holds each pair of fields XORed, so both directions of a connection hash
// alike. Its layout, with the C compiler's padding:
//
//	0-15  the addresses (IPv4: the first 4 bytes)
//	16-17 the EtherType
//	18-19 the VLAN ids (none)
//	20-21 the ports, of TCP and SCTP only: UDP's are left out
//	22-27 the Ethernet addresses
//	28    the IP protocol (of IPv4 and IPv6 only, as the ports)
//	29-31 zero
func symmetricL4(f *Flow, basis uint32) uint32 {
	var b [32]byte
	for i := range 6 {
		b[22+i] = f.EthSrc[i] ^ f.EthDst[i]
	}
	binary.BigEndian.PutUint16(b[16:], f.EthType)
	ip := f.EthType == ofp.EthTypeIPv4 || f.EthType == ofp.EthTypeIPv6
	switch f.EthType {
	case ofp.EthTypeIPv4:
		s, d := f.Src.As4(), f.Dst.As4()
		for i := range s {
			b[i] = s[i] ^ d[i]
		}
	case ofp.EthTypeIPv6:
		s, d := f.Src.As16(), f.Dst.As16()
		for i := range s {
			b[i] = s[i] ^ d[i]
		}
	}
	if ip {
		b[28] = f.Proto
		if f.Proto == ofp.IPProtoTCP || f.Proto == ipProtoSCTP {
			binary.BigEndian.PutUint16(b[20:], f.SrcPort^f.DstPort)
		}
	}
	return jhashBytes(b[:], basis)
}

const ipProtoSCTP = 132

// jhashBytes is Open vSwitch's jhash_bytes, Bob Jenkins' lookup3 hash of
// bytes read as little-endian words.
func jhashBytes(p []byte, basis uint32) uint32 {
	a := 0xdeadbeef + uint32(len(p)) + basis
	b, c := a, a
	for ; len(p) >= 12; p = p[12:] {
		a += binary.LittleEndian.Uint32(p)
		b += binary.LittleEndian.Uint32(p[4:])
		c += binary.LittleEndian.Uint32(p[8:])
		a, b, c = mix(a, b, c)
	}
	if len(p) > 0 {
		var tail [12]byte
		copy(tail[:], p)
		a += binary.LittleEndian.Uint32(tail[:])
		b += binary.LittleEndian.Uint32(tail[4:])
		c += binary.LittleEndian.Uint32(tail[8:])
		a, b, c = final(a, b, c)
	}
	return c
}

func mix(a, b, c uint32) (uint32, uint32, uint32) {
	a -= c
	a ^= bits.RotateLeft32(c, 4)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 6)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 8)
	b += a
	a -= c
	a ^= bits.RotateLeft32(c, 16)
	c += b
	b -= a
	b ^= bits.RotateLeft32(a, 19)
	a += c
	c -= b
	c ^= bits.RotateLeft32(b, 4)
	b += a
	return a, b, c
}

func final(a, b, c uint32) (uint32, uint32, uint32) {
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return a, b, c
}
