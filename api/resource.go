package api

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// The steps the handlers of VIPs, pools, members and monitors share, native
// and Floodlight. The services name their methods per type (FindVIPByID,
// FindPoolByID), so handlers pass them in as method values. Handlers do not
// validate what they decode: the services do, inside the transaction that
// writes, and their EINVALID errors name the field for the 400.

// decodeRequest decodes a native body and refuses one that sets a
// read-only field or lacks a required one (checkFields).
func decodeRequest(w http.ResponseWriter, r *http.Request, req any) error {
	if err := decodeJSON(w, r, req); err != nil {
		return err
	}
	return checkFields(req)
}

// listPage reads ?limit= and ?after= and returns that page of the objects
// of c that find selects, in id order, and the cursor of the next page (""
// on the last). It fetches one more than the page holds to know whether
// another follows. The page is never nil, so that it encodes as [].
func listPage[T, U any](r *http.Request, c collection[T, U], find func(context.Context, sdnlb.Page) ([]*T, error)) ([]*T, string, error) {
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
		return items, *c.id(items[page.Limit-1]), nil
	}
	return orEmpty(items), "", nil
}

// collection is one native collection: where it lives and the service
// methods its handlers call, so that the get, create and update handlers
// of every collection take one path.
type collection[T, U any] struct {
	path   string       // of the collection, as in "/v1/vips"
	fresh  func() *T    // a new object with the defaults, as sdnlb.NewVIP
	apply  func(*U, *T) // the update's Apply
	id     func(*T) *string
	find   func(context.Context, string) (*T, error)
	create func(context.Context, *T) error
	update func(context.Context, string, U) (*T, error)
	// show, when set, lays over an object what the store does not keep,
	// before the object is written out.
	show func(*T)
	// updated is when the object was last written: its ETag.
	updated func(*T) time.Time
}

// newObject returns the object a create describes: upd over the defaults
// of a new object, and the client's id when it gives one.
func (c collection[T, U]) newObject(upd U, id *string) *T {
	obj := c.fresh()
	c.apply(&upd, obj)
	if id != nil {
		*c.id(obj) = *id
	}
	return obj
}

func (c collection[T, U]) write(w http.ResponseWriter, status int, obj *T) error {
	if c.show != nil {
		c.show(obj)
	}
	w.Header().Set("ETag", sdnlb.ETag(c.updated(obj)))
	return writeJSON(w, status, obj)
}

// writeFound answers a GET of the object the path's id names.
func writeFound[T, U any](w http.ResponseWriter, r *http.Request, c collection[T, U]) error {
	obj, err := c.find(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	return c.write(w, http.StatusOK, obj)
}

// writeCreated answers a POST: it decodes the request, has the service
// create the object of the fields and id that created reads from it, and
// answers 201 with what the service made of it and where it lives.
func writeCreated[T, U, R any](w http.ResponseWriter, r *http.Request, c collection[T, U], created func(*R) (U, *string)) error {
	req := new(R)
	if err := decodeRequest(w, r, req); err != nil {
		return err
	}
	obj := c.newObject(created(req))
	if err := c.create(r.Context(), obj); err != nil {
		return err
	}
	w.Header().Set("Location", c.path+"/"+url.PathEscape(*c.id(obj)))
	return c.write(w, http.StatusCreated, obj)
}

// writeUpdated answers a PUT or PATCH: it decodes the request and has the
// service apply the update toUpdate makes of it to the object the path's
// id names.
func writeUpdated[T, U, R any](w http.ResponseWriter, r *http.Request, c collection[T, U], toUpdate func(*R) U) error {
	req := new(R)
	if err := decodeRequest(w, r, req); err != nil {
		return err
	}
	obj, err := c.update(r.Context(), chi.URLParam(r, "id"), toUpdate(req))
	if err != nil {
		return err
	}
	return c.write(w, http.StatusOK, obj)
}

// deleteWithCascade deletes the object the path parameter names, honouring
// ?cascade=. A delete refused for what depends on the object says how to
// take that along.
func deleteWithCascade(r *http.Request, param string, del func(ctx context.Context, id string, cascade bool) error) error {
	cascade, err := cascadeFromQuery(r)
	if err != nil {
		return err
	}
	err = del(r.Context(), chi.URLParam(r, param), cascade)
	if !cascade && sdnlb.ErrorCode(err) == sdnlb.ECONFLICT {
		return sdnlb.Errorf(sdnlb.ECONFLICT, "%s (?cascade=true)", sdnlb.ErrorMessage(err))
	}
	return err
}

// noContent answers 204 once err is nil.
func noContent(w http.ResponseWriter, err error) error {
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
