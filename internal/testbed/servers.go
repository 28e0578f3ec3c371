package testbed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// HTTPServer is a backend in a host: "/" answers its name, "/health" 200
// (or the code set with SetHealth). Health-monitor tests Stop and Restart it.
// With a cost (SetCost) it is a single-threaded server: it answers "/" one
// request at a time, each taking that long, and counts the time it was
// busy, which stands for its CPU use.
type HTTPServer struct {
	Name string
	// Addr and Addr6 are "IP:port" and "[IP6]:port" of the server as
	// clients outside the host reach it: it listens on both families.
	Addr, Addr6 string

	host   *Host
	port   int
	hits   atomic.Int64
	health atomic.Int64
	cost   atomic.Int64 // nanoseconds a request to "/" takes; 0: none
	worker sync.Mutex   // the one thread of a server with a cost
	busy   atomic.Int64 // nanoseconds spent on requests with a cost

	mu   sync.Mutex
	srv  *http.Server
	done chan struct{}
}

// ServeHTTP starts an HTTP server on port (0 picks one) in the host, answering
// name. It stops at test cleanup.
func (h *Host) ServeHTTP(tb TB, port int, name string) *HTTPServer {
	tb.Helper()
	s := &HTTPServer{Name: name, host: h, port: port}
	s.health.Store(http.StatusOK)
	s.start(tb)
	s.Addr, s.Addr6 = h.addrs(s.port)
	tb.Cleanup(s.Stop)
	return s
}

// addrs returns the host's "IP:port" and "[IP6]:port".
func (h *Host) addrs(port int) (string, string) {
	p := strconv.Itoa(port)
	return net.JoinHostPort(h.IP, p), net.JoinHostPort(h.IP6, p)
}

// Hits counts the requests to "/" since the server was created.
func (s *HTTPServer) Hits() int64 { return s.hits.Load() }

// SetCost makes every request to "/" take d, one request at a time; 0
// serves them at once and in parallel again.
func (s *HTTPServer) SetCost(d time.Duration) { s.cost.Store(int64(d)) }

// Busy is how long the server has spent on requests with a cost.
func (s *HTTPServer) Busy() time.Duration { return time.Duration(s.busy.Load()) }

// SetHealth sets the status "/health" answers with, so HTTP monitors can see
// a sick server that still accepts connections.
func (s *HTTPServer) SetHealth(code int) { s.health.Store(int64(code)) }

// Restart listens again on the same port after Stop; it fails the test if the
// server is running.
func (s *HTTPServer) Restart(tb TB) {
	tb.Helper()
	s.start(tb)
}

// Stop closes the listener and every open connection, like a crashed server.
func (s *HTTPServer) Stop() {
	s.mu.Lock()
	srv, done := s.srv, s.done
	s.srv = nil
	s.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Close()
	<-done
}

func (s *HTTPServer) start(tb TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		tb.Fatalf("http server %s already running", s.Name)
	}
	// No host part: one socket for both families (IPV6_V6ONLY off).
	l, err := s.host.Listen("tcp", ":"+strconv.Itoa(s.port))
	if err != nil {
		tb.Fatalf("http server %s: %v", s.Name, err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		s.hits.Add(1)
		if cost := time.Duration(s.cost.Load()); cost > 0 {
			s.worker.Lock()
			start := time.Now()
			time.Sleep(cost)
			s.busy.Add(int64(time.Since(start)))
			s.worker.Unlock()
		}
		_, _ = w.Write([]byte(s.Name))
	})
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		code := int(s.health.Load())
		w.WriteHeader(code)
		_, _ = w.Write([]byte(http.StatusText(code)))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			tb.Errorf("http server %s: %v", s.Name, err)
		}
	}()
	s.srv, s.done = srv, done
}

// UDPServer answers every datagram with its name, on both families.
type UDPServer struct {
	Name        string
	Addr, Addr6 string

	host *Host
	port int
	hits atomic.Int64

	mu   sync.Mutex
	conn net.PacketConn
	done chan struct{}
}

// ServeUDP starts a UDP responder on port (0 picks one) in the host.
func (h *Host) ServeUDP(tb TB, port int, name string) *UDPServer {
	tb.Helper()
	s := &UDPServer{Name: name, host: h, port: port}
	s.start(tb)
	s.Addr, s.Addr6 = h.addrs(s.port)
	tb.Cleanup(s.Stop)
	return s
}

// Hits counts the datagrams answered since the server was created.
func (s *UDPServer) Hits() int64 { return s.hits.Load() }

// Restart listens again on the same port after Stop.
func (s *UDPServer) Restart(tb TB) {
	tb.Helper()
	s.start(tb)
}

