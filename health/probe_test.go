package health

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

var (
	loopback  = netip.MustParseAddr("127.0.0.1")
	loopback6 = netip.MustParseAddr("::1")
)

// forEachFamily runs test once per address family, as subtests IPv4 and
// IPv6, with the family's loopback address.
func forEachFamily(t *testing.T, test func(t *testing.T, lo netip.Addr)) {
	t.Helper()
	for _, lo := range []netip.Addr{loopback, loopback6} {
		name := "IPv4"
		if lo.Is6() {
			name = "IPv6"
		}
		t.Run(name, func(t *testing.T) { test(t, lo) })
	}
}

// listenLoopback listens on a free TCP port of lo.
func listenLoopback(tb testing.TB, lo netip.Addr) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", netip.AddrPortFrom(lo, 0).String())
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// probeTimeout bounds probes that are meant to pass or fail fast; the
// timeout cases use their own, shorter one.
const probeTimeout = 5 * time.Second

func runProbe(tb testing.TB, p prober, tg target, timeout time.Duration) error {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.probe(ctx, tg)
}

// closedPort returns a port of lo nothing listens on.
func closedPort(tb testing.TB, lo netip.Addr) int {
	tb.Helper()
	ln := listenLoopback(tb, lo)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// silentListener accepts connections on lo (the kernel completes the
// handshake) and never answers on them.
func silentListener(tb testing.TB, lo netip.Addr) int {
	tb.Helper()
	ln := listenLoopback(tb, lo)
	tb.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// fullBacklogPort returns a port of lo whose listener never accepts and
// whose accept queue is full, so the kernel drops new SYNs and connects
// hang.
func fullBacklogPort(tb testing.TB, lo netip.Addr) int {
	tb.Helper()
	domain, sa := syscall.AF_INET6, syscall.Sockaddr(&syscall.SockaddrInet6{Addr: lo.As16()})
	if lo.Is4() {
		domain, sa = syscall.AF_INET, &syscall.SockaddrInet4{Addr: lo.As4()}
	}
	fd, err := syscall.Socket(domain, syscall.SOCK_STREAM, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, sa); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		tb.Fatal(err)
	}
	if sa, err = syscall.Getsockname(fd); err != nil {
		tb.Fatal(err)
	}
	var port int
	switch sa := sa.(type) {
	case *syscall.SockaddrInet4:
		port = sa.Port
	case *syscall.SockaddrInet6:
		port = sa.Port
	}
	// A backlog of 0 still queues one connection; fill the queue until a
	// connect hangs.
	for i := 0; i < 4; i++ {
		c, err := net.DialTimeout("tcp", netip.AddrPortFrom(lo, uint16(port)).String(), 200*time.Millisecond)
		if err != nil {
			return port
		}
		tb.Cleanup(func() { c.Close() })
	}
	tb.Fatal("the accept queue never filled")
	return 0
}

func TestTCPProber(t *testing.T) {
	forEachFamily(t, func(t *testing.T, lo netip.Addr) {
		ln := listenLoopback(t, lo)
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		open := ln.Addr().(*net.TCPAddr).Port

		tests := []struct {
			name    string
			target  target
			timeout time.Duration
			wantErr string // "" for a pass
		}{
			{"OK", target{Type: sdnlb.MonitorTCP, Addr: lo, Port: open}, probeTimeout, ""},
			{"ErrRefused", target{Type: sdnlb.MonitorTCP, Addr: lo, Port: closedPort(t, lo)}, probeTimeout, "connection refused"},
			{"ErrTimeout", target{Type: sdnlb.MonitorTCP, Addr: lo, Port: fullBacklogPort(t, lo)}, 300 * time.Millisecond, "timeout"},
			{"ErrNoPort", target{Type: sdnlb.MonitorTCP, Addr: lo}, probeTimeout, "no port"},
			{"ErrNoAddress", target{Type: sdnlb.MonitorTCP, Port: open}, probeTimeout, "not an IP address"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				began := time.Now()
				err := runProbe(t, &tcpProber{}, tt.target, tt.timeout)
				checkProbeErr(t, err, tt.wantErr)
				if took := time.Since(began); took > tt.timeout+time.Second {
					t.Errorf("probe took %v, timeout %v", took, tt.timeout)
				}
			})
		}
	})
}

