package lbstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/sdnlb/sdnlb"
)

// postgresDialect is a PostgreSQL database that several sdnlb processes
// may share. Reads are repeatable-read, read-only transactions, so that
// LoadConfig sees one snapshot; the change feed goes through the database
// (pgFeed).
var postgresDialect = &dialect{
	name:          "postgres",
	open:          openPostgres,
	readOptions:   &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	migrationLock: fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", migrationLockKey),
	newFeed:       func(db *DB) feed { return &pgFeed{db: db} },
	// now() is the start of the transaction: one value for the statement.
	now:           `CAST(EXTRACT(EPOCH FROM now()) * 1000000 AS BIGINT)`,
	notifyMasters: "SELECT pg_notify('" + mastersChannel + "', '')",
}

// Advisory lock keys are 64-bit; sdnlb's start with "sdnl".
const migrationLockKey = 0x73646e6c_00000001

// readConns caps the read pool, so that many nodes fit in the server's
// max_connections.
const readConns = 8

// pgConfig parses db's URL (errors mask the password) and sets what the
// URL leaves unset: the connect timeout and the application name, which
// pg_stat_activity shows.
func pgConfig(db *DB) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(db.DSN)
	if err != nil {
		return nil, err
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = db.ConnectTimeout
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "sdnlb"
	}
	return cfg, nil
}

// openPostgres opens both pools through pgx's database/sql driver and
// connects once, so that a wrong or unreachable URL fails here.
func openPostgres(db *DB) error {
	cfg, err := pgConfig(db)
	if err != nil {
		return err
	}
	db.write = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	// Writes are serialized by writeLock and the feed row anyway.
	db.write.SetMaxOpenConns(1)
	db.read = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	db.read.SetMaxOpenConns(readConns)
	// The lease is renewed on a connection of its own, never queued
	// behind the writes (which wait for other nodes' writes).
	db.cluster = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	db.cluster.SetMaxOpenConns(1)
	// So are the switches' connections and masters, on another: neither
	// waits for the other.
	db.masters = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	db.masters.SetMaxOpenConns(1)
	// The topology's records, which may write many rows, delay neither.
	db.topology = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	db.topology.SetMaxOpenConns(1)
	// The stats' records, which write a row per member whose counters
	// moved, delay none of them.
	db.stats = sqlx.NewDb(stdlib.OpenDB(*cfg), "pgx")
	db.stats.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.ConnectTimeout)
	defer cancel()
	return db.write.PingContext(ctx)
}

const (
	// feedChannel is the NOTIFY channel; the payload is the last Seq of
	// the write.
	feedChannel = "sdnlb_feed"
	// feedPoll is how often the feed reads the table without a
	// notification, in case one was lost.
	feedPoll = time.Second
	// feedRetention is how many events the table keeps; a process that
	// falls further behind (disconnected that long) resyncs.
	feedRetention = 10_000
	// feedTrimEvery is how many events pass between trims of the table.
	feedTrimEvery = 1_000
	// feedRetryMax caps the wait between reconnections.
	feedRetryMax = 2 * time.Second
	// mastersChannel is notified when the switches' masters change; the
	// feed's connection listens to it too.
	mastersChannel = "sdnlb_masters"
)

// pgFeed is the change feed across processes. Every write transaction
// first locks the one row of the feed table (so writes of all processes
// commit one at a time, and read what committed before them), numbers its
// events from the row's last_seq, stores them in the events table, moves
// last_seq and notifies feedChannel, all before its commit. Each process
// passes the events to its subscribers in Seq order: its own right after
// the commit, others' when the notification arrives, and at least every
// feedPoll. Events are read from the table, never from the notification,
// so a lost notification or connection loses nothing; a process that
// finds events missing from the table (trimmed while it was away) sends a
// resync instead.
type pgFeed struct {
	db     *DB
	config *pgx.ConnConfig

	mu   sync.Mutex // one delivery at a time, in Seq order
	last uint64     // the Seq of the last event passed to the hub

	cancel context.CancelFunc
	done   chan struct{}
}

