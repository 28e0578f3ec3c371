package ofp

import "encoding/binary"

// EchoRequest is OFPT_ECHO_REQUEST; answer it with an EchoReply carrying
// the same Data and xid.
type EchoRequest struct{ Data []byte }

// EchoReply is OFPT_ECHO_REPLY.
type EchoReply struct{ Data []byte }

func (EchoRequest) Type() Type { return TypeEchoRequest }
func (EchoReply) Type() Type   { return TypeEchoReply }

func (m EchoRequest) appendBody(b []byte) []byte { return append(b, m.Data...) }
func (m EchoReply) appendBody(b []byte) []byte   { return append(b, m.Data...) }

func (m *EchoRequest) decodeBody(body []byte) error {
	m.Data = append(m.Data[:0], body...)
	return nil
}

func (m *EchoReply) decodeBody(body []byte) error {
	m.Data = append(m.Data[:0], body...)
	return nil
}

// BarrierRequest is OFPT_BARRIER_REQUEST.
type BarrierRequest struct{}

// BarrierReply is OFPT_BARRIER_REPLY.
type BarrierReply struct{}

func (BarrierRequest) Type() Type { return TypeBarrierRequest }
func (BarrierReply) Type() Type   { return TypeBarrierReply }

func (BarrierRequest) appendBody(b []byte) []byte { return b }
func (BarrierReply) appendBody(b []byte) []byte   { return b }

func (*BarrierRequest) decodeBody(body []byte) error { return expectEmpty(body) }
func (*BarrierReply) decodeBody(body []byte) error   { return expectEmpty(body) }

func expectEmpty(body []byte) error {
	if len(body) != 0 {
		return ErrBadLength
	}
	return nil
}

// Experimenter is OFPT_EXPERIMENTER (for OVS, Nicira extensions).
type Experimenter struct {
	Experimenter uint32
	ExpType      uint32
	Data         []byte
}

func (Experimenter) Type() Type { return TypeExperimenter }

func (m Experimenter) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.Experimenter)
	b = binary.BigEndian.AppendUint32(b, m.ExpType)
	return append(b, m.Data...)
}

func (m *Experimenter) decodeBody(body []byte) error {
	if len(body) < 8 {
		return ErrShort
	}
	m.Experimenter = binary.BigEndian.Uint32(body)
	m.ExpType = binary.BigEndian.Uint32(body[4:])
	m.Data = append(m.Data[:0], body[8:]...)
	return nil
}
