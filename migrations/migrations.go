// Package migrations holds the numbered SQL files that build the sdnlb
// schema. lbstore applies them in name order at Open, one transaction each.
// A file named NNNN_description.sql applies to SQLite and PostgreSQL; where
// their SQL differs, a version has one file per database instead,
// NNNN_description.sqlite.sql and NNNN_description.postgres.sql. It is its
// own package because go:embed cannot reach a parent folder.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
