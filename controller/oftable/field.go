package oftable

import (
	"encoding/binary"
	"slices"
	"strings"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// field is what the model knows of one field: its prerequisites (OpenFlow
// 1.3 section 7.2.3.8, and OVS's for its own fields) and whether a
// set-field may rewrite it.
type field struct {
	known       bool
	ethTypes    []uint16 // eth_type must be one of these; nil: any
	ipProto     uint8    // required ip_proto; 0: none
	icmpv6Types []uint8  // icmpv6_type must be one of these; nil: any
	settable    bool
}

var (
	ipv4Only = []uint16{ethTypeIPv4}
	ipv6Only = []uint16{ethTypeIPv6}
	anyIP    = []uint16{ethTypeIPv4, ethTypeIPv6}
	arpOnly  = []uint16{ethTypeARP}

	ndAny = []uint8{icmpv6NS, icmpv6NA}
	ndNS  = []uint8{icmpv6NS}
	ndNA  = []uint8{icmpv6NA}
)

// The model's numbers for OVS's neighbour discovery fields of class
// ERICOXM_OF, past the OpenFlow-basic ones, so that one table holds every
// modelled field.
const (
	fieldNDReserved    ofp.OXMField = 0x80 | 1
	fieldNDOptionsType ofp.OXMField = 0x80 | 2
)

// fields are the modelled fields, indexed by OXMField (or the numbers
// above); the others are rejected by name rather than matched wrongly.
var fields = [...]field{
	ofp.OXMInPort:       {known: true},
	ofp.OXMMetadata:     {known: true},
	ofp.OXMEthDst:       {known: true, settable: true},
	ofp.OXMEthSrc:       {known: true, settable: true},
	ofp.OXMEthType:      {known: true},
	ofp.OXMVLANVID:      {known: true},
	ofp.OXMIPProto:      {known: true, ethTypes: anyIP},
	ofp.OXMIPv4Src:      {known: true, ethTypes: ipv4Only, settable: true},
	ofp.OXMIPv4Dst:      {known: true, ethTypes: ipv4Only, settable: true},
	ofp.OXMTCPSrc:       {known: true, ethTypes: anyIP, ipProto: protoTCP, settable: true},
	ofp.OXMTCPDst:       {known: true, ethTypes: anyIP, ipProto: protoTCP, settable: true},
	ofp.OXMUDPSrc:       {known: true, ethTypes: anyIP, ipProto: protoUDP, settable: true},
	ofp.OXMUDPDst:       {known: true, ethTypes: anyIP, ipProto: protoUDP, settable: true},
	ofp.OXMICMPv4Type:   {known: true, ethTypes: ipv4Only, ipProto: protoICMP, settable: true},
	ofp.OXMICMPv4Code:   {known: true, ethTypes: ipv4Only, ipProto: protoICMP, settable: true},
	ofp.OXMARPOp:        {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMARPSPA:       {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMARPTPA:       {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMARPSHA:       {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMARPTHA:       {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMIPv6Src:      {known: true, ethTypes: ipv6Only, settable: true},
	ofp.OXMIPv6Dst:      {known: true, ethTypes: ipv6Only, settable: true},
	ofp.OXMICMPv6Type:   {known: true, ethTypes: ipv6Only, ipProto: protoICMPv6, settable: true},
	ofp.OXMICMPv6Code:   {known: true, ethTypes: ipv6Only, ipProto: protoICMPv6, settable: true},
	ofp.OXMIPv6NDTarget: {known: true, ethTypes: ipv6Only, ipProto: protoICMPv6, icmpv6Types: ndAny, settable: true},
	ofp.OXMIPv6NDSLL:    {known: true, ethTypes: ipv6Only, ipProto: protoICMPv6, icmpv6Types: ndNS, settable: true},
	ofp.OXMIPv6NDTLL:    {known: true, ethTypes: ipv6Only, ipProto: protoICMPv6, icmpv6Types: ndNA, settable: true},
	fieldNDReserved:     {known: true, ethTypes: ipv6Only, ipProto: protoICMPv6, icmpv6Types: ndAny, settable: true},
	fieldNDOptionsType:  {known: true, ethTypes: ipv6Only, ipProto: protoICMPv6, icmpv6Types: ndAny, settable: true},
}

// modelField returns the number the model knows o's field by, if any.
func modelField(o *ofp.OXM) (ofp.OXMField, bool) {
	switch {
	case o.Class == ofp.OXMClassBasic && int(o.Field) < len(fields) && fields[o.Field].known:
		return o.Field, true
	case o.Class == ofp.OXMClassEricsson:
		f, ok := nxmFields[ofp.NXMHeader(uint32(o.Class)<<16|uint32(o.Field)<<9|uint32(len(o.Value())))]
		return f, ok
	}
	return 0, false
}

// lookupField returns what the model knows of o's field.
func lookupField(o *ofp.OXM) field {
	if f, ok := modelField(o); ok {
		return fields[f]
	}
	return field{}
}

// nxmFields are the modelled fields by the NXM (and ERICOXM) headers Open
// vSwitch names them by in moves; OXM headers name the others.
var nxmFields = map[ofp.NXMHeader]ofp.OXMField{
	ofp.NXMEthDst: ofp.OXMEthDst, ofp.NXMEthSrc: ofp.OXMEthSrc,
	ofp.NXMIPSrc: ofp.OXMIPv4Src, ofp.NXMIPDst: ofp.OXMIPv4Dst,
	ofp.NXMTCPSrc: ofp.OXMTCPSrc, ofp.NXMTCPDst: ofp.OXMTCPDst,
	ofp.NXMUDPSrc: ofp.OXMUDPSrc, ofp.NXMUDPDst: ofp.OXMUDPDst,
	ofp.NXMARPOp: ofp.OXMARPOp, ofp.NXMARPSPA: ofp.OXMARPSPA, ofp.NXMARPTPA: ofp.OXMARPTPA,
	ofp.NXMARPSHA: ofp.OXMARPSHA, ofp.NXMARPTHA: ofp.OXMARPTHA,
	ofp.NXMIPv6Src: ofp.OXMIPv6Src, ofp.NXMIPv6Dst: ofp.OXMIPv6Dst,
	ofp.NXMICMPv6Type: ofp.OXMICMPv6Type, ofp.NXMICMPv6Code: ofp.OXMICMPv6Code,
	ofp.NXMNDTarget: ofp.OXMIPv6NDTarget, ofp.NXMNDSLL: ofp.OXMIPv6NDSLL, ofp.NXMNDTLL: ofp.OXMIPv6NDTLL,
	ofp.NXMNDReserved: fieldNDReserved, ofp.NXMNDOptionsType: fieldNDOptionsType,
}

// headerField returns the modelled field an unmasked NXM or OXM header
// names.
func headerField(h ofp.NXMHeader) (ofp.OXMField, bool) {
	if h.Class() != ofp.OXMClassBasic {
		f, ok := nxmFields[h]
		return f, ok
	}
	f := h.Field()
	return f, int(f) < len(fields) && fields[f].known && h.Len() == width(f)
}

// width is the length of a modelled field's value in bytes.
func width(f ofp.OXMField) int {
	var p Packet
	var b [16]byte
	return p.value(f, &b)
}

// in reports whether p carries the headers f needs.
func (f field) in(p *Packet) bool {
	return (f.ethTypes == nil || slices.Contains(f.ethTypes, p.EthType)) &&
		(f.ipProto == 0 || p.IPProto == f.ipProto) &&
		(f.icmpv6Types == nil || slices.Contains(f.icmpv6Types, p.ICMPType))
}

// value writes p's value of a modelled field into b, big-endian as in an
// OXM, and returns its length.
func (p *Packet) value(f ofp.OXMField, b *[16]byte) int {
	switch f {
	case ofp.OXMInPort:
		binary.BigEndian.PutUint32(b[:], p.InPort)
		return 4
	case ofp.OXMMetadata:
		binary.BigEndian.PutUint64(b[:], p.Metadata)
		return 8
	case ofp.OXMEthDst:
		return copy(b[:], p.EthDst[:])
	case ofp.OXMEthSrc:
		return copy(b[:], p.EthSrc[:])
	case ofp.OXMEthType:
		binary.BigEndian.PutUint16(b[:], p.EthType)
		return 2
	case ofp.OXMVLANVID:
		binary.BigEndian.PutUint16(b[:], 0) // OFPVID_NONE: untagged
		return 2
	case ofp.OXMIPProto:
		b[0] = p.IPProto
		return 1
	case ofp.OXMIPv4Src:
		return copy(b[:], p.IPv4Src[:])
	case ofp.OXMIPv4Dst:
		return copy(b[:], p.IPv4Dst[:])
	case ofp.OXMTCPSrc, ofp.OXMUDPSrc:
		binary.BigEndian.PutUint16(b[:], p.L4Src)
		return 2
	case ofp.OXMTCPDst, ofp.OXMUDPDst:
		binary.BigEndian.PutUint16(b[:], p.L4Dst)
		return 2
	case ofp.OXMICMPv4Type, ofp.OXMICMPv6Type:
		b[0] = p.ICMPType
		return 1
	case ofp.OXMICMPv4Code, ofp.OXMICMPv6Code:
		b[0] = p.ICMPCode
		return 1
	case ofp.OXMARPOp:
		binary.BigEndian.PutUint16(b[:], p.ARPOp)
		return 2
	case ofp.OXMARPSPA:
		return copy(b[:], p.ARPSPA[:])
	case ofp.OXMARPTPA:
		return copy(b[:], p.ARPTPA[:])
	case ofp.OXMARPSHA:
		return copy(b[:], p.ARPSHA[:])
	case ofp.OXMARPTHA:
		return copy(b[:], p.ARPTHA[:])
	case ofp.OXMIPv6Src:
		return copy(b[:], p.IPv6Src[:])
	case ofp.OXMIPv6Dst:
		return copy(b[:], p.IPv6Dst[:])
	case ofp.OXMIPv6NDTarget:
		return copy(b[:], p.NDTarget[:])
	case ofp.OXMIPv6NDSLL:
		return copy(b[:], p.NDSLL[:])
	case ofp.OXMIPv6NDTLL:
		return copy(b[:], p.NDTLL[:])
	case fieldNDReserved:
		binary.BigEndian.PutUint32(b[:], p.NDReserved)
		return 4
	case fieldNDOptionsType:
		b[0] = p.NDOptionsType
		return 1
	}
	return 0
}

// set is a set-field action: it rewrites one header field of p. A field
// the model does not rewrite, or one whose headers p lacks (tcp_dst of a
// UDP packet, nd_sll of a packet a set-field already made an
// advertisement), leaves p as it is, as a switch skips it.
func (p *Packet) set(o *ofp.OXM) {
	if f, ok := modelField(o); ok && !o.HasMask {
		p.setValue(f, o.Value())
	}
}

// setValue writes v, big-endian as in an OXM, into p's field f.
func (p *Packet) setValue(f ofp.OXMField, v []byte) {
	if !fields[f].settable || !fields[f].in(p) || len(v) != width(f) {
		return
	}
	var n uint64
	for _, c := range v {
		n = n<<8 | uint64(c)
	}
	switch f {
	case ofp.OXMEthDst:
		p.EthDst = [6]byte(v)
	case ofp.OXMEthSrc:
		p.EthSrc = [6]byte(v)
	case ofp.OXMIPv4Src:
		p.IPv4Src = [4]byte(v)
	case ofp.OXMIPv4Dst:
		p.IPv4Dst = [4]byte(v)
	case ofp.OXMTCPSrc, ofp.OXMUDPSrc:
		p.L4Src = uint16(n)
	case ofp.OXMTCPDst, ofp.OXMUDPDst:
		p.L4Dst = uint16(n)
	case ofp.OXMICMPv4Type, ofp.OXMICMPv6Type:
		p.ICMPType = uint8(n)
	case ofp.OXMICMPv4Code, ofp.OXMICMPv6Code:
		p.ICMPCode = uint8(n)
	case ofp.OXMARPOp:
		p.ARPOp = uint16(n)
	case ofp.OXMARPSPA:
		p.ARPSPA = [4]byte(v)
	case ofp.OXMARPTPA:
		p.ARPTPA = [4]byte(v)
	case ofp.OXMARPSHA:
		p.ARPSHA = [6]byte(v)
	case ofp.OXMARPTHA:
		p.ARPTHA = [6]byte(v)
	case ofp.OXMIPv6Src:
		p.IPv6Src = [16]byte(v)
	case ofp.OXMIPv6Dst:
		p.IPv6Dst = [16]byte(v)
	case ofp.OXMIPv6NDTarget:
		p.NDTarget = [16]byte(v)
	case ofp.OXMIPv6NDSLL:
		p.NDSLL = [6]byte(v)
	case ofp.OXMIPv6NDTLL:
		p.NDTLL = [6]byte(v)
	case fieldNDReserved:
		p.NDReserved = uint32(n)
	case fieldNDOptionsType:
		p.NDOptionsType = uint8(n)
	}
}

// move is a move action: it copies one field of p into another. A move
// the model does not execute (see movedFields), or one of a field whose
// headers p lacks, leaves p as it is.
func (p *Packet) move(a ofp.ActionRegMove) {
	src, dst, ok := movedFields(a)
	if !ok || !fields[src].in(p) {
		return
	}
	var b [16]byte
	p.setValue(dst, b[:p.value(src, &b)])
}

// movedFields returns the fields a move copies between when it copies a
// whole modelled field into another of the same width: the only moves
// the model executes.
func movedFields(a ofp.ActionRegMove) (src, dst ofp.OXMField, ok bool) {
	src, srcOK := headerField(a.Src)
	dst, dstOK := headerField(a.Dst)
	ok = srcOK && dstOK && a.SrcOfs == 0 && a.DstOfs == 0 &&
		int(a.NBits) == 8*width(src) && width(src) == width(dst)
	return src, dst, ok
}

// describe renders o for an error message as "name=value", with the
// names and notation ofp's ovs-ofctl rendering gives set-fields
// ("ip_dst=10.0.0.1", "arp_sha=02:00:00:00:00:01", "oxm(0x0001:3)=0x1").
func describe(o ofp.OXM) string {
	s := strings.TrimPrefix(ofp.FormatActions([]ofp.Action{ofp.ActionSetField{Field: o}}), "set_field:")
	if i := strings.LastIndex(s, "->"); i >= 0 {
		return s[i+2:] + "=" + s[:i]
	}
	return s
}
