package api

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
	"github.com/sdnlb/sdnlb/openapi"
)

// A request without a required field is refused naming it, before
// anything is written.
func TestRequiredFields(t *testing.T) {
	vip := &sdnlb.VIP{ID: "v", Address: "10.0.0.100", Protocol: sdnlb.ProtocolTCP, Port: 80, ConnectionLimit: -1}
	pool := sdnlb.NewPool()
	pool.ID = "p"
	member := &sdnlb.Member{ID: "m", PoolID: "p", Address: "10.0.0.1", Weight: 1}
	monitor := sdnlb.NewMonitor()
	monitor.ID = "h"
	required := func(method, path, body, field string) routeCase {
		return routeCase{name: method + path + "/" + field, method: method, path: path, body: body, status: 400,
			check: func(t *testing.T, resp response) {
				assertError(t, resp, 400, sdnlb.EINVALID, field)
				var e errorResponse
				if err := json.Unmarshal(resp.Body, &e); err != nil || e.Error.Message != field+" is required" {
					t.Errorf("message %q, want %q", e.Error.Message, field+" is required")
				}
			}}
	}
	cases := []routeCase{
		required("POST", "/v1/vips", `{"port":80}`, "address"),
		required("POST", "/v1/vips", `{"address":"","port":80}`, "address"),
		required("PUT", "/v1/vips/v", `{"port":80}`, "address"),
		required("POST", "/v1/members", `{"address":"10.0.0.2"}`, "pool_id"),
		required("POST", "/v1/members", `{"pool_id":"p","port":80}`, "address"),
		required("PUT", "/v1/members/m", `{"port":80}`, "address"),
		required("POST", "/v1/monitors", `{"delay":5}`, "type"),
		required("PUT", "/v1/monitors/h", `{"delay":5}`, "type"),
		required("POST", "/v1/pools/p/monitors", `{}`, "monitor_id"),
		required("POST", "/v1/pools/p/monitors", `{"monitor_id":""}`, "monitor_id"),
	}
	assertRejections(t, mustMemStore(t, vip, pool, member, monitor), cases)
}

// The spec requires the fields of a request body the server requires: the
// generator and checkFields read the same tags by the same rule.
func TestRequestBodies_RequiredAsInSpec(t *testing.T) {
	bodies := map[string]any{
		"api.vipCreate": vipCreate{}, "api.vipReplace": vipReplace{}, "api.vipPatch": vipPatch{},
		"api.poolCreate": poolCreate{}, "api.poolEdit": poolEdit{},
		"api.memberCreate": memberCreate{}, "api.memberReplace": memberReplace{}, "api.memberPatch": memberPatch{},
		"api.monitorCreate": monitorCreate{}, "api.monitorReplace": monitorReplace{}, "api.monitorPatch": monitorPatch{},
		"api.associateRequest": associateRequest{}, "api.configDocument": configDocument{},
	}
	var spec struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				In     string
				Schema struct {
					Ref string `json:"$ref"`
				}
			}
		}
		Definitions map[string]struct{ Required []string }
	}
	if err := json.Unmarshal(openapi.JSON, &spec); err != nil {
		t.Fatal(err)
	}
	for path, ops := range spec.Paths {
		if strings.HasPrefix(path, compatPrefix) {
			continue // Floodlight's bodies are free-form objects
		}
		for method, op := range ops {
			for _, p := range op.Parameters {
				name := strings.TrimPrefix(p.Schema.Ref, "#/definitions/")
				if p.In != "body" {
					continue
				}
				body, ok := bodies[name]
				if !ok {
					t.Errorf("%s %s: the body %q is not in this test", method, path, name)
					continue
				}
				want := spec.Definitions[name].Required
				if got := requiredFields(reflect.TypeOf(body)); !slices.Equal(got, want) {
					t.Errorf("%s: the server requires %v, the spec %v", name, got, want)
				}
			}
		}
	}
}

// A key twice in one object, in any case, is refused naming it: the last
// would win, so {"vips":[A],"vips":[]} with prune would delete A.
func TestDuplicateKeysRefused(t *testing.T) {
	created := false
	vips := &mock.VIPService{CreateVIPFn: func(context.Context, *sdnlb.VIP) error { created = true; return nil }}
	ts := MustServe(t, &Server{VIPService: vips})
	for body, field := range map[string]string{
		`{"name":"web","address":"10.0.0.100","port":80,"port":81}`:                                                          "port",
		`{"name":"web","Name":"shop","address":"10.0.0.100","port":80}`:                                                      "Name",
		`{"name":"web","address":"10.0.0.100","port":80,"session_persistence":{"type":"SOURCE_IP","timeout":1,"TIMEOUT":2}}`: "session_persistence.TIMEOUT",
	} {
		assertError(t, testRequest(t, ts, "POST", "/v1/vips", body), http.StatusBadRequest, sdnlb.EINVALID, field)
	}
	if created {
		t.Error("a body with a duplicate key created a VIP")
	}
	if err := checkDuplicateKeys([]byte(`{"vips":[{"id":"a"}],"pools":[{"id":"a"},{"id":"b"}]}`)); err != nil {
		t.Errorf("the same key in different objects refused: %v", err)
	}
}
