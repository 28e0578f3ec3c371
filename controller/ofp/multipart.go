package ofp

import "encoding/binary"

// MultipartType is ofp_multipart_type.
type MultipartType uint16

const (
	MultipartDesc          MultipartType = 0  // OFPMP_DESC
	MultipartFlow          MultipartType = 1  // OFPMP_FLOW
	MultipartAggregate     MultipartType = 2  // OFPMP_AGGREGATE
	MultipartTable         MultipartType = 3  // OFPMP_TABLE
	MultipartPortStats     MultipartType = 4  // OFPMP_PORT_STATS
	MultipartGroup         MultipartType = 6  // OFPMP_GROUP
	MultipartGroupDesc     MultipartType = 7  // OFPMP_GROUP_DESC
	MultipartGroupFeatures MultipartType = 8  // OFPMP_GROUP_FEATURES
	MultipartPortDesc      MultipartType = 13 // OFPMP_PORT_DESC
)

// MultipartRequestMore and MultipartReplyMore (OFPMPF_REQ_MORE,
// OFPMPF_REPLY_MORE) say more parts with the same xid follow.
const (
	MultipartRequestMore uint16 = 1
	MultipartReplyMore   uint16 = 1
)

// MultipartRequest is OFPT_MULTIPART_REQUEST. Bodies this codec models:
// DescRequest, FlowStatsRequest, AggregateStatsRequest, PortStatsRequest,
// PortDescRequest, GroupStatsRequest, GroupDescRequest and
// GroupFeaturesRequest (group.go); other types decode as ErrUnsupported.
type MultipartRequest struct {
	Flags uint16
	Body  MultipartRequestBody
}

// MultipartReply is OFPT_MULTIPART_REPLY; a switch splits a long reply into
// several messages with MultipartReplyMore set on all but the last.
type MultipartReply struct {
	Flags uint16
	Body  MultipartReplyBody
}

// MultipartRequestBody is the body of a MultipartRequest.
type MultipartRequestBody interface {
	MultipartType() MultipartType
	appendMultipart(b []byte) []byte
}

// MultipartReplyBody is the body of a MultipartReply.
type MultipartReplyBody interface {
	MultipartType() MultipartType
	appendMultipart(b []byte) []byte
	replyBody() // keeps request bodies out of replies
}

func (MultipartRequest) Type() Type { return TypeMultipartRequest }
func (MultipartReply) Type() Type   { return TypeMultipartReply }

func appendMultipartHeader(b []byte, t MultipartType, flags uint16) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(t))
	b = binary.BigEndian.AppendUint16(b, flags)
	return append(b, 0, 0, 0, 0)
}

// A nil body encodes nothing, so a bug shows as a switch error rather
// than a panic.
func (m MultipartRequest) appendBody(b []byte) []byte {
	if m.Body == nil {
		return b
	}
	return m.Body.appendMultipart(appendMultipartHeader(b, m.Body.MultipartType(), m.Flags))
}

func (m MultipartReply) appendBody(b []byte) []byte {
	if m.Body == nil {
		return b
	}
	return m.Body.appendMultipart(appendMultipartHeader(b, m.Body.MultipartType(), m.Flags))
}

func decodeMultipartHeader(body []byte) (MultipartType, uint16, []byte, error) {
	if len(body) < 8 {
		return 0, 0, nil, ErrShort
	}
	return MultipartType(binary.BigEndian.Uint16(body)), binary.BigEndian.Uint16(body[2:]), body[8:], nil
}

