package ofp

import "encoding/binary"

// Reserved port numbers (ofp_port_no).
const (
	PortMax        uint32 = 0xffffff00 // OFPP_MAX: last physical port
	PortInPort     uint32 = 0xfffffff8 // OFPP_IN_PORT
	PortTable      uint32 = 0xfffffff9 // OFPP_TABLE
	PortNormal     uint32 = 0xfffffffa // OFPP_NORMAL
	PortFlood      uint32 = 0xfffffffb // OFPP_FLOOD
	PortAll        uint32 = 0xfffffffc // OFPP_ALL
	PortController uint32 = 0xfffffffd // OFPP_CONTROLLER
	PortLocal      uint32 = 0xfffffffe // OFPP_LOCAL
	PortAny        uint32 = 0xffffffff // OFPP_ANY
)

// Port config bits (ofp_port_config).
const (
	PortConfigDown       uint32 = 1 << 0 // OFPPC_PORT_DOWN
	PortConfigNoRecv     uint32 = 1 << 2 // OFPPC_NO_RECV
	PortConfigNoFwd      uint32 = 1 << 5 // OFPPC_NO_FWD
	PortConfigNoPacketIn uint32 = 1 << 6 // OFPPC_NO_PACKET_IN
)

// Port state bits (ofp_port_state).
const (
	PortStateLinkDown uint32 = 1 << 0 // OFPPS_LINK_DOWN
	PortStateBlocked  uint32 = 1 << 1 // OFPPS_BLOCKED
	PortStateLive     uint32 = 1 << 2 // OFPPS_LIVE
)

// portNameLen is OFP_MAX_PORT_NAME_LEN.
const portNameLen = 16

// portLen is sizeof(struct ofp_port).
const portLen = 64

// Port is ofp_port. Name is at most 16 bytes on the wire; Append
// truncates longer names.
type Port struct {
	PortNo     uint32
	HWAddr     [6]byte
	Name       string
	Config     uint32
	State      uint32
	Curr       uint32
	Advertised uint32
	Supported  uint32
	Peer       uint32
	CurrSpeed  uint32 // kbps
	MaxSpeed   uint32 // kbps
}

func (p *Port) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, p.PortNo)
	b = append(b, 0, 0, 0, 0)
	b = append(b, p.HWAddr[:]...)
	b = append(b, 0, 0)
	var name [portNameLen]byte
	copy(name[:], p.Name)
	b = append(b, name[:]...)
	for _, v := range [...]uint32{p.Config, p.State, p.Curr, p.Advertised, p.Supported, p.Peer, p.CurrSpeed, p.MaxSpeed} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// decode reads exactly one ofp_port from b[:portLen]; the caller checks
// the length.
func (p *Port) decode(b []byte) {
	name := b[16:32]
	for i, c := range name {
		if c == 0 {
			name = name[:i]
			break
		}
	}
	*p = Port{
		PortNo:     binary.BigEndian.Uint32(b),
		Name:       string(name),
		Config:     binary.BigEndian.Uint32(b[32:]),
		State:      binary.BigEndian.Uint32(b[36:]),
		Curr:       binary.BigEndian.Uint32(b[40:]),
		Advertised: binary.BigEndian.Uint32(b[44:]),
		Supported:  binary.BigEndian.Uint32(b[48:]),
		Peer:       binary.BigEndian.Uint32(b[52:]),
		CurrSpeed:  binary.BigEndian.Uint32(b[56:]),
		MaxSpeed:   binary.BigEndian.Uint32(b[60:]),
	}
	copy(p.HWAddr[:], b[8:14])
}

// Port-status reasons (ofp_port_reason).
const (
	PortReasonAdd    uint8 = 0 // OFPPR_ADD
	PortReasonDelete uint8 = 1 // OFPPR_DELETE
	PortReasonModify uint8 = 2 // OFPPR_MODIFY
)

// PortStatus is OFPT_PORT_STATUS.
type PortStatus struct {
	Reason uint8
	Desc   Port
}

func (PortStatus) Type() Type { return TypePortStatus }

func (m PortStatus) appendBody(b []byte) []byte {
	b = append(b, m.Reason, 0, 0, 0, 0, 0, 0, 0)
	return m.Desc.appendTo(b)
}

func (m *PortStatus) decodeBody(body []byte) error {
	if len(body) != 8+portLen {
		return ErrBadLength
	}
	m.Reason = body[0]
	m.Desc.decode(body[8:])
	return nil
}
