package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// The steps the handlers of VIPs, pools, members and monitors share, native
// and Floodlight. The services name their methods per type (FindVIPByID,
// FindPoolByID), so handlers pass them in as method values.

// validated is a pointer to a domain object that checks itself.
type validated[T any] interface {
	*T
	Validate() error
}

// applier is a pointer to a partial update of a T.
type applier[T, U any] interface {
	*U
	Apply(*T)
}

// nativeRequest is the body of a native POST, PUT or PATCH.
type nativeRequest interface {
	rejectReadOnly(update bool) error
}

// decodeRequest decodes a native body and refuses the read-only fields it
// sets; on update the id is read-only too.
func decodeRequest(w http.ResponseWriter, r *http.Request, req nativeRequest, update bool) error {
	if err := decodeJSON(w, r, req); err != nil {
		return err
	}
	return req.rejectReadOnly(update)
}

// listPage reads ?limit= and ?after= and returns that page of find's
// results in id order, and the cursor of the next page ("" on the last). It
// fetches one more than the page holds to know whether another follows. The
// page is never nil, so that it encodes as [].
func listPage[T any](r *http.Request, find func(context.Context, sdnlb.Page) ([]*T, error), id func(*T) string) ([]*T, string, error) {
	page, err := pageFromQuery(r)
	if err != nil {
		return nil, "", err
	}
	items, err := find(r.Context(), sdnlb.Page{Limit: page.Limit + 1, After: page.After})
	if err != nil {
		return nil, "", err
	}
	if len(items) > page.Limit {
		items = items[:page.Limit]
		return items, id(items[page.Limit-1]), nil
	}
	if items == nil {
		items = []*T{}
	}
	return items, "", nil
}

// createValidated validates obj before the store sees it, so that a bad
// request never reaches a write.
func createValidated[P interface{ Validate() error }](ctx context.Context, obj P, create func(context.Context, P) error) error {
	if err := obj.Validate(); err != nil {
		return err
	}
	return create(ctx, obj)
}

// createdJSON answers 201 with the new object and where it lives.
func createdJSON(w http.ResponseWriter, collection, id string, obj any) error {
	w.Header().Set("Location", collection+"/"+url.PathEscape(id))
	return writeJSON(w, http.StatusCreated, obj)
}

// updateValidated applies upd to a copy of the stored object and validates
// the result before the store sees the update, so that a bad request never
// reaches a write.
func updateValidated[T, U any, PT validated[T], PU applier[T, U]](
	ctx context.Context, id string, upd U,
	find func(context.Context, string) (*T, error),
	update func(context.Context, string, U) (*T, error),
) (*T, error) {
	cur, err := find(ctx, id)
	if err != nil {
		return nil, err
	}
	next := *cur
	PU(&upd).Apply(&next)
	if err := PT(&next).Validate(); err != nil {
		return nil, err
	}
	return update(ctx, id, upd)
}

// deleteWithCascade deletes the object the path parameter names, honouring
// ?cascade=.
func deleteWithCascade(r *http.Request, param string, del func(ctx context.Context, id string, cascade bool) error) error {
	cascade, err := cascadeFromQuery(r)
	if err != nil {
		return err
	}
	return del(r.Context(), chi.URLParam(r, param), cascade)
}

// noContent answers 204 once err is nil.
func noContent(w http.ResponseWriter, err error) error {
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// compatArray renders objects as Floodlight's array; never null.
func compatArray[T any](items []*T, render func(*T) orderedObject) []orderedObject {
	out := make([]orderedObject, 0, len(items))
	for _, item := range items {
		out = append(out, render(item))
	}
	return out
}
