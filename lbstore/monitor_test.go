package lbstore_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

func newHTTPMonitor() *sdnlb.Monitor {
	m := sdnlb.NewMonitor()
	m.Name = "http"
	m.Type = sdnlb.MonitorHTTPS
	m.Delay, m.Timeout = 0.5, 0.25
	m.MaxRetries, m.Rise = 4, 3
	m.HTTPMethod, m.URLPath, m.ExpectedCodes = "HEAD", "/healthz", "200-299,302"
	m.TLSVerify = true
	return m
}

func TestMonitorService_CreateMonitor(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewMonitorService(db)
		m := newHTTPMonitor()
		m.PoolIDs = []string{"ignored"} // read-only
		if err := s.CreateMonitor(ctx, m); err != nil {
			t.Fatal(err)
		}
		if m.ID == "" || m.PoolIDs == nil || len(m.PoolIDs) != 0 || m.CreatedAt.IsZero() {
			t.Fatalf("created %+v", m)
		}
		got, err := s.FindMonitorByID(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		} else if !reflect.DeepEqual(got, m) {
			t.Fatalf("read back %+v, want %+v", got, m)
		}
	})

	for _, tc := range []struct {
		name, code, field string
		setup             func(tb testing.TB, ctx context.Context, db *lbstore.DB) *sdnlb.Monitor
	}{
		{"ErrInvalid", sdnlb.EINVALID, "timeout", func(tb testing.TB, ctx context.Context, db *lbstore.DB) *sdnlb.Monitor {
			m := sdnlb.NewMonitor()
			m.Timeout = m.Delay
			return m
		}},
		{"ErrConflictID", sdnlb.ECONFLICT, "id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) *sdnlb.Monitor {
			m := sdnlb.NewMonitor()
			m.ID = "mon1"
			MustCreateMonitor(tb, ctx, db, m)
			dup := sdnlb.NewMonitor()
			dup.ID = "mon1"
			return dup
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := mustSetup(t)
			m := tc.setup(t, ctx, db)
			before := MustLoadConfig(t, ctx, db)
			assertError(t, lbstore.NewMonitorService(db).CreateMonitor(ctx, m), tc.code, tc.field)
			assertUnchanged(t, ctx, db, before)
		})
	}
}

func TestMonitorService_UpdateMonitor(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewMonitorService(db)
		m := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		p := MustCreatePool(t, ctx, db, newPool(""))
		MustAssociate(t, ctx, db, p.ID, m.ID)
		m, _ = s.FindMonitorByID(ctx, m.ID)

		got, err := s.UpdateMonitor(ctx, m.ID, sdnlb.MonitorUpdate{Type: ptr(sdnlb.MonitorHTTP), Delay: ptr(sdnlb.Seconds(0.2)), Timeout: ptr(sdnlb.Seconds(0.1))})
		if err != nil {
			t.Fatal(err)
		}
		want := *m
		want.Type, want.Delay, want.Timeout, want.UpdatedAt = sdnlb.MonitorHTTP, 0.2, 0.1, got.UpdatedAt
		if !reflect.DeepEqual(got, &want) || !got.UpdatedAt.After(m.UpdatedAt) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	})

	testRejectedUpdates(t, func(ctx context.Context, db *lbstore.DB, id string, upd sdnlb.MonitorUpdate) (*sdnlb.Monitor, error) {
		return lbstore.NewMonitorService(db).UpdateMonitor(ctx, id, upd)
	}, []rejectedUpdate[sdnlb.MonitorUpdate]{
		{"ErrNotFound", sdnlb.ENOTFOUND, "", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MonitorUpdate) {
			return "nope", sdnlb.MonitorUpdate{Rise: ptr(1)}
		}},
		{"ErrInvalid", sdnlb.EINVALID, "expected_codes", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MonitorUpdate) {
			m := MustCreateMonitor(tb, ctx, db, sdnlb.NewMonitor())
			return m.ID, sdnlb.MonitorUpdate{Rise: ptr(1), Type: ptr(sdnlb.MonitorHTTP), ExpectedCodes: ptr("2xx")}
		}},
	})
}

