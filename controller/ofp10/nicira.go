package ofp10

import (
	"encoding/binary"
	"errors"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Open vSwitch's Nicira extensions to OpenFlow 1.0, which a switch that
// takes them (AppendNicira) gets where plain 1.0 falls short: a flow-mod
// whose match ofp_match cannot express, or that deletes by cookie, goes
// as NXT_FLOW_MOD with an NXM match (nx_match), and flows are read with
// NXST_FLOW, whose request selects by cookie and whose entries carry the
// whole match. NXM fields are TLVs laid out as OXMs are; the fields
// ofp_match has are written by their NXM_OF_* names, as Open vSwitch
// writes them on 1.0, and read back as the OpenFlow-basic fields.

// niciraVendor is NX_VENDOR_ID, in OFPT_VENDOR and OFPST_VENDOR.
const niciraVendor = ofp.NXExperimenterID

// Nicira message and stats subtypes.
const (
	nxtFlowMod uint32 = 13 // NXT_FLOW_MOD
	nxstFlow   uint32 = 0  // NXST_FLOW
)

// statsVendor is OFPST_VENDOR, the stats type of NXST_FLOW.
const statsVendor ofp.MultipartType = 0xffff

// Lengths: nicira_header and nicira10_stats_msg after the ofp_header, and
// the fixed parts of nx_flow_mod, nx_flow_stats_request and nx_flow_stats.
const (
	niciraHeaderLen      = 8
	niciraStatsHeaderLen = 16
	nxFlowModLen         = 32
	nxFlowStatsReqLen    = 8
	nxFlowStatsLen       = 48
)

// NXM_NX_COOKIE, which carries a cookie and mask in the match of an
// NXST_FLOW request or an NXT_FLOW_MOD delete.
const (
	nxmClassNX1    = ofp.OXMClassNXM1
	nxmFieldCookie = 30
)

// nxmOF lists the NXM fields that are OpenFlow-basic fields of the same
// width and meaning, by NXM class and field: Open vSwitch names them so
// in a 1.0 nx_match. in_port, 16 bits in NXM, is mapped apart.
var nxmOF = [...]struct {
	class uint16
	field ofp.OXMField
	basic ofp.OXMField
}{
	{ofp.OXMClassNXM0, 1, ofp.OXMEthDst},      // NXM_OF_ETH_DST
	{ofp.OXMClassNXM0, 2, ofp.OXMEthSrc},      // NXM_OF_ETH_SRC
	{ofp.OXMClassNXM0, 3, ofp.OXMEthType},     // NXM_OF_ETH_TYPE
	{ofp.OXMClassNXM0, 6, ofp.OXMIPProto},     // NXM_OF_IP_PROTO
	{ofp.OXMClassNXM0, 7, ofp.OXMIPv4Src},     // NXM_OF_IP_SRC
	{ofp.OXMClassNXM0, 8, ofp.OXMIPv4Dst},     // NXM_OF_IP_DST
	{ofp.OXMClassNXM0, 9, ofp.OXMTCPSrc},      // NXM_OF_TCP_SRC
	{ofp.OXMClassNXM0, 10, ofp.OXMTCPDst},     // NXM_OF_TCP_DST
	{ofp.OXMClassNXM0, 11, ofp.OXMUDPSrc},     // NXM_OF_UDP_SRC
	{ofp.OXMClassNXM0, 12, ofp.OXMUDPDst},     // NXM_OF_UDP_DST
	{ofp.OXMClassNXM0, 13, ofp.OXMICMPv4Type}, // NXM_OF_ICMP_TYPE
	{ofp.OXMClassNXM0, 14, ofp.OXMICMPv4Code}, // NXM_OF_ICMP_CODE
	{ofp.OXMClassNXM0, 15, ofp.OXMARPOp},      // NXM_OF_ARP_OP
	{ofp.OXMClassNXM0, 16, ofp.OXMARPSPA},     // NXM_OF_ARP_SPA
	{ofp.OXMClassNXM0, 17, ofp.OXMARPTPA},     // NXM_OF_ARP_TPA
	{nxmClassNX1, 17, ofp.OXMARPSHA},          // NXM_NX_ARP_SHA
	{nxmClassNX1, 18, ofp.OXMARPTHA},          // NXM_NX_ARP_THA
}

// nxmInPort is NXM_OF_IN_PORT's field (class NXM0): a 16-bit 1.0 port.
const nxmInPort ofp.OXMField = 0

// AppendNicira is Append for a switch that takes Open vSwitch's Nicira
// extensions: a flow-mod whose match ofp_match cannot express (TCP flags,
// ...) or that deletes by cookie goes as NXT_FLOW_MOD, and a flow stats
// request (or reply) as NXST_FLOW, which selects by cookie. Other
// messages, and flow-mods plain 1.0 can express, are Append's.
func AppendNicira(b []byte, xid uint32, m ofp.Message) ([]byte, error) {
	switch m := m.(type) {
	case ofp.FlowMod:
		if needsNXM(&m) {
			return appendAs(b, xid, TypeVendor, func(b []byte) ([]byte, error) { return appendNXFlowMod(b, &m) })
		}
	case *ofp.FlowMod:
		if needsNXM(m) {
			return appendAs(b, xid, TypeVendor, func(b []byte) ([]byte, error) { return appendNXFlowMod(b, m) })
		}
	case ofp.MultipartRequest:
		return appendNXStats(b, xid, TypeStatsRequest, &m)
	case *ofp.MultipartRequest:
		return appendNXStats(b, xid, TypeStatsRequest, m)
	case ofp.MultipartReply:
		return appendNXStats(b, xid, TypeStatsReply, &m)
	case *ofp.MultipartReply:
		return appendNXStats(b, xid, TypeStatsReply, m)
	}
	return Append(b, xid, m)
}

// needsNXM reports whether fm needs NXT_FLOW_MOD: a delete by cookie, or a
// match ofp_match cannot express.
func needsNXM(fm *ofp.FlowMod) bool {
	if fm.CookieMask != 0 {
		return true
	}
	_, err := matchTo10(&fm.Match)
	return err != nil
}

// appendNXStats writes a flow stats request or reply as NXST_FLOW, and any
// other stats message as Append does.
func appendNXStats(b []byte, xid uint32, t Type, m ofp.Message) ([]byte, error) {
	var body func(b []byte) ([]byte, error)
	var flags uint16
	switch m := m.(type) {
	case *ofp.MultipartRequest:
		r, ok := flowStatsRequest(m.Body)
		if !ok {
			return Append(b, xid, m)
		}
		flags, body = m.Flags, func(b []byte) ([]byte, error) { return appendNXFlowStatsRequest(b, r) }
	case *ofp.MultipartReply:
		r, ok := flowStatsReply(m.Body)
		if !ok {
			return Append(b, xid, m)
		}
		flags, body = m.Flags, func(b []byte) ([]byte, error) { return appendNXFlowStats(b, r.Stats) }
	}
	return appendAs(b, xid, t, func(b []byte) ([]byte, error) {
		b = appendStatsHeader(b, statsVendor, flags)
		b = binary.BigEndian.AppendUint32(b, niciraVendor)
		b = append(binary.BigEndian.AppendUint32(b, nxstFlow), 0, 0, 0, 0)
		return body(b)
	})
}

func flowStatsRequest(body ofp.MultipartRequestBody) (*ofp.FlowStatsRequest, bool) {
	switch r := body.(type) {
	case ofp.FlowStatsRequest:
		return &r, true
	case *ofp.FlowStatsRequest:
		return r, true
	}
	return nil, false
}

func flowStatsReply(body ofp.MultipartReplyBody) (*ofp.FlowStatsReply, bool) {
	switch r := body.(type) {
	case ofp.FlowStatsReply:
		return &r, true
	case *ofp.FlowStatsReply:
		return r, true
	}
	return nil, false
}

// appendAs appends a message of type t whose body body writes, as Append
// does: header with xid and length, b unchanged on error.
func appendAs(b []byte, xid uint32, t Type, body func([]byte) ([]byte, error)) ([]byte, error) {
	start := len(b)
	b = append(b, Version, byte(t), 0, 0)
	b = binary.BigEndian.AppendUint32(b, xid)
	b, err := body(b)
	if err != nil {
		return b[:start], err
	}
	n := len(b) - start
	if n > ofp.MaxMessageLen {
		return b[:start], ofp.ErrTooLong
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(n))
	return b, nil
}

// appendNXFlowMod writes NXT_FLOW_MOD: nicira_header, nx_flow_mod, the
// nx_match (with the cookie selection of a delete) and 1.0 actions. It
// takes what appendFlowMod takes, and a cookie mask on deletes.
func appendNXFlowMod(b []byte, m *ofp.FlowMod) ([]byte, error) {
	if err := checkFlowMod(m); err != nil {
		return b, err
	}
	outPort, err := portTo10(m.OutPort)
	if err != nil {
		return b, err
	}
	actions, err := applyActions(m.Instructions)
	if err != nil {
		return b, err
	}
	cookie := m.Cookie
	if m.CookieMask != 0 {
		cookie = 0 // the match carries it; Open vSwitch reads this one as a new cookie
	}
	b = binary.BigEndian.AppendUint32(b, niciraVendor)
	b = binary.BigEndian.AppendUint32(b, nxtFlowMod)
	b = appendFlowModFields(b, m, cookie, outPort)
	lenAt := len(b)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)
	if b, err = appendNXMatch(b, lenAt, &m.Match, m.Cookie, m.CookieMask); err != nil {
		return b, err
	}
	return appendActions(b, actions, nxmProto(&m.Match))
}

