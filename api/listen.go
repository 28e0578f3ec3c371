package api

import (
	"context"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Defaults of the HTTP server's limits; Server fields override them.
const (
	// DefaultMaxConns bounds the API connections open at once, event
	// streams aside: one file descriptor each. A client (a source
	// address) may hold a quarter of them unless MaxConnsPerClient says.
	DefaultMaxConns = 512
	// DefaultMaxStreams bounds the /v1/events streams open at once.
	DefaultMaxStreams = 128

	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second // a whole request, body included
	writeTimeout      = 60 * time.Second // a whole response; streams lift it
	idleTimeout       = 120 * time.Second
)

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
// all (DefaultMaxConns when 0), MaxConnsPerClient from one source address
// (a quarter of MaxConns when 0). A connection over a cap takes the place
// of an idle one, which is between requests or has not sent one yet: its
// client's own longest idle at the client's cap, else the longest idle of
// the client that holds the most. So no client keeps the others out with
// idle connections, whatever its address. With none idle the newcomer is
// closed as soon as it is accepted, which a client sees at once instead of
// waiting in the backlog. An event stream gives its connection's place
// back while it runs, since streams have their own cap.
func (s *Server) Listener(ln net.Listener) net.Listener {
	max := s.MaxConns
	if max <= 0 {
		max = DefaultMaxConns
	}
	perClient := s.MaxConnsPerClient
	if perClient <= 0 {
		perClient = defaultMaxConnsPerClient(max)
	}
	return &limitListener{Listener: ln, max: max, perClient: perClient,
		conns: map[*limitedConn]struct{}{}, clients: map[netip.Addr]int{}}
}

// defaultMaxConnsPerClient is a quarter of the cap, at least one.
func defaultMaxConnsPerClient(max int) int { return (max + 3) / 4 }

type limitListener struct {
	net.Listener
	max, perClient int

	mu      sync.Mutex
	conns   map[*limitedConn]struct{} // every connection holding a place
	clients map[netip.Addr]int        // places held by source address
	clock   uint64                    // counts admissions and state changes, to order idleness
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc, evicted := l.admit(c)
		if evicted != nil {
			evicted.Conn.Close()
		}
		if lc == nil {
			c.Close()
			continue
		}
		return lc, nil
	}
}

// admit gives c a place, evicting an idle connection when a cap is full;
// it returns nil when there is none to evict.
func (l *limitListener) admit(c net.Conn) (admitted, evicted *limitedConn) {
	client := sourceAddr(c)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.clients[client] >= l.perClient:
		evicted = l.longestIdle(func(lc *limitedConn) bool { return lc.client == client })
	case len(l.conns) >= l.max:
		evicted = l.longestIdle(func(*limitedConn) bool { return true })
	}
	if evicted != nil {
		l.remove(evicted)
	} else if l.clients[client] >= l.perClient || len(l.conns) >= l.max {
		return nil, nil
	}
	l.clock++
	admitted = &limitedConn{Conn: c, l: l, client: client, idle: true, since: l.clock}
	l.conns[admitted] = struct{}{}
	l.clients[client]++
	return admitted, evicted
}

// longestIdle picks the idle connection to evict among those that of
// selects: of the client that holds the most places, the one idle the
// longest; nil when none is idle.
func (l *limitListener) longestIdle(of func(*limitedConn) bool) *limitedConn {
	var found *limitedConn
	for c := range l.conns {
		if !c.idle || !of(c) {
			continue
		}
		if found == nil || l.clients[c.client] > l.clients[found.client] ||
			(l.clients[c.client] == l.clients[found.client] && c.since < found.since) {
			found = c
		}
	}
	return found
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

// sourceAddr is the client's address; every connection without an IP
// address (a Unix socket) is one client.
func sourceAddr(c net.Conn) netip.Addr {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// limitedConn holds one place under the caps until it is closed, evicted
// or its place is released.
type limitedConn struct {
	net.Conn
	l      *limitListener
	client netip.Addr
	// Guarded by l.mu: whether the connection is between requests, and
	// since when, on l.clock.
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
