package bgp

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func TestParsePeers(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		got, err := ParsePeers(" 192.0.2.1=65000, 198.51.100.1:1179=4200000000,2001:db8::1=65000 ,[2001:db8::2]:1179=1,")
		if err != nil {
			t.Fatal(err)
		}
		want := []Peer{
			{netip.MustParseAddr("192.0.2.1"), DefaultPort, 65000},
			{netip.MustParseAddr("198.51.100.1"), 1179, 4200000000},
			{netip.MustParseAddr("2001:db8::1"), DefaultPort, 65000},
			{netip.MustParseAddr("2001:db8::2"), 1179, 1},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("peers %v, want %v", got, want)
		}
	})
	t.Run("None", func(t *testing.T) {
		if got, err := ParsePeers(""); err != nil || got != nil {
			t.Fatalf("peers %v, %v", got, err)
		}
	})
	for _, tc := range []struct{ name, in, err string }{
		{"ErrNoASN", "192.0.2.1", "want ADDR=ASN"},
		{"ErrASNZero", "192.0.2.1=0", "want 1-4294967295"},
		{"ErrASNTooLarge", "192.0.2.1=4294967296", "want 1-4294967295"},
		{"ErrNotAnAddress", "router=65000", "is not an address"},
		{"ErrPortZero", "192.0.2.1:0=65000", "port 0"},
		{"ErrMulticast", "224.0.0.5=65000", "not a unicast address"},
		{"ErrTwice", "192.0.2.1=65000,192.0.2.1:1179=65001", "named twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParsePeers(tc.in); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ParsePeers(%q) = %v, want an error saying %q", tc.in, err, tc.err)
			}
		})
	}
}

func TestParseNextHops(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		got, err := ParseNextHops("00:00:00:00:00:00:00:01=192.0.2.1, 2=192.0.2.2,0000000000000001=2001:db8::1")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, testHops) {
			t.Fatalf("next hops %v, want %v", got, testHops)
		}
	})
	for _, tc := range []struct{ name, in, err string }{
		{"ErrNoAddress", "00:00:00:00:00:00:00:01", "want DPID=ADDR"},
		{"ErrDPID", "switch1=192.0.2.1", "want 16 hex digits"},
		{"ErrDPIDTooLong", "00000000000000001=192.0.2.1", "want 16 hex digits"},
		{"ErrNotAnAddress", "1=edge1", "is not an address"},
		{"ErrLoopback", "1=127.0.0.1", "not a unicast address"},
		{"ErrTwoOfAFamily", "1=192.0.2.1,00:00:00:00:00:00:00:01=192.0.2.9", "has a next hop of that family already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseNextHops(tc.in); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ParseNextHops(%q) = %v, want an error saying %q", tc.in, err, tc.err)
			}
		})
	}
}
