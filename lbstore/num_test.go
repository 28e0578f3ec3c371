package lbstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

// configNums is every VIP's and member's number in cfg, by id.
func configNums(cfg *sdnlb.Config) map[string]uint32 {
	nums := map[string]uint32{}
	for _, v := range cfg.VIPs {
		nums[v.ID] = v.Num
	}
	for _, m := range cfg.Members {
		nums[m.ID] = m.Num
	}
	return nums
}

func TestNum_NeverReused(t *testing.T) {
	ctx, db := mustSetup(t)
	vips := lbstore.NewVIPService(db)
	a := MustCreateVIP(t, ctx, db, newVIP("10.0.0.1", 80))
	MustCreateVIP(t, ctx, db, newVIP("10.0.0.2", 80))
	c := MustCreateVIP(t, ctx, db, newVIP("10.0.0.3", 80))
	pool := MustCreatePool(t, ctx, db, newPool(a.ID))
	MustCreateMember(t, ctx, db, newMember(pool.ID, "10.1.0.1", 80))
	last := MustCreateMember(t, ctx, db, newMember(pool.ID, "10.1.0.2", 80))

	// The largest numbers' objects go: their numbers stay given.
	if err := vips.DeleteVIP(ctx, c.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := lbstore.NewMemberService(db).DeleteMember(ctx, last.ID); err != nil {
		t.Fatal(err)
	}
	if d := MustCreateVIP(t, ctx, db, newVIP("10.0.0.3", 80)); d.Num != 4 {
		t.Errorf("vip created after the deletion of number 3: number %d, want 4", d.Num)
	}
	if m := MustCreateMember(t, ctx, db, newMember(pool.ID, "10.1.0.2", 80)); m.Num != 3 {
		t.Errorf("member created after the deletion of number 2: number %d, want 3", m.Num)
	}
	// An update keeps the number; a cleared store goes on from the last.
	if got, err := vips.UpdateVIP(ctx, a.ID, sdnlb.VIPUpdate{Description: ptr("changed")}); err != nil {
		t.Fatal(err)
	} else if got.Num != a.Num || a.Num != 1 {
		t.Errorf("updated vip: number %d, was %d (want 1)", got.Num, a.Num)
	}
	if err := lbstore.NewConfigService(db).Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if e := MustCreateVIP(t, ctx, db, newVIP("10.0.0.1", 80)); e.Num != 5 {
		t.Errorf("vip created after a clear: number %d, want 5", e.Num)
	}
}

func TestNum_ErrExhausted(t *testing.T) {
	for _, tc := range []struct {
		kind   string
		create func(ctx context.Context, db *lbstore.DB, poolID string, i int) (uint32, error)
	}{
		{"vip", func(ctx context.Context, db *lbstore.DB, _ string, i int) (uint32, error) {
			v := newVIP(fmt.Sprintf("10.0.0.%d", i+1), 80)
			err := lbstore.NewVIPService(db).CreateVIP(ctx, v)
			return v.Num, err
		}},
		{"member", func(ctx context.Context, db *lbstore.DB, poolID string, i int) (uint32, error) {
			m := newMember(poolID, fmt.Sprintf("10.1.0.%d", i+1), 80)
			err := lbstore.NewMemberService(db).CreateMember(ctx, m)
			return m.Num, err
		}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			ctx, db := mustSetup(t)
			pool := MustCreatePool(t, ctx, db, newPool(""))
			lbstore.SetLastNum(t, db, tc.kind, sdnlb.NumLimit-2)
			if num, err := tc.create(ctx, db, pool.ID, 0); err != nil {
				t.Fatal(err)
			} else if num != sdnlb.NumLimit-1 {
				t.Fatalf("number %d, want the last, %d", num, sdnlb.NumLimit-1)
			}
			before := MustLoadConfig(t, ctx, db)
			_, err := tc.create(ctx, db, pool.ID, 1)
			assertError(t, err, sdnlb.ECONFLICT, "", "every "+tc.kind+" number", "24 bits")
			assertUnchanged(t, ctx, db, before)
		})
	}
}

