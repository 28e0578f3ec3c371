package model

import (
	"net/netip"
)

// Neighbour discovery (RFC 4861), the ARP of IPv6.
const (
	NDSolicitation  uint8 = 135
	NDAdvertisement uint8 = 136

	NDFlagSolicited uint8 = 0x40
	NDFlagOverride  uint8 = 0x20

	NDOptionTargetLL uint8 = 2
)

// AllNodes is the link's all-nodes address, where unsolicited
// advertisements go.
var AllNodes = netip.MustParseAddr("ff02::1")

// MulticastMAC is the Ethernet address of IPv6 multicast group a.
func MulticastMAC(a netip.Addr) [6]byte {
	b := a.As16()
	return [6]byte{0x33, 0x33, b[12], b[13], b[14], b[15]}
}

// LLDPMAC is the nearest-bridge group address: no bridge forwards it, so a
// frame sent on a link reaches the next switch and no further.
var LLDPMAC = [6]byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}