// checkFlowMod refuses what a 1.0 flow-mod cannot carry (appendFlowMod):
// on NXT_FLOW_MOD, a cookie mask is for deletes.
func checkFlowMod(m *ofp.FlowMod) error {
	isDelete := m.Command == ofp.FlowDelete || m.Command == ofp.FlowDeleteStrict
	switch {
	case m.Command > ofp.FlowDeleteStrict:
		return unsupported("flow_mod command %d", m.Command)
	case m.TableID != 0 && !(isDelete && m.TableID == ofp.TableAll):
		return unsupported("flow_mod for table %d (1.0 flow mods address table 0)", m.TableID)
	case m.CookieMask != 0 && !isDelete:
		return unsupported("flow_mod cookie_mask %#x on an add or modify", m.CookieMask)
	case isDelete && m.OutGroup != ofp.GroupAny:
		return unsupported("flow_mod out_group %d", m.OutGroup)
	case m.Flags&^flowModFlags10 != 0:
		return unsupported("flow_mod flags %#x", uint16(m.Flags&^flowModFlags10))
	}
	return nil
}

// nxmProto is the IP protocol an IPv4 match pins, 0 for none, which
// decides what SET_TP_* rewrites (match10.proto).
func nxmProto(m *ofp.Match) uint8 {
	t, ok := m.Get(ofp.OXMEthType)
	p, pinned := m.Get(ofp.OXMIPProto)
	if !ok || !pinned || t.Uint() != uint64(ofp.EthTypeIPv4) || p.HasMask {
		return 0
	}
	return uint8(p.Uint())
}

