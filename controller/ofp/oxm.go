package ofp

import "encoding/binary"

// OXM classes (ofp_oxm_class).
const (
	OXMClassNXM0         uint16 = 0x0000 // OFPXMC_NXM_0
	OXMClassNXM1         uint16 = 0x0001 // OFPXMC_NXM_1
	OXMClassEricsson     uint16 = 0x1000 // ERICOXM_OF, OVS's nd_reserved and nd_options_type
	OXMClassBasic        uint16 = 0x8000 // OFPXMC_OPENFLOW_BASIC
	OXMClassExperimenter uint16 = 0xffff // OFPXMC_EXPERIMENTER
)

// OXMField is oxm_field within OXMClassBasic.
type OXMField uint8

const (
	OXMInPort       OXMField = 0  // OFPXMT_OFB_IN_PORT
	OXMInPhyPort    OXMField = 1  // OFPXMT_OFB_IN_PHY_PORT
	OXMMetadata     OXMField = 2  // OFPXMT_OFB_METADATA
	OXMEthDst       OXMField = 3  // OFPXMT_OFB_ETH_DST
	OXMEthSrc       OXMField = 4  // OFPXMT_OFB_ETH_SRC
	OXMEthType      OXMField = 5  // OFPXMT_OFB_ETH_TYPE
	OXMVLANVID      OXMField = 6  // OFPXMT_OFB_VLAN_VID
	OXMVLANPCP      OXMField = 7  // OFPXMT_OFB_VLAN_PCP
	OXMIPDSCP       OXMField = 8  // OFPXMT_OFB_IP_DSCP
	OXMIPECN        OXMField = 9  // OFPXMT_OFB_IP_ECN
	OXMIPProto      OXMField = 10 // OFPXMT_OFB_IP_PROTO
	OXMIPv4Src      OXMField = 11 // OFPXMT_OFB_IPV4_SRC
	OXMIPv4Dst      OXMField = 12 // OFPXMT_OFB_IPV4_DST
	OXMTCPSrc       OXMField = 13 // OFPXMT_OFB_TCP_SRC
	OXMTCPDst       OXMField = 14 // OFPXMT_OFB_TCP_DST
	OXMUDPSrc       OXMField = 15 // OFPXMT_OFB_UDP_SRC
	OXMUDPDst       OXMField = 16 // OFPXMT_OFB_UDP_DST
	OXMSCTPSrc      OXMField = 17 // OFPXMT_OFB_SCTP_SRC
	OXMSCTPDst      OXMField = 18 // OFPXMT_OFB_SCTP_DST
	OXMICMPv4Type   OXMField = 19 // OFPXMT_OFB_ICMPV4_TYPE
	OXMICMPv4Code   OXMField = 20 // OFPXMT_OFB_ICMPV4_CODE
	OXMARPOp        OXMField = 21 // OFPXMT_OFB_ARP_OP
	OXMARPSPA       OXMField = 22 // OFPXMT_OFB_ARP_SPA
	OXMARPTPA       OXMField = 23 // OFPXMT_OFB_ARP_TPA
	OXMARPSHA       OXMField = 24 // OFPXMT_OFB_ARP_SHA
	OXMARPTHA       OXMField = 25 // OFPXMT_OFB_ARP_THA
	OXMIPv6Src      OXMField = 26 // OFPXMT_OFB_IPV6_SRC
	OXMIPv6Dst      OXMField = 27 // OFPXMT_OFB_IPV6_DST
	OXMIPv6FLabel   OXMField = 28 // OFPXMT_OFB_IPV6_FLABEL
	OXMICMPv6Type   OXMField = 29 // OFPXMT_OFB_ICMPV6_TYPE
	OXMICMPv6Code   OXMField = 30 // OFPXMT_OFB_ICMPV6_CODE
	OXMIPv6NDTarget OXMField = 31 // OFPXMT_OFB_IPV6_ND_TARGET
	OXMIPv6NDSLL    OXMField = 32 // OFPXMT_OFB_IPV6_ND_SLL
	OXMIPv6NDTLL    OXMField = 33 // OFPXMT_OFB_IPV6_ND_TLL
	OXMMPLSLabel    OXMField = 34 // OFPXMT_OFB_MPLS_LABEL
	OXMMPLSTC       OXMField = 35 // OFPXMT_OFB_MPLS_TC
	OXMMPLSBOS      OXMField = 36 // OFPXMT_OFB_MPLS_BOS
	OXMPBBISID      OXMField = 37 // OFPXMT_OFB_PBB_ISID
	OXMTunnelID     OXMField = 38 // OFPXMT_OFB_TUNNEL_ID
	OXMIPv6ExtHdr   OXMField = 39 // OFPXMT_OFB_IPV6_EXTHDR
)

