package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestClientPrefixes_Of(t *testing.T) {
	for _, tt := range []struct {
		name    string
		v4, v6  int
		remote  string
		want    string
		sameAs  string // another source the same client sends from
		otherAs string // a source of another client
	}{
		{"IPv4ByAddress", 0, 0, "192.0.2.7:4000", "192.0.2.7/32", "192.0.2.7:4001", "192.0.2.8:4000"},
		{"IPv6ByItsSlash64", 0, 0, "[2001:db8:1:2::7]:4000", "2001:db8:1:2::/64", "[2001:db8:1:2:ffff::1]:80", "[2001:db8:1:3::7]:4000"},
		{"IPv4Mapped", 0, 0, "[::ffff:192.0.2.7]:4000", "192.0.2.7/32", "192.0.2.7:9", "192.0.2.9:9"},
		{"IPv4ByPrefix", 24, 0, "192.0.2.7:4000", "192.0.2.0/24", "192.0.2.200:1", "192.0.3.7:1"},
		{"IPv6ByPrefix", 0, 48, "[2001:db8:1:2::7]:4000", "2001:db8:1::/48", "[2001:db8:1:ff::1]:1", "[2001:db8:2::1]:1"},
		{"IPv6ByAddress", 0, 128, "[2001:db8::7]:4000", "2001:db8::7/128", "[2001:db8::7]:1", "[2001:db8::8]:1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := (&Server{ClientPrefix4: tt.v4, ClientPrefix6: tt.v6}).clientPrefixes()
			got := p.of(tt.remote)
			if got.String() != tt.want {
				t.Errorf("client of %s: %s, want %s", tt.remote, got, tt.want)
			}
			if same := p.of(tt.sameAs); same != got {
				t.Errorf("%s is client %s, %s is %s: want one client", tt.remote, got, tt.sameAs, same)
			}
			if other := p.of(tt.otherAs); other == got {
				t.Errorf("%s and %s are both client %s", tt.remote, tt.otherAs, got)
			}
		})
	}
	if got := (clientPrefixes{32, 64}).of("@"); got != (netip.Prefix{}) {
		t.Errorf("a source without an address is client %s, want the zero prefix", got)
	}
}

// sourceConn is a connection from remote, for admitting by hand.
type sourceConn struct {
	net.Conn
	remote net.Addr
}

func (c *sourceConn) RemoteAddr() net.Addr { return c.remote }

func sourceAddr(source string) *sourceConn {
	return &sourceConn{remote: net.TCPAddrFromAddrPort(netip.MustParseAddrPort(source))}
}

// admitBusy admits a connection from source that starts a request at once
// and never ends it, as a slow body does; it returns the connection and
// the one whose place it took.
func admitBusy(tb testing.TB, l *limitListener, source string) (admitted, evicted *limitedConn) {
	tb.Helper()
	admitted, evicted = l.admit(sourceAddr(source))
	admitted.setState(http.StateActive)
	return admitted, evicted
}

// unitListener is the listener Listener makes of a real one on
// 127.0.0.1, whose admissions the tests make by hand.
func unitListener(tb testing.TB, srv *Server) *limitListener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	return srv.Listener(ln).(*limitListener)
}

func (l *limitListener) holds(c *limitedConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.conns[c]
	return ok
}