// TestNum_ApplyConfig: a declared configuration keeps the numbers of the
// objects that stay and numbers the new ones after every number given;
// an exported configuration imports on an empty store, which numbers it.
func TestNum_ApplyConfig(t *testing.T) {
	ctx, db := mustSetup(t)
	mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
	before := configNums(MustLoadConfig(t, ctx, db))
	if before["web"] != 1 || !slices.Equal(sortedNums(before, "m1", "m2"), []uint32{1, 2}) {
		t.Fatalf("numbers after the first apply: %v", before)
	}

	want := webConfig()
	m3 := newMember("web", "10.0.0.3", 80)
	m3.ID = "m3"
	want.Members = append(want.Members[1:], m3) // m1 goes
	api := newVIP("10.0.0.200", 443)
	api.ID, api.Name = "api", "api"
	want.VIPs = append(want.VIPs, api)
	mustApply(t, ctx, db, want, sdnlb.ApplyOptions{Prune: true})
	cfg := MustLoadConfig(t, ctx, db)
	after := configNums(cfg)
	wantNums := map[string]uint32{"web": before["web"], "api": 2, "m2": before["m2"], "m3": 3}
	if !reflect.DeepEqual(after, wantNums) {
		t.Fatalf("numbers after the second apply: %v, want %v", after, wantNums)
	}

	// Through the API's JSON, which does not carry numbers.
	doc, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var imported sdnlb.Config
	if err := json.Unmarshal(doc, &imported); err != nil {
		t.Fatal(err)
	}
	empty := MustOpenDB(t)
	mustApply(t, ctx, empty, &imported, sdnlb.ApplyOptions{})
	got := configNums(MustLoadConfig(t, ctx, empty))
	if len(got) != len(after) || !slices.Equal(sortedNums(got, "web", "api"), []uint32{1, 2}) ||
		!slices.Equal(sortedNums(got, "m2", "m3"), []uint32{1, 2}) {
		t.Fatalf("numbers of the imported configuration: %v, want 1 and 2 of each kind", got)
	}
}

// sortedNums is the numbers of ids in nums, sorted.
func sortedNums(nums map[string]uint32, ids ...string) []uint32 {
	out := make([]uint32, 0, len(ids))
	for _, id := range ids {
		out = append(out, nums[id])
	}
	slices.Sort(out)
	return out
}

// TestNum_TwoProcesses creates members from two processes on one
// database at once: no two get one number, and none is skipped.
func TestNum_TwoProcesses(t *testing.T) {
	ctx := context.Background()
	dbs := mustOpenProcesses(t, 2, lbstore.NewTestDSN(t))
	pool := MustCreatePool(t, ctx, dbs[0], newPool(""))
	const perProcess = 40
	var wg sync.WaitGroup
	errs := make(chan error, 2*perProcess)
	for p, db := range dbs {
		members := lbstore.NewMemberService(db)
		for i := range perProcess {
			wg.Go(func() {
				if err := members.CreateMember(ctx, newMember(pool.ID, fmt.Sprintf("10.%d.0.%d", p+1, i+1), 80)); err != nil {
					errs <- fmt.Errorf("process %d create %d: %w", p, i, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var nums []uint32
	for _, m := range MustLoadConfig(t, ctx, dbs[1]).Members {
		nums = append(nums, m.Num)
	}
	slices.Sort(nums)
	for i, n := range nums {
		if n != uint32(i+1) {
			t.Fatalf("numbers %v, want 1 to %d once each", nums, 2*perProcess)
		}
	}
	if len(nums) != 2*perProcess {
		t.Fatalf("%d members, want %d", len(nums), 2*perProcess)
	}
}

// TestNum_Migration: the VIPs and members stored before numbers existed
// are numbered in id order, and the next ones after them.
func TestNum_Migration(t *testing.T) {
	ctx := context.Background()
	path := lbstore.NewTestDSN(t)
	db := lbstore.NewDB(path)
	db.Migrations = migrationsUpTo(t, 17)
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	MustCloseDB(t, db)
	const now = "2026-01-01T00:00:00.000000000Z"
	execRaw(t, path, `INSERT INTO vips (id, address, protocol, port, connection_limit, admin_state_up, mac, created_at, updated_at)
		VALUES ('vb', '10.0.0.2', 'TCP', 80, -1, TRUE, 'm', '`+now+`', '`+now+`'),
			('va', '10.0.0.1', 'TCP', 80, -1, TRUE, 'm', '`+now+`', '`+now+`')`)
	execRaw(t, path, `INSERT INTO pools (id, lb_method, protocol, admin_state_up, created_at, updated_at)
		VALUES ('p', 'ROUND_ROBIN', 'TCP', TRUE, '`+now+`', '`+now+`')`)
	execRaw(t, path, `INSERT INTO members (id, pool_id, address, port, weight, admin_state_up, health_status, health_since, created_at, updated_at)
		VALUES ('mc', 'p', '10.1.0.3', 80, 1, TRUE, 'NO_MONITOR', '`+now+`', '`+now+`', '`+now+`'),
			('ma', 'p', '10.1.0.1', 80, 1, TRUE, 'NO_MONITOR', '`+now+`', '`+now+`', '`+now+`'),
			('mb', 'p', '10.1.0.2', 80, 1, TRUE, 'NO_MONITOR', '`+now+`', '`+now+`', '`+now+`')`)

	db, err := lbstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer MustCloseDB(t, db)
	want := map[string]uint32{"va": 1, "vb": 2, "ma": 1, "mb": 2, "mc": 3}
	if got := configNums(MustLoadConfig(t, ctx, db)); !reflect.DeepEqual(got, want) {
		t.Fatalf("migrated numbers %v, want %v", got, want)
	}
	if v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.3", 80)); v.Num != 3 {
		t.Errorf("new vip: number %d, want 3", v.Num)
	}
	if m := MustCreateMember(t, ctx, db, newMember("p", "10.1.0.4", 80)); m.Num != 4 {
		t.Errorf("new member: number %d, want 4", m.Num)
	}
}