func (m *MultipartRequest) decodeBody(body []byte) error {
	t, flags, rest, err := decodeMultipartHeader(body)
	if err != nil {
		return err
	}
	m.Flags = flags
	switch t {
	case MultipartDesc:
		m.Body, err = DescRequest{}, expectEmpty(rest)
	case MultipartFlow:
		var r FlowStatsRequest
		err = r.decode(rest)
		m.Body = r
	case MultipartAggregate:
		var r FlowStatsRequest
		err = r.decode(rest)
		m.Body = AggregateStatsRequest(r)
	case MultipartPortStats:
		if len(rest) != 8 {
			return ErrBadLength
		}
		m.Body = PortStatsRequest{PortNo: binary.BigEndian.Uint32(rest)}
	case MultipartPortDesc:
		m.Body, err = PortDescRequest{}, expectEmpty(rest)
	case MultipartGroup:
		if len(rest) != 8 {
			return ErrBadLength
		}
		m.Body = GroupStatsRequest{GroupID: binary.BigEndian.Uint32(rest)}
	case MultipartGroupDesc:
		m.Body, err = GroupDescRequest{}, expectEmpty(rest)
	case MultipartGroupFeatures:
		m.Body, err = GroupFeaturesRequest{}, expectEmpty(rest)
	default:
		return errUnknownMultipart
	}
	return err
}

func (m *MultipartReply) decodeBody(body []byte) error {
	t, flags, rest, err := decodeMultipartHeader(body)
	if err != nil {
		return err
	}
	m.Flags = flags
	switch t {
	case MultipartDesc:
		var r DescReply
		err = r.decode(rest)
		m.Body = r
	case MultipartFlow:
		var r FlowStatsReply
		err = r.decode(rest)
		m.Body = r
	case MultipartAggregate:
		if len(rest) != 24 {
			return ErrBadLength
		}
		m.Body = AggregateStatsReply{
			PacketCount: binary.BigEndian.Uint64(rest),
			ByteCount:   binary.BigEndian.Uint64(rest[8:]),
			FlowCount:   binary.BigEndian.Uint32(rest[16:]),
		}
	case MultipartPortStats:
		var r PortStatsReply
		err = r.decode(rest)
		m.Body = r
	case MultipartPortDesc:
		var r PortDescReply
		err = r.decode(rest)
		m.Body = r
	case MultipartGroup:
		var r GroupStatsReply
		err = r.decode(rest)
		m.Body = r
	case MultipartGroupDesc:
		var r GroupDescReply
		err = r.decode(rest)
		m.Body = r
	case MultipartGroupFeatures:
		var r GroupFeaturesReply
		err = r.decode(rest)
		m.Body = r
	default:
		return errUnknownMultipart
	}
	return err
}

// DescRequest is an OFPMP_DESC request.
type DescRequest struct{}

func (DescRequest) MultipartType() MultipartType    { return MultipartDesc }
func (DescRequest) appendMultipart(b []byte) []byte { return b }

// DescReply is the OFPMP_DESC reply (ofp_desc); strings are NUL-padded on
// the wire and truncated to their field size by Append.
type DescReply struct {
	MfrDesc   string
	HWDesc    string
	SWDesc    string
	SerialNum string
	DPDesc    string
}

const (
	descStrLen   = 256 // DESC_STR_LEN
	serialNumLen = 32  // SERIAL_NUM_LEN
	descReplyLen = 4*descStrLen + serialNumLen
)

func (DescReply) MultipartType() MultipartType { return MultipartDesc }
func (DescReply) replyBody()                   {}

func (r DescReply) appendMultipart(b []byte) []byte {
	b = AppendFixedString(b, r.MfrDesc, descStrLen)
	b = AppendFixedString(b, r.HWDesc, descStrLen)
	b = AppendFixedString(b, r.SWDesc, descStrLen)
	b = AppendFixedString(b, r.SerialNum, serialNumLen)
	return AppendFixedString(b, r.DPDesc, descStrLen)
}

func (r *DescReply) decode(b []byte) error {
	if len(b) != descReplyLen {
		return ErrBadLength
	}
	r.MfrDesc = FixedString(b[:256])
	r.HWDesc = FixedString(b[256:512])
	r.SWDesc = FixedString(b[512:768])
	r.SerialNum = FixedString(b[768:800])
	r.DPDesc = FixedString(b[800:])
	return nil
}

// AppendFixedString appends s as a NUL-padded field of n bytes, cut to n:
// the port names and descriptions of every OpenFlow version.
func AppendFixedString(b []byte, s string, n int) []byte {
	if len(s) > n {
		s = s[:n]
	}
	b = append(b, s...)
	for range n - len(s) {
		b = append(b, 0)
	}
	return b
}

