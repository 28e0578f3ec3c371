package lbstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

func node(id string) sdnlb.ClusterNode {
	return sdnlb.ClusterNode{ID: id, APIAddr: id + ":8080", OpenFlowAddr: id + ":6653"}
}

func mustTake(tb testing.TB, db *lbstore.DB, n sdnlb.ClusterNode, gen uint64, d time.Duration) sdnlb.Lease {
	tb.Helper()
	l, err := db.TakeLease(context.Background(), n, gen, d)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func TestDB_TakeLease(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		_, db := mustSetup(t)
		a, b := node("a"), node("b")
		l := mustTake(t, db, a, 0, time.Minute)
		if !l.Held || l.Generation != 1 || l.Holder != "a" {
			t.Fatalf("first take: %+v, want held, generation 1", l)
		}
		// A renewal keeps the generation.
		if l := mustTake(t, db, a, 1, time.Minute); !l.Held || l.Generation != 1 {
			t.Fatalf("renewal: %+v, want held, generation 1", l)
		}
		// Another node is refused and told who holds it and for how long.
		l = mustTake(t, db, b, 0, time.Minute)
		if l.Held || l.Holder != "a" || l.Generation != 1 || l.Remaining < 50*time.Second || l.Remaining > time.Minute {
			t.Fatalf("b while a holds: %+v", l)
		}
	})
	t.Run("Takeover", func(t *testing.T) {
		_, db := mustSetup(t)
		a, b := node("a"), node("b")
		mustTake(t, db, a, 0, time.Minute)
		if l := mustTake(t, db, b, 0, time.Minute); l.Held {
			t.Fatalf("b took an unexpired lease: %+v", l)
		}
		lbstore.AgeClusterTables(t, db, time.Minute+time.Millisecond)
		l := mustTake(t, db, b, 0, time.Minute)
		if !l.Held || l.Generation != 2 {
			t.Fatalf("b after expiry: %+v, want held, generation 2", l)
		}
		// The old holder's renewal fails: it is no longer the holder.
		if l := mustTake(t, db, a, 1, time.Minute); l.Held || l.Holder != "b" {
			t.Fatalf("a after takeover: %+v", l)
		}
	})
	t.Run("SameIDOtherGeneration", func(t *testing.T) {
		// A restarted process with the same node id does not renew the
		// lease of the one before it: it waits for it to expire.
		_, db := mustSetup(t)
		mustTake(t, db, node("a"), 0, time.Minute)
		if l := mustTake(t, db, node("a"), 7, time.Minute); l.Held {
			t.Fatalf("renewed with a generation never held: %+v", l)
		}
	})
	t.Run("Release", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustTake(t, db, node("a"), 0, time.Minute)
		if err := db.ReleaseLease(ctx, "b", 1); err != nil { // not the holder: nothing
			t.Fatal(err)
		}
		if l := mustTake(t, db, node("b"), 0, time.Minute); l.Held {
			t.Fatalf("b took the lease a still holds: %+v", l)
		}
		if err := db.ReleaseLease(ctx, "a", 1); err != nil {
			t.Fatal(err)
		}
		if l := mustTake(t, db, node("b"), 0, time.Minute); !l.Held || l.Generation != 2 {
			t.Fatalf("b after release: %+v", l)
		}
	})
	t.Run("ErrNodeIDRequired", func(t *testing.T) {
		ctx, db := mustSetup(t)
		_, err := db.TakeLease(ctx, sdnlb.ClusterNode{}, 0, time.Second)
		assertError(t, err, sdnlb.EINVALID, "")
	})
	t.Run("Concurrent", func(t *testing.T) {
		// Nodes on connections of their own race for an expired lease:
		// exactly one wins.
		dsn := lbstore.NewTestDSN(t)
		const n = 6
		dbs := make([]*lbstore.DB, n)
		for i := range dbs {
			db, err := lbstore.Open(dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { MustCloseDB(t, db) })
			dbs[i] = db
		}
		for round := range 3 {
			var wg sync.WaitGroup
			held := make([]bool, n)
			for i, db := range dbs {
				wg.Go(func() {
					l, err := db.TakeLease(context.Background(), node(string(rune('a'+i))), 0, time.Minute)
					if err != nil {
						t.Error(err)
					}
					held[i] = l.Held
				})
			}
			wg.Wait()
			winners := 0
			for _, h := range held {
				if h {
					winners++
				}
			}
			if winners != 1 {
				t.Fatalf("round %d: %d nodes took the lease, want 1", round, winners)
			}
			lbstore.AgeClusterTables(t, dbs[0], time.Minute+time.Millisecond)
		}
	})
}

