package lbstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
	"github.com/sdnlb/sdnlb/migrations"
)

type migrationRecord struct {
	Version   int
	Name      string
	AppliedAt string
}

// rawDB opens the test database without lbstore, to look at it or to
// write rows as an older sdnlb would have.
func rawDB(tb testing.TB, dsn string) *sql.DB {
	tb.Helper()
	driver := "sqlite3"
	if lbstore.CurrentBackend() == "postgres" {
		driver = "pgx"
	}
	raw, err := sql.Open(driver, dsn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { raw.Close() })
	return raw
}

// readRecords reads schema_migrations straight from the database.
func readRecords(tb testing.TB, dsn string) []migrationRecord {
	tb.Helper()
	rows, err := rawDB(tb, dsn).Query(`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var recs []migrationRecord
	for rows.Next() {
		var r migrationRecord
		if err := rows.Scan(&r.Version, &r.Name, &r.AppliedAt); err != nil {
			tb.Fatal(err)
		}
		recs = append(recs, r)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return recs
}

func execRaw(tb testing.TB, dsn, query string) {
	tb.Helper()
	if _, err := rawDB(tb, dsn).Exec(query); err != nil {
		tb.Fatal(err)
	}
}

func tableExists(tb testing.TB, dsn, table string) bool {
	tb.Helper()
	query := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = $1`
	if lbstore.CurrentBackend() == "postgres" {
		query = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_name = $1`
	}
	var n int
	if err := rawDB(tb, dsn).QueryRow(query, table).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n > 0
}

// shippedFiles lists the real migration files the backend of the pass
// applies, by version: the shared ones and its own.
func shippedFiles(tb testing.TB) map[int]string {
	tb.Helper()
	names, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		tb.Fatal(err)
	}
	files := make(map[int]string)
	for _, name := range names {
		num, rest, _ := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			tb.Fatalf("migration %s has no number", name)
		}
		if parts := strings.Split(rest, "."); len(parts) == 3 && parts[1] != lbstore.CurrentBackend() {
			continue
		}
		if other, dup := files[v]; dup {
			tb.Fatalf("migrations %s and %s share version %d", other, name, v)
		}
		files[v] = name
	}
	return files
}

// migrationsUpTo returns the shipped migrations up to version last, to
// build a database as an older sdnlb left it.
func migrationsUpTo(tb testing.TB, last int) fstest.MapFS {
	tb.Helper()
	files := fstest.MapFS{}
	for v, name := range shippedFiles(tb) {
		if v > last {
			continue
		}
		body, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			tb.Fatal(err)
		}
		files[name] = &fstest.MapFile{Data: body}
	}
	if len(files) != last {
		tb.Fatalf("%d migrations up to %d, want %d", len(files), last, last)
	}
	return files
}

// withFeed adds the change feed's table to test migrations on PostgreSQL,
// where Open needs it, as version v.
func withFeed(tb testing.TB, files fstest.MapFS, v int) fstest.MapFS {
	tb.Helper()
	if lbstore.CurrentBackend() != "postgres" {
		return files
	}
	body, err := fs.ReadFile(migrations.FS, "0005_feed.postgres.sql")
	if err != nil {
		tb.Fatal(err)
	}
	files[fmt.Sprintf("%04d_feed.sql", v)] = &fstest.MapFile{Data: body}
	return files
}

// shippedVersions lists the versions of the real migration files.
func shippedVersions(tb testing.TB) []int {
	tb.Helper()
	var versions []int
	for v := range shippedFiles(tb) {
		versions = append(versions, v)
	}
	sort.Ints(versions)
	return versions
}

func TestMigrate(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		path := lbstore.NewTestDSN(t)
		db, err := lbstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		MustCloseDB(t, db)
		var got []int
		for _, r := range readRecords(t, path) {
			got = append(got, r.Version)
		}
		if want := shippedVersions(t); !reflect.DeepEqual(got, want) {
			t.Fatalf("recorded versions %v, want %v", got, want)
		}
	})

	t.Run("Twice", func(t *testing.T) {
		path := lbstore.NewTestDSN(t)
		db, err := lbstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		MustCloseDB(t, db)
		first := readRecords(t, path)

		db = lbstore.NewDB(path)
		db.Now = newTestClock().Now // a different applied_at would show a re-run
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		MustCloseDB(t, db)
		if second := readRecords(t, path); !reflect.DeepEqual(first, second) {
			t.Fatalf("second open changed schema_migrations:\n%v\nwant\n%v", second, first)
		}
	})

	// 0004 adds dispatch and forwarding: pools stored before it keep the
	// per-connection path they had (CONTROLLER, NAT), new pools get the
	// defaults (SWITCH, NAT), and opening again changes neither.
	t.Run("PoolDispatchForwarding", func(t *testing.T) {
		lbstore.SkipUnlessBackend(t, "sqlite", "PostgreSQL databases start at a schema that has 0004")
		ctx := context.Background()
		path := lbstore.NewTestDSN(t)
		db := lbstore.NewDB(path)
		db.Migrations = migrationsUpTo(t, 3)
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		MustCloseDB(t, db)
		const now = "2026-01-01T00:00:00.000000000Z"
		execRaw(t, path, `INSERT INTO vips (id, address, protocol, port, connection_limit, admin_state_up, mac, created_at, updated_at)
			VALUES ('v1', '10.0.0.100', 'TCP', 80, -1, TRUE, 'm', '`+now+`', '`+now+`');
			INSERT INTO pools (id, vip_id, lb_method, protocol, admin_state_up, created_at, updated_at)
			VALUES ('old', 'v1', 'ROUND_ROBIN', 'TCP', TRUE, '`+now+`', '`+now+`');
			INSERT INTO members (id, pool_id, address, port, weight, admin_state_up, health_status, health_since, created_at, updated_at)
			VALUES ('m1', 'old', '10.0.0.1', 8080, 1, TRUE, 'NO_MONITOR', '`+now+`', '`+now+`', '`+now+`')`)

		db, err := lbstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		pools := lbstore.NewPoolService(db)
		assertPool := func(id string, d sdnlb.Dispatch, f sdnlb.Forwarding) {
			t.Helper()
			p, err := pools.FindPoolByID(ctx, id)
			if err != nil {
				t.Fatal(err)
			} else if p.Dispatch != d || p.Forwarding != f {
				t.Fatalf("pool %s: dispatch %s forwarding %s, want %s %s", id, p.Dispatch, p.Forwarding, d, f)
			}
		}
		assertPool("old", sdnlb.DispatchController, sdnlb.ForwardingNAT)
		fresh := sdnlb.NewPool()
		fresh.ID = "new"
		MustCreatePool(t, ctx, db, fresh)
		assertPool("new", sdnlb.DispatchSwitch, sdnlb.ForwardingNAT)
		// The migrated pool takes the new rules like any other.
		_, err = pools.UpdatePool(ctx, "old", sdnlb.PoolUpdate{Forwarding: ptr(sdnlb.ForwardingDSR)})
		assertError(t, err, sdnlb.EINVALID, "forwarding", "m1", "8080")
		MustCloseDB(t, db)

		// The schema's defaults are the domain's, for rows written without
		// the columns.
		execRaw(t, path, `INSERT INTO pools (id, lb_method, protocol, admin_state_up, created_at, updated_at)
			VALUES ('raw', 'ROUND_ROBIN', 'TCP', TRUE, '`+now+`', '`+now+`')`)
		db, err = lbstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer MustCloseDB(t, db)
		pools = lbstore.NewPoolService(db)
		assertPool("old", sdnlb.DispatchController, sdnlb.ForwardingNAT)
		assertPool("new", sdnlb.DispatchSwitch, sdnlb.ForwardingNAT)
		assertPool("raw", sdnlb.DispatchSwitch, sdnlb.ForwardingNAT)
	})

	t.Run("ErrNewerSchema", func(t *testing.T) {
		path := lbstore.NewTestDSN(t)
		db, err := lbstore.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		MustCloseDB(t, db)
		versions := shippedVersions(t)
		latest := versions[len(versions)-1]
		newer := latest + 5
		execRaw(t, path, fmt.Sprintf(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (%d, 'future.sql', '')`, newer))

		_, err = lbstore.Open(path)
		want := fmt.Sprintf("database schema version %d is newer than this sdnlb supports (%d); upgrade sdnlb", newer, latest)
		if err == nil || !strings.HasSuffix(err.Error(), ": "+want) {
			t.Fatalf("err = %v, want %q", err, want)
		}
	})

	t.Run("NameOrder", func(t *testing.T) {
		path := lbstore.NewTestDSN(t)
		db := lbstore.NewDB(path)
		// Each file needs the one before it.
		db.Migrations = withFeed(t, fstest.MapFS{
			"0010_c.sql": {Data: []byte(`INSERT INTO b (x) VALUES (1);`)},
			"0001_a.sql": {Data: []byte(`CREATE TABLE a (x INTEGER PRIMARY KEY); INSERT INTO a VALUES (1);`)},
			"0002_b.sql": {Data: []byte(`CREATE TABLE b (x INTEGER REFERENCES a (x));`)},
		}, 11)
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		MustCloseDB(t, db)
		var got []string
		for _, r := range readRecords(t, path) {
			got = append(got, fmt.Sprintf("%d %s", r.Version, r.Name))
		}
		want := []string{"1 0001_a.sql", "2 0002_b.sql", "10 0010_c.sql"}
		if lbstore.CurrentBackend() == "postgres" {
			want = append(want, "11 0011_feed.sql")
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("applied %v, want %v", got, want)
		}
	})

	t.Run("ErrFailedMigrationRollsBack", func(t *testing.T) {
		path := lbstore.NewTestDSN(t)
		db := lbstore.NewDB(path)
		db.Migrations = fstest.MapFS{
			"0001_a.sql":   {Data: []byte(`CREATE TABLE a (x INTEGER);`)},
			"0002_bad.sql": {Data: []byte(`CREATE TABLE half (x INTEGER); INSERT INTO nowhere VALUES (1);`)},
		}
		if err := db.Open(); err == nil || !strings.Contains(err.Error(), "0002_bad.sql") {
			t.Fatalf("err = %v, want the failing migration named", err)
		}
		if recs := readRecords(t, path); len(recs) != 1 || recs[0].Version != 1 {
			t.Fatalf("recorded %v, want only version 1", recs)
		}
		if !tableExists(t, path, "a") || tableExists(t, path, "half") {
			t.Fatal("want 0001 applied and all of 0002 rolled back")
		}
	})

	// A version may have one file per dialect; each database applies its
	// own and the shared ones.
	t.Run("DialectFiles", func(t *testing.T) {
		path := lbstore.NewTestDSN(t)
		db := lbstore.NewDB(path)
		db.Migrations = withFeed(t, fstest.MapFS{
			"0001_a.sqlite.sql":   {Data: []byte(`CREATE TABLE only_sqlite (x INTEGER);`)},
			"0001_a.postgres.sql": {Data: []byte(`CREATE TABLE only_postgres (x INTEGER);`)},
			"0002_b.sql":          {Data: []byte(`CREATE TABLE shared (x INTEGER);`)},
		}, 3)
		if err := db.Open(); err != nil {
			t.Fatal(err)
		}
		MustCloseDB(t, db)
		own, other := "only_sqlite", "only_postgres"
		if lbstore.CurrentBackend() == "postgres" {
			own, other = other, own
		}
		if !tableExists(t, path, own) || !tableExists(t, path, "shared") || tableExists(t, path, other) {
			t.Fatalf("want %s and shared, not %s", own, other)
		}
		if recs := readRecords(t, path); recs[0].Name != "0001_a."+lbstore.CurrentBackend()+".sql" {
			t.Fatalf("recorded %v", recs)
		}
	})

	t.Run("ErrBadName", func(t *testing.T) {
		for name, files := range map[string]fstest.MapFS{
			"no number":      {"init.sql": {Data: []byte(`SELECT 1;`)}},
			"shared version": {"0001_a.sql": {Data: []byte(`SELECT 1;`)}, "01_b.sql": {Data: []byte(`SELECT 1;`)}},
			"shared and own": {
				"0001_a.sql": {Data: []byte(`SELECT 1;`)}, "0001_a.sqlite.sql": {Data: []byte(`SELECT 1;`)},
				"0001_a.postgres.sql": {Data: []byte(`SELECT 1;`)},
			},
		} {
			db := lbstore.NewDB(lbstore.NewTestDSN(t))
			db.Migrations = files
			if err := db.Open(); err == nil {
				t.Fatalf("%s: opened", name)
			}
		}
	})
}
