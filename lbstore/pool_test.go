package lbstore_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

func TestPoolService_CreatePool(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewPoolService(db)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))

		p := newPool(v.ID)
		p.LBMethod, p.Dispatch = sdnlb.LeastConnections, sdnlb.DispatchController
		p.MonitorIDs = []string{"ignored"} // read-only
		if err := s.CreatePool(ctx, p); err != nil {
			t.Fatal(err)
		}
		if p.ID == "" || p.VIPID != v.ID || p.MonitorIDs == nil || len(p.MonitorIDs) != 0 || p.CreatedAt.IsZero() {
			t.Fatalf("created %+v", p)
		}
		got, err := s.FindPoolByID(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		} else if !reflect.DeepEqual(got, p) {
			t.Fatalf("read back %+v, want %+v", got, p)
		}
		if vip, _ := lbstore.NewVIPService(db).FindVIPByID(ctx, v.ID); vip.PoolID != p.ID {
			t.Fatalf("vip pool %q, want %q", vip.PoolID, p.ID)
		}
	})

	t.Run("OKHashKey", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := newPool("")
		p.LBMethod, p.HashKey = sdnlb.ConsistentHash, sdnlb.HashKeyClient
		MustCreatePool(t, ctx, db, p)
		if got, err := lbstore.NewPoolService(db).FindPoolByID(ctx, p.ID); err != nil || got.HashKey != sdnlb.HashKeyClient {
			t.Fatalf("read back hash_key %q (%v), want %s", got.HashKey, err, sdnlb.HashKeyClient)
		}
	})

	t.Run("OKWithoutVIP", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newPool(""))
		if p.VIPID != "" {
			t.Fatalf("vip %q", p.VIPID)
		}
		MustCreatePool(t, ctx, db, newPool("")) // many pools may serve no VIP
	})

	t.Run("OKDefaultDispatchForwarding", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newPool(""))
		got, err := lbstore.NewPoolService(db).FindPoolByID(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		} else if got.Dispatch != sdnlb.DispatchSwitch || got.Forwarding != sdnlb.ForwardingNAT {
			t.Fatalf("dispatch %s forwarding %s, want SWITCH NAT", got.Dispatch, got.Forwarding)
		}
	})

	t.Run("OKControllerDSR", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := newDSRPool(v.ID)
		p.Dispatch = sdnlb.DispatchController
		MustCreatePool(t, ctx, db, p)
		// The controller reads pools through LoadConfig.
		cfg := MustLoadConfig(t, ctx, db)
		if len(cfg.Pools) != 1 || cfg.Pools[0].Dispatch != sdnlb.DispatchController || cfg.Pools[0].Forwarding != sdnlb.ForwardingDSR {
			t.Fatalf("loaded %s", dumpConfig(cfg))
		}
	})

	testRejectedCreates(t, func(ctx context.Context, db *lbstore.DB, obj *sdnlb.Pool) error {
		return lbstore.NewPoolService(db).CreatePool(ctx, obj)
	}, []rejectedCreate[sdnlb.Pool]{
		{"ErrInvalidDispatch", sdnlb.EINVALID, "dispatch", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Pool, []string) {
			p := newPool("")
			p.Dispatch = "HYBRID"
			return p, []string{"HYBRID", "SWITCH", "CONTROLLER"}
		}},
		{"ErrInvalidForwarding", sdnlb.EINVALID, "forwarding", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Pool, []string) {
			p := newPool("")
			p.Forwarding = "TUNNEL"
			return p, []string{"TUNNEL", "NAT", "DSR"}
		}},
		{"ErrInvalid", sdnlb.EINVALID, "lb_method", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Pool, []string) {
			p := newPool("")
			p.LBMethod = "FASTEST"
			return p, nil
		}},
		{"ErrConflictID", sdnlb.ECONFLICT, "id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Pool, []string) {
			p := newPool("")
			p.ID = "pool1"
			MustCreatePool(tb, ctx, db, p)
			dup := newPool("")
			dup.ID = "pool1"
			return dup, []string{"pool1"}
		}},
		{"ErrNotFoundVIP", sdnlb.ENOTFOUND, "vip_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Pool, []string) {
			return newPool("nope"), []string{"nope"}
		}},
		{"ErrConflictVIPServed", sdnlb.ECONFLICT, "vip_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Pool, []string) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			other := MustCreatePool(tb, ctx, db, newPool(v.ID))
			return newPool(v.ID), []string{other.ID}
		}},
		{"ErrInvalidProtocol", sdnlb.EINVALID, "protocol", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Pool, []string) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := newPool(v.ID)
			p.Protocol = sdnlb.ProtocolUDP
			return p, []string{v.ID}
		}},
	})
}

