package lbstore_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

func TestMemberService_CreateMember(t *testing.T) {
	for _, tc := range []struct {
		name     string
		monitor  bool // the pool has a monitor
		up       bool // which is admin up
		adminUp  bool
		weight   int
		health   sdnlb.MemberStatus
		wantStat sdnlb.MemberStatus
	}{
		{name: "OKNoMonitor", adminUp: true, weight: 1, health: sdnlb.MemberNoMonitor, wantStat: sdnlb.MemberNoMonitor},
		{name: "OKMonitored", monitor: true, up: true, adminUp: true, weight: 1, health: sdnlb.MemberDown, wantStat: sdnlb.MemberDown},
		{name: "OKMonitorAdminDown", monitor: true, up: false, adminUp: true, weight: 1, health: sdnlb.MemberNoMonitor, wantStat: sdnlb.MemberNoMonitor},
		{name: "OKAdminDown", adminUp: false, weight: 1, health: sdnlb.MemberNoMonitor, wantStat: sdnlb.MemberDraining},
		{name: "OKWeightZero", adminUp: true, weight: 0, health: sdnlb.MemberNoMonitor, wantStat: sdnlb.MemberDraining},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := mustSetup(t)
			at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			p := MustCreatePool(t, ctx, db, newPool(""))
			if tc.monitor {
				mon := sdnlb.NewMonitor()
				mon.AdminStateUp = tc.up
				MustCreateMonitor(t, ctx, db, mon)
				MustAssociate(t, ctx, db, p.ID, mon.ID)
			}
			db.Now = func() time.Time { return at }

			m := newMember(p.ID, "10.0.0.1", 8080)
			m.AdminStateUp, m.Weight = tc.adminUp, tc.weight
			if err := lbstore.NewMemberService(db).CreateMember(ctx, m); err != nil {
				t.Fatal(err)
			}
			want := sdnlb.Member{
				ID: m.ID, PoolID: p.ID, Address: "10.0.0.1", Port: 8080, Weight: tc.weight, AdminStateUp: tc.adminUp,
				Status: tc.wantStat, Health: sdnlb.MemberHealth{Status: tc.health, Since: at},
				CreatedAt: at, UpdatedAt: at, Num: 1,
			}
			if m.ID == "" || !reflect.DeepEqual(*m, want) {
				t.Fatalf("created %+v, want %+v", *m, want)
			}
			got, err := lbstore.NewMemberService(db).FindMemberByID(ctx, m.ID)
			if err != nil {
				t.Fatal(err)
			} else if !reflect.DeepEqual(got, m) {
				t.Fatalf("read back %+v, want %+v", got, m)
			}
		})
	}

	t.Run("OKSameEndpointElsewhere", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p1 := MustCreatePool(t, ctx, db, newPool(""))
		p2 := MustCreatePool(t, ctx, db, newPool(""))
		MustCreateMember(t, ctx, db, newMember(p1.ID, "10.0.0.1", 80))
		MustCreateMember(t, ctx, db, newMember(p1.ID, "10.0.0.1", 81))
		MustCreateMember(t, ctx, db, newMember(p2.ID, "10.0.0.1", 80))
	})

	t.Run("OKDSRPorts", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newDSRPool(v.ID))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 0))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.2", 80))
		// A DSR pool without a VIP takes any port until it is linked.
		staged := MustCreatePool(t, ctx, db, newDSRPool(""))
		MustCreateMember(t, ctx, db, newMember(staged.ID, "10.0.0.1", 8080))
	})

	testRejectedCreates(t, func(ctx context.Context, db *lbstore.DB, obj *sdnlb.Member) error {
		return lbstore.NewMemberService(db).CreateMember(ctx, obj)
	}, []rejectedCreate[sdnlb.Member]{
		{"ErrDSRPort", sdnlb.EINVALID, "port", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Member, []string) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newDSRPool(v.ID))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 0))
			return newMember(p.ID, "10.0.0.2", 8080), []string{"DSR", "80", "8080"}
		}},
		{"ErrInvalid", sdnlb.EINVALID, "weight", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Member, []string) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			m := newMember(p.ID, "10.0.0.1", 80)
			m.Weight = sdnlb.MaxWeight + 1
			return m, nil
		}},
		{"ErrNotFoundPool", sdnlb.ENOTFOUND, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Member, []string) {
			return newMember("nope", "10.0.0.1", 80), []string{"nope"}
		}},
		{"ErrConflictID", sdnlb.ECONFLICT, "id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Member, []string) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			m := newMember(p.ID, "10.0.0.1", 80)
			m.ID = "m1"
			MustCreateMember(tb, ctx, db, m)
			dup := newMember(p.ID, "10.0.0.2", 80)
			dup.ID = "m1"
			return dup, []string{"m1"}
		}},
		{"ErrConflictEndpoint", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Member, []string) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			other := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
			return newMember(p.ID, "10.0.0.1", 80), []string{other.ID}
		}},
		// Any VIP, whichever pool serves it.
		{"ErrConflictVIPAddress", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Member, []string) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newPool(""))
			return newMember(p.ID, "10.0.0.100", 8080), []string{"vip " + v.ID, "10.0.0.100"}
		}},
	})
}

