package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

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
