package ofp

import "encoding/binary"

// ActionType is ofp_action_type.
type ActionType uint16

const (
	ActionTypeOutput       ActionType = 0      // OFPAT_OUTPUT
	ActionTypeCopyTTLOut   ActionType = 11     // OFPAT_COPY_TTL_OUT
	ActionTypeCopyTTLIn    ActionType = 12     // OFPAT_COPY_TTL_IN
	ActionTypeSetMPLSTTL   ActionType = 15     // OFPAT_SET_MPLS_TTL
	ActionTypeDecMPLSTTL   ActionType = 16     // OFPAT_DEC_MPLS_TTL
	ActionTypePushVLAN     ActionType = 17     // OFPAT_PUSH_VLAN
	ActionTypePopVLAN      ActionType = 18     // OFPAT_POP_VLAN
	ActionTypePushMPLS     ActionType = 19     // OFPAT_PUSH_MPLS
	ActionTypePopMPLS      ActionType = 20     // OFPAT_POP_MPLS
	ActionTypeSetQueue     ActionType = 21     // OFPAT_SET_QUEUE
	ActionTypeGroup        ActionType = 22     // OFPAT_GROUP
	ActionTypeSetNwTTL     ActionType = 23     // OFPAT_SET_NW_TTL
	ActionTypeDecNwTTL     ActionType = 24     // OFPAT_DEC_NW_TTL
	ActionTypeSetField     ActionType = 25     // OFPAT_SET_FIELD
	ActionTypePushPBB      ActionType = 26     // OFPAT_PUSH_PBB
	ActionTypePopPBB       ActionType = 27     // OFPAT_POP_PBB
	ActionTypeExperimenter ActionType = 0xffff // OFPAT_EXPERIMENTER
)

// Action is one ofp_action. The concrete types use value receivers, so a
// caller on a hot path can store pointers to reused structs in []Action
// instead of boxing fresh values.
type Action interface {
	ActionType() ActionType
	appendAction(b []byte) []byte
}

// ActionOutput is OFPAT_OUTPUT. MaxLen matters only for PortController:
// use ControllerMaxLenNoBuffer to get the whole packet.
type ActionOutput struct {
	Port   uint32
	MaxLen uint16
}

// ActionSetField is OFPAT_SET_FIELD; build Field with the Match*
// constructors (for example MatchIPv4Dst).
type ActionSetField struct{ Field OXM }

// ActionPushVLAN is OFPAT_PUSH_VLAN (EtherType 0x8100 or 0x88a8).
type ActionPushVLAN struct{ EtherType uint16 }

// ActionPopVLAN is OFPAT_POP_VLAN.
type ActionPopVLAN struct{}

// ActionDecNwTTL is OFPAT_DEC_NW_TTL.
type ActionDecNwTTL struct{}

// ActionGroup is OFPAT_GROUP.
type ActionGroup struct{ GroupID uint32 }

// ActionSetQueue is OFPAT_SET_QUEUE.
type ActionSetQueue struct{ QueueID uint32 }

// ActionRaw keeps any other action (MPLS, PBB, experimenter actions other
// than the Nicira ones in nx_action.go, ...) as its type and the bytes
// after the 4-byte type/length header (for an experimenter action, the
// experimenter ID first), so decoding a switch's flow table never fails on
// actions this codec does not model, and re-encodes them byte for byte.
// Append pads Data so the action stays a multiple of 8 bytes.
type ActionRaw struct {
	Type ActionType
	Data []byte
}

func (ActionOutput) ActionType() ActionType   { return ActionTypeOutput }
func (ActionSetField) ActionType() ActionType { return ActionTypeSetField }
func (ActionPushVLAN) ActionType() ActionType { return ActionTypePushVLAN }
func (ActionPopVLAN) ActionType() ActionType  { return ActionTypePopVLAN }
func (ActionDecNwTTL) ActionType() ActionType { return ActionTypeDecNwTTL }
func (ActionGroup) ActionType() ActionType    { return ActionTypeGroup }
func (ActionSetQueue) ActionType() ActionType { return ActionTypeSetQueue }
func (a ActionRaw) ActionType() ActionType    { return a.Type }

func appendActionHeader(b []byte, t ActionType, n int) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(t))
	return binary.BigEndian.AppendUint16(b, uint16(n))
}

