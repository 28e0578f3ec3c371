// Package specgen generates the OpenAPI spec in openapi/ from the swag
// comments of the api package and the root package's types: swag parses
// them, and the steps swag cannot express are applied to its result (see
// optionalBearer and inlineNullable). `go generate ./api` writes the spec with it, and the
// openapi package's test compares the committed files with its output.
package specgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-openapi/spec"
	"github.com/swaggo/swag"
	"sigs.k8s.io/yaml"
)

// Files are the spec's files, as Generate writes them into its directory.
var Files = []string{"swagger.json", "swagger.yaml"}

// Generate parses the repository at root and returns the spec's files,
// named as in Files.
//
// Fields of the types a schema describes are required unless tagged
// validate:"optional" or json omitempty: encoding/json writes every other
// field, so a response has them all, and the api package requires the
// request fields swag marks required (see its checkFields).
func Generate(root string) (map[string][]byte, error) {
	p := swag.New(
		swag.ParseUsingGoList(true),
		swag.SetCollectionFormat("csv"),
		swag.SetDebugger(log.New(io.Discard, "", 0)),
	)
	p.PropNamingStrategy = swag.CamelCase
	p.RequiredByDefault = true
	dirs := []string{filepath.Join(root, "api"), root}
	if err := p.ParseAPIMultiSearchDir(dirs, "doc.go", 100); err != nil {
		return nil, fmt.Errorf("parse the swag comments: %w", err)
	}
	s := p.GetSwagger()
	optionalBearer(s)
	if err := inlineNullable(s); err != nil {
		return nil, err
	}
	closeRequestBodies(s)

	compact, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	indented, err := json.MarshalIndent(s, "", "    ")
	if err != nil {
		return nil, err
	}
	yml, err := yaml.JSONToYAML(compact)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{"swagger.json": indented, "swagger.yaml": yml}, nil
}

// Write generates the spec of the repository at root into dir.
func Write(root, dir string) error {
	files, err := Generate(root)
	if err != nil {
		return err
	}
	for _, name := range Files {
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// optionalBearer lets every operation that takes the bearer token be
// called without one too: sdnlb asks for it only when it runs with
// --api-token (and on reads only with --auth-reads). Swagger 2.0 says so
// with an empty requirement next to the token's, [{}, {Bearer: []}], which
// swag's @Security cannot write.
func optionalBearer(s *spec.Swagger) {
	for _, item := range s.Paths.Paths {
		for _, op := range []*spec.Operation{item.Get, item.Put, item.Post, item.Delete, item.Options, item.Head, item.Patch} {
			if op != nil && len(op.Security) == 1 && isBearerOnly(op.Security[0]) {
				op.Security = append([]map[string][]string{{}}, op.Security...)
			}
		}
	}
}

func isBearerOnly(req map[string][]string) bool {
	scopes, ok := req["Bearer"]
	return ok && len(req) == 1 && len(scopes) == 0
}

// inlineNullable gives each nullable field that swag writes as a
// reference, {allOf: [$ref], x-nullable: true}, the referenced schema
// inline with x-nullable next to its type. The wrapper has no type, and
// tools read x-nullable as OpenAPI 3's nullable, which adds null only to
// a type beside it (3.0.3): Prism then checked null against the
// referenced object schema and refused every VIP without persistence. A
// definition that nothing references any more goes.
func inlineNullable(s *spec.Swagger) error {
	inlined := map[string]bool{}
	for _, def := range s.Definitions {
		for name, prop := range def.Properties {
			if nullable, _ := prop.Extensions.GetBool("x-nullable"); !nullable || len(prop.AllOf) != 1 || len(prop.Type) > 0 {
				continue
			}
			ref := prop.AllOf[0].Ref.String()
			target, ok := s.Definitions[strings.TrimPrefix(ref, "#/definitions/")]
			if !ok {
				return fmt.Errorf("nullable field %s: no definition %s", name, ref)
			}
			target.Description = prop.Description
			target.Extensions = spec.Extensions{}
			for k, v := range prop.Extensions {
				target.Extensions[k] = v
			}
			def.Properties[name] = target
			inlined[ref] = true
		}
	}
	all, err := json.Marshal(s)
	if err != nil {
		return err
	}
	for ref := range inlined {
		if !bytes.Contains(all, []byte(`"`+ref+`"`)) {
			delete(s.Definitions, strings.TrimPrefix(ref, "#/definitions/"))
		}
	}
	return nil
}

// closeRequestBodies gives every object schema of a native request body,
// nested ones and the definitions they reference included,
// additionalProperties: false: the api package decodes those bodies with
// unknown fields refused (decodeStrict), which swag cannot say. The
// Floodlight routes' bodies are free-form objects and stay open.
func closeRequestBodies(s *spec.Swagger) {
	closed := map[string]bool{}
	var closeSchema func(schema *spec.Schema)
	closeSchema = func(schema *spec.Schema) {
		if ref := strings.TrimPrefix(schema.Ref.String(), "#/definitions/"); ref != "" {
			if def, ok := s.Definitions[ref]; ok && !closed[ref] {
				closed[ref] = true
				closeSchema(&def)
				s.Definitions[ref] = def
			}
			return
		}
		if schema.Type.Contains("object") && len(schema.Properties) > 0 {
			schema.AdditionalProperties = &spec.SchemaOrBool{Allows: false}
		}
		for name, prop := range schema.Properties {
			closeSchema(&prop)
			schema.Properties[name] = prop
		}
		if schema.Items != nil && schema.Items.Schema != nil {
			closeSchema(schema.Items.Schema)
		}
		for i := range schema.AllOf {
			closeSchema(&schema.AllOf[i])
		}
	}
	for path, item := range s.Paths.Paths {
		if strings.HasPrefix(path, "/quantum/") {
			continue
		}
		for _, op := range []*spec.Operation{item.Put, item.Post, item.Patch} {
			if op == nil {
				continue
			}
			for _, p := range op.Parameters {
				if p.In == "body" && p.Schema != nil {
					closeSchema(p.Schema)
				}
			}
		}
	}
}
