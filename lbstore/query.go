package lbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/sdnlb/sdnlb"
)

// getRow reads the one row of query into an R and converts it: ENOTFOUND,
// naming kind and id, when there is none.
func getRow[R, T any](ctx context.Context, tx *Tx, kind, id string, convert func(*R) (*T, error), query string, args ...any) (*T, error) {
	var row R
	if err := tx.GetContext(ctx, &row, query, args...); errors.Is(err, sql.ErrNoRows) {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "%s %q not found", kind, id)
	} else if err != nil {
		return nil, fmt.Errorf("find %s: %w", kind, err)
	}
	return convert(&row)
}

// selectRows reads the rows of query and converts each; what names them in
// errors. It scans one row at a time into one R rather than selecting a
// slice of rows: members run to 100k rows, and a full load should not hold
// them all twice, as rows and as objects.
func selectRows[R, T any](ctx context.Context, tx *Tx, what string, convert func(*R) (*T, error), query string, args ...any) ([]*T, error) {
	rows, err := tx.QueryxContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", what, err)
	}
	defer rows.Close()
	objs := []*T{}
	var row R
	for rows.Next() {
		if err := rows.StructScan(&row); err != nil {
			return nil, fmt.Errorf("find %s: %w", what, err)
		}
		obj, err := convert(&row)
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find %s: %w", what, err)
	}
	return objs, nil
}

// where collects the conditions of a list query.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// pageSQL finishes a list query: keyset pagination on idColumn, then
// LIMIT when the page has one.
func (w *where) pageSQL(idColumn string, page sdnlb.Page) string {
	if page.After != "" {
		w.add(idColumn+" > ?", page.After)
	}
	var b strings.Builder
	if len(w.conds) > 0 {
		b.WriteString(" WHERE ")
		b.WriteString(strings.Join(w.conds, " AND "))
	}
	b.WriteString(" ORDER BY " + idColumn)
	if page.Limit > 0 {
		b.WriteString(" LIMIT ?")
		w.args = append(w.args, page.Limit)
	}
	return b.String()
}

// newID returns the client's id, or a new UUID when there is none.
func newID(id string) string {
	if id != "" {
		return id
	}
	return uuid.NewString()
}

// maxNamedIDs bounds how many dependants an error message lists.
const maxNamedIDs = 10

// nameIDs lists ids for an error message: the first few and how many more.
func nameIDs(ids []string) string {
	if len(ids) <= maxNamedIDs {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxNamedIDs], ", "), len(ids)-maxNamedIDs)
}

// nullIfEmpty stores "" as NULL, for optional references.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
