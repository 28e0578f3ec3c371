package lbstore_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/google/uuid"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

func TestVIPService_CreateVIP(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewVIPService(db)

		v := newVIP("10.0.0.100", 80)
		v.SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
		v.ConnectionLimit = 1000
		if err := s.CreateVIP(ctx, v); err != nil {
			t.Fatal(err)
		}
		if _, err := uuid.Parse(v.ID); err != nil {
			t.Fatalf("id %q is not a uuid: %v", v.ID, err)
		}
		if v.MAC != sdnlb.VIPMAC(v.ID) {
			t.Fatalf("mac %s, want %s", v.MAC, sdnlb.VIPMAC(v.ID))
		}
		if v.Status != sdnlb.VIPDown || v.PoolID != "" {
			t.Fatalf("status %s pool %q, want DOWN without pool", v.Status, v.PoolID)
		}
		if v.CreatedAt.IsZero() || !v.UpdatedAt.Equal(v.CreatedAt) {
			t.Fatalf("timestamps %v %v", v.CreatedAt, v.UpdatedAt)
		}
		got, err := s.FindVIPByID(ctx, v.ID)
		if err != nil {
			t.Fatal(err)
		} else if !reflect.DeepEqual(got, v) {
			t.Fatalf("read back %+v, want %+v", got, v)
		}
	})

	t.Run("OKClientID", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := newVIP("10.0.0.100", 80)
		v.ID = "vip1"
		MustCreateVIP(t, ctx, db, v)
		if v.ID != "vip1" || v.MAC != sdnlb.VIPMAC("vip1") {
			t.Fatalf("id %q mac %s", v.ID, v.MAC)
		}
	})

	t.Run("OKOtherListener", func(t *testing.T) {
		ctx, db := mustSetup(t)
		MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 443))
		udp := newVIP("10.0.0.100", 80)
		udp.Protocol = sdnlb.ProtocolUDP
		MustCreateVIP(t, ctx, db, udp)
		MustCreateVIP(t, ctx, db, newVIP("10.0.0.101", 80))
	})

	// An ANY VIP ignores its port, as an ICMP VIP does, and a DSR pool
	// serving it keeps each client's port.
	t.Run("OKAnyWithDSRPool", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := newDSRPool("")
		p.Protocol = sdnlb.ProtocolAny
		MustCreatePool(t, ctx, db, p)
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 0))
		v := newVIP("10.0.0.100", 80)
		v.Protocol, v.PoolID = sdnlb.ProtocolAny, p.ID
		MustCreateVIP(t, ctx, db, v)
		if v.Protocol != sdnlb.ProtocolAny || v.Port != 80 {
			t.Fatalf("stored %s port %d, want ANY port 80", v.Protocol, v.Port)
		}
	})

	t.Run("OKWithPool", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newPool(""))
		v := newVIP("10.0.0.100", 80)
		v.PoolID = p.ID
		MustCreateVIP(t, ctx, db, v)
		if v.PoolID != p.ID {
			t.Fatalf("vip pool %q, want %q", v.PoolID, p.ID)
		}
		got, err := lbstore.NewPoolService(db).FindPoolByID(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		} else if got.VIPID != v.ID {
			t.Fatalf("pool vip %q, want %q", got.VIPID, v.ID)
		}
	})

	t.Run("OKWithDSRPool", func(t *testing.T) {
		ctx, db := mustSetup(t)
		p := MustCreatePool(t, ctx, db, newDSRPool(""))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 0))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.2", 8080))
		v := newVIP("10.0.0.100", 8080)
		v.PoolID = p.ID
		MustCreateVIP(t, ctx, db, v)
	})

	// Each case sets up what it needs and returns the VIP to create.
	testRejectedCreates(t, func(ctx context.Context, db *lbstore.DB, obj *sdnlb.VIP) error {
		return lbstore.NewVIPService(db).CreateVIP(ctx, obj)
	}, []rejectedCreate[sdnlb.VIP]{
		{"ErrInvalid", sdnlb.EINVALID, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			return newVIP("10.0.0.256", 80), nil
		}},
		{"ErrConflictID", sdnlb.ECONFLICT, "id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			v := newVIP("10.0.0.100", 80)
			v.ID = "vip1"
			MustCreateVIP(tb, ctx, db, v)
			dup := newVIP("10.0.0.101", 80)
			dup.ID = "vip1"
			return dup, []string{"vip1"}
		}},
		{"ErrConflictListener", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			other := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			return newVIP("10.0.0.100", 80), []string{other.ID}
		}},
		{"ErrConflictICMPListener", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			icmp := newVIP("10.0.0.100", 0)
			icmp.Protocol = sdnlb.ProtocolICMP
			other := MustCreateVIP(tb, ctx, db, icmp)
			v := newVIP("10.0.0.100", 7)
			v.Protocol = sdnlb.ProtocolICMP
			return v, []string{other.ID}
		}},
		{"ErrConflictAnyOnListenerAddress", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			other := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			v := newVIP("10.0.0.100", 0)
			v.Protocol = sdnlb.ProtocolAny
			return v, []string{other.ID, "ANY"}
		}},
		{"ErrConflictListenerOnAnyAddress", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			anyVIP := newVIP("10.0.0.100", 0)
			anyVIP.Protocol = sdnlb.ProtocolAny
			other := MustCreateVIP(tb, ctx, db, anyVIP)
			v := newVIP("10.0.0.100", 7)
			v.Protocol = sdnlb.ProtocolICMP
			return v, []string{other.ID, "ANY"}
		}},
		{"ErrConflictAnyListener", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			anyVIP := newVIP("10.0.0.100", 80)
			anyVIP.Protocol = sdnlb.ProtocolAny
			other := MustCreateVIP(tb, ctx, db, anyVIP)
			v := newVIP("10.0.0.100", 443)
			v.Protocol = sdnlb.ProtocolAny
			return v, []string{other.ID}
		}},
		// A member of any pool, linked to a VIP or not.
		{"ErrConflictMemberAddress", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			p := MustCreatePool(tb, ctx, db, newPool(""))
			m := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
			return newVIP("10.0.0.1", 80), []string{m.ID, p.ID, "10.0.0.1"}
		}},
		{"ErrAnyDSRPoolMemberPort", sdnlb.EINVALID, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			p := newDSRPool("")
			p.Protocol = sdnlb.ProtocolAny
			MustCreatePool(tb, ctx, db, p)
			m := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
			v := newVIP("10.0.0.100", 80)
			v.Protocol, v.PoolID = sdnlb.ProtocolAny, p.ID
			return v, []string{"DSR", m.ID, "each client"}
		}},
		{"ErrNotFoundPool", sdnlb.ENOTFOUND, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			v := newVIP("10.0.0.100", 80)
			v.PoolID = "nope"
			return v, []string{"nope"}
		}},
		{"ErrConflictPoolTaken", sdnlb.ECONFLICT, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			other := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newPool(other.ID))
			v := newVIP("10.0.0.101", 80)
			v.PoolID = p.ID
			return v, []string{other.ID}
		}},
		{"ErrDSRPoolMemberPort", sdnlb.EINVALID, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			p := MustCreatePool(tb, ctx, db, newDSRPool(""))
			m := MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
			v := newVIP("10.0.0.100", 80)
			v.PoolID = p.ID
			return v, []string{"DSR", p.ID, m.ID, "8080"}
		}},
		{"ErrInvalidPoolProtocol", sdnlb.EINVALID, "protocol", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
			p := newPool("")
			p.Protocol = sdnlb.ProtocolUDP
			MustCreatePool(tb, ctx, db, p)
			v := newVIP("10.0.0.100", 80)
			v.PoolID = p.ID
			return v, nil
		}},
	})
}

