package ofp

import (
	"encoding/binary"
	"io"
	"strconv"
)

// Version is the only OpenFlow version this codec speaks (1.3).
const Version = 0x04

// HeaderLen is the size of ofp_header.
const HeaderLen = 8

// MaxMessageLen bounds every message: the header length field is 16 bits.
const MaxMessageLen = 65535

// Type is the ofp_header type field.
type Type uint8

const (
	TypeHello                 Type = 0  // OFPT_HELLO
	TypeError                 Type = 1  // OFPT_ERROR
	TypeEchoRequest           Type = 2  // OFPT_ECHO_REQUEST
	TypeEchoReply             Type = 3  // OFPT_ECHO_REPLY
	TypeExperimenter          Type = 4  // OFPT_EXPERIMENTER
	TypeFeaturesRequest       Type = 5  // OFPT_FEATURES_REQUEST
	TypeFeaturesReply         Type = 6  // OFPT_FEATURES_REPLY
	TypeGetConfigRequest      Type = 7  // OFPT_GET_CONFIG_REQUEST
	TypeGetConfigReply        Type = 8  // OFPT_GET_CONFIG_REPLY
	TypeSetConfig             Type = 9  // OFPT_SET_CONFIG
	TypePacketIn              Type = 10 // OFPT_PACKET_IN
	TypeFlowRemoved           Type = 11 // OFPT_FLOW_REMOVED
	TypePortStatus            Type = 12 // OFPT_PORT_STATUS
	TypePacketOut             Type = 13 // OFPT_PACKET_OUT
	TypeFlowMod               Type = 14 // OFPT_FLOW_MOD
	TypeGroupMod              Type = 15 // OFPT_GROUP_MOD
	TypePortMod               Type = 16 // OFPT_PORT_MOD
	TypeTableMod              Type = 17 // OFPT_TABLE_MOD
	TypeMultipartRequest      Type = 18 // OFPT_MULTIPART_REQUEST
	TypeMultipartReply        Type = 19 // OFPT_MULTIPART_REPLY
	TypeBarrierRequest        Type = 20 // OFPT_BARRIER_REQUEST
	TypeBarrierReply          Type = 21 // OFPT_BARRIER_REPLY
	TypeQueueGetConfigRequest Type = 22 // OFPT_QUEUE_GET_CONFIG_REQUEST
	TypeQueueGetConfigReply   Type = 23 // OFPT_QUEUE_GET_CONFIG_REPLY
	TypeRoleRequest           Type = 24 // OFPT_ROLE_REQUEST
	TypeRoleReply             Type = 25 // OFPT_ROLE_REPLY
	TypeGetAsyncRequest       Type = 26 // OFPT_GET_ASYNC_REQUEST
	TypeGetAsyncReply         Type = 27 // OFPT_GET_ASYNC_REPLY
	TypeSetAsync              Type = 28 // OFPT_SET_ASYNC
	TypeMeterMod              Type = 29 // OFPT_METER_MOD
)

var typeNames = [...]string{
	"HELLO", "ERROR", "ECHO_REQUEST", "ECHO_REPLY", "EXPERIMENTER",
	"FEATURES_REQUEST", "FEATURES_REPLY", "GET_CONFIG_REQUEST", "GET_CONFIG_REPLY",
	"SET_CONFIG", "PACKET_IN", "FLOW_REMOVED", "PORT_STATUS", "PACKET_OUT",
	"FLOW_MOD", "GROUP_MOD", "PORT_MOD", "TABLE_MOD", "MULTIPART_REQUEST",
	"MULTIPART_REPLY", "BARRIER_REQUEST", "BARRIER_REPLY",
	"QUEUE_GET_CONFIG_REQUEST", "QUEUE_GET_CONFIG_REPLY", "ROLE_REQUEST",
	"ROLE_REPLY", "GET_ASYNC_REQUEST", "GET_ASYNC_REPLY", "SET_ASYNC", "METER_MOD",
}

// String returns the spec name without the OFPT_ prefix, e.g. "PACKET_IN".
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "TYPE_" + strconv.Itoa(int(t))
}

// Header is ofp_header.
type Header struct {
	Version uint8
	Type    Type
	Length  uint16
	XID     uint32
}

// ParseHeader reads the header at the start of b. It checks only that 8
// bytes are present; Decode validates the rest.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, ErrShort
	}
	return Header{
		Version: b[0],
		Type:    Type(b[1]),
		Length:  binary.BigEndian.Uint16(b[2:]),
		XID:     binary.BigEndian.Uint32(b[4:]),
	}, nil
}

// Message is the body of one OpenFlow message. Every message type in this
// package implements it with value receivers, so both T and *T work with
// Append; pass pointers to large messages (FlowMod, PacketOut) to avoid
// the copy into an interface. Decode returns pointers.
type Message interface {
	Type() Type
	appendBody(b []byte) []byte
}