// The eviction policy, by hand: who gives way to a newcomer when every
// place is busy with a request that never ends.
func TestLimitListener_Evicts(t *testing.T) {
	t.Run("OneIPv6HostHoldsItsShare", func(t *testing.T) {
		l := unitListener(t, &Server{MaxConns: 8}) // 2 a client
		var conns []*limitedConn
		for i := range 6 { // a new address of one /64 each time
			c, evicted := admitBusy(t, l, fmt.Sprintf("[2001:db8:0:1::%x]:4000", i+1))
			if i >= 2 && evicted != conns[i-2] {
				t.Fatalf("connection %d took the place of %v, want its client's longest busy, %d", i, evicted, i-2)
			}
			conns = append(conns, c)
		}
		if n := l.clients[netip.MustParsePrefix("2001:db8:0:1::/64")]; n != 2 || len(l.conns) != 2 {
			t.Errorf("the /64 holds %d places of %d, want its share, 2", n, len(l.conns))
		}
	})
	t.Run("ProbeThroughBusyFlood", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		l := unitListener(t, &Server{MaxConns: 8, Registry: reg})
		attackers := []string{"192.0.2.1:1", "192.0.2.2:1", "192.0.2.3:1", "[2001:db8:0:1::1]:1"}
		var first *limitedConn
		for i := range 8 {
			c, evicted := admitBusy(t, l, attackers[i%4])
			if evicted != nil {
				t.Fatalf("an eviction below the cap, at connection %d", i)
			}
			if i == 0 {
				first = c
			}
		}
		probe, evicted := admitBusy(t, l, "198.51.100.7:1")
		if evicted != first {
			t.Fatalf("the probe took the place of %v, want the longest busy of the clients holding the most", evicted)
		}
		// The attackers go on connecting, the IPv6 one from a new address
		// of its /64 each time: each newcomer displaces one of theirs,
		// never the probe, whose client holds the fewest.
		for i := range 100 {
			source := attackers[i%4]
			if i%4 == 3 {
				source = fmt.Sprintf("[2001:db8:0:1::%x]:1", i+2)
			}
			if _, evicted := admitBusy(t, l, source); evicted == probe {
				t.Fatalf("attacker connection %d from %s took the probe's place", i, source)
			}
		}
		if !l.holds(probe) || len(l.conns) != 8 {
			t.Errorf("the probe held: %v; %d places taken, want 8", l.holds(probe), len(l.conns))
		}
		if n := evictions(t, l, "busy"); n != 101 {
			t.Errorf("%v busy evictions counted, want 101", n)
		}
	})
	t.Run("OneConnectionEachFromManyClients", func(t *testing.T) {
		// An attacker with more clients than places: everybody holds one,
		// and a newcomer displaces the longest busy, so a probe lives
		// until as many connections as there are places came after it.
		l := unitListener(t, &Server{MaxConns: 8})
		for i := range 8 {
			admitBusy(t, l, fmt.Sprintf("[2001:db8:0:%x::1]:1", i))
		}
		probe, _ := admitBusy(t, l, "198.51.100.7:1")
		for i := range 7 {
			admitBusy(t, l, fmt.Sprintf("[2001:db8:1:%x::1]:1", i))
		}
		if !l.holds(probe) {
			t.Fatal("the probe gave way before 8 connections came after it")
		}
		admitBusy(t, l, "[2001:db8:1:ff::1]:1")
		if l.holds(probe) {
			t.Error("the probe outlived 8 newer connections: the longest busy should have given way")
		}
	})
	t.Run("BusiestClientFirst", func(t *testing.T) {
		l := unitListener(t, &Server{MaxConns: 4, MaxConnsPerClient: 4})
		busy, _ := admitBusy(t, l, "192.0.2.1:1")
		idle, _ := l.admit(sourceAddr("192.0.2.1:2"))
		admitBusy(t, l, "192.0.2.1:3")
		fresh, _ := l.admit(sourceAddr("198.51.100.7:1")) // no request yet
		// The busiest client's idle connection first, then its longest
		// busy; never the other client's, idle as it is.
		for i, want := range []*limitedConn{idle, busy} {
			if _, evicted := admitBusy(t, l, fmt.Sprintf("192.0.2.2:%d", i+1)); evicted != want {
				t.Errorf("newcomer %d took the place of %v, want %v", i, evicted, want)
			}
		}
		if !l.holds(fresh) {
			t.Error("the connection of the client with the fewest gave way")
		}
	})
}

// TestServer_Slowloris fills every place with requests whose bodies never
// come, from four addresses, and does it again after each probe: /healthz
// and /metrics from another client are answered every time.
func TestServer_Slowloris(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prefix4 int
		probe   string
		flood   int // the places the flood holds
	}{
		{"ByAddress", 0, "127.0.0.5", 8},
		// With /24 the four addresses are one client, which holds its
		// share, a quarter, however many it sends.
		{"ByPrefix", 24, "127.0.1.1", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := guardStore(t).server()
			srv.MaxConns, srv.ClientPrefix4 = 8, tt.prefix4 // 2 a client
			srv.Registry = prometheus.NewRegistry()
			addr, l := serveHTTP(t, srv)
			flooders := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}
			for round := range 3 {
				for i := range 8 {
					slowBody(t, flooders[i%4], addr)
				}
				waitFor(t, func() bool { held, busy := places(l, flooders); return held == tt.flood && busy == tt.flood })
				probe := dialKeepAlive(t, tt.probe, addr)
				probe.mustGet(t, "/healthz", "/metrics")
				if held, _ := places(l, flooders); held > min(tt.flood, 7) {
					t.Errorf("round %d: the flood holds %d places beside the probe, want at most %d", round, held, min(tt.flood, 7))
				}
				probe.Close()
				waitFor(t, func() bool { held, _ := places(l, []string{tt.probe}); return held == 0 })
			}
			if n := evictions(t, l, "busy"); n < 1 {
				t.Errorf("%v busy evictions counted", n)
			}
		})
	}
}

// places counts the places the clients of sources hold, and how many of
// them are busy with a request.
func places(l *limitListener, sources []string) (held, busy int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		for _, source := range sources {
			if c.client == l.prefixes.of(net.JoinHostPort(source, "0")) {
				held++
				if !c.idle {
					busy++
				}
				break
			}
		}
	}
	return held, busy
}

// evictions is the count of evictions of connections in state.
func evictions(tb testing.TB, l *limitListener, state string) float64 {
	tb.Helper()
	var m dto.Metric
	if err := l.evictions.WithLabelValues(state).Write(&m); err != nil {
		tb.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
