package sdnlb_test

import (
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

func TestParseUnicastIP(t *testing.T) {
	for name, tc := range map[string]struct {
		in   string
		want string // the canonical form; "" when refused
		says string // in the refusal
	}{
		"OKIPv4":              {"10.0.0.1", "10.0.0.1", ""},
		"OKIPv6":              {"2001:db8::1", "2001:db8::1", ""},
		"OKIPv6UpperCase":     {"2001:DB8::1", "2001:db8::1", ""},
		"OKIPv6Expanded":      {"2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1", ""},
		"OKIPv6ZeroGroup":     {"2001:db8:0::1", "2001:db8::1", ""},
		"OKIPv6ULA":           {"fd00::10", "fd00::10", ""},
		"OKIPv6NAT64":         {"64:ff9b::a00:1", "64:ff9b::a00:1", ""},
		"ErrNotAnAddress":     {"web", "", "not an IPv4 or IPv6 address"},
		"ErrPrefix":           {"2001:db8::/64", "", "not an IPv4 or IPv6 address"},
		"ErrWithPort":         {"[2001:db8::1]:80", "", "not an IPv4 or IPv6 address"},
		"ErrIPv4Multicast":    {"224.0.0.1", "", "multicast"},
		"ErrIPv4Loopback":     {"127.0.0.1", "", "loopback"},
		"ErrUnspecified":      {"::", "", "unspecified"},
		"ErrLoopback":         {"::1", "", "loopback"},
		"ErrMulticast":        {"ff02::1", "", "multicast"},
		"ErrMulticastGlobal":  {"ff0e::101", "", "multicast"},
		"ErrLinkLocal":        {"fe80::1", "", "link-local"},
		"ErrLinkLocalTop":     {"febf::1", "", "link-local"},
		"ErrZone":             {"fe80::1%eth0", "", "zone"},
		"ErrZoneGlobal":       {"2001:db8::1%eth0", "", "zone"},
		"ErrIPv4Mapped":       {"::ffff:10.0.0.1", "", "write the IPv4 address 10.0.0.1"},
		"ErrIPv4MappedHex":    {"::ffff:a00:1", "", "write the IPv4 address 10.0.0.1"},
		"ErrIPv4Compatible":   {"::10.0.0.1", "", "IPv4-compatible"},
		"ErrIPv4CompatibleHx": {"::a00:1", "", "IPv4-compatible"},
		"ErrIPv4LinkLocal":    {"169.254.1.1", "", "link-local"},
		"ErrIPv4Translated":   {"::ffff:0:a00:1", "", "IPv4-translated"},
		"ErrSiteLocal":        {"fec0::1", "", "site-local"},
		"ErrDiscardOnly":      {"100::1", "", "discard-only"},
		"Err6to4Loopback":     {"2002:7f00:1::1", "", "6to4 form of 127.0.0.1"},
		"ErrNAT64Loopback":    {"64:ff9b::7f00:1", "", "NAT64 form of 127.0.0.1"},
		"ErrNAT64LocalUse":    {"64:ff9b:1::e000:1", "", "NAT64 form of 224.0.0.1"},
		"OK6to4":              {"2002:a00:1::1", "2002:a00:1::1", ""},
	} {
		t.Run(name, func(t *testing.T) {
			a, err := sdnlb.ParseUnicastIP(tc.in)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.says) {
					t.Fatalf("ParseUnicastIP(%q) = %v, %v; want an error saying %q", tc.in, a, err, tc.says)
				}
				return
			}
			if err != nil || a.String() != tc.want {
				t.Fatalf("ParseUnicastIP(%q) = %v, %v; want %s", tc.in, a, err, tc.want)
			}
		})
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.1": "10.0.0.1:80", "2001:db8::1": "[2001:db8::1]:80"} {
		if got := sdnlb.HostPort(in, 80); got != want {
			t.Errorf("HostPort(%q, 80) = %q, want %q", in, got, want)
		}
	}
}

func TestValidateCanonicalAddress(t *testing.T) {
	v := sdnlb.NewVIP()
	v.Address, v.Port = "2001:DB8:0::1", 80
	if err := v.Validate(); err != nil || v.Address != "2001:db8::1" {
		t.Fatalf("VIP Validate: %v, address %q; want 2001:db8::1", err, v.Address)
	}
	m := sdnlb.NewMember()
	m.PoolID, m.Address = "p", "2001:0DB8::0:2"
	if err := m.Validate(); err != nil || m.Address != "2001:db8::2" {
		t.Fatalf("member Validate: %v, address %q; want 2001:db8::2", err, m.Address)
	}
}
