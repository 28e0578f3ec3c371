package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/openapi"
)

// tryItOutOrder is the order in which the native operations' examples
// build on each other: creates, reads, updates, deletes.
var tryItOutOrder = []string{
	"vipCreate", "poolCreate", "memberCreate", "monitorCreate", "poolAssociateMonitor",
	"healthz", "readyz", "vipList", "vipGet", "poolList", "poolGet", "poolMembers", "memberList", "memberGet",
	"monitorList", "monitorGet", "stats", "poolStats", "events", "switchList", "switchFlows", "topology", "cluster", "bgp",
	"configExport", "configApply",
	"vipReplace", "vipPatch", "poolReplace", "poolPatch", "memberReplace", "memberPatch", "monitorReplace", "monitorPatch",
	"poolDissociateMonitor", "memberDelete", "monitorDelete", "poolDelete", "vipDelete",
}

// Swagger UI's "Try it out" sends, on the first click, what the spec
// suggests: path parameters from their x-example, the query parameters
// that have a default, and a body of its properties' examples (a property
// without one would go as a made-up "string" or 0). Every native operation
// must succeed with that, in tryItOutOrder, against a real server with a
// switch connected and the configuration the demo and the README's "By
// hand" create, which the examples must not collide with; each exchange is
// checked against the spec.
func TestOpenAPIExamples_TryItOut(t *testing.T) {
	var spec swagger2
	if err := json.Unmarshal(openapi.JSON, &spec); err != nil {
		t.Fatal(err)
	}
	ops := map[string]step{}
	for path, methods := range spec.Paths {
		for method, op := range methods {
			if slices.Contains(op.Tags, "floodlight") {
				continue
			}
			st, err := spec.tryItOut(strings.ToUpper(method), path, op)
			if err != nil {
				t.Errorf("%s %s: %v", method, path, err)
			}
			ops[op.OperationID] = st
			if !slices.Contains(tryItOutOrder, op.OperationID) {
				t.Errorf("%s %s: add %s to tryItOutOrder", method, path, op.OperationID)
			}
		}
	}

	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	c := newSpecChecker(t).client(t, m, "")
	waitOK(t, c.base+"/readyz")
	connectSwitch(t, m)
	createByHandConfig(t, m)
	for _, id := range tryItOutOrder {
		if id == "poolStats" {
			waitOK(t, c.base+ops[id].path)
		}
		c.do(ops[id])
	}
}

// createByHandConfig creates what the README's "By hand" does: the demo's
// ids (web, srv1…srv3, http) at the README's addresses.
func createByHandConfig(t *testing.T, m *Main) {
	t.Helper()
	call(t, m, "POST", "/v1/vips", map[string]any{"id": "web", "address": "10.0.0.100", "protocol": "TCP", "port": 80}, 201, nil)
	call(t, m, "POST", "/v1/pools", map[string]any{"id": "web", "vip_id": "web", "lb_method": "ROUND_ROBIN"}, 201, nil)
	for n := 1; n <= 3; n++ {
		call(t, m, "POST", "/v1/members", map[string]any{
			"id": fmt.Sprintf("srv%d", n), "pool_id": "web", "address": fmt.Sprintf("10.0.0.%d", n), "port": 80,
		}, 201, nil)
	}
	call(t, m, "POST", "/v1/monitors", map[string]any{"id": "http", "type": "HTTP", "url_path": "/health"}, 201, nil)
	call(t, m, "POST", "/v1/pools/web/monitors", map[string]any{"monitor_id": "http"}, 204, nil)
}

// swagger2 is as much of the Swagger 2.0 spec as Swagger UI reads to
// build a request.
type swagger2 struct {
	Paths       map[string]map[string]operation2 `json:"paths"`
	Definitions map[string]schema2               `json:"definitions"`
}

type operation2 struct {
	OperationID string   `json:"operationId"`
	Tags        []string `json:"tags"`
	Parameters  []struct {
		Name     string  `json:"name"`
		In       string  `json:"in"`
		Default  any     `json:"default"`
		XExample any     `json:"x-example"`
		Schema   schema2 `json:"schema"`
	} `json:"parameters"`
	Responses map[string]json.RawMessage `json:"responses"`
}

