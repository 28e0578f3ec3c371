package lbstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

// connections lists a mastery's connections as "node dpid", sorted.
func connections(m *sdnlb.Mastery) []string {
	var out []string
	for _, c := range m.Connections {
		out = append(out, c.Node+" "+c.DPID)
	}
	slices.Sort(out)
	return out
}

func mustMastery(tb testing.TB, db *lbstore.DB, live time.Duration) *sdnlb.Mastery {
	tb.Helper()
	m, err := db.SwitchMasters(context.Background(), live)
	if err != nil {
		tb.Fatal(err)
	}
	slices.SortFunc(m.Masters, func(a, b sdnlb.SwitchMaster) int { return strings.Compare(a.DPID, b.DPID) })
	return m
}

func TestDB_RecordSwitches(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		a, b := node("a"), node("b")
		mustTake(t, db, a, 0, time.Minute)
		mustTake(t, db, b, 0, time.Minute)
		if err := db.RecordSwitches(ctx, a, []string{"s1", "s2"}); err != nil {
			t.Fatal(err)
		}
		if err := db.RecordSwitches(ctx, b, []string{"s2"}); err != nil {
			t.Fatal(err)
		}
		m := mustMastery(t, db, time.Minute)
		if got, want := connections(m), []string{"a s1", "a s2", "b s2"}; !slices.Equal(got, want) {
			t.Fatalf("connections %q, want %q", got, want)
		}
		for _, c := range m.Connections {
			if c.Age < 0 || c.Age > 5*time.Second {
				t.Errorf("connection %+v: age out of bounds", c)
			}
		}
		if m.Term != 1 || len(m.Masters) != 0 {
			t.Fatalf("mastery %+v, want term 1 and no masters", m)
		}
		// A node's record replaces its last: a switch it no longer lists
		// is forgotten, the other node's stay.
		if err := db.RecordSwitches(ctx, a, []string{"s3"}); err != nil {
			t.Fatal(err)
		}
		if got, want := connections(mustMastery(t, db, time.Minute)), []string{"a s3", "b s2"}; !slices.Equal(got, want) {
			t.Fatalf("after a's second record: %q, want %q", got, want)
		}
		if err := db.RecordSwitches(ctx, a, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := connections(mustMastery(t, db, time.Minute)), []string{"b s2"}; !slices.Equal(got, want) {
			t.Fatalf("after a recorded none: %q, want %q", got, want)
		}
	})
	t.Run("Live", func(t *testing.T) {
		// A connection not recorded again within live is not read.
		ctx, db := mustSetup(t)
		mustTake(t, db, node("a"), 0, time.Minute)
		if err := db.RecordSwitches(ctx, node("a"), []string{"s1"}); err != nil {
			t.Fatal(err)
		}
		if got := connections(mustMastery(t, db, 30*time.Second)); len(got) != 1 {
			t.Fatalf("connections %q within the live window, want the one", got)
		}
		lbstore.AgeClusterTables(t, db, time.Minute)
		if got := connections(mustMastery(t, db, 30*time.Second)); len(got) != 0 {
			t.Fatalf("connections %q after the live window", got)
		}
		if got := connections(mustMastery(t, db, time.Hour)); len(got) != 1 {
			t.Fatalf("connections %q within an hour, want the one", got)
		}
	})
	t.Run("ErrInUse", func(t *testing.T) {
		// A process whose node id another process took records nothing.
		ctx, db := mustSetup(t)
		first, second := node("a"), node("a")
		first.Instance, second.Instance = "one", "two"
		if err := db.RecordNode(ctx, first, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := db.RecordSwitches(ctx, first, []string{"s1"}); err != nil {
			t.Fatal(err)
		}
		err := db.RecordSwitches(ctx, second, []string{"s2"})
		assertError(t, err, sdnlb.ECONFLICT, "", `"a"`)
		if got, want := connections(mustMastery(t, db, time.Minute)), []string{"a s1"}; !slices.Equal(got, want) {
			t.Fatalf("connections %q after the refused record, want %q", got, want)
		}
	})
}

