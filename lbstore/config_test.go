package lbstore_test

import (
	"context"
	"iter"
	"reflect"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

func TestConfigService_LoadConfig(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewConfigService(db)
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()

		empty, err := s.LoadConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if empty.Seq != 0 || len(empty.VIPs)+len(empty.Pools)+len(empty.Members)+len(empty.Monitors) != 0 {
			t.Fatalf("empty store: %s", dumpConfig(empty))
		}

		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		MustAssociate(t, ctx, db, p.ID, mon.ID)
		published := receiveEvents(t, events, 5)

		cfg, err := s.LoadConfig(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Seq != published[len(published)-1].Seq {
			t.Fatalf("seq %d, want the last published %d", cfg.Seq, published[len(published)-1].Seq)
		}
		// Each object as its own Find returns it.
		wantVIP, _ := lbstore.NewVIPService(db).FindVIPByID(ctx, v.ID)
		wantPool, _ := lbstore.NewPoolService(db).FindPoolByID(ctx, p.ID)
		wantMember, _ := lbstore.NewMemberService(db).FindMemberByID(ctx, m.ID)
		wantMonitor, _ := lbstore.NewMonitorService(db).FindMonitorByID(ctx, mon.ID)
		want := &sdnlb.Config{
			Seq: cfg.Seq, VIPs: []*sdnlb.VIP{wantVIP}, Pools: []*sdnlb.Pool{wantPool},
			Members: []*sdnlb.Member{wantMember}, Monitors: []*sdnlb.Monitor{wantMonitor},
		}
		if !reflect.DeepEqual(cfg, want) {
			t.Fatalf("got %s\nwant %s", dumpConfig(cfg), dumpConfig(want))
		}
		if wantVIP.Status != sdnlb.VIPActive || !reflect.DeepEqual(wantPool.MonitorIDs, []string{mon.ID}) {
			t.Fatalf("derived fields: vip %s, pool monitors %v", wantVIP.Status, wantPool.MonitorIDs)
		}
	})
}

// mustExport collects what ExportConfig streams.
func mustExport(tb testing.TB, ctx context.Context, db *lbstore.DB) (cfg *sdnlb.Config, etag string) {
	tb.Helper()
	cfg = &sdnlb.Config{}
	err := lbstore.NewConfigService(db).ExportConfig(ctx, func(cs *sdnlb.ConfigStream) error {
		etag = cs.ETag
		var err error
		if cfg.VIPs, err = collect(cs.VIPs); err != nil {
			return err
		}
		if cfg.Pools, err = collect(cs.Pools); err != nil {
			return err
		}
		if cfg.Members, err = collect(cs.Members); err != nil {
			return err
		}
		cfg.Monitors, err = collect(cs.Monitors)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return cfg, etag
}

func collect[T any](seq iter.Seq2[*T, error]) ([]*T, error) {
	var objs []*T
	for obj, err := range seq {
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// The export streams what LoadConfig reads, under a tag that every write
// changes and health does not; it makes no writer wait, nor waits for
// one.
func TestConfigService_ExportConfig(t *testing.T) {
	ctx, db := mustSetup(t)
	v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
	p := MustCreatePool(t, ctx, db, newPool(v.ID))
	m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
	MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.2", 80))
	mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())

	release := lbstore.HoldWriteLock(t, db)
	exported, etag := mustExport(t, ctx, db)
	release()
	loaded := MustLoadConfig(t, ctx, db)
	exported.Seq = loaded.Seq
	if !reflect.DeepEqual(exported, loaded) {
		t.Fatalf("exported %s\nloaded %s", dumpConfig(exported), dumpConfig(loaded))
	}
	if want := sdnlb.ConfigETag(loaded); etag != want {
		t.Fatalf("ETag %s, want ConfigETag's %s", etag, want)
	}

	if err := lbstore.NewMemberHealthService(db).SetMemberHealth(ctx, m.ID, sdnlb.MemberHealth{Status: sdnlb.MemberDown}); err != nil {
		t.Fatal(err)
	}
	if _, again := mustExport(t, ctx, db); again != etag {
		t.Errorf("a health change moved the ETag from %s to %s", etag, again)
	}
	seen := map[string]bool{etag: true}
	for _, w := range []struct {
		name  string
		write func() error
	}{
		{"associate", func() error { return lbstore.NewPoolService(db).AssociateMonitor(ctx, p.ID, mon.ID) }},
		{"update", func() error {
			_, err := lbstore.NewMemberService(db).UpdateMember(ctx, m.ID, sdnlb.MemberUpdate{Weight: ptr(2)})
			return err
		}},
		{"delete", func() error { return lbstore.NewMemberService(db).DeleteMember(ctx, m.ID) }},
	} {
		if err := w.write(); err != nil {
			t.Fatal(err)
		}
		_, tag := mustExport(t, ctx, db)
		if seen[tag] {
			t.Errorf("after the %s the ETag %s is one seen before", w.name, tag)
		}
		seen[tag] = true
	}

	// A consumer that stops early leaves the store usable.
	err := lbstore.NewConfigService(db).ExportConfig(ctx, func(cs *sdnlb.ConfigStream) error {
		for range cs.Members {
			break
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	MustCreateVIP(t, ctx, db, newVIP("10.0.0.101", 80))
}

func TestConfigService_Clear(t *testing.T) {
	ctx, db := mustSetup(t)
	s := lbstore.NewConfigService(db)
	v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
	p := MustCreatePool(t, ctx, db, newPool(v.ID))
	MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
	mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
	MustAssociate(t, ctx, db, p.ID, mon.ID)
	events, cancel := lbstore.NewEventService(db).Subscribe()
	defer cancel()

	if err := s.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	assertEvents(t, receiveEvents(t, events, 1), []sdnlb.Event{{Op: sdnlb.OpResync}})
	assertNoEvent(t, events)
	cfg := MustLoadConfig(t, ctx, db)
	if len(cfg.VIPs)+len(cfg.Pools)+len(cfg.Members)+len(cfg.Monitors) != 0 {
		t.Fatalf("after clear: %s", dumpConfig(cfg))
	}
	// The same ids and listeners are free again.
	v2 := newVIP("10.0.0.100", 80)
	v2.ID = v.ID
	MustCreateVIP(t, ctx, db, v2)
}

// BenchmarkConfigService_LoadConfig loads a configuration of 10k members
// in 10 pools.
func BenchmarkConfigService_LoadConfig(b *testing.B) {
	ctx, db := mustSetup(b)
	mon := MustCreateMonitor(b, ctx, db, sdnlb.NewMonitor())
	for i := range 10 {
		v := MustCreateVIP(b, ctx, db, newVIP("10.0.0.100", 80+i))
		p := MustCreatePool(b, ctx, db, newPool(v.ID))
		MustAssociate(b, ctx, db, p.ID, mon.ID)
		lbstore.SeedMembers(b, db, p.ID, 1_000)
	}
	s := lbstore.NewConfigService(db)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		cfg, err := s.LoadConfig(ctx)
		if err != nil {
			b.Fatal(err)
		} else if len(cfg.Members) != 10_000 {
			b.Fatalf("%d members", len(cfg.Members))
		}
	}
}