// FixedString reads a NUL-padded field.
func FixedString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// FlowStatsRequest is an OFPMP_FLOW request. Use TableAll, PortAny and
// GroupAny for no restriction; CookieMask 0 matches any cookie.
type FlowStatsRequest struct {
	TableID    uint8
	OutPort    uint32
	OutGroup   uint32
	Cookie     uint64
	CookieMask uint64
	Match      Match
}

// AggregateStatsRequest is an OFPMP_AGGREGATE request; same fields as
// FlowStatsRequest.
type AggregateStatsRequest FlowStatsRequest

func (FlowStatsRequest) MultipartType() MultipartType      { return MultipartFlow }
func (AggregateStatsRequest) MultipartType() MultipartType { return MultipartAggregate }

func (r FlowStatsRequest) appendMultipart(b []byte) []byte { return r.appendTo(b) }
func (r AggregateStatsRequest) appendMultipart(b []byte) []byte {
	fr := FlowStatsRequest(r)
	return fr.appendTo(b)
}

func (r *FlowStatsRequest) appendTo(b []byte) []byte {
	b = append(b, r.TableID, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, r.OutPort)
	b = binary.BigEndian.AppendUint32(b, r.OutGroup)
	b = append(b, 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, r.Cookie)
	b = binary.BigEndian.AppendUint64(b, r.CookieMask)
	return r.Match.appendTo(b)
}

const flowStatsRequestFixedLen = 32

func (r *FlowStatsRequest) decode(b []byte) error {
	if len(b) < flowStatsRequestFixedLen {
		return ErrShort
	}
	r.TableID = b[0]
	r.OutPort = binary.BigEndian.Uint32(b[4:])
	r.OutGroup = binary.BigEndian.Uint32(b[8:])
	r.Cookie = binary.BigEndian.Uint64(b[16:])
	r.CookieMask = binary.BigEndian.Uint64(b[24:])
	used, err := r.Match.decode(b[flowStatsRequestFixedLen:])
	if err != nil {
		return err
	}
	if flowStatsRequestFixedLen+used != len(b) {
		return ErrBadLength
	}
	return nil
}

// FlowStats is one ofp_flow_stats entry.
type FlowStats struct {
	TableID      uint8
	DurationSec  uint32
	DurationNsec uint32
	Priority     uint16
	IdleTimeout  uint16
	HardTimeout  uint16
	Flags        FlowModFlags
	Cookie       uint64
	PacketCount  uint64
	ByteCount    uint64
	Match        Match
	Instructions []Instruction
}

// FlowStatsReply is the OFPMP_FLOW reply.
type FlowStatsReply struct {
	Stats []FlowStats
	// Unreadable are the entries whose actions a decoder could not read,
	// without instructions: a switch may hold flows its controller's
	// version cannot express (OpenFlow 1.0, package ofp10, meets the
	// Nicira actions of flows installed over 1.3). This package reads
	// every action (ActionRaw) and leaves it empty; encoders ignore it.
	Unreadable []FlowStats
}

func (FlowStatsReply) MultipartType() MultipartType { return MultipartFlow }
func (FlowStatsReply) replyBody()                   {}

const flowStatsFixedLen = 48

func (r FlowStatsReply) appendMultipart(b []byte) []byte {
	for i := range r.Stats {
		s := &r.Stats[i]
		start := len(b)
		b = append(b, 0, 0, s.TableID, 0)
		b = binary.BigEndian.AppendUint32(b, s.DurationSec)
		b = binary.BigEndian.AppendUint32(b, s.DurationNsec)
		b = binary.BigEndian.AppendUint16(b, s.Priority)
		b = binary.BigEndian.AppendUint16(b, s.IdleTimeout)
		b = binary.BigEndian.AppendUint16(b, s.HardTimeout)
		b = binary.BigEndian.AppendUint16(b, uint16(s.Flags))
		b = append(b, 0, 0, 0, 0)
		b = binary.BigEndian.AppendUint64(b, s.Cookie)
		b = binary.BigEndian.AppendUint64(b, s.PacketCount)
		b = binary.BigEndian.AppendUint64(b, s.ByteCount)
		b = s.Match.appendTo(b)
		b = appendInstructions(b, s.Instructions)
		binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	}
	return b
}