func TestMemberService_UpdateMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewMemberService(db)
		p := MustCreatePool(t, ctx, db, newPool(""))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))

		// Repeating the member's own pool is not a move.
		got, err := s.UpdateMember(ctx, m.ID, sdnlb.MemberUpdate{PoolID: &p.ID, Address: ptr("10.0.0.2"), Port: ptr(81), Weight: ptr(0),
			Capacity: ptr(500)})
		if err != nil {
			t.Fatal(err)
		}
		want := *m
		want.Address, want.Port, want.Weight, want.Capacity, want.Status, want.UpdatedAt = "10.0.0.2", 81, 0, 500, sdnlb.MemberDraining, got.UpdatedAt
		if !reflect.DeepEqual(got, &want) || !got.UpdatedAt.After(m.UpdatedAt) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		if read, _ := s.FindMemberByID(ctx, m.ID); !reflect.DeepEqual(read, got) {
			t.Fatalf("read back %+v, want %+v", read, got)
		}
	})

	t.Run("OKDSRPort", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newDSRPool(v.ID))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 0))
		if _, err := lbstore.NewMemberService(db).UpdateMember(ctx, m.ID, sdnlb.MemberUpdate{Port: ptr(80)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ErrConflictVIPAddress", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
		before := MustLoadConfig(t, ctx, db)
		_, err := lbstore.NewMemberService(db).UpdateMember(ctx, m.ID, sdnlb.MemberUpdate{Weight: ptr(9), Address: ptr("10.0.0.100")})
		assertError(t, err, sdnlb.ECONFLICT, "address", "vip "+v.ID)
		assertUnchanged(t, ctx, db, before)
	})

	testRejectedUpdates(t, func(ctx context.Context, db *lbstore.DB, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error) {
		return lbstore.NewMemberService(db).UpdateMember(ctx, id, upd)
	}, []rejectedUpdate[sdnlb.MemberUpdate]{
		{"ErrDSRPort", sdnlb.EINVALID, "port", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MemberUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newDSRPool(v.ID))
			m := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 0))
			return m.ID, sdnlb.MemberUpdate{Weight: ptr(9), Port: ptr(8080)}
		}},
		{"ErrNotFound", sdnlb.ENOTFOUND, "", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MemberUpdate) {
			return "nope", sdnlb.MemberUpdate{Weight: ptr(2)}
		}},
		{"ErrCapacity", sdnlb.EINVALID, "capacity", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MemberUpdate) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			m := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
			return m.ID, sdnlb.MemberUpdate{Weight: ptr(9), Capacity: ptr(sdnlb.MaxCapacity + 1)}
		}},
		{"ErrInvalid", sdnlb.EINVALID, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MemberUpdate) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			m := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
			return m.ID, sdnlb.MemberUpdate{Weight: ptr(9), Address: ptr("127.0.0.1")}
		}},
		{"ErrConflictEndpoint", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MemberUpdate) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
			m := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.2", 80))
			return m.ID, sdnlb.MemberUpdate{Weight: ptr(9), Address: ptr("10.0.0.1")}
		}},
		{"ErrPoolChange", sdnlb.EINVALID, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MemberUpdate) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			other := MustCreatePool(tb, ctx, db, newPool(""))
			m := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
			return m.ID, sdnlb.MemberUpdate{Weight: ptr(9), PoolID: &other.ID}
		}},
	})
}

func TestMemberService_DeleteMember(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewMemberService(db)
		p := MustCreatePool(t, ctx, db, newPool(""))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		if err := s.DeleteMember(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
		_, err := s.FindMemberByID(ctx, m.ID)
		assertError(t, err, sdnlb.ENOTFOUND, "")
		// With the member gone the pool can go without cascade.
		if err := lbstore.NewPoolService(db).DeletePool(ctx, p.ID, false); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		ctx, db := mustSetup(t)
		assertError(t, lbstore.NewMemberService(db).DeleteMember(ctx, "nope"), sdnlb.ENOTFOUND, "")
	})
}

