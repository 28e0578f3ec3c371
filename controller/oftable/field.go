package oftable

import (
	"encoding/binary"
	"strings"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// field is what the model knows of one OpenFlow-basic field: its
// prerequisites (OpenFlow 1.3 section 7.2.3.8) and whether a set-field
// may rewrite it.
type field struct {
	known    bool
	ethType  uint16 // required eth_type; 0: none
	ipProto  uint8  // required ip_proto; 0: none
	settable bool
}

// fields are the modelled fields, indexed by OXMField; the others are
// rejected by name rather than matched wrongly. IPv6 is not modelled, so
// ip_proto requires eth_type 0x0800 only.
var fields = [...]field{
	ofp.OXMInPort:     {known: true},
	ofp.OXMMetadata:   {known: true},
	ofp.OXMEthDst:     {known: true, settable: true},
	ofp.OXMEthSrc:     {known: true, settable: true},
	ofp.OXMEthType:    {known: true},
	ofp.OXMVLANVID:    {known: true},
	ofp.OXMIPProto:    {known: true, ethType: ethTypeIPv4},
	ofp.OXMIPv4Src:    {known: true, ethType: ethTypeIPv4, settable: true},
	ofp.OXMIPv4Dst:    {known: true, ethType: ethTypeIPv4, settable: true},
	ofp.OXMTCPSrc:     {known: true, ethType: ethTypeIPv4, ipProto: protoTCP, settable: true},
	ofp.OXMTCPDst:     {known: true, ethType: ethTypeIPv4, ipProto: protoTCP, settable: true},
	ofp.OXMUDPSrc:     {known: true, ethType: ethTypeIPv4, ipProto: protoUDP, settable: true},
	ofp.OXMUDPDst:     {known: true, ethType: ethTypeIPv4, ipProto: protoUDP, settable: true},
	ofp.OXMICMPv4Type: {known: true, ethType: ethTypeIPv4, ipProto: protoICMP, settable: true},
	ofp.OXMICMPv4Code: {known: true, ethType: ethTypeIPv4, ipProto: protoICMP, settable: true},
	ofp.OXMARPOp:      {known: true, ethType: ethTypeARP, settable: true},
	ofp.OXMARPSPA:     {known: true, ethType: ethTypeARP, settable: true},
	ofp.OXMARPTPA:     {known: true, ethType: ethTypeARP, settable: true},
	ofp.OXMARPSHA:     {known: true, ethType: ethTypeARP, settable: true},
	ofp.OXMARPTHA:     {known: true, ethType: ethTypeARP, settable: true},
}

// lookupField returns what the model knows of o's field.
func lookupField(o *ofp.OXM) field {
	if o.Class != ofp.OXMClassBasic || int(o.Field) >= len(fields) {
		return field{}
	}
	return fields[o.Field]
}

// nxmFields are the modelled fields by the NXM headers Open vSwitch names
// them by in moves; OXM headers name the others.
var nxmFields = map[ofp.NXMHeader]ofp.OXMField{
	ofp.NXMEthDst: ofp.OXMEthDst, ofp.NXMEthSrc: ofp.OXMEthSrc,
	ofp.NXMIPSrc: ofp.OXMIPv4Src, ofp.NXMIPDst: ofp.OXMIPv4Dst,
	ofp.NXMTCPSrc: ofp.OXMTCPSrc, ofp.NXMTCPDst: ofp.OXMTCPDst,
	ofp.NXMUDPSrc: ofp.OXMUDPSrc, ofp.NXMUDPDst: ofp.OXMUDPDst,
	ofp.NXMARPOp: ofp.OXMARPOp, ofp.NXMARPSPA: ofp.OXMARPSPA, ofp.NXMARPTPA: ofp.OXMARPTPA,
	ofp.NXMARPSHA: ofp.OXMARPSHA, ofp.NXMARPTHA: ofp.OXMARPTHA,
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
	var b [8]byte
	return p.value(f, &b)
}

// in reports whether p carries the headers f needs.
func (f field) in(p *Packet) bool {
	return (f.ethType == 0 || p.EthType == f.ethType) && (f.ipProto == 0 || p.IPProto == f.ipProto)
}

// value writes p's value of a modelled field into b, big-endian as in an
// OXM, and returns its length.
func (p *Packet) value(f ofp.OXMField, b *[8]byte) int {
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
	case ofp.OXMICMPv4Type:
		b[0] = p.ICMPType
		return 1
	case ofp.OXMICMPv4Code:
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
	}
	return 0
}

// set is a set-field action: it rewrites one header field of p. A field
// the model does not rewrite, or one whose headers p lacks (tcp_dst of a
// UDP packet), leaves p as it is.
func (p *Packet) set(o *ofp.OXM) {
	if f := lookupField(o); !f.settable || !f.in(p) || o.HasMask {
		return
	}
	switch o.Field {
	case ofp.OXMEthDst:
		p.EthDst = o.MAC()
	case ofp.OXMEthSrc:
		p.EthSrc = o.MAC()
	case ofp.OXMIPv4Src:
		p.IPv4Src = o.IPv4()
	case ofp.OXMIPv4Dst:
		p.IPv4Dst = o.IPv4()
	case ofp.OXMTCPSrc, ofp.OXMUDPSrc:
		p.L4Src = uint16(o.Uint())
	case ofp.OXMTCPDst, ofp.OXMUDPDst:
		p.L4Dst = uint16(o.Uint())
	case ofp.OXMICMPv4Type:
		p.ICMPType = uint8(o.Uint())
	case ofp.OXMICMPv4Code:
		p.ICMPCode = uint8(o.Uint())
	case ofp.OXMARPOp:
		p.ARPOp = uint16(o.Uint())
	case ofp.OXMARPSPA:
		p.ARPSPA = o.IPv4()
	case ofp.OXMARPTPA:
		p.ARPTPA = o.IPv4()
	case ofp.OXMARPSHA:
		p.ARPSHA = o.MAC()
	case ofp.OXMARPTHA:
		p.ARPTHA = o.MAC()
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
	var b [8]byte
	if o, err := ofp.NewOXM(ofp.OXMClassBasic, dst, b[:p.value(src, &b)], nil); err == nil {
		p.set(&o)
	}
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
