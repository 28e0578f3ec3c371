package lbstore

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// TestRecall checks that reads answered from the remembered configuration
// select and page as the queries do, for every filter.
func TestRecall(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	vips, pools, members, monitors := NewVIPService(db), NewPoolService(db), NewMemberService(db), NewMonitorService(db)
	mon := sdnlb.NewMonitor()
	mon.ID = "mon"
	if err := monitors.CreateMonitor(ctx, mon); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		v := sdnlb.NewVIP()
		v.ID, v.Address, v.Port = fmt.Sprintf("v%d", i), "10.0.0.1", 80+i
		if err := vips.CreateVIP(ctx, v); err != nil {
			t.Fatal(err)
		}
		p := sdnlb.NewPool()
		p.ID = fmt.Sprintf("p%d", i)
		if i < 2 {
			p.VIPID = v.ID
		}
		if err := pools.CreatePool(ctx, p); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if err := pools.AssociateMonitor(ctx, p.ID, mon.ID); err != nil {
				t.Fatal(err)
			}
		}
		for j := range 3 {
			m := sdnlb.NewMember()
			m.ID, m.PoolID, m.Address, m.Port = fmt.Sprintf("m%d%d", i, j), p.ID, fmt.Sprintf("10.1.0.%d", j), 80
			if err := members.CreateMember(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg, err := NewConfigService(db).LoadConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pages := []sdnlb.Page{{}, {Limit: 1}, {Limit: 2, After: "m01"}, {After: "p0"}, {After: "v1", Limit: 5}, {After: "zzz"}}
	for _, page := range pages {
		for _, f := range []sdnlb.VIPFilter{{}, {Address: ptr("10.0.0.1")}, {Address: ptr("x")}, {PoolID: ptr("p1")}, {PoolID: ptr("")}} {
			f.Page = page
			compare(t, fmt.Sprintf("vips %+v", f), func(tx *Tx) ([]*sdnlb.VIP, error) { return findVIPs(ctx, tx, f) }, recallVIPs(cfg, f), db)
		}
		for _, f := range []sdnlb.PoolFilter{{}, {VIPID: ptr("v0")}, {VIPID: ptr("")}, {MonitorID: ptr("mon")}, {MonitorID: ptr("x")}} {
			f.Page = page
			compare(t, fmt.Sprintf("pools %+v", f), func(tx *Tx) ([]*sdnlb.Pool, error) { return findPools(ctx, tx, f) }, recallPools(cfg, f), db)
		}
		for _, f := range []sdnlb.MemberFilter{{}, {PoolID: ptr("p2")}, {Address: ptr("10.1.0.1")}, {PoolID: ptr("p0"), Address: ptr("10.1.0.2")}} {
			f.Page = page
			compare(t, fmt.Sprintf("members %+v", f), func(tx *Tx) ([]*sdnlb.Member, error) { return findMembers(ctx, tx, f) }, recallMembers(cfg, f), db)
		}
		for _, f := range []sdnlb.MonitorFilter{{}, {PoolID: ptr("p1")}, {PoolID: ptr("p0")}} {
			f.Page = page
			compare(t, fmt.Sprintf("monitors %+v", f), func(tx *Tx) ([]*sdnlb.Monitor, error) { return findMonitors(ctx, tx, f) }, recallMonitors(cfg, f), db)
		}
	}
	if m, err := recallByID(cfg.Members, memberID, "member", "m12"); err != nil || m.ID != "m12" || m == cfg.Members[5] {
		t.Fatalf("recall m12: %+v %v (want a copy)", m, err)
	}
	if _, err := recallByID(cfg.Members, memberID, "member", "m3"); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
		t.Fatalf("recall m3: %v", err)
	}
}

func compare[T any](tb testing.TB, what string, query func(*Tx) ([]*T, error), recalled []*T, db *DB) {
	tb.Helper()
	want, err := readTx(context.Background(), db, query)
	if err != nil {
		tb.Fatal(err)
	}
	if !reflect.DeepEqual(recalled, want) {
		tb.Fatalf("%s: recalled %d objects, the query %d", what, len(recalled), len(want))
	}
}

func ptr[T any](v T) *T { return &v }
