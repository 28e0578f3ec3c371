// Package lbstore is the SQLite implementation of the sdnlb services.
//
// Every write runs in one immediate transaction: it loads what it needs,
// validates, checks the rules that span objects and writes, so a rejected
// write changes nothing. Writes of one process are serialized in Go as well,
// which keeps SQLite's busy handler out of the common path and lets events
// be published in commit order right after each commit. Reads use their own
// pool of query-only connections with deferred transactions, which in WAL
// mode never wait for a writer.
//
// Wiring: db, err := lbstore.Open(path); store := lbstore.NewStore(db).
// Store implements every sdnlb store interface, including LoadConfig,
// Subscribe and SetMemberHealth for the controller and the health monitors.
//
// Events: one per object a write created, updated or deleted (a cascade
// lists every object it removed, dependants first); linking a pool to a
// VIP, associating and dissociating monitors are pool updates; a health
// status change is a member OpHealth; Clear is a single OpResync with an
// empty Kind. Seq counts from 1 in each process.
package lbstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"github.com/sdnlb/sdnlb/migrations"
)

// DefaultEventBuffer is how many events a subscriber may fall behind before
// it loses events and is sent a resync.
const DefaultEventBuffer = 1024

// DB is the store: a SQLite file opened with two connection pools, one
// for writes (immediate transactions) and one for reads (deferred).
type DB struct {
	write *sqlx.DB
	read  *sqlx.DB

	// writeLock serializes write transactions and the publication of their
	// events; a channel rather than a mutex so waiting honours ctx.
	writeLock chan struct{}
	events    *eventHub

	// DSN is the database file path given to NewDB.
	DSN string

	// Now is the clock for timestamps; tests replace it.
	Now func() time.Time

	// Migrations is applied at Open; it defaults to migrations.FS.
	Migrations fs.FS

	// EventBuffer is the channel size of each new subscriber.
	EventBuffer int
}

// NewDB returns a DB for the SQLite file at dsn, a path or a "file:" URI.
// Call Open before use.
func NewDB(dsn string) *DB {
	return &DB{
		DSN:         dsn,
		Now:         time.Now,
		Migrations:  migrations.FS,
		EventBuffer: DefaultEventBuffer,
		writeLock:   make(chan struct{}, 1),
		events:      newEventHub(),
	}
}

// Open opens a DB for the file at path and applies the migrations.
func Open(path string) (*DB, error) {
	db := NewDB(path)
	if err := db.Open(); err != nil {
		return nil, err
	}
	return db, nil
}

// connParams go into the DSN because the driver applies DSN parameters to
// every connection it opens; a PRAGMA run once would reach only one pooled
// connection.
const connParams = "_foreign_keys=on&_journal_mode=WAL&_busy_timeout=5000"

// Open opens both connection pools and migrates the schema.
func (db *DB) Open() error {
	if db.DSN == "" {
		return errors.New("open db: dsn required")
	}
	// Each connection to :memory: is a database of its own, so the pools
	// would not share anything.
	if strings.Contains(db.DSN, ":memory:") || strings.Contains(db.DSN, "mode=memory") {
		return errors.New("open db: in-memory databases are not supported; use a file")
	}
	if path := filePath(db.DSN); path != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("open db: %w", err)
		}
	}
	var err error
	// Immediate write transactions take the write lock at BEGIN, so two
	// writers never deadlock upgrading a read lock (SQLITE_BUSY at once,
	// which busy_timeout cannot help with).
	if db.write, err = sqlx.Open("sqlite3", withParams(db.DSN, connParams+"&_txlock=immediate")); err != nil {
		return fmt.Errorf("open db: %w", err)
	}
	// Writes are serialized by writeLock anyway.
	db.write.SetMaxOpenConns(1)
	if db.read, err = sqlx.Open("sqlite3", withParams(db.DSN, connParams+"&_txlock=deferred&_query_only=on")); err != nil {
		db.write.Close()
		return fmt.Errorf("open db: %w", err)
	}
	if err := db.migrate(context.Background()); err != nil {
		db.Close()
		return err
	}
	return nil
}

// Close ends every subscription to the change feed and closes both pools.
func (db *DB) Close() error {
	db.events.close()
	var errs []error
	if db.write != nil {
		errs = append(errs, db.write.Close())
	}
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close db: %w", err)
	}
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