func (f *pgFeed) start(ctx context.Context) error {
	var err error
	if f.config, err = pgConfig(f.db); err != nil {
		return err
	}
	if err := f.db.read.GetContext(ctx, &f.last, `SELECT last_seq FROM feed WHERE id = 1`); err != nil {
		return fmt.Errorf("read the change feed: %w", err)
	}
	f.db.events.startAt(f.last)
	var listenCtx context.Context
	listenCtx, f.cancel = context.WithCancel(context.Background())
	f.done = make(chan struct{})
	go f.listen(listenCtx)
	return nil
}

func (f *pgFeed) stop() {
	if f.cancel != nil {
		f.cancel()
		<-f.done
	}
}

// begin takes the write lock of the database: the feed row.
func (f *pgFeed) begin(ctx context.Context, tx *Tx) error {
	if err := tx.GetContext(ctx, &tx.seq, `SELECT last_seq FROM feed WHERE id = 1 FOR UPDATE`); err != nil {
		return fmt.Errorf("lock the change feed: %w", err)
	}
	return nil
}

// record numbers tx's events, stores them and notifies, every few
// thousand events trimming the oldest.
func (f *pgFeed) record(ctx context.Context, tx *Tx) error {
	n := len(tx.events)
	if n == 0 {
		return nil
	}
	seqs := make([]int64, n)
	kinds, ops, ids, ats, statuses, agents := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i := range tx.events {
		e := &tx.events[i]
		e.Seq = tx.seq + uint64(i) + 1
		seqs[i], kinds[i], ops[i], ids[i], ats[i], statuses[i] = int64(e.Seq), string(e.Kind), string(e.Op), e.ID, formatTime(e.At), string(e.Status)
		if e.Agent != nil {
			b, err := json.Marshal(e.Agent)
			if err != nil {
				return fmt.Errorf("record events: %w", err)
			}
			agents[i] = string(b)
		}
	}
	last := tx.seq + uint64(n)
	if _, err := tx.ExecContext(ctx, `INSERT INTO events (seq, kind, op, object_id, at, status, agent)
		SELECT * FROM unnest(?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])`,
		seqs, kinds, ops, ids, ats, statuses, agents); err != nil {
		return fmt.Errorf("record events: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE feed SET last_seq = ? WHERE id = 1`, int64(last)); err != nil {
		return fmt.Errorf("record events: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_notify(?, ?)`, feedChannel, strconv.FormatUint(last, 10)); err != nil {
		return fmt.Errorf("notify events: %w", err)
	}
	if last/feedTrimEvery != tx.seq/feedTrimEvery && last > feedRetention {
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE seq <= ?`, int64(last-feedRetention)); err != nil {
			return fmt.Errorf("trim events: %w", err)
		}
	}
	return nil
}

// committed passes tx's events on at once when nothing came between them
// and what this process passed on last; otherwise it reads what did from
// the table first. Should that fail, the listener catches up.
func (f *pgFeed) committed(tx *Tx) {
	n := len(tx.events)
	if n == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch last := tx.events[n-1].Seq; {
	case f.last >= last:
		return // the listener was first
	case f.last == tx.seq:
		f.db.events.deliver(tx.events)
		f.last = last
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.catchUpLocked(ctx); err != nil {
		f.db.logger().Warn("change feed: reading events failed; the listener retries", "component", "lbstore", "err", err)
	}
}

// snapshot starts a read transaction whose first statement, which fixes
// its snapshot, reads the Seq of the last write that snapshot holds.
func (f *pgFeed) snapshot(ctx context.Context) (*Tx, uint64, error) {
	tx, err := f.db.beginRead(ctx)
	if err != nil {
		return nil, 0, err
	}
	var seq uint64
	if err := tx.GetContext(ctx, &seq, `SELECT last_seq FROM feed WHERE id = 1`); err != nil {
		tx.Rollback()
		return nil, 0, fmt.Errorf("begin snapshot: %w", err)
	}
	return tx, seq, nil
}

// catchUp passes on every event committed after f.last.
func (f *pgFeed) catchUp(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.catchUpLocked(ctx)
}

// eventRow is an event as the events table holds it.
type eventRow struct {
	Seq      uint64 `db:"seq"`
	Kind     string `db:"kind"`
	Op       string `db:"op"`
	ObjectID string `db:"object_id"`
	At       string `db:"at"`
	Status   string `db:"status"`
	Agent    string `db:"agent"` // JSON; "" for none
}

func (f *pgFeed) catchUpLocked(ctx context.Context) error {
	tx, err := f.db.beginRead(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var head uint64
	if err := tx.GetContext(ctx, &head, `SELECT last_seq FROM feed WHERE id = 1`); err != nil {
		return fmt.Errorf("read the change feed: %w", err)
	}
	if head == f.last {
		return nil
	}
	var rows []eventRow
	if head > f.last && head-f.last <= feedRetention {
		if err := tx.SelectContext(ctx, &rows, `SELECT seq, kind, op, object_id, at, status, agent FROM events
			WHERE seq > ? AND seq <= ? ORDER BY seq`, int64(f.last), int64(head)); err != nil {
			return fmt.Errorf("read events: %w", err)
		}
	}
	if uint64(len(rows)) != head-f.last || (len(rows) > 0 && rows[0].Seq != f.last+1) {
		// Trimmed while this process was away, or a database that went
		// back (restored, recreated): what is missing cannot be told, so
		// every subscriber reloads everything.
		f.db.logger().Warn("change feed: events missing from the database; subscribers resync",
			"component", "lbstore", "delivered", f.last, "database", head)
		f.db.events.deliver([]sdnlb.Event{{Seq: f.last + 1, Op: sdnlb.OpResync, At: f.db.Now().UTC()}})
		f.last = head
		f.db.events.startAt(head)
		return nil
	}
	events := make([]sdnlb.Event, len(rows))
	for i, r := range rows {
		at, err := parseTime(r.At)
		if err != nil {
			return err
		}
		events[i] = sdnlb.Event{Seq: r.Seq, Kind: sdnlb.EventKind(r.Kind), Op: sdnlb.EventOp(r.Op), ID: r.ObjectID, At: at, Status: sdnlb.MemberStatus(r.Status)}
		if r.Agent != "" {
			events[i].Agent = new(sdnlb.AgentReport)
			if err := json.Unmarshal([]byte(r.Agent), events[i].Agent); err != nil {
				return fmt.Errorf("read event %d's agent report: %w", r.Seq, err)
			}
		}
	}
	f.db.events.deliver(events)
	f.last = head
	return nil
}

// listen follows the feed until ctx ends, reconnecting with backoff when
// the database goes away; each time it is back it first catches up.
func (f *pgFeed) listen(ctx context.Context) {
	defer close(f.done)
	log := f.db.logger().With("component", "lbstore")
	retry, lost := 100*time.Millisecond, false
	for {
		err := f.follow(ctx, func() {
			if lost {
				log.Info("change feed: the database is back")
			}
			retry, lost = 100*time.Millisecond, false
		})
		if ctx.Err() != nil {
			return
		}
		if !lost {
			log.Warn("change feed: lost the database; retrying", "err", err)
			lost = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, feedRetryMax)
	}
}

// follow connects, listens and catches up (then calls connected), and
// catches up again on every notification of the feed and every feedPoll,
// until the connection fails or ctx ends. A notification that the
// switches' masters changed, or a new connection (one may have been
// missed), signals SwitchMastersChanged instead.
func (f *pgFeed) follow(ctx context.Context, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, f.config)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, channel := range []string{feedChannel, mastersChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
			return err
		}
	}
	if err := f.catchUp(ctx); err != nil {
		return err
	}
	connected()
	f.db.signalMasters() // one may have come while the connection was away
	for {
		waitCtx, cancel := context.WithTimeout(ctx, feedPoll)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil && !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err):
			return err
		case err == nil && n.Channel == mastersChannel:
			f.db.signalMasters()
			continue
		case err == nil && f.delivered(n.Payload):
			continue // this process's own write, passed on at its commit
		}
		if err := f.catchUp(ctx); err != nil {
			return err
		}
	}
}

// delivered reports whether the events up to the notified Seq are passed on.
func (f *pgFeed) delivered(payload string) bool {
	seq, err := strconv.ParseUint(payload, 10, 64)
	if err != nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return seq <= f.last
}