func appendNXFlowStatsRequest(b []byte, r *ofp.FlowStatsRequest) ([]byte, error) {
	if r.OutGroup != ofp.GroupAny {
		return b, unsupported("flow stats out_group %d", r.OutGroup)
	}
	outPort, err := portTo10(r.OutPort)
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint16(b, outPort)
	lenAt := len(b)
	b = append(b, 0, 0, r.TableID, 0, 0, 0)
	return appendNXMatch(b, lenAt, &r.Match, r.Cookie, r.CookieMask)
}

// appendNXMatch writes m (and the cookie selection, if cookieMask is not
// 0) as an nx_match padded to 8 bytes, and its unpadded length at
// b[lenAt:]. The fields ofp_match has go by their NXM_OF_* names, others
// as they are.
func appendNXMatch(b []byte, lenAt int, m *ofp.Match, cookie, cookieMask uint64) ([]byte, error) {
	start := len(b)
	var port [2]byte
	for i := range m.OXMs {
		o := &m.OXMs[i]
		class, field := o.Class, o.Field
		value := o.Value()
		if class == ofp.OXMClassBasic && field == ofp.OXMInPort && !o.HasMask {
			if p, err := portTo10(uint32(o.Uint())); err == nil {
				binary.BigEndian.PutUint16(port[:], p)
				class, field, value = ofp.OXMClassNXM0, nxmInPort, port[:]
			}
		}
		if class == ofp.OXMClassBasic {
			for _, f := range nxmOF {
				if f.basic == field {
					class, field = f.class, f.field
					break
				}
			}
		}
		b = appendTLV(b, class, field, value, o.Mask())
	}
	if cookieMask != 0 {
		var v, mask [8]byte
		binary.BigEndian.PutUint64(v[:], cookie&cookieMask)
		binary.BigEndian.PutUint64(mask[:], cookieMask)
		if cookieMask == ^uint64(0) {
			b = appendTLV(b, nxmClassNX1, nxmFieldCookie, v[:], nil)
		} else {
			b = appendTLV(b, nxmClassNX1, nxmFieldCookie, v[:], mask[:])
		}
	}
	n := len(b) - start
	if n > 0xffff {
		return b, ofp.ErrTooLong
	}
	binary.BigEndian.PutUint16(b[lenAt:], uint16(n))
	for ; n%8 != 0; n++ {
		b = append(b, 0)
	}
	return b, nil
}

