package lbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sdnlb/sdnlb"
)

// ClusterNodeTimeout is how long after it was last seen a node still
// appears in Cluster.
const ClusterNodeTimeout = 10 * time.Second

var _ sdnlb.LeaseService = (*DB)(nil)

// withNow puts the dialect's database clock (microseconds) for {now}.
func (db *DB) withNow(query string) string {
	return db.cluster.Rebind(strings.ReplaceAll(query, "{now}", "("+db.dialect.now+")"))
}

// TakeLease takes or renews the leader lease for d, by the database clock,
// in one conditional UPDATE: it succeeds only when node holds the lease
// with generation, or the lease has expired, and a takeover increments the
// generation. It records that node was seen first, so a process whose node
// id another live process holds never touches the lease. Several nodes
// trying at once are serialized by the row lock (PostgreSQL re-checks the
// condition on the row the first one wrote) or the file lock (SQLite).
func (db *DB) TakeLease(ctx context.Context, node sdnlb.ClusterNode, generation uint64, d time.Duration) (sdnlb.Lease, error) {
	if err := db.recordNode(ctx, node, d); err != nil {
		return sdnlb.Lease{}, unavailable(ctx, err)
	}
	lease, err := db.takeLease(ctx, node, generation, d)
	return lease, unavailable(ctx, err)
}

func (db *DB) takeLease(ctx context.Context, node sdnlb.ClusterNode, generation uint64, d time.Duration) (sdnlb.Lease, error) {
	var gen int64
	err := db.cluster.QueryRowxContext(ctx, db.withNow(`UPDATE cluster_lease SET
			generation = CASE WHEN expires_at < {now} THEN generation + 1 ELSE generation END,
			holder = ?,
			expires_at = {now} + ?
		WHERE id = 1 AND ((holder = ? AND generation = ?) OR expires_at < {now})
		RETURNING generation`),
		node.ID, d.Microseconds(), node.ID, int64(generation)).Scan(&gen)
	switch {
	case err == nil:
		return sdnlb.Lease{Held: true, Holder: node.ID, Generation: uint64(gen), Remaining: d}, nil
	case !errors.Is(err, sql.ErrNoRows):
		return sdnlb.Lease{}, fmt.Errorf("take lease: %w", err)
	}
	var row struct {
		Holder     string `db:"holder"`
		Generation int64  `db:"generation"`
		Remaining  int64  `db:"remaining"`
	}
	if err := db.cluster.GetContext(ctx, &row, db.withNow(
		`SELECT holder, generation, expires_at - {now} AS remaining FROM cluster_lease WHERE id = 1`)); err != nil {
		return sdnlb.Lease{}, fmt.Errorf("read lease: %w", err)
	}
	return sdnlb.Lease{Holder: row.Holder, Generation: uint64(row.Generation),
		Remaining: max(0, time.Duration(row.Remaining)*time.Microsecond)}, nil
}

// RecordNode records that node was seen, unless another instance recorded
// node.ID less than d ago: then it fails with ECONFLICT and changes
// nothing. The upsert's condition decides it in one statement.
func (db *DB) RecordNode(ctx context.Context, node sdnlb.ClusterNode, d time.Duration) error {
	return unavailable(ctx, db.recordNode(ctx, node, d))
}

