package ofp

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Decode errors. When answering a peer, ErrShort and ErrBadLength map to
// BadRequestBadLen, ErrBadVersion to BadRequestBadVersion, and
// ErrUnsupported to BadRequestBadType or a more precise code (an unknown
// multipart type, a non-OXM match); ErrorFor does that. Match errors with
// errors.Is: ErrUnsupported comes wrapped with its detail.
var (
	// ErrShort: fewer bytes than a fixed structure needs.
	ErrShort = errors.New("ofp: message too short")
	// ErrBadLength: a length field disagrees with the bytes present or
	// with the structure it describes.
	ErrBadLength = errors.New("ofp: bad length")
	// ErrBadVersion: the header version is not 1.3; the header is still
	// returned so the caller can answer with an OF error.
	ErrBadVersion = errors.New("ofp: bad version")
	// ErrUnsupported: a type, field or encoding this codec does not
	// handle, or a Nicira action argument Open vSwitch would reject.
	ErrUnsupported = errors.New("ofp: unsupported")
	// ErrTooLong: the message would exceed MaxMessageLen.
	ErrTooLong = errors.New("ofp: message too long")
)

// ErrorType is ofp_error_msg.type.
type ErrorType uint16

const (
	ErrTypeHelloFailed         ErrorType = 0      // OFPET_HELLO_FAILED
	ErrTypeBadRequest          ErrorType = 1      // OFPET_BAD_REQUEST
	ErrTypeBadAction           ErrorType = 2      // OFPET_BAD_ACTION
	ErrTypeBadInstruction      ErrorType = 3      // OFPET_BAD_INSTRUCTION
	ErrTypeBadMatch            ErrorType = 4      // OFPET_BAD_MATCH
	ErrTypeFlowModFailed       ErrorType = 5      // OFPET_FLOW_MOD_FAILED
	ErrTypeGroupModFailed      ErrorType = 6      // OFPET_GROUP_MOD_FAILED
	ErrTypePortModFailed       ErrorType = 7      // OFPET_PORT_MOD_FAILED
	ErrTypeTableModFailed      ErrorType = 8      // OFPET_TABLE_MOD_FAILED
	ErrTypeQueueOpFailed       ErrorType = 9      // OFPET_QUEUE_OP_FAILED
	ErrTypeSwitchConfigFailed  ErrorType = 10     // OFPET_SWITCH_CONFIG_FAILED
	ErrTypeRoleRequestFailed   ErrorType = 11     // OFPET_ROLE_REQUEST_FAILED
	ErrTypeMeterModFailed      ErrorType = 12     // OFPET_METER_MOD_FAILED
	ErrTypeTableFeaturesFailed ErrorType = 13     // OFPET_TABLE_FEATURES_FAILED
	ErrTypeExperimenter        ErrorType = 0xffff // OFPET_EXPERIMENTER
)

var errorTypeNames = [...]string{
	"HELLO_FAILED", "BAD_REQUEST", "BAD_ACTION", "BAD_INSTRUCTION", "BAD_MATCH",
	"FLOW_MOD_FAILED", "GROUP_MOD_FAILED", "PORT_MOD_FAILED", "TABLE_MOD_FAILED",
	"QUEUE_OP_FAILED", "SWITCH_CONFIG_FAILED", "ROLE_REQUEST_FAILED",
	"METER_MOD_FAILED", "TABLE_FEATURES_FAILED",
}

// String returns the spec name without the OFPET_ prefix.
func (t ErrorType) String() string {
	if int(t) < len(errorTypeNames) {
		return errorTypeNames[t]
	}
	if t == ErrTypeExperimenter {
		return "EXPERIMENTER"
	}
	return "ERROR_TYPE_" + strconv.Itoa(int(t))
}

// Error codes, by type.
const (
	HelloFailedIncompatible uint16 = 0 // OFPHFC_INCOMPATIBLE
	HelloFailedEPerm        uint16 = 1 // OFPHFC_EPERM

	BadRequestBadVersion      uint16 = 0  // OFPBRC_BAD_VERSION
	BadRequestBadType         uint16 = 1  // OFPBRC_BAD_TYPE
	BadRequestBadMultipart    uint16 = 2  // OFPBRC_BAD_MULTIPART
	BadRequestBadExperimenter uint16 = 3  // OFPBRC_BAD_EXPERIMENTER
	BadRequestBadExpType      uint16 = 4  // OFPBRC_BAD_EXP_TYPE
	BadRequestEPerm           uint16 = 5  // OFPBRC_EPERM
	BadRequestBadLen          uint16 = 6  // OFPBRC_BAD_LEN
	BadRequestBufferEmpty     uint16 = 7  // OFPBRC_BUFFER_EMPTY
	BadRequestBufferUnknown   uint16 = 8  // OFPBRC_BUFFER_UNKNOWN
	BadRequestBadTableID      uint16 = 9  // OFPBRC_BAD_TABLE_ID
	BadRequestIsSlave         uint16 = 10 // OFPBRC_IS_SLAVE
	BadRequestBadPort         uint16 = 11 // OFPBRC_BAD_PORT
	BadRequestBadPacket       uint16 = 12 // OFPBRC_BAD_PACKET

	BadActionBadType     uint16 = 0 // OFPBAC_BAD_TYPE
	BadActionBadLen      uint16 = 1 // OFPBAC_BAD_LEN
	BadActionBadOutPort  uint16 = 4 // OFPBAC_BAD_OUT_PORT
	BadActionBadArgument uint16 = 5 // OFPBAC_BAD_ARGUMENT

	BadMatchBadType  uint16 = 0 // OFPBMC_BAD_TYPE
	BadMatchBadLen   uint16 = 1 // OFPBMC_BAD_LEN
	BadMatchBadField uint16 = 6 // OFPBMC_BAD_FIELD
	BadMatchBadValue uint16 = 7 // OFPBMC_BAD_VALUE

	FlowModFailedUnknown    uint16 = 0 // OFPFMFC_UNKNOWN
	FlowModFailedTableFull  uint16 = 1 // OFPFMFC_TABLE_FULL
	FlowModFailedBadTableID uint16 = 2 // OFPFMFC_BAD_TABLE_ID
	FlowModFailedOverlap    uint16 = 3 // OFPFMFC_OVERLAP
	FlowModFailedEPerm      uint16 = 4 // OFPFMFC_EPERM
	FlowModFailedBadTimeout uint16 = 5 // OFPFMFC_BAD_TIMEOUT
	FlowModFailedBadCommand uint16 = 6 // OFPFMFC_BAD_COMMAND
	FlowModFailedBadFlags   uint16 = 7 // OFPFMFC_BAD_FLAGS

	SwitchConfigFailedBadFlags uint16 = 0 // OFPSCFC_BAD_FLAGS
	SwitchConfigFailedBadLen   uint16 = 1 // OFPSCFC_BAD_LEN

	RoleRequestFailedStale   uint16 = 0 // OFPRRFC_STALE
	RoleRequestFailedUnsup   uint16 = 1 // OFPRRFC_UNSUP
	RoleRequestFailedBadRole uint16 = 2 // OFPRRFC_BAD_ROLE
)