func (r *FlowStatsReply) decode(b []byte) error {
	for len(b) > 0 {
		var s FlowStats
		n, instructionsAt, err := s.decode(b)
		if err != nil {
			return err
		}
		if s.Instructions, err = decodeInstructions(b[instructionsAt:n], nil); err != nil {
			return err
		}
		r.Stats = append(r.Stats, s)
		b = b[n:]
	}
	return nil
}

// decode reads the ofp_flow_stats entry at the front of b into s but for
// its instructions, which it leaves nil, reusing the storage of s.Match.
// It returns the entry's length and where its instructions begin.
func (s *FlowStats) decode(b []byte) (n, instructionsAt int, err error) {
	if len(b) < flowStatsFixedLen {
		return 0, 0, ErrShort
	}
	n = int(binary.BigEndian.Uint16(b))
	if n < flowStatsFixedLen || n > len(b) {
		return 0, 0, ErrBadLength
	}
	e := b[:n]
	*s = FlowStats{
		TableID:      e[2],
		DurationSec:  binary.BigEndian.Uint32(e[4:]),
		DurationNsec: binary.BigEndian.Uint32(e[8:]),
		Priority:     binary.BigEndian.Uint16(e[12:]),
		IdleTimeout:  binary.BigEndian.Uint16(e[14:]),
		HardTimeout:  binary.BigEndian.Uint16(e[16:]),
		Flags:        FlowModFlags(binary.BigEndian.Uint16(e[18:])),
		Cookie:       binary.BigEndian.Uint64(e[24:]),
		PacketCount:  binary.BigEndian.Uint64(e[32:]),
		ByteCount:    binary.BigEndian.Uint64(e[40:]),
		Match:        s.Match,
	}
	used, err := s.Match.decode(e[flowStatsFixedLen:])
	if err != nil {
		return 0, 0, err
	}
	return n, flowStatsFixedLen + used, nil
}

// FlowStatsPart is one part of an OFPMP_FLOW reply read for the flows'
// counters: its entries without their instructions, which are not
// decoded (nor checked). DecodeInto decodes a part into the storage of
// the part before, each entry's match fields too, so that a caller
// keeping one reads a poll of any number of flows without allocating
// once the storage has grown to the longest part. Append encodes it as
// the MultipartReply it was, less the instructions.
type FlowStatsPart struct {
	Flags uint16 // MultipartReplyMore on every part but the last
	Stats []FlowStats
}

func (FlowStatsPart) Type() Type { return TypeMultipartReply }

func (p FlowStatsPart) appendBody(b []byte) []byte {
	return MultipartReply{Flags: p.Flags, Body: FlowStatsReply{Stats: p.Stats}}.appendBody(b)
}

func (p *FlowStatsPart) decodeBody(body []byte) error {
	t, flags, rest, err := decodeMultipartHeader(body)
	if err != nil {
		return err
	}
	if t != MultipartFlow {
		return errUnknownMultipart
	}
	p.Flags = flags
	p.Stats = p.Stats[:0]
	for len(rest) > 0 {
		n, _, err := p.NextEntry().decode(rest)
		if err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// NextEntry adds an empty entry to the part for a decoder to fill, and
// returns it. The entry keeps the storage of the match of the entry its
// place held in an earlier part.
func (p *FlowStatsPart) NextEntry() *FlowStats {
	if len(p.Stats) < cap(p.Stats) {
		p.Stats = p.Stats[:len(p.Stats)+1]
	} else {
		p.Stats = append(p.Stats, FlowStats{})
	}
	s := &p.Stats[len(p.Stats)-1]
	*s = FlowStats{Match: Match{OXMs: s.Match.OXMs[:0]}}
	return s
}

// AggregateStatsReply is the OFPMP_AGGREGATE reply.
type AggregateStatsReply struct {
	PacketCount uint64
	ByteCount   uint64
	FlowCount   uint32
}

func (AggregateStatsReply) MultipartType() MultipartType { return MultipartAggregate }
func (AggregateStatsReply) replyBody()                   {}

func (r AggregateStatsReply) appendMultipart(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, r.PacketCount)
	b = binary.BigEndian.AppendUint64(b, r.ByteCount)
	b = binary.BigEndian.AppendUint32(b, r.FlowCount)
	return append(b, 0, 0, 0, 0)
}

// PortStatsRequest is an OFPMP_PORT_STATS request; PortAny for all ports.
type PortStatsRequest struct{ PortNo uint32 }

func (PortStatsRequest) MultipartType() MultipartType { return MultipartPortStats }

func (r PortStatsRequest) appendMultipart(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(b, r.PortNo), 0, 0, 0, 0)
}

