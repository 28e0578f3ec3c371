package lbstore

import (
	"context"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/internal/storetest"
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

// SeedMembers inserts n members into the pool in one transaction (see
// storetest.SeedMembers), fast enough to set up 100k-member benchmarks.
func SeedMembers(tb testing.TB, db *DB, poolID string, n int) {
	tb.Helper()
	ctx := context.Background()
	tx, err := db.beginWrite(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	if err := storetest.SeedMembers(ctx, tx, poolID, n); err != nil {
		tb.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
}

// WaitResyncs waits until no subscriber of db's feed has a resync waiting
// for room: then none can come until the next write. It fails the test
// after 5 s.
func WaitResyncs(tb testing.TB, db *DB) {
	tb.Helper()
	db.events.mu.Lock()
	subs := make([]*subscriber, 0, len(db.events.subs))
	for s := range db.events.subs {
		subs = append(subs, s)
	}
	db.events.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, s := range subs {
			s.resyncs.Wait()
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		tb.Fatal("a resync still waits to be delivered after 5s")
	}
}

// AgeClusterTables moves every time the cluster tables hold d into the
// past: the lease's expiry, when each node and each of its switch
// connections was last seen, when each part of the topology and of the
// stats was recorded.
// The store compares those with the database clock, so to it d has
// passed, without the test waiting for it.
func AgeClusterTables(tb testing.TB, db *DB, d time.Duration) {
	tb.Helper()
	for _, q := range []string{
		`UPDATE cluster_lease SET expires_at = expires_at - ?`,
		`UPDATE cluster_nodes SET last_seen = last_seen - ?`,
		`UPDATE cluster_switches SET seen_at = seen_at - ?`,
		`UPDATE topology_parts SET seen_at = seen_at - ?`,
		`UPDATE stats_parts SET recorded_at = recorded_at - ?`,
	} {
		if _, err := db.cluster.ExecContext(context.Background(), db.cluster.Rebind(q), d.Microseconds()); err != nil {
			tb.Fatalf("age the cluster tables: %v", err)
		}
	}
}

// SweepStatsNext makes db's next record of the stats sweep the stats
// tables, whenever it last did.
func SweepStatsNext(db *DB) {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	db.statsSweptAt = time.Time{}
}

// SetLastNum records n as the last number given to a VIP or member (kind
// "vip" or "member"), as if that many had been created.
func SetLastNum(tb testing.TB, db *DB, kind string, n int) {
	tb.Helper()
	if _, err := db.write.Exec(db.write.Rebind(`UPDATE object_numbers SET last = ? WHERE kind = ?`), n, kind); err != nil {
		tb.Fatal(err)
	}
}
