package lbstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

// MustOpenDB opens a fresh file database in a temporary directory with the
// real migrations and a test clock.
func MustOpenDB(tb testing.TB) *lbstore.DB {
	tb.Helper()
	db := lbstore.NewDB(lbstore.NewTestDSN(tb))
	db.Now = newTestClock().Now
	if err := db.Open(); err != nil {
		tb.Fatal(err)
	}
	return db
}

// mustSetup returns a context and a fresh database that is closed when the
// test ends.
func mustSetup(tb testing.TB) (context.Context, *lbstore.DB) {
	tb.Helper()
	db := MustOpenDB(tb)
	tb.Cleanup(func() { MustCloseDB(tb, db) })
	return context.Background(), db
}

// MustCloseDB closes db and fails the test if that fails.
func MustCloseDB(tb testing.TB, db *lbstore.DB) {
	tb.Helper()
	if err := db.Close(); err != nil {
		tb.Fatal(err)
	}
}

// testClock starts at a time with nanoseconds and a zone other than UTC,
// and moves a millisecond and a nanosecond on every reading, so tests see
// that the store keeps sub-second precision and stores UTC.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond + time.Nanosecond)
	return c.t
}

func newVIP(address string, port int) *sdnlb.VIP {
	v := sdnlb.NewVIP()
	v.Name = "web"
	v.Address = address
	v.Port = port
	return v
}

func newPool(vipID string) *sdnlb.Pool {
	p := sdnlb.NewPool()
	p.Name = "web-pool"
	p.VIPID = vipID
	return p
}

func newMember(poolID, address string, port int) *sdnlb.Member {
	m := sdnlb.NewMember()
	m.PoolID = poolID
	m.Address = address
	m.Port = port
	return m
}

func MustCreateVIP(tb testing.TB, ctx context.Context, db *lbstore.DB, v *sdnlb.VIP) *sdnlb.VIP {
	tb.Helper()
	if err := lbstore.NewVIPService(db).CreateVIP(ctx, v); err != nil {
		tb.Fatal(err)
	}
	return v
}

func MustCreatePool(tb testing.TB, ctx context.Context, db *lbstore.DB, p *sdnlb.Pool) *sdnlb.Pool {
	tb.Helper()
	if err := lbstore.NewPoolService(db).CreatePool(ctx, p); err != nil {
		tb.Fatal(err)
	}
	return p
}

