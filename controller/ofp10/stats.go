package ofp10

import (
	"encoding/binary"
	"errors"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// 1.0 stats (OFPT_STATS_REQUEST/REPLY) share 1.3 multipart's header
// layout, type numbers and REPLY_MORE flag; the flow and port bodies are
// the 1.0 structures.

func appendStatsHeader(b []byte, t ofp.MultipartType, flags uint16) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(t))
	return binary.BigEndian.AppendUint16(b, flags)
}

func appendStatsRequest(b []byte, m *ofp.MultipartRequest) (Type, []byte, error) {
	if m.Body == nil {
		return 0, b, unsupported("stats request without a body")
	}
	b = appendStatsHeader(b, m.Body.MultipartType(), m.Flags)
	var err error
	switch r := m.Body.(type) {
	case ofp.DescRequest, *ofp.DescRequest:
	case ofp.FlowStatsRequest:
		b, err = appendFlowStatsRequest(b, &r)
	case *ofp.FlowStatsRequest:
		b, err = appendFlowStatsRequest(b, r)
	case ofp.AggregateStatsRequest:
		b, err = appendFlowStatsRequest(b, (*ofp.FlowStatsRequest)(&r))
	case *ofp.AggregateStatsRequest:
		b, err = appendFlowStatsRequest(b, (*ofp.FlowStatsRequest)(r))
	case ofp.PortStatsRequest:
		b, err = appendPortStatsRequest(b, r.PortNo)
	case *ofp.PortStatsRequest:
		b, err = appendPortStatsRequest(b, r.PortNo)
	case ofp.PortDescRequest, *ofp.PortDescRequest:
		err = unsupported("port_desc request (a 1.0 features reply lists the ports)")
	default:
		err = unsupported("multipart type %d", m.Body.MultipartType())
	}
	return TypeStatsRequest, b, err
}

// appendFlowStatsRequest writes ofp_flow_stats_request (and the same
// aggregate request). 1.0 cannot select flows by cookie or out_group:
// with a cookie mask the caller asks for all flows and filters them.
func appendFlowStatsRequest(b []byte, r *ofp.FlowStatsRequest) ([]byte, error) {
	if r.CookieMask != 0 {
		return b, unsupported("flow stats cookie_mask %#x (1.0 cannot select flows by cookie)", r.CookieMask)
	}
	if r.OutGroup != ofp.GroupAny {
		return b, unsupported("flow stats out_group %d", r.OutGroup)
	}
	match, err := matchTo10(&r.Match)
	if err != nil {
		return b, err
	}
	outPort, err := portTo10(r.OutPort)
	if err != nil {
		return b, err
	}
	b = match.appendTo(b)
	b = append(b, r.TableID, 0)
	return binary.BigEndian.AppendUint16(b, outPort), nil
}

func appendPortStatsRequest(b []byte, port uint32) ([]byte, error) {
	p, err := portTo10(port)
	if err != nil {
		return b, err
	}
	return append(binary.BigEndian.AppendUint16(b, p), 0, 0, 0, 0, 0, 0), nil
}

func decodeStatsHeader(body []byte) (ofp.MultipartType, uint16, []byte, error) {
	if len(body) < 4 {
		return 0, 0, nil, ofp.ErrShort
	}
	return ofp.MultipartType(binary.BigEndian.Uint16(body)), binary.BigEndian.Uint16(body[2:]), body[4:], nil
}

const flowStatsRequestLen = matchLen + 4