func TestDB_SetSwitchMasters(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		a, b := node("a"), node("b")
		mustTake(t, db, a, 0, time.Minute)
		mustTake(t, db, b, 0, time.Minute)
		set := []sdnlb.SwitchMaster{{DPID: "s1", Node: "a", Generation: 1<<32 + 1}, {DPID: "s2", Node: "b", Generation: 1<<32 + 2}}
		if err := db.SetSwitchMasters(ctx, "a", 1, set, nil); err != nil {
			t.Fatal(err)
		}
		if got := mustMastery(t, db, time.Minute).Masters; !slices.Equal(got, set) {
			t.Fatalf("masters %+v, want %+v", got, set)
		}
		// A change and a drop.
		moved := sdnlb.SwitchMaster{DPID: "s2", Node: "a", Generation: 1<<32 + 3}
		if err := db.SetSwitchMasters(ctx, "a", 1, []sdnlb.SwitchMaster{moved}, []string{"s1"}); err != nil {
			t.Fatal(err)
		}
		if got := mustMastery(t, db, time.Minute).Masters; !slices.Equal(got, []sdnlb.SwitchMaster{moved}) {
			t.Fatalf("masters %+v, want only %+v", got, moved)
		}
		// The cluster shows what each node masters.
		c, err := db.Cluster(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Nodes) != 2 || !slices.Equal(c.Nodes[0].Masters, []string{"s2"}) || len(c.Nodes[1].Masters) != 0 {
			t.Fatalf("cluster nodes %+v %+v, want a master of s2 and b of none", c.Nodes[0], c.Nodes[1])
		}
	})
	t.Run("ErrNotLeader", func(t *testing.T) {
		// Only the holder of the lease of the term writes; a former leader
		// changes nothing.
		ctx, db := mustSetup(t)
		mustTake(t, db, node("a"), 0, time.Minute)
		set := []sdnlb.SwitchMaster{{DPID: "s1", Node: "a", Generation: 1<<32 + 1}}
		err := db.SetSwitchMasters(ctx, "b", 1, set, nil)
		assertError(t, err, sdnlb.ECONFLICT, "", `"b"`)
		err = db.SetSwitchMasters(ctx, "a", 2, set, nil)
		assertError(t, err, sdnlb.ECONFLICT, "")
		// a may write while it holds the lease (writing nothing here).
		if err := db.SetSwitchMasters(ctx, "a", 1, nil, nil); err != nil {
			t.Fatalf("a while it holds the lease: %v", err)
		}
		lbstore.AgeClusterTables(t, db, time.Minute+time.Millisecond) // a's lease expires
		err = db.SetSwitchMasters(ctx, "a", 1, set, nil)
		assertError(t, err, sdnlb.ECONFLICT, "")
		if l := mustTake(t, db, node("b"), 0, time.Minute); !l.Held {
			t.Fatalf("b: %+v", l)
		}
		err = db.SetSwitchMasters(ctx, "a", 1, set, []string{"s2"})
		assertError(t, err, sdnlb.ECONFLICT, "")
		if got := mustMastery(t, db, time.Minute); len(got.Masters) != 0 || got.Term != 2 {
			t.Fatalf("mastery %+v after the refused writes, want term 2 and no masters", got)
		}
	})
	t.Run("Notified", func(t *testing.T) {
		// Another process hears of the change at once.
		lbstore.SkipUnlessBackend(t, "postgres", "SQLite runs one node: nobody listens")
		dsn := lbstore.NewTestDSN(t)
		writer, err := lbstore.Open(dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { MustCloseDB(t, writer) })
		listener, err := lbstore.Open(dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { MustCloseDB(t, listener) })
		// The listener's feed signals once when it connects; then the
		// write's notification signals again.
		waitSignal := func(what string) {
			t.Helper()
			select {
			case <-listener.SwitchMastersChanged():
			case <-time.After(10 * time.Second):
				t.Fatalf("no signal of %s in 10s", what)
			}
		}
		waitSignal("the listener's connection")
		mustTake(t, writer, node("a"), 0, time.Minute)
		set := []sdnlb.SwitchMaster{{DPID: "s1", Node: "a", Generation: 1<<32 + 1}}
		if err := writer.SetSwitchMasters(context.Background(), "a", 1, set, nil); err != nil {
			t.Fatal(err)
		}
		waitSignal("the write")
		if got := mustMastery(t, listener, time.Minute).Masters; !slices.Equal(got, set) {
			t.Fatalf("the listener reads %+v after its signal, want %+v", got, set)
		}
	})
}