type schema2 struct {
	Ref        string             `json:"$ref"`
	AllOf      []schema2          `json:"allOf"`
	Example    any                `json:"example"`
	Properties map[string]schema2 `json:"properties"`
	Items      *schema2           `json:"items"`
	ReadOnly   bool               `json:"readOnly"`
}

// tryItOut builds the request Swagger UI sends on the first click, and
// wants the operation's success status.
func (s swagger2) tryItOut(method, path string, op operation2) (step, error) {
	st := step{method: method}
	query := url.Values{}
	for _, p := range op.Parameters {
		switch {
		case p.In == "path" && p.XExample == nil:
			return st, fmt.Errorf("path parameter %s has no x-example", p.Name)
		case p.In == "path":
			path = strings.ReplaceAll(path, "{"+p.Name+"}", fmt.Sprint(p.XExample))
		case p.In == "query" && p.Default != nil:
			query.Set(p.Name, fmt.Sprint(p.Default))
		case p.In == "body":
			body, err := s.sample(p.Schema)
			if err != nil {
				return st, fmt.Errorf("body: %w", err)
			}
			b, _ := json.Marshal(body)
			st.body = string(b)
		}
	}
	st.path = path
	if len(query) > 0 {
		st.path += "?" + query.Encode()
	}
	for code := range op.Responses {
		if strings.HasPrefix(code, "2") {
			fmt.Sscan(code, &st.status)
		}
	}
	return st, nil
}

// sample is the value Swagger UI makes of a schema: its example, an array
// of one sample of its items, or an object of its properties' samples
// (read-only ones left out).
func (s swagger2) sample(sc schema2) (any, error) {
	switch {
	case sc.Example != nil:
		return sc.Example, nil
	case sc.Ref != "":
		return s.sample(s.Definitions[strings.TrimPrefix(sc.Ref, "#/definitions/")])
	case len(sc.AllOf) == 1:
		return s.sample(sc.AllOf[0])
	case sc.Items != nil:
		item, err := s.sample(*sc.Items)
		return []any{item}, err
	case sc.Properties != nil:
		obj := map[string]any{}
		for name, prop := range sc.Properties {
			if prop.ReadOnly {
				continue
			}
			v, err := s.sample(prop)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			obj[name] = v
		}
		return obj, nil
	}
	return nil, fmt.Errorf("no example")
}

// The spec's examples of a configuration document's objects make a
// document that applies as written: the VIP, its pool with the monitor,
// and the member, created on an empty server and unchanged the second time.
func TestOpenAPIExamples_ApplyConfig(t *testing.T) {
	type schema struct {
		Ref        string `json:"$ref"`
		Properties map[string]struct {
			Example any `json:"example"`
			Items   struct {
				Ref string `json:"$ref"`
			} `json:"items"`
		} `json:"properties"`
	}
	var spec struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				In     string `json:"in"`
				Schema schema `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
		Definitions map[string]schema `json:"definitions"`
	}
	if err := json.Unmarshal(openapi.JSON, &spec); err != nil {
		t.Fatal(err)
	}
	definition := func(ref string) schema { return spec.Definitions[strings.TrimPrefix(ref, "#/definitions/")] }
	doc := map[string][]map[string]any{}
	for _, p := range spec.Paths["/v1/config"]["put"].Parameters {
		if p.In != "body" {
			continue
		}
		for list, prop := range definition(p.Schema.Ref).Properties {
			example := map[string]any{}
			for name, field := range definition(prop.Items.Ref).Properties {
				if field.Example != nil {
					example[name] = field.Example
				}
			}
			doc[list] = append(doc[list], example)
		}
	}
	if len(doc) != 4 {
		t.Fatalf("PUT /v1/config has examples for %d lists: %v", len(doc), doc)
	}
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	var diff sdnlb.ConfigDiff
	call(t, m, "PUT", "/v1/config", doc, 200, &diff)
	for _, k := range diff.Kinds() {
		if len(k.Diff.Created) != 1 {
			t.Errorf("%ss created: %+v", k.Kind, k.Diff.Created)
		}
	}
	call(t, m, "PUT", "/v1/config", doc, 200, &diff)
	if diff.Changed {
		t.Errorf("applied again: %+v", diff)
	}
}
