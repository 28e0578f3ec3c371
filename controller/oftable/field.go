package oftable

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strings"

	"github.com/sdnlb/sdnlb/controller/flowhash"
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
	ctWritable  bool // written by the actions inside a ct action only (ct_mark, ct_label)
}

var (
	ipv4Only = []uint16{ofp.EthTypeIPv4}
	ipv6Only = []uint16{ofp.EthTypeIPv6}
	anyIP    = []uint16{ofp.EthTypeIPv4, ofp.EthTypeIPv6}
	arpOnly  = []uint16{ofp.EthTypeARP}

	ndAny = []uint8{icmpv6NS, icmpv6NA}
	ndNS  = []uint8{icmpv6NS}
	ndNA  = []uint8{icmpv6NA}
)

// The model's numbers for the Nicira and Ericsson fields it knows, past
// the OpenFlow-basic ones (7 bits), so that one table holds every
// modelled field: OVS's neighbour discovery fields, TCP flags, the
// connection tracker's fields and the registers.
const (
	fieldNDReserved    ofp.OXMField = 0x80 | 1
	fieldNDOptionsType ofp.OXMField = 0x80 | 2
	fieldTCPFlags      ofp.OXMField = 0x80 | 3
	fieldCTState       ofp.OXMField = 0x80 | 4
	fieldCTZone        ofp.OXMField = 0x80 | 5
	fieldCTMark        ofp.OXMField = 0x80 | 6
	fieldCTLabel       ofp.OXMField = 0x80 | 7
	fieldInPort16      ofp.OXMField = 0x80 | 8 // NXM_OF_IN_PORT: 1.0's 16 bits, which a move may write
	fieldReg0          ofp.OXMField = 0x90     // reg0 .. reg15: fieldReg0 + n
	numRegs                         = 16
)

