package ofp10

import (
	"encoding/binary"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// appendBody appends m's 1.0 body and returns the 1.0 type for the
// header. Messages are accepted as T or *T, as ofp.Append accepts them.
func appendBody(b []byte, m ofp.Message) (Type, []byte, error) {
	switch m := m.(type) {
	case ofp.Hello:
		return appendHello(b, &m)
	case *ofp.Hello:
		return appendHello(b, m)
	case ofp.ErrorMsg:
		return appendError(b, &m)
	case *ofp.ErrorMsg:
		return appendError(b, m)
	case ofp.EchoRequest:
		return TypeEchoRequest, append(b, m.Data...), nil
	case *ofp.EchoRequest:
		return TypeEchoRequest, append(b, m.Data...), nil
	case ofp.EchoReply:
		return TypeEchoReply, append(b, m.Data...), nil
	case *ofp.EchoReply:
		return TypeEchoReply, append(b, m.Data...), nil
	case ofp.FeaturesRequest, *ofp.FeaturesRequest:
		return TypeFeaturesRequest, b, nil
	case FeaturesReply:
		return appendFeaturesReply(b, &m)
	case *FeaturesReply:
		return appendFeaturesReply(b, m)
	case ofp.GetConfigRequest, *ofp.GetConfigRequest:
		return TypeGetConfigRequest, b, nil
	case ofp.GetConfigReply:
		return TypeGetConfigReply, appendConfig(b, m.Flags, m.MissSendLen), nil
	case *ofp.GetConfigReply:
		return TypeGetConfigReply, appendConfig(b, m.Flags, m.MissSendLen), nil
	case ofp.SetConfig:
		return TypeSetConfig, appendConfig(b, m.Flags, m.MissSendLen), nil
	case *ofp.SetConfig:
		return TypeSetConfig, appendConfig(b, m.Flags, m.MissSendLen), nil
	case ofp.PacketIn:
		return appendPacketIn(b, &m)
	case *ofp.PacketIn:
		return appendPacketIn(b, m)
	case ofp.PacketOut:
		return appendPacketOut(b, &m)
	case *ofp.PacketOut:
		return appendPacketOut(b, m)
	case ofp.FlowMod:
		return appendFlowMod(b, &m)
	case *ofp.FlowMod:
		return appendFlowMod(b, m)
	case ofp.FlowRemoved:
		return appendFlowRemoved(b, &m)
	case *ofp.FlowRemoved:
		return appendFlowRemoved(b, m)
	case ofp.PortStatus:
		return appendPortStatus(b, &m)
	case *ofp.PortStatus:
		return appendPortStatus(b, m)
	case ofp.MultipartRequest:
		return appendStatsRequest(b, &m)
	case *ofp.MultipartRequest:
		return appendStatsRequest(b, m)
	case ofp.MultipartReply:
		return appendStatsReply(b, &m)
	case *ofp.MultipartReply:
		return appendStatsReply(b, m)
	case ofp.BarrierRequest, *ofp.BarrierRequest:
		return TypeBarrierRequest, b, nil
	case ofp.BarrierReply, *ofp.BarrierReply:
		return TypeBarrierReply, b, nil
	}
	return 0, b, unsupported("message %s", m.Type())
}

// decodeBody decodes the body of a 1.0 message of type t (not HELLO,
// which Decode handles with its header version).
func decodeBody(t Type, body []byte) (ofp.Message, error) {
	switch t {
	case TypeError:
		return decodeError(body)
	case TypeEchoRequest:
		return &ofp.EchoRequest{Data: append([]byte(nil), body...)}, nil
	case TypeEchoReply:
		return &ofp.EchoReply{Data: append([]byte(nil), body...)}, nil
	case TypeFeaturesRequest:
		return &ofp.FeaturesRequest{}, expectEmpty(body)
	case TypeFeaturesReply:
		return decodeFeaturesReply(body)
	case TypeGetConfigRequest:
		return &ofp.GetConfigRequest{}, expectEmpty(body)
	case TypeGetConfigReply:
		var m ofp.GetConfigReply
		return &m, decodeConfig(body, &m.Flags, &m.MissSendLen)
	case TypeSetConfig:
		var m ofp.SetConfig
		return &m, decodeConfig(body, &m.Flags, &m.MissSendLen)
	case TypePacketIn:
		return decodePacketIn(body)
	case TypePacketOut:
		return decodePacketOut(body)
	case TypeFlowMod:
		return decodeFlowMod(body)
	case TypeFlowRemoved:
		return decodeFlowRemoved(body)
	case TypePortStatus:
		if len(body) != 8+phyPortLen {
			return nil, ofp.ErrBadLength
		}
		return &ofp.PortStatus{Reason: body[0], Desc: decodePhyPort(body[8:])}, nil
	case TypeStatsRequest:
		return decodeStatsRequest(body)
	case TypeStatsReply:
		return decodeStatsReply(body)
	case TypeVendor:
		return decodeVendor(body)
	case TypeBarrierRequest:
		return &ofp.BarrierRequest{}, expectEmpty(body)
	case TypeBarrierReply:
		return &ofp.BarrierReply{}, expectEmpty(body)
	}
	return nil, unsupported("message type %d", t)
}

func expectEmpty(body []byte) error {
	if len(body) != 0 {
		return ofp.ErrBadLength
	}
	return nil
}

// appendHello writes the bare 1.0 hello: 1.0 has no hello elements, the
// header version is the offer.
func appendHello(b []byte, m *ofp.Hello) (Type, []byte, error) {
	if len(m.Versions) > 0 && !m.Supports(Version) {
		return 0, b, unsupported("hello without version 1.0")
	}
	return TypeHello, b, nil
}

// errorTypes maps each 1.0 error type to its 1.3 type, and each 1.0 code
// (the index) to the 1.3 code. Only OFPET_FLOW_MOD_FAILED's codes were
// renumbered; OFPFMFC_UNSUPPORTED (an action list the switch cannot run
// in order) has no 1.3 code and reads as OFPFMFC_UNKNOWN.
var errorTypes = [...]struct {
	t13   ofp.ErrorType
	codes []uint16
}{
	{ofp.ErrTypeHelloFailed, []uint16{0, 1}},
	{ofp.ErrTypeBadRequest, []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8}},
	{ofp.ErrTypeBadAction, []uint16{0, 1, 2, 3, 4, 5, 6, 7, 8}},
	{ofp.ErrTypeFlowModFailed, []uint16{
		ofp.FlowModFailedTableFull, ofp.FlowModFailedOverlap, ofp.FlowModFailedEPerm,
		ofp.FlowModFailedBadTimeout, ofp.FlowModFailedBadCommand, ofp.FlowModFailedUnknown}},
	{ofp.ErrTypePortModFailed, []uint16{0, 1}},
	{ofp.ErrTypeQueueOpFailed, []uint16{0, 1, 2}},
}

