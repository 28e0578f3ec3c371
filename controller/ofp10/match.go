package ofp10

import (
	"encoding/binary"
	"math/bits"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// matchLen is sizeof(struct ofp_match) in 1.0.
const matchLen = 40

// ofp_flow_wildcards: a set bit means "any value". nw_src and nw_dst
// carry the count of wildcarded low bits instead (32 or more: all).
const (
	wcInPort    uint32 = 1 << 0
	wcDLVLAN    uint32 = 1 << 1
	wcDLSrc     uint32 = 1 << 2
	wcDLDst     uint32 = 1 << 3
	wcDLType    uint32 = 1 << 4
	wcNwProto   uint32 = 1 << 5
	wcTpSrc     uint32 = 1 << 6
	wcTpDst     uint32 = 1 << 7
	nwSrcShift         = 8
	nwDstShift         = 14
	wcNwBits    uint32 = 0x3f
	wcDLVLANPCP uint32 = 1 << 20
	wcNwTos     uint32 = 1 << 21
)

// vlanNone is OFP_VLAN_NONE: dl_vlan of an untagged frame.
const vlanNone uint16 = 0xffff

// match10 is the 1.0 ofp_match, fields in wire order.
type match10 struct {
	wildcards      uint32
	inPort         uint16
	dlSrc, dlDst   [6]byte
	dlVLAN         uint16
	dlVLANPCP      uint8
	dlType         uint16
	nwTos, nwProto uint8
	nwSrc, nwDst   [4]byte
	tpSrc, tpDst   uint16
}

func (m *match10) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.wildcards)
	b = binary.BigEndian.AppendUint16(b, m.inPort)
	b = append(b, m.dlSrc[:]...)
	b = append(b, m.dlDst[:]...)
	b = binary.BigEndian.AppendUint16(b, m.dlVLAN)
	b = append(b, m.dlVLANPCP, 0)
	b = binary.BigEndian.AppendUint16(b, m.dlType)
	b = append(b, m.nwTos, m.nwProto, 0, 0)
	b = append(b, m.nwSrc[:]...)
	b = append(b, m.nwDst[:]...)
	b = binary.BigEndian.AppendUint16(b, m.tpSrc)
	return binary.BigEndian.AppendUint16(b, m.tpDst)
}

// parseMatch10 reads b[:matchLen]; the caller checks the length.
func parseMatch10(b []byte) match10 {
	m := match10{
		wildcards: binary.BigEndian.Uint32(b),
		inPort:    binary.BigEndian.Uint16(b[4:]),
		dlVLAN:    binary.BigEndian.Uint16(b[18:]),
		dlVLANPCP: b[20],
		dlType:    binary.BigEndian.Uint16(b[22:]),
		nwTos:     b[24],
		nwProto:   b[25],
		tpSrc:     binary.BigEndian.Uint16(b[36:]),
		tpDst:     binary.BigEndian.Uint16(b[38:]),
	}
	copy(m.dlSrc[:], b[6:12])
	copy(m.dlDst[:], b[12:18])
	copy(m.nwSrc[:], b[28:32])
	copy(m.nwDst[:], b[32:36])
	return m
}

// oxmName renders one OXM as ovs-ofctl would, for error messages.
func oxmName(o ofp.OXM) string { return ofp.Match{OXMs: []ofp.OXM{o}}.String() }

