package lbstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/sdnlb/sdnlb"
)

func openTestDB(tb testing.TB) *DB {
	tb.Helper()
	db := NewDB(testDSN(tb))
	if err := db.Open(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// TestDB_ConnectionParams checks the settings on several connections of
// each pool at once: a PRAGMA run once would reach only one of them.
func TestDB_ConnectionParams(t *testing.T) {
	skipUnlessBackend(t, "sqlite", "PRAGMAs")
	ctx := context.Background()
	db := openTestDB(t)
	for _, tc := range []struct {
		name      string
		pool      *sqlx.DB
		conns     int
		queryOnly int
	}{
		{"Write", db.write, 1, 0},
		{"Read", db.read, 3, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var held []*sqlx.Conn
			defer func() {
				for _, c := range held {
					c.Close()
				}
			}()
			for range tc.conns {
				c, err := tc.pool.Connx(ctx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c)
				var fk, busy, queryOnly int
				var journal string
				for pragma, dst := range map[string]any{
					"foreign_keys": &fk, "busy_timeout": &busy, "journal_mode": &journal, "query_only": &queryOnly,
				} {
					if err := c.GetContext(ctx, dst, "PRAGMA "+pragma); err != nil {
						t.Fatal(err)
					}
				}
				if fk != 1 || busy != 5000 || journal != "wal" || queryOnly != tc.queryOnly {
					t.Fatalf("connection %d: foreign_keys=%d busy_timeout=%d journal_mode=%s query_only=%d",
						len(held), fk, busy, journal, queryOnly)
				}
			}
		})
	}
}

// TestMapError checks the mapping of the driver's own errors, which the
// explicit checks in front of every write normally pre-empt.
func TestMapError(t *testing.T) {
	ctx := context.Background()
	db := openTestDB(t)
	const now = "2026-01-01T00:00:00.000000000Z"
	seed := []string{
		`INSERT INTO vips (id, address, protocol, port, connection_limit, admin_state_up, mac, created_at, updated_at, num)
			VALUES ('v1', '10.0.0.1', 'TCP', 80, -1, TRUE, 'm', '` + now + `', '` + now + `', 1)`,
		`INSERT INTO pools (id, vip_id, lb_method, protocol, admin_state_up, created_at, updated_at)
			VALUES ('p1', 'v1', 'RANDOM', 'TCP', TRUE, '` + now + `', '` + now + `')`,
	}
	for _, q := range seed {
		if _, err := db.write.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		query  string
		fkCode string
		want   string
	}{
		{"PrimaryKey", `INSERT INTO vips (id, address, protocol, port, connection_limit, admin_state_up, mac, created_at, updated_at, num)
			VALUES ('v1', '10.0.0.2', 'TCP', 80, -1, TRUE, 'm', '', '', 2)`, sdnlb.ENOTFOUND, sdnlb.ECONFLICT},
		{"Unique", `INSERT INTO vips (id, address, protocol, port, connection_limit, admin_state_up, mac, created_at, updated_at, num)
			VALUES ('v2', '10.0.0.1', 'TCP', 80, -1, TRUE, 'm', '', '', 3)`, sdnlb.ENOTFOUND, sdnlb.ECONFLICT},
		{"UniqueICMPAnyPort", `INSERT INTO vips (id, address, protocol, port, connection_limit, admin_state_up, mac, created_at, updated_at, num)
			VALUES ('v3', '10.0.0.9', 'ICMP', 0, -1, TRUE, 'm', '', '', 4), ('v4', '10.0.0.9', 'ICMP', 5, -1, TRUE, 'm', '', '', 5)`, sdnlb.ENOTFOUND, sdnlb.ECONFLICT},
		{"OnePoolPerVIP", `INSERT INTO pools (id, vip_id, lb_method, protocol, admin_state_up, created_at, updated_at)
			VALUES ('p2', 'v1', 'RANDOM', 'TCP', TRUE, '', '')`, sdnlb.ENOTFOUND, sdnlb.ECONFLICT},
		{"ForeignKeyMissing", `INSERT INTO pools (id, vip_id, lb_method, protocol, admin_state_up, created_at, updated_at)
			VALUES ('p3', 'nope', 'RANDOM', 'TCP', TRUE, '', '')`, sdnlb.ENOTFOUND, sdnlb.ENOTFOUND},
		{"ForeignKeyDependants", `DELETE FROM vips WHERE id = 'v1'`, sdnlb.ECONFLICT, sdnlb.ECONFLICT},
		{"Other", `SELECT * FROM nowhere`, sdnlb.ENOTFOUND, sdnlb.EINTERNAL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := db.write.ExecContext(ctx, tc.query)
			if err == nil {
				t.Fatal("the statement succeeded")
			}
			if got := sdnlb.ErrorCode(mapError(err, tc.fkCode)); got != tc.want {
				t.Fatalf("code %q, want %q (err: %v)", got, tc.want, err)
			}
		})
	}

	t.Run("NoRows", func(t *testing.T) {
		var id string
		err := db.read.GetContext(ctx, &id, `SELECT id FROM vips WHERE id = 'nope'`)
		if !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("err = %v", err)
		}
		if got := sdnlb.ErrorCode(mapError(err, sdnlb.ECONFLICT)); got != sdnlb.ENOTFOUND {
			t.Fatalf("code %q, want not_found", got)
		}
	})
}

