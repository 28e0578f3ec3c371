package openapi

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/sdnlb/sdnlb/internal/specgen"
)

// TestSpecIsFresh generates the spec from the handlers' comments as
// go generate ./api does and compares it with the committed files.
func TestSpecIsFresh(t *testing.T) {
	fresh, err := specgen.Generate("..")
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	for _, name := range specgen.Files {
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh[name], committed) {
			t.Errorf("openapi/%s is stale; regenerate it: go generate ./api", name)
		}
	}
}

func TestJSON(t *testing.T) {
	var spec struct {
		Swagger string                     `json:"swagger"`
		Paths   map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(JSON, &spec); err != nil {
		t.Fatalf("embedded spec: %v", err)
	}
	if spec.Swagger != "2.0" {
		t.Errorf("swagger = %q", spec.Swagger)
	}
	for _, p := range []string{"/v1/vips", "/v1/vips/{id}", "/v1/events", "/quantum/v1.0/vips/", "/healthz"} {
		if _, ok := spec.Paths[p]; !ok {
			t.Errorf("the spec lacks %s", p)
		}
	}
}

// Every operation has an operationId of its own, which client generators
// and linters need.
func TestOperationIDs(t *testing.T) {
	var spec struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(JSON, &spec); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for path, ops := range spec.Paths {
		for method, op := range ops {
			where := method + " " + path
			switch prev, dup := seen[op.OperationID]; {
			case op.OperationID == "":
				t.Errorf("%s has no operationId", where)
			case dup:
				t.Errorf("%s and %s share operationId %q", where, prev, op.OperationID)
			}
			seen[op.OperationID] = where
		}
	}
}