func TestPoolService_UpdatePool(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewPoolService(db)
		p := MustCreatePool(t, ctx, db, newPool(""))
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))

		got, err := s.UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{VIPID: &v.ID, LBMethod: ptr(sdnlb.Random), Description: ptr("d")})
		if err != nil {
			t.Fatal(err)
		}
		want := *p
		want.VIPID, want.LBMethod, want.Description, want.UpdatedAt = v.ID, sdnlb.Random, "d", got.UpdatedAt
		if !reflect.DeepEqual(got, &want) || !got.UpdatedAt.After(p.UpdatedAt) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		if vip, _ := lbstore.NewVIPService(db).FindVIPByID(ctx, v.ID); vip.PoolID != p.ID {
			t.Fatalf("vip pool %q, want %q", vip.PoolID, p.ID)
		}
		// Unlinking.
		if got, err = s.UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{VIPID: ptr("")}); err != nil {
			t.Fatal(err)
		} else if got.VIPID != "" {
			t.Fatalf("vip %q after unlinking", got.VIPID)
		}
	})

	// A method no client chose is stored as such, until one is chosen,
	// and can be put back.
	t.Run("OKUnsetLBMethod", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewPoolService(db)
		p := newPool("")
		p.LBMethodUnset = true
		MustCreatePool(t, ctx, db, p)
		if got, err := s.FindPoolByID(ctx, p.ID); err != nil {
			t.Fatal(err)
		} else if !got.LBMethodUnset || got.LBMethod != sdnlb.RoundRobin {
			t.Fatalf("read back %s, unset %v; want %s, unset", got.LBMethod, got.LBMethodUnset, sdnlb.RoundRobin)
		}
		got, err := s.UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.RoundRobin)})
		if err != nil {
			t.Fatal(err)
		} else if got.LBMethodUnset {
			t.Fatalf("a chosen method still reads as unset")
		}
		if got, err = s.UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{UnsetLBMethod: true}); err != nil {
			t.Fatal(err)
		} else if !got.LBMethodUnset {
			t.Fatalf("UnsetLBMethod did not unset the method")
		}
	})

	t.Run("OKDispatchForwarding", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewPoolService(db)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		// Port 0 (the VIP's) and the VIP's own port both suit DSR.
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 0))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.2", 80))

		got, err := s.UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{Forwarding: ptr(sdnlb.ForwardingDSR)})
		if err != nil {
			t.Fatal(err)
		} else if got.Forwarding != sdnlb.ForwardingDSR || got.Dispatch != sdnlb.DispatchSwitch {
			t.Fatalf("got %+v", got)
		}
		got, err = s.UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{Dispatch: ptr(sdnlb.DispatchController)})
		if err != nil {
			t.Fatal(err)
		} else if got.Forwarding != sdnlb.ForwardingDSR || got.Dispatch != sdnlb.DispatchController {
			t.Fatalf("got %+v", got)
		}
		if read, _ := s.FindPoolByID(ctx, p.ID); !reflect.DeepEqual(read, got) {
			t.Fatalf("read back %+v, want %+v", read, got)
		}
	})

	t.Run("OKDSRMemberPortsWithoutVIP", func(t *testing.T) {
		// Without a VIP there is no port to match yet; linking checks.
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newPool(""))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
		if _, err := lbstore.NewPoolService(db).UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{Forwarding: ptr(sdnlb.ForwardingDSR)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("OKDSRMemberPortsICMP", func(t *testing.T) {
		// ICMP has no ports, so no port is off.
		ctx, db := mustSetup(t)
		v := newVIP("10.0.0.100", 0)
		v.Protocol = sdnlb.ProtocolICMP
		MustCreateVIP(t, ctx, db, v)
		p := newPool(v.ID)
		p.Protocol = sdnlb.ProtocolICMP
		MustCreatePool(t, ctx, db, p)
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
		if _, err := lbstore.NewPoolService(db).UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{Forwarding: ptr(sdnlb.ForwardingDSR)}); err != nil {
			t.Fatal(err)
		}
	})

	testRejectedUpdates(t, func(ctx context.Context, db *lbstore.DB, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error) {
		return lbstore.NewPoolService(db).UpdatePool(ctx, id, upd)
	}, []rejectedUpdate[sdnlb.PoolUpdate]{
		{"ErrInvalidDispatch", sdnlb.EINVALID, "dispatch", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			return p.ID, sdnlb.PoolUpdate{Name: ptr("changed"), Dispatch: ptr(sdnlb.Dispatch("switch"))}
		}},
		{"ErrInvalidForwarding", sdnlb.EINVALID, "forwarding", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			return p.ID, sdnlb.PoolUpdate{Name: ptr("changed"), Forwarding: ptr(sdnlb.Forwarding(""))}
		}},
		// Making a pool DSR while a member listens on another port than
		// its VIP's.
		{"ErrDSRMemberPort", sdnlb.EINVALID, "forwarding", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newPool(v.ID))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 0))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.2", 8080))
			return p.ID, sdnlb.PoolUpdate{Name: ptr("changed"), Forwarding: ptr(sdnlb.ForwardingDSR)}
		}},
		// The off port may lie below the VIP's too.
		{"ErrDSRMemberPortBelow", sdnlb.EINVALID, "forwarding", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 8080))
			p := MustCreatePool(tb, ctx, db, newPool(v.ID))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
			return p.ID, sdnlb.PoolUpdate{Forwarding: ptr(sdnlb.ForwardingDSR)}
		}},
		// Linking a DSR pool to a VIP on another port than a member's.
		{"ErrDSRLinkVIP", sdnlb.EINVALID, "forwarding", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newDSRPool(""))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
			return p.ID, sdnlb.PoolUpdate{VIPID: &v.ID}
		}},
		{"ErrDSRRelinkVIP", sdnlb.EINVALID, "forwarding", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			alt := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 8080))
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newDSRPool(alt.ID))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
			return p.ID, sdnlb.PoolUpdate{VIPID: &v.ID}
		}},
		{"ErrNotFound", sdnlb.ENOTFOUND, "", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			return "nope", sdnlb.PoolUpdate{Name: ptr("x")}
		}},
		{"ErrInvalid", sdnlb.EINVALID, "protocol", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			return p.ID, sdnlb.PoolUpdate{Name: ptr("changed"), Protocol: ptr(sdnlb.Protocol("SCTP"))}
		}},
		{"ErrNotFoundVIP", sdnlb.ENOTFOUND, "vip_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			return p.ID, sdnlb.PoolUpdate{Name: ptr("changed"), VIPID: ptr("nope")}
		}},
		{"ErrConflictVIPServed", sdnlb.ECONFLICT, "vip_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			MustCreatePool(tb, ctx, db, newPool(v.ID))
			p := MustCreatePool(tb, ctx, db, newPool(""))
			return p.ID, sdnlb.PoolUpdate{VIPID: &v.ID}
		}},
		{"ErrInvalidProtocolOfVIP", sdnlb.EINVALID, "protocol", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newPool(v.ID))
			return p.ID, sdnlb.PoolUpdate{Protocol: ptr(sdnlb.ProtocolUDP)}
		}},
	})
}

