package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sdnlb/sdnlb"
)

// webDocument is a configuration document with every kind of object.
const webDocument = `{
	"monitors": [{"id": "http", "type": "HTTP", "delay": 1, "timeout": 0.5, "url_path": "/health"}],
	"vips": [{"id": "web", "name": "web", "address": "10.0.0.100", "port": 80,
		"session_persistence": {"type": "SOURCE_IP", "timeout": 60}}],
	"pools": [{"id": "web", "vip_id": "web", "lb_method": "LEAST_CONNECTIONS", "monitor_ids": ["http"]}],
	"members": [{"id": "m1", "pool_id": "web", "address": "10.0.0.1", "port": 8080},
		{"id": "m2", "pool_id": "web", "address": "10.0.0.2", "port": 8080, "weight": 3}]
}`

// mustExport reads GET /v1/config.
func mustExport(tb testing.TB, m *Main) string {
	tb.Helper()
	status, body := send(tb, m, "GET", "/v1/config", "", "")
	if status != http.StatusOK {
		tb.Fatalf("GET /v1/config: %d %s", status, body)
	}
	return body
}

// The whole path on a real server and store: apply, apply again, change,
// dry run, prune, a refused document, and the export's round trip.
func TestMain_ApplyConfig(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	var diff sdnlb.ConfigDiff
	call(t, m, "PUT", "/v1/config", rawJSON(webDocument), 200, &diff)
	if !diff.Changed || len(diff.Members.Created) != 2 || len(diff.Pools.Created) != 1 {
		t.Fatalf("first apply: %+v", diff)
	}
	var pool sdnlb.Pool
	call(t, m, "GET", "/v1/pools/web", nil, 200, &pool)
	if pool.VIPID != "web" || pool.Dispatch != sdnlb.DispatchController || len(pool.MonitorIDs) != 1 {
		t.Fatalf("pool %+v", pool)
	}
	exported := mustExport(t, m)

	t.Run("NoOp", func(t *testing.T) {
		call(t, m, "PUT", "/v1/config?prune=true", rawJSON(webDocument), 200, &diff)
		if diff.Changed || diff.Members.Unchanged != 2 {
			t.Fatalf("applied again: %+v", diff)
		}
		if got := mustExport(t, m); got != exported {
			t.Fatalf("export after a no-op\n%s\nbefore\n%s", got, exported)
		}
	})
	t.Run("DryRunThenApply", func(t *testing.T) {
		changed := strings.Replace(webDocument, `"weight": 3`, `"weight": 5`, 1)
		call(t, m, "PUT", "/v1/config?dry_run=true", rawJSON(changed), 200, &diff)
		if !diff.DryRun || len(diff.Members.Updated) != 1 || diff.Members.Updated[0].Fields[0].Field != "weight" {
			t.Fatalf("dry run: %+v", diff)
		}
		if got := mustExport(t, m); got != exported {
			t.Fatal("the dry run changed the configuration")
		}
		call(t, m, "PUT", "/v1/config", rawJSON(changed), 200, &diff)
		f := diff.Members.Updated[0].Fields[0]
		if diff.DryRun || f.Old != float64(3) || f.New != float64(5) {
			t.Fatalf("apply: %+v", diff)
		}
		var member sdnlb.Member
		call(t, m, "GET", "/v1/members/m2", nil, 200, &member)
		if member.Weight != 5 {
			t.Fatalf("member %+v", member)
		}
		call(t, m, "PUT", "/v1/config", rawJSON(webDocument), 200, &diff)
		exported = mustExport(t, m)
	})
	t.Run("ErrNothingApplied", func(t *testing.T) {
		// A new VIP, and a member the store refuses: neither is written.
		bad := strings.Replace(webDocument, `"port": 80,`, `"port": 80}, {"id": "api", "address": "10.0.0.101", "port": 443,`, 1)
		bad = strings.Replace(bad, `"weight": 3`, `"weight": 300`, 1)
		status, body := send(t, m, "PUT", "/v1/config", "application/json", bad)
		if status != http.StatusBadRequest || !strings.Contains(body, `"field":"members[1].weight"`) || !strings.Contains(body, "members[1] (id m2)") {
			t.Fatalf("%d %s", status, body)
		}
		if got := mustExport(t, m); got != exported {
			t.Fatal("a refused document changed the configuration")
		}
	})
	t.Run("Prune", func(t *testing.T) {
		call(t, m, "POST", "/v1/vips", map[string]any{"id": "extra", "address": "10.0.0.200", "port": 80}, 201, nil)
		call(t, m, "PUT", "/v1/config", rawJSON(webDocument), 200, &diff)
		if diff.Changed {
			t.Fatalf("without prune: %+v", diff)
		}
		call(t, m, "PUT", "/v1/config?prune=true", rawJSON(webDocument), 200, &diff)
		if len(diff.VIPs.Deleted) != 1 || diff.VIPs.Deleted[0].ID != "extra" {
			t.Fatalf("prune: %+v", diff)
		}
		call(t, m, "GET", "/v1/vips/extra", nil, 404, nil)
	})
	t.Run("RoundTrip", func(t *testing.T) {
		// The export, as YAML, on an empty server exports the same.
		empty := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
		yamlDoc, err := yaml.JSONToYAML([]byte(exported))
		if err != nil {
			t.Fatal(err)
		}
		status, body := send(t, empty, "PUT", "/v1/config", "application/yaml", string(yamlDoc))
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		if got := mustExport(t, empty); got != exported {
			t.Fatalf("export on the other server\n%s\nwant\n%s", got, exported)
		}
	})
}

// rawJSON is a request body sent as it is.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return bytes.TrimSpace([]byte(r)), nil }

// FuzzApplyConfig sends a document to PUT /v1/config on a real server and
// store: whatever the body, the answer is no 5xx, and a 4xx is the JSON
// error body and leaves the configuration as it was. `go test` runs the
// seeds; `go test -fuzz FuzzApplyConfig ./cmd/sdnlb` looks for more.
func FuzzApplyConfig(f *testing.F) {
	for _, seed := range []string{
		webDocument,
		`{}`, `null`, `[]`, `{"vips":null}`, `{"vips":[null]}`, `{"vips":[1]}`,
		`{"vips":[{"address":"10.0.0.1"},{"address":"10.0.0.1"}]}`,
		`{"members":[{"pool_id":"nope","address":"10.0.0.1"}]}`,
		`{"pools":[{"id":"p","vip_id":"p","monitor_ids":["p","p"]}],"vips":[{"id":"p","address":"10.0.0.9","pool_id":"p"}]}`,
		`{"monitors":[{"name":"a","type":"TCP"},{"name":"a","type":"TCP"}]}`,
		`{"monitors":[{"id":"h","type":"HTTP","delay":"NaN"}]}`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	m := MustRunMain(f, filepath.Join(f.TempDir(), "sdnlb.db"))
	f.Fuzz(func(t *testing.T, body string, prune bool) {
		before := mustExport(t, m)
		path := "/v1/config"
		if prune {
			path += "?prune=true"
		}
		status, answer := send(t, m, "PUT", path, "application/json", body)
		switch {
		case status >= 500:
			t.Fatalf("PUT %s %q: %d %s", path, body, status, answer)
		case status >= 400:
			var e struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal([]byte(answer), &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("PUT %s %q: %d with body %s", path, body, status, answer)
			}
			if after := mustExport(t, m); after != before {
				t.Fatalf("PUT %s %q: %d %s changed the configuration", path, body, status, answer)
			}
		}
	})
}
