package lbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// sqliteDialect is a SQLite file, opened with a pool of one immediate
// writer and a pool of query-only readers (WAL, so readers never wait).
// The change feed lives in the process: another process writing the same
// file is not seen.
var sqliteDialect = &dialect{
	name:        "sqlite",
	open:        openSQLite,
	readOptions: &sql.TxOptions{ReadOnly: true},
	newFeed:     func(db *DB) feed { return localFeed{db} },
	// 'now' stays the same within a statement.
	now: `CAST(unixepoch('subsec') * 1000000 AS INTEGER)`,
}

// connParams go into the DSN because the driver applies DSN parameters to
// every connection it opens; a PRAGMA run once would reach only one pooled
// connection.
const connParams = "_foreign_keys=on&_journal_mode=WAL&_busy_timeout=5000"

func openSQLite(db *DB) error {
	// Each connection to :memory: is a database of its own, so the pools
	// would not share anything.
	if strings.Contains(db.DSN, ":memory:") || strings.Contains(db.DSN, "mode=memory") {
		return errors.New("in-memory databases are not supported; use a file")
	}
	if path := filePath(db.DSN); path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
	}
	var err error
	// Immediate write transactions take the write lock at BEGIN, so two
	// writers never deadlock upgrading a read lock (SQLITE_BUSY at once,
	// which busy_timeout cannot help with).
	if db.write, err = sqlx.Open("sqlite3", withParams(db.DSN, connParams+"&_txlock=immediate")); err != nil {
		return err
	}
	// Writes are serialized by writeLock anyway.
	db.write.SetMaxOpenConns(1)
	if db.read, err = sqlx.Open("sqlite3", withParams(db.DSN, connParams+"&_txlock=deferred&_query_only=on")); err != nil {
		return err
	}
	// The lease is renewed on a connection of its own, never queued
	// behind the writes.
	if db.cluster, err = sqlx.Open("sqlite3", withParams(db.DSN, connParams)); err != nil {
		return err
	}
	db.cluster.SetMaxOpenConns(1)
	if db.masters, err = sqlx.Open("sqlite3", withParams(db.DSN, connParams)); err != nil {
		return err
	}
	db.masters.SetMaxOpenConns(1)
	if db.topology, err = sqlx.Open("sqlite3", withParams(db.DSN, connParams)); err != nil {
		return err
	}
	db.topology.SetMaxOpenConns(1)
	// A record of the stats reads before it writes: immediate, so that no
	// other connection's commit comes between (SQLITE_BUSY_SNAPSHOT).
	if db.stats, err = sqlx.Open("sqlite3", withParams(db.DSN, connParams+"&_txlock=immediate")); err != nil {
		return err
	}
	db.stats.SetMaxOpenConns(1)
	return nil
}

// withParams appends query parameters to a path or file: URI.
func withParams(dsn, params string) string {
	if !strings.HasPrefix(dsn, "file:") {
		dsn = "file:" + (&url.URL{Path: dsn}).EscapedPath()
	}
	if strings.Contains(dsn, "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// filePath returns the file a DSN names, "" when it cannot tell.
func filePath(dsn string) string {
	if !strings.HasPrefix(dsn, "file:") {
		return dsn
	}
	path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
	if p, err := url.PathUnescape(path); err == nil {
		return p
	}
	return ""
}

// localFeed is the in-process change feed: events are numbered by the hub
// as they are published, right after each commit and before the write lock
// is released.
type localFeed struct{ db *DB }

func (localFeed) start(context.Context) error       { return nil }
func (localFeed) stop()                             {}
func (localFeed) begin(context.Context, *Tx) error  { return nil }
func (localFeed) record(context.Context, *Tx) error { return nil }
func (f localFeed) committed(tx *Tx)                { f.db.events.publish(tx.events) }

// snapshot starts a read transaction and pins its snapshot while no write
// can commit, returning the Seq of the last event that snapshot holds.
// Writes publish before they release the write lock, so the two agree
// exactly.
func (f localFeed) snapshot(ctx context.Context) (*Tx, uint64, error) {
	db := f.db
	select {
	case db.writeLock <- struct{}{}:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	defer func() { <-db.writeLock }()
	tx, err := db.beginRead(ctx)
	if err != nil {
		return nil, 0, err
	}
	// A deferred transaction takes its snapshot at its first read.
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM schema_migrations`); err != nil {
		tx.Rollback()
		return nil, 0, fmt.Errorf("begin snapshot: %w", err)
	}
	return tx, db.events.lastSeq(), nil
}