func TestMemberService_FindMembers(t *testing.T) {
	ctx, db := mustSetup(t)
	s := lbstore.NewMemberService(db)
	p1 := MustCreatePool(t, ctx, db, newPool(""))
	p2 := MustCreatePool(t, ctx, db, newPool(""))
	for i := range 6 {
		pool := p1.ID
		if i >= 4 {
			pool = p2.ID
		}
		m := newMember(pool, fmt.Sprintf("10.0.0.%d", 1+i%3), 80+i)
		m.ID = fmt.Sprintf("m%d", 5-i)
		MustCreateMember(t, ctx, db, m)
	}
	// p1: m5 .1, m4 .2, m3 .3, m2 .1; p2: m1 .2, m0 .3

	testFind(t, ctx, s.FindMembers, func(m *sdnlb.Member) string { return m.ID }, []findCase[sdnlb.MemberFilter]{
		{"All", sdnlb.MemberFilter{}, []string{"m0", "m1", "m2", "m3", "m4", "m5"}},
		{"PoolID", sdnlb.MemberFilter{PoolID: &p1.ID}, []string{"m2", "m3", "m4", "m5"}},
		{"Address", sdnlb.MemberFilter{Address: ptr("10.0.0.1")}, []string{"m2", "m5"}},
		{"PoolIDAndAddress", sdnlb.MemberFilter{PoolID: &p2.ID, Address: ptr("10.0.0.2")}, []string{"m1"}},
		{"PoolIDPage", sdnlb.MemberFilter{PoolID: &p1.ID, Page: sdnlb.Page{After: "m2", Limit: 2}}, []string{"m3", "m4"}},
		{"PoolIDLastPage", sdnlb.MemberFilter{PoolID: &p1.ID, Page: sdnlb.Page{After: "m4", Limit: 2}}, []string{"m5"}},
		{"None", sdnlb.MemberFilter{PoolID: ptr("nope")}, []string{}},
	})
}

