package lbstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// NewTestDSN is testDSN: a fresh database for the backend of the pass.
func NewTestDSN(tb testing.TB) string { return testDSN(tb) }

// CurrentBackend is the backend of the pass running: "sqlite" or "postgres".
func CurrentBackend() string { return testBackend }

// SkipUnlessBackend skips a test that only means something on one backend.
func SkipUnlessBackend(tb testing.TB, backend, why string) {
	tb.Helper()
	skipUnlessBackend(tb, backend, why)
}

// HoldWriteLock begins a write transaction, which holds the write lock
// until release rolls it back: what a long apply does to other writers.
func HoldWriteLock(tb testing.TB, db *DB) (release func()) {
	tb.Helper()
	tx, err := db.beginWrite(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return func() { tx.Rollback() }
}

// SeedMembers inserts n members into the pool in one transaction with one
// prepared statement, fast enough to set up 100k-member benchmarks. The
// rows are what createMember would write for a pool without monitors.
func SeedMembers(tb testing.TB, db *DB, poolID string, n int) {
	tb.Helper()
	ctx := context.Background()
	tx, err := db.beginWrite(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	stmt, err := tx.PreparexContext(ctx, `INSERT INTO members (id, pool_id, address, port, weight, admin_state_up,
		health_status, health_since, created_at, updated_at) VALUES (?, ?, ?, 80, 1, TRUE, ?, ?, ?, ?)`)
	if err != nil {
		tb.Fatal(err)
	}
	defer stmt.Close()
	now := formatTime(tx.now)
	for i := range n {
		id := fmt.Sprintf("%s-%07d", poolID, i)
		address := fmt.Sprintf("10.%d.%d.%d", i/62500%250, i/250%250, i%250+1)
		if _, err := stmt.ExecContext(ctx, id, poolID, address, sdnlb.MemberNoMonitor, now, now, now); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}