func MustCreateMember(tb testing.TB, ctx context.Context, db *lbstore.DB, m *sdnlb.Member) *sdnlb.Member {
	tb.Helper()
	if err := lbstore.NewMemberService(db).CreateMember(ctx, m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func MustCreateMonitor(tb testing.TB, ctx context.Context, db *lbstore.DB, m *sdnlb.Monitor) *sdnlb.Monitor {
	tb.Helper()
	if err := lbstore.NewMonitorService(db).CreateMonitor(ctx, m); err != nil {
		tb.Fatal(err)
	}
	return m
}

func MustAssociate(tb testing.TB, ctx context.Context, db *lbstore.DB, poolID, monitorID string) {
	tb.Helper()
	if err := lbstore.NewPoolService(db).AssociateMonitor(ctx, poolID, monitorID); err != nil {
		tb.Fatal(err)
	}
}

// MustLoadConfig reads everything, to compare before and after a write.
func MustLoadConfig(tb testing.TB, ctx context.Context, db *lbstore.DB) *sdnlb.Config {
	tb.Helper()
	cfg, err := lbstore.NewConfigService(db).LoadConfig(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// assertError checks err's code and field, and that the message mentions
// each of the given strings.
func assertError(tb testing.TB, err error, code, field string, mentions ...string) {
	tb.Helper()
	if got := sdnlb.ErrorCode(err); got != code {
		tb.Fatalf("code = %q, want %q (err: %v)", got, code, err)
	}
	if got := sdnlb.ErrorField(err); got != field {
		tb.Fatalf("field = %q, want %q (err: %v)", got, field, err)
	}
	for _, s := range mentions {
		if !strings.Contains(sdnlb.ErrorMessage(err), s) {
			tb.Fatalf("message %q does not mention %q", sdnlb.ErrorMessage(err), s)
		}
	}
}

// assertUnchanged fails when the configuration differs from before, which
// is what a rejected write must leave.
func assertUnchanged(tb testing.TB, ctx context.Context, db *lbstore.DB, before *sdnlb.Config) {
	tb.Helper()
	after := MustLoadConfig(tb, ctx, db)
	if !reflect.DeepEqual(before, after) {
		tb.Fatalf("a rejected write changed the configuration:\nbefore %s\nafter  %s", dumpConfig(before), dumpConfig(after))
	}
}

// rejectedCreate is a create the store must refuse with code on field,
// with a message that mentions the given strings.
type rejectedCreate[T any] struct {
	name, code, field string
	setup             func(tb testing.TB, ctx context.Context, db *lbstore.DB) (obj *T, mentions []string)
}

// testRejectedCreates runs each case on a fresh database and checks that
// the refusal changed neither the configuration nor the argument.
func testRejectedCreates[T any](t *testing.T, create func(ctx context.Context, db *lbstore.DB, obj *T) error, cases []rejectedCreate[T]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := mustSetup(t)
			obj, mentions := tc.setup(t, ctx, db)
			before := MustLoadConfig(t, ctx, db)
			orig := *obj
			assertError(t, create(ctx, db, obj), tc.code, tc.field, mentions...)
			assertUnchanged(t, ctx, db, before)
			if !reflect.DeepEqual(*obj, orig) {
				t.Fatalf("a failed create changed its argument: %+v", *obj)
			}
		})
	}
}

// rejectedUpdate is an update the store must refuse with code on field.
type rejectedUpdate[U any] struct {
	name, code, field string
	setup             func(tb testing.TB, ctx context.Context, db *lbstore.DB) (id string, upd U)
}

// testRejectedUpdates runs each case on a fresh database and checks that
// the refusal returned no object and changed nothing.
func testRejectedUpdates[T, U any](t *testing.T, update func(ctx context.Context, db *lbstore.DB, id string, upd U) (*T, error), cases []rejectedUpdate[U]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := mustSetup(t)
			id, upd := tc.setup(t, ctx, db)
			before := MustLoadConfig(t, ctx, db)
			got, err := update(ctx, db, id, upd)
			assertError(t, err, tc.code, tc.field)
			if got != nil {
				t.Fatalf("a failed update returned %+v", got)
			}
			assertUnchanged(t, ctx, db, before)
		})
	}
}

// findCase is a filter and the ids of what it must select, in order.
type findCase[F any] struct {
	name   string
	filter F
	want   []string
}

// testFind runs find with each case's filter and checks the ids it returns.
func testFind[T, F any](t *testing.T, ctx context.Context, find func(context.Context, F) ([]*T, error), id func(*T) string, cases []findCase[F]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := find(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, obj := range got {
				ids = append(ids, id(obj))
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Fatalf("got %v, want %v", ids, tc.want)
			}
		})
	}
}

func dumpConfig(c *sdnlb.Config) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seq=%d", c.Seq)
	for _, v := range c.VIPs {
		fmt.Fprintf(&b, " vip%+v", *v)
	}
	for _, p := range c.Pools {
		fmt.Fprintf(&b, " pool%+v", *p)
	}
	for _, m := range c.Members {
		fmt.Fprintf(&b, " member%+v", *m)
	}
	for _, m := range c.Monitors {
		fmt.Fprintf(&b, " monitor%+v", *m)
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

func TestDB_Persistence(t *testing.T) {
	ctx := context.Background()
	path := lbstore.NewTestDSN(t)
	db, err := lbstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
	p := MustCreatePool(t, ctx, db, newPool(v.ID))
	MustCreateMember(t, ctx, db, newMember(p.ID, "10.0.0.1", 8080))
	mon := MustCreateMonitor(t, ctx, db, sdnlb.NewMonitor())
	MustAssociate(t, ctx, db, p.ID, mon.ID)
	before := MustLoadConfig(t, ctx, db)
	MustCloseDB(t, db)

	db, err = lbstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer MustCloseDB(t, db)
	after := MustLoadConfig(t, ctx, db)
	// The feed starts again with the process; everything else must survive.
	before.Seq, after.Seq = 0, 0
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("reopened:\n%s\nwant\n%s", dumpConfig(after), dumpConfig(before))
	}
}

