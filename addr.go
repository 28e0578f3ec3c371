package sdnlb

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"
)

// ParseUnicastIPv4 parses s as a dotted-quad IPv4 address that can sit on
// a wire as a host's: not in 0.0.0.0/8 ("this network"), 127.0.0.0/8
// (loopback), 224.0.0.0/4 (multicast) or 240.0.0.0/4 (reserved, with the
// broadcast address).
func ParseUnicastIPv4(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("%q is not an IPv4 address", s)
	}
	switch first := a.As4()[0]; {
	case first == 0:
		return netip.Addr{}, fmt.Errorf("%s is in 0.0.0.0/8, not a host address", s)
	case first >= 240:
		return netip.Addr{}, fmt.Errorf("%s is in the reserved 240.0.0.0/4, not a host address", s)
	case a.IsMulticast():
		return netip.Addr{}, fmt.Errorf("%s is a multicast address", s)
	case a.IsLoopback():
		return netip.Addr{}, fmt.Errorf("%s is a loopback address", s)
	}
	return a, nil
}

// VIPMAC derives the virtual MAC a VIP answers ARP with from its id: stable
// across restarts, distinct per VIP, unicast and locally administered.
func VIPMAC(vipID string) string {
	sum := sha256.Sum256([]byte("sdnlb-vip:" + vipID))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&^0x01 | 0x02
	return mac.String()
}