func TestVIPService_UpdateVIP(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewVIPService(db)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))

		got, err := s.UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{
			Name: ptr("api"), Port: ptr(8080), ConnectionLimit: ptr(5), Announce: ptr(false),
			SetSessionPersistence: true, SessionPersistence: &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 30},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := *v
		want.Name, want.Port, want.ConnectionLimit, want.Announce = "api", 8080, 5, false
		want.SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 30}
		want.UpdatedAt = got.UpdatedAt
		if !got.UpdatedAt.After(v.UpdatedAt) {
			t.Fatalf("updated_at %v not after %v", got.UpdatedAt, v.UpdatedAt)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		if read, err := s.FindVIPByID(ctx, v.ID); err != nil {
			t.Fatal(err)
		} else if !reflect.DeepEqual(read, got) {
			t.Fatalf("read back %+v, want %+v", read, got)
		}

		// Removing session persistence.
		got, err = s.UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{SetSessionPersistence: true})
		if err != nil {
			t.Fatal(err)
		} else if got.SessionPersistence != nil {
			t.Fatalf("session persistence %+v, want none", got.SessionPersistence)
		}
	})

	t.Run("OKRelinkPool", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s, pools := lbstore.NewVIPService(db), lbstore.NewPoolService(db)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p1 := MustCreatePool(t, ctx, db, newPool(v.ID))
		p2 := MustCreatePool(t, ctx, db, newPool(""))

		got, err := s.UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{PoolID: &p2.ID})
		if err != nil {
			t.Fatal(err)
		} else if got.PoolID != p2.ID {
			t.Fatalf("pool %q, want %q", got.PoolID, p2.ID)
		}
		if p, _ := pools.FindPoolByID(ctx, p1.ID); p.VIPID != "" {
			t.Fatalf("old pool still serves %q", p.VIPID)
		}
		if p, _ := pools.FindPoolByID(ctx, p2.ID); p.VIPID != v.ID {
			t.Fatalf("new pool serves %q, want %q", p.VIPID, v.ID)
		}

		got, err = s.UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{PoolID: ptr("")})
		if err != nil {
			t.Fatal(err)
		} else if got.PoolID != "" {
			t.Fatalf("pool %q after unlinking", got.PoolID)
		}
		if p, _ := pools.FindPoolByID(ctx, p2.ID); p.VIPID != "" {
			t.Fatalf("unlinked pool still serves %q", p.VIPID)
		}
	})

	t.Run("OKDSRPort", func(t *testing.T) {
		// Members on port 0 follow the VIP's port wherever it goes.
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newDSRPool(v.ID))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 0))
		if _, err := lbstore.NewVIPService(db).UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{Port: ptr(8080)}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ErrConflictMemberAddress", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		m := MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
		before := MustLoadConfig(t, ctx, db)
		_, err := lbstore.NewVIPService(db).UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{Name: ptr("moved"), Address: ptr("10.0.0.1")})
		assertError(t, err, sdnlb.ECONFLICT, "address", "member "+m.ID, "pool "+p.ID)
		assertUnchanged(t, ctx, db, before)
	})

	testRejectedUpdates(t, func(ctx context.Context, db *lbstore.DB, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
		return lbstore.NewVIPService(db).UpdateVIP(ctx, id, upd)
	}, []rejectedUpdate[sdnlb.VIPUpdate]{
		{"ErrDSRPort", sdnlb.EINVALID, "port", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newDSRPool(v.ID))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 0))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.2", 80))
			return v.ID, sdnlb.VIPUpdate{Name: ptr("changed"), Port: ptr(8080)}
		}},
		{"ErrDSRLinkPool", sdnlb.EINVALID, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			old := MustCreatePool(tb, ctx, db, newPool(v.ID))
			MustCreateMember(tb, ctx, db, newMember(old.ID, "10.0.0.1", 8080)) // NAT: fine
			p := MustCreatePool(tb, ctx, db, newDSRPool(""))
			MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
			return v.ID, sdnlb.VIPUpdate{PoolID: &p.ID}
		}},
		{"ErrNotFound", sdnlb.ENOTFOUND, "", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
			return "nope", sdnlb.VIPUpdate{Name: ptr("x")}
		}},
		{"ErrInvalid", sdnlb.EINVALID, "port", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			return v.ID, sdnlb.VIPUpdate{Name: ptr("changed"), Port: ptr(-1)}
		}},
		{"ErrConflictListener", sdnlb.ECONFLICT, "address", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
			MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 81))
			return v.ID, sdnlb.VIPUpdate{Port: ptr(80)}
		}},
		{"ErrInvalidProtocolOfPool", sdnlb.EINVALID, "protocol", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			MustCreatePool(tb, ctx, db, newPool(v.ID))
			return v.ID, sdnlb.VIPUpdate{Protocol: ptr(sdnlb.ProtocolUDP)}
		}},
		{"ErrConflictPoolTaken", sdnlb.ECONFLICT, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
			other := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			p := MustCreatePool(tb, ctx, db, newPool(other.ID))
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.101", 80))
			return v.ID, sdnlb.VIPUpdate{PoolID: &p.ID}
		}},
		{"ErrNotFoundPool", sdnlb.ENOTFOUND, "pool_id", func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
			v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
			return v.ID, sdnlb.VIPUpdate{Name: ptr("changed"), PoolID: ptr("nope")}
		}},
	})
}