// Stop closes the socket; datagrams to the port then draw ICMP unreachable.
func (s *UDPServer) Stop() {
	s.mu.Lock()
	conn, done := s.conn, s.done
	s.conn = nil
	s.mu.Unlock()
	if conn == nil {
		return
	}
	_ = conn.Close()
	<-done
}

func (s *UDPServer) start(tb TB) {
	tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		tb.Fatalf("udp server %s already running", s.Name)
	}
	conn, err := s.host.ListenPacket("udp", ":"+strconv.Itoa(s.port))
	if err != nil {
		tb.Fatalf("udp server %s: %v", s.Name, err)
	}
	s.port = conn.LocalAddr().(*net.UDPAddr).Port
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			_, peer, err := conn.ReadFrom(buf)
			if err != nil {
				return // closed by Stop
			}
			s.hits.Add(1)
			if _, err := conn.WriteTo([]byte(s.Name), peer); err != nil && !errors.Is(err, net.ErrClosed) {
				tb.Logf("udp server %s: %v", s.Name, err)
			}
		}
	}()
	s.conn, s.done = conn, done
}

// UDPRequest sends payload from the host to addr, "IP:port" or
// "[IP6]:port", and returns the first reply, waiting at most timeout.
func (h *Host) UDPRequest(ctx context.Context, addr string, payload []byte, timeout time.Duration) ([]byte, error) {
	conn, err := h.DialContext(ctx, "udp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := conn.Write(payload); err != nil {
		return nil, err
	}
	buf := make([]byte, 2048)
	n, err := conn.Read(buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// HTTPGet fetches url (its host an IP literal, an IPv6 one in brackets)
// from the host over a new connection and returns the body; a status other
// than 200 is an error.
func (h *Host) HTTPGet(ctx context.Context, url string) (string, error) {
	return h.httpGet(ctx, h.HTTPClient(), url)
}

// HTTPGetFrom is HTTPGet from the host's TCP port localPort (DialFrom).
func (h *Host) HTTPGetFrom(ctx context.Context, localPort int, url string) (string, error) {
	c := h.HTTPClient()
	c.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return h.DialFrom(ctx, localPort, network, addr)
	}
	return h.httpGet(ctx, c, url)
}

// DialFrom is DialContext from the host's TCP port localPort, of its
// address of addr's family, as a client that reuses its ports does: like
// the kernel's own choice of a port, it takes one its earlier connection
// left in TIME_WAIT (SO_REUSEADDR).
func (h *Host) DialFrom(ctx context.Context, localPort int, network, addr string) (net.Conn, error) {
	local := h.IP
	if to, err := netip.ParseAddrPort(addr); err == nil && to.Addr().Is6() {
		local = h.IP6
	}
	d := net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP(local), Port: localPort},
		Control: func(_, _ string, c syscall.RawConn) error {
			var err error
			if cerr := c.Control(func(fd uintptr) {
				err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
			}); cerr != nil {
				return cerr
			}
			return err
		},
	}
	return h.dial(ctx, d, network, addr)
}

func (h *Host) httpGet(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := readAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return string(body), fmt.Errorf("GET %s from %s: status %d", url, h.Name, resp.StatusCode)
	}
	return string(body), nil
}

// Agent answers the agent protocol of sdnlb's AGENT monitor (HAProxy's
// agent check) in a host: every connection gets the reply the test set,
// then the end of the connection.
type Agent struct {
	// Addr and Addr6 are "IP:port" and "[IP6]:port" as the health
	// monitors reach it: it listens on both families.
	Addr, Addr6 string

	reply atomic.Pointer[string]
	ln    net.Listener
	done  chan struct{}
}

// ServeAgent starts an agent on port in the host, answering "100%\n"
// until Set says otherwise. It stops at test cleanup.
func (h *Host) ServeAgent(tb TB, port int) *Agent {
	tb.Helper()
	ln, err := h.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		tb.Fatalf("agent on %s: %v", h.Name, err)
	}
	a := &Agent{ln: ln, done: make(chan struct{})}
	a.Addr, a.Addr6 = h.addrs(port)
	a.Set("100%\n")
	go func() {
		defer close(a.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return // closed at cleanup
			}
			_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = conn.Write([]byte(*a.reply.Load()))
			_ = conn.Close()
		}
	}()
	tb.Cleanup(func() {
		_ = ln.Close()
		<-a.done
	})
	return a
}

// Set makes reply, its newline included, what the agent answers from the
// next connection on.
func (a *Agent) Set(reply string) { a.reply.Store(&reply) }
