package ofp

import "strconv"

// Nicira (Open vSwitch) match fields. OVS accepts NXM headers inside an
// OpenFlow 1.3 OXM match, so these are ordinary OXMs of class OXMClassNXM1
// (or OXMClassNXM0), built by the Match* constructors below and carried in
// Match.OXMs and ActionSetField like any other field. Field numbers and
// widths follow OVS's meta-flow.h.

// NXMHeader is an NXM or OXM field header without its payload:
// class<<16 | field<<9 | hasmask<<8 | length. NXAST_REG_MOVE and NXAST_CT
// name the fields they read and write this way. The constants below are
// the unmasked headers of the fields a load balancer moves or keys on;
// any other header (including OXM ones, such as 0x80000806 for eth_src)
// works as well.
type NXMHeader uint32

const (
	NXMInPort    NXMHeader = 0x00000002 // NXM_OF_IN_PORT, 16 bits
	NXMEthDst    NXMHeader = 0x00000206 // NXM_OF_ETH_DST
	NXMEthSrc    NXMHeader = 0x00000406 // NXM_OF_ETH_SRC
	NXMIPSrc     NXMHeader = 0x00000e04 // NXM_OF_IP_SRC
	NXMIPDst     NXMHeader = 0x00001004 // NXM_OF_IP_DST
	NXMTCPSrc    NXMHeader = 0x00001202 // NXM_OF_TCP_SRC
	NXMTCPDst    NXMHeader = 0x00001402 // NXM_OF_TCP_DST
	NXMUDPSrc    NXMHeader = 0x00001602 // NXM_OF_UDP_SRC
	NXMUDPDst    NXMHeader = 0x00001802 // NXM_OF_UDP_DST
	NXMARPOp     NXMHeader = 0x00001e02 // NXM_OF_ARP_OP
	NXMARPSPA    NXMHeader = 0x00002004 // NXM_OF_ARP_SPA
	NXMARPTPA    NXMHeader = 0x00002204 // NXM_OF_ARP_TPA
	NXMARPSHA    NXMHeader = 0x00012206 // NXM_NX_ARP_SHA
	NXMARPTHA    NXMHeader = 0x00012406 // NXM_NX_ARP_THA
	NXMCTState   NXMHeader = 0x0001d204 // NXM_NX_CT_STATE
	NXMCTZone    NXMHeader = 0x0001d402 // NXM_NX_CT_ZONE
	NXMCTMark    NXMHeader = 0x0001d604 // NXM_NX_CT_MARK
	NXMCTLabel   NXMHeader = 0x0001d810 // NXM_NX_CT_LABEL
	NXMCTNwProto NXMHeader = 0x0001ee01 // NXM_NX_CT_NW_PROTO
	NXMCTNwDst   NXMHeader = 0x0001f204 // NXM_NX_CT_NW_DST
	NXMCTTpDst   NXMHeader = 0x0001fa02 // NXM_NX_CT_TP_DST
	NXMTCPFlags  NXMHeader = 0x00014402 // NXM_NX_TCP_FLAGS

	NXMIPv6Src    NXMHeader = 0x00012610 // NXM_NX_IPV6_SRC
	NXMIPv6Dst    NXMHeader = 0x00012810 // NXM_NX_IPV6_DST
	NXMICMPv6Type NXMHeader = 0x00012a01 // NXM_NX_ICMPV6_TYPE
	NXMICMPv6Code NXMHeader = 0x00012c01 // NXM_NX_ICMPV6_CODE
	NXMNDTarget   NXMHeader = 0x00012e10 // NXM_NX_ND_TARGET
	NXMNDSLL      NXMHeader = 0x00013006 // NXM_NX_ND_SLL
	NXMNDTLL      NXMHeader = 0x00013206 // NXM_NX_ND_TLL
	NXMIPv6Label  NXMHeader = 0x00013604 // NXM_NX_IPV6_LABEL

	// Open vSwitch's ICMPv6 neighbour discovery extensions (OVS 2.11+),
	// which a neighbour advertisement built from a solicitation needs:
	// the 32 bits after the checksum (an advertisement's R, S and O
	// flags) and the type of the first option (1 source, 2 target
	// link-layer address).
	NXMNDReserved    NXMHeader = 0x10000204 // ERICOXM_OF_ICMPV6_ND_RESERVED
	NXMNDOptionsType NXMHeader = 0x10000401 // ERICOXM_OF_ICMPV6_ND_OPTIONS_TYPE
)