// appendTLV writes one NXM/OXM entry: class, field with the has-mask bit,
// payload length, value and mask.
func appendTLV(b []byte, class uint16, field ofp.OXMField, value, mask []byte) []byte {
	fm := byte(field) << 1
	if mask != nil {
		fm |= 1
	}
	b = binary.BigEndian.AppendUint16(b, class)
	b = append(b, fm, byte(len(value)+len(mask)))
	return append(append(b, value...), mask...)
}

// nxCookie is the cookie selection that the nx_match of a request or a
// delete carries.
type nxCookie struct {
	cookie, cookieMask uint64
}

// decodeNXMatch reads the nx_match b (unpadded) into dst's storage: the
// fields ofp_match has as OpenFlow-basic fields (as Open vSwitch names
// them on 1.0), the others as they are, and NXM_NX_COOKIE into the
// returned selection.
func decodeNXMatch(b []byte, dst []ofp.OXM) ([]ofp.OXM, nxCookie, error) {
	var sel nxCookie
	for len(b) > 0 {
		if len(b) < 4 {
			return dst, sel, ofp.ErrBadLength
		}
		class, field, hasMask, n := binary.BigEndian.Uint16(b), ofp.OXMField(b[2]>>1), b[2]&1 != 0, int(b[3])
		if 4+n > len(b) {
			return dst, sel, ofp.ErrBadLength
		}
		payload := b[4 : 4+n]
		b = b[4+n:]
		exp := 0
		if class == ofp.OXMClassExperimenter {
			exp = 4
		}
		if n < exp || hasMask && (n-exp)%2 != 0 {
			return dst, sel, ofp.ErrBadLength
		}
		value, mask := payload, []byte(nil)
		if hasMask {
			value, mask = payload[:exp+(n-exp)/2], payload[exp+(n-exp)/2:]
		}
		switch {
		case class == nxmClassNX1 && field == nxmFieldCookie:
			if len(value) != 8 {
				return dst, sel, ofp.ErrBadLength
			}
			sel.cookieMask = ^uint64(0)
			if mask != nil {
				sel.cookieMask = binary.BigEndian.Uint64(mask)
			}
			sel.cookie = binary.BigEndian.Uint64(value) & sel.cookieMask
			continue
		case class == ofp.OXMClassNXM0 && field == nxmInPort && !hasMask && n == 2:
			dst = append(dst, ofp.MatchInPort(portFrom10(binary.BigEndian.Uint16(value))))
			continue
		}
		for _, f := range nxmOF {
			if f.class == class && f.field == field {
				class, field = ofp.OXMClassBasic, f.basic
				break
			}
		}
		o, err := ofp.NewOXM(class, field, value, mask)
		if err != nil {
			return dst, sel, err
		}
		dst = append(dst, o)
	}
	return dst, sel, nil
}