// basicLen is the value length of each OpenFlow-basic field; the index is
// the OXMField. Fields past the table are kept raw, unchecked.
var basicLen = [...]uint8{
	4, 4, 8, 6, 6, 2, 2, 1, 1, 1, 1, 4, 4, 2, 2, 2, 2, 2, 2, 1,
	1, 2, 4, 4, 6, 6, 16, 16, 4, 1, 1, 16, 6, 6, 4, 1, 1, 3, 8, 2,
}

// VLANPresent is OFPVID_PRESENT: set in a VLAN_VID value to match (or set)
// a tagged frame.
const VLANPresent uint16 = 0x1000

// MaxOXMPayload is the longest OXM payload (value plus mask, plus the
// experimenter ID for OXMClassExperimenter) this codec stores. It covers
// every OpenFlow-basic field masked (IPv6: 32) and OVS's common NXM fields;
// longer OXMs (for example OVS tun_metadata) decode as ErrUnsupported.
const MaxOXMPayload = 32

// OXM is one match field in OXM TLV form.
//
// Value and Mask are methods over a fixed inline array rather than []byte
// fields, so an OXM is a plain comparable value that constructors, Match
// slices and set-field actions copy without a heap allocation. Build one
// with the Match* constructors or NewOXM.
type OXM struct {
	Class   uint16
	Field   OXMField
	HasMask bool
	n       uint8 // payload length as on the wire
	payload [MaxOXMPayload]byte
}

// NewOXM builds any OXM, including unknown or experimenter ones (for
// OXMClassExperimenter, value starts with the 4-byte experimenter ID). A
// non-nil mask must be as long as value (without the experimenter ID), and
// a known OpenFlow-basic field must have its spec length.
func NewOXM(class uint16, field OXMField, value, mask []byte) (OXM, error) {
	o := OXM{Class: class, Field: field, HasMask: mask != nil}
	exp := o.expLen()
	if len(value) < exp {
		return OXM{}, ErrBadLength
	}
	if mask != nil && len(mask) != len(value)-exp {
		return OXM{}, ErrBadLength
	}
	if len(value)+len(mask) > MaxOXMPayload {
		return OXM{}, errOXMTooLong
	}
	o.n = uint8(copy(o.payload[:], value))
	o.n += uint8(copy(o.payload[o.n:], mask))
	if !o.basicLenOK() {
		return OXM{}, ErrBadLength
	}
	return o, nil
}

// basicLenOK reports whether an OpenFlow-basic field has the length the
// spec gives it; other classes and unknown fields pass.
func (o *OXM) basicLenOK() bool {
	if o.Class != OXMClassBasic || int(o.Field) >= len(basicLen) {
		return true
	}
	want := basicLen[o.Field]
	if o.HasMask {
		want *= 2
	}
	return o.n == want
}

func (o *OXM) expLen() int {
	if o.Class == OXMClassExperimenter {
		return 4
	}
	return 0
}

func (o *OXM) maskLen() int {
	if !o.HasMask {
		return 0
	}
	return (int(o.n) - o.expLen()) / 2
}

// Value returns the value bytes, big-endian as on the wire (for
// experimenter OXMs, starting with the experimenter ID). It aliases o.
func (o *OXM) Value() []byte { return o.payload[:int(o.n)-o.maskLen()] }