// TestQueryPlans guards the indexes the list and status queries rely on:
// each must be a search on the named index, never a scan of members. On
// PostgreSQL, whose planner scans tables this small anyway, sequential
// scans are switched off: what is checked is that the index can serve the
// query (a partial index's condition matches it, for one).
func TestQueryPlans(t *testing.T) {
	db := openTestDB(t)
	for _, tc := range []struct {
		name, query, index, pgIndex string
	}{
		{"VIPStatus", selectVIPs + ` WHERE v.id = 'x'`, "members_in_rotation", ""},
		{"MembersOfPool", selectMembers + ` WHERE pool_id = 'p' AND id > 'a' ORDER BY id LIMIT 100`, "members_pool_page", ""},
		{"MembersAtAddress", selectMembers + ` WHERE address = '10.0.0.1' AND id > 'a' ORDER BY id LIMIT 100`, "members_address", ""},
		{"MemberOffDSRPort", strings.NewReplacer("pool_id = ?", "pool_id = 'p'", "?", "80").Replace(selectMemberOffPort), "members_pool_port", ""},
		{"PoolsOfMonitor", selectPools + ` WHERE EXISTS (SELECT 1 FROM pool_monitors pm WHERE pm.pool_id = p.id AND pm.monitor_id = 'm')`, "sqlite_autoindex_pool_monitors_1", "pool_monitors_pkey"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if db.Dialect() == "postgres" {
				index := cmp.Or(tc.pgIndex, tc.index)
				if plan := explainPostgres(t, db, tc.query); !strings.Contains(plan, " using "+index+" ") && !strings.Contains(plan, " on "+index) ||
					strings.Contains(plan, "Seq Scan on members") {
					t.Fatalf("plan does not search %s:\n%s", index, plan)
				}
				return
			}
			plan := explainSQLite(t, db, tc.query)
			if !strings.Contains(plan, "INDEX "+tc.index+" ") || strings.Contains(plan, "SCAN members") || strings.Contains(plan, "SCAN m ") {
				t.Fatalf("plan does not search %s:\n%s", tc.index, plan)
			}
		})
	}
}

func explainSQLite(tb testing.TB, db *DB, query string) string {
	tb.Helper()
	rows, err := db.read.Query(`EXPLAIN QUERY PLAN ` + query)
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			tb.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "\n")
}

func explainPostgres(tb testing.TB, db *DB, query string) string {
	tb.Helper()
	tx, err := db.read.Beginx()
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback()
	tx.MustExec(`SET LOCAL enable_seqscan = off`)
	var plan []string
	if err := tx.Select(&plan, `EXPLAIN (COSTS OFF) `+query); err != nil {
		tb.Fatal(err)
	}
	return strings.Join(plan, "\n") + "\n"
}