func TestDB_Cluster(t *testing.T) {
	ctx, db := mustSetup(t)
	if c, err := db.Cluster(ctx); err != nil || c.Leader != "" || len(c.Nodes) != 0 {
		t.Fatalf("empty: %+v, %v", c, err)
	}
	before := time.Now().Add(-time.Second)
	mustTake(t, db, node("b"), 0, time.Minute)
	mustTake(t, db, node("a"), 0, time.Minute)
	c, err := db.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Leader != "b" || len(c.Nodes) != 2 {
		t.Fatalf("cluster: %+v", c)
	}
	for i, want := range []struct {
		id   string
		role sdnlb.NodeRole
	}{{"a", sdnlb.RoleFollower}, {"b", sdnlb.RoleLeader}} {
		n := c.Nodes[i]
		if n.ID != want.id || n.Role != want.role || n.APIAddr != want.id+":8080" || n.OpenFlowAddr != want.id+":6653" {
			t.Errorf("node %d: %+v, want %s %s", i, n, want.id, want.role)
		}
		if n.LastSeen.Before(before) || n.LastSeen.After(time.Now().Add(time.Second)) {
			t.Errorf("node %s: last_seen %v, want about now", n.ID, n.LastSeen)
		}
	}
	if n := c.Nodes[0]; n.StatsRecordedAt != nil || n.TopologyRecordedAt != nil {
		t.Errorf("node a shows records %v %v before any", n.StatsRecordedAt, n.TopologyRecordedAt)
	}
	// Each node's last records of its parts show.
	if err := db.RecordStats(ctx, node("a"), &sdnlb.StatsPart{ID: "pa", Node: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := db.RecordTopology(ctx, node("b"), &sdnlb.TopologyPart{Node: "b"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if c, err = db.Cluster(ctx); err != nil {
		t.Fatal(err)
	}
	if a, b := c.Nodes[0], c.Nodes[1]; a.StatsRecordedAt == nil || a.StatsRecordedAt.Before(before) || a.TopologyRecordedAt != nil ||
		b.TopologyRecordedAt == nil || b.TopologyRecordedAt.Before(before) || b.StatsRecordedAt != nil {
		t.Errorf("records: a %v %v, b %v %v; want a's stats and b's topology about now", a.StatsRecordedAt, a.TopologyRecordedAt,
			b.StatsRecordedAt, b.TopologyRecordedAt)
	}
	// Once the lease expires nobody leads.
	if err := db.ReleaseLease(ctx, "b", 1); err != nil {
		t.Fatal(err)
	}
	if c, err := db.Cluster(ctx); err != nil || c.Leader != "" || c.Nodes[1].Role != sdnlb.RoleFollower {
		t.Fatalf("after release: %+v, %v", c, err)
	}
}

func TestDB_RecordNode(t *testing.T) {
	t.Run("SameInstance", func(t *testing.T) {
		ctx, db := mustSetup(t)
		a := node("a")
		a.Instance = "one"
		for range 2 {
			if err := db.RecordNode(ctx, a, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("ErrInUse", func(t *testing.T) {
		// A second process given a live node's id is refused, and its
		// attempt at the lease changes nothing.
		ctx, db := mustSetup(t)
		first, second := node("a"), node("a")
		first.Instance, second.Instance = "one", "two"
		second.APIAddr = "elsewhere:8080"
		if l, err := db.TakeLease(ctx, first, 0, time.Minute); err != nil || !l.Held {
			t.Fatalf("first: %+v, %v", l, err)
		}
		err := db.RecordNode(ctx, second, time.Minute)
		assertError(t, err, sdnlb.ECONFLICT, "", `"a"`, "a:8080", "--node-id")
		_, err = db.TakeLease(ctx, second, 1, time.Minute)
		assertError(t, err, sdnlb.ECONFLICT, "")
		c, err := db.Cluster(ctx)
		if err != nil || len(c.Nodes) != 1 || c.Nodes[0].APIAddr != "a:8080" || c.Leader != "a" {
			t.Fatalf("cluster after the refused process: %+v, %v", c, err)
		}
		if l := mustTake(t, db, first, 1, time.Minute); !l.Held || l.Generation != 1 {
			t.Fatalf("the first process's renewal: %+v", l)
		}
	})
	t.Run("AfterLapse", func(t *testing.T) {
		// A restarted process takes its id over once the row of the one
		// before it is older than d.
		ctx, db := mustSetup(t)
		before, after := node("a"), node("a")
		before.Instance, after.Instance = "one", "two"
		if err := db.RecordNode(ctx, before, time.Minute); err != nil {
			t.Fatal(err)
		}
		err := db.RecordNode(ctx, after, time.Minute)
		assertError(t, err, sdnlb.ECONFLICT, "")
		lbstore.AgeClusterTables(t, db, time.Minute+time.Millisecond)
		if err := db.RecordNode(ctx, after, time.Minute); err != nil {
			t.Fatalf("after the lapse: %v", err)
		}
		err = db.RecordNode(ctx, before, time.Minute)
		assertError(t, err, sdnlb.ECONFLICT, "")
	})
}