func checkProbeErr(tb testing.TB, err error, want string) {
	tb.Helper()
	switch {
	case want == "" && err != nil:
		tb.Fatalf("probe failed: %v", err)
	case want != "" && err == nil:
		tb.Fatalf("probe passed, want an error containing %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		tb.Fatalf("error %q, want it to contain %q", err, want)
	}
}

// seenRequest is what a test server saw of a probe.
type seenRequest struct {
	method, host, uri string
	close             bool
}

// probeHandler answers like a small application: GET /ok 200, /nocontent
// 204, /accepted 202, /created 201, /fail 503, /redirect 302, /big a
// megabyte, /bigheaders 64 KB of headers; other methods than GET and HEAD
// get 405.
func probeHandler(seen chan<- seenRequest) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case seen <- seenRequest{r.Method, r.Host, r.RequestURI, r.Close}:
		default:
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte("ok"))
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
		case "/accepted":
			w.WriteHeader(http.StatusAccepted)
		case "/created":
			w.WriteHeader(http.StatusCreated)
		case "/fail":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/redirect":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/big":
			w.Write(make([]byte, 1<<20))
		case "/bigheaders":
			for i := range 64 {
				w.Header().Set(fmt.Sprintf("X-Pad-%d", i), strings.Repeat("x", 1<<10))
			}
			w.Write([]byte("ok"))
		default:
			http.NotFound(w, r)
		}
	})
}

func serverPort(tb testing.TB, s *httptest.Server) int {
	tb.Helper()
	return s.Listener.Addr().(*net.TCPAddr).Port
}

func TestHTTPProber(t *testing.T) {
	forEachFamily(t, func(t *testing.T, lo netip.Addr) {
		seen := make(chan seenRequest, 1)
		plain := newLoopbackServer(t, lo, probeHandler(seen), false)
		tlsSrv := newLoopbackServer(t, lo, probeHandler(nil), true)
		httpPort, httpsPort := serverPort(t, plain), serverPort(t, tlsSrv)
		roots := x509.NewCertPool()
		roots.AddCert(tlsSrv.Certificate())

		get := func(path, codes string) target {
			return target{Type: sdnlb.MonitorHTTP, Addr: lo, Port: httpPort, Method: "GET", Path: path, Codes: codes}
		}
		https := func(verify bool) target {
			return target{Type: sdnlb.MonitorHTTPS, Addr: lo, Port: httpsPort, Method: "GET", Path: "/ok", Codes: "200", TLSVerify: verify}
		}
		tests := []struct {
			name    string
			prober  *httpProber
			target  target
			timeout time.Duration
			wantErr string
		}{
			{"OK", newHTTPProber(nil), get("/ok", "200"), probeTimeout, ""},
			{"RangeOK", newHTTPProber(nil), get("/nocontent", "200-299"), probeTimeout, ""},
			{"ListOK", newHTTPProber(nil), get("/accepted", "200,202"), probeTimeout, ""},
			{"ErrNotInList", newHTTPProber(nil), get("/created", "200,202"), probeTimeout, "status 201, expected 200,202"},
			{"ErrStatus", newHTTPProber(nil), get("/fail", "200-299"), probeTimeout, "status 503"},
			{"ErrNotFound", newHTTPProber(nil), get("/missing", "200"), probeTimeout, "status 404"},
			{"RedirectNotFollowed", newHTTPProber(nil), get("/redirect", "302"), probeTimeout, ""},
			{"ErrRedirectUnexpected", newHTTPProber(nil), get("/redirect", "200"), probeTimeout, "status 302"},
			{"BigBodyOK", newHTTPProber(nil), get("/big", "200"), probeTimeout, ""},
			{"ErrBigHeaders", newHTTPProber(nil), get("/bigheaders", "200"), probeTimeout, "header"},
			{"HeadOK", newHTTPProber(nil), target{Type: sdnlb.MonitorHTTP, Addr: lo, Port: httpPort, Method: "HEAD", Path: "/ok", Codes: "200"}, probeTimeout, ""},
			{"ErrWrongMethod", newHTTPProber(nil), target{Type: sdnlb.MonitorHTTP, Addr: lo, Port: httpPort, Method: "POST", Path: "/ok", Codes: "200"}, probeTimeout, "status 405"},
			{"WrongMethodExpected", newHTTPProber(nil), target{Type: sdnlb.MonitorHTTP, Addr: lo, Port: httpPort, Method: "DELETE", Path: "/ok", Codes: "405"}, probeTimeout, ""},
			{"ErrRefused", newHTTPProber(nil), target{Type: sdnlb.MonitorHTTP, Addr: lo, Port: closedPort(t, lo), Method: "GET", Path: "/", Codes: "200"}, probeTimeout, "connection refused"},
			{"ErrNoAnswer", newHTTPProber(nil), target{Type: sdnlb.MonitorHTTP, Addr: lo, Port: silentListener(t, lo), Method: "GET", Path: "/", Codes: "200"}, 300 * time.Millisecond, "deadline exceeded"},
			{"ErrNoPort", newHTTPProber(nil), get("/ok", "200").withPort(0), probeTimeout, "no port"},
			{"ErrHTTPToTLSServer", newHTTPProber(nil), target{Type: sdnlb.MonitorHTTP, Addr: lo, Port: httpsPort, Method: "GET", Path: "/ok", Codes: "200"}, probeTimeout, "status 400"},
			{"HTTPSWithoutVerifyOK", newHTTPProber(nil), https(false), probeTimeout, ""},
			{"ErrHTTPSVerifyUnknownCA", newHTTPProber(nil), https(true), probeTimeout, "certificate"},
			{"HTTPSVerifyTrustedCAOK", newHTTPProber(roots), https(true), probeTimeout, ""},
			{"ErrHTTPSToPlainServer", newHTTPProber(nil), target{Type: sdnlb.MonitorHTTPS, Addr: lo, Port: httpPort, Method: "GET", Path: "/ok", Codes: "200"}, probeTimeout, "http"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				began := time.Now()
				err := runProbe(t, tt.prober, tt.target, tt.timeout)
				checkProbeErr(t, err, tt.wantErr)
				if took := time.Since(began); took > tt.timeout+time.Second {
					t.Errorf("probe took %v, timeout %v", took, tt.timeout)
				}
			})
		}

		t.Run("SendsHostPathAndNoKeepAlive", func(t *testing.T) {
			for len(seen) > 0 {
				<-seen
			}
			tg := get("/ok?from=sdnlb", "200")
			if err := runProbe(t, newHTTPProber(nil), tg, probeTimeout); err != nil {
				t.Fatal(err)
			}
			got := <-seen
			host := map[netip.Addr]string{loopback: "127.0.0.1", loopback6: "[::1]"}[lo]
			want := seenRequest{method: "GET", host: host, uri: "/ok?from=sdnlb", close: true}
			if got != want {
				t.Fatalf("server saw %+v, want %+v", got, want)
			}
		})
	})
}

