package main

import (
	"net/netip"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// testFamily is one IP version as the tests run it: the VIP and members
// of its default run, and the flags that select them.
type testFamily struct {
	name        string
	vip         netip.AddrPort
	firstMember netip.Addr
	args        []string
}

var testFamilies = []testFamily{
	{"IPv4", netip.MustParseAddrPort("10.99.0.100:80"), netip.MustParseAddr("10.99.0.1"), nil},
	{"IPv6", netip.MustParseAddrPort("[2001:db8:99::100]:80"), netip.MustParseAddr("2001:db8:99::1"),
		[]string{"-vip", "[2001:db8:99::100]:80", "-first-member", "2001:db8:99::1"}},
}

var ipv4, ipv6 = testFamilies[0], testFamilies[1]

// target is the VIP and n members of the family.
func (f testFamily) target(n int) target { return newTarget(f.vip, f.firstMember, n) }

// addr is an address of the family: a, or a in the last 32 bits of
// 2001:db8:99::/96.
func (f testFamily) addr(a [4]byte) netip.Addr {
	if f.vip.Addr().Is4() {
		return netip.AddrFrom4(a)
	}
	b := f.vip.Addr().As16()
	copy(b[12:], a[:])
	return netip.AddrFrom16(b)
}

func matchIPSrc(a netip.Addr) ofp.OXM {
	if a.Is4() {
		return ofp.MatchIPv4Src(a.As4())
	}
	return ofp.MatchIPv6Src(a.As16())
}

func matchIPDst(a netip.Addr) ofp.OXM {
	if a.Is4() {
		return ofp.MatchIPv4Dst(a.As4())
	}
	return ofp.MatchIPv6Dst(a.As16())
}

// matchEthType is the eth_type of a's family.
func matchEthType(a netip.Addr) ofp.OXM {
	if a.Is4() {
		return ofp.MatchEthType(ofp.EthTypeIPv4)
	}
	return ofp.MatchEthType(ofp.EthTypeIPv6)
}

// mode is a version and a family the switches can run in.
type mode struct {
	of     dialect
	family testFamily
}

// modes are those the tool runs: both versions over IPv4, 1.3 over IPv6
// (1.0 matches no IPv6).
var modes = []mode{{dialect13{}, ipv4}, {dialect10{}, ipv4}, {dialect13{}, ipv6}}

func (m mode) name() string { return "OpenFlow" + m.of.name() + "/" + m.family.name }

// args are the flags that select the mode.
func (m mode) args() []string { return append([]string{"-openflow", m.of.name()}, m.family.args...) }
