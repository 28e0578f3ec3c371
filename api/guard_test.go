package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb"
)

// mustConfig reads the whole store, to tell whether a request changed it.
func mustConfig(tb testing.TB, s *memStore) *sdnlb.Config {
	tb.Helper()
	c, err := s.LoadConfig(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// guardStore holds one object of each kind: VIP v, pool p, member m, monitor h.
func guardStore(tb testing.TB) *memStore {
	tb.Helper()
	v := sdnlb.NewVIP()
	v.ID, v.Address, v.Port = "v", "10.0.0.100", 80
	p := sdnlb.NewPool()
	p.ID, p.VIPID, p.Name = "p", "v", "web"
	m := sdnlb.NewMember()
	m.ID, m.PoolID, m.Address, m.Port = "m", "p", "10.0.0.1", 80
	h := sdnlb.NewMonitor()
	h.ID = "h"
	return mustMemStore(tb, v, p, m, h)
}

// TestServer_RefusedChangesNothing sends requests that must be refused and
// checks the status, the error and that the store is as it was.
func TestServer_RefusedChangesNothing(t *testing.T) {
	for _, c := range []routeCase{
		// Cross-site writes.
		{name: "ErrOriginOtherSite", method: "POST", path: "/v1/vips", body: `{"address":"10.0.0.5","port":80}`, headers: []string{"Origin: http://evil.example"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrOriginNull", method: "DELETE", path: "/v1/members/m", headers: []string{"Origin: null"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrSecFetchCrossSite", method: "DELETE", path: "/v1/members/m", headers: []string{"Sec-Fetch-Site: cross-site"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrSecFetchSameSite", method: "PATCH", path: "/v1/pools/p", body: `{"name":"x"}`, headers: []string{"Sec-Fetch-Site: same-site"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrFloodlightCrossSiteForm", method: "POST", path: "/quantum/v1.0/vips/", body: `{"address":"10.0.0.5","port":"80"}`, headers: []string{"Content-Type: text/plain", "Origin: http://evil.example", "Sec-Fetch-Site: cross-site"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrFloodlightClearCrossSite", method: "DELETE", path: "/quantum/v1.0/clear/", headers: []string{"Origin: http://evil.example"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrFloodlightDisableImg", method: "GET", path: "/quantum/v1.0/health_monitors/all/disable/", headers: []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Dest: image"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrFloodlightDisableOtherOrigin", method: "GET", path: "/quantum/v1.0/health_monitors/all/disable/", headers: []string{"Origin: http://evil.example"}, status: 403, code: sdnlb.EFORBIDDEN},
		// Content types of writes.
		{name: "ErrFloodlightTextPlain", method: "POST", path: "/quantum/v1.0/members/", body: `{"address":"10.0.0.2","pool_id":"p"}`, headers: []string{"Content-Type: text/plain"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrFloodlightFormFromPage", method: "PUT", path: "/quantum/v1.0/pools/p/health_monitors/", body: `{"id":"h"}`, headers: []string{"Content-Type: application/x-www-form-urlencoded", "Sec-Fetch-Site: same-origin"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrNativeForm", method: "POST", path: "/v1/members", body: `{"address":"10.0.0.2","pool_id":"p"}`, headers: []string{"Content-Type: application/x-www-form-urlencoded"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrBodylessWriteForm", method: "POST", path: "/quantum/v1.0/health_monitors/all/disable/", headers: []string{"Content-Type: multipart/form-data; boundary=x"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrFloodlightWeightForm", method: "PUT", path: "/quantum/v1.0/members/m/0/", headers: []string{"Content-Type: text/plain"}, status: 415, code: sdnlb.EUNSUPPORTED},
		// Strict numbers.
		{name: "ErrMonitorDelayNaN", method: "POST", path: "/quantum/v1.0/health_monitors/", body: `{"type":"TCP","delay":"NaN"}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "ErrMonitorDelayInf", method: "POST", path: "/quantum/v1.0/health_monitors/", body: `{"type":"TCP","delay":"+Inf"}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "ErrMonitorDelayInfinity", method: "POST", path: "/quantum/v1.0/health_monitors/", body: `{"type":"TCP","delay":"infinity"}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "ErrMonitorDelayHex", method: "PUT", path: "/quantum/v1.0/health_monitors/h/", body: `{"delay":"0x1p3"}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "ErrMonitorDelayOverflow", method: "PUT", path: "/quantum/v1.0/health_monitors/h/", body: `{"delay":1e400}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "ErrMonitorTimeoutNaN", method: "PUT", path: "/quantum/v1.0/health_monitors/h/", body: `{"timeout":"nan"}`, status: 400, code: sdnlb.EINVALID, field: "timeout"},
		{name: "ErrMonitorsPeriodNaN", method: "POST", path: "/quantum/v1.0/health_monitors/monitors/NaN/", status: 400, code: sdnlb.EINVALID, field: "period"},
		{name: "ErrMonitorsPeriodInf", method: "POST", path: "/quantum/v1.0/health_monitors/monitors/Inf/", status: 400, code: sdnlb.EINVALID, field: "period"},
		{name: "ErrMonitorsPeriodOverflow", method: "POST", path: "/quantum/v1.0/health_monitors/monitors/1e999/", status: 400, code: sdnlb.EINVALID, field: "period"},
		{name: "ErrMemberWeightExponent", method: "PUT", path: "/quantum/v1.0/members/m/1e2/", status: 400, code: sdnlb.EINVALID, field: "weight"},
		{name: "ErrMemberWeightUnderscore", method: "PUT", path: "/quantum/v1.0/members/m/1_0/", status: 400, code: sdnlb.EINVALID, field: "weight"},
		{name: "ErrMemberPortNaN", method: "PUT", path: "/quantum/v1.0/members/m/", body: `{"port":"NaN"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "ErrVIPPortOverflow", method: "PUT", path: "/quantum/v1.0/vips/v/", body: `{"port":"99999999999999999999999"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "ErrNativeDelayOverflow", method: "PATCH", path: "/v1/monitors/h", body: `{"delay":1e400}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "ErrNativeDelayString", method: "PATCH", path: "/v1/monitors/h", body: `{"delay":"NaN"}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "ErrNativeWeightExponent", method: "PATCH", path: "/v1/members/m", body: `{"weight":1e2}`, status: 400, code: sdnlb.EINVALID, field: "weight"},
		{name: "ErrNativePortOverflow", method: "PATCH", path: "/v1/vips/v", body: `{"port":1e400}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		// Null, UTF-8, ids and the other fields.
		{name: "ErrNullPut", method: "PUT", path: "/v1/pools/p", body: `null`, status: 400, code: sdnlb.EINVALID},
		{name: "ErrNullPatch", method: "PATCH", path: "/v1/vips/v", body: " null\n", status: 400, code: sdnlb.EINVALID},
		{name: "ErrNullFloodlight", method: "PUT", path: "/quantum/v1.0/pools/p/", body: `null`, status: 400, code: sdnlb.EINVALID},
		{name: "ErrBadUTF8", method: "PATCH", path: "/v1/vips/v", body: "{\"name\":\"a\xffb\"}", status: 400, code: sdnlb.EINVALID},
		{name: "ErrBadUTF8Floodlight", method: "PUT", path: "/quantum/v1.0/vips/v/", body: "{\"name\":\"a\xc3\"}", status: 400, code: sdnlb.EINVALID},
		{name: "ErrIDSemicolon", method: "POST", path: "/v1/vips", body: `{"id":"a;b","address":"10.0.0.5","port":80}`, status: 400, code: sdnlb.EINVALID, field: "id"},
		{name: "ErrIDDotDot", method: "POST", path: "/v1/monitors", body: `{"id":"..","type":"TCP"}`, status: 400, code: sdnlb.EINVALID, field: "id"},
		{name: "ErrIDNUL", method: "POST", path: "/quantum/v1.0/vips/", body: `{"id":"a\u0000","address":"10.0.0.5","port":"80"}`, status: 400, code: sdnlb.EINVALID, field: "id"},
		{name: "ErrIDBidi", method: "POST", path: "/v1/pools", body: `{"id":"a\u202eb"}`, status: 400, code: sdnlb.EINVALID, field: "id"},
		{name: "ErrVIPReserved", method: "POST", path: "/v1/vips", body: `{"address":"240.0.0.1","port":80}`, status: 400, code: sdnlb.EINVALID, field: "address"},
		{name: "ErrVIPThisNetwork", method: "POST", path: "/quantum/v1.0/vips/", body: `{"address":"0.1.2.3","port":"80"}`, status: 400, code: sdnlb.EINVALID, field: "address"},
		{name: "ErrDescriptionLong", method: "PATCH", path: "/v1/pools/p", body: `{"description":"` + strings.Repeat("x", sdnlb.MaxDescriptionLength+1) + `"}`, status: 400, code: sdnlb.EINVALID, field: "description"},
		{name: "ErrURLPathControl", method: "PATCH", path: "/v1/monitors/h", body: `{"type":"HTTP","url_path":"/a\u0001"}`, status: 400, code: sdnlb.EINVALID, field: "url_path"},
		{name: "ErrURLPathEscape", method: "PATCH", path: "/v1/monitors/h", body: `{"type":"HTTP","url_path":"/a%zz"}`, status: 400, code: sdnlb.EINVALID, field: "url_path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := guardStore(t)
			ts := MustServe(t, store.server())
			before := mustConfig(t, store)
			c.assert(t, ts)
			if after := mustConfig(t, store); !reflect.DeepEqual(before, after) {
				t.Errorf("the store changed:\nbefore %+v\nafter  %+v", before, after)
			}
		})
	}
}

func TestServer_SameOriginWrites(t *testing.T) {
	store := guardStore(t)
	srv := store.server()
	srv.CORSOrigins = []string{"https://ops.example"}
	ts := MustServe(t, srv)
	host := strings.TrimPrefix(ts.URL, "http://")
	for _, c := range []routeCase{
		{name: "SameOriginNative", method: "PATCH", path: "/v1/pools/p", body: `{"name":"a"}`, headers: []string{"Origin: " + ts.URL, "Sec-Fetch-Site: same-origin"}, status: 200},
		{name: "SameOriginFloodlight", method: "POST", path: "/quantum/v1.0/pools/p/", body: `{"name":"b"}`, headers: []string{"Origin: http://" + host}, status: 200},
		{name: "NoContentTypeFloodlight", method: "PUT", path: "/quantum/v1.0/pools/p/", body: `{"name":"c"}`, headers: []string{"Content-Type:"}, status: 200},
		{name: "CharsetJSONFloodlight", method: "PUT", path: "/quantum/v1.0/pools/p/", body: `{"name":"d"}`, headers: []string{"Content-Type: application/json; charset=UTF-8"}, status: 200},
		{name: "AllowedOrigin", method: "PATCH", path: "/v1/pools/p", body: `{"name":"e"}`, headers: []string{"Origin: https://ops.example", "Sec-Fetch-Site: cross-site"}, status: 200,
			check: func(t *testing.T, resp response) {
				if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "https://ops.example" {
					t.Errorf("Access-Control-Allow-Origin = %q", got)
				}
			}},
		{name: "Preflight", method: "OPTIONS", path: "/v1/pools/p", headers: []string{"Origin: https://ops.example", "Access-Control-Request-Method: PATCH"}, status: 204,
			check: func(t *testing.T, resp response) {
				if got := resp.Header.Get("Access-Control-Allow-Headers"); !strings.Contains(got, "Authorization") {
					t.Errorf("Access-Control-Allow-Headers = %q", got)
				}
			}},
		{name: "NoPreflightForOthers", method: "OPTIONS", path: "/v1/pools/p", headers: []string{"Origin: https://evil.example", "Access-Control-Request-Method: PATCH"}, status: 405,
			check: func(t *testing.T, resp response) {
				if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
					t.Errorf("Access-Control-Allow-Origin = %q", got)
				}
			}},
		{name: "DisableGetSameOrigin", method: "GET", path: "/quantum/v1.0/health_monitors/all/disable/", headers: []string{"Sec-Fetch-Site: same-origin"}, status: 200},
		{name: "DisablePostScript", method: "POST", path: "/quantum/v1.0/health_monitors/all/enable/", status: 200},
	} {
		t.Run(c.name, func(t *testing.T) { c.assert(t, ts) })
	}
}

func TestServer_StateChangingGetNeedsToken(t *testing.T) {
	store := guardStore(t)
	srv := store.server()
	srv.Token = "s3cret"
	runRouteCases(t, srv, []routeCase{
		{name: "ErrSameOriginWithoutToken", method: "GET", path: "/quantum/v1.0/health_monitors/all/disable/", headers: []string{"Sec-Fetch-Site: same-origin"}, status: 401, code: sdnlb.EUNAUTHORIZED},
		{name: "WithToken", method: "GET", path: "/quantum/v1.0/health_monitors/all/disable/", headers: []string{"Authorization: Bearer s3cret"}, status: 200},
		{name: "LowercaseScheme", method: "PATCH", path: "/v1/pools/p", body: `{"name":"x"}`, headers: []string{"Authorization: bearer s3cret"}, status: 200},
		{name: "UppercaseScheme", method: "PATCH", path: "/v1/pools/p", body: `{"name":"y"}`, headers: []string{"Authorization: BEARER   s3cret"}, status: 200},
		{name: "ErrOtherScheme", method: "PATCH", path: "/v1/pools/p", body: `{"name":"z"}`, headers: []string{"Authorization: Basic s3cret"}, status: 401, code: sdnlb.EUNAUTHORIZED},
	})
}

func TestServer_Host(t *testing.T) {
	store := guardStore(t)
	srv := store.server()
	srv.AllowedHosts = []string{"lb.example", ".ops.example"}
	ts := MustServe(t, srv)
	for host, want := range map[string]int{
		"127.0.0.1:8080":        200,
		"[::1]:8080":            200,
		"10.1.2.3":              200,
		"localhost:8080":        200,
		"LB.example:8080":       200,
		"a.ops.example":         200,
		"evil.example:8080":     403,
		"rebound.lb.example":    403,
		"ops.example.evil.test": 403,
	} {
		t.Run(host, func(t *testing.T) {
			req, _ := http.NewRequest("GET", ts.URL+"/v1/vips", nil)
			req.Host = host
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, want, body)
			}
			if want == 403 {
				assertError(t, response{Status: resp.StatusCode, Body: body}, 403, sdnlb.EFORBIDDEN, "")
			}
		})
	}
}

func TestServer_MetricsLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	store := guardStore(t)
	srv := store.server()
	srv.Registry = reg
	ts := MustServe(t, srv)
	for i := range 50 {
		testRequest(t, ts, fmt.Sprintf("X%dMETHOD", i), "/v1/vips", "")
		testRequest(t, ts, "GET", fmt.Sprintf("/no/such/path/%d", i), "")
		testRequest(t, ts, "GET", fmt.Sprintf("/v1/vips/%d/extra/%d", i, i), "")
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	methods, routes := map[string]bool{}, map[string]bool{}
	for _, f := range families {
		if f.GetName() != "sdnlb_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "method":
					methods[l.GetValue()] = true
				case "route":
					routes[l.GetValue()] = true
				}
			}
		}
	}
	if len(methods) != 2 || !methods["OTHER"] || !methods["GET"] {
		t.Errorf("method labels %v, want GET and OTHER", methods)
	}
	if len(routes) > 3 {
		t.Errorf("route labels %v: made-up paths made their own", routes)
	}
}

func TestServer_MetricsAuthReads(t *testing.T) {
	store := guardStore(t)
	srv := store.server()
	srv.Registry, srv.Token, srv.AuthReads = prometheus.NewRegistry(), "s3cret", true
	runRouteCases(t, srv, []routeCase{
		{name: "ErrNoToken", method: "GET", path: "/metrics", status: 401, code: sdnlb.EUNAUTHORIZED},
		{name: "Token", method: "GET", path: "/metrics", headers: []string{"Authorization: Bearer s3cret"}, status: 200},
	})
}

func TestServer_LocationResolves(t *testing.T) {
	store := guardStore(t)
	ts := MustServe(t, store.server())
	for _, id := range []string{"a.b", "a-b_c", "..."} {
		resp := testRequest(t, ts, "POST", "/v1/monitors", `{"id":"`+id+`","type":"TCP"}`)
		if resp.Status != 201 {
			t.Fatalf("create %q: %d %s", id, resp.Status, resp.Body)
		}
		if got := testRequest(t, ts, "GET", resp.Header.Get("Location"), ""); got.Status != 200 {
			t.Errorf("GET %s: %d %s", resp.Header.Get("Location"), got.Status, got.Body)
		}
	}
}

func TestServer_FloodlightListPages(t *testing.T) {
	store := guardStore(t)
	ctx := context.Background()
	for i := range sdnlb.MaxPageLimit + 5 {
		m := sdnlb.NewMember()
		m.ID, m.PoolID, m.Address, m.Port = fmt.Sprintf("n%04d", i), "p", fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), 80
		if err := store.CreateMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	ts := MustServe(t, store.server())
	count := func(resp response) int { return strings.Count(string(resp.Body), `"id":`) }

	first := testRequest(t, ts, "GET", "/quantum/v1.0/members/", "")
	if first.Status != 200 || count(first) != sdnlb.MaxPageLimit {
		t.Fatalf("first page: status %d, %d members", first.Status, count(first))
	}
	link := first.Header.Get("Link")
	next, ok := strings.CutPrefix(strings.TrimSuffix(link, `>; rel="next"`), "<")
	if !ok {
		t.Fatalf("Link = %q", link)
	}
	rest := testRequest(t, ts, "GET", next, "")
	if rest.Status != 200 || count(rest) != 6 || rest.Header.Get("Link") != "" {
		t.Fatalf("second page %s: status %d, %d members, Link %q", next, rest.Status, count(rest), rest.Header.Get("Link"))
	}
	small := testRequest(t, ts, "GET", "/quantum/v1.0/pools/p/members?limit=2", "")
	if count(small) != 2 || small.Header.Get("Link") == "" {
		t.Errorf("limit=2: %d members, Link %q", count(small), small.Header.Get("Link"))
	}
	assertError(t, testRequest(t, ts, "GET", "/quantum/v1.0/vips?limit=NaN", ""), 400, sdnlb.EINVALID, "limit")
}

// TestServer_TooLargeExpectContinue sends the headers of a body over the
// limit with Expect: 100-continue: the answer must be the 413, at once,
// without a 100 Continue asking for the body.
func TestServer_TooLargeExpectContinue(t *testing.T) {
	ts := MustServe(t, guardStore(t).server())
	for _, path := range []string{"/v1/vips", "/quantum/v1.0/vips/"} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", path, 5<<20)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		assertError(t, response{Status: resp.StatusCode, Body: body}, 413, sdnlb.ETOOLARGE, "")
	}
}

// serveHTTP serves srv as cmd/sdnlb does: HTTPServer on Listener. It
// returns the address and the listener, whose places tests inspect.
func serveHTTP(tb testing.TB, srv *Server) (string, *limitListener) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	hs := srv.HTTPServer(nil)
	limited := srv.Listener(ln).(*limitListener)
	go func() { _ = hs.Serve(limited) }()
	tb.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String(), limited
}

// closedWithin reports whether the server closes conn within d.
func closedWithin(conn net.Conn, d time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(conn)
	return err == nil // EOF: closed; a timeout is an error
}

func TestServer_Timeouts(t *testing.T) {
	srv := guardStore(t).server()
	srv.timeouts = timeouts{readHeader: 200 * time.Millisecond, read: 300 * time.Millisecond, write: time.Second, idle: 300 * time.Millisecond}
	addr, _ := serveHTTP(t, srv)

	t.Run("SlowHeaders", func(t *testing.T) {
		conn, _ := net.Dial("tcp", addr)
		defer conn.Close()
		fmt.Fprint(conn, "GET /v1/vips HTTP/1.1\r\n")
		if !closedWithin(conn, 3*time.Second) {
			t.Error("a connection that never ends its headers stays open")
		}
	})
	t.Run("SlowBody", func(t *testing.T) {
		conn, _ := net.Dial("tcp", addr)
		defer conn.Close()
		fmt.Fprint(conn, "POST /v1/vips HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		if !closedWithin(conn, 3*time.Second) {
			t.Error("a connection that sends 1 byte of a 100-byte body stays open")
		}
	})
	t.Run("Idle", func(t *testing.T) {
		conn, _ := net.Dial("tcp", addr)
		defer conn.Close()
		fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("healthz: %v %v", resp, err)
		}
		if !closedWithin(conn, 3*time.Second) {
			t.Error("an idle keep-alive connection stays open")
		}
	})
}