// matchTo10 builds the 1.0 match for m. It accepts the fields 1.0 has,
// unmasked except IPv4 and ARP addresses with prefix masks, and checks
// the prerequisites 1.3 would (ipv4_src needs eth_type 0x0800, tcp_dst
// ip_proto 6, ...), since a 1.0 switch silently ignores a field whose
// prerequisite is missing. Wildcards and zeroed values follow Open
// vSwitch's encoding, so the bytes equal ovs-ofctl's.
func matchTo10(m *ofp.Match) (match10, error) {
	w := wcInPort | wcDLVLAN | wcDLSrc | wcDLDst | wcDLType | wcNwProto | wcTpSrc | wcTpDst |
		32<<nwSrcShift | 32<<nwDstShift | wcDLVLANPCP | wcNwTos
	var out match10
	var seen uint64 // OXM fields present, by number
	for i := range m.OXMs {
		o := &m.OXMs[i]
		if o.Class != ofp.OXMClassBasic || o.Field >= 64 {
			return out, unsupported("match field %s", oxmName(*o))
		}
		if seen&(1<<o.Field) != 0 {
			return out, unsupported("match field %s twice", oxmName(*o))
		}
		seen |= 1 << o.Field
		if o.HasMask && o.Field != ofp.OXMIPv4Src && o.Field != ofp.OXMIPv4Dst &&
			o.Field != ofp.OXMARPSPA && o.Field != ofp.OXMARPTPA {
			return out, unsupported("masked match field %s", oxmName(*o))
		}
		v := uintOf(o)
		switch o.Field {
		case ofp.OXMInPort:
			p, err := portTo10(uint32(v))
			if err != nil {
				return out, err
			}
			out.inPort, w = p, w&^wcInPort
		case ofp.OXMEthSrc:
			copy(out.dlSrc[:], o.Value())
			w &^= wcDLSrc
		case ofp.OXMEthDst:
			copy(out.dlDst[:], o.Value())
			w &^= wcDLDst
		case ofp.OXMEthType:
			out.dlType, w = uint16(v), w&^wcDLType
		case ofp.OXMVLANVID:
			// vlan_vid 0 is "untagged"; 1.0 clears the PCP wildcard
			// with it, as Open vSwitch does.
			switch {
			case v == 0:
				out.dlVLAN, w = vlanNone, w&^(wcDLVLAN|wcDLVLANPCP)
			case v&uint64(ofp.VLANPresent) != 0:
				out.dlVLAN, w = uint16(v&0x0fff), w&^wcDLVLAN
			default:
				return out, unsupported("match field %s", oxmName(*o))
			}
		case ofp.OXMVLANPCP:
			out.dlVLANPCP, w = uint8(v), w&^wcDLVLANPCP
		case ofp.OXMIPDSCP:
			out.nwTos, w = uint8(v<<2), w&^wcNwTos
		case ofp.OXMIPProto:
			out.nwProto, w = uint8(v), w&^wcNwProto
		case ofp.OXMARPOp:
			if v > 0xff {
				return out, unsupported("match field %s (1.0 has 8 bits of ARP opcode)", oxmName(*o))
			}
			out.nwProto, w = uint8(v), w&^wcNwProto
		case ofp.OXMIPv4Src, ofp.OXMARPSPA:
			n, err := wildBits(o)
			if err != nil {
				return out, err
			}
			out.nwSrc, w = maskIPv4(o), w&^(wcNwBits<<nwSrcShift)|n<<nwSrcShift
		case ofp.OXMIPv4Dst, ofp.OXMARPTPA:
			n, err := wildBits(o)
			if err != nil {
				return out, err
			}
			out.nwDst, w = maskIPv4(o), w&^(wcNwBits<<nwDstShift)|n<<nwDstShift
		case ofp.OXMTCPSrc, ofp.OXMUDPSrc, ofp.OXMICMPv4Type:
			out.tpSrc, w = uint16(v), w&^wcTpSrc
		case ofp.OXMTCPDst, ofp.OXMUDPDst, ofp.OXMICMPv4Code:
			out.tpDst, w = uint16(v), w&^wcTpDst
		default:
			return out, unsupported("match field %s", oxmName(*o))
		}
	}
	out.wildcards = w
	return out, checkPrerequisites(m, seen, &out)
}

