package lbstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"

	"github.com/sdnlb/sdnlb"
)

// dialect is what differs between the databases the store runs on. The
// queries do not: they are one text with ? placeholders, which sqlx rebinds
// to $n for PostgreSQL (see Tx).
type dialect struct {
	// name is the suffix of the migration files only this dialect applies
	// (NNNN_x.<name>.sql).
	name string
	// open opens db.write and db.read and checks that the database answers.
	open func(db *DB) error
	// readOptions start a read transaction that sees one snapshot in all
	// its statements.
	readOptions *sql.TxOptions
	// migrationLock is run first in each migration transaction, so that
	// processes starting at once apply each file once; "" when beginning
	// the transaction is enough.
	migrationLock string
	// newFeed returns how db's writes reach the change feed.
	newFeed func(db *DB) feed
	// now is the database clock in microseconds since the Unix epoch, as
	// an SQL expression that keeps one value for the whole statement.
	now string
	// notifyMasters tells the other processes that the switches' masters
	// changed, inside the transaction that changes them; "" when no other
	// process can be listening.
	notifyMasters string
}

// dialectOf picks the dialect a DSN names: a postgres:// or postgresql://
// URL is PostgreSQL, anything else a SQLite file.
func dialectOf(dsn string) *dialect {
	if isPostgresURL(dsn) {
		return postgresDialect
	}
	return sqliteDialect
}

func isPostgresURL(dsn string) bool {
	scheme, _, ok := strings.Cut(dsn, "://")
	return ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql"))
}

// redactDSN masks the password of a URL; a file path is returned as it is.
func redactDSN(dsn string) string {
	if !isPostgresURL(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		scheme, _, _ := strings.Cut(dsn, "://")
		return scheme + "://(unparsable URL)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// oneLine keeps a driver's error on one line, for a start-up failure.
type oneLineError struct{ err error }

func (e oneLineError) Error() string {
	var b strings.Builder
	prev := ""
	for _, line := range strings.FieldsFunc(e.err.Error(), func(r rune) bool { return r == '\n' || r == '\r' }) {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line == prev:
			continue
		case prev == "":
		case strings.HasSuffix(prev, ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
		prev = line
	}
	return b.String()
}

func (e oneLineError) Unwrap() error { return e.err }

func oneLine(err error) error {
	if err == nil || !strings.ContainsAny(err.Error(), "\n\r") {
		return err
	}
	return oneLineError{err}
}

// errUnavailable is what a request gets while the database cannot be
// reached; the API answers it with 503.
var errUnavailable = sdnlb.Errorf(sdnlb.EUNAVAILABLE, "the database is unavailable; try again later")

// unavailable marks err as EUNAVAILABLE when it says the database cannot
// be reached (the cause stays in the chain, for logs); other errors pass
// unchanged. The caller's own cancellation is not the database's fault.
func unavailable(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || sdnlb.ErrorCode(err) != sdnlb.EINTERNAL || !unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", errUnavailable, err)
}

// unreachable reports whether err is the database being away rather than
// a query it refused: no connection, a connection lost, a server shutting
// down or starting, a read-only standby, or SQLite's file locked past the
// busy timeout.
func unreachable(err error) bool {
	var connectErr *pgconn.ConnectError
	var pgErr *pgconn.PgError
	var netErr net.Error
	var liteErr sqlite3.Error
	switch {
	case errors.As(err, &pgErr):
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", // admin_shutdown, crash_shutdown, cannot_connect_now
			"53300", // too_many_connections
			"25006": // read_only_sql_transaction: a standby
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection_exception
	case errors.As(err, &liteErr):
		return liteErr.Code == sqlite3.ErrBusy || liteErr.Code == sqlite3.ErrLocked
	}
	return errors.As(err, &connectErr) || pgconn.Timeout(err) || errors.As(err, &netErr) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, pgconn.ErrConnClosed)
}
