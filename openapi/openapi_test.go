package openapi

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"os"
	"slices"
	"strings"
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

// Every address in the spec, examples and descriptions alike, is in a
// range set aside for documentation (RFC 5737, RFC 3849), so that Swagger
// UI's "Try it out" never makes sdnlb probe a reader's own network.
// Datapath ids (00:00:00:00:00:00:00:01) read as IPv6 and are skipped.
func TestAddressesAreForDocumentation(t *testing.T) {
	docs := []netip.Prefix{
		netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32"),
	}
	var spec any
	if err := json.Unmarshal(JSON, &spec); err != nil {
		t.Fatal(err)
	}
	notAddress := func(r rune) bool { return !strings.ContainsRune("0123456789abcdefABCDEF.:", r) }
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case string:
			for _, word := range strings.FieldsFunc(v, notAddress) {
				if isDPID(word) {
					continue
				}
				a, err := netip.ParseAddr(strings.Trim(word, ".:"))
				if err != nil {
					ap, perr := netip.ParseAddrPort(word)
					if perr != nil {
						continue
					}
					a = ap.Addr()
				}
				if !slices.ContainsFunc(docs, func(p netip.Prefix) bool { return p.Contains(a) }) {
					t.Errorf("%s, in %q, is no documentation address", a, v)
				}
			}
		}
	}
	walk(spec)
}

func isDPID(word string) bool {
	groups := strings.Split(word, ":")
	return len(groups) == 8 && !slices.ContainsFunc(groups, func(g string) bool { return len(g) != 2 })
}