func appendError(b []byte, m *ofp.ErrorMsg) (Type, []byte, error) {
	for t10, et := range errorTypes {
		if et.t13 != m.ErrType {
			continue
		}
		for c10, c13 := range et.codes {
			if c13 == m.Code {
				b = binary.BigEndian.AppendUint16(b, uint16(t10))
				b = binary.BigEndian.AppendUint16(b, uint16(c10))
				return TypeError, append(b, m.Data...), nil
			}
		}
	}
	return 0, b, unsupported("error %s code %d", m.ErrType, m.Code)
}

func decodeError(body []byte) (ofp.Message, error) {
	if len(body) < 4 {
		return nil, ofp.ErrShort
	}
	t10, c10 := binary.BigEndian.Uint16(body), binary.BigEndian.Uint16(body[2:])
	if int(t10) >= len(errorTypes) || int(c10) >= len(errorTypes[t10].codes) {
		return nil, unsupported("error type %d code %d", t10, c10)
	}
	et := errorTypes[t10]
	return &ofp.ErrorMsg{ErrType: et.t13, Code: et.codes[c10], Data: append([]byte(nil), body[4:]...)}, nil
}

// FeaturesReply is the 1.0 OFPT_FEATURES_REPLY: the 1.3 fields, plus what
// 1.3 moved elsewhere: the supported actions bitmap (1<<OFPAT_* of 1.0)
// and the switch's ports, which 1.3 lists in a port-desc reply. It is an
// ofp.Message through the embedded ofp.FeaturesReply; Decode returns a
// *FeaturesReply for every 1.0 features reply.
type FeaturesReply struct {
	ofp.FeaturesReply
	Actions uint32
	Ports   []ofp.Port
}

// featuresReplyLen is the 1.0 features reply body before the ports.
const featuresReplyLen = 24