func TestPoolService_DeletePool(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewPoolService(db)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		MustAssociate(t, ctx, db, p.ID, mon.ID)

		if err := s.DeletePool(ctx, p.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err := s.FindPoolByID(ctx, p.ID)
		assertError(t, err, sdnlb.ENOTFOUND, "")
		// The VIP loses its pool, the monitor its association.
		if vip, _ := lbstore.NewVIPService(db).FindVIPByID(ctx, v.ID); vip.PoolID != "" {
			t.Fatalf("vip still has pool %q", vip.PoolID)
		}
		if m, _ := lbstore.NewMonitorService(db).FindMonitorByID(ctx, mon.ID); len(m.PoolIDs) != 0 {
			t.Fatalf("monitor still has pools %v", m.PoolIDs)
		}
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		ctx, db := mustSetup(t)
		assertError(t, lbstore.NewPoolService(db).DeletePool(ctx, "nope", true), sdnlb.ENOTFOUND, "")
	})

	t.Run("ErrConflictMembers", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newPool(""))
		var ids []string
		for i := range 12 {
			m := newMember(p.ID, fmt.Sprintf("10.0.0.%d", i+1), 80)
			m.ID = fmt.Sprintf("m%02d", i)
			ids = append(ids, MustCreateMember(t, ctx, db, m).ID)
		}
		before := MustLoadConfig(t, ctx, db)
		// The message names the first ten and counts the rest.
		assertError(t, lbstore.NewPoolService(db).DeletePool(ctx, p.ID, false), sdnlb.ECONFLICT, "",
			append(ids[:10:10], "and 2 more")...)
		assertUnchanged(t, ctx, db, before)
	})

	t.Run("OKCascade", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newPool(""))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.2", 80))
		other := MustCreatePool(t, ctx, db, newPool(""))
		kept := MustCreateMember(t, ctx, db, newMember(other.ID, "10.0.0.1", 80))

		if err := lbstore.NewPoolService(db).DeletePool(ctx, p.ID, true); err != nil {
			t.Fatal(err)
		}
		cfg := MustLoadConfig(t, ctx, db)
		if len(cfg.Pools) != 1 || len(cfg.Members) != 1 || cfg.Members[0].ID != kept.ID {
			t.Fatalf("after cascade: %s", dumpConfig(cfg))
		}
	})
}

