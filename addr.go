package sdnlb

import (
	"crypto/sha256"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
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
	case a.IsLinkLocalUnicast():
		return netip.Addr{}, fmt.Errorf("%s is a link-local address (169.254.0.0/16): a VIP or member address must be routable", s)
	}
	return a, nil
}

// ParseUnicastIP parses s as an address a VIP or member can have: an IPv4
// address ParseUnicastIPv4 accepts, or a routable unicast IPv6 address. It
// refuses ::, ::1, multicast (ff00::/8), link-local (fe80::/10, which
// needs a zone to be reached, so zones are refused too), IPv4-mapped
// addresses (::ffff:a.b.c.d, which are IPv4 written as IPv6) and the
// deprecated IPv4-compatible ::/96. The address is returned in its
// canonical form, which is what the store keeps and compares: String()
// gives it lower-case and compressed.
func ParseUnicastIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%q is not an IPv4 or IPv6 address", s)
	}
	if a.Is4() {
		return ParseUnicastIPv4(s)
	}
	switch {
	case a.Zone() != "":
		return netip.Addr{}, fmt.Errorf("%s has a zone: a VIP or member address must be routable, without one", s)
	case a.Is4In6():
		return netip.Addr{}, fmt.Errorf("%s is an IPv4-mapped IPv6 address: write the IPv4 address %s", s, a.Unmap())
	case a.IsUnspecified():
		return netip.Addr{}, fmt.Errorf("%s is the unspecified address, not a host address", s)
	case a.IsLoopback():
		return netip.Addr{}, fmt.Errorf("%s is the loopback address", s)
	case a.IsMulticast():
		return netip.Addr{}, fmt.Errorf("%s is a multicast address", s)
	case a.IsLinkLocalUnicast():
		return netip.Addr{}, fmt.Errorf("%s is a link-local address (fe80::/10): a VIP or member address must be routable", s)
	case ipv4Compatible.Contains(a):
		return netip.Addr{}, fmt.Errorf("%s is in ::/96, the deprecated IPv4-compatible addresses: write the IPv4 address or a routable IPv6 one", s)
	case ipv4Translated.Contains(a):
		return netip.Addr{}, fmt.Errorf("%s is in ::ffff:0:0:0/96, the IPv4-translated addresses: write the IPv4 address", s)
	case siteLocal.Contains(a):
		return netip.Addr{}, fmt.Errorf("%s is site-local (fec0::/10), deprecated and not routable", s)
	case discardOnly.Contains(a):
		return netip.Addr{}, fmt.Errorf("%s is in 100::/64, the discard-only prefix", s)
	}
	if v4, form, ok := embeddedIPv4(a); ok {
		if _, err := ParseUnicastIPv4(v4.String()); err != nil {
			return netip.Addr{}, fmt.Errorf("%s is the %s form of %s, which is refused: %w", s, form, v4, err)
		}
	}
	return a, nil
}

// embeddedIPv4 returns the IPv4 address a 6to4 (2002::/16) or NAT64
// (64:ff9b::/96, 64:ff9b:1::/48) address carries, and the form's name.
func embeddedIPv4(a netip.Addr) (netip.Addr, string, bool) {
	b := a.As16()
	switch {
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	case nat64.Contains(a), nat64Local.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	}
	return netip.Addr{}, "", false
}

// CanonicalAddress is the canonical form of s when ParseUnicastIP takes
// it, else s as it is, for Validate to refuse.
func CanonicalAddress(s string) string {
	if a, err := ParseUnicastIP(s); err == nil {
		return a.String()
	}
	return s
}

// IPv6 prefixes no VIP or member can be in, or that carry an IPv4
// address which must itself be one a VIP or member can have.
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")           // deprecated by RFC 4291
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT, RFC 2765
	siteLocal      = netip.MustParsePrefix("fec0::/10")       // deprecated by RFC 3879
	discardOnly    = netip.MustParsePrefix("100::/64")        // RFC 6666
	sixToFour      = netip.MustParsePrefix("2002::/16")       // RFC 3056
	nat64          = netip.MustParsePrefix("64:ff9b::/96")    // RFC 6052
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")  // RFC 8215
)

// HostPort joins an address and a port as "10.0.0.1:80" or
// "[2001:db8::1]:80", the form a reader can paste into a URL or dial.
func HostPort(address string, port int) string {
	return net.JoinHostPort(address, strconv.Itoa(port))
}

// IsIPv6 reports whether address, as the store keeps it, is an IPv6
// address. Addresses are canonical, so IPv4 is always dotted-quad.
func IsIPv6(address string) bool { return strings.Contains(address, ":") }

// Family names the address family of address, for messages.
func Family(address string) string {
	if IsIPv6(address) {
		return "IPv6"
	}
	return "IPv4"
}

// VIPMAC derives the virtual MAC a VIP answers ARP with from its id: stable
// across restarts, distinct per VIP, unicast and locally administered.
func VIPMAC(vipID string) string {
	sum := sha256.Sum256([]byte("sdnlb-vip:" + vipID))
	mac := net.HardwareAddr(sum[:6])
	mac[0] = mac[0]&^0x01 | 0x02
	return mac.String()
}
