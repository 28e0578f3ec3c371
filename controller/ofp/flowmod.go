package ofp

import "encoding/binary"

// FlowModCommand is ofp_flow_mod_command.
type FlowModCommand uint8

const (
	FlowAdd          FlowModCommand = 0 // OFPFC_ADD
	FlowModify       FlowModCommand = 1 // OFPFC_MODIFY
	FlowModifyStrict FlowModCommand = 2 // OFPFC_MODIFY_STRICT
	FlowDelete       FlowModCommand = 3 // OFPFC_DELETE
	FlowDeleteStrict FlowModCommand = 4 // OFPFC_DELETE_STRICT
)

// FlowModFlags is ofp_flow_mod_flags.
type FlowModFlags uint16

const (
	FlagSendFlowRem  FlowModFlags = 1 << 0 // OFPFF_SEND_FLOW_REM
	FlagCheckOverlap FlowModFlags = 1 << 1 // OFPFF_CHECK_OVERLAP
	FlagResetCounts  FlowModFlags = 1 << 2 // OFPFF_RESET_COUNTS
	FlagNoPktCounts  FlowModFlags = 1 << 3 // OFPFF_NO_PKT_COUNTS
	FlagNoBytCounts  FlowModFlags = 1 << 4 // OFPFF_NO_BYT_COUNTS
)

// TableAll is OFPTT_ALL, for deletes across every table.
const TableAll uint8 = 0xff

// FlowMod is OFPT_FLOW_MOD. For adds, set BufferID to NoBuffer and OutPort
// and OutGroup to PortAny and GroupAny unless they mean something: the
// switch checks them on deletes only, but zero is a real port.
type FlowMod struct {
	Cookie, CookieMask uint64
	TableID            uint8
	Command            FlowModCommand
	IdleTimeout        uint16
	HardTimeout        uint16
	Priority           uint16
	BufferID           uint32
	OutPort            uint32
	OutGroup           uint32
	Flags              FlowModFlags
	Match              Match
	Instructions       []Instruction
}

// flowModFixedLen is the body before the match.
const flowModFixedLen = 40

func (FlowMod) Type() Type { return TypeFlowMod }

func (m FlowMod) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, m.Cookie)
	b = binary.BigEndian.AppendUint64(b, m.CookieMask)
	b = append(b, m.TableID, uint8(m.Command))
	b = binary.BigEndian.AppendUint16(b, m.IdleTimeout)
	b = binary.BigEndian.AppendUint16(b, m.HardTimeout)
	b = binary.BigEndian.AppendUint16(b, m.Priority)
	b = binary.BigEndian.AppendUint32(b, m.BufferID)
	b = binary.BigEndian.AppendUint32(b, m.OutPort)
	b = binary.BigEndian.AppendUint32(b, m.OutGroup)
	b = binary.BigEndian.AppendUint16(b, uint16(m.Flags))
	b = append(b, 0, 0)
	b = m.Match.appendTo(b)
	return appendInstructions(b, m.Instructions)
}

func (m *FlowMod) decodeBody(body []byte) error {
	if len(body) < flowModFixedLen {
		return ErrShort
	}
	m.Cookie = binary.BigEndian.Uint64(body)
	m.CookieMask = binary.BigEndian.Uint64(body[8:])
	m.TableID = body[16]
	m.Command = FlowModCommand(body[17])
	m.IdleTimeout = binary.BigEndian.Uint16(body[18:])
	m.HardTimeout = binary.BigEndian.Uint16(body[20:])
	m.Priority = binary.BigEndian.Uint16(body[22:])
	m.BufferID = binary.BigEndian.Uint32(body[24:])
	m.OutPort = binary.BigEndian.Uint32(body[28:])
	m.OutGroup = binary.BigEndian.Uint32(body[32:])
	m.Flags = FlowModFlags(binary.BigEndian.Uint16(body[36:]))
	used, err := m.Match.decode(body[flowModFixedLen:])
	if err != nil {
		return err
	}
	m.Instructions, err = decodeInstructions(body[flowModFixedLen+used:], m.Instructions[:0])
	return err
}

// Flow-removed reasons (ofp_flow_removed_reason).
const (
	RemovedIdleTimeout uint8 = 0 // OFPRR_IDLE_TIMEOUT
	RemovedHardTimeout uint8 = 1 // OFPRR_HARD_TIMEOUT
	RemovedDelete      uint8 = 2 // OFPRR_DELETE
	RemovedGroupDelete uint8 = 3 // OFPRR_GROUP_DELETE
	RemovedMeterDelete uint8 = 4 // OFPRR_METER_DELETE
)

// FlowRemoved is OFPT_FLOW_REMOVED, sent for flows added with
// FlagSendFlowRem.
type FlowRemoved struct {
	Cookie       uint64
	Priority     uint16
	Reason       uint8
	TableID      uint8
	DurationSec  uint32
	DurationNsec uint32
	IdleTimeout  uint16
	HardTimeout  uint16
	PacketCount  uint64
	ByteCount    uint64
	Match        Match
}

const flowRemovedFixedLen = 40

func (FlowRemoved) Type() Type { return TypeFlowRemoved }

func (m FlowRemoved) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, m.Cookie)
	b = binary.BigEndian.AppendUint16(b, m.Priority)
	b = append(b, m.Reason, m.TableID)
	b = binary.BigEndian.AppendUint32(b, m.DurationSec)
	b = binary.BigEndian.AppendUint32(b, m.DurationNsec)
	b = binary.BigEndian.AppendUint16(b, m.IdleTimeout)
	b = binary.BigEndian.AppendUint16(b, m.HardTimeout)
	b = binary.BigEndian.AppendUint64(b, m.PacketCount)
	b = binary.BigEndian.AppendUint64(b, m.ByteCount)
	return m.Match.appendTo(b)
}

func (m *FlowRemoved) decodeBody(body []byte) error {
	if len(body) < flowRemovedFixedLen {
		return ErrShort
	}
	m.Cookie = binary.BigEndian.Uint64(body)
	m.Priority = binary.BigEndian.Uint16(body[8:])
	m.Reason = body[10]
	m.TableID = body[11]
	m.DurationSec = binary.BigEndian.Uint32(body[12:])
	m.DurationNsec = binary.BigEndian.Uint32(body[16:])
	m.IdleTimeout = binary.BigEndian.Uint16(body[20:])
	m.HardTimeout = binary.BigEndian.Uint16(body[22:])
	m.PacketCount = binary.BigEndian.Uint64(body[24:])
	m.ByteCount = binary.BigEndian.Uint64(body[32:])
	used, err := m.Match.decode(body[flowRemovedFixedLen:])
	if err != nil {
		return err
	}
	if flowRemovedFixedLen+used != len(body) {
		return ErrBadLength
	}
	return nil
}
