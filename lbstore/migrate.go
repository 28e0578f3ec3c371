package lbstore

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
)

// migration is one numbered SQL file.
type migration struct {
	version int
	name    string
}

// migrate applies the migrations newer than the recorded schema version in
// name order, each in its own transaction together with its record, and
// refuses a database written by a newer sdnlb.
func (db *DB) migrate(ctx context.Context) error {
	if err := db.migrationTx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at TEXT NOT NULL
		)`)
		return err
	}); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	list, err := readMigrations(db.Migrations, db.dialect.name)
	if err != nil {
		return err
	}
	latest := 0
	if len(list) > 0 {
		latest = list[len(list)-1].version
	}
	var current int
	if err := db.write.GetContext(ctx, &current, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > latest {
		return fmt.Errorf("database schema version %d is newer than this sdnlb supports (%d); upgrade sdnlb", current, latest)
	}
	for _, m := range list {
		if err := db.applyMigration(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// migrationTx runs f in a write transaction that holds the dialect's
// migration lock: processes starting at once take turns, and each finds
// what the one before it applied.
func (db *DB) migrationTx(ctx context.Context, f func(*sqlx.Tx) error) error {
	tx, err := db.write.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if db.dialect.migrationLock != "" {
		if _, err := tx.ExecContext(ctx, db.dialect.migrationLock); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
	}
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (db *DB) applyMigration(ctx context.Context, m migration) error {
	err := db.migrationTx(ctx, func(tx *sqlx.Tx) error {
		// Checked inside the transaction so two processes starting at once
		// apply each file once.
		var n int
		if err := tx.GetContext(ctx, &n, tx.Rebind(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), m.version); err != nil {
			return err
		} else if n > 0 {
			return nil
		}
		body, err := fs.ReadFile(db.Migrations, m.name)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, tx.Rebind(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
			m.version, m.name, formatTime(db.Now())); err != nil {
			return fmt.Errorf("record: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	return nil
}

// readMigrations lists the *.sql files of fsys that apply to the dialect,
// sorted by version. Every name must start with a positive number and an
// underscore; a name ending in .<dialect>.sql applies to that dialect
// only (.sqlite.sql, .postgres.sql), any other to both. Each version has
// one file per dialect.
func readMigrations(fsys fs.FS, dialect string) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	list := make([]migration, 0, len(names))
	seen := make(map[int]string)
	for _, name := range names {
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", name)
		}
		if only := migrationDialect(rest); only != "" && only != dialect {
			continue
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", other, name, v)
		}
		seen[v] = name
		list = append(list, migration{version: v, name: name})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].version < list[j].version })
	return list, nil
}

// migrationDialect is the dialect a migration name is for, "" for all.
func migrationDialect(name string) string {
	for _, d := range []*dialect{sqliteDialect, postgresDialect} {
		if strings.HasSuffix(name, "."+d.name+".sql") {
			return d.name
		}
	}
	return ""
}