// pullNXMatch reads the nx_match of length n (padded to 8 bytes) at the
// front of b and returns it with the rest of b.
func pullNXMatch(b []byte, n int, dst []ofp.OXM) ([]ofp.OXM, nxCookie, []byte, error) {
	padded := (n + 7) &^ 7
	if padded > len(b) {
		return dst, nxCookie{}, nil, ofp.ErrBadLength
	}
	oxms, sel, err := decodeNXMatch(b[:n], dst)
	return oxms, sel, b[padded:], err
}

// decodeVendor decodes an OFPT_VENDOR message: Nicira's NXT_FLOW_MOD.
func decodeVendor(body []byte) (ofp.Message, error) {
	if len(body) < niciraHeaderLen {
		return nil, ofp.ErrShort
	}
	vendor, subtype := binary.BigEndian.Uint32(body), binary.BigEndian.Uint32(body[4:])
	if vendor != niciraVendor || subtype != nxtFlowMod {
		return nil, unsupported("vendor %#x message %d", vendor, subtype)
	}
	return decodeNXFlowMod(body[niciraHeaderLen:])
}

func decodeNXFlowMod(b []byte) (ofp.Message, error) {
	if len(b) < nxFlowModLen {
		return nil, ofp.ErrShort
	}
	m, err := decodeFlowModFields(b)
	if err != nil {
		return nil, err
	}
	oxms, sel, rest, err := pullNXMatch(b[nxFlowModLen:], int(binary.BigEndian.Uint16(b[24:])), nil)
	if err != nil {
		return nil, err
	}
	m.Match.OXMs = oxms
	if sel.cookieMask != 0 {
		if m.Command != ofp.FlowDelete && m.Command != ofp.FlowDeleteStrict {
			return nil, unsupported("flow_mod selecting by cookie on an add or modify")
		}
		m.Cookie, m.CookieMask = sel.cookie, sel.cookieMask
	}
	actions, err := decodeActions(rest, nil, nxmProto(&m.Match))
	if err != nil {
		return nil, err
	}
	m.Instructions = instructions(actions)
	return m, nil
}

// vendorStats checks the Nicira stats header after the 1.0 stats header
// of type OFPST_VENDOR and returns the body after it.
func vendorStats(rest []byte) ([]byte, error) {
	if len(rest) < niciraStatsHeaderLen-4 {
		return nil, ofp.ErrShort
	}
	vendor, subtype := binary.BigEndian.Uint32(rest), binary.BigEndian.Uint32(rest[4:])
	if vendor != niciraVendor || subtype != nxstFlow {
		return nil, unsupported("vendor %#x stats %d", vendor, subtype)
	}
	return rest[niciraStatsHeaderLen-4:], nil
}

func decodeNXFlowStatsRequest(flags uint16, rest []byte) (ofp.Message, error) {
	b, err := vendorStats(rest)
	if err != nil {
		return nil, err
	}
	if len(b) < nxFlowStatsReqLen {
		return nil, ofp.ErrShort
	}
	r := ofp.FlowStatsRequest{
		TableID:  b[4],
		OutPort:  portFrom10(binary.BigEndian.Uint16(b)),
		OutGroup: ofp.GroupAny,
	}
	oxms, sel, rest, err := pullNXMatch(b[nxFlowStatsReqLen:], int(binary.BigEndian.Uint16(b[2:])), nil)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, ofp.ErrBadLength
	}
	r.Match.OXMs, r.Cookie, r.CookieMask = oxms, sel.cookie, sel.cookieMask
	return &ofp.MultipartRequest{Flags: flags, Body: r}, nil
}

