// Package storetest fills a store's database directly, for tests that
// need hundreds of thousands of objects: through the store's checks a
// member takes some 100 µs, through the API more.
package storetest

import (
	"context"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/sdnlb/sdnlb"
)

// Tx is a transaction on the store's database: one of lbstore's, which
// rebinds ? for PostgreSQL, or a sqlx one on a SQLite file.
type Tx interface {
	GetContext(ctx context.Context, dest any, query string, args ...any) error
	PreparexContext(ctx context.Context, query string) (*sqlx.Stmt, error)
}

// SeedMembers inserts n members into the pool with one prepared
// statement: the rows the store writes for a member of a pool without
// monitors, stamped with the pool's creation time. Member i has the id
// "<pool>-<i in 7 digits>", an address of its own, up to 15,625,000, and
// the next of the store's member numbers.
func SeedMembers(ctx context.Context, tx Tx, poolID string, n int) error {
	var now string
	if err := tx.GetContext(ctx, &now, `SELECT created_at FROM pools WHERE id = ?`, poolID); err != nil {
		return fmt.Errorf("seed members of pool %s: %w", poolID, err)
	}
	var last int
	if err := tx.GetContext(ctx, &last, `UPDATE object_numbers SET last = last + ? WHERE kind = 'member' RETURNING last`, n); err != nil {
		return fmt.Errorf("number members of pool %s: %w", poolID, err)
	}
	if last >= sdnlb.NumLimit {
		return fmt.Errorf("number members of pool %s: numbers exhausted", poolID)
	}
	stmt, err := tx.PreparexContext(ctx, `INSERT INTO members (id, pool_id, address, port, weight, admin_state_up,
		health_status, health_since, created_at, updated_at, num) VALUES (?, ?, ?, 80, 1, TRUE, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("seed members: %w", err)
	}
	defer stmt.Close()
	for i := range n {
		id := fmt.Sprintf("%s-%07d", poolID, i)
		address := fmt.Sprintf("10.%d.%d.%d", i/62500%250, i/250%250, i%250+1)
		if _, err := stmt.ExecContext(ctx, id, poolID, address, sdnlb.MemberNoMonitor, now, now, now, last-n+1+i); err != nil {
			return fmt.Errorf("seed member %s: %w", id, err)
		}
	}
	return nil
}
