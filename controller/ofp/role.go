package ofp

import "encoding/binary"

// Controller roles (ofp_controller_role).
const (
	RoleNoChange uint32 = 0 // OFPCR_ROLE_NOCHANGE
	RoleEqual    uint32 = 1 // OFPCR_ROLE_EQUAL
	RoleMaster   uint32 = 2 // OFPCR_ROLE_MASTER
	RoleSlave    uint32 = 3 // OFPCR_ROLE_SLAVE
)

// RoleRequest is OFPT_ROLE_REQUEST.
type RoleRequest struct {
	Role         uint32
	GenerationID uint64
}

// RoleReply is OFPT_ROLE_REPLY.
type RoleReply struct {
	Role         uint32
	GenerationID uint64
}

func (RoleRequest) Type() Type { return TypeRoleRequest }
func (RoleReply) Type() Type   { return TypeRoleReply }

func (m RoleRequest) appendBody(b []byte) []byte { return appendRole(b, m.Role, m.GenerationID) }
func (m RoleReply) appendBody(b []byte) []byte   { return appendRole(b, m.Role, m.GenerationID) }

func (m *RoleRequest) decodeBody(body []byte) error {
	return decodeRole(body, &m.Role, &m.GenerationID)
}

func (m *RoleReply) decodeBody(body []byte) error {
	return decodeRole(body, &m.Role, &m.GenerationID)
}

func appendRole(b []byte, role uint32, gen uint64) []byte {
	b = binary.BigEndian.AppendUint32(b, role)
	b = append(b, 0, 0, 0, 0)
	return binary.BigEndian.AppendUint64(b, gen)
}

func decodeRole(body []byte, role *uint32, gen *uint64) error {
	if len(body) != 16 {
		return ErrBadLength
	}
	*role = binary.BigEndian.Uint32(body)
	*gen = binary.BigEndian.Uint64(body[8:])
	return nil
}

// ONF's OpenFlow 1.3 extension for role status, which Open vSwitch sends
// an OpenFlow 1.3 controller in place of OF1.4's OFPT_ROLE_STATUS.
const (
	ONFExperimenterID uint32 = 0x4f4e4600 // ONF_EXPERIMENTER_ID
	ONFTypeRoleStatus uint32 = 1911       // ONFT_ROLE_STATUS
)

// Role status reasons (ofp14_controller_role_reason).
const (
	RoleReasonMasterRequest uint8 = 0 // OFPCRR_MASTER_REQUEST: another controller asked for MASTER
	RoleReasonConfig        uint8 = 1 // OFPCRR_CONFIG
	RoleReasonExperimenter  uint8 = 2 // OFPCRR_EXPERIMENTER
)

// RoleStatus tells a controller that the switch changed its role.
type RoleStatus struct {
	Role         uint32
	Reason       uint8
	GenerationID uint64
}

// RoleStatusOf reads an ONF role status from an experimenter message: role
// (4 bytes), reason (1), pad (3), generation id (8). ok is false for any
// other experimenter message; err for a role status of the wrong length.
func RoleStatusOf(m *Experimenter) (s RoleStatus, ok bool, err error) {
	if m.Experimenter != ONFExperimenterID || m.ExpType != ONFTypeRoleStatus {
		return s, false, nil
	}
	if len(m.Data) < 16 {
		return s, true, ErrBadLength
	}
	s.Role = binary.BigEndian.Uint32(m.Data)
	s.Reason = m.Data[4]
	s.GenerationID = binary.BigEndian.Uint64(m.Data[8:])
	return s, true, nil
}