func TestVIPService_DeleteVIP(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		s := lbstore.NewVIPService(db)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		if err := s.DeleteVIP(ctx, v.ID, false); err != nil {
			t.Fatal(err)
		}
		_, err := s.FindVIPByID(ctx, v.ID)
		assertError(t, err, sdnlb.ENOTFOUND, "")
	})

	t.Run("ErrNotFound", func(t *testing.T) {
		ctx, db := mustSetup(t)
		assertError(t, lbstore.NewVIPService(db).DeleteVIP(ctx, "nope", true), sdnlb.ENOTFOUND, "")
	})

	t.Run("ErrConflictPool", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		before := MustLoadConfig(t, ctx, db)
		assertError(t, lbstore.NewVIPService(db).DeleteVIP(ctx, v.ID, false), sdnlb.ECONFLICT, "", p.ID)
		assertUnchanged(t, ctx, db, before)
	})

	t.Run("OKCascade", func(t *testing.T) {
		ctx, db := mustSetup(t)
		v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
		p := MustCreatePool(t, ctx, db, newPool(v.ID))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 80))
		MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.2", 80))
		mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
		MustAssociate(t, ctx, db, p.ID, mon.ID)
		// Another VIP's subtree must survive.
		other := MustCreateVIP(t, ctx, db, newVIP("10.0.0.101", 80))
		otherPool := MustCreatePool(t, ctx, db, newPool(other.ID))
		otherMember := MustCreateMember(t, ctx, db, newMember(otherPool.ID, "10.0.0.1", 80))

		if err := lbstore.NewVIPService(db).DeleteVIP(ctx, v.ID, true); err != nil {
			t.Fatal(err)
		}
		cfg := MustLoadConfig(t, ctx, db)
		if len(cfg.VIPs) != 1 || cfg.VIPs[0].ID != other.ID ||
			len(cfg.Pools) != 1 || cfg.Pools[0].ID != otherPool.ID ||
			len(cfg.Members) != 1 || cfg.Members[0].ID != otherMember.ID {
			t.Fatalf("after cascade: %s", dumpConfig(cfg))
		}
		if len(cfg.Monitors) != 1 || len(cfg.Monitors[0].PoolIDs) != 0 {
			t.Fatalf("the monitor must stay, without pools: %+v", cfg.Monitors)
		}
	})
}

