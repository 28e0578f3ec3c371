package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/openapi"
)

// The request examples of the spec work as written: Swagger UI's "Try it
// out" sends them on the first click, in this order, to a real server.
func TestOpenAPIExamples_CreateInOrder(t *testing.T) {
	var spec struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				In     string `json:"in"`
				Schema struct {
					Ref string `json:"$ref"`
				} `json:"schema"`
			} `json:"parameters"`
		} `json:"paths"`
		Definitions map[string]struct {
			Properties map[string]struct {
				Example any `json:"example"`
			} `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(openapi.JSON, &spec); err != nil {
		t.Fatal(err)
	}
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	for _, path := range []string{"/v1/vips", "/v1/pools", "/v1/members", "/v1/monitors"} {
		example := map[string]any{}
		for _, p := range spec.Paths[path]["post"].Parameters {
			if p.In != "body" {
				continue
			}
			def := spec.Definitions[strings.TrimPrefix(p.Schema.Ref, "#/definitions/")]
			for name, prop := range def.Properties {
				if prop.Example != nil {
					example[name] = prop.Example
				}
			}
		}
		if len(example) == 0 {
			t.Fatalf("POST %s has no example body", path)
		}
		call(t, m, "POST", path, example, 201, nil)
	}
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