// Neighbour advertisement flags, in nd_reserved (MatchNDReserved).
const (
	NDFlagRouter    uint32 = 1 << 31
	NDFlagSolicited uint32 = 1 << 30
	NDFlagOverride  uint32 = 1 << 29
)

// Neighbour discovery option types, in nd_options_type.
const (
	NDOptionSourceLL uint8 = 1
	NDOptionTargetLL uint8 = 2
)

// TCP flags (MatchTCPFlags), as in the TCP header's low 12 bits.
const (
	TCPFlagFIN uint16 = 0x001
	TCPFlagSYN uint16 = 0x002
	TCPFlagRST uint16 = 0x004
	TCPFlagACK uint16 = 0x010
)

// NXMReg returns the header of register n (NXM_NX_REG0 .. NXM_NX_REG15;
// OVS 3.1 has 16 32-bit registers).
func NXMReg(n uint8) NXMHeader { return NXMHeader(uint32(OXMClassNXM1)<<16 | uint32(n)<<9 | 4) }

// Class returns the header's OXM class (OXMClassNXM0, OXMClassNXM1, ...).
func (h NXMHeader) Class() uint16 { return uint16(h >> 16) }

// Field returns the field number within the class.
func (h NXMHeader) Field() OXMField { return OXMField(h >> 9 & 0x7f) }

// Len returns the payload length in bytes (value only for an unmasked
// header).
func (h NXMHeader) Len() int { return int(h & 0xff) }

// Connection tracking state bits (NXM_NX_CT_STATE, OVS's CS_*).
const (
	CTStateNew  uint32 = 1 << 0 // CS_NEW
	CTStateEst  uint32 = 1 << 1 // CS_ESTABLISHED
	CTStateRel  uint32 = 1 << 2 // CS_RELATED
	CTStateRpl  uint32 = 1 << 3 // CS_REPLY_DIR
	CTStateInv  uint32 = 1 << 4 // CS_INVALID
	CTStateTrk  uint32 = 1 << 5 // CS_TRACKED
	CTStateSNAT uint32 = 1 << 6 // CS_SRC_NAT
	CTStateDNAT uint32 = 1 << 7 // CS_DST_NAT
)

// nxOXM builds an OXM for header h from a value of h.Len() bytes (the low
// bytes of v) and, unless mask is all ones for that width, the mask; the
// value is stored ANDed with the mask, as OVS stores it.
func nxOXM(h NXMHeader, v, mask uint64) OXM {
	n := h.Len()
	full := uint64(1)<<(8*n) - 1
	o := OXM{Class: h.Class(), Field: h.Field(), n: uint8(n)}
	if mask&full != full {
		o.HasMask = true
		v &= mask
		o.n = uint8(2 * n)
	}
	for i := range n {
		o.payload[i] = byte(v >> (8 * (n - 1 - i)))
		if o.HasMask {
			o.payload[n+i] = byte(mask >> (8 * (n - 1 - i)))
		}
	}
	return o
}

// MatchCTState matches the connection tracking state: bits set in mask
// must equal those in state, for example MatchCTState(CTStateNew|CTStateTrk,
// CTStateNew|CTStateTrk) for ct_state=+new+trk and
// MatchCTState(0, CTStateTrk) for ct_state=-trk. A mask of all ones
// matches the whole state exactly.
func MatchCTState(state, mask uint32) OXM {
	return nxOXM(NXMCTState, uint64(state), uint64(mask))
}