func TestVIPService_FindVIPs(t *testing.T) {
	ctx, db := mustSetup(t)
	s := lbstore.NewVIPService(db)
	var ids []string
	for i := range 7 {
		v := newVIP(fmt.Sprintf("10.0.0.%d", 100+i%2), 80+i)
		v.ID = fmt.Sprintf("vip%d", 6-i) // ids do not sort in creation order
		ids = append([]string{MustCreateVIP(t, ctx, db, v).ID}, ids...)
	}
	p := MustCreatePool(t, ctx, db, newPool("vip3"))

	testFind(t, ctx, s.FindVIPs, func(v *sdnlb.VIP) string { return v.ID }, []findCase[sdnlb.VIPFilter]{
		{"All", sdnlb.VIPFilter{}, ids},
		{"Address", sdnlb.VIPFilter{Address: ptr("10.0.0.101")}, []string{"vip1", "vip3", "vip5"}},
		{"PoolID", sdnlb.VIPFilter{PoolID: &p.ID}, []string{"vip3"}},
		{"PoolIDNone", sdnlb.VIPFilter{PoolID: ptr("nope")}, []string{}},
		{"Limit", sdnlb.VIPFilter{Page: sdnlb.Page{Limit: 3}}, ids[:3]},
		{"After", sdnlb.VIPFilter{Page: sdnlb.Page{After: "vip2", Limit: 2}}, []string{"vip3", "vip4"}},
		{"AfterEnd", sdnlb.VIPFilter{Page: sdnlb.Page{After: "vip6"}}, []string{}},
		{"AddressAndPage", sdnlb.VIPFilter{Address: ptr("10.0.0.100"), Page: sdnlb.Page{After: "vip1", Limit: 1}}, []string{"vip2"}},
	})
}

