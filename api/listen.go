package api

import (
	"context"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the HTTP server's limits; Server fields override them.
const (
	// DefaultMaxConns bounds the API connections open at once, event
	// streams aside: one file descriptor each. A client (a source
	// address's prefix) may hold a quarter of them unless
	// MaxConnsPerClient says.
	DefaultMaxConns = 512
	// DefaultMaxStreams bounds the /v1/events streams open at once.
	DefaultMaxStreams = 128

	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second // a whole request, body included
	writeTimeout      = 60 * time.Second // a whole response; streams lift it
	idleTimeout       = 120 * time.Second
)

// Defaults of the prefixes that name one client under the connection and
// stream caps: an IPv4 address, and an IPv6 /64, which one host holds
// whole and can send from any address of.
const (
	DefaultClientPrefix4 = 32
	DefaultClientPrefix6 = 64
)

// clientPrefixes say how much of a source address names one client.
type clientPrefixes struct{ v4, v6 int }

func (s *Server) clientPrefixes() clientPrefixes {
	p := clientPrefixes{s.ClientPrefix4, s.ClientPrefix6}
	if p.v4 <= 0 {
		p.v4 = DefaultClientPrefix4
	}
	if p.v6 <= 0 {
		p.v6 = DefaultClientPrefix6
	}
	return p
}

// of is the client a connection from remote (host:port) is counted
// against; every source without an IP address (a Unix socket) is one.
func (p clientPrefixes) of(remote string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	bits := p.v4
	if a.Is6() {
		bits = p.v6
	}
	prefix, _ := a.Prefix(min(bits, a.BitLen()))
	return prefix
}

// timeouts are the HTTP server's; tests shorten them.
type timeouts struct {
	readHeader, read, write, idle time.Duration
}

// HTTPServer returns the http.Server to serve Handler with: timeouts on
// reading headers and bodies, on writing and on idle keep-alive
// connections, so that slow or idle clients cannot hold connections open.
// Serve it on Listener(ln).
func (s *Server) HTTPServer(errorLog *log.Logger) *http.Server {
	t := s.timeouts
	if t == (timeouts{}) {
		t = timeouts{readHeader: readHeaderTimeout, read: readTimeout, write: writeTimeout, idle: idleTimeout}
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: t.readHeader,
		ReadTimeout:       t.read,
		WriteTimeout:      t.write,
		IdleTimeout:       t.idle,
		ErrorLog:          errorLog,
		ConnState: func(c net.Conn, state http.ConnState) {
			if lc, ok := c.(*limitedConn); ok {
				lc.setState(state)
			}
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if lc, ok := c.(*limitedConn); ok {
				ctx = context.WithValue(ctx, connKey{}, lc)
			}
			return ctx
		},
	}
	srv.RegisterOnShutdown(s.CloseStreams)
	return srv
}

// Listener caps the connections ln hands to the HTTP server: MaxConns in
// all (DefaultMaxConns when 0), MaxConnsPerClient from one client, a
// source address's prefix (clientPrefixes; a quarter of MaxConns when 0).
// A connection over a cap is never refused: it takes the place of one of
// the client that holds the most (victim), at the client's own cap one
// of its own. So a client cannot keep the others out however it holds
// its connections: a slow body keeps a connection busy for the read
// timeout, but a newcomer from a client with fewer connections displaces
// it, and /healthz and /metrics are answered through a flood from fewer
// clients than places. An event stream gives its connection's place back
// while it runs, since streams have their own cap.
func (s *Server) Listener(ln net.Listener) net.Listener {
	max := s.MaxConns
	if max <= 0 {
		max = DefaultMaxConns
	}
	perClient := s.MaxConnsPerClient
	if perClient <= 0 {
		perClient = defaultMaxConnsPerClient(max)
	}
	l := &limitListener{Listener: ln, max: max, perClient: perClient, prefixes: s.clientPrefixes(),
		conns: map[*limitedConn]struct{}{}, clients: map[netip.Prefix]int{}}
	if s.Registry != nil {
		l.evictions = register(s.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sdnlb_api_connections_evicted_total",
			Help: "API connections closed at a full cap to make room for a new one, by what they were doing: idle (between requests, or before the first) or busy (in a request).",
		}, []string{"state"}))
	}
	return l
}

