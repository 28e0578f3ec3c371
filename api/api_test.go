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
// headers set another Content-Type; headers go as "Name: value".
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
		req.Header.Set(name, strings.TrimSpace(value))
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

// rejection is a request that must be refused with status, code and field.
type rejection struct {
	name, method, path, body string
	headers                  []string
	status                   int
	code, field              string
}

// assertRejections sends each request to a server of store and checks the
// error and that the store holds what it held before: a refused request
// changes nothing, whether the API refused it decoding or the store
// validating.
func assertRejections(t *testing.T, store *memStore, reqs []rejection) {
	t.Helper()
	ts := MustServe(t, store.server())
	for _, rq := range reqs {
		t.Run(rq.name, func(t *testing.T) {
			before, _ := store.LoadConfig(context.Background())
			assertError(t, testRequest(t, ts, rq.method, rq.path, rq.body, rq.headers...), rq.status, rq.code, rq.field)
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