// appendNXFlowStats writes nx_flow_stats entries, which have no flags;
// the ages Open vSwitch adds are left unknown (0).
func appendNXFlowStats(b []byte, stats []ofp.FlowStats) ([]byte, error) {
	for i := range stats {
		s := &stats[i]
		if s.Flags != 0 {
			return b, unsupported("flow stats flags %#x", uint16(s.Flags))
		}
		actions, err := applyActions(s.Instructions)
		if err != nil {
			return b, err
		}
		start := len(b)
		b = append(b, 0, 0, s.TableID, 0)
		b = binary.BigEndian.AppendUint32(b, s.DurationSec)
		b = binary.BigEndian.AppendUint32(b, s.DurationNsec)
		b = binary.BigEndian.AppendUint16(b, s.Priority)
		b = binary.BigEndian.AppendUint16(b, s.IdleTimeout)
		b = binary.BigEndian.AppendUint16(b, s.HardTimeout)
		lenAt := len(b)
		b = append(b, 0, 0, 0, 0, 0, 0) // match_len, idle_age, hard_age
		b = binary.BigEndian.AppendUint64(b, s.Cookie)
		b = binary.BigEndian.AppendUint64(b, s.PacketCount)
		b = binary.BigEndian.AppendUint64(b, s.ByteCount)
		if b, err = appendNXMatch(b, lenAt, &s.Match, 0, 0); err != nil {
			return b, err
		}
		if b, err = appendActions(b, actions, nxmProto(&s.Match)); err != nil {
			return b, err
		}
		if len(b)-start > 0xffff {
			return b, ofp.ErrTooLong
		}
		binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	}
	return b, nil
}

// decodeNXFlowStatsReply decodes an NXST_FLOW reply's entries, setting
// apart those whose actions 1.0 cannot express, as decodeFlowStats does.
func decodeNXFlowStatsReply(flags uint16, rest []byte) (ofp.Message, error) {
	b, err := vendorStats(rest)
	if err != nil {
		return nil, err
	}
	var r ofp.FlowStatsReply
	for len(b) > 0 {
		var s ofp.FlowStats
		n, actionsAt, err := decodeNXFlowStatsEntry(b, &s)
		if err != nil {
			return nil, err
		}
		actions, err := decodeActions(b[actionsAt:n], nil, nxmProto(&s.Match))
		switch {
		case errors.Is(err, ofp.ErrUnsupported):
			r.Unreadable = append(r.Unreadable, s)
		case err != nil:
			return nil, err
		default:
			s.Instructions = instructions(actions)
			r.Stats = append(r.Stats, s)
		}
		b = b[n:]
	}
	return &ofp.MultipartReply{Flags: flags, Body: r}, nil
}

// decodeNXFlowStatsPart decodes an NXST_FLOW reply's entries into p
// without their actions (decodeFlowStatsPart).
func decodeNXFlowStatsPart(flags uint16, rest []byte, p *ofp.FlowStatsPart) error {
	b, err := vendorStats(rest)
	if err != nil {
		return err
	}
	p.Flags = flags
	p.Stats = p.Stats[:0]
	for len(b) > 0 {
		n, _, err := decodeNXFlowStatsEntry(b, p.NextEntry())
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// decodeNXFlowStatsEntry reads the nx_flow_stats entry at the front of b
// into s but for its actions, reusing the storage of s.Match. It returns
// the entry's length and where in it the actions start.
func decodeNXFlowStatsEntry(b []byte, s *ofp.FlowStats) (n, actionsAt int, err error) {
	if len(b) < nxFlowStatsLen {
		return 0, 0, ofp.ErrShort
	}
	n = int(binary.BigEndian.Uint16(b))
	if n < nxFlowStatsLen || n > len(b) {
		return 0, 0, ofp.ErrBadLength
	}
	e := b[:n]
	*s = ofp.FlowStats{
		TableID:      e[2],
		DurationSec:  binary.BigEndian.Uint32(e[4:]),
		DurationNsec: binary.BigEndian.Uint32(e[8:]),
		Priority:     binary.BigEndian.Uint16(e[12:]),
		IdleTimeout:  binary.BigEndian.Uint16(e[14:]),
		HardTimeout:  binary.BigEndian.Uint16(e[16:]),
		Cookie:       binary.BigEndian.Uint64(e[24:]),
		PacketCount:  binary.BigEndian.Uint64(e[32:]),
		ByteCount:    binary.BigEndian.Uint64(e[40:]),
		Match:        ofp.Match{OXMs: s.Match.OXMs[:0]},
	}
	oxms, sel, rest, err := pullNXMatch(e[nxFlowStatsLen:], int(binary.BigEndian.Uint16(e[18:])), s.Match.OXMs)
	s.Match.OXMs = oxms
	if err != nil {
		return 0, 0, err
	}
	if sel.cookieMask != 0 {
		return 0, 0, unsupported("flow stats entry with a cookie in its match")
	}
	return n, n - len(rest), nil
}