// prerequisites: the eth_type and ip_proto each 1.0-expressible field
// needs (ip_proto 0: any), by OXM field; eth_type 0: none.
var prerequisites = [64]struct {
	ethType uint16
	proto   uint8
}{
	ofp.OXMIPDSCP: {ofp.EthTypeIPv4, 0}, ofp.OXMIPProto: {ofp.EthTypeIPv4, 0},
	ofp.OXMIPv4Src: {ofp.EthTypeIPv4, 0}, ofp.OXMIPv4Dst: {ofp.EthTypeIPv4, 0},
	ofp.OXMTCPSrc: {ofp.EthTypeIPv4, ofp.IPProtoTCP}, ofp.OXMTCPDst: {ofp.EthTypeIPv4, ofp.IPProtoTCP},
	ofp.OXMUDPSrc: {ofp.EthTypeIPv4, ofp.IPProtoUDP}, ofp.OXMUDPDst: {ofp.EthTypeIPv4, ofp.IPProtoUDP},
	ofp.OXMICMPv4Type: {ofp.EthTypeIPv4, ofp.IPProtoICMP}, ofp.OXMICMPv4Code: {ofp.EthTypeIPv4, ofp.IPProtoICMP},
	ofp.OXMARPOp: {ofp.EthTypeARP, 0}, ofp.OXMARPSPA: {ofp.EthTypeARP, 0}, ofp.OXMARPTPA: {ofp.EthTypeARP, 0},
}

// checkPrerequisites checks the fields of m, which matchTo10 has seen
// (all basic, below 64) and encoded in out.
func checkPrerequisites(m *ofp.Match, seen uint64, out *match10) error {
	for i := range m.OXMs {
		o := &m.OXMs[i]
		if o.Field == ofp.OXMVLANPCP && (out.wildcards&wcDLVLAN != 0 || out.dlVLAN == vlanNone) {
			return unsupported("match field %s without a vlan_vid", oxmName(*o))
		}
		pre := prerequisites[o.Field]
		if pre.ethType == 0 {
			continue
		}
		if seen&(1<<ofp.OXMEthType) == 0 || out.dlType != pre.ethType {
			return unsupported("match field %s without eth_type 0x%04x", oxmName(*o), pre.ethType)
		}
		if pre.proto != 0 && (seen&(1<<ofp.OXMIPProto) == 0 || out.nwProto != pre.proto) {
			return unsupported("match field %s without ip_proto %d", oxmName(*o), pre.proto)
		}
	}
	return nil
}

// wildBits is the 1.0 wildcard count for an IPv4 OXM: 0 unmasked, else
// the host bits of its prefix mask. Non-prefix masks have no 1.0 form.
func wildBits(o *ofp.OXM) (uint32, error) {
	if !o.HasMask {
		return 0, nil
	}
	mask := binary.BigEndian.Uint32(o.Mask())
	host := uint32(bits.TrailingZeros32(mask))
	if mask != ^uint32(0)<<host { // also true for mask 0: host is 32
		return 0, unsupported("match field %s (1.0 masks are prefixes)", oxmName(*o))
	}
	return host, nil
}

func maskIPv4(o *ofp.OXM) [4]byte {
	var ip [4]byte
	copy(ip[:], o.Value())
	if o.HasMask {
		for i, m := range o.Mask() {
			ip[i] &= m
		}
	}
	return ip
}

