package lbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"
	"github.com/mattn/go-sqlite3"

	"github.com/sdnlb/sdnlb"
)

// Tx is a transaction with the time it started, which every timestamp it
// writes uses, and the events it publishes once it commits. Its query
// methods take ? placeholders whatever the dialect.
type Tx struct {
	*sqlx.Tx
	db      *DB
	now     time.Time
	events  []sdnlb.Event
	seq     uint64 // the feed's last Seq when the write began (PostgreSQL)
	writing bool   // holds db.writeLock until Commit or Rollback
	done    bool
}

// beginWrite starts a write transaction, which holds the write lock: only
// one runs at a time.
func (db *DB) beginWrite(ctx context.Context) (*Tx, error) {
	select {
	case db.writeLock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	sqlTx, err := db.write.BeginTxx(ctx, nil)
	if err != nil {
		<-db.writeLock
		return nil, fmt.Errorf("begin: %w", err)
	}
	tx := &Tx{Tx: sqlTx, db: db, now: db.Now().UTC(), writing: true}
	if err := db.feed.begin(ctx, tx); err != nil {
		tx.Rollback()
		return nil, fmt.Errorf("begin: %w", err)
	}
	return tx, nil
}

// beginRead starts a read-only transaction, which sees one snapshot and
// never blocks writers.
func (db *DB) beginRead(ctx context.Context) (*Tx, error) {
	tx, err := db.read.BeginTxx(ctx, db.dialect.readOptions)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	return &Tx{Tx: tx, db: db, now: db.Now().UTC()}, nil
}

// readTx runs f in a read transaction.
func readTx[T any](ctx context.Context, db *DB, f func(*Tx) (T, error)) (T, error) {
	tx, err := db.beginRead(ctx)
	if err != nil {
		var zero T
		return zero, unavailable(ctx, err)
	}
	defer tx.Rollback()
	v, err := f(tx)
	return v, unavailable(ctx, err)
}

// writeTx runs f in a write transaction, which it commits only when f
// succeeds: a refused write changes nothing and publishes nothing.
func writeTx[T any](ctx context.Context, db *DB, f func(*Tx) (T, error)) (T, error) {
	v, err := runWrite(ctx, db, f)
	return v, unavailable(ctx, err)
}

func runWrite[T any](ctx context.Context, db *DB, f func(*Tx) (T, error)) (T, error) {
	var zero T
	tx, err := db.beginWrite(ctx)
	if err != nil {
		return zero, err
	}
	defer tx.Rollback()
	v, err := f(tx)
	if err != nil {
		return zero, err
	}
	if err := db.feed.record(ctx, tx); err != nil {
		return zero, err
	}
	if err := tx.Commit(); err != nil {
		return zero, err
	}
	return v, nil
}

// execTx is writeTx for a write that returns nothing.
func execTx(ctx context.Context, db *DB, f func(*Tx) error) error {
	_, err := writeTx(ctx, db, func(tx *Tx) (struct{}, error) { return struct{}{}, f(tx) })
	return err
}

// createTx runs create on a copy of obj in a write transaction and, once it
// commits, gives obj what was stored (id, derived fields, timestamps); on
// failure obj is left as it was.
func createTx[T any](ctx context.Context, db *DB, obj *T, create func(context.Context, *Tx, T) (*T, error)) error {
	created, err := writeTx(ctx, db, func(tx *Tx) (*T, error) { return create(ctx, tx, *obj) })
	if err != nil {
		return err
	}
	*obj = *created
	return nil
}

// emit queues an event for publication after the commit.
func (tx *Tx) emit(kind sdnlb.EventKind, op sdnlb.EventOp, id string) {
	tx.events = append(tx.events, sdnlb.Event{Kind: kind, Op: op, ID: id, At: tx.now})
}

// Commit commits and then publishes the queued events, before the next
// write can commit, so subscribers see events in commit order.
func (tx *Tx) Commit() error {
	if tx.done {
		return sql.ErrTxDone
	}
	tx.done = true
	err := tx.Tx.Commit()
	if err == nil {
		tx.db.feed.committed(tx)
	}
	if tx.writing {
		<-tx.db.writeLock
	}
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// Rollback undoes an unfinished transaction; after Commit it does nothing,
// so it can always be deferred.
func (tx *Tx) Rollback() error {
	if tx.done {
		return nil
	}
	tx.done = true
	err := tx.Tx.Rollback()
	if tx.writing {
		<-tx.db.writeLock
	}
	return err
}

// GetContext is sqlx's, with the query rebound for the dialect.
func (tx *Tx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	return tx.Tx.GetContext(ctx, dest, tx.Rebind(query), args...)
}

// SelectContext is sqlx's, with the query rebound for the dialect.
func (tx *Tx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return tx.Tx.SelectContext(ctx, dest, tx.Rebind(query), args...)
}

// ExecContext is sqlx's, with the query rebound for the dialect.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return tx.Tx.ExecContext(ctx, tx.Rebind(query), args...)
}

// QueryxContext is sqlx's, with the query rebound for the dialect.
func (tx *Tx) QueryxContext(ctx context.Context, query string, args ...any) (*sqlx.Rows, error) {
	return tx.Tx.QueryxContext(ctx, tx.Rebind(query), args...)
}

// QueryRowxContext is sqlx's, with the query rebound for the dialect.
func (tx *Tx) QueryRowxContext(ctx context.Context, query string, args ...any) *sqlx.Row {
	return tx.Tx.QueryRowxContext(ctx, tx.Rebind(query), args...)
}

// PreparexContext is sqlx's, with the query rebound for the dialect.
func (tx *Tx) PreparexContext(ctx context.Context, query string) (*sqlx.Stmt, error) {
	return tx.Tx.PreparexContext(ctx, tx.Rebind(query))
}

// timeLayout is fixed width so stored times sort as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// ifMatch checks, inside the write's transaction, the If-Match the
// request's ctx carries against the object id names; without one it reads
// nothing.
func ifMatch[T any](ctx context.Context, tx *Tx, id string, find func(context.Context, *Tx, string) (*T, error), updated func(*T) time.Time) error {
	if !sdnlb.HasIfMatch(ctx) {
		return nil
	}
	obj, err := find(ctx, tx, id)
	if err != nil {
		return err
	}
	return sdnlb.CheckIfMatch(ctx, updated(obj))
}

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// parseTime reads what formatTime wrote. RFC3339Nano accepts it and takes
// time.Parse's fast path, which matters when loading 100k members.
func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q: %w", s, err)
	}
	return t, nil
}

// mapError turns driver errors into sdnlb errors: no rows is ENOTFOUND, a
// unique or primary key violation ECONFLICT, a foreign key violation
// fkCode (ENOTFOUND when inserting a reference, ECONFLICT when deleting a
// referenced row). The explicit checks before each write give better
// messages; this is the safety net under them.
func mapError(err error, fkCode string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return sdnlb.Errorf(sdnlb.ENOTFOUND, "not found")
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation, which covers primary keys
			return sdnlb.Errorf(sdnlb.ECONFLICT, "the write conflicts with an existing object")
		case "23503": // foreign_key_violation
			return foreignKeyError(fkCode)
		}
	}
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.ExtendedCode {
		case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
			return sdnlb.Errorf(sdnlb.ECONFLICT, "the write conflicts with an existing object")
		case sqlite3.ErrConstraintForeignKey:
			return foreignKeyError(fkCode)
		}
	}
	return err
}

func foreignKeyError(fkCode string) error {
	if fkCode == sdnlb.ENOTFOUND {
		return sdnlb.Errorf(sdnlb.ENOTFOUND, "a referenced object does not exist")
	}
	return sdnlb.Errorf(sdnlb.ECONFLICT, "other objects depend on this one")
}
