package lbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
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

// queryRows reads the rows of query as they are ranged over, scanning one
// row at a time into one R: members run to hundreds of thousands of rows,
// and neither a full load nor an export should hold them twice, as rows
// and as objects. A failure ends the sequence with the error.
func queryRows[R, T any](ctx context.Context, tx *Tx, what string, convert func(*R) (*T, error), query string, args ...any) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		rows, err := tx.QueryxContext(ctx, query, args...)
		if err != nil {
			yield(nil, fmt.Errorf("find %s: %w", what, err))
			return
		}
		defer rows.Close()
		var row R
		for rows.Next() {
			if err := rows.StructScan(&row); err != nil {
				yield(nil, fmt.Errorf("find %s: %w", what, err))
				return
			}
			obj, err := convert(&row)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(obj, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("find %s: %w", what, err))
		}
	}
}

// collect gathers a sequence of objects; never nil.
func collect[T any](seq iter.Seq2[*T, error]) ([]*T, error) {
	objs := []*T{}
	for obj, err := range seq {
		if err != nil {
			return nil, err
		}
		objs = append(objs, obj)
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