func TestMonitorService_UpdateAllMonitors(t *testing.T) {
	setup := func(tb testing.TB, ctx context.Context, db *lbstore.DB) []*sdnlb.Monitor {
		var mons []*sdnlb.Monitor
		for i := range 3 {
			m := sdnlb.NewMonitor()
			m.ID = fmt.Sprintf("mon%d", i)
			m.AdminStateUp = i != 1
			mons = append(mons, MustCreateMonitor(tb, ctx, db, m))
		}
		return mons
	}

	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewMonitorService(db)
		mons := setup(t, ctx, db)
		events, cancel := lbstore.NewEventService(db).Subscribe()
		defer cancel()

		n, err := s.UpdateAllMonitors(ctx, sdnlb.MonitorUpdate{AdminStateUp: ptr(false)})
		if err != nil {
			t.Fatal(err)
		} else if n != 2 {
			t.Fatalf("changed %d, want 2", n)
		}
		assertEvents(t, receiveEvents(t, events, 2), []sdnlb.Event{
			{Kind: sdnlb.KindMonitor, Op: sdnlb.OpUpdate, ID: "mon0"},
			{Kind: sdnlb.KindMonitor, Op: sdnlb.OpUpdate, ID: "mon2"},
		})
		got, err := s.FindMonitors(ctx, sdnlb.MonitorFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range got {
			if m.AdminStateUp {
				t.Fatalf("%s still admin up", m.ID)
			}
			if unchanged := i == 1; unchanged != m.UpdatedAt.Equal(mons[i].UpdatedAt) {
				t.Fatalf("%s updated_at %v, before %v", m.ID, m.UpdatedAt, mons[i].UpdatedAt)
			}
		}

		if n, err := s.UpdateAllMonitors(ctx, sdnlb.MonitorUpdate{AdminStateUp: ptr(false)}); err != nil || n != 0 {
			t.Fatalf("again: changed %d, %v; want 0", n, err)
		}
		assertNoEvent(t, events)
	})

	t.Run("ErrInvalid", func(t *testing.T) {
		ctx, db := mustSetup(t)
		setup(t, ctx, db)
		before := MustLoadConfig(t, ctx, db)
		// A delay of 2 s is below the default timeout of 2 s for every
		// monitor: the first one fails and nothing is written.
		_, err := lbstore.NewMonitorService(db).UpdateAllMonitors(ctx, sdnlb.MonitorUpdate{Delay: ptr(sdnlb.Seconds(2))})
		assertError(t, err, sdnlb.EINVALID, "timeout", "mon0")
		assertUnchanged(t, ctx, db, before)
	})
}

func TestMonitorService_DeleteMonitor(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewMonitorService(db)
		m := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		if err := s.DeleteMonitor(ctx, m.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err := s.FindMonitorByID(ctx, m.ID)
		assertError(t, err, sdnlb.ENOTFOUND, "")
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		ctx, db := mustSetup(t)
		assertError(t, lbstore.NewMonitorService(db).DeleteMonitor(ctx, "nope", true), sdnlb.ENOTFOUND, "")
	})

	t.Run("ErrConflictPools", func(t *testing.T) {
		ctx, db := mustSetup(t)
		m := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		p1 := MustCreatePool(t, ctx, db, newPool(""))
		p2 := MustCreatePool(t, ctx, db, newPool(""))
		MustAssociate(t, ctx, db, p1.ID, m.ID)
		MustAssociate(t, ctx, db, p2.ID, m.ID)
		before := MustLoadConfig(t, ctx, db)
		assertError(t, lbstore.NewMonitorService(db).DeleteMonitor(ctx, m.ID, false), sdnlb.ECONFLICT, "", p1.ID, p2.ID)
		assertUnchanged(t, ctx, db, before)
	})

	t.Run("OKCascade", func(t *testing.T) {
		ctx, db := mustSetup(t)
		m := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		kept := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		p := MustCreatePool(t, ctx, db, newPool(""))
		MustAssociate(t, ctx, db, p.ID, m.ID)
		MustAssociate(t, ctx, db, p.ID, kept.ID)
		if err := lbstore.NewMonitorService(db).DeleteMonitor(ctx, m.ID, true); err != nil {
			t.Fatal(err)
		}
		got, err := lbstore.NewPoolService(db).FindPoolByID(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		} else if !reflect.DeepEqual(got.MonitorIDs, []string{kept.ID}) {
			t.Fatalf("pool monitors %v, want [%s]", got.MonitorIDs, kept.ID)
		}
	})
}

func TestMonitorService_FindMonitors(t *testing.T) {
	ctx, db := mustSetup(t)
	s := lbstore.NewMonitorService(db)
	p := MustCreatePool(t, ctx, db, newPool(""))
	for i := range 4 {
		m := sdnlb.NewMonitor()
		m.ID = fmt.Sprintf("mon%d", 3-i)
		MustCreateMonitor(t, ctx, db, m)
		if i != 1 {
			MustAssociate(t, ctx, db, p.ID, m.ID)
		}
	}
	testFind(t, ctx, s.FindMonitors, func(m *sdnlb.Monitor) string { return m.ID }, []findCase[sdnlb.MonitorFilter]{
		{"All", sdnlb.MonitorFilter{}, []string{"mon0", "mon1", "mon2", "mon3"}},
		{"PoolID", sdnlb.MonitorFilter{PoolID: &p.ID}, []string{"mon0", "mon1", "mon3"}},
		{"PoolIDPage", sdnlb.MonitorFilter{PoolID: &p.ID, Page: sdnlb.Page{After: "mon0", Limit: 1}}, []string{"mon1"}},
		{"None", sdnlb.MonitorFilter{PoolID: ptr("nope")}, []string{}},
	})
}