// capabilities13 are the ofp_capabilities bits 1.0 and 1.3 share (flow,
// table, port and queue stats, IP reassembly). 1.0's OFPC_STP and
// OFPC_ARP_MATCH_IP have no 1.3 bit, and bit 3 is OFPC_STP in 1.0 but
// OFPC_GROUP_STATS in 1.3.
const capabilities13 = ofp.CapFlowStats | ofp.CapTableStats | ofp.CapPortStats | ofp.CapIPReasm | ofp.CapQueueStats

func appendFeaturesReply(b []byte, m *FeaturesReply) (Type, []byte, error) {
	if m.AuxiliaryID != 0 {
		return 0, b, unsupported("auxiliary connection id %d", m.AuxiliaryID)
	}
	b = binary.BigEndian.AppendUint64(b, m.DatapathID)
	b = binary.BigEndian.AppendUint32(b, m.NBuffers)
	b = append(b, m.NTables, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, m.Capabilities&capabilities13)
	b = binary.BigEndian.AppendUint32(b, m.Actions)
	var err error
	for i := range m.Ports {
		if b, err = appendPhyPort(b, &m.Ports[i]); err != nil {
			return 0, b, err
		}
	}
	return TypeFeaturesReply, b, nil
}

func decodeFeaturesReply(body []byte) (ofp.Message, error) {
	if len(body) < featuresReplyLen || (len(body)-featuresReplyLen)%phyPortLen != 0 {
		return nil, ofp.ErrBadLength
	}
	m := &FeaturesReply{
		FeaturesReply: ofp.FeaturesReply{
			DatapathID:   binary.BigEndian.Uint64(body),
			NBuffers:     binary.BigEndian.Uint32(body[8:]),
			NTables:      body[12],
			Capabilities: binary.BigEndian.Uint32(body[16:]) & capabilities13,
		},
		Actions: binary.BigEndian.Uint32(body[20:]),
	}
	for ports := body[featuresReplyLen:]; len(ports) > 0; ports = ports[phyPortLen:] {
		m.Ports = append(m.Ports, decodePhyPort(ports))
	}
	return m, nil
}

func appendConfig(b []byte, flags, missSendLen uint16) []byte {
	b = binary.BigEndian.AppendUint16(b, flags)
	return binary.BigEndian.AppendUint16(b, missSendLen)
}

func decodeConfig(body []byte, flags, missSendLen *uint16) error {
	if len(body) != 4 {
		return ofp.ErrBadLength
	}
	*flags = binary.BigEndian.Uint16(body)
	*missSendLen = binary.BigEndian.Uint16(body[2:])
	return nil
}

// appendPacketIn accepts the packet-in a 1.0 switch can send: from table
// 0, no cookie, a match of in_port alone.
func appendPacketIn(b []byte, m *ofp.PacketIn) (Type, []byte, error) {
	inPort, ok := m.Match.InPort()
	if !ok || len(m.Match.OXMs) != 1 || m.TableID != 0 || m.Cookie != 0 {
		return 0, b, unsupported("packet-in other than from table 0 with only in_port")
	}
	p, err := portTo10(inPort)
	if err != nil {
		return 0, b, err
	}
	b = binary.BigEndian.AppendUint32(b, m.BufferID)
	b = binary.BigEndian.AppendUint16(b, m.TotalLen)
	b = binary.BigEndian.AppendUint16(b, p)
	b = append(b, m.Reason, 0)
	return TypePacketIn, append(b, m.Data...), nil
}

const packetInFixedLen = 10

func decodePacketIn(body []byte) (ofp.Message, error) {
	m := new(ofp.PacketIn)
	return m, decodePacketInto(body, m)
}

// decodePacketInto decodes into m, reusing its slices.
func decodePacketInto(body []byte, m *ofp.PacketIn) error {
	if len(body) < packetInFixedLen {
		return ofp.ErrShort
	}
	m.BufferID = binary.BigEndian.Uint32(body)
	m.TotalLen = binary.BigEndian.Uint16(body[4:])
	m.Reason = body[8]
	m.TableID, m.Cookie = 0, 0
	m.Match.OXMs = append(m.Match.OXMs[:0], ofp.MatchInPort(portFrom10(binary.BigEndian.Uint16(body[6:]))))
	m.Data = append(m.Data[:0], body[packetInFixedLen:]...)
	return nil
}

func appendPacketOut(b []byte, m *ofp.PacketOut) (Type, []byte, error) {
	p, err := portTo10(m.InPort)
	if err != nil {
		return 0, b, err
	}
	b = binary.BigEndian.AppendUint32(b, m.BufferID)
	b = binary.BigEndian.AppendUint16(b, p)
	lenAt := len(b)
	b = append(b, 0, 0)
	if b, err = appendActions(b, m.Actions, frameProto(m.Data)); err != nil {
		return 0, b, err
	}
	binary.BigEndian.PutUint16(b[lenAt:], uint16(len(b)-lenAt-2))
	return TypePacketOut, append(b, m.Data...), nil
}