func decodeStatsRequest(body []byte) (ofp.Message, error) {
	t, flags, rest, err := decodeStatsHeader(body)
	if err != nil {
		return nil, err
	}
	if t == statsVendor {
		return decodeNXFlowStatsRequest(flags, rest)
	}
	m := &ofp.MultipartRequest{Flags: flags}
	switch t {
	case ofp.MultipartDesc:
		m.Body, err = ofp.DescRequest{}, expectEmpty(rest)
	case ofp.MultipartFlow, ofp.MultipartAggregate:
		if len(rest) != flowStatsRequestLen {
			return nil, ofp.ErrBadLength
		}
		match := parseMatch10(rest)
		r := ofp.FlowStatsRequest{
			TableID:  rest[matchLen],
			OutPort:  portFrom10(binary.BigEndian.Uint16(rest[matchLen+2:])),
			OutGroup: ofp.GroupAny,
			Match:    ofp.Match{OXMs: match.oxms(nil)},
		}
		m.Body = r
		if t == ofp.MultipartAggregate {
			m.Body = ofp.AggregateStatsRequest(r)
		}
	case ofp.MultipartPortStats:
		if len(rest) != 8 {
			return nil, ofp.ErrBadLength
		}
		m.Body = ofp.PortStatsRequest{PortNo: portFrom10(binary.BigEndian.Uint16(rest))}
	default:
		return nil, unsupported("stats type %d", t)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

func appendStatsReply(b []byte, m *ofp.MultipartReply) (Type, []byte, error) {
	if m.Body == nil {
		return 0, b, unsupported("stats reply without a body")
	}
	b = appendStatsHeader(b, m.Body.MultipartType(), m.Flags)
	var err error
	switch r := m.Body.(type) {
	case ofp.DescReply:
		b = appendDescReply(b, &r)
	case *ofp.DescReply:
		b = appendDescReply(b, r)
	case ofp.FlowStatsReply:
		b, err = appendFlowStats(b, r.Stats)
	case *ofp.FlowStatsReply:
		b, err = appendFlowStats(b, r.Stats)
	case ofp.AggregateStatsReply:
		b = appendAggregateReply(b, &r)
	case *ofp.AggregateStatsReply:
		b = appendAggregateReply(b, r)
	case ofp.PortStatsReply:
		b, err = appendPortStats(b, r.Stats)
	case *ofp.PortStatsReply:
		b, err = appendPortStats(b, r.Stats)
	default:
		err = unsupported("multipart type %d", m.Body.MultipartType())
	}
	return TypeStatsReply, b, err
}

const (
	descStrLen   = 256 // DESC_STR_LEN
	serialNumLen = 32  // SERIAL_NUM_LEN
	descReplyLen = 4*descStrLen + serialNumLen
)

func appendDescReply(b []byte, r *ofp.DescReply) []byte {
	b = ofp.AppendFixedString(b, r.MfrDesc, descStrLen)
	b = ofp.AppendFixedString(b, r.HWDesc, descStrLen)
	b = ofp.AppendFixedString(b, r.SWDesc, descStrLen)
	b = ofp.AppendFixedString(b, r.SerialNum, serialNumLen)
	return ofp.AppendFixedString(b, r.DPDesc, descStrLen)
}

func appendAggregateReply(b []byte, r *ofp.AggregateStatsReply) []byte {
	b = binary.BigEndian.AppendUint64(b, r.PacketCount)
	b = binary.BigEndian.AppendUint64(b, r.ByteCount)
	b = binary.BigEndian.AppendUint32(b, r.FlowCount)
	return append(b, 0, 0, 0, 0)
}

// flowStatsFixedLen is ofp_flow_stats before the actions.
const flowStatsFixedLen = 4 + matchLen + 44

// appendFlowStats writes 1.0 ofp_flow_stats entries, which have no flags.
func appendFlowStats(b []byte, stats []ofp.FlowStats) ([]byte, error) {
	for i := range stats {
		s := &stats[i]
		if s.Flags != 0 {
			return b, unsupported("flow stats flags %#x", uint16(s.Flags))
		}
		match, err := matchTo10(&s.Match)
		if err != nil {
			return b, err
		}
		actions, err := applyActions(s.Instructions)
		if err != nil {
			return b, err
		}
		start := len(b)
		b = append(b, 0, 0, s.TableID, 0)
		b = match.appendTo(b)
		b = binary.BigEndian.AppendUint32(b, s.DurationSec)
		b = binary.BigEndian.AppendUint32(b, s.DurationNsec)
		b = binary.BigEndian.AppendUint16(b, s.Priority)
		b = binary.BigEndian.AppendUint16(b, s.IdleTimeout)
		b = binary.BigEndian.AppendUint16(b, s.HardTimeout)
		b = append(b, 0, 0, 0, 0, 0, 0)
		b = binary.BigEndian.AppendUint64(b, s.Cookie)
		b = binary.BigEndian.AppendUint64(b, s.PacketCount)
		b = binary.BigEndian.AppendUint64(b, s.ByteCount)
		if b, err = appendActions(b, actions, match.proto()); err != nil {
			return b, err
		}
		binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	}
	return b, nil
}

// decodeFlowStats decodes 1.0 ofp_flow_stats entries. An entry whose
// actions 1.0 cannot express goes to unreadable, without instructions,
// rather than failing the reply: a switch moved from 1.3 to 1.0 still
// holds flows with Nicira actions, and the caller may want them gone.
func decodeFlowStats(b []byte) (stats, unreadable []ofp.FlowStats, err error) {
	for len(b) > 0 {
		var s ofp.FlowStats
		n, proto, err := decodeFlowStatsEntry(b, &s)
		if err != nil {
			return nil, nil, err
		}
		actions, err := decodeActions(b[flowStatsFixedLen:n], nil, proto)
		switch {
		case errors.Is(err, ofp.ErrUnsupported):
			unreadable = append(unreadable, s)
		case err != nil:
			return nil, nil, err
		default:
			s.Instructions = instructions(actions)
			stats = append(stats, s)
		}
		b = b[n:]
	}
	return stats, unreadable, nil
}

// decodeFlowStatsPart decodes the body of a flow stats reply into p,
// reusing its storage, without the actions: a part of a reply read for
// its counters, whose entries all count whatever their actions.
func decodeFlowStatsPart(body []byte, p *ofp.FlowStatsPart) error {
	t, flags, rest, err := decodeStatsHeader(body)
	if err != nil {
		return err
	}
	if t == statsVendor {
		return decodeNXFlowStatsPart(flags, rest, p)
	}
	if t != ofp.MultipartFlow {
		return unsupported("stats type %d where flow stats were asked for", t)
	}
	p.Flags = flags
	p.Stats = p.Stats[:0]
	for len(rest) > 0 {
		n, _, err := decodeFlowStatsEntry(rest, p.NextEntry())
		if err != nil {
			return err
		}
		rest = rest[n:]
	}
	return nil
}

// decodeFlowStatsEntry reads the 1.0 ofp_flow_stats entry at the front of
// b into s but for its actions, which it leaves nil, reusing the storage
// of s.Match. It returns the entry's length and the IP protocol its match
// names, which the actions are read in.
func decodeFlowStatsEntry(b []byte, s *ofp.FlowStats) (n int, proto uint8, err error) {
	if len(b) < flowStatsFixedLen {
		return 0, 0, ofp.ErrShort
	}
	n = int(binary.BigEndian.Uint16(b))
	if n < flowStatsFixedLen || n > len(b) {
		return 0, 0, ofp.ErrBadLength
	}
	e := b[:n]
	match := parseMatch10(e[4:])
	f := e[4+matchLen:]
	*s = ofp.FlowStats{
		TableID:      e[2],
		DurationSec:  binary.BigEndian.Uint32(f),
		DurationNsec: binary.BigEndian.Uint32(f[4:]),
		Priority:     binary.BigEndian.Uint16(f[8:]),
		IdleTimeout:  binary.BigEndian.Uint16(f[10:]),
		HardTimeout:  binary.BigEndian.Uint16(f[12:]),
		Cookie:       binary.BigEndian.Uint64(f[20:]),
		PacketCount:  binary.BigEndian.Uint64(f[28:]),
		ByteCount:    binary.BigEndian.Uint64(f[36:]),
		Match:        ofp.Match{OXMs: match.oxms(s.Match.OXMs[:0])},
	}
	return n, match.proto(), nil
}

// portStatsLen is the 1.0 ofp_port_stats: a 16-bit port and the twelve
// counters, without 1.3's duration.
const portStatsLen = 104

func appendPortStats(b []byte, stats []ofp.PortStats) ([]byte, error) {
	for i := range stats {
		s := &stats[i]
		if s.DurationSec != 0 || s.DurationNsec != 0 {
			return b, unsupported("port stats duration")
		}
		p, err := portTo10(s.PortNo)
		if err != nil {
			return b, err
		}
		b = append(binary.BigEndian.AppendUint16(b, p), 0, 0, 0, 0, 0, 0)
		for _, v := range [...]uint64{s.RxPackets, s.TxPackets, s.RxBytes, s.TxBytes,
			s.RxDropped, s.TxDropped, s.RxErrors, s.TxErrors, s.RxFrameErr, s.RxOverErr,
			s.RxCRCErr, s.Collisions} {
			b = binary.BigEndian.AppendUint64(b, v)
		}
	}
	return b, nil
}

func decodePortStats(b []byte) ([]ofp.PortStats, error) {
	if len(b)%portStatsLen != 0 {
		return nil, ofp.ErrBadLength
	}
	var stats []ofp.PortStats
	for ; len(b) > 0; b = b[portStatsLen:] {
		var c [12]uint64
		for i := range c {
			c[i] = binary.BigEndian.Uint64(b[8+8*i:])
		}
		stats = append(stats, ofp.PortStats{
			PortNo:    portFrom10(binary.BigEndian.Uint16(b)),
			RxPackets: c[0], TxPackets: c[1], RxBytes: c[2], TxBytes: c[3],
			RxDropped: c[4], TxDropped: c[5], RxErrors: c[6], TxErrors: c[7],
			RxFrameErr: c[8], RxOverErr: c[9], RxCRCErr: c[10], Collisions: c[11],
		})
	}
	return stats, nil
}

func decodeStatsReply(body []byte) (ofp.Message, error) {
	t, flags, rest, err := decodeStatsHeader(body)
	if err != nil {
		return nil, err
	}
	if t == statsVendor {
		return decodeNXFlowStatsReply(flags, rest)
	}
	m := &ofp.MultipartReply{Flags: flags}
	switch t {
	case ofp.MultipartDesc:
		if len(rest) != descReplyLen {
			return nil, ofp.ErrBadLength
		}
		m.Body = ofp.DescReply{
			MfrDesc:   ofp.FixedString(rest[:256]),
			HWDesc:    ofp.FixedString(rest[256:512]),
			SWDesc:    ofp.FixedString(rest[512:768]),
			SerialNum: ofp.FixedString(rest[768:800]),
			DPDesc:    ofp.FixedString(rest[800:]),
		}
	case ofp.MultipartFlow:
		var r ofp.FlowStatsReply
		r.Stats, r.Unreadable, err = decodeFlowStats(rest)
		m.Body = r
	case ofp.MultipartAggregate:
		if len(rest) != 24 {
			return nil, ofp.ErrBadLength
		}
		m.Body = ofp.AggregateStatsReply{
			PacketCount: binary.BigEndian.Uint64(rest),
			ByteCount:   binary.BigEndian.Uint64(rest[8:]),
			FlowCount:   binary.BigEndian.Uint32(rest[16:]),
		}
	case ofp.MultipartPortStats:
		var stats []ofp.PortStats
		stats, err = decodePortStats(rest)
		m.Body = ofp.PortStatsReply{Stats: stats}
	default:
		return nil, unsupported("stats type %d", t)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}
