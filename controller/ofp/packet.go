package ofp

import "encoding/binary"

// NoBuffer is OFP_NO_BUFFER: the packet is carried in full, not buffered.
const NoBuffer uint32 = 0xffffffff

// ControllerMaxLenNoBuffer is OFPCML_NO_BUFFER: as ActionOutput.MaxLen
// toward PortController or SetConfig.MissSendLen, send the whole packet.
const ControllerMaxLenNoBuffer uint16 = 0xffff

// Packet-in reasons (ofp_packet_in_reason).
const (
	ReasonNoMatch    uint8 = 0 // OFPR_NO_MATCH
	ReasonAction     uint8 = 1 // OFPR_ACTION
	ReasonInvalidTTL uint8 = 2 // OFPR_INVALID_TTL
)

// PacketIn is OFPT_PACKET_IN. Decode and DecodeInto copy Data (into the
// reused slice for DecodeInto), so it never aliases the read buffer and
// may be handed to another goroutine.
type PacketIn struct {
	BufferID uint32
	TotalLen uint16
	Reason   uint8
	TableID  uint8
	Cookie   uint64
	Match    Match
	Data     []byte
}

const packetInFixedLen = 16

func (PacketIn) Type() Type { return TypePacketIn }

func (m PacketIn) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.BufferID)
	b = binary.BigEndian.AppendUint16(b, m.TotalLen)
	b = append(b, m.Reason, m.TableID)
	b = binary.BigEndian.AppendUint64(b, m.Cookie)
	b = m.Match.appendTo(b)
	b = append(b, 0, 0)
	return append(b, m.Data...)
}

func (m *PacketIn) decodeBody(body []byte) error {
	if len(body) < packetInFixedLen {
		return ErrShort
	}
	m.BufferID = binary.BigEndian.Uint32(body)
	m.TotalLen = binary.BigEndian.Uint16(body[4:])
	m.Reason = body[6]
	m.TableID = body[7]
	m.Cookie = binary.BigEndian.Uint64(body[8:])
	used, err := m.Match.decode(body[packetInFixedLen:])
	if err != nil {
		return err
	}
	rest := body[packetInFixedLen+used:]
	if len(rest) < 2 {
		return ErrShort
	}
	m.Data = append(m.Data[:0], rest[2:]...)
	return nil
}

// PacketOut is OFPT_PACKET_OUT. With BufferID NoBuffer, Data is the frame
// to send; InPort is the port the packet came in on (PortController if
// none), which matters for PortInPort and for flood.
type PacketOut struct {
	BufferID uint32
	InPort   uint32
	Actions  []Action
	Data     []byte
}

const packetOutFixedLen = 16

func (PacketOut) Type() Type { return TypePacketOut }

func (m PacketOut) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.BufferID)
	b = binary.BigEndian.AppendUint32(b, m.InPort)
	lenAt := len(b)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // actions_len, pad[6]
	start := len(b)
	b = appendActions(b, m.Actions)
	binary.BigEndian.PutUint16(b[lenAt:], uint16(len(b)-start))
	return append(b, m.Data...)
}

func (m *PacketOut) decodeBody(body []byte) error {
	if len(body) < packetOutFixedLen {
		return ErrShort
	}
	m.BufferID = binary.BigEndian.Uint32(body)
	m.InPort = binary.BigEndian.Uint32(body[4:])
	n := int(binary.BigEndian.Uint16(body[8:]))
	rest := body[packetOutFixedLen:]
	if n > len(rest) {
		return ErrBadLength
	}
	var err error
	m.Actions, err = decodeActions(rest[:n], m.Actions[:0])
	if err != nil {
		return err
	}
	m.Data = append(m.Data[:0], rest[n:]...)
	return nil
}
