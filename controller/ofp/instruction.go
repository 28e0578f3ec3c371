package ofp

import "encoding/binary"

// InstructionType is ofp_instruction_type.
type InstructionType uint16

const (
	InstructionTypeGotoTable     InstructionType = 1      // OFPIT_GOTO_TABLE
	InstructionTypeWriteMetadata InstructionType = 2      // OFPIT_WRITE_METADATA
	InstructionTypeWriteActions  InstructionType = 3      // OFPIT_WRITE_ACTIONS
	InstructionTypeApplyActions  InstructionType = 4      // OFPIT_APPLY_ACTIONS
	InstructionTypeClearActions  InstructionType = 5      // OFPIT_CLEAR_ACTIONS
	InstructionTypeMeter         InstructionType = 6      // OFPIT_METER
	InstructionTypeExperimenter  InstructionType = 0xffff // OFPIT_EXPERIMENTER
)

// Instruction is one ofp_instruction; value receivers as for Action.
type Instruction interface {
	InstructionType() InstructionType
	appendInstruction(b []byte) []byte
}

// InstructionGotoTable is OFPIT_GOTO_TABLE.
type InstructionGotoTable struct{ TableID uint8 }

// InstructionWriteMetadata is OFPIT_WRITE_METADATA.
type InstructionWriteMetadata struct{ Metadata, Mask uint64 }

// InstructionWriteActions is OFPIT_WRITE_ACTIONS.
type InstructionWriteActions struct{ Actions []Action }

// InstructionApplyActions is OFPIT_APPLY_ACTIONS.
type InstructionApplyActions struct{ Actions []Action }

// InstructionClearActions is OFPIT_CLEAR_ACTIONS.
type InstructionClearActions struct{}

// InstructionMeter is OFPIT_METER.
type InstructionMeter struct{ MeterID uint32 }

// InstructionRaw keeps any other instruction (experimenter, ...) as its
// type and the bytes after the 4-byte header; Append pads it to 8.
type InstructionRaw struct {
	Type InstructionType
	Data []byte
}

func (InstructionGotoTable) InstructionType() InstructionType { return InstructionTypeGotoTable }
func (InstructionWriteMetadata) InstructionType() InstructionType {
	return InstructionTypeWriteMetadata
}
func (InstructionWriteActions) InstructionType() InstructionType { return InstructionTypeWriteActions }
func (InstructionApplyActions) InstructionType() InstructionType { return InstructionTypeApplyActions }
func (InstructionClearActions) InstructionType() InstructionType { return InstructionTypeClearActions }
func (InstructionMeter) InstructionType() InstructionType        { return InstructionTypeMeter }
func (i InstructionRaw) InstructionType() InstructionType        { return i.Type }

func appendInstructionHeader(b []byte, t InstructionType, n int) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(t))
	return binary.BigEndian.AppendUint16(b, uint16(n))
}

func (i InstructionGotoTable) appendInstruction(b []byte) []byte {
	return append(appendInstructionHeader(b, InstructionTypeGotoTable, 8), i.TableID, 0, 0, 0)
}

func (i InstructionWriteMetadata) appendInstruction(b []byte) []byte {
	b = append(appendInstructionHeader(b, InstructionTypeWriteMetadata, 24), 0, 0, 0, 0)
	b = binary.BigEndian.AppendUint64(b, i.Metadata)
	return binary.BigEndian.AppendUint64(b, i.Mask)
}

func (i InstructionWriteActions) appendInstruction(b []byte) []byte {
	return appendActionsInstruction(b, InstructionTypeWriteActions, i.Actions)
}

func (i InstructionApplyActions) appendInstruction(b []byte) []byte {
	return appendActionsInstruction(b, InstructionTypeApplyActions, i.Actions)
}

func (InstructionClearActions) appendInstruction(b []byte) []byte {
	return append(appendInstructionHeader(b, InstructionTypeClearActions, 8), 0, 0, 0, 0)
}

func (i InstructionMeter) appendInstruction(b []byte) []byte {
	return binary.BigEndian.AppendUint32(appendInstructionHeader(b, InstructionTypeMeter, 8), i.MeterID)
}

func (i InstructionRaw) appendInstruction(b []byte) []byte {
	n := 4 + len(i.Data)
	b = appendInstructionHeader(b, i.Type, pad8(n))
	b = append(b, i.Data...)
	return appendPad8(b, n)
}

func appendActionsInstruction(b []byte, t InstructionType, actions []Action) []byte {
	start := len(b)
	b = append(appendInstructionHeader(b, t, 0), 0, 0, 0, 0)
	b = appendActions(b, actions)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

func appendInstructions(b []byte, instructions []Instruction) []byte {
	for _, i := range instructions {
		b = i.appendInstruction(b)
	}
	return b
}

// decodeInstructions decodes a whole instruction list, appending to dst.
func decodeInstructions(b []byte, dst []Instruction) ([]Instruction, error) {
	for len(b) > 0 {
		if len(b) < 8 {
			return dst, ErrShort
		}
		t := InstructionType(binary.BigEndian.Uint16(b))
		n := int(binary.BigEndian.Uint16(b[2:]))
		if n < 8 || n%8 != 0 || n > len(b) {
			return dst, ErrBadLength
		}
		i, err := decodeInstruction(t, b[4:n])
		if err != nil {
			return dst, err
		}
		dst = append(dst, i)
		b = b[n:]
	}
	return dst, nil
}

func decodeInstruction(t InstructionType, body []byte) (Instruction, error) {
	switch t {
	case InstructionTypeGotoTable:
		if len(body) != 4 {
			return nil, ErrBadLength
		}
		return InstructionGotoTable{TableID: body[0]}, nil
	case InstructionTypeWriteMetadata:
		if len(body) != 20 {
			return nil, ErrBadLength
		}
		return InstructionWriteMetadata{
			Metadata: binary.BigEndian.Uint64(body[4:]),
			Mask:     binary.BigEndian.Uint64(body[12:]),
		}, nil
	case InstructionTypeWriteActions, InstructionTypeApplyActions:
		actions, err := decodeActions(body[4:], nil)
		if err != nil {
			return nil, err
		}
		if t == InstructionTypeWriteActions {
			return InstructionWriteActions{Actions: actions}, nil
		}
		return InstructionApplyActions{Actions: actions}, nil
	case InstructionTypeClearActions:
		if len(body) != 4 {
			return nil, ErrBadLength
		}
		return InstructionClearActions{}, nil
	case InstructionTypeMeter:
		if len(body) != 4 {
			return nil, ErrBadLength
		}
		return InstructionMeter{MeterID: binary.BigEndian.Uint32(body)}, nil
	}
	return InstructionRaw{Type: t, Data: append([]byte(nil), body...)}, nil
}
