package api

import (
	"context"
	"log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the HTTP server's limits; Server fields override them.
const (
	// DefaultMaxConns bounds the API connections open at once, event
	// streams aside: one file descriptor each.
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

// Listener caps the connections ln hands to the HTTP server at MaxConns
// (DefaultMaxConns when 0): one over the cap is closed as soon as it is
// accepted, which a client sees at once instead of waiting in the backlog.
// An event stream gives its connection's place back while it runs, since
// streams have their own cap.
func (s *Server) Listener(ln net.Listener) net.Listener {
	max := s.MaxConns
	if max <= 0 {
		max = DefaultMaxConns
	}
	return &limitListener{Listener: ln, max: int64(max)}
}

type limitListener struct {
	net.Listener
	max  int64
	open atomic.Int64
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, l: l}, nil
	}
}

// limitedConn holds one place under the cap until it is closed or its
// place is released.
type limitedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitedConn) release() { c.once.Do(func() { c.l.open.Add(-1) }) }

func (c *limitedConn) Close() error {
	c.release()
	return c.Conn.Close()
}

type connKey struct{}

// releaseConn gives the request's connection's place under the cap back.
func releaseConn(r *http.Request) {
	if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
		c.release()
	}
}