// MatchCTZone matches the conntrack zone (NXM_NX_CT_ZONE).
func MatchCTZone(zone uint16) OXM { return nxOXM(NXMCTZone, uint64(zone), 0xffff) }

// MatchCTMark matches the connection mark under mask (0xffffffff for an
// exact match). With a full mask it is also the field of a set_field that
// stores a mark from within ActionCT.
func MatchCTMark(mark, mask uint32) OXM { return nxOXM(NXMCTMark, uint64(mark), uint64(mask)) }

// MatchCTLabel matches the connection's 128-bit label exactly; it is
// also the field of a set_field that stores a label from within ActionCT.
func MatchCTLabel(label [16]byte) OXM {
	o := OXM{Class: NXMCTLabel.Class(), Field: NXMCTLabel.Field(), n: uint8(len(label))}
	copy(o.payload[:], label[:])
	return o
}

// MatchReg matches register n (0-15) under mask (0xffffffff for exact).
func MatchReg(n uint8, value, mask uint32) OXM {
	return nxOXM(NXMReg(n), uint64(value), uint64(mask))
}

// MatchCTNwProto matches the IP protocol of the connection's original
// direction (NXM_NX_CT_NW_PROTO); OVS wants it before MatchCTTpDst.
func MatchCTNwProto(p uint8) OXM { return nxOXM(NXMCTNwProto, uint64(p), 0xff) }

// MatchCTNwDst matches the original-direction IPv4 destination
// (NXM_NX_CT_NW_DST): the VIP a DNATed connection was addressed to. OVS
// requires a tracked, valid connection (for example
// MatchCTState(CTStateTrk, CTStateTrk|CTStateInv)) and eth_type IPv4.
func MatchCTNwDst(ip [4]byte) OXM {
	return nxOXM(NXMCTNwDst, uint64(ip[0])<<24|uint64(ip[1])<<16|uint64(ip[2])<<8|uint64(ip[3]), 0xffffffff)
}

// MatchTCPFlags matches the TCP flags (NXM_NX_TCP_FLAGS): bits set in
// mask must equal those in flags, for example
// MatchTCPFlags(TCPFlagSYN, TCPFlagSYN|TCPFlagACK) for a connection's
// first segment. It needs ip_proto TCP in the match.
func MatchTCPFlags(flags, mask uint16) OXM { return nxOXM(NXMTCPFlags, uint64(flags), uint64(mask)) }

// MatchCTTpDst matches the original-direction transport destination port
// (NXM_NX_CT_TP_DST); OVS also requires MatchCTNwProto.
func MatchCTTpDst(port uint16) OXM { return nxOXM(NXMCTTpDst, uint64(port), 0xffff) }

// MatchNDReserved matches (or, in a set-field, writes) the 32 bits of an
// ND message after its checksum: NDFlag* in an advertisement. OVS wants
// an ND match (icmp6 with icmpv6_type 135 or 136).
func MatchNDReserved(v uint32) OXM { return nxOXM(NXMNDReserved, uint64(v), 0xffffffff) }

// MatchNDOptionsType matches (or writes) the type of an ND message's first
// option: NDOptionSourceLL in a solicitation, NDOptionTargetLL in an
// advertisement.
func MatchNDOptionsType(t uint8) OXM { return nxOXM(NXMNDOptionsType, uint64(t), 0xff) }

// nxFieldFormat says how a field's value is rendered.
type nxFieldFormat uint8

const (
	nxHex      nxFieldFormat = iota // 0x1f, masked 0x1/0xff (regs, ct_mark, tun_id)
	nxDecimal                       // 5 (ct_zone, ct_nw_proto, ct_tp_*)
	nxIP                            // 10.0.0.1, 10.0.0.0/8, 2001:db8::/64
	nxCTState                       // new|trk, +new-est
	nxHexBytes                      // ct_label: 0x...
	nxTCPFlags                      // +syn-ack
)

