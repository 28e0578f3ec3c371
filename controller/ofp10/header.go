package ofp10

import (
	"encoding/binary"
	"fmt"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Version is OpenFlow 1.0's header version.
const Version = 0x01

// Type is the OpenFlow 1.0 ofp_header type field. Its numbering differs
// from 1.3's from OFPT_PORT_MOD on (STATS_REQUEST is 16, not 18).
type Type uint8

const (
	TypeHello                 Type = 0  // OFPT_HELLO
	TypeError                 Type = 1  // OFPT_ERROR
	TypeEchoRequest           Type = 2  // OFPT_ECHO_REQUEST
	TypeEchoReply             Type = 3  // OFPT_ECHO_REPLY
	TypeVendor                Type = 4  // OFPT_VENDOR
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
	TypePortMod               Type = 15 // OFPT_PORT_MOD
	TypeStatsRequest          Type = 16 // OFPT_STATS_REQUEST
	TypeStatsReply            Type = 17 // OFPT_STATS_REPLY
	TypeBarrierRequest        Type = 18 // OFPT_BARRIER_REQUEST
	TypeBarrierReply          Type = 19 // OFPT_BARRIER_REPLY
	TypeQueueGetConfigRequest Type = 20 // OFPT_QUEUE_GET_CONFIG_REQUEST
	TypeQueueGetConfigReply   Type = 21 // OFPT_QUEUE_GET_CONFIG_REPLY
)

// Header is the OpenFlow 1.0 ofp_header. Type is the 1.0 wire type; the
// decoded message's Type() is its 1.3 equivalent.
type Header struct {
	Version uint8
	Type    Type
	Length  uint16
	XID     uint32
}

// unsupported wraps ofp.ErrUnsupported with what 1.0 cannot express.
func unsupported(format string, args ...any) error {
	return fmt.Errorf("%w in OpenFlow 1.0: %s", ofp.ErrUnsupported, fmt.Sprintf(format, args...))
}

// Append appends m encoded as OpenFlow 1.0 (header with xid and length).
// A message 1.0 cannot express yields an error wrapping
// ofp.ErrUnsupported that names the part, and b unchanged.
func Append(b []byte, xid uint32, m ofp.Message) ([]byte, error) {
	start := len(b)
	b = append(b, Version, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, xid)
	t, b, err := appendBody(b, m)
	if err != nil {
		return b[:start], err
	}
	n := len(b) - start
	if n > ofp.MaxMessageLen {
		return b[:start], ofp.ErrTooLong
	}
	b[start+1] = byte(t)
	binary.BigEndian.PutUint16(b[start+2:], uint16(n))
	return b, nil
}

// parseHeader reads the header of the complete message b.
func parseHeader(b []byte) (Header, error) {
	if len(b) < ofp.HeaderLen {
		return Header{}, ofp.ErrShort
	}
	h := Header{
		Version: b[0],
		Type:    Type(b[1]),
		Length:  binary.BigEndian.Uint16(b[2:]),
		XID:     binary.BigEndian.Uint32(b[4:]),
	}
	if int(h.Length) != len(b) {
		return h, ofp.ErrBadLength
	}
	return h, nil
}

// Decode decodes exactly one complete OpenFlow 1.0 message (len(b) must
// equal the header length) into the ofp package's 1.3 model. The message
// is a pointer, as ofp.Decode returns, except that a features reply is a
// *FeaturesReply, which carries the port list 1.0 puts there.
//
// A version other than 1.0 yields ofp.ErrBadVersion with the header,
// except for HELLO. Types without a 1.3 model (VENDOR, but Nicira's
// NXT_FLOW_MOD; PORT_MOD, queue config) yield ofp.ErrUnsupported.
func Decode(b []byte) (Header, ofp.Message, error) {
	h, err := parseHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Version != Version && h.Type != TypeHello {
		return h, nil, ofp.ErrBadVersion
	}
	// A hello says "I speak the version in my header"; 1.0 has no
	// elements, and any a newer peer sent are not this codec's to read.
	if h.Type == TypeHello {
		return h, &ofp.Hello{Versions: []uint8{h.Version}}, nil
	}
	m, err := decodeBody(h.Type, b[ofp.HeaderLen:])
	if err != nil {
		return h, nil, err
	}
	return h, m, nil
}

// DecodeInto decodes a packet-in or a flow-removed, the messages a busy
// switch sends most, into m (an *ofp.PacketIn or *ofp.FlowRemoved), or a
// part of a flow stats reply into an *ofp.FlowStatsPart, reusing m's
// slices, so that a caller keeping one struct per type decodes them
// without allocating. Other messages yield ofp.ErrUnsupported; a header
// type that is not m's, too.
func DecodeInto(b []byte, m ofp.Message) (Header, error) {
	h, err := parseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Version != Version {
		return h, ofp.ErrBadVersion
	}
	switch m := m.(type) {
	case *ofp.PacketIn:
		if h.Type == TypePacketIn {
			return h, decodePacketInto(b[ofp.HeaderLen:], m)
		}
	case *ofp.FlowRemoved:
		if h.Type == TypeFlowRemoved {
			return h, decodeFlowRemovedInto(b[ofp.HeaderLen:], m)
		}
	case *ofp.FlowStatsPart:
		if h.Type == TypeStatsReply {
			return h, decodeFlowStatsPart(b[ofp.HeaderLen:], m)
		}
	}
	return h, ofp.ErrUnsupported
}

// Model is t in the ofp package's 1.3 numbering: the Type() of the
// message Decode returns for it (VENDOR is EXPERIMENTER).
func (t Type) Model() ofp.Type {
	switch {
	case t <= TypeFlowMod:
		return ofp.Type(t)
	case t == TypePortMod:
		return ofp.TypePortMod
	}
	return ofp.Type(t) + (ofp.TypeMultipartRequest - ofp.Type(TypeStatsRequest)) // 1.3 added two before them
}

// FlowKey is how a 1.0 switch tells its flows apart: the priority and the
// ofp_match, as encoded. Flow-mods with equal keys address the same flow.
type FlowKey [2 + matchLen]byte

// Offsets in an encoded FLOW_MOD.
const (
	flowModMatchAt    = ofp.HeaderLen
	flowModPriorityAt = ofp.HeaderLen + matchLen + 14 // after cookie, command, idle and hard timeouts
)

// KeyOf returns the key of msg, an encoded FLOW_MOD (Append's output), and
// false for any other message, an NXT_FLOW_MOD included: a caller that
// selects flows by cookie on a Nicira switch lets the switch do it.
func KeyOf(msg []byte) (FlowKey, bool) {
	var k FlowKey
	if len(msg) < ofp.HeaderLen+flowModFixedLen || msg[0] != Version || Type(msg[1]) != TypeFlowMod {
		return k, false
	}
	copy(k[:2], msg[flowModPriorityAt:])
	copy(k[2:], msg[flowModMatchAt:flowModMatchAt+matchLen])
	return k, true
}
