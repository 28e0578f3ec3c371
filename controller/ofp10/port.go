package ofp10

import (
	"encoding/binary"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// portOffset maps 1.0's reserved port range (0xff00 up, OFPP_MAX to
// OFPP_NONE) onto 1.3's (0xffffff00 up), as Open vSwitch does: the
// reserved ports keep their low 16 bits (IN_PORT 0xfff8, NORMAL 0xfffa,
// FLOOD 0xfffb, ALL 0xfffc, CONTROLLER 0xfffd, LOCAL 0xfffe, and
// OFPP_NONE 0xffff for OFPP_ANY).
const portOffset = 0xffff0000

// portNone is OFPP_NONE, 1.0's "no port", OFPP_ANY in 1.3.
const portNone uint16 = 0xffff

// port10Max is 1.0's OFPP_MAX: physical ports are numbered below it.
const port10Max = 0xff00

// portTo10 maps a 1.3 port number to 1.0's 16 bits; physical ports from
// 0xff00 to 0xfffffeff have no 1.0 number.
func portTo10(p uint32) (uint16, error) {
	switch {
	case p < port10Max:
		return uint16(p), nil
	case p >= ofp.PortMax:
		return uint16(p - portOffset), nil
	}
	return 0, unsupported("port %d (1.0 ports are below 0xff00)", p)
}

// portFrom10 maps a 1.0 port number to 1.3's.
func portFrom10(p uint16) uint32 {
	if p < port10Max {
		return uint32(p)
	}
	return uint32(p) + portOffset
}

// phyPortLen is sizeof(struct ofp_phy_port).
const phyPortLen = 48

// 1.0 port config bits 1.3 dropped: OFPPC_NO_STP, OFPPC_NO_RECV_STP and
// OFPPC_NO_FLOOD. The others keep their bit.
const portConfig13 = ofp.PortConfigDown | ofp.PortConfigNoRecv | ofp.PortConfigNoFwd | ofp.PortConfigNoPacketIn

// 1.0 port state: OFPPS_LINK_DOWN as in 1.3, and the spanning-tree state
// in bits 8-9, of which OFPPS_STP_BLOCK is 1.3's OFPPS_BLOCKED.
const (
	stateSTPMask  uint32 = 3 << 8
	stateSTPBlock uint32 = 3 << 8
)

// Port feature bits: 1.0 and 1.3 agree up to OFPPF_10GB_FD (bit 6); 1.3
// inserted four rates (40G, 100G, 1T, other) before the medium bits, so
// OFPPF_COPPER and above move up by four.
const (
	featureRates10  uint32 = 1<<7 - 1
	featureMedium10 uint32 = 0x1f << 7
	featureShift    uint32 = 4
)

func featuresFrom10(f uint32) uint32 {
	return f&featureRates10 | f&featureMedium10<<featureShift
}

// featuresTo10 drops 1.3's 40G, 100G, 1T and other-rate bits.
func featuresTo10(f uint32) uint32 {
	return f&featureRates10 | f>>featureShift&featureMedium10
}

// featureKbps is the rate of each 1.0 rate bit, fastest last.
var featureKbps = [...]uint32{10_000, 10_000, 100_000, 100_000, 1_000_000, 1_000_000, 10_000_000}

// speedKbps is the fastest rate among 1.0 feature bits f: 1.0 ports
// report no speed, only these bits, which is what Open vSwitch derives
// curr_speed and max_speed from too. 0 when no rate bit is set.
func speedKbps(f uint32) uint32 {
	for bit := len(featureKbps) - 1; bit >= 0; bit-- {
		if f&(1<<bit) != 0 {
			return featureKbps[bit]
		}
	}
	return 0
}

// appendPhyPort appends p as ofp_phy_port. CurrSpeed and MaxSpeed are not
// on the 1.0 wire; OFPPS_LIVE is implied by the link being up.
func appendPhyPort(b []byte, p *ofp.Port) ([]byte, error) {
	no, err := portTo10(p.PortNo)
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint16(b, no)
	b = append(b, p.HWAddr[:]...)
	b = ofp.AppendFixedString(b, p.Name, 16)
	state := p.State & ofp.PortStateLinkDown
	if p.State&ofp.PortStateBlocked != 0 {
		state |= stateSTPBlock
	}
	for _, v := range [...]uint32{p.Config & portConfig13, state, featuresTo10(p.Curr),
		featuresTo10(p.Advertised), featuresTo10(p.Supported), featuresTo10(p.Peer)} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b, nil
}

// decodePhyPort reads one ofp_phy_port from b[:phyPortLen]; the caller
// checks the length. A port whose link is up and that is not
// administratively down is OFPPS_LIVE, as Open vSwitch reports it in 1.3.
func decodePhyPort(b []byte) ofp.Port {
	curr := binary.BigEndian.Uint32(b[32:])
	supported := binary.BigEndian.Uint32(b[40:])
	p := ofp.Port{
		PortNo:     portFrom10(binary.BigEndian.Uint16(b)),
		Name:       ofp.FixedString(b[8:24]),
		Config:     binary.BigEndian.Uint32(b[24:]) & portConfig13,
		Curr:       featuresFrom10(curr),
		Advertised: featuresFrom10(binary.BigEndian.Uint32(b[36:])),
		Supported:  featuresFrom10(supported),
		Peer:       featuresFrom10(binary.BigEndian.Uint32(b[44:])),
		CurrSpeed:  speedKbps(curr),
		MaxSpeed:   speedKbps(supported),
	}
	copy(p.HWAddr[:], b[2:8])
	state := binary.BigEndian.Uint32(b[28:])
	p.State = state & ofp.PortStateLinkDown
	if state&stateSTPMask == stateSTPBlock {
		p.State |= ofp.PortStateBlocked
	}
	if p.State&ofp.PortStateLinkDown == 0 && p.Config&ofp.PortConfigDown == 0 {
		p.State |= ofp.PortStateLive
	}
	return p
}