// Mask returns the mask bytes, or nil when the OXM has no mask. It aliases o.
func (o *OXM) Mask() []byte {
	if !o.HasMask {
		return nil
	}
	return o.payload[int(o.n)-o.maskLen() : o.n]
}

// Uint returns a value of up to 8 bytes as a big-endian unsigned integer
// (in_port, eth_type, ports, ip_proto, ...). Longer values yield 0.
func (o OXM) Uint() uint64 {
	n := int(o.n) - o.maskLen()
	if n > 8 {
		return 0
	}
	var v uint64
	for _, c := range o.payload[:n] {
		v = v<<8 | uint64(c)
	}
	return v
}

// MAC returns the first 6 value bytes (eth_*, arp_sha/tha).
func (o OXM) MAC() (mac [6]byte) {
	copy(mac[:], o.payload[:int(o.n)-o.maskLen()])
	return mac
}

// IPv4 returns the first 4 value bytes (ipv4_*, arp_spa/tpa).
func (o OXM) IPv4() (ip [4]byte) {
	copy(ip[:], o.payload[:int(o.n)-o.maskLen()])
	return ip
}

// IPv6 returns the first 16 value bytes (ipv6_*, nd_target).
func (o OXM) IPv6() (ip [16]byte) {
	copy(ip[:], o.payload[:int(o.n)-o.maskLen()])
	return ip
}

// wireLen is the TLV length: 4-byte header plus payload.
func (o *OXM) wireLen() int { return 4 + int(o.n) }

func (o *OXM) appendTo(b []byte) []byte {
	fm := uint8(o.Field) << 1
	if o.HasMask {
		fm |= 1
	}
	b = binary.BigEndian.AppendUint16(b, o.Class)
	b = append(b, fm, o.n)
	return append(b, o.payload[:o.n]...)
}

// decodeOXM reads one TLV from the front of b and returns it with its wire
// length.
func decodeOXM(b []byte) (OXM, int, error) {
	if len(b) < 4 {
		return OXM{}, 0, ErrShort
	}
	o := OXM{
		Class:   binary.BigEndian.Uint16(b),
		Field:   OXMField(b[2] >> 1),
		HasMask: b[2]&1 != 0,
		n:       b[3],
	}
	n := int(o.n)
	if 4+n > len(b) {
		return OXM{}, 0, ErrBadLength
	}
	if n > MaxOXMPayload {
		return OXM{}, 0, errOXMTooLong
	}
	exp := o.expLen()
	if n < exp || (o.HasMask && (n-exp)%2 != 0) {
		return OXM{}, 0, ErrBadLength
	}
	if !o.basicLenOK() {
		return OXM{}, 0, ErrBadLength
	}
	copy(o.payload[:], b[4:4+n])
	return o, 4 + n, nil
}

func basicOXM(f OXMField, value ...byte) OXM {
	o := OXM{Class: OXMClassBasic, Field: f}
	o.n = uint8(copy(o.payload[:], value))
	return o
}

func basic8(f OXMField, v uint8) OXM { return basicOXM(f, v) }

func basic16(f OXMField, v uint16) OXM { return basicOXM(f, byte(v>>8), byte(v)) }

