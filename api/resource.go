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
// FindPoolByID), so handlers pass them in as method values. Handlers do not
// validate what they decode: the services do, inside the transaction that
// writes, and their EINVALID errors name the field for the 400.

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

// createdJSON answers 201 with the new object and where it lives.
func createdJSON(w http.ResponseWriter, collection, id string, obj any) error {
	w.Header().Set("Location", collection+"/"+url.PathEscape(id))
	return writeJSON(w, http.StatusCreated, obj)
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