// uintOf is the value of a basic field of up to 4 bytes, read in place
// (OXM.Uint copies the OXM), 0 for a longer one.
func uintOf(o *ofp.OXM) uint64 {
	v := o.Value()
	switch len(v) {
	case 1:
		return uint64(v[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(v))
	case 4:
		return uint64(binary.BigEndian.Uint32(v))
	}
	return 0
}

// proto is the IP protocol the match pins, 0 for none, which decides what
// SET_TP_* rewrites in its flow.
func (m *match10) proto() uint8 {
	if m.wildcards&(wcDLType|wcNwProto) != 0 || m.dlType != ofp.EthTypeIPv4 {
		return 0
	}
	return m.nwProto
}

// oxms converts a 1.0 match to OXMs, in OXM field order. Like a 1.0
// switch, it ignores fields whose prerequisites the match lacks (nw_src
// without dl_type 0x0800 or 0x0806, tp_src without nw_proto 6, 17 or 1).
func (m *match10) oxms(dst []ofp.OXM) []ofp.OXM {
	w := m.wildcards
	if w&wcInPort == 0 {
		dst = append(dst, ofp.MatchInPort(portFrom10(m.inPort)))
	}
	if w&wcDLDst == 0 {
		dst = append(dst, ofp.MatchEthDst(m.dlDst))
	}
	if w&wcDLSrc == 0 {
		dst = append(dst, ofp.MatchEthSrc(m.dlSrc))
	}
	if w&wcDLType == 0 {
		dst = append(dst, ofp.MatchEthType(m.dlType))
	}
	if w&wcDLVLAN == 0 {
		if m.dlVLAN == vlanNone {
			dst = append(dst, vlanUntagged)
		} else {
			dst = append(dst, ofp.MatchVLANVID(m.dlVLAN))
			if w&wcDLVLANPCP == 0 {
				dst = append(dst, ofp.MatchVLANPCP(m.dlVLANPCP&7))
			}
		}
	}
	if w&wcDLType != 0 {
		return dst
	}
	hasProto := w&wcNwProto == 0
	switch m.dlType {
	case ofp.EthTypeIPv4:
		if w&wcNwTos == 0 {
			dst = append(dst, mustOXM(ofp.OXMIPDSCP, []byte{m.nwTos >> 2}, nil))
		}
		if hasProto {
			dst = append(dst, ofp.MatchIPProto(m.nwProto))
		}
		dst = appendIPv4(dst, ofp.OXMIPv4Src, m.nwSrc, w>>nwSrcShift&wcNwBits)
		dst = appendIPv4(dst, ofp.OXMIPv4Dst, m.nwDst, w>>nwDstShift&wcNwBits)
		if !hasProto {
			return dst
		}
		var src, dst16 ofp.OXMField
		switch m.nwProto {
		case ofp.IPProtoTCP:
			src, dst16 = ofp.OXMTCPSrc, ofp.OXMTCPDst
		case ofp.IPProtoUDP:
			src, dst16 = ofp.OXMUDPSrc, ofp.OXMUDPDst
		case ofp.IPProtoICMP:
			if w&wcTpSrc == 0 {
				dst = append(dst, ofp.MatchICMPv4Type(uint8(m.tpSrc)))
			}
			if w&wcTpDst == 0 {
				dst = append(dst, ofp.MatchICMPv4Code(uint8(m.tpDst)))
			}
			return dst
		default:
			return dst
		}
		if w&wcTpSrc == 0 {
			dst = append(dst, uint16OXM(src, m.tpSrc))
		}
		if w&wcTpDst == 0 {
			dst = append(dst, uint16OXM(dst16, m.tpDst))
		}
	case ofp.EthTypeARP:
		if hasProto {
			dst = append(dst, ofp.MatchARPOp(uint16(m.nwProto)))
		}
		dst = appendIPv4(dst, ofp.OXMARPSPA, m.nwSrc, w>>nwSrcShift&wcNwBits)
		dst = appendIPv4(dst, ofp.OXMARPTPA, m.nwDst, w>>nwDstShift&wcNwBits)
	}
	return dst
}

// vlanUntagged is vlan_vid=0 (OFPVID_NONE): no VLAN tag.
var vlanUntagged = mustOXM(ofp.OXMVLANVID, []byte{0, 0}, nil)

// appendIPv4 appends an IPv4 OXM with host wildcarded low bits: none
// for 32 or more, masked for 1 to 31.
func appendIPv4(dst []ofp.OXM, f ofp.OXMField, ip [4]byte, host uint32) []ofp.OXM {
	switch {
	case host >= 32:
		return dst
	case host == 0:
		return append(dst, mustOXM(f, ip[:], nil))
	}
	var mask [4]byte
	binary.BigEndian.PutUint32(mask[:], ^uint32(0)<<host)
	for i := range ip {
		ip[i] &= mask[i]
	}
	return append(dst, mustOXM(f, ip[:], mask[:]))
}

func uint16OXM(f ofp.OXMField, v uint16) ofp.OXM {
	return mustOXM(f, []byte{byte(v >> 8), byte(v)}, nil)
}

// mustOXM builds an OpenFlow-basic OXM whose length this package
// guarantees.
func mustOXM(f ofp.OXMField, value, mask []byte) ofp.OXM {
	o, err := ofp.NewOXM(ofp.OXMClassBasic, f, value, mask)
	if err != nil {
		panic("ofp10: " + err.Error())
	}
	return o
}
