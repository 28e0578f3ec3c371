package lbstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

// receiveEvents waits for n events.
func receiveEvents(tb testing.TB, ch <-chan sdnlb.Event, n int) []sdnlb.Event {
	tb.Helper()
	var got []sdnlb.Event
	timeout := time.After(5 * time.Second)
	for len(got) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				tb.Fatalf("channel closed after %d of %d events", len(got), n)
			}
			got = append(got, e)
		case <-timeout:
			tb.Fatalf("received %d of %d events: %v", len(got), n, got)
		}
	}
	return got
}

// assertEvents compares kinds, ops and ids, and checks that Seq increases
// and At is set.
func assertEvents(tb testing.TB, got, want []sdnlb.Event) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("got %d events %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i].Kind != want[i].Kind || got[i].Op != want[i].Op || got[i].ID != want[i].ID || got[i].Status != want[i].Status {
			tb.Fatalf("event %d is %s %s %s %s, want %s %s %s %s\n(all: %v)", i,
				got[i].Kind, got[i].Op, got[i].ID, got[i].Status, want[i].Kind, want[i].Op, want[i].ID, want[i].Status, got)
		}
		if got[i].At.IsZero() {
			tb.Fatalf("event %d has no time", i)
		}
		if g, w := got[i].Agent, want[i].Agent; (g == nil) != (w == nil) ||
			g != nil && (g.Available != w.Available || g.Drain != w.Drain || !g.At.Equal(w.At)) {
			tb.Fatalf("event %d carries agent report %+v, want %+v", i, g, w)
		}
		if i > 0 && got[i].Seq <= got[i-1].Seq {
			tb.Fatalf("seq %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
}

// assertNoEvent fails if an event is waiting. Events are published before
// the write returns, so there is nothing to wait for.
func assertNoEvent(tb testing.TB, ch <-chan sdnlb.Event) {
	tb.Helper()
	select {
	case e := <-ch:
		tb.Fatalf("unexpected event %+v", e)
	default:
	}
}

func TestEventService_Subscribe(t *testing.T) {
	t.Run("Order", func(t *testing.T) {
		ctx, db := mustSetup(t)
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()

		p := MustCreatePool(t, ctx, db, newPool(""))
		v := newVIP("10.0.0.100", 80)
		v.PoolID = p.ID // links the pool: a pool update after the create
		MustCreateVIP(t, ctx, db, v)
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		MustAssociate(t, ctx, db, p.ID, mon.ID)
		MustAssociate(t, ctx, db, p.ID, mon.ID) // no change, no event
		if _, err := lbstore.NewMemberService(db).UpdateMember(ctx, m.ID, sdnlb.MemberUpdate{Weight: ptr(3)}); err != nil {
			t.Fatal(err)
		}
		// A rejected write publishes nothing.
		if err := lbstore.NewMemberService(db).CreateMember(ctx, newMember(p.ID, "10.0.0.1", 80)); err == nil {
			t.Fatal("duplicate member created")
		}
		if err := lbstore.NewPoolService(db).DissociateMonitor(ctx, p.ID, mon.ID); err != nil {
			t.Fatal(err)
		}
		if err := lbstore.NewMemberService(db).DeleteMember(ctx, m.ID); err != nil {
			t.Fatal(err)
		}

		want := []sdnlb.Event{
			{Kind: sdnlb.KindPool, Op: sdnlb.OpCreate, ID: p.ID},
			{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: v.ID},
			{Kind: sdnlb.KindPool, Op: sdnlb.OpUpdate, ID: p.ID},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpCreate, ID: m.ID},
			{Kind: sdnlb.KindMonitor, Op: sdnlb.OpCreate, ID: mon.ID},
			{Kind: sdnlb.KindPool, Op: sdnlb.OpUpdate, ID: p.ID},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpUpdate, ID: m.ID},
			{Kind: sdnlb.KindPool, Op: sdnlb.OpUpdate, ID: p.ID},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpDelete, ID: m.ID},
		}
		got := receiveEvents(t, events, len(want))
		assertEvents(t, got, want)
		if got[0].Seq != 1 {
			t.Fatalf("first seq %d, want 1", got[0].Seq)
		}
		assertNoEvent(t, events)
	})

	t.Run("Cascade", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		m1 := newMember(p.ID, "10.0.0.1", 80)
		m1.ID = "m1"
		m2 := newMember(p.ID, "10.0.0.2", 80)
		m2.ID = "m2"
		MustCreateMember(t, ctx, db, m2)
		MustCreateMember(t, ctx, db, m1)
		mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		other := MustCreatePool(t, ctx, db, newPool(""))
		MustAssociate(t, ctx, db, other.ID, mon.ID)
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()

		if err := lbstore.NewVIPService(db).DeleteVIP(ctx, v.ID, true); err != nil {
			t.Fatal(err)
		}
		if err := lbstore.NewMonitorService(db).DeleteMonitor(ctx, mon.ID, true); err != nil {
			t.Fatal(err)
		}
		want := []sdnlb.Event{
			{Kind: sdnlb.KindMember, Op: sdnlb.OpDelete, ID: "m1"},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpDelete, ID: "m2"},
			{Kind: sdnlb.KindPool, Op: sdnlb.OpDelete, ID: p.ID},
			{Kind: sdnlb.KindVIP, Op: sdnlb.OpDelete, ID: v.ID},
			{Kind: sdnlb.KindPool, Op: sdnlb.OpUpdate, ID: other.ID},
			{Kind: sdnlb.KindMonitor, Op: sdnlb.OpDelete, ID: mon.ID},
		}
		assertEvents(t, receiveEvents(t, events, len(want)), want)
		assertNoEvent(t, events)
	})

	t.Run("ResyncOnOverflow", func(t *testing.T) {
		ctx := context.Background()
		db := lbstore.NewDB(lbstore.NewTestDSN(t))
		db.EventBuffer = 2
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		defer MustCloseDB(t, db)
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()
		keeper, cancelKeeper := lbstore.NewEventService(db).Subscribe()
		defer cancelKeeper()

		var ids []string
		for i := range 5 {
			// The writer must not wait for the full subscriber.
			ids = append(ids, MustCreateVIP(t, ctx, db, newVIP(fmt.Sprintf("10.0.0.%d", i+1), 80)).ID)
			// Another subscriber that keeps up loses nothing.
			assertEvents(t, receiveEvents(t, keeper, 1), []sdnlb.Event{{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: ids[i]}})
		}

		got := receiveEvents(t, events, 3)
		assertEvents(t, got, []sdnlb.Event{
			{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: ids[0]},
			{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: ids[1]},
			{Op: sdnlb.OpResync},
		})
		if got[2].Seq != 3 {
			t.Fatalf("resync seq %d, want 3 (the first event lost)", got[2].Seq)
		}
		// Exactly one resync: none is left to deliver, and no other came.
		lbstore.WaitResyncs(t, db)
		assertNoEvent(t, events)

		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.99", 80))
		after := receiveEvents(t, events, 1)
		assertEvents(t, after, []sdnlb.Event{{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: v.ID}})
		if after[0].Seq != 6 {
			t.Fatalf("seq %d after the resync, want 6", after[0].Seq)
		}
	})

	t.Run("UnsubscribeCloses", func(t *testing.T) {
		ctx := context.Background()
		db := lbstore.NewDB(lbstore.NewTestDSN(t))
		db.EventBuffer = 1
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		defer MustCloseDB(t, db)
		s := lbstore.NewEventService(db)
		idle, cancelIdle := s.Subscribe()
		full, cancelFull := s.Subscribe()
		// Overflow full: a resync is waiting to be delivered when it goes.
		MustCreateVIP(t, ctx, db, newVIP("10.0.0.1", 80))
		MustCreateVIP(t, ctx, db, newVIP("10.0.0.2", 80))

		cancelFull()
		cancelFull() // twice is harmless
		receiveEvents(t, full, 1)
		if _, ok := <-full; ok {
			t.Fatal("channel open after cancel")
		}
		// The others go on.
		cancelIdle()
		for range idle {
		}
		MustCreateVIP(t, ctx, db, newVIP("10.0.0.3", 80))
	})

	t.Run("BeforeOpen", func(t *testing.T) {
		ctx := context.Background()
		db := lbstore.NewDB(lbstore.NewTestDSN(t))
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		defer MustCloseDB(t, db)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.1", 80))
		assertEvents(t, receiveEvents(t, events, 1), []sdnlb.Event{{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: v.ID}})
	})

	t.Run("CloseEnds", func(t *testing.T) {
		db := MustOpenDB(t)
		s := lbstore.NewEventService(db)
		events, cancel := s.Subscribe()
		MustCloseDB(t, db)
		if _, ok := <-events; ok {
			t.Fatal("feed open after the db closed")
		}
		cancel() // still harmless
		late, _ := s.Subscribe()
		if _, ok := <-late; ok {
			t.Fatal("subscribed to a closed db")
		}
	})

	t.Run("SubscribeThenLoadMissesNothing", func(t *testing.T) {
		// A consumer subscribes and then loads while writes go on. Each
		// step waits for a write of its own, so that writes commit before
		// the subscription (the load holds them, the feed does not),
		// between it and the load (both hold them) and after the load
		// (the feed alone holds them).
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newPool(""))
		const most = 10000 // a bound for a test gone wrong
		var (
			first = make(chan struct{}) // closed at the first write
			stop  = make(chan struct{}) // ends the writes
			wrote = make(chan []string, 1)
		)
		go func() {
			var ids []string
			defer func() { wrote <- ids }()
			for i := range most {
				select {
				case <-stop:
					return
				default:
				}
				m := newMember(p.ID, fmt.Sprintf("10.0.%d.%d", i/250, i%250+1), 80)
				if err := lbstore.NewMemberService(db).CreateMember(ctx, m); err != nil {
					t.Error(err)
					return
				}
				ids = append(ids, m.ID)
				if i == 0 {
					close(first)
				}
			}
			t.Errorf("the writes went on for %d members", most)
		}()
		var ids []string
		stopWrites := sync.OnceFunc(func() {
			close(stop)
			ids = <-wrote
		})
		defer stopWrites() // should the test fail first

		select {
		case <-first:
		case <-time.After(5 * time.Second):
			t.Fatal("no write in 5s")
		}
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()
		// A write after the subscription, and then one after the load.
		feed := receiveEvents(t, events, 1)
		cfg := MustLoadConfig(t, ctx, db)
		for feed[len(feed)-1].Seq <= cfg.Seq {
			feed = append(feed, receiveEvents(t, events, 1)...)
		}
		stopWrites()
		// Each write's event was published before the write returned.
		for len(events) > 0 {
			feed = append(feed, <-events)
		}

		seen := make(map[string]bool)
		for _, m := range cfg.Members {
			seen[m.ID] = true
		}
		inLoad := len(seen)
		inFeed := make(map[string]bool)
		for _, e := range feed {
			if e.Kind != sdnlb.KindMember || e.Op != sdnlb.OpCreate {
				t.Fatalf("event %+v, want only the members' creation", e)
			}
			inFeed[e.ID] = true
			if e.Seq > cfg.Seq {
				seen[e.ID] = true
			} else if !seen[e.ID] {
				t.Fatalf("event %+v has seq <= %d but the load does not hold it", e, cfg.Seq)
			}
		}
		for _, id := range ids {
			if !seen[id] {
				t.Fatalf("member %s neither in the load (seq %d, %d members) nor in the feed", id, cfg.Seq, inLoad)
			}
		}
		// The three kinds of write happened.
		if !seen[ids[0]] || inFeed[ids[0]] {
			t.Fatalf("the write before the subscription: in the load %v, in the feed %v; want the load alone", seen[ids[0]], inFeed[ids[0]])
		}
		if feed[0].Seq > cfg.Seq {
			t.Fatalf("the write before the load has seq %d, after the load's %d", feed[0].Seq, cfg.Seq)
		}
		if inLoad >= len(ids) {
			t.Fatalf("the load holds all %d members: no write after it", len(ids))
		}
		t.Logf("%d writes: %d in the load, %d in the feed, %d in both", len(ids), inLoad, len(inFeed), inLoad+len(inFeed)-len(ids))
	})
}
