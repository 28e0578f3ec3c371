package health

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"

	"github.com/sdnlb/sdnlb"
)

// maxBodyDrain bounds what a probe reads of a response body: enough to end
// small responses cleanly, never a download.
const maxBodyDrain = 64 << 10

// maxResponseHeaderBytes bounds a probe's response headers: a health
// answer needs a status line and a few headers, and a member must not make
// sdnlb buffer megabytes per probe.
const maxResponseHeaderBytes = 16 << 10

// httpProber sends one request per probe (HTTP and HTTPS) and passes when
// the status is among the monitor's expected codes. No keep-alive: each
// probe opens a fresh connection, as a new client would.
type httpProber struct {
	insecure *http.Client // HTTPS without certificate checks, and plain HTTP
	verify   *http.Client // HTTPS with tls_verify
}

// newHTTPProber returns a prober; roots are the CAs tls_verify trusts, nil
// for the host's.
func newHTTPProber(roots *x509.CertPool) *httpProber {
	return &httpProber{
		// Members commonly have self-signed certificates; tls_verify opts in to checks.
		insecure: newProbeClient(&tls.Config{InsecureSkipVerify: true}),
		verify:   newProbeClient(&tls.Config{RootCAs: roots}),
	}
}

func newProbeClient(tlsConf *tls.Config) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                  nil, // probes go to the member, never through the environment's proxy
			DialContext:            (&net.Dialer{}).DialContext,
			TLSClientConfig:        tlsConf,
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: maxResponseHeaderBytes,
			// The member is being judged: no transparent gzip hiding its answer.
			DisableCompression: true,
		},
		// A redirect is an answer; expected_codes says whether it is good.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (p *httpProber) probe(ctx context.Context, t target) error {
	ap, err := t.addrPort()
	if err != nil {
		return err
	}
	codes, err := sdnlb.ParseExpectedCodes(t.Codes)
	if err != nil {
		return fmt.Errorf("expected_codes: %w", err)
	}
	scheme, client := "http", p.insecure
	if t.Type == sdnlb.MonitorHTTPS {
		scheme = "https"
		if t.TLSVerify {
			client = p.verify
		}
	}
	// Joined as text so that a path like "//other/" stays a path on the
	// member; url.URL brackets an IPv6 host and escapes its zone.
	base := &url.URL{Scheme: scheme, Host: ap.String()}
	req, err := http.NewRequestWithContext(ctx, t.Method, base.String()+t.Path, nil)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Host = hostHeader(t.Addr)
	req.Header.Set("User-Agent", "sdnlb-health")
	var local netip.Addr // of the connection, for the error
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			if a, ok := info.Conn.LocalAddr().(*net.TCPAddr); ok {
				local = a.AddrPort().Addr().Unmap()
			}
		},
	}))
	resp, err := client.Do(req)
	if err != nil {
		return &netError{local: local, err: fmt.Errorf("%s %s: %w", t.Method, t.Path, unwrapURL(err))}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyDrain))
	_ = resp.Body.Close()
	if !codes.Match(resp.StatusCode) {
		return &netError{local: local, err: fmt.Errorf("%s %s: status %d, expected %s", t.Method, t.Path, resp.StatusCode, t.Codes)}
	}
	return nil
}

// hostHeader is the Host of a probe of addr: the address alone, an IPv6
// one in brackets and without its zone, which means nothing to the member.
func hostHeader(addr netip.Addr) string {
	if addr.Is4() {
		return addr.String()
	}
	return "[" + addr.WithZone("").String() + "]"
}

// unwrapURL drops url.Error's repetition of the method and URL.
func unwrapURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return unwrapOp(ue.Err)
	}
	return err
}