const packetOutFixedLen = 8

func decodePacketOut(body []byte) (ofp.Message, error) {
	if len(body) < packetOutFixedLen {
		return nil, ofp.ErrShort
	}
	n := int(binary.BigEndian.Uint16(body[6:]))
	rest := body[packetOutFixedLen:]
	if n > len(rest) {
		return nil, ofp.ErrBadLength
	}
	actions, err := decodeActions(rest[:n], nil, frameProto(rest[n:]))
	if err != nil {
		return nil, err
	}
	return &ofp.PacketOut{
		BufferID: binary.BigEndian.Uint32(body),
		InPort:   portFrom10(binary.BigEndian.Uint16(body[4:])),
		Actions:  actions,
		Data:     append([]byte(nil), rest[n:]...),
	}, nil
}

// flowModFlags10 are the ofp_flow_mod_flags 1.0 and 1.3 share; 1.0's
// third bit is OFPFF_EMERG, 1.3's OFPFF_RESET_COUNTS.
const flowModFlags10 = ofp.FlagSendFlowRem | ofp.FlagCheckOverlap

// appendFlowMod encodes m in 1.0's ofp_flow_mod. 1.0 has one flow table
// for flow mods and no cookie mask, so a flow mod for another table, or
// that selects flows by cookie, is refused: the caller deletes by match
// instead (a 1.0 delete ignores cookies).
func appendFlowMod(b []byte, m *ofp.FlowMod) (Type, []byte, error) {
	if m.CookieMask != 0 {
		return 0, b, unsupported("flow_mod cookie_mask %#x (1.0 flow mods cannot select flows by cookie)", m.CookieMask)
	}
	if err := checkFlowMod(m); err != nil {
		return 0, b, err
	}
	match, err := matchTo10(&m.Match)
	if err != nil {
		return 0, b, err
	}
	outPort, err := portTo10(m.OutPort)
	if err != nil {
		return 0, b, err
	}
	actions, err := applyActions(m.Instructions)
	if err != nil {
		return 0, b, err
	}
	b = match.appendTo(b)
	b = appendFlowModFields(b, m, m.Cookie, outPort)
	b, err = appendActions(b, actions, match.proto())
	return TypeFlowMod, b, err
}

// applyActions is the action list of instructions, which 1.0 can express
// only as nothing (drop) or one apply-actions.
func applyActions(instructions []ofp.Instruction) ([]ofp.Action, error) {
	if len(instructions) == 0 {
		return nil, nil
	}
	if len(instructions) == 1 {
		switch i := instructions[0].(type) {
		case ofp.InstructionApplyActions:
			return i.Actions, nil
		case *ofp.InstructionApplyActions:
			return i.Actions, nil
		}
	}
	for _, i := range instructions {
		if i.InstructionType() != ofp.InstructionTypeApplyActions {
			return nil, unsupported("instruction %s", ofp.FormatInstructions([]ofp.Instruction{i}))
		}
	}
	return nil, unsupported("more than one apply_actions instruction")
}

// instructions wraps a 1.0 action list as 1.3 instructions: none for an
// empty list (drop), else one apply-actions.
func instructions(actions []ofp.Action) []ofp.Instruction {
	if len(actions) == 0 {
		return nil
	}
	return []ofp.Instruction{ofp.InstructionApplyActions{Actions: actions}}
}

const flowModFixedLen = matchLen + 24

// appendFlowModFields appends what a 1.0 flow_mod and Nicira's share
// after their matches, from the cookie to the flags: decodeFlowModFields
// reads them back.
func appendFlowModFields(b []byte, m *ofp.FlowMod, cookie uint64, outPort uint16) []byte {
	b = binary.BigEndian.AppendUint64(b, cookie)
	b = binary.BigEndian.AppendUint16(b, uint16(m.Command))
	b = binary.BigEndian.AppendUint16(b, m.IdleTimeout)
	b = binary.BigEndian.AppendUint16(b, m.HardTimeout)
	b = binary.BigEndian.AppendUint16(b, m.Priority)
	b = binary.BigEndian.AppendUint32(b, m.BufferID)
	b = binary.BigEndian.AppendUint16(b, outPort)
	return binary.BigEndian.AppendUint16(b, uint16(m.Flags))
}

