// Package migrations holds the numbered SQL files that build the sdnlb
// schema. lbstore applies them in name order at Open, one transaction each.
// It is its own package because go:embed cannot reach a parent folder.
package migrations

import "embed"

// FS holds every migration file, named NNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