// TestVIPService_Status checks the derived status against each thing it
// depends on.
func TestVIPService_Status(t *testing.T) {
	for _, tc := range []struct {
		name      string
		vipUp     bool
		pool      bool
		poolUp    bool
		memberUp  bool
		weight    int
		health    sdnlb.MemberStatus // "" for no member
		want      sdnlb.VIPStatus
		withOther bool // a second member that is in rotation
	}{
		{name: "Disabled", vipUp: false, pool: true, poolUp: true, memberUp: true, weight: 1, health: sdnlb.MemberUp, want: sdnlb.VIPDisabled},
		{name: "NoPool", vipUp: true, want: sdnlb.VIPDown},
		{name: "NoMembers", vipUp: true, pool: true, poolUp: true, want: sdnlb.VIPDown},
		{name: "PoolDown", vipUp: true, pool: true, poolUp: false, memberUp: true, weight: 1, health: sdnlb.MemberUp, want: sdnlb.VIPDown},
		{name: "MemberAdminDown", vipUp: true, pool: true, poolUp: true, memberUp: false, weight: 1, health: sdnlb.MemberUp, want: sdnlb.VIPDown},
		{name: "MemberDrained", vipUp: true, pool: true, poolUp: true, memberUp: true, weight: 0, health: sdnlb.MemberUp, want: sdnlb.VIPDown},
		{name: "MemberDown", vipUp: true, pool: true, poolUp: true, memberUp: true, weight: 1, health: sdnlb.MemberDown, want: sdnlb.VIPDown},
		{name: "MemberUp", vipUp: true, pool: true, poolUp: true, memberUp: true, weight: 1, health: sdnlb.MemberUp, want: sdnlb.VIPActive},
		{name: "MemberNoMonitor", vipUp: true, pool: true, poolUp: true, memberUp: true, weight: 1, health: sdnlb.MemberNoMonitor, want: sdnlb.VIPActive},
		{name: "OneOfTwoUp", vipUp: true, pool: true, poolUp: true, memberUp: true, weight: 1, health: sdnlb.MemberDown, withOther: true, want: sdnlb.VIPActive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := mustSetup(t)
			v := newVIP("10.0.0.100", 80)
			v.AdminStateUp = tc.vipUp
			MustCreateVIP(t, ctx, db, v)
			if tc.pool {
				p := newPool(v.ID)
				p.AdminStateUp = tc.poolUp
				MustCreatePool(t, ctx, db, p)
				if tc.health != "" {
					m := newMember(p.ID, "10.0.0.1", 80)
					m.AdminStateUp, m.Weight = tc.memberUp, tc.weight
					MustCreateMember(t, ctx, db, m)
					if err := lbstore.NewMemberHealthService(db).SetMemberHealth(ctx, m.ID, sdnlb.MemberHealth{Status: tc.health}); err != nil {
						t.Fatal(err)
					}
				}
				if tc.withOther {
					MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.2", 80))
				}
			}
			got, err := lbstore.NewVIPService(db).FindVIPByID(ctx, v.ID)
			if err != nil {
				t.Fatal(err)
			} else if got.Status != tc.want {
				t.Fatalf("status %s, want %s", got.Status, tc.want)
			}
		})
	}
}

func BenchmarkVIPService_CreateVIP(b *testing.B) {
	ctx, db := mustSetup(b)
	s := lbstore.NewVIPService(db)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		v := newVIP(fmt.Sprintf("10.%d.%d.%d", i/62500%250, i/250%250, i%250+1), 80)
		if err := s.CreateVIP(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
}