// decodeFlowModFields decodes what a 1.0 flow_mod and Nicira's share
// after their matches, from the cookie to the flags, at f.
func decodeFlowModFields(f []byte) (*ofp.FlowMod, error) {
	command := binary.BigEndian.Uint16(f[8:])
	flags := ofp.FlowModFlags(binary.BigEndian.Uint16(f[22:]))
	if command > uint16(ofp.FlowDeleteStrict) {
		return nil, unsupported("flow_mod command %d", command)
	}
	if flags&^flowModFlags10 != 0 {
		return nil, unsupported("flow_mod flags %#x", uint16(flags&^flowModFlags10))
	}
	return &ofp.FlowMod{
		Cookie:      binary.BigEndian.Uint64(f),
		Command:     ofp.FlowModCommand(command),
		IdleTimeout: binary.BigEndian.Uint16(f[10:]),
		HardTimeout: binary.BigEndian.Uint16(f[12:]),
		Priority:    binary.BigEndian.Uint16(f[14:]),
		BufferID:    binary.BigEndian.Uint32(f[16:]),
		OutPort:     portFrom10(binary.BigEndian.Uint16(f[20:])),
		OutGroup:    ofp.GroupAny,
		Flags:       flags,
	}, nil
}

func decodeFlowMod(body []byte) (ofp.Message, error) {
	if len(body) < flowModFixedLen {
		return nil, ofp.ErrShort
	}
	match10 := parseMatch10(body)
	m, err := decodeFlowModFields(body[matchLen:])
	if err != nil {
		return nil, err
	}
	m.Match = ofp.Match{OXMs: match10.oxms(nil)}
	actions, err := decodeActions(body[flowModFixedLen:], nil, match10.proto())
	if err != nil {
		return nil, err
	}
	m.Instructions = instructions(actions)
	return m, nil
}

// appendFlowRemoved accepts the flow-removed a 1.0 switch can send: table
// 0, and no hard_timeout, which 1.0 does not report.
func appendFlowRemoved(b []byte, m *ofp.FlowRemoved) (Type, []byte, error) {
	if m.TableID != 0 || m.HardTimeout != 0 {
		return 0, b, unsupported("flow_removed with table_id or hard_timeout")
	}
	match, err := matchTo10(&m.Match)
	if err != nil {
		return 0, b, err
	}
	b = match.appendTo(b)
	b = binary.BigEndian.AppendUint64(b, m.Cookie)
	b = binary.BigEndian.AppendUint16(b, m.Priority)
	b = append(b, m.Reason, 0)
	b = binary.BigEndian.AppendUint32(b, m.DurationSec)
	b = binary.BigEndian.AppendUint32(b, m.DurationNsec)
	b = binary.BigEndian.AppendUint16(b, m.IdleTimeout)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint64(b, m.PacketCount)
	return TypeFlowRemoved, binary.BigEndian.AppendUint64(b, m.ByteCount), nil
}

const flowRemovedLen = matchLen + 40

func decodeFlowRemoved(body []byte) (ofp.Message, error) {
	m := new(ofp.FlowRemoved)
	return m, decodeFlowRemovedInto(body, m)
}

// decodeFlowRemovedInto decodes into m, reusing its slices.
func decodeFlowRemovedInto(body []byte, m *ofp.FlowRemoved) error {
	if len(body) != flowRemovedLen {
		return ofp.ErrBadLength
	}
	match10 := parseMatch10(body)
	f := body[matchLen:]
	*m = ofp.FlowRemoved{
		Cookie:       binary.BigEndian.Uint64(f),
		Priority:     binary.BigEndian.Uint16(f[8:]),
		Reason:       f[10],
		DurationSec:  binary.BigEndian.Uint32(f[12:]),
		DurationNsec: binary.BigEndian.Uint32(f[16:]),
		IdleTimeout:  binary.BigEndian.Uint16(f[20:]),
		PacketCount:  binary.BigEndian.Uint64(f[24:]),
		ByteCount:    binary.BigEndian.Uint64(f[32:]),
		Match:        ofp.Match{OXMs: match10.oxms(m.Match.OXMs[:0])},
	}
	return nil
}

func appendPortStatus(b []byte, m *ofp.PortStatus) (Type, []byte, error) {
	b = append(b, m.Reason, 0, 0, 0, 0, 0, 0, 0)
	b, err := appendPhyPort(b, &m.Desc)
	return TypePortStatus, b, err
}