func (a ActionOutput) appendAction(b []byte) []byte {
	b = appendActionHeader(b, ActionTypeOutput, 16)
	b = binary.BigEndian.AppendUint32(b, a.Port)
	b = binary.BigEndian.AppendUint16(b, a.MaxLen)
	return append(b, 0, 0, 0, 0, 0, 0)
}

func (a ActionSetField) appendAction(b []byte) []byte {
	n := 4 + a.Field.wireLen()
	b = appendActionHeader(b, ActionTypeSetField, pad8(n))
	b = a.Field.appendTo(b)
	return appendPad8(b, n)
}

func (a ActionPushVLAN) appendAction(b []byte) []byte {
	b = appendActionHeader(b, ActionTypePushVLAN, 8)
	b = binary.BigEndian.AppendUint16(b, a.EtherType)
	return append(b, 0, 0)
}

func (ActionPopVLAN) appendAction(b []byte) []byte {
	return append(appendActionHeader(b, ActionTypePopVLAN, 8), 0, 0, 0, 0)
}

func (ActionDecNwTTL) appendAction(b []byte) []byte {
	return append(appendActionHeader(b, ActionTypeDecNwTTL, 8), 0, 0, 0, 0)
}

func (a ActionGroup) appendAction(b []byte) []byte {
	return binary.BigEndian.AppendUint32(appendActionHeader(b, ActionTypeGroup, 8), a.GroupID)
}

func (a ActionSetQueue) appendAction(b []byte) []byte {
	return binary.BigEndian.AppendUint32(appendActionHeader(b, ActionTypeSetQueue, 8), a.QueueID)
}

func (a ActionRaw) appendAction(b []byte) []byte {
	n := 4 + len(a.Data)
	b = appendActionHeader(b, a.Type, pad8(n))
	b = append(b, a.Data...)
	return appendPad8(b, n)
}

func appendActions(b []byte, actions []Action) []byte {
	for _, a := range actions {
		b = a.appendAction(b)
	}
	return b
}

// decodeActions decodes a whole action list, appending to dst.
func decodeActions(b []byte, dst []Action) ([]Action, error) {
	return decodeActionList(b, dst, false)
}

// decodeActionList is decodeActions; inCT says the list is nested in an
// ActionCT, which may not nest another.
func decodeActionList(b []byte, dst []Action, inCT bool) ([]Action, error) {
	for len(b) > 0 {
		if len(b) < 8 {
			return dst, ErrShort
		}
		t := ActionType(binary.BigEndian.Uint16(b))
		n := int(binary.BigEndian.Uint16(b[2:]))
		if n < 8 || n%8 != 0 || n > len(b) {
			return dst, ErrBadLength
		}
		a, err := decodeAction(t, b[4:n], inCT)
		if err != nil {
			return dst, err
		}
		dst = append(dst, a)
		b = b[n:]
	}
	return dst, nil
}

// decodeAction decodes the bytes after the type/length header.
func decodeAction(t ActionType, body []byte, inCT bool) (Action, error) {
	switch t {
	case ActionTypeExperimenter:
		if a, ok, err := decodeNXAction(body, inCT); ok || err != nil {
			return a, err
		}
	case ActionTypeOutput:
		if len(body) != 12 {
			return nil, ErrBadLength
		}
		return ActionOutput{
			Port:   binary.BigEndian.Uint32(body),
			MaxLen: binary.BigEndian.Uint16(body[4:]),
		}, nil
	case ActionTypeSetField:
		o, used, err := decodeOXM(body)
		if err != nil {
			return nil, err
		}
		if pad8(4+used) != 4+len(body) {
			return nil, ErrBadLength
		}
		return ActionSetField{Field: o}, nil
	case ActionTypePushVLAN:
		if len(body) != 4 {
			return nil, ErrBadLength
		}
		return ActionPushVLAN{EtherType: binary.BigEndian.Uint16(body)}, nil
	case ActionTypePopVLAN, ActionTypeDecNwTTL:
		if len(body) != 4 {
			return nil, ErrBadLength
		}
		if t == ActionTypePopVLAN {
			return ActionPopVLAN{}, nil
		}
		return ActionDecNwTTL{}, nil
	case ActionTypeGroup, ActionTypeSetQueue:
		if len(body) != 4 {
			return nil, ErrBadLength
		}
		id := binary.BigEndian.Uint32(body)
		if t == ActionTypeGroup {
			return ActionGroup{GroupID: id}, nil
		}
		return ActionSetQueue{QueueID: id}, nil
	}
	return ActionRaw{Type: t, Data: append([]byte(nil), body...)}, nil
}
