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