// nxField describes an NXM/OXM field for rendering: its NXM name (as
// move:, zone= and learn print it), its match and set_field keyword, its
// width in bits as OVS counts it and its value notation.
type nxField struct {
	nxm    string
	name   string
	bits   int
	format nxFieldFormat
}

// nxFields lists the non-basic fields this package names, by unmasked
// header; registers are added by lookupNXField.
var nxFields = map[NXMHeader]nxField{
	NXMInPort:    {"NXM_OF_IN_PORT", "in_port", 16, nxDecimal},
	NXMEthDst:    {"NXM_OF_ETH_DST", "eth_dst", 48, nxHex},
	NXMEthSrc:    {"NXM_OF_ETH_SRC", "eth_src", 48, nxHex},
	0x00000602:   {"NXM_OF_ETH_TYPE", "eth_type", 16, nxHex},
	0x00000802:   {"NXM_OF_VLAN_TCI", "vlan_tci", 16, nxHex},
	0x00000c01:   {"NXM_OF_IP_PROTO", "nw_proto", 8, nxDecimal},
	NXMIPSrc:     {"NXM_OF_IP_SRC", "ip_src", 32, nxIP},
	NXMIPDst:     {"NXM_OF_IP_DST", "ip_dst", 32, nxIP},
	NXMTCPSrc:    {"NXM_OF_TCP_SRC", "tcp_src", 16, nxDecimal},
	NXMTCPDst:    {"NXM_OF_TCP_DST", "tcp_dst", 16, nxDecimal},
	NXMUDPSrc:    {"NXM_OF_UDP_SRC", "udp_src", 16, nxDecimal},
	NXMUDPDst:    {"NXM_OF_UDP_DST", "udp_dst", 16, nxDecimal},
	NXMARPOp:     {"NXM_OF_ARP_OP", "arp_op", 16, nxDecimal},
	NXMARPSPA:    {"NXM_OF_ARP_SPA", "arp_spa", 32, nxIP},
	NXMARPTPA:    {"NXM_OF_ARP_TPA", "arp_tpa", 32, nxIP},
	0x00012008:   {"NXM_NX_TUN_ID", "tun_id", 64, nxHex},
	NXMARPSHA:    {"NXM_NX_ARP_SHA", "arp_sha", 48, nxHex},
	NXMARPTHA:    {"NXM_NX_ARP_THA", "arp_tha", 48, nxHex},
	0x00013e04:   {"NXM_NX_TUN_IPV4_SRC", "tun_src", 32, nxIP},
	0x00014004:   {"NXM_NX_TUN_IPV4_DST", "tun_dst", 32, nxIP},
	NXMCTState:   {"NXM_NX_CT_STATE", "ct_state", 32, nxCTState},
	NXMCTZone:    {"NXM_NX_CT_ZONE", "ct_zone", 16, nxDecimal},
	NXMCTMark:    {"NXM_NX_CT_MARK", "ct_mark", 32, nxHex},
	NXMCTLabel:   {"NXM_NX_CT_LABEL", "ct_label", 128, nxHexBytes},
	NXMCTNwProto: {"NXM_NX_CT_NW_PROTO", "ct_nw_proto", 8, nxDecimal},
	0x0001f004:   {"NXM_NX_CT_NW_SRC", "ct_nw_src", 32, nxIP},
	NXMCTNwDst:   {"NXM_NX_CT_NW_DST", "ct_nw_dst", 32, nxIP},
	0x0001f802:   {"NXM_NX_CT_TP_SRC", "ct_tp_src", 16, nxDecimal},
	NXMCTTpDst:   {"NXM_NX_CT_TP_DST", "ct_tp_dst", 16, nxDecimal},
	NXMTCPFlags:  {"NXM_NX_TCP_FLAGS", "tcp_flags", 16, nxTCPFlags},

	NXMIPv6Src:       {"NXM_NX_IPV6_SRC", "ipv6_src", 128, nxIP},
	NXMIPv6Dst:       {"NXM_NX_IPV6_DST", "ipv6_dst", 128, nxIP},
	NXMICMPv6Type:    {"NXM_NX_ICMPV6_TYPE", "icmpv6_type", 8, nxDecimal},
	NXMICMPv6Code:    {"NXM_NX_ICMPV6_CODE", "icmpv6_code", 8, nxDecimal},
	NXMNDTarget:      {"NXM_NX_ND_TARGET", "nd_target", 128, nxIP},
	NXMNDSLL:         {"NXM_NX_ND_SLL", "nd_sll", 48, nxHex},
	NXMNDTLL:         {"NXM_NX_ND_TLL", "nd_tll", 48, nxHex},
	NXMIPv6Label:     {"NXM_NX_IPV6_LABEL", "ipv6_label", 20, nxHex},
	NXMNDReserved:    {"ERICOXM_OF_ICMPV6_ND_RESERVED", "nd_reserved", 32, nxDecimal},
	NXMNDOptionsType: {"ERICOXM_OF_ICMPV6_ND_OPTIONS_TYPE", "nd_options_type", 8, nxDecimal},
}

