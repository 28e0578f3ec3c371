package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"testing"
)

// fuzzRoutes are the routes whose bodies FuzzWriteBody sends: every write
// that decodes a body, native and Floodlight, against the objects of
// guardStore.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/v1/vips"}, {"PUT", "/v1/vips/v"}, {"PATCH", "/v1/vips/v"},
	{"POST", "/v1/pools"}, {"PUT", "/v1/pools/p"}, {"PATCH", "/v1/pools/p"},
	{"POST", "/v1/pools/p/monitors"},
	{"POST", "/v1/members"}, {"PUT", "/v1/members/m"}, {"PATCH", "/v1/members/m"},
	{"POST", "/v1/monitors"}, {"PUT", "/v1/monitors/h"}, {"PATCH", "/v1/monitors/h"},
	{"POST", "/quantum/v1.0/vips/"}, {"PUT", "/quantum/v1.0/vips/v/"},
	{"POST", "/quantum/v1.0/pools/"}, {"PUT", "/quantum/v1.0/pools/p/"},
	{"PUT", "/quantum/v1.0/pools/p/health_monitors/"},
	{"POST", "/quantum/v1.0/members/"}, {"PUT", "/quantum/v1.0/members/m/"},
	{"POST", "/quantum/v1.0/health_monitors/"}, {"PUT", "/quantum/v1.0/health_monitors/h/"},
}

// FuzzWriteBody sends a body to one of the write routes through the real
// router: whatever the body, the answer is no 5xx, and a 4xx is the JSON
// error body and leaves the store as it was. `go test` runs the committed
// corpus in testdata/fuzz/FuzzWriteBody; `go test -fuzz FuzzWriteBody`
// looks for more.
func FuzzWriteBody(f *testing.F) {
	f.Add(uint8(0), []byte(`{"address":"10.0.0.5","port":80}`))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		store := guardStore(t)
		h := store.server().Handler()
		before := mustConfig(t, store)

		req := httptest.NewRequest(rt.method, rt.path, bytes.NewReader(body))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", rt.method, rt.path, body, rec.Code, rec.Body)
		}
		if rec.Code < 400 {
			return
		}
		var e errorResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
			t.Fatalf("%s %s %q: %d with body %s", rt.method, rt.path, body, rec.Code, rec.Body)
		}
		if after := mustConfig(t, store); !reflect.DeepEqual(before, after) {
			t.Fatalf("%s %s %q: %d %s changed the store", rt.method, rt.path, body, rec.Code, rec.Body)
		}
	})
}
