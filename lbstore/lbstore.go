// Package lbstore is the SQL implementation of the sdnlb services, on
// SQLite (a file, the embedded default) or PostgreSQL (a postgres:// URL,
// which several sdnlb processes can share).
//
// Both databases run the same queries, written with ? placeholders and
// rebound for PostgreSQL; a dialect holds the little that differs (how to
// open, read snapshots, the migration lock), and the schema differs only
// where the SQL types do (migrations named NNNN_x.sqlite.sql or
// NNNN_x.postgres.sql).
//
// Every write runs in one transaction that takes the write lock first: it
// loads what it needs, validates, checks the rules that span objects and
// writes, so a rejected write changes nothing. Writes of one process are
// serialized in Go as well, which keeps SQLite's busy handler out of the
// common path and lets events be published in commit order right after
// each commit. On PostgreSQL the write lock is the row of the feed table,
// so writes of all processes commit one at a time. Reads use their own pool
// of read-only connections and never wait for a writer.
//
// Wiring: db, err := lbstore.Open(dsn); store := lbstore.NewStore(db).
// Store implements every sdnlb store interface, including LoadConfig,
// Subscribe and SetMemberHealth for the controller and the health monitors.
//
// Events: one per object a write created, updated or deleted (a cascade
// lists every object it removed, dependants first); linking a pool to a
// VIP, associating and dissociating monitors are pool updates; a health
// status change is a member OpHealth; Clear is a single OpResync with an
// empty Kind; ApplyConfig publishes one per object it created, updated or
// deleted, and nothing when it changed nothing. On SQLite, Seq counts from
// 1 in each process and the feed holds this process's writes. On
// PostgreSQL, Seq is the database's: every process sharing it sees every
// write with the same Seq, in commit order.
package lbstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/migrations"
)

// DefaultEventBuffer is how many events a subscriber may fall behind before
// it loses events and is sent a resync.
const DefaultEventBuffer = 1024

// DefaultConnectTimeout bounds how long opening a PostgreSQL connection may
// take, when the URL does not say (connect_timeout).
const DefaultConnectTimeout = 5 * time.Second

// DB is the store: a database opened with two connection pools, one for
// writes and one for reads.
type DB struct {
	write *sqlx.DB
	read  *sqlx.DB
	// cluster takes and renews the leader lease; masters records the
	// switches' connections and masters (masters.go); topology records
	// this node's part of the topology (topology.go); stats records this
	// process's part of the stats and absorbs others' (statspart.go).
	cluster  *sqlx.DB
	masters  *sqlx.DB
	topology *sqlx.DB
	stats    *sqlx.DB
	// mastersChanged receives when a node changed the switches' masters.
	mastersChanged chan struct{}
	// recorded is, by node id, the part of the topology this process
	// last recorded, as the database holds it: the next record writes
	// only the difference.
	recordedMu sync.Mutex
	recorded   map[string]topologyItems
	// statsHeld is, by part id, the part of the stats this process last
	// recorded, as the database holds it; a part this process never
	// recorded has no entry. statsSweptAt is when the process last swept
	// the stats tables.
	statsMu      sync.Mutex
	statsHeld    map[string]*heldStats
	statsSweptAt time.Time

	dialect *dialect
	feed    feed

	// remembered is what LoadConfig read last: what reads answer while
	// the database is unavailable.
	remembered atomic.Pointer[sdnlb.Config]

	// writeLock serializes the write transactions of this process and the
	// publication of their events; a channel rather than a mutex so
	// waiting honours ctx.
	writeLock chan struct{}
	events    *eventHub

	// DSN is what NewDB was given: a SQLite file path or "file:" URI, or a
	// postgres:// (postgresql://) URL.
	DSN string

	// Now is the clock for timestamps; tests replace it.
	Now func() time.Time

	// Migrations is applied at Open; it defaults to migrations.FS.
	Migrations fs.FS

	// EventBuffer is the channel size of each new subscriber.
	EventBuffer int

	// ConnectTimeout bounds each PostgreSQL connection attempt when the
	// URL sets no connect_timeout.
	ConnectTimeout time.Duration

	// Logger tells when the change feed loses and regains PostgreSQL; nil
	// discards.
	Logger *slog.Logger
}

// NewDB returns a DB for dsn: a SQLite file path or "file:" URI, or a
// postgres:// URL. Call Open before use.
func NewDB(dsn string) *DB {
	return &DB{
		DSN:            dsn,
		Now:            time.Now,
		Migrations:     migrations.FS,
		EventBuffer:    DefaultEventBuffer,
		ConnectTimeout: DefaultConnectTimeout,
		writeLock:      make(chan struct{}, 1),
		events:         newEventHub(),
		mastersChanged: make(chan struct{}, 1),
		recorded:       map[string]topologyItems{},
		statsHeld:      map[string]*heldStats{},
	}
}

// Open opens a DB for dsn and applies the migrations.
func Open(dsn string) (*DB, error) {
	db := NewDB(dsn)
	if err := db.Open(); err != nil {
		return nil, err
	}
	return db, nil
}

// Open opens both connection pools, migrates the schema and starts the
// change feed. Its errors name the database (without a password) and fit
// on one line.
func (db *DB) Open() error {
	if db.DSN == "" {
		return errors.New("open db: dsn required")
	}
	db.dialect = dialectOf(db.DSN)
	if err := db.dialect.open(db); err != nil {
		db.Close()
		return fmt.Errorf("open db %s: %w", db.Name(), oneLine(err))
	}
	if err := db.migrate(context.Background()); err != nil {
		db.Close()
		return fmt.Errorf("open db %s: %w", db.Name(), oneLine(err))
	}
	db.feed = db.dialect.newFeed(db)
	if err := db.feed.start(context.Background()); err != nil {
		db.Close()
		return fmt.Errorf("open db %s: %w", db.Name(), oneLine(err))
	}
	return nil
}

// Name is the DSN fit for logs and errors: a URL's password is masked.
func (db *DB) Name() string { return redactDSN(db.DSN) }

// Dialect is "sqlite" or "postgres"; "" before Open.
func (db *DB) Dialect() string {
	if db.dialect == nil {
		return ""
	}
	return db.dialect.name
}

// Close ends every subscription to the change feed and closes both pools.
func (db *DB) Close() error {
	if db.feed != nil {
		db.feed.stop()
	}
	db.events.close()
	var errs []error
	if db.write != nil {
		errs = append(errs, db.write.Close())
	}
	if db.read != nil {
		errs = append(errs, db.read.Close())
	}
	if db.cluster != nil {
		errs = append(errs, db.cluster.Close())
	}
	if db.masters != nil {
		errs = append(errs, db.masters.Close())
	}
	if db.topology != nil {
		errs = append(errs, db.topology.Close())
	}
	if db.stats != nil {
		errs = append(errs, db.stats.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close db: %w", err)
	}
	return nil
}

func (db *DB) logger() *slog.Logger {
	if db.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return db.Logger
}