func TestPoolService_AssociateMonitor(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewPoolService(db)
		p := MustCreatePool(t, ctx, db, newPool(""))
		m1, m2 := sdnlb.NewMonitor(), sdnlb.NewMonitor()
		m1.ID, m2.ID = "mon-b", "mon-a"
		MustCreateMonitor(t, ctx, db, m1)
		MustCreateMonitor(t, ctx, db, m2)

		MustAssociate(t, ctx, db, p.ID, m1.ID)
		MustAssociate(t, ctx, db, p.ID, m2.ID)
		MustAssociate(t, ctx, db, p.ID, m1.ID) // idempotent
		got, err := s.FindPoolByID(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		} else if want := []string{"mon-a", "mon-b"}; !reflect.DeepEqual(got.MonitorIDs, want) {
			t.Fatalf("monitors %v, want %v (sorted)", got.MonitorIDs, want)
		}
		if mon, _ := lbstore.NewMonitorService(db).FindMonitorByID(ctx, m1.ID); !reflect.DeepEqual(mon.PoolIDs, []string{p.ID}) {
			t.Fatalf("monitor pools %v", mon.PoolIDs)
		}

		if err := s.DissociateMonitor(ctx, p.ID, m1.ID); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.FindPoolByID(ctx, p.ID); !reflect.DeepEqual(got.MonitorIDs, []string{"mon-a"}) {
			t.Fatalf("monitors %v after dissociating", got.MonitorIDs)
		}
		// Dissociating again: there is nothing to dissociate.
		assertError(t, s.DissociateMonitor(ctx, p.ID, m1.ID), sdnlb.ENOTFOUND, "")
	})

	for _, tc := range []struct {
		name, field string
		dissociate  bool
		pool, mon   bool // whether they exist
	}{
		{"ErrNotFoundPool", "pool_id", false, false, true},
		{"ErrNotFoundMonitor", "monitor_id", false, true, false},
		{"ErrNotFoundPoolDissociate", "pool_id", true, false, true},
		{"ErrNotFoundMonitorDissociate", "monitor_id", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := mustSetup(t)
			poolID, monID := "nope", "nope"
			if tc.pool {
				poolID = MustCreatePool(t, ctx, db, newPool("")).ID
			}
			if tc.mon {
				monID = MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor()).ID
			}
			before := MustLoadConfig(t, ctx, db)
			s := lbstore.NewPoolService(db)
			err := s.AssociateMonitor(ctx, poolID, monID)
			if tc.dissociate {
				err = s.DissociateMonitor(ctx, poolID, monID)
			}
			assertError(t, err, sdnlb.ENOTFOUND, tc.field)
			assertUnchanged(t, ctx, db, before)
		})
	}
}