// Append appends the complete wire encoding of m (header with xid and the
// correct length). A message that would exceed MaxMessageLen cannot be
// framed; Append then returns b unchanged. Use AppendChecked to detect it.
func Append(b []byte, xid uint32, m Message) []byte {
	b, _ = AppendChecked(b, xid, m)
	return b
}

// AppendChecked is Append that reports ErrTooLong instead of silently
// returning b unchanged.
func AppendChecked(b []byte, xid uint32, m Message) ([]byte, error) {
	start := len(b)
	b = append(b, Version, byte(m.Type()), 0, 0)
	b = binary.BigEndian.AppendUint32(b, xid)
	b = m.appendBody(b)
	n := len(b) - start
	if n > MaxMessageLen {
		return b[:start], ErrTooLong
	}
	binary.BigEndian.PutUint16(b[start+2:], uint16(n))
	return b, nil
}

// BodyDecoder is a message that can be decoded in place, reusing its
// slices. Only pointers to this package's message types implement it.
type BodyDecoder interface {
	Message
	decodeBody(body []byte) error
}

// DecodeInto decodes b (header+body, len(b)==Header.Length) into m, reusing
// m's slices (resliced to [:0]) so a caller that keeps one struct per type
// decodes without allocating. The header type must match m's type.
func DecodeInto(b []byte, m BodyDecoder) (Header, error) {
	h, err := checkHeader(b)
	if err != nil {
		return h, err
	}
	if h.Type != m.Type() {
		return h, ErrUnsupported
	}
	return h, decodeBody(h, b[HeaderLen:], m)
}

// decodeBody passes HELLO its header version: a bare hello means "I speak
// the version in my header".
func decodeBody(h Header, body []byte, m BodyDecoder) error {
	if hello, ok := m.(*Hello); ok {
		return hello.decode(h.Version, body)
	}
	return m.decodeBody(body)
}

// Decode decodes exactly one complete message: b holds header and body and
// len(b) must equal Header.Length. The returned message is a pointer
// (*PacketIn, *FlowMod, ...) and never aliases b.
//
// A version other than 1.3 yields ErrBadVersion with the header filled in,
// except for HELLO, which is decoded whatever its version so the caller can
// negotiate. Unknown message types yield ErrUnsupported with the header.
func Decode(b []byte) (Header, Message, error) {
	h, err := checkHeader(b)
	if err != nil {
		return h, nil, err
	}
	m := newMessage(h.Type)
	if m == nil {
		return h, nil, errUnknownType
	}
	if err := decodeBody(h, b[HeaderLen:], m); err != nil {
		return h, nil, err
	}
	return h, m, nil
}

func checkHeader(b []byte) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if int(h.Length) != len(b) || h.Length < HeaderLen {
		return h, ErrBadLength
	}
	if h.Version != Version && h.Type != TypeHello {
		return h, ErrBadVersion
	}
	return h, nil
}

func newMessage(t Type) BodyDecoder {
	switch t {
	case TypeHello:
		return new(Hello)
	case TypeError:
		return new(ErrorMsg)
	case TypeEchoRequest:
		return new(EchoRequest)
	case TypeEchoReply:
		return new(EchoReply)
	case TypeExperimenter:
		return new(Experimenter)
	case TypeFeaturesRequest:
		return new(FeaturesRequest)
	case TypeFeaturesReply:
		return new(FeaturesReply)
	case TypeGetConfigRequest:
		return new(GetConfigRequest)
	case TypeGetConfigReply:
		return new(GetConfigReply)
	case TypeSetConfig:
		return new(SetConfig)
	case TypePacketIn:
		return new(PacketIn)
	case TypeFlowRemoved:
		return new(FlowRemoved)
	case TypePortStatus:
		return new(PortStatus)
	case TypePacketOut:
		return new(PacketOut)
	case TypeFlowMod:
		return new(FlowMod)
	case TypeGroupMod:
		return new(GroupMod)
	case TypeMultipartRequest:
		return new(MultipartRequest)
	case TypeMultipartReply:
		return new(MultipartReply)
	case TypeBarrierRequest:
		return new(BarrierRequest)
	case TypeBarrierReply:
		return new(BarrierReply)
	case TypeRoleRequest:
		return new(RoleRequest)
	case TypeRoleReply:
		return new(RoleReply)
	}
	return nil
}

// ReadMessage reads one framed message from r into buf, growing it if
// needed (never beyond MaxMessageLen), and returns buf[:Length]. A header
// length below 8 yields ErrBadLength. The version is not checked here.
func ReadMessage(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) < HeaderLen {
		buf = make([]byte, 0, 512)
	}
	buf = buf[:HeaderLen]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint16(buf[2:]))
	if n < HeaderLen {
		return nil, ErrBadLength
	}
	if cap(buf) < n {
		grown := make([]byte, n)
		copy(grown, buf)
		buf = grown
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf[HeaderLen:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}
