package ofp

import "encoding/binary"

// FeaturesRequest is OFPT_FEATURES_REQUEST.
type FeaturesRequest struct{}

func (FeaturesRequest) Type() Type                    { return TypeFeaturesRequest }
func (FeaturesRequest) appendBody(b []byte) []byte    { return b }
func (*FeaturesRequest) decodeBody(body []byte) error { return expectEmpty(body) }

// Capabilities bits of FeaturesReply (ofp_capabilities).
const (
	CapFlowStats   uint32 = 1 << 0 // OFPC_FLOW_STATS
	CapTableStats  uint32 = 1 << 1 // OFPC_TABLE_STATS
	CapPortStats   uint32 = 1 << 2 // OFPC_PORT_STATS
	CapGroupStats  uint32 = 1 << 3 // OFPC_GROUP_STATS
	CapIPReasm     uint32 = 1 << 5 // OFPC_IP_REASM
	CapQueueStats  uint32 = 1 << 6 // OFPC_QUEUE_STATS
	CapPortBlocked uint32 = 1 << 8 // OFPC_PORT_BLOCKED
)

// FeaturesReply is OFPT_FEATURES_REPLY (ofp_switch_features).
type FeaturesReply struct {
	DatapathID   uint64
	NBuffers     uint32
	NTables      uint8
	AuxiliaryID  uint8
	Capabilities uint32
}

const featuresReplyLen = 24

func (FeaturesReply) Type() Type { return TypeFeaturesReply }

func (m FeaturesReply) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, m.DatapathID)
	b = binary.BigEndian.AppendUint32(b, m.NBuffers)
	b = append(b, m.NTables, m.AuxiliaryID, 0, 0)
	b = binary.BigEndian.AppendUint32(b, m.Capabilities)
	return append(b, 0, 0, 0, 0) // reserved
}

func (m *FeaturesReply) decodeBody(body []byte) error {
	if len(body) != featuresReplyLen {
		return ErrBadLength
	}
	*m = FeaturesReply{
		DatapathID:   binary.BigEndian.Uint64(body),
		NBuffers:     binary.BigEndian.Uint32(body[8:]),
		NTables:      body[12],
		AuxiliaryID:  body[13],
		Capabilities: binary.BigEndian.Uint32(body[16:]),
	}
	return nil
}

// Switch config flags (ofp_config_flags).
const (
	ConfigFragNormal uint16 = 0 // OFPC_FRAG_NORMAL
	ConfigFragDrop   uint16 = 1 // OFPC_FRAG_DROP
	ConfigFragReasm  uint16 = 2 // OFPC_FRAG_REASM
)

// GetConfigRequest is OFPT_GET_CONFIG_REQUEST.
type GetConfigRequest struct{}

func (GetConfigRequest) Type() Type                    { return TypeGetConfigRequest }
func (GetConfigRequest) appendBody(b []byte) []byte    { return b }
func (*GetConfigRequest) decodeBody(body []byte) error { return expectEmpty(body) }

// GetConfigReply is OFPT_GET_CONFIG_REPLY.
type GetConfigReply struct{ Flags, MissSendLen uint16 }

// SetConfig is OFPT_SET_CONFIG. MissSendLen is how many bytes of a
// table-miss packet the switch sends (ControllerMaxLenNoBuffer for all).
type SetConfig struct{ Flags, MissSendLen uint16 }

func (GetConfigReply) Type() Type { return TypeGetConfigReply }
func (SetConfig) Type() Type      { return TypeSetConfig }

func (m GetConfigReply) appendBody(b []byte) []byte { return appendConfig(b, m.Flags, m.MissSendLen) }
func (m SetConfig) appendBody(b []byte) []byte      { return appendConfig(b, m.Flags, m.MissSendLen) }

func (m *GetConfigReply) decodeBody(body []byte) error {
	return decodeConfig(body, &m.Flags, &m.MissSendLen)
}

func (m *SetConfig) decodeBody(body []byte) error {
	return decodeConfig(body, &m.Flags, &m.MissSendLen)
}

func appendConfig(b []byte, flags, missSendLen uint16) []byte {
	b = binary.BigEndian.AppendUint16(b, flags)
	return binary.BigEndian.AppendUint16(b, missSendLen)
}

func decodeConfig(body []byte, flags, missSendLen *uint16) error {
	if len(body) != 4 {
		return ErrBadLength
	}
	*flags = binary.BigEndian.Uint16(body)
	*missSendLen = binary.BigEndian.Uint16(body[2:])
	return nil
}