// basicNXM names OpenFlow-basic fields the way OVS prints them in move:
// and zone=: by their NXM name where OVS has one of the same width, else
// by their OXM name.
var basicNXM = map[OXMField]nxField{
	OXMInPort:   {"OXM_OF_IN_PORT", "in_port", 32, nxDecimal},
	OXMMetadata: {"OXM_OF_METADATA", "metadata", 64, nxHex},
	OXMEthDst:   nxFields[NXMEthDst],
	OXMEthSrc:   nxFields[NXMEthSrc],
	OXMEthType:  nxFields[0x00000602],
	OXMIPProto:  nxFields[0x00000c01],
	OXMIPv4Src:  nxFields[NXMIPSrc],
	OXMIPv4Dst:  nxFields[NXMIPDst],
	OXMTCPSrc:   nxFields[NXMTCPSrc],
	OXMTCPDst:   nxFields[NXMTCPDst],
	OXMUDPSrc:   nxFields[NXMUDPSrc],
	OXMUDPDst:   nxFields[NXMUDPDst],
	OXMARPOp:    nxFields[NXMARPOp],
	OXMARPSPA:   nxFields[NXMARPSPA],
	OXMARPTPA:   nxFields[NXMARPTPA],
	OXMARPSHA:   nxFields[NXMARPSHA],
	OXMARPTHA:   nxFields[NXMARPTHA],
	OXMTunnelID: nxFields[0x00012008],

	OXMIPv6Src:      nxFields[NXMIPv6Src],
	OXMIPv6Dst:      nxFields[NXMIPv6Dst],
	OXMIPv6FLabel:   nxFields[NXMIPv6Label],
	OXMICMPv6Type:   nxFields[NXMICMPv6Type],
	OXMICMPv6Code:   nxFields[NXMICMPv6Code],
	OXMIPv6NDTarget: nxFields[NXMNDTarget],
	OXMIPv6NDSLL:    nxFields[NXMNDSLL],
	OXMIPv6NDTLL:    nxFields[NXMNDTLL],
}

// lookupNXField finds the description of the (unmasked) header h.
func lookupNXField(h NXMHeader) (nxField, bool) {
	h &^= 0x100
	if h.Class() == OXMClassBasic {
		f, ok := basicNXM[h.Field()]
		return f, ok && f.bits <= 8*h.Len()
	}
	if h.Class() == OXMClassNXM1 && h.Field() < 16 && h.Len() == 4 {
		n := strconv.Itoa(int(h.Field()))
		return nxField{"NXM_NX_REG" + n, "reg" + n, 32, nxHex}, true
	}
	f, ok := nxFields[h]
	return f, ok
}

// header returns the unmasked NXM/OXM header of o's field.
func (o *OXM) header() NXMHeader {
	n := int(o.n) - o.expLen()
	if o.HasMask {
		n /= 2
	}
	return NXMHeader(uint32(o.Class)<<16 | uint32(o.Field)<<9 | uint32(n&0xff))
}
