package health

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/sdnlb/sdnlb"
)

func TestRoutes_Explain(t *testing.T) {
	// A host on 192.0.2.0/24 (eth0, default route) and 10.0.0.0/24 (br0).
	host := []ifaceAddr{
		{"lo", netip.MustParsePrefix("127.0.0.1/8")},
		{"eth0", netip.MustParsePrefix("192.0.2.2/24")},
		{"br0", netip.MustParsePrefix("10.0.0.254/24")},
	}
	viaDefault := func(netip.Addr) (netip.Addr, error) { return netip.MustParseAddr("192.0.2.2"), nil }
	viaBridge := func(netip.Addr) (netip.Addr, error) { return netip.MustParseAddr("10.0.0.254"), nil }
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
// loopback member leaves from 127.0.0.1 on the loopback interface.
func TestRoutes_ExplainLoopback(t *testing.T) {
	srv := httptest.NewServer(probeHandler(nil))
	defer srv.Close()
	tcpErr := runProbe(t, &tcpProber{}, target{Type: sdnlb.MonitorTCP, Addr: loopback, Port: closedPort(t)}, probeTimeout)
	httpErr := runProbe(t, newHTTPProber(nil), target{Type: sdnlb.MonitorHTTP, Addr: loopback, Port: serverPort(t, srv),
		Method: "GET", Path: "/missing", Codes: "200"}, probeTimeout)
	for name, err := range map[string]error{"TCPRefused": tcpErr, "HTTPStatus": httpErr} {
		t.Run(name, func(t *testing.T) {
			got := newRoutes().explain(err, loopback).Error()
			if !strings.Contains(got, "(probed from 127.0.0.1 on ") || strings.Contains(got, "gateway") {
				t.Fatalf("explain = %q, want the loopback address and interface, no gateway", got)
			}
		})
	}
}