// ErrorMsg is OFPT_ERROR and also a Go error, so a switch's rejection can
// travel up as an error value.
//
// The type field is ErrType, not Type, because every Message has a Type()
// method. For ErrTypeExperimenter, Code carries exp_type and Experimenter
// the experimenter ID.
type ErrorMsg struct {
	ErrType      ErrorType
	Code         uint16
	Experimenter uint32
	// Data is, for most errors, at least 64 bytes of the failed request.
	Data []byte
}

func (ErrorMsg) Type() Type { return TypeError }

func (e *ErrorMsg) Error() string {
	return "ofp: switch error " + e.ErrType.String() + " code " + strconv.Itoa(int(e.Code))
}

func (e ErrorMsg) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(e.ErrType))
	b = binary.BigEndian.AppendUint16(b, e.Code)
	if e.ErrType == ErrTypeExperimenter {
		b = binary.BigEndian.AppendUint32(b, e.Experimenter)
	}
	return append(b, e.Data...)
}

func (e *ErrorMsg) decodeBody(body []byte) error {
	if len(body) < 4 {
		return ErrShort
	}
	e.ErrType = ErrorType(binary.BigEndian.Uint16(body))
	e.Code = binary.BigEndian.Uint16(body[2:])
	e.Experimenter = 0
	body = body[4:]
	if e.ErrType == ErrTypeExperimenter {
		if len(body) < 4 {
			return ErrShort
		}
		e.Experimenter = binary.BigEndian.Uint32(body)
		body = body[4:]
	}
	e.Data = append(e.Data[:0], body...)
	return nil
}

// unsupportedError is ErrUnsupported with the detail a controller needs
// to pick the OFPT_ERROR to answer with.
type unsupportedError struct {
	what    string
	errType ErrorType
	code    uint16
}

func (e *unsupportedError) Error() string        { return "ofp: unsupported " + e.what }
func (e *unsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Preallocated so that rejecting a message does not allocate.
var (
	errUnknownType      = &unsupportedError{"message type", ErrTypeBadRequest, BadRequestBadType}
	errUnknownMultipart = &unsupportedError{"multipart type", ErrTypeBadRequest, BadRequestBadMultipart}
	errMatchType        = &unsupportedError{"match type (only OXM)", ErrTypeBadMatch, BadMatchBadType}
	errOXMTooLong       = &unsupportedError{"OXM longer than MaxOXMPayload", ErrTypeBadMatch, BadMatchBadLen}
	// errNXArgument: a Nicira action whose flags, ranges or nesting OVS
	// would reject (unknown NAT flags, ct() inside ct(), ...).
	errNXArgument = &unsupportedError{"Nicira action argument", ErrTypeBadAction, BadActionBadArgument}
)

// errorDataLen is how much of an offending request an error carries: the
// spec asks for at least 64 bytes.
const errorDataLen = 64

// ErrorFor maps a Decode error on message b to the OFPT_ERROR a controller
// should answer with, or nil when err is not a decode error of this
// package (for example an *ErrorMsg or an I/O error).
func ErrorFor(err error, b []byte) *ErrorMsg {
	var e ErrorMsg
	switch {
	case errors.Is(err, ErrBadVersion):
		e = ErrorMsg{ErrType: ErrTypeBadRequest, Code: BadRequestBadVersion}
	case errors.Is(err, ErrShort), errors.Is(err, ErrBadLength):
		e = ErrorMsg{ErrType: ErrTypeBadRequest, Code: BadRequestBadLen}
	case errors.Is(err, ErrUnsupported):
		e = ErrorMsg{ErrType: ErrTypeBadRequest, Code: BadRequestBadType}
		var detail *unsupportedError
		if errors.As(err, &detail) {
			e = ErrorMsg{ErrType: detail.errType, Code: detail.code}
		}
	default:
		return nil
	}
	if len(b) > errorDataLen {
		b = b[:errorDataLen]
	}
	e.Data = append([]byte(nil), b...)
	return &e
}