func TestDB_Open(t *testing.T) {
	lbstore.SkipUnlessBackend(t, "sqlite", "files")
	t.Run("ErrInMemory", func(t *testing.T) {
		for _, dsn := range []string{":memory:", "file::memory:", "file:x?mode=memory"} {
			if err := lbstore.NewDB(dsn).Open(); err == nil {
				t.Fatalf("%s: opened an in-memory database", dsn)
			}
		}
	})
	t.Run("CreatesDirectory", func(t *testing.T) {
		db, err := lbstore.Open(filepath.Join(t.TempDir(), "a", "b", "sdnlb.db"))
		if err != nil {
			t.Fatal(err)
		}
		MustCloseDB(t, db)
	})
	t.Run("FileURI", func(t *testing.T) {
		db, err := lbstore.Open("file:" + filepath.Join(t.TempDir(), "sdnlb.db") + "?cache=private")
		if err != nil {
			t.Fatal(err)
		}
		defer MustCloseDB(t, db)
		MustCreateVIP(t, context.Background(), db, newVIP("10.0.0.100", 80))
	})
}

func TestDB_Timestamps(t *testing.T) {
	ctx, db := mustSetup(t)
	at := time.Date(2026, 5, 4, 3, 2, 1, 987654321, time.FixedZone("X", -7*3600))
	db.Now = func() time.Time { return at }

	v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
	got, err := lbstore.NewVIPService(db).FindVIPByID(ctx, v.ID)
	if err != nil {
		t.Fatal(err)
	}
	for name, ts := range map[string]time.Time{"created_at": got.CreatedAt, "updated_at": got.UpdatedAt} {
		if !ts.Equal(at) || ts.Location() != time.UTC {
			t.Fatalf("%s = %v, want %v in UTC", name, ts, at.UTC())
		}
	}
}

// TestDB_ConcurrentWrites runs 200 goroutines that create and update at
// once: none may fail (in particular not with "database is locked") and no
// write may be lost.
func TestDB_ConcurrentWrites(t *testing.T) {
	ctx, db := mustSetup(t)
	db.Now = time.Now
	v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.100", 80))
	pool := MustCreatePool(t, ctx, db, newPool(v.ID))
	members := lbstore.NewMemberService(db)
	vips := lbstore.NewVIPService(db)

	const n = 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	wantWeight := make(map[string]int)
	errs := make(chan error, 4*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := newMember(pool.ID, fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), 80)
			if err := members.CreateMember(ctx, m); err != nil {
				errs <- fmt.Errorf("create %d: %w", i, err)
				return
			}
			weight := i%sdnlb.MaxWeight + 1
			if _, err := members.UpdateMember(ctx, m.ID, sdnlb.MemberUpdate{Weight: &weight}); err != nil {
				errs <- fmt.Errorf("update %d: %w", i, err)
			}
			mu.Lock()
			wantWeight[m.ID] = weight
			mu.Unlock()
			// Everyone also updates the one shared VIP.
			if _, err := vips.UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{Description: ptr(fmt.Sprint(i))}); err != nil {
				errs <- fmt.Errorf("update vip %d: %w", i, err)
			}
			// And reads, which must not block the writers.
			if _, err := members.FindMembers(ctx, sdnlb.MemberFilter{PoolID: &pool.ID, Page: sdnlb.Page{Limit: 10}}); err != nil {
				errs <- fmt.Errorf("find %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	got, err := members.FindMembers(ctx, sdnlb.MemberFilter{PoolID: &pool.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d members, want %d", len(got), n)
	}
	for _, m := range got {
		if want, ok := wantWeight[m.ID]; !ok || m.Weight != want {
			t.Fatalf("member %s weight %d, want %d: a write was lost", m.ID, m.Weight, want)
		}
	}
}
