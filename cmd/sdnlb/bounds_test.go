package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPIBounds holds the bounds the spec states on request bodies to
// what the server enforces: for every minimum, maximum, minLength,
// maxLength and enum of a field of a native PATCH body, a value just
// inside is accepted by both, and one just outside is refused by both,
// the server naming the field; a field the spec does not list is refused
// by both too (additionalProperties: false). Each PATCH goes to an object
// a PUT then puts back, so that one bound does not meet another's value.
func TestOpenAPIBounds(t *testing.T) {
	spec := newSpecChecker(t)
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	c := spec.client(t, m, "")
	waitOK(t, c.base+"/readyz")

	// The objects bear the ids and addresses of the spec's examples, so
	// that an example is a value just inside a minLength.
	targets := []struct{ path, post, fixture, schema string }{
		{"/v1/vips/shop", "/v1/vips", `{"id":"shop","address":"192.0.2.10"}`, "api.vipPatch"},
		{"/v1/pools/shop-pool", "/v1/pools", `{"id":"shop-pool","lb_method":"WEIGHTED_ROUND_ROBIN"}`, "api.poolEdit"},
		{"/v1/members/shop-1", "/v1/members", `{"id":"shop-1","pool_id":"shop-pool","address":"198.51.100.21"}`, "api.memberPatch"},
		{"/v1/monitors/shop-check", "/v1/monitors", `{"id":"shop-check","type":"HTTP","timeout":0.01}`, "api.monitorPatch"},
	}
	for _, tg := range targets {
		c.do(step{method: "POST", path: tg.post, body: tg.fixture, status: 201})
	}
	for _, tg := range targets {
		var replace map[string]any
		_ = json.Unmarshal([]byte(tg.fixture), &replace)
		delete(replace, "id")
		restore, _ := json.Marshal(replace)
		checked := 0
		for _, b := range fieldBounds("", spec.doc.Components.Schemas[tg.schema].Value) {
			if tg.schema == "api.monitorPatch" && b.field == "port" {
				continue // its bounds depend on the type: below
			}
			c.do(step{method: "PATCH", path: tg.path, body: b.inside, status: 200})
			c.do(step{method: "PUT", path: tg.path, body: string(restore), status: 200})
			c.do(step{method: "PATCH", path: tg.path, body: b.outside, status: 400, field: b.field, refused: true})
			checked++
		}
		if checked == 0 {
			t.Errorf("%s states no bounds", tg.schema)
		}
		c.do(step{method: "PATCH", path: tg.path, body: `{"nope":1}`, status: 400, field: "nope", refused: true})
	}
	// A monitor's port is 0 but for AGENT, which needs 1-65535: the spec
	// states the 0-65535 of them all.
	c.run([]step{
		{method: "POST", path: "/v1/monitors", body: `{"id":"agent","type":"AGENT","port":65535}`, status: 201},
		{method: "PATCH", path: "/v1/monitors/agent", body: `{"port":65536}`, status: 400, field: "port", refused: true},
		{method: "PATCH", path: "/v1/monitors/shop-check", body: `{"port":0}`, status: 200},
		{method: "PATCH", path: "/v1/monitors/shop-check", body: `{"port":-1}`, status: 400, field: "port", refused: true},
	})
}

// bound is one bound of a field: a body with a value just inside it and
// one with a value just outside.
type bound struct{ field, inside, outside string }

// fieldBounds lists the bounds the object schema s states on its fields,
// and on the fields of the objects among them, whose other fields take
// their examples. prefix is the path to s's fields ("" at the top).
func fieldBounds(prefix string, s *openapi3.Schema) []bound {
	var out []bound
	for name, ref := range s.Properties {
		p := ref.Value
		field := prefix + name
		if p.Type.Is("object") {
			for _, b := range fieldBounds(field+".", p) {
				out = append(out, bound{b.field, nest(name, p, b.inside), nest(name, p, b.outside)})
			}
			continue
		}
		body := func(v any) string {
			b, _ := json.Marshal(map[string]any{name: v})
			return string(b)
		}
		if p.Min != nil {
			out = append(out, bound{field, body(*p.Min), body(*p.Min - step1(p))})
		}
		if p.Max != nil {
			out = append(out, bound{field, body(*p.Max), body(*p.Max + step1(p))})
		}
		if p.MinLength > 0 {
			out = append(out, bound{field, body(p.Example), body(strings.Repeat("a", int(p.MinLength)-1))})
		}
		if p.MaxLength != nil {
			out = append(out, bound{field, body(strings.Repeat("a", int(*p.MaxLength))), body(strings.Repeat("a", int(*p.MaxLength)+1))})
		}
		if len(p.Enum) > 0 {
			out = append(out, bound{field, body(p.Example), body("NOPE")})
		}
	}
	return out
}

// step1 is the smallest step past a bound: 1 for an integer, a hundredth
// for a number (the finest any bound of the spec is stated in).
func step1(s *openapi3.Schema) float64 {
	if s.Type.Is("integer") {
		return 1
	}
	return 0.01
}

// nest wraps the one-field body inner, of the object field name whose
// schema is s, in that object, its other fields set to their examples.
func nest(name string, s *openapi3.Schema, inner string) string {
	obj := map[string]any{}
	for n, p := range s.Properties {
		obj[n] = p.Value.Example
	}
	_ = json.Unmarshal([]byte(inner), &obj)
	b, _ := json.Marshal(map[string]any{name: obj})
	return string(b)
}