func (db *DB) recordNode(ctx context.Context, node sdnlb.ClusterNode, d time.Duration) error {
	if node.ID == "" {
		return sdnlb.Errorf(sdnlb.EINVALID, "node id required")
	}
	res, err := db.cluster.ExecContext(ctx, db.withNow(`INSERT INTO cluster_nodes (id, api_addr, openflow_addr, instance, last_seen)
		VALUES (?, ?, ?, ?, {now})
		ON CONFLICT (id) DO UPDATE SET api_addr = excluded.api_addr,
			openflow_addr = excluded.openflow_addr, instance = excluded.instance, last_seen = excluded.last_seen
		WHERE cluster_nodes.instance = excluded.instance OR cluster_nodes.last_seen < excluded.last_seen - ?`),
		node.ID, node.APIAddr, node.OpenFlowAddr, node.Instance, d.Microseconds())
	if err != nil {
		return fmt.Errorf("record node: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	var other struct {
		APIAddr string `db:"api_addr"`
		Age     int64  `db:"age"`
	}
	if err := db.cluster.GetContext(ctx, &other, db.withNow(
		`SELECT api_addr, {now} - last_seen AS age FROM cluster_nodes WHERE id = ?`), node.ID); err != nil {
		return fmt.Errorf("read node: %w", err)
	}
	return sdnlb.Errorf(sdnlb.ECONFLICT, "node id %q is in use by another sdnlb process (API %s, seen %v ago): give each node its own --node-id",
		node.ID, other.APIAddr, (time.Duration(other.Age) * time.Microsecond).Round(time.Millisecond))
}

// ReleaseLease expires the lease now when nodeID holds it with
// generation; otherwise it does nothing.
func (db *DB) ReleaseLease(ctx context.Context, nodeID string, generation uint64) error {
	_, err := db.cluster.ExecContext(ctx, db.withNow(
		`UPDATE cluster_lease SET expires_at = {now} - 1 WHERE id = 1 AND holder = ? AND generation = ?`),
		nodeID, int64(generation))
	if err != nil {
		return unavailable(ctx, fmt.Errorf("release lease: %w", err))
	}
	return nil
}

// Cluster lists the nodes seen in the last ClusterNodeTimeout, in id
// order, with the switches each masters, and the one holding an unexpired
// lease.
func (db *DB) Cluster(ctx context.Context) (*sdnlb.Cluster, error) {
	return readTx(ctx, db, func(tx *Tx) (*sdnlb.Cluster, error) {
		var lease struct {
			Holder    string `db:"holder"`
			Remaining int64  `db:"remaining"`
		}
		if err := tx.GetContext(ctx, &lease, db.withNow(
			`SELECT holder, expires_at - {now} AS remaining FROM cluster_lease WHERE id = 1`)); err != nil {
			return nil, fmt.Errorf("read lease: %w", err)
		}
		var rows []struct {
			ID           string `db:"id"`
			APIAddr      string `db:"api_addr"`
			OpenFlowAddr string `db:"openflow_addr"`
			LastSeen     int64  `db:"last_seen"`
		}
		if err := tx.SelectContext(ctx, &rows, db.withNow(
			`SELECT id, api_addr, openflow_addr, last_seen FROM cluster_nodes WHERE last_seen >= {now} - ? ORDER BY id`),
			ClusterNodeTimeout.Microseconds()); err != nil {
			return nil, fmt.Errorf("list nodes: %w", err)
		}
		var masters []struct {
			DPID string `db:"dpid"`
			Node string `db:"node_id"`
		}
		if err := tx.SelectContext(ctx, &masters, `SELECT dpid, node_id FROM switch_masters`); err != nil {
			return nil, fmt.Errorf("list switch masters: %w", err)
		}
		mastered := map[string][]string{}
		for _, m := range masters {
			mastered[m.Node] = append(mastered[m.Node], m.DPID)
		}
		var records []struct {
			Node     string        `db:"node_id"`
			Stats    sql.NullInt64 `db:"stats"`
			Topology sql.NullInt64 `db:"topology"`
		}
		if err := tx.SelectContext(ctx, &records, `SELECT node_id, MAX(stats) AS stats, MAX(topology) AS topology FROM (
				SELECT node_id, recorded_at AS stats, NULL AS topology FROM stats_parts WHERE NOT absorbed
				UNION ALL SELECT node_id, NULL, seen_at FROM topology_parts) AS r GROUP BY node_id`); err != nil {
			return nil, fmt.Errorf("read the nodes' records: %w", err)
		}
		recorded := map[string][2]*time.Time{}
		for _, r := range records {
			recorded[r.Node] = [2]*time.Time{microTime(r.Stats), microTime(r.Topology)}
		}
		c := &sdnlb.Cluster{Nodes: make([]*sdnlb.ClusterNode, 0, len(rows))}
		if lease.Remaining > 0 {
			c.Leader = lease.Holder
		}
		for _, r := range rows {
			n := &sdnlb.ClusterNode{ID: r.ID, APIAddr: r.APIAddr, OpenFlowAddr: r.OpenFlowAddr,
				Role: sdnlb.RoleFollower, LastSeen: time.UnixMicro(r.LastSeen).UTC(), Masters: mastered[r.ID],
				StatsRecordedAt: recorded[r.ID][0], TopologyRecordedAt: recorded[r.ID][1]}
			slices.Sort(n.Masters)
			if c.Leader != "" && r.ID == c.Leader {
				n.Role = sdnlb.RoleLeader
			}
			c.Nodes = append(c.Nodes, n)
		}
		return c, nil
	})
}

// microTime is a time stored in microseconds, nil for none.
func microTime(us sql.NullInt64) *time.Time {
	if !us.Valid {
		return nil
	}
	t := time.UnixMicro(us.Int64).UTC()
	return &t
}