// newLoopbackServer starts a test server on lo, with TLS if tls, that
// stops at the test's cleanup.
func newLoopbackServer(tb testing.TB, lo netip.Addr, h http.Handler, tls bool) *httptest.Server {
	tb.Helper()
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = listenLoopback(tb, lo)
	if tls {
		s.Config.ErrorLog = log.New(io.Discard, "", 0) // the failing TLS cases are expected
		s.StartTLS()
	} else {
		s.Start()
	}
	tb.Cleanup(s.Close)
	return s
}

func TestHostHeader(t *testing.T) {
	for addr, want := range map[string]string{
		"192.0.2.1":       "192.0.2.1",
		"2001:db8::1":     "[2001:db8::1]",
		"fe80::1%eth0":    "[fe80::1]",
		"::ffff:10.0.0.1": "[::ffff:10.0.0.1]",
	} {
		if got := hostHeader(netip.MustParseAddr(addr)); got != want {
			t.Errorf("hostHeader(%s) = %q, want %q", addr, got, want)
		}
	}
}

func (t target) withPort(port int) target {
	t.Port = port
	return t
}

func TestHTTPProber_Concurrent(t *testing.T) {
	srv := httptest.NewServer(probeHandler(nil))
	defer srv.Close()
	p := newHTTPProber(nil)
	tg := target{Type: sdnlb.MonitorHTTP, Addr: loopback, Port: serverPort(t, srv), Method: "GET", Path: "/ok", Codes: "200"}
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() { errs <- runProbe(t, p, tg, probeTimeout) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestUnwrapOp(t *testing.T) {
	tests := []struct {
		name string
		in   error
		want string
	}{
		{"OpError", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("i/o timeout")}, "i/o timeout"},
		{"SyscallError", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, "connection refused"},
		{"Plain", errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unwrapOp(tt.in).Error(); got != tt.want {
				t.Fatalf("unwrapOp = %q, want %q", got, tt.want)
			}
		})
	}
}