func TestPoolService_FindPools(t *testing.T) {
	ctx, db := mustSetup(t)
	s := lbstore.NewPoolService(db)
	v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
	mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
	for i := range 5 {
		p := newPool("")
		p.ID = fmt.Sprintf("pool%d", i)
		if i == 2 {
			p.VIPID = v.ID
		}
		MustCreatePool(t, ctx, db, p)
		if i%2 == 1 {
			MustAssociate(t, ctx, db, p.ID, mon.ID)
		}
	}

	testFind(t, ctx, s.FindPools, func(p *sdnlb.Pool) string { return p.ID }, []findCase[sdnlb.PoolFilter]{
		{"All", sdnlb.PoolFilter{}, []string{"pool0", "pool1", "pool2", "pool3", "pool4"}},
		{"VIPID", sdnlb.PoolFilter{VIPID: &v.ID}, []string{"pool2"}},
		{"MonitorID", sdnlb.PoolFilter{MonitorID: &mon.ID}, []string{"pool1", "pool3"}},
		{"MonitorIDNone", sdnlb.PoolFilter{MonitorID: ptr("nope")}, []string{}},
		{"Page", sdnlb.PoolFilter{Page: sdnlb.Page{After: "pool1", Limit: 2}}, []string{"pool2", "pool3"}},
		{"MonitorIDAndPage", sdnlb.PoolFilter{MonitorID: &mon.ID, Page: sdnlb.Page{After: "pool1"}}, []string{"pool3"}},
	})
}

// newDSRPool is newPool forwarding with DSR.
func newDSRPool(vipID string) *sdnlb.Pool {
	p := newPool(vipID)
	p.Forwarding = sdnlb.ForwardingDSR
	return p
}