func basic32(f OXMField, v uint32) OXM {
	return basicOXM(f, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func basic64(f OXMField, v uint64) OXM {
	o := OXM{Class: OXMClassBasic, Field: f, n: 8}
	binary.BigEndian.PutUint64(o.payload[:], v)
	return o
}

func basicMAC(f OXMField, mac [6]byte) OXM { return basicOXM(f, mac[:]...) }

func basicIPv4(f OXMField, ip [4]byte) OXM { return basicOXM(f, ip[:]...) }

func basicIPv6(f OXMField, ip [16]byte) OXM { return basicOXM(f, ip[:]...) }

func MatchInPort(port uint32) OXM              { return basic32(OXMInPort, port) }
func MatchEthDst(mac [6]byte) OXM              { return basicMAC(OXMEthDst, mac) }
func MatchEthSrc(mac [6]byte) OXM              { return basicMAC(OXMEthSrc, mac) }
func MatchEthType(t uint16) OXM                { return basic16(OXMEthType, t) }
func MatchVLANPCP(pcp uint8) OXM               { return basic8(OXMVLANPCP, pcp) }
func MatchIPProto(p uint8) OXM                 { return basic8(OXMIPProto, p) }
func MatchIPv4Src(ip [4]byte) OXM              { return basicIPv4(OXMIPv4Src, ip) }
func MatchIPv4Dst(ip [4]byte) OXM              { return basicIPv4(OXMIPv4Dst, ip) }
func MatchTCPSrc(port uint16) OXM              { return basic16(OXMTCPSrc, port) }
func MatchTCPDst(port uint16) OXM              { return basic16(OXMTCPDst, port) }
func MatchUDPSrc(port uint16) OXM              { return basic16(OXMUDPSrc, port) }
func MatchUDPDst(port uint16) OXM              { return basic16(OXMUDPDst, port) }
func MatchICMPv4Type(t uint8) OXM              { return basic8(OXMICMPv4Type, t) }
func MatchICMPv4Code(c uint8) OXM              { return basic8(OXMICMPv4Code, c) }
func MatchARPOp(op uint16) OXM                 { return basic16(OXMARPOp, op) }
func MatchARPSPA(ip [4]byte) OXM               { return basicIPv4(OXMARPSPA, ip) }
func MatchARPTPA(ip [4]byte) OXM               { return basicIPv4(OXMARPTPA, ip) }
func MatchARPSHA(mac [6]byte) OXM              { return basicMAC(OXMARPSHA, mac) }
func MatchARPTHA(mac [6]byte) OXM              { return basicMAC(OXMARPTHA, mac) }
func MatchMetadata(md uint64) OXM              { return basic64(OXMMetadata, md) }
func MatchTunnelID(id uint64) OXM              { return basic64(OXMTunnelID, id) }
func MatchIPv4SrcMasked(ip, mask [4]byte) OXM  { return maskedIPv4(OXMIPv4Src, ip, mask) }
func MatchIPv4DstMasked(ip, mask [4]byte) OXM  { return maskedIPv4(OXMIPv4Dst, ip, mask) }
func MatchIPv6Src(ip [16]byte) OXM             { return basicIPv6(OXMIPv6Src, ip) }
func MatchIPv6Dst(ip [16]byte) OXM             { return basicIPv6(OXMIPv6Dst, ip) }
func MatchIPv6SrcMasked(ip, mask [16]byte) OXM { return maskedIPv6(OXMIPv6Src, ip, mask) }
func MatchIPv6DstMasked(ip, mask [16]byte) OXM { return maskedIPv6(OXMIPv6Dst, ip, mask) }
func MatchICMPv6Type(t uint8) OXM              { return basic8(OXMICMPv6Type, t) }
func MatchICMPv6Code(c uint8) OXM              { return basic8(OXMICMPv6Code, c) }
func MatchIPv6NDTarget(ip [16]byte) OXM        { return basicIPv6(OXMIPv6NDTarget, ip) }
func MatchIPv6NDSLL(mac [6]byte) OXM           { return basicMAC(OXMIPv6NDSLL, mac) }
func MatchIPv6NDTLL(mac [6]byte) OXM           { return basicMAC(OXMIPv6NDTLL, mac) }

// MatchVLANVID matches frames tagged with vid: it sets VLANPresent, as
// OpenFlow 1.3 requires for a tagged match. Use NewOXM for the
// untagged (value 0) or any-tagged (present bit masked) forms.
func MatchVLANVID(vid uint16) OXM { return basic16(OXMVLANVID, vid&0x0fff|VLANPresent) }

func maskedIPv4(f OXMField, ip, mask [4]byte) OXM {
	o := basicOXM(f, ip[0]&mask[0], ip[1]&mask[1], ip[2]&mask[2], ip[3]&mask[3],
		mask[0], mask[1], mask[2], mask[3])
	o.HasMask = true
	return o
}

func maskedIPv6(f OXMField, ip, mask [16]byte) OXM {
	o := OXM{Class: OXMClassBasic, Field: f, HasMask: true, n: 32}
	for i := range ip {
		o.payload[i] = ip[i] & mask[i]
	}
	copy(o.payload[16:], mask[:])
	return o
}

// Match is ofp_match of type OFPMT_OXM. On the wire it is padded to a
// multiple of 8 bytes.
type Match struct {
	OXMs []OXM
}

// Sum64 hashes the match's fields (FNV-1a), in their order: one switch
// sends the same match of a flow the same way each time, so the sum keys
// its flows by match.
func (m *Match) Sum64() uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	add := func(b byte) { h = (h ^ uint64(b)) * prime }
	for i := range m.OXMs {
		o := &m.OXMs[i]
		add(byte(o.Class >> 8))
		add(byte(o.Class))
		add(byte(o.Field))
		if o.HasMask {
			add(1)
		}
		for _, b := range o.payload[:o.n] {
			add(b)
		}
	}
	return h
}

// Get returns the first OpenFlow-basic OXM for field f.
func (m *Match) Get(f OXMField) (OXM, bool) {
	for i := range m.OXMs {
		if m.OXMs[i].Class == OXMClassBasic && m.OXMs[i].Field == f {
			return m.OXMs[i], true
		}
	}
	return OXM{}, false
}

// GetNX returns the field of Nicira extension h: a tracker field (ct_label,
// ct_mark), a register.
func (m *Match) GetNX(h NXMHeader) (OXM, bool) {
	for i := range m.OXMs {
		if m.OXMs[i].Class == h.Class() && m.OXMs[i].Field == h.Field() {
			return m.OXMs[i], true
		}
	}
	return OXM{}, false
}

// InPort returns the in_port field, which OVS puts in every packet-in.
func (m *Match) InPort() (uint32, bool) {
	o, ok := m.Get(OXMInPort)
	return uint32(o.Uint()), ok
}

const matchTypeOXM = 1 // OFPMT_OXM

func (m *Match) appendTo(b []byte) []byte {
	n := 4
	for i := range m.OXMs {
		n += m.OXMs[i].wireLen()
	}
	b = binary.BigEndian.AppendUint16(b, matchTypeOXM)
	b = binary.BigEndian.AppendUint16(b, uint16(n))
	for i := range m.OXMs {
		b = m.OXMs[i].appendTo(b)
	}
	return appendPad8(b, n)
}

// decode reads an ofp_match from the front of b, reusing m.OXMs, and
// returns the padded length it occupied.
func (m *Match) decode(b []byte) (int, error) {
	m.OXMs = m.OXMs[:0]
	if len(b) < 4 {
		return 0, ErrShort
	}
	if binary.BigEndian.Uint16(b) != matchTypeOXM {
		return 0, errMatchType
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n < 4 || pad8(n) > len(b) {
		return 0, ErrBadLength
	}
	fields := b[4:n]
	for len(fields) > 0 {
		o, used, err := decodeOXM(fields)
		if err != nil {
			return 0, err
		}
		m.OXMs = append(m.OXMs, o.canonical())
		fields = fields[used:]
	}
	return pad8(n), nil
}

// Open vSwitch writes the TCP flags in OpenFlow 1.3 and 1.4 as ONF's
// experimenter field, the field sdnlb writes as NXM_NX_TCP_FLAGS.
const (
	onfExperimenter  = 0x4f4e4600
	onfTCPFlagsField = 42
)

// canonical returns o as this codec writes its field: ONF's TCP flags as
// NXM_NX_TCP_FLAGS, so that a flow read back matches the one written.
func (o OXM) canonical() OXM {
	if o.Class != OXMClassExperimenter || o.Field != onfTCPFlagsField || o.n < 4 ||
		binary.BigEndian.Uint32(o.payload[:4]) != onfExperimenter {
		return o
	}
	v, mask := o.Value()[4:], o.Mask()
	if len(v) != 2 || mask != nil && len(mask) != 2 {
		return o
	}
	m := uint64(0xffff)
	if mask != nil {
		m = uint64(binary.BigEndian.Uint16(mask))
	}
	return nxOXM(NXMTCPFlags, uint64(binary.BigEndian.Uint16(v)), m)
}
