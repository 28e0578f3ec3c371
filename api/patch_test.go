package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// A PATCH body is a JSON merge patch: null puts a field back to its
// default, the value a new object has, and is refused on a field a create
// must give, changing nothing.
func TestServer_PatchNullResets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    [][2]string // POSTs, path and body, the last one making the object
		fresh    any
		fields   []string // each differs from its default after setup
		required []string
	}{
		{
			name: "VIP",
			setup: [][2]string{
				{"/v1/pools", `{"id":"p","dispatch":"CONTROLLER"}`},
				{"/v1/vips", `{"id":"v","address":"192.0.2.10","name":"n","description":"d","port":80,"pool_id":"p","connection_limit":10,"session_persistence":{"type":"SOURCE_IP","timeout":60},"admin_state_up":false}`},
			},
			fresh:    sdnlb.NewVIP(),
			fields:   []string{"name", "description", "port", "pool_id", "connection_limit", "session_persistence", "admin_state_up"},
			required: []string{"address"},
		},
		{
			name:   "Pool",
			setup:  [][2]string{{"/v1/pools", `{"id":"p","name":"n","description":"d","lb_method":"RANDOM","dispatch":"CONTROLLER","forwarding":"DSR","protocol":"UDP","admin_state_up":false,"client_ipv6_prefix":64}`}},
			fresh:  sdnlb.NewPool(),
			fields: []string{"name", "description", "lb_method", "dispatch", "forwarding", "protocol", "admin_state_up", "client_ipv6_prefix"},
		},
		{
			name:   "PoolHashKey",
			setup:  [][2]string{{"/v1/pools", `{"id":"p","lb_method":"CONSISTENT_HASH","hash_key":"CLIENT"}`}},
			fresh:  sdnlb.NewPool(),
			fields: []string{"hash_key"},
		},
		{
			name:   "PoolSlowStart",
			setup:  [][2]string{{"/v1/pools", `{"id":"p","lb_method":"WEIGHTED_ROUND_ROBIN","slow_start":30}`}},
			fresh:  sdnlb.NewPool(),
			fields: []string{"slow_start"},
		},
		{
			name: "Member",
			setup: [][2]string{
				{"/v1/pools", `{"id":"p"}`},
				{"/v1/members", `{"id":"m","pool_id":"p","address":"192.0.2.21","port":8080,"weight":5,"capacity":100,"admin_state_up":false}`},
			},
			fresh:    sdnlb.NewMember(),
			fields:   []string{"port", "weight", "capacity", "admin_state_up"},
			required: []string{"pool_id", "address"},
		},
		{
			name:     "Monitor",
			setup:    [][2]string{{"/v1/monitors", `{"id":"h","type":"HTTPS","name":"n","delay":10,"timeout":3,"max_retries":5,"rise":4,"http_method":"HEAD","url_path":"/health","expected_codes":"204","tls_verify":true,"admin_state_up":false}`}},
			fresh:    sdnlb.NewMonitor(),
			fields:   []string{"name", "delay", "timeout", "max_retries", "rise", "http_method", "url_path", "expected_codes", "tls_verify", "admin_state_up"},
			required: []string{"type"},
		},
	} {
		setup := func(t *testing.T) (*httptest.Server, string) {
			ts := MustServe(t, newMemStore().server())
			var path string
			for _, post := range tc.setup {
				resp := testRequest(t, ts, "POST", post[0], post[1])
				if resp.Status != http.StatusCreated {
					t.Fatalf("POST %s: %d %s", post[0], resp.Status, resp.Body)
				}
				path = resp.Header.Get("Location")
			}
			return ts, path
		}
		defaults := jsonFields(t, mustJSON(t, tc.fresh))
		for _, field := range tc.fields {
			t.Run(tc.name+"/"+field, func(t *testing.T) {
				ts, path := setup(t)
				if before := getFields(t, ts, path); reflect.DeepEqual(before[field], defaults[field]) {
					t.Fatalf("%s is already its default %s: the case tests nothing", field, before[field])
				}
				resp := testRequest(t, ts, "PATCH", path, `{"`+field+`":null}`, "Content-Type: application/merge-patch+json")
				if resp.Status != http.StatusOK {
					t.Fatalf("PATCH %s null: %d %s", field, resp.Status, resp.Body)
				}
				if got := getFields(t, ts, path)[field]; !reflect.DeepEqual(got, defaults[field]) {
					t.Errorf("after PATCH %s null: %s, want the default %s", field, got, defaults[field])
				}
			})
		}
		for _, field := range tc.required {
			t.Run(tc.name+"/ErrRequired/"+field, func(t *testing.T) {
				ts, path := setup(t)
				before := getFields(t, ts, path)
				assertError(t, testRequest(t, ts, "PATCH", path, `{"admin_state_up":true,"`+field+`":null}`), http.StatusBadRequest, sdnlb.EINVALID, field)
				if after := getFields(t, ts, path); !reflect.DeepEqual(after, before) {
					t.Errorf("a refused PATCH changed the object:\n%s\nwas\n%s", after, before)
				}
			})
		}
	}
}

// A null dispatch is the dispatch no client asked for, which follows the
// method: CONTROLLER for a method the switch cannot pick by, not SWITCH.
func TestServer_PatchNullDispatchFollowsMethod(t *testing.T) {
	ts := MustServe(t, newMemStore().server())
	if resp := testRequest(t, ts, "POST", "/v1/pools", `{"id":"p","lb_method":"LEAST_CONNECTIONS","dispatch":"CONTROLLER"}`); resp.Status != http.StatusCreated {
		t.Fatalf("POST: %d %s", resp.Status, resp.Body)
	}
	resp := testRequest(t, ts, "PATCH", "/v1/pools/p", `{"dispatch":null}`)
	if resp.Status != http.StatusOK {
		t.Fatalf("PATCH dispatch null: %d %s", resp.Status, resp.Body)
	}
	if got := string(getFields(t, ts, "/v1/pools/p")["dispatch"]); got != `"CONTROLLER"` {
		t.Errorf("dispatch %s, want CONTROLLER", got)
	}
}

// Keys match fields without regard to case, as for any other value.
func TestServer_PatchNullCaseVariant(t *testing.T) {
	ts := MustServe(t, newMemStore().server())
	testRequest(t, ts, "POST", "/v1/vips", `{"id":"v","address":"192.0.2.10","description":"d"}`)
	if resp := testRequest(t, ts, "PATCH", "/v1/vips/v", `{"Description":null}`); resp.Status != http.StatusOK {
		t.Fatalf("PATCH: %d %s", resp.Status, resp.Body)
	}
	if got := string(getFields(t, ts, "/v1/vips/v")["description"]); got != `""` {
		t.Errorf("description %s, want reset", got)
	}
	assertError(t, testRequest(t, ts, "PATCH", "/v1/vips/v", `{"ADDRESS":null}`), http.StatusBadRequest, sdnlb.EINVALID, "address")
}

func getFields(tb testing.TB, ts *httptest.Server, path string) map[string]json.RawMessage {
	tb.Helper()
	resp := testRequest(tb, ts, "GET", path, "")
	if resp.Status != http.StatusOK {
		tb.Fatalf("GET %s: %d %s", path, resp.Status, resp.Body)
	}
	fields := jsonFields(tb, resp.Body)
	delete(fields, "updated_at")
	return fields
}

func jsonFields(tb testing.TB, b []byte) map[string]json.RawMessage {
	tb.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		tb.Fatal(err)
	}
	return fields
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
