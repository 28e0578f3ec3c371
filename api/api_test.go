package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// response is what a test request got back.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// MustServe starts s on an httptest server closed with the test.
func MustServe(tb testing.TB, s *Server) *httptest.Server {
	tb.Helper()
	ts := httptest.NewServer(s.Handler())
	tb.Cleanup(ts.Close)
	return ts
}

// testRequest sends a request. A body is sent as application/json unless
// headers set another Content-Type; headers go as "Name: value", and
// "Name:" leaves the header out.
func testRequest(tb testing.TB, ts *httptest.Server, method, path, body string, headers ...string) response {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		tb.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		if value = strings.TrimSpace(value); value == "" {
			req.Header.Del(name)
			continue
		}
		req.Header.Set(name, value)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// assertError checks the status and the error body's code and field.
func assertError(tb testing.TB, got response, status int, code, field string) {
	tb.Helper()
	if got.Status != status {
		tb.Fatalf("status = %d, want %d; body %s", got.Status, status, got.Body)
	}
	var body struct {
		Error map[string]string `json:"error"`
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		tb.Fatalf("error body %q: %v", got.Body, err)
	}
	if body.Error["code"] != code {
		tb.Errorf("code = %q, want %q; body %s", body.Error["code"], code, got.Body)
	}
	if body.Error["field"] != field {
		tb.Errorf("field = %q, want %q; body %s", body.Error["field"], field, got.Body)
	}
	if body.Error["message"] == "" {
		tb.Errorf("empty message; body %s", got.Body)
	}
	for k := range body.Error {
		if k != "code" && k != "message" && k != "field" {
			tb.Errorf("unexpected key %q in error body %s", k, got.Body)
		}
	}
}

// decodeBody unmarshals a successful response.
func decodeBody(tb testing.TB, got response, status int, v any) {
	tb.Helper()
	if got.Status != status {
		tb.Fatalf("status = %d, want %d; body %s", got.Status, status, got.Body)
	}
	if ct := got.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		tb.Errorf("Content-Type = %q", ct)
	}
	dec := json.NewDecoder(bytes.NewReader(got.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		tb.Fatalf("body %s: %v", got.Body, err)
	}
}

// routeCase is one request and what it must get: an error of status, code
// and field; or status and, when set, the exact body (trailing newline
// ignored) or what check finds in the response.
type routeCase struct {
	name, method, path, body string
	headers                  []string
	status                   int
	code, field              string
	want                     string
	check                    func(t *testing.T, resp response)
}

// assert sends the request to ts and checks the answer.
func (c routeCase) assert(t *testing.T, ts *httptest.Server) {
	t.Helper()
	resp := testRequest(t, ts, c.method, c.path, c.body, c.headers...)
	switch {
	case c.code != "":
		assertError(t, resp, c.status, c.code, c.field)
		if c.check != nil {
			c.check(t, resp)
		}
	case resp.Status != c.status:
		t.Fatalf("status %d, want %d: %s", resp.Status, c.status, resp.Body)
	case c.check != nil:
		c.check(t, resp)
	case c.want != "":
		if got := strings.TrimSuffix(string(resp.Body), "\n"); got != c.want {
			t.Errorf("body\n got %s\nwant %s", got, c.want)
		}
	}
}

// runRouteCases runs each case as a subtest against srv.
func runRouteCases(t *testing.T, srv *Server, cases []routeCase) {
	t.Helper()
	ts := MustServe(t, srv)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.assert(t, ts) })
	}
}

// decoded returns a check that decodes the JSON body into a T for check.
func decoded[T any](check func(t *testing.T, v *T)) func(*testing.T, response) {
	return func(t *testing.T, resp response) {
		t.Helper()
		var v T
		decodeBody(t, resp, resp.Status, &v)
		check(t, &v)
	}
}

// assertRejections runs each case against a server of store and checks
// that the store holds what it held before: a refused request changes
// nothing, whether the API refused it decoding or the store validating.
func assertRejections(t *testing.T, store *memStore, cases []routeCase) {
	t.Helper()
	ts := MustServe(t, store.server())
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, _ := store.LoadConfig(context.Background())
			c.assert(t, ts)
			if after, _ := store.LoadConfig(context.Background()); !reflect.DeepEqual(before, after) {
				t.Errorf("the refused request changed the store:\n before %+v\n after  %+v", before, after)
			}
		})
	}
}

// errorString is an error that is not an *sdnlb.Error: an internal one.
type errorString string

func (e errorString) Error() string { return string(e) }

// newTestLogger logs text into w.
func newTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// syncBuffer is a log sink the server goroutines and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