// An event stream gives its connection's place back and has its own cap.
func TestServer_StreamCap(t *testing.T) {
	store := guardStore(t)
	srv := store.server()
	srv.EventService = &feed{}
	srv.MaxConns, srv.MaxConnsPerClient, srv.MaxStreams = 2, 2, 1
	srv.heartbeat = 50 * time.Millisecond
	addr, _ := serveHTTP(t, srv)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) (int, error) {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode, nil
	}
	stream, err := http.Get("http://" + addr + "/v1/events")
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	if status, err := get("/v1/events"); err != nil || status != 503 {
		t.Errorf("second stream: %d %v, want 503", status, err)
	}
	for range 2 {
		if status, err := get("/healthz"); err != nil || status != 200 {
			t.Errorf("request beside a stream: %d %v", status, err)
		}
	}
}

// One client holds at most an eighth of the event streams: a client
// opening streams on purpose leaves the others theirs.
func TestServer_StreamCapPerClient(t *testing.T) {
	srv := guardStore(t).server()
	srv.EventService = &feed{}
	srv.MaxStreams = 16 // 2 a client
	srv.heartbeat = 50 * time.Millisecond
	addr, _ := serveHTTP(t, srv)
	open := func(source string) (int, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
		client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		resp, err := client.Get("http://" + addr + "/v1/events")
		if err != nil {
			return 0, err
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp.StatusCode, nil
	}
	for i := range 3 {
		want := 200
		if i == 2 {
			want = 503
		}
		if status, err := open("127.0.0.1"); err != nil || status != want {
			t.Errorf("stream %d from 127.0.0.1: %d %v, want %d", i+1, status, err, want)
		}
	}
	if status, err := open("127.0.0.2"); err != nil || status != 200 {
		t.Errorf("a stream from another client: %d %v, want 200", status, err)
	}
}

// TestServer_ConnectionCaps fills the caps from one client, 127.0.0.1,
// with idle keep-alive connections or busy ones, and checks that the
// flooder loses or is refused connections while another client,
// 127.0.0.2, is served: /healthz and the API.
func TestServer_ConnectionCaps(t *testing.T) {
	t.Run("IdleOverTheClientsShare", func(t *testing.T) {
		srv := guardStore(t).server()
		srv.MaxConns = 8 // 2 a client
		addr, l := serveHTTP(t, srv)
		var flood []*keepAlive
		for i := range 5 {
			c := dialKeepAlive(t, "127.0.0.1", addr)
			if status, err := c.get("/healthz"); err != nil || status != 200 {
				t.Fatalf("flood connection %d: %d %v", i, status, err)
			}
			flood = append(flood, c)
			waitPlaces(t, l, "127.0.0.1", min(i+1, 2), min(i+1, 2))
		}
		// Each connection over the share took the place of the client's
		// longest idle.
		for i, c := range flood {
			status, err := c.get("/healthz")
			if evicted := i < 3; evicted != (err != nil) {
				t.Errorf("flood connection %d: %d %v, want evicted=%v", i, status, err, evicted)
			}
		}
		other := dialKeepAlive(t, "127.0.0.2", addr)
		other.mustGet(t, "/healthz", "/v1/vips")
	})
	t.Run("IdleEvictedForAnotherClient", func(t *testing.T) {
		srv := guardStore(t).server()
		srv.MaxConns, srv.MaxConnsPerClient = 4, 4
		addr, l := serveHTTP(t, srv)
		var flood []*keepAlive
		for i := range 4 {
			c := dialKeepAlive(t, "127.0.0.1", addr)
			c.mustGet(t, "/healthz")
			flood = append(flood, c)
			waitPlaces(t, l, "127.0.0.1", i+1, i+1)
		}
		other := dialKeepAlive(t, "127.0.0.2", addr)
		other.mustGet(t, "/healthz", "/v1/vips")
		// The newcomer took the place of the flooder's longest idle.
		if status, err := flood[0].get("/healthz"); err == nil {
			t.Errorf("the flooder's longest idle connection was served (%d)", status)
		}
		for _, c := range flood[1:] {
			c.mustGet(t, "/healthz")
		}
	})
	t.Run("BusyClientGivesWayToItself", func(t *testing.T) {
		srv := guardStore(t).server()
		srv.MaxConns = 8 // 2 a client
		addr, l := serveHTTP(t, srv)
		var slow []*keepAlive
		for range 2 {
			slow = append(slow, slowBody(t, "127.0.0.1", addr))
		}
		waitPlaces(t, l, "127.0.0.1", 2, 0)
		dialKeepAlive(t, "127.0.0.1", addr).mustGet(t, "/healthz")
		// The third took the place of one of the client's own.
		waitPlaces(t, l, "127.0.0.1", 2, 1)
		if closed := closedWithin(slow[0], time.Second) || closedWithin(slow[1], time.Second); !closed {
			t.Error("both busy connections stayed open past the client's cap")
		}
		other := dialKeepAlive(t, "127.0.0.2", addr)
		other.mustGet(t, "/healthz", "/v1/vips")
	})
}

// slowBody connects from source and sends the headers of a request whose
// body never comes, which keeps the connection busy until the read
// timeout, as a slowloris does.
func slowBody(tb testing.TB, source, addr string) *keepAlive {
	tb.Helper()
	c := dialKeepAlive(tb, source, addr)
	fmt.Fprint(c, "POST /v1/vips HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	return c
}

// keepAlive is a client's HTTP/1.1 connection, kept open between requests.
type keepAlive struct {
	net.Conn
	br *bufio.Reader
}

// dialKeepAlive connects to addr from the loopback address source.
func dialKeepAlive(tb testing.TB, source, addr string) *keepAlive {
	tb.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &keepAlive{Conn: c, br: bufio.NewReader(c)}
}

// get sends a GET and reads the answer; an error when the server closed
// the connection.
func (c *keepAlive) get(path string) (int, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

func (c *keepAlive) mustGet(tb testing.TB, paths ...string) {
	tb.Helper()
	for _, path := range paths {
		if status, err := c.get(path); err != nil || status != 200 {
			tb.Fatalf("GET %s from %s: %d %v", path, c.LocalAddr(), status, err)
		}
	}
}

// waitPlaces waits until the client source holds held places under l's
// caps, idle of them idle.
func waitPlaces(tb testing.TB, l *limitListener, source string, held, idle int) {
	tb.Helper()
	client := l.prefixes.of(net.JoinHostPort(source, "0"))
	waitFor(tb, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		var h, i int
		for c := range l.conns {
			if c.client == client {
				h++
				if c.idle {
					i++
				}
			}
		}
		return h == held && i == idle
	})
}

// feed is an EventService that sends nothing.
type feed struct{}

func (*feed) Subscribe() (<-chan sdnlb.Event, func()) {
	ch := make(chan sdnlb.Event)
	return ch, func() {}
}

func waitFor(tb testing.TB, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatal("condition not met in 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServer_TooLargeBodySent sends a body over the limit at once, as a
// client that does not wait on Expect: 100-continue does, and only then
// reads: the answer must be the 413 naming the limit, not a reset.
func TestServer_TooLargeBodySent(t *testing.T) {
	addr, _ := serveHTTP(t, guardStore(t).server())
	for _, tt := range []struct {
		name, path, contentType string
		limit                   int
		chunked                 bool
	}{
		{"Declared", "/v1/vips", "application/json", maxBodyBytes, false},
		{"Chunked", "/v1/vips", "application/json", maxBodyBytes, true},
		{"Floodlight", "/quantum/v1.0/vips/", "application/json", maxBodyBytes, false},
		{"Configuration", "/v1/config", "application/yaml", MaxConfigBodyBytes, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
			body := bytes.Repeat([]byte(" "), tt.limit+4<<20)
			method := "POST"
			if tt.path == "/v1/config" {
				method = "PUT"
			}
			head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n", method, tt.path, tt.contentType)
			w := bufio.NewWriter(conn)
			if tt.chunked {
				fmt.Fprintf(w, "%sTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", head, len(body), body)
			} else {
				fmt.Fprintf(w, "%sContent-Length: %d\r\n\r\n%s", head, len(body), body)
			}
			if err := w.Flush(); err != nil {
				t.Fatalf("sending the body: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			assertError(t, response{Status: resp.StatusCode, Body: got}, 413, sdnlb.ETOOLARGE, "")
			if !strings.Contains(string(got), strconv.Itoa(tt.limit)) {
				t.Errorf("the error does not name the limit %d: %s", tt.limit, got)
			}
		})
	}
}