// A VIP with session persistence or a connection limit is served by the
// controller's per-connection decision: a pool that does not name its
// dispatch takes CONTROLLER, one that asks for SWITCH is refused, and a
// VIP that gains either moves its SWITCH pool to CONTROLLER.
func TestPool_DispatchFollowsVIP(t *testing.T) {
	limited := func(tb testing.TB, ctx context.Context, db *lbstore.DB) *sdnlb.VIP {
		v := newVIP("10.0.0.100", 80)
		v.ConnectionLimit = 2
		return MustCreateVIP(tb, ctx, db, v)
	}
	t.Run("DefaultTakesController", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := limited(t, ctx, db)
		p := sdnlb.NewPool()
		(&sdnlb.PoolUpdate{VIPID: &v.ID}).Apply(p)
		if err := lbstore.NewPoolService(db).CreatePool(ctx, p); err != nil {
			t.Fatal(err)
		}
		if p.Dispatch != sdnlb.DispatchController {
			t.Errorf("pool of a VIP with a connection limit dispatched by %s, want CONTROLLER", p.Dispatch)
		}
	})
	t.Run("AskedSwitchRefused", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := limited(t, ctx, db)
		p := sdnlb.NewPool()
		(&sdnlb.PoolUpdate{VIPID: &v.ID, Dispatch: ptr(sdnlb.DispatchSwitch)}).Apply(p)
		err := lbstore.NewPoolService(db).CreatePool(ctx, p)
		if sdnlb.ErrorCode(err) != sdnlb.EINVALID || sdnlb.ErrorField(err) != "dispatch" || !strings.Contains(err.Error(), "connection_limit") {
			t.Fatalf("err = %v, want invalid dispatch naming connection_limit", err)
		}
		if pools, _ := lbstore.NewPoolService(db).FindPools(ctx, sdnlb.PoolFilter{}); len(pools) != 0 {
			t.Errorf("a refused create left %d pools", len(pools))
		}
	})
	// The switch keeps persistence by a client's whole address: a pool
	// that knows IPv6 clients by a shorter prefix moves to the controller.
	for _, tt := range []struct {
		prefix int
		want   sdnlb.Dispatch
	}{{128, sdnlb.DispatchSwitch}, {64, sdnlb.DispatchController}} {
		t.Run(fmt.Sprintf("VIPGainsPersistence/prefix%d", tt.prefix), func(t *testing.T) {
			ctx, db := mustSetup(t)
			v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
			np := newPool(v.ID)
			np.ClientIPv6Prefix = tt.prefix
			p := MustCreatePool(t, ctx, db, np)
			if p.Dispatch != sdnlb.DispatchSwitch {
				t.Fatalf("dispatch %s before, want SWITCH", p.Dispatch)
			}
			sp := &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
			if _, err := lbstore.NewVIPService(db).UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{SetSessionPersistence: true, SessionPersistence: sp}); err != nil {
				t.Fatal(err)
			}
			if got, _ := lbstore.NewPoolService(db).FindPoolByID(ctx, p.ID); got.Dispatch != tt.want {
				t.Errorf("pool of a VIP with persistence dispatched by %s, want %s", got.Dispatch, tt.want)
			}
		})
	}
}

// A pool the switch dispatches holds at most as many members as the
// switch has slots, so that every member gets one: the next member is
// refused with the number, and a larger pool cannot be moved to SWITCH.
func TestPool_SwitchSlotsBoundMembers(t *testing.T) {
	ctx, db := mustSetup(t)
	v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
	p := MustCreatePool(t, ctx, db, newPool(v.ID))
	if p.Dispatch != sdnlb.DispatchSwitch {
		t.Fatalf("dispatch %s, want SWITCH", p.Dispatch)
	}
	for i := range sdnlb.SwitchSlots {
		MustCreateMember(t, ctx, db, newMember(p.ID, fmt.Sprintf("10.1.%d.%d", i/200, 1+i%200), 8080))
	}
	err := lbstore.NewMemberService(db).CreateMember(ctx, newMember(p.ID, "10.2.0.1", 8080))
	if sdnlb.ErrorCode(err) != sdnlb.ECONFLICT || sdnlb.ErrorField(err) != "pool_id" || !strings.Contains(err.Error(), "256") {
		t.Fatalf("member %d of a SWITCH pool: %v, want a conflict on pool_id naming 256", sdnlb.SwitchSlots+1, err)
	}

	ps := lbstore.NewPoolService(db)
	if _, err := ps.UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{Dispatch: ptr(sdnlb.DispatchController)}); err != nil {
		t.Fatal(err)
	}
	MustCreateMember(t, ctx, db, newMember(p.ID, "10.2.0.1", 8080))
	_, err = ps.UpdatePool(ctx, p.ID, sdnlb.PoolUpdate{Dispatch: ptr(sdnlb.DispatchSwitch)})
	if sdnlb.ErrorCode(err) != sdnlb.EINVALID || sdnlb.ErrorField(err) != "dispatch" || !strings.Contains(err.Error(), "257") {
		t.Fatalf("a pool of %d members to SWITCH: %v, want invalid dispatch naming 257", sdnlb.SwitchSlots+1, err)
	}
}