func TestMemberHealthService_SetMemberHealth(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewMemberHealthService(db)
		p := MustCreatePool(t, ctx, db, newPool(""))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()

		since := time.Date(2026, 2, 3, 4, 5, 6, 700000000, time.UTC)
		check := since.Add(1500 * time.Millisecond)
		h := sdnlb.MemberHealth{Status: sdnlb.MemberDown, Since: since, LastCheck: &check, LatencyMS: 12.5, LastError: "connection refused"}
		if err := s.SetMemberHealth(ctx, m.ID, h); err != nil {
			t.Fatal(err)
		}
		got, err := lbstore.NewMemberService(db).FindMemberByID(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Health, h) || got.Status != sdnlb.MemberDown {
			t.Fatalf("health %+v status %s, want %+v", got.Health, got.Status, h)
		}
		if !got.UpdatedAt.Equal(m.UpdatedAt) {
			t.Fatal("health changed updated_at")
		}
		// Same status again: stored, but no event.
		h.LatencyMS = 20
		if err := s.SetMemberHealth(ctx, m.ID, h); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMemberHealth(ctx, m.ID, sdnlb.MemberHealth{Status: sdnlb.MemberUp}); err != nil {
			t.Fatal(err)
		}
		if got, _ = lbstore.NewMemberService(db).FindMemberByID(ctx, m.ID); got.Health.Since.IsZero() || got.Health.LastCheck != nil {
			t.Fatalf("zero since must mean now: %+v", got.Health)
		}
		want := []sdnlb.Event{
			{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: m.ID, Status: sdnlb.MemberDown},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: m.ID, Status: sdnlb.MemberUp},
		}
		evs := receiveEvents(t, events, len(want))
		assertEvents(t, evs, want)
		if !evs[0].At.Equal(since) {
			t.Errorf("health event at %v, want the status's since %v", evs[0].At, since)
		}
		assertNoEvent(t, events)
	})

	t.Run("Agent", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewMemberHealthService(db)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()

		at := time.Date(2026, 2, 3, 4, 5, 6, 700000000, time.UTC)
		set := func(agent *sdnlb.AgentReport) {
			t.Helper()
			if err := s.SetMemberHealth(ctx, m.ID, sdnlb.MemberHealth{Status: sdnlb.MemberUp, Since: at, Agent: agent}); err != nil {
				t.Fatal(err)
			}
		}
		read := func() (*sdnlb.Member, sdnlb.VIPStatus) {
			t.Helper()
			cfg := MustLoadConfig(t, ctx, db)
			return cfg.Members[0], cfg.VIPs[0].Status
		}
		set(&sdnlb.AgentReport{Available: 75, At: at})
		got, vipStatus := read()
		if a := got.Health.Agent; a == nil || a.Available != 75 || a.Drain || !a.At.Equal(at) || got.Status != sdnlb.MemberUp || vipStatus != sdnlb.VIPActive {
			t.Fatalf("stored agent %+v, member %s, vip %s; want 75%% at %v, UP and ACTIVE", a, got.Status, vipStatus, at)
		}
		// Said again later: stored, but nothing for the controllers.
		set(&sdnlb.AgentReport{Available: 75, At: at.Add(time.Second)})
		if got, _ = read(); !got.Health.Agent.At.Equal(at.Add(time.Second)) {
			t.Fatalf("agent said again at %v, want %v", got.Health.Agent.At, at.Add(time.Second))
		}
		set(&sdnlb.AgentReport{Available: 40, At: at.Add(2 * time.Second)})
		// A drain takes the member out of rotation, and its VIP with it.
		drain := &sdnlb.AgentReport{Available: 40, Drain: true, At: at.Add(3 * time.Second)}
		set(drain)
		drain.Available = 1 // the store keeps its own copy
		if got, vipStatus = read(); got.Status != sdnlb.MemberDraining || vipStatus != sdnlb.VIPDown || got.Health.Agent.Available != 40 {
			t.Fatalf("drained member %s (agent %+v), vip %s; want DRAINING and DOWN", got.Status, got.Health.Agent, vipStatus)
		}
		set(nil) // the agent monitor went
		if got, vipStatus = read(); got.Health.Agent != nil || got.Status != sdnlb.MemberUp || vipStatus != sdnlb.VIPActive {
			t.Fatalf("agent %+v, member %s, vip %s after the report went; want none, UP and ACTIVE", got.Health.Agent, got.Status, vipStatus)
		}
		want := []sdnlb.Event{
			{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: m.ID, Status: sdnlb.MemberUp, Agent: &sdnlb.AgentReport{Available: 75, At: at}},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: m.ID, Status: sdnlb.MemberUp, Agent: &sdnlb.AgentReport{Available: 40, At: at.Add(2 * time.Second)}},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: m.ID, Status: sdnlb.MemberUp, Agent: &sdnlb.AgentReport{Available: 40, Drain: true, At: at.Add(3 * time.Second)}},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: m.ID, Status: sdnlb.MemberUp},
		}
		assertEvents(t, receiveEvents(t, events, len(want)), want)
		assertNoEvent(t, events)
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		ctx, db := mustSetup(t)
		err := lbstore.NewMemberHealthService(db).SetMemberHealth(ctx, "nope", sdnlb.MemberHealth{Status: sdnlb.MemberUp})
		assertError(t, err, sdnlb.ENOTFOUND, "")
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newPool(""))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		before := MustLoadConfig(t, ctx, db)
		for _, status := range []sdnlb.MemberStatus{sdnlb.MemberDraining, "", "SICK"} {
			err := lbstore.NewMemberHealthService(db).SetMemberHealth(ctx, m.ID, sdnlb.MemberHealth{Status: status})
			assertError(t, err, sdnlb.EINVALID, "status")
		}
		for _, available := range []int{-1, 101} {
			err := lbstore.NewMemberHealthService(db).SetMemberHealth(ctx, m.ID,
				sdnlb.MemberHealth{Status: sdnlb.MemberUp, Agent: &sdnlb.AgentReport{Available: available}})
			assertError(t, err, sdnlb.EINVALID, "agent.available")
		}
		assertUnchanged(t, ctx, db, before)
	})
}

func BenchmarkMemberService_CreateMember(b *testing.B) {
	ctx, db := mustSetup(b)
	s := lbstore.NewMemberService(db)
	p := MustCreatePool(b, ctx, db, newPool(""))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := s.CreateMember(ctx, newMember(p.ID, fmt.Sprintf("10.%d.%d.%d", i/62500%250, i/250%250, i%250+1), 80)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemberService_FindMembers reads pages of 100 members of one pool
// of 100k (among 101k members), walking the pool page after page.
func BenchmarkMemberService_FindMembers(b *testing.B) {
	ctx, db := mustSetup(b)
	s := lbstore.NewMemberService(db)
	p := MustCreatePool(b, ctx, db, newPool(""))
	other := MustCreatePool(b, ctx, db, newPool(""))
	lbstore.SeedMembers(b, db, p.ID, 100_000)
	lbstore.SeedMembers(b, db, other.ID, 1_000)
	filter := sdnlb.MemberFilter{PoolID: &p.ID, Page: sdnlb.Page{Limit: 100}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		page, err := s.FindMembers(ctx, filter)
		if err != nil {
			b.Fatal(err)
		}
		if len(page) < 100 {
			filter.After = "" // wrap around
			continue
		}
		filter.After = page[len(page)-1].ID
	}
}
