package lbstore_test

import (
	"context"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

func TestIPv6_CanonicalAddresses(t *testing.T) {
	ctx, db := mustSetup(t)
	v := MustCreateVIP(t, ctx, db, newVIP("2001:DB8::100", 80))
	if v.Address != "2001:db8::100" {
		t.Fatalf("vip address %q, want the canonical 2001:db8::100", v.Address)
	}
	if got, err := lbstore.NewVIPService(db).FindVIPByID(ctx, v.ID); err != nil || got.Address != "2001:db8::100" {
		t.Fatalf("read back %+v, %v", got, err)
	}
	p := MustCreatePool(t, ctx, db, newPool(v.ID))
	m := MustCreateMember(t, ctx, db, newMember(p.ID, "2001:0DB8:0:0::1", 80))
	if m.Address != "2001:db8::1" {
		t.Fatalf("member address %q, want the canonical 2001:db8::1", m.Address)
	}

	before := MustLoadConfig(t, ctx, db)
	assertError(t, lbstore.NewVIPService(db).CreateVIP(ctx, newVIP("2001:db8:0::100", 80)), sdnlb.ECONFLICT, "address",
		"already listens on TCP [2001:db8::100]:80")
	assertError(t, lbstore.NewMemberService(db).CreateMember(ctx, newMember(p.ID, "2001:DB8::1", 80)), sdnlb.ECONFLICT, "address",
		"already has [2001:db8::1]:80")
	assertError(t, lbstore.NewVIPService(db).CreateVIP(ctx, newVIP("2001:db8::0:1", 443)), sdnlb.ECONFLICT, "address",
		"2001:db8::1 is the address of member")
	assertError(t, lbstore.NewMemberService(db).CreateMember(ctx, newMember(p.ID, "2001:db8::0100", 8080)), sdnlb.ECONFLICT, "address",
		"2001:db8::100 is the address of vip")
	assertUnchanged(t, ctx, db, before)

	vips, err := lbstore.NewVIPService(db).FindVIPs(ctx, sdnlb.VIPFilter{Address: ptr("2001:db8::100")})
	if err != nil || len(vips) != 1 {
		t.Fatalf("found %v, %v; want the vip by its canonical address", vips, err)
	}
}

// v4Pool is a VIP on 10.0.0.100 with a pool and a member on 10.0.0.1.
func v4Pool(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, *sdnlb.Pool, *sdnlb.Member) {
	v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
	p := MustCreatePool(tb, ctx, db, newPool(v.ID))
	return v, p, MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
}

func TestIPv6_FamilyRejected(t *testing.T) {
	testRejectedCreates(t, func(ctx context.Context, db *lbstore.DB, m *sdnlb.Member) error {
		return lbstore.NewMemberService(db).CreateMember(ctx, m)
	}, []rejectedCreate[sdnlb.Member]{
		{name: "ErrMemberIPv6InIPv4Pool", code: sdnlb.EINVALID, field: "address",
			setup: func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Member, []string) {
				v, p, _ := v4Pool(tb, ctx, db)
				return newMember(p.ID, "2001:db8::1", 80), []string{"2001:db8::1 is IPv6; the pool's VIP " + v.ID + " (10.0.0.100) is IPv4"}
			}},
		{name: "ErrMemberIPv4InIPv6Pool", code: sdnlb.EINVALID, field: "address",
			setup: func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.Member, []string) {
				v := MustCreateVIP(tb, ctx, db, newVIP("2001:db8::100", 80))
				p := MustCreatePool(tb, ctx, db, newPool(v.ID))
				return newMember(p.ID, "10.0.0.1", 80), []string{"10.0.0.1 is IPv4; the pool's VIP " + v.ID + " (2001:db8::100) is IPv6"}
			}},
	})
	testRejectedCreates(t, func(ctx context.Context, db *lbstore.DB, v *sdnlb.VIP) error {
		return lbstore.NewVIPService(db).CreateVIP(ctx, v)
	}, []rejectedCreate[sdnlb.VIP]{
		{name: "ErrIPv6VIPTakesIPv4Pool", code: sdnlb.EINVALID, field: "pool_id",
			setup: func(tb testing.TB, ctx context.Context, db *lbstore.DB) (*sdnlb.VIP, []string) {
				p := MustCreatePool(tb, ctx, db, newPool(""))
				MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
				v := newVIP("2001:db8::100", 80)
				v.PoolID = p.ID
				return v, []string{"is IPv4 (10.0.0.1)", "(2001:db8::100) is IPv6"}
			}},
	})
	testRejectedUpdates(t, func(ctx context.Context, db *lbstore.DB, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error) {
		return lbstore.NewMemberService(db).UpdateMember(ctx, id, upd)
	}, []rejectedUpdate[sdnlb.MemberUpdate]{
		{name: "ErrMemberMovesToIPv6", code: sdnlb.EINVALID, field: "address",
			setup: func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.MemberUpdate) {
				_, _, m := v4Pool(tb, ctx, db)
				return m.ID, sdnlb.MemberUpdate{Address: ptr("2001:db8::1")}
			}},
	})
	testRejectedUpdates(t, func(ctx context.Context, db *lbstore.DB, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
		return lbstore.NewVIPService(db).UpdateVIP(ctx, id, upd)
	}, []rejectedUpdate[sdnlb.VIPUpdate]{
		{name: "ErrVIPMovesToIPv6WithMembers", code: sdnlb.EINVALID, field: "address",
			setup: func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.VIPUpdate) {
				v, _, _ := v4Pool(tb, ctx, db)
				return v.ID, sdnlb.VIPUpdate{Address: ptr("2001:db8::100")}
			}},
	})
	testRejectedUpdates(t, func(ctx context.Context, db *lbstore.DB, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error) {
		return lbstore.NewPoolService(db).UpdatePool(ctx, id, upd)
	}, []rejectedUpdate[sdnlb.PoolUpdate]{
		{name: "ErrIPv4PoolTakesIPv6VIP", code: sdnlb.EINVALID, field: "vip_id",
			setup: func(tb testing.TB, ctx context.Context, db *lbstore.DB) (string, sdnlb.PoolUpdate) {
				p := MustCreatePool(tb, ctx, db, newPool(""))
				MustCreateMember(tb, ctx, db, newMember(p.ID, "10.0.0.1", 80))
				v := MustCreateVIP(tb, ctx, db, newVIP("2001:db8::100", 80))
				return p.ID, sdnlb.PoolUpdate{VIPID: &v.ID}
			}},
	})
}