// fields are the modelled fields, indexed by OXMField (or the numbers
// above); the others are rejected by name rather than matched wrongly.
var fields = [...]field{
	ofp.OXMInPort:       {known: true},
	fieldInPort16:       {known: true, settable: true},
	ofp.OXMMetadata:     {known: true},
	ofp.OXMEthDst:       {known: true, settable: true},
	ofp.OXMEthSrc:       {known: true, settable: true},
	ofp.OXMEthType:      {known: true},
	ofp.OXMVLANVID:      {known: true},
	ofp.OXMIPProto:      {known: true, ethTypes: anyIP},
	ofp.OXMIPv4Src:      {known: true, ethTypes: ipv4Only, settable: true},
	ofp.OXMIPv4Dst:      {known: true, ethTypes: ipv4Only, settable: true},
	ofp.OXMTCPSrc:       {known: true, ethTypes: anyIP, ipProto: ofp.IPProtoTCP, settable: true},
	ofp.OXMTCPDst:       {known: true, ethTypes: anyIP, ipProto: ofp.IPProtoTCP, settable: true},
	ofp.OXMUDPSrc:       {known: true, ethTypes: anyIP, ipProto: ofp.IPProtoUDP, settable: true},
	ofp.OXMUDPDst:       {known: true, ethTypes: anyIP, ipProto: ofp.IPProtoUDP, settable: true},
	ofp.OXMICMPv4Type:   {known: true, ethTypes: ipv4Only, ipProto: ofp.IPProtoICMP, settable: true},
	ofp.OXMICMPv4Code:   {known: true, ethTypes: ipv4Only, ipProto: ofp.IPProtoICMP, settable: true},
	ofp.OXMARPOp:        {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMARPSPA:       {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMARPTPA:       {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMARPSHA:       {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMARPTHA:       {known: true, ethTypes: arpOnly, settable: true},
	ofp.OXMIPv6Src:      {known: true, ethTypes: ipv6Only, settable: true},
	ofp.OXMIPv6Dst:      {known: true, ethTypes: ipv6Only, settable: true},
	ofp.OXMICMPv6Type:   {known: true, ethTypes: ipv6Only, ipProto: ofp.IPProtoICMPv6, settable: true},
	ofp.OXMICMPv6Code:   {known: true, ethTypes: ipv6Only, ipProto: ofp.IPProtoICMPv6, settable: true},
	ofp.OXMIPv6NDTarget: {known: true, ethTypes: ipv6Only, ipProto: ofp.IPProtoICMPv6, icmpv6Types: ndAny, settable: true},
	ofp.OXMIPv6NDSLL:    {known: true, ethTypes: ipv6Only, ipProto: ofp.IPProtoICMPv6, icmpv6Types: ndNS, settable: true},
	ofp.OXMIPv6NDTLL:    {known: true, ethTypes: ipv6Only, ipProto: ofp.IPProtoICMPv6, icmpv6Types: ndNA, settable: true},
	fieldNDReserved:     {known: true, ethTypes: ipv6Only, ipProto: ofp.IPProtoICMPv6, icmpv6Types: ndAny, settable: true},
	fieldNDOptionsType:  {known: true, ethTypes: ipv6Only, ipProto: ofp.IPProtoICMPv6, icmpv6Types: ndAny, settable: true},
	fieldTCPFlags:       {known: true, ethTypes: anyIP, ipProto: ofp.IPProtoTCP},
	fieldCTState:        {known: true},
	fieldCTZone:         {known: true},
	fieldCTMark:         {known: true, ctWritable: true},
	fieldCTLabel:        {known: true, ctWritable: true},
	fieldReg0:           {known: true, settable: true}, fieldReg0 + 1: {known: true, settable: true},
	fieldReg0 + 2: {known: true, settable: true}, fieldReg0 + 3: {known: true, settable: true},
	fieldReg0 + 4: {known: true, settable: true}, fieldReg0 + 5: {known: true, settable: true},
	fieldReg0 + 6: {known: true, settable: true}, fieldReg0 + 7: {known: true, settable: true},
	fieldReg0 + 8: {known: true, settable: true}, fieldReg0 + 9: {known: true, settable: true},
	fieldReg0 + 10: {known: true, settable: true}, fieldReg0 + 11: {known: true, settable: true},
	fieldReg0 + 12: {known: true, settable: true}, fieldReg0 + 13: {known: true, settable: true},
	fieldReg0 + 14: {known: true, settable: true}, fieldReg0 + 15: {known: true, settable: true},
}

// modelField returns the number the model knows o's field by, if any.
func modelField(o *ofp.OXM) (ofp.OXMField, bool) {
	switch {
	case o.Class == ofp.OXMClassBasic && o.Field < 0x80 && fields[o.Field].known:
		return o.Field, true
	case o.Class != ofp.OXMClassBasic && o.Class != ofp.OXMClassExperimenter:
		return headerField(ofp.NXMHeader(uint32(o.Class)<<16 | uint32(o.Field)<<9 | uint32(len(o.Value()))))
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
// vSwitch names them by in matches and moves; OXM headers name the
// others, and headerField the registers.
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
	ofp.NXMTCPFlags: fieldTCPFlags, ofp.NXMInPort: fieldInPort16,
	ofp.NXMCTState: fieldCTState, ofp.NXMCTZone: fieldCTZone, ofp.NXMCTMark: fieldCTMark, ofp.NXMCTLabel: fieldCTLabel,
}

// headerField returns the modelled field an unmasked NXM or OXM header
// names.
func headerField(h ofp.NXMHeader) (ofp.OXMField, bool) {
	switch {
	case h.Class() == ofp.OXMClassNXM1 && h.Field() < numRegs && h.Len() == 4:
		return fieldReg0 + h.Field(), true
	case h.Class() != ofp.OXMClassBasic:
		f, ok := nxmFields[h]
		return f, ok
	}
	f := h.Field()
	return f, f < 0x80 && fields[f].known && h.Len() == width(f)
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
	if f >= fieldReg0 && f < fieldReg0+numRegs {
		binary.BigEndian.PutUint32(b[:], p.Regs[f-fieldReg0])
		return 4
	}
	switch f {
	case ofp.OXMInPort:
		binary.BigEndian.PutUint32(b[:], p.InPort)
		return 4
	case fieldInPort16: // the reserved ports keep their low 16 bits, as in 1.0
		binary.BigEndian.PutUint16(b[:], uint16(p.InPort))
		return 2
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
	case fieldTCPFlags:
		binary.BigEndian.PutUint16(b[:], p.TCPFlags)
		return 2
	case fieldCTState:
		binary.BigEndian.PutUint32(b[:], p.CTState)
		return 4
	case fieldCTZone:
		binary.BigEndian.PutUint16(b[:], p.CTZone)
		return 2
	case fieldCTMark:
		binary.BigEndian.PutUint32(b[:], p.CTMark)
		return 4
	case fieldCTLabel:
		return copy(b[:], p.CTLabel[:])
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

// setValue writes v, big-endian as in an OXM, into p's field f, if an
// action outside ct may rewrite it and p has its headers.
func (p *Packet) setValue(f ofp.OXMField, v []byte) {
	if fields[f].settable && fields[f].in(p) {
		p.store(f, v)
	}
}

// store writes v, big-endian as in an OXM, into p's field f, whatever the
// field; a value of another width is ignored.
func (p *Packet) store(f ofp.OXMField, v []byte) {
	if len(v) != width(f) {
		return
	}
	var n uint64
	for _, c := range v {
		n = n<<8 | uint64(c)
	}
	if f >= fieldReg0 && f < fieldReg0+numRegs {
		p.Regs[f-fieldReg0] = uint32(n)
		return
	}
	switch f {
	case fieldInPort16:
		p.InPort = uint32(n)
		if n >= 0xff00 {
			p.InPort |= 0xffff0000
		}
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
	case fieldCTMark:
		p.CTMark = uint32(n)
	case fieldCTLabel:
		p.CTLabel = [16]byte(v)
	}
}

// move is a move action outside ct: it copies bits of one field of p into
// another. A move the model does not execute (see movedFields), or one of
// a field whose headers p lacks, leaves p as it is.
func (p *Packet) move(a ofp.ActionRegMove) {
	src, dst, ok := movedFields(a)
	if !ok || !fields[src].in(p) {
		return
	}
	var s, d [16]byte
	sn, dn := p.value(src, &s), p.value(dst, &d)
	copyBits(d[:dn], int(a.DstOfs), s[:sn], int(a.SrcOfs), int(a.NBits))
	p.setValue(dst, d[:dn])
}

// multipath is a multipath action the model executes (checkMultipath):
// it stores the link Open vSwitch's hash of the packet's fields gives
// (flowhash.Link) in the destination register's bits.
func (p *Packet) multipath(a ofp.ActionMultipath) {
	f := flowhash.Flow{EthSrc: p.EthSrc, EthDst: p.EthDst, EthType: p.EthType, Proto: p.IPProto, SrcPort: p.L4Src, DstPort: p.L4Dst}
	switch p.EthType {
	case ofp.EthTypeIPv4:
		f.Src, f.Dst = netip.AddrFrom4(p.IPv4Src), netip.AddrFrom4(p.IPv4Dst)
	case ofp.EthTypeIPv6:
		f.Src, f.Dst = netip.AddrFrom16(p.IPv6Src), netip.AddrFrom16(p.IPv6Dst)
	}
	link := uint32(flowhash.Link(a, &f))
	dst, _ := headerField(a.Dst)
	mask := uint32(1)<<a.NBits - 1
	reg := &p.Regs[dst-fieldReg0]
	*reg = *reg&^(mask<<a.DstOfs) | (link&mask)<<a.DstOfs
}

// movedFields returns the fields a move copies between when both are
// modelled and the bits it names lie within them: the moves the model
// executes.
func movedFields(a ofp.ActionRegMove) (src, dst ofp.OXMField, ok bool) {
	src, srcOK := headerField(a.Src)
	dst, dstOK := headerField(a.Dst)
	ok = srcOK && dstOK && a.NBits > 0 &&
		int(a.SrcOfs)+int(a.NBits) <= 8*width(src) && int(a.DstOfs)+int(a.NBits) <= 8*width(dst)
	return src, dst, ok
}

// copyBits copies n bits of src, from bit sofs, into dst from bit dofs;
// both are big-endian field values whose bit 0 is the least significant
// bit of their last byte, as OVS numbers a field's bits in move:f[a..b].
func copyBits(dst []byte, dofs int, src []byte, sofs, n int) {
	for i := range n {
		s, d := sofs+i, dofs+i
		bit := src[len(src)-1-s/8] >> (s % 8) & 1
		at := &dst[len(dst)-1-d/8]
		*at = *at&^(1<<(d%8)) | bit<<(d%8)
	}
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