// PortStats is one ofp_port_stats entry.
type PortStats struct {
	PortNo       uint32
	RxPackets    uint64
	TxPackets    uint64
	RxBytes      uint64
	TxBytes      uint64
	RxDropped    uint64
	TxDropped    uint64
	RxErrors     uint64
	TxErrors     uint64
	RxFrameErr   uint64
	RxOverErr    uint64
	RxCRCErr     uint64
	Collisions   uint64
	DurationSec  uint32
	DurationNsec uint32
}

const portStatsLen = 112

// PortStatsReply is the OFPMP_PORT_STATS reply.
type PortStatsReply struct{ Stats []PortStats }

func (PortStatsReply) MultipartType() MultipartType { return MultipartPortStats }
func (PortStatsReply) replyBody()                   {}

func (r PortStatsReply) appendMultipart(b []byte) []byte {
	for i := range r.Stats {
		s := &r.Stats[i]
		b = append(binary.BigEndian.AppendUint32(b, s.PortNo), 0, 0, 0, 0)
		for _, v := range [...]uint64{s.RxPackets, s.TxPackets, s.RxBytes, s.TxBytes,
			s.RxDropped, s.TxDropped, s.RxErrors, s.TxErrors, s.RxFrameErr, s.RxOverErr,
			s.RxCRCErr, s.Collisions} {
			b = binary.BigEndian.AppendUint64(b, v)
		}
		b = binary.BigEndian.AppendUint32(b, s.DurationSec)
		b = binary.BigEndian.AppendUint32(b, s.DurationNsec)
	}
	return b
}

func (r *PortStatsReply) decode(b []byte) error {
	if len(b)%portStatsLen != 0 {
		return ErrBadLength
	}
	for ; len(b) > 0; b = b[portStatsLen:] {
		var c [12]uint64
		for i := range c {
			c[i] = binary.BigEndian.Uint64(b[8+8*i:])
		}
		r.Stats = append(r.Stats, PortStats{
			PortNo:    binary.BigEndian.Uint32(b),
			RxPackets: c[0], TxPackets: c[1], RxBytes: c[2], TxBytes: c[3],
			RxDropped: c[4], TxDropped: c[5], RxErrors: c[6], TxErrors: c[7],
			RxFrameErr: c[8], RxOverErr: c[9], RxCRCErr: c[10], Collisions: c[11],
			DurationSec:  binary.BigEndian.Uint32(b[104:]),
			DurationNsec: binary.BigEndian.Uint32(b[108:]),
		})
	}
	return nil
}

// PortDescRequest is an OFPMP_PORT_DESC request.
type PortDescRequest struct{}

func (PortDescRequest) MultipartType() MultipartType    { return MultipartPortDesc }
func (PortDescRequest) appendMultipart(b []byte) []byte { return b }

// PortDescReply is the OFPMP_PORT_DESC reply.
type PortDescReply struct{ Ports []Port }

func (PortDescReply) MultipartType() MultipartType { return MultipartPortDesc }
func (PortDescReply) replyBody()                   {}

func (r PortDescReply) appendMultipart(b []byte) []byte {
	for i := range r.Ports {
		b = r.Ports[i].appendTo(b)
	}
	return b
}

func (r *PortDescReply) decode(b []byte) error {
	if len(b)%portLen != 0 {
		return ErrBadLength
	}
	for ; len(b) > 0; b = b[portLen:] {
		var p Port
		p.decode(b)
		r.Ports = append(r.Ports, p)
	}
	return nil
}