func TestIPv6_ApplyConfig(t *testing.T) {
	ctx, db := mustSetup(t)
	mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})

	// The whole pool moves to IPv6 in one document, written as a client
	// might: upper case, zeros in full.
	v6 := func() *sdnlb.Config {
		c := webConfig()
		c.VIPs[0].Address = "2001:DB8::100"
		c.Members[0].Address, c.Members[1].Address = "2001:db8:0::1", "2001:DB8::2"
		return c
	}
	mustApply(t, ctx, db, v6(), sdnlb.ApplyOptions{})
	cfg := MustLoadConfig(t, ctx, db)
	if got := []string{cfg.VIPs[0].Address, cfg.Members[0].Address, cfg.Members[1].Address}; got[0] != "2001:db8::100" ||
		got[1] != "2001:db8::1" || got[2] != "2001:db8::2" {
		t.Fatalf("stored addresses %v, want them canonical", got)
	}
	if diff := mustApply(t, ctx, db, v6(), sdnlb.ApplyOptions{}); diff.Changed {
		t.Fatalf("re-applying changed %+v", diff)
	}
	// Members keyed by endpoint match whatever the spelling.
	keyed := v6()
	keyed.Members[0].ID, keyed.Members[1].ID = "", ""
	if diff := mustApply(t, ctx, db, keyed, sdnlb.ApplyOptions{}); diff.Changed {
		t.Fatalf("re-applying members keyed by endpoint changed %+v", diff)
	}
}

func TestIPv6_ApplyConfigRejected(t *testing.T) {
	for _, tc := range []struct {
		name, field  string
		spansObjects bool
		edit         func(*sdnlb.Config)
		mentions     []string
	}{
		{name: "ErrMemberOtherFamily", field: "members[1].address", spansObjects: true,
			edit:     func(c *sdnlb.Config) { c.Members[1].Address = "2001:db8::2" },
			mentions: []string{"members[1] (id m2)", "2001:db8::2 is IPv6; the pool's VIP web (10.0.0.100) is IPv4"}},
		{name: "ErrVIPOtherFamily", field: "pools[0].vip_id", spansObjects: true,
			edit:     func(c *sdnlb.Config) { c.VIPs[0].Address = "2001:db8::100" },
			mentions: []string{"is IPv4 (10.0.0.", "vip web (2001:db8::100) is IPv6"}},
		{name: "ErrLinkLocalMember", field: "members[1].address",
			edit:     func(c *sdnlb.Config) { c.Members[1].Address = "fe80::1" },
			mentions: []string{"link-local"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := mustSetup(t)
			mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
			before := MustLoadConfig(t, ctx, db)
			want := webConfig()
			want.Members = append(want.Members, newMember("web", "10.0.0.3", 80))
			tc.edit(want)
			_, err := lbstore.NewConfigService(db).ApplyConfig(ctx, want, sdnlb.ApplyOptions{})
			assertError(t, err, sdnlb.EINVALID, tc.field, tc.mentions...)
			if !tc.spansObjects {
				_, err = lbstore.NewConfigService(db).ApplyConfig(ctx, want, sdnlb.ApplyOptions{DryRun: true})
				assertError(t, err, sdnlb.EINVALID, tc.field, tc.mentions...)
			}
			assertUnchanged(t, ctx, db, before)
		})
	}
}
