package lbstore

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/sdnlb/sdnlb"
)

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
