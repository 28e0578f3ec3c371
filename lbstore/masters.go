package lbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.SwitchMasterService = (*DB)(nil)

// RecordSwitches records that node is connected to the switches dpids, by
// the database clock, and forgets its other switches and every connection
// older than ClusterNodeTimeout (of nodes gone). It first locks the
// node's row while that is node.Instance's: a process whose node id
// another took over changes nothing.
func (db *DB) RecordSwitches(ctx context.Context, node sdnlb.ClusterNode, dpids []string) error {
	err := inTx(ctx, db.masters, func(tx *sql.Tx) error {
		var now int64
		err := tx.QueryRowContext(ctx, db.withNow(`UPDATE cluster_nodes SET last_seen = last_seen
			WHERE id = ? AND instance = ? RETURNING {now}`), node.ID, node.Instance).Scan(&now)
		if errors.Is(err, sql.ErrNoRows) {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "node id %q is in use by another sdnlb process", node.ID)
		}
		if err != nil {
			return fmt.Errorf("lock node: %w", err)
		}
		if len(dpids) > 0 {
			args := make([]any, 0, 3*len(dpids))
			for _, dpid := range dpids {
				args = append(args, node.ID, dpid, now)
			}
			if _, err := tx.ExecContext(ctx, db.masters.Rebind(`INSERT INTO cluster_switches (node_id, dpid, seen_at)
				VALUES `+placeholders(len(dpids), "(?, ?, ?)")+`
				ON CONFLICT (node_id, dpid) DO UPDATE SET seen_at = excluded.seen_at`), args...); err != nil {
				return fmt.Errorf("record switches: %w", err)
			}
		}
		args := []any{now - ClusterNodeTimeout.Microseconds(), node.ID}
		recorded := "FALSE"
		if len(dpids) > 0 {
			recorded = "dpid IN (" + placeholders(len(dpids), "?") + ")"
			for _, dpid := range dpids {
				args = append(args, dpid)
			}
		}
		if _, err := tx.ExecContext(ctx, db.masters.Rebind(`DELETE FROM cluster_switches
			WHERE seen_at < ? OR (node_id = ? AND NOT `+recorded+`)`), args...); err != nil {
			return fmt.Errorf("forget switches: %w", err)
		}
		return nil
	})
	return unavailable(ctx, err)
}

// SwitchMasters reads, in one snapshot, the lease's term, the assignment
// and the switch connections recorded within live.
func (db *DB) SwitchMasters(ctx context.Context, live time.Duration) (*sdnlb.Mastery, error) {
	tx, err := db.masters.BeginTxx(ctx, db.dialect.readOptions)
	if err != nil {
		return nil, unavailable(ctx, fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()
	m := &sdnlb.Mastery{}
	var term int64
	if err := tx.GetContext(ctx, &term, `SELECT generation FROM cluster_lease WHERE id = 1`); err != nil {
		return nil, unavailable(ctx, fmt.Errorf("read lease: %w", err))
	}
	m.Term = uint64(term)
	var masters []struct {
		DPID       string `db:"dpid"`
		Node       string `db:"node_id"`
		Generation int64  `db:"generation"`
	}
	if err := tx.SelectContext(ctx, &masters, `SELECT dpid, node_id, generation FROM switch_masters`); err != nil {
		return nil, unavailable(ctx, fmt.Errorf("read masters: %w", err))
	}
	for _, r := range masters {
		m.Masters = append(m.Masters, sdnlb.SwitchMaster{DPID: r.DPID, Node: r.Node, Generation: uint64(r.Generation)})
	}
	var conns []struct {
		Node string `db:"node_id"`
		DPID string `db:"dpid"`
		Age  int64  `db:"age"`
	}
	if err := tx.SelectContext(ctx, &conns, db.withNow(`SELECT node_id, dpid, {now} - seen_at AS age
		FROM cluster_switches WHERE seen_at >= {now} - ?`), live.Microseconds()); err != nil {
		return nil, unavailable(ctx, fmt.Errorf("read switch connections: %w", err))
	}
	for _, r := range conns {
		m.Connections = append(m.Connections, sdnlb.SwitchConnection{Node: r.Node, DPID: r.DPID,
			Age: max(0, time.Duration(r.Age)*time.Microsecond)})
	}
	return m, nil
}

// SetSwitchMasters writes the leader's changes to the assignment. It
// first locks the lease row while nodeID holds it with term, so a
// takeover waits for the commit (and the new leader reads what it
// wrote), and nothing is written once the lease has passed on.
func (db *DB) SetSwitchMasters(ctx context.Context, nodeID string, term uint64, masters []sdnlb.SwitchMaster, drop []string) error {
	err := inTx(ctx, db.masters, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, db.withNow(`UPDATE cluster_lease SET holder = holder
			WHERE id = 1 AND holder = ? AND generation = ? AND expires_at > {now}`), nodeID, int64(term))
		if err != nil {
			return fmt.Errorf("lock lease: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "node %q no longer holds the lease of term %d", nodeID, term)
		}
		for _, m := range masters {
			if _, err := tx.ExecContext(ctx, db.masters.Rebind(`INSERT INTO switch_masters (dpid, node_id, generation) VALUES (?, ?, ?)
				ON CONFLICT (dpid) DO UPDATE SET node_id = excluded.node_id, generation = excluded.generation`),
				m.DPID, m.Node, int64(m.Generation)); err != nil {
				return fmt.Errorf("write master: %w", err)
			}
		}
		for _, dpid := range drop {
			if _, err := tx.ExecContext(ctx, db.masters.Rebind(`DELETE FROM switch_masters WHERE dpid = ?`), dpid); err != nil {
				return fmt.Errorf("drop master: %w", err)
			}
		}
		if db.dialect.notifyMasters != "" {
			if _, err := tx.ExecContext(ctx, db.dialect.notifyMasters); err != nil {
				return fmt.Errorf("notify masters: %w", err)
			}
		}
		return nil
	})
	return unavailable(ctx, err)
}

// SwitchMastersChanged receives after a process changed the masters (on
// PostgreSQL, whose notification the change feed's connection hears).
func (db *DB) SwitchMastersChanged() <-chan struct{} { return db.mastersChanged }

// signalMasters says the masters may have changed; one pending signal
// covers the next.
func (db *DB) signalMasters() {
	select {
	case db.mastersChanged <- struct{}{}:
	default:
	}
}

// placeholders is n copies of one, comma-separated.
func placeholders(n int, one string) string {
	return strings.TrimSuffix(strings.Repeat(one+", ", n), ", ")
}

// inTx runs f in a transaction on conn (the masters' or the topology's
// connection), which it commits only when f succeeds.
func inTx(ctx context.Context, conn *sqlx.DB, f func(*sql.Tx) error) error {
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	return tx.Commit()
}
