package health

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/sdnlb/sdnlb"
)

func TestRoutes_Explain(t *testing.T) {
	// A host on 192.0.2.0/24 and 2001:db8::/64 (eth0, default routes) and
	// 10.0.0.0/24 and fd00::/64 (br0).
	host := []ifaceAddr{
		{"lo", netip.MustParsePrefix("127.0.0.1/8")},
		{"lo", netip.MustParsePrefix("::1/128")},
		{"eth0", netip.MustParsePrefix("192.0.2.2/24")},
		{"eth0", netip.MustParsePrefix("2001:db8::2/64")},
		{"eth0", netip.MustParsePrefix("fe80::2/64")},
		{"br0", netip.MustParsePrefix("10.0.0.254/24")},
		{"br0", netip.MustParsePrefix("fd00::fe/64")},
	}
	from := func(addr string) func(netip.Addr) (netip.Addr, error) {
		return func(netip.Addr) (netip.Addr, error) { return netip.MustParseAddr(addr), nil }
	}
	viaDefault, viaBridge := from("192.0.2.2"), from("10.0.0.254")
	noRoute := func(netip.Addr) (netip.Addr, error) { return netip.Addr{}, syscall.ENETUNREACH }
	status404 := errors.New("GET /health: status 404, expected 200")

	tests := []struct {
		name   string
		source func(netip.Addr) (netip.Addr, error)
		err    error
		member string
		want   string
	}{
		{"OnLink", viaBridge, &netError{err: status404}, "10.0.0.1",
			"GET /health: status 404, expected 200 (probed from 10.0.0.254 on br0)"},
		{"ThroughGateway", viaDefault, &netError{err: status404}, "10.1.0.1",
			"GET /health: status 404, expected 200 (probed from 192.0.2.2 on eth0, through a gateway: 10.1.0.1 is on none of eth0's subnets)"},
		{"ConnectionLocalAddress", noRoute, &netError{local: netip.MustParseAddr("192.0.2.2"), err: status404}, "10.1.0.1",
			"GET /health: status 404, expected 200 (probed from 192.0.2.2 on eth0, through a gateway: 10.1.0.1 is on none of eth0's subnets)"},
		{"NoRoute", noRoute, &netError{err: fmt.Errorf("tcp connect: %w", syscall.ENETUNREACH)}, "10.1.0.1",
			"tcp connect: network is unreachable (this host has no route to 10.1.0.1)"},
		{"NoARPAnswer", viaBridge, &netError{err: fmt.Errorf("tcp connect: %w", syscall.EHOSTUNREACH)}, "10.0.0.9",
			"tcp connect: no route to host (probed from 10.0.0.254 on br0: nothing there answers ARP for 10.0.0.9)"},
		{"OnLink6", from("fd00::fe"), &netError{err: status404}, "fd00::1",
			"GET /health: status 404, expected 200 (probed from fd00::fe on br0)"},
		{"ThroughGateway6", from("2001:db8::2"), &netError{err: status404}, "fd00:1::1",
			"GET /health: status 404, expected 200 (probed from 2001:db8::2 on eth0, through a gateway: fd00:1::1 is on none of eth0's subnets)"},
		{"NoRoute6", noRoute, &netError{err: fmt.Errorf("tcp connect: %w", syscall.ENETUNREACH)}, "fd00:1::1",
			"tcp connect: network is unreachable (this host has no route to fd00:1::1)"},
		{"NoNeighbourAnswer", from("fd00::fe"), &netError{err: fmt.Errorf("tcp connect: %w", syscall.EHOSTUNREACH)}, "fd00::9",
			"tcp connect: no route to host (probed from fd00::fe on br0: nothing there answers neighbour solicitations for fd00::9)"},
		{"LinkLocalZone", from("fe80::2"), &netError{err: fmt.Errorf("tcp connect: %w", syscall.EHOSTUNREACH)}, "fe80::9%eth0",
			"tcp connect: no route to host (probed from fe80::2 on eth0: nothing there answers neighbour solicitations for fe80::9%eth0)"},
		{"UnknownLocalAddress", func(netip.Addr) (netip.Addr, error) { return netip.MustParseAddr("198.51.100.1"), nil },
			&netError{err: status404}, "10.0.0.1", "GET /health: status 404, expected 200 (probed from 198.51.100.1)"},
		{"NotANetworkError", viaBridge, errNoPort, "10.0.0.1", errNoPort.Error()},
		{"NoMemberAddress", viaBridge, &netError{err: status404}, "", status404.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &routes{source: tt.source, hostAddrs: func() ([]ifaceAddr, error) { return host, nil }}
			var member netip.Addr
			if tt.member != "" {
				member = netip.MustParseAddr(tt.member)
			}
			got := r.explain(tt.err, member)
			if got.Error() != tt.want {
				t.Fatalf("explain = %q\nwant      %q", got, tt.want)
			}
			if !errors.Is(got, tt.err) {
				t.Fatalf("explain(%v) does not wrap it", tt.err)
			}
		})
	}
	t.Run("Success", func(t *testing.T) {
		if err := newRoutes().explain(nil, loopback); err != nil {
			t.Fatalf("explain(nil) = %v", err)
		}
	})
}

// TestRoutes_ExplainLoopback asks this host's own routing: a probe of a
// loopback member leaves from the loopback address on the loopback
// interface.
func TestRoutes_ExplainLoopback(t *testing.T) {
	forEachFamily(t, func(t *testing.T, lo netip.Addr) {
		srv := newLoopbackServer(t, lo, probeHandler(nil), false)
		tcpErr := runProbe(t, &tcpProber{}, target{Type: sdnlb.MonitorTCP, Addr: lo, Port: closedPort(t, lo)}, probeTimeout)
		httpErr := runProbe(t, newHTTPProber(nil), target{Type: sdnlb.MonitorHTTP, Addr: lo, Port: serverPort(t, srv),
			Method: "GET", Path: "/missing", Codes: "200"}, probeTimeout)
		for name, err := range map[string]error{"TCPRefused": tcpErr, "HTTPStatus": httpErr} {
			t.Run(name, func(t *testing.T) {
				got := newRoutes().explain(err, lo).Error()
				if !strings.Contains(got, "(probed from "+lo.String()+" on ") || strings.Contains(got, "gateway") {
					t.Fatalf("explain = %q, want the loopback address and interface, no gateway", got)
				}
			})
		}
	})
}