// defaultMaxConnsPerClient is a quarter of the cap, at least one.
func defaultMaxConnsPerClient(max int) int { return (max + 3) / 4 }

type limitListener struct {
	net.Listener
	max, perClient int
	prefixes       clientPrefixes
	evictions      *prometheus.CounterVec // nil: not counted

	mu      sync.Mutex
	conns   map[*limitedConn]struct{} // every connection holding a place
	clients map[netip.Prefix]int      // places held by client
	clock   uint64                    // counts admissions and state changes, to order them
}

func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc, evicted := l.admit(c)
	if evicted != nil {
		evicted.Conn.Close()
	}
	return lc, nil
}

// admit gives c a place, and when a cap is full returns the connection
// whose place it took.
func (l *limitListener) admit(c net.Conn) (admitted, evicted *limitedConn) {
	client := l.prefixes.of(c.RemoteAddr().String())
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.clients[client] >= l.perClient:
		evicted = l.victim(func(lc *limitedConn) bool { return lc.client == client })
	case len(l.conns) >= l.max:
		evicted = l.victim(func(*limitedConn) bool { return true })
	}
	if evicted != nil {
		l.remove(evicted)
		if l.evictions != nil {
			l.evictions.WithLabelValues(evicted.state()).Inc()
		}
	}
	l.clock++
	admitted = &limitedConn{Conn: c, l: l, client: client, idle: true, since: l.clock}
	l.conns[admitted] = struct{}{}
	l.clients[client]++
	return admitted, evicted
}

// victim picks the connection to close among those that of selects: one
// of the client that holds the most places, its idle ones first, then the
// one in its state the longest. The longest busy of the busiest client is
// the one that sends its request the slowest, or holds the most; a probe,
// whose client holds one connection, gives way only when every client
// holds one, and then after every connection older than it.
func (l *limitListener) victim(of func(*limitedConn) bool) *limitedConn {
	var found *limitedConn
	for c := range l.conns {
		if of(c) && (found == nil || l.before(c, found)) {
			found = c
		}
	}
	return found
}

// before reports whether a gives way before b.
func (l *limitListener) before(a, b *limitedConn) bool {
	if na, nb := l.clients[a.client], l.clients[b.client]; na != nb {
		return na > nb
	}
	if a.idle != b.idle {
		return a.idle
	}
	return a.since < b.since
}

// remove gives c's place back; l.mu must be held.
func (l *limitListener) remove(c *limitedConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.clients[c.client]--; l.clients[c.client] == 0 {
		delete(l.clients, c.client)
	}
}

// limitedConn holds one place under the caps until it is closed, evicted
// or its place is released.
type limitedConn struct {
	net.Conn
	l      *limitListener
	client netip.Prefix
	// Guarded by l.mu: whether the connection is between requests or in
	// one, and since when, on l.clock.
	idle  bool
	since uint64
}

// setState follows the HTTP server's view of the connection: it is idle
// until a request's headers are read and again after each response.
func (c *limitedConn) setState(state http.ConnState) {
	if state != http.StateActive && state != http.StateIdle {
		return
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.clock++
	c.idle, c.since = state == http.StateIdle, c.l.clock
}

// state names what the connection was doing, for the eviction metric;
// l.mu must be held.
func (c *limitedConn) state() string {
	if c.idle {
		return "idle"
	}
	return "busy"
}

func (c *limitedConn) release() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.remove(c)
}

func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

type connKey struct{}

// releaseConn gives the request's connection's place under the caps back.
func releaseConn(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
		c.release()
	}
}
