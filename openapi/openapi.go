// Package openapi holds the OpenAPI (Swagger 2.0) spec of the sdnlb API,
// generated from the swag comments on the api handlers (internal/specgen)
// and committed. Regenerate it with go generate ./api; the package test
// fails while it is stale.
package openapi

import _ "embed"

// JSON is the spec, served at /swagger/doc.json.
//
//go:embed swagger.json
var JSON []byte
