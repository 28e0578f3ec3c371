package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
	// required are the fields a create must give: they have no default
	// for a PATCH's null to put back.
	required []string
	// derived are the fields whose default follows the object's other
	// fields (a pool's dispatch follows its method), each with how an
	// update puts that default back for a PATCH's null; every other
	// field's default is a new object's.
	derived map[string]func(*U)
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
	return c.writeUpdate(w, r, toUpdate(req))
}

// writeUpdate applies upd to the object the path's id names and answers
// with what the service made of it.
func (c collection[T, U]) writeUpdate(w http.ResponseWriter, r *http.Request, upd U) error {
	obj, err := c.update(r.Context(), chi.URLParam(r, "id"), upd)
	if err != nil {
		return err
	}
	return c.write(w, http.StatusOK, obj)
}

// writePatched answers a PATCH, whose body is a JSON merge patch (RFC
// 7396): as writeUpdated, but a field set to null is put back to its
// default, the value a PUT without it gives: a new object's, or for a
// field whose default follows the others' the one c.derived puts back. A
// field a create must give has no default, and null on it is refused.
func writePatched[T, U, R any](w http.ResponseWriter, r *http.Request, c collection[T, U], toUpdate func(*R) U) error {
	body, err := readJSON(w, r)
	if err != nil {
		return err
	}
	req := new(R)
	if err := decodeStrict(body, req); err != nil {
		return err
	}
	nulled, err := c.resetNulls(body, req)
	if err != nil {
		return err
	}
	if err := checkFields(req); err != nil {
		return err
	}
	upd := toUpdate(req)
	for _, field := range nulled {
		c.derived[field](&upd)
	}
	return c.writeUpdate(w, r, upd)
}

// resetNulls sets each field of req that body sets to null to the value a
// new object has, and returns the fields whose default follows the
// others' (c.derived), which the update puts back. body has been
// decoded into req: it is one JSON object without a key twice.
func (c collection[T, U]) resetNulls(body []byte, req any) (derived []string, err error) {
	var given map[string]json.RawMessage
	if err := json.Unmarshal(body, &given); err != nil {
		return nil, err
	}
	var fresh map[string]json.RawMessage
	if b, err := json.Marshal(c.fresh()); err != nil {
		return nil, err
	} else if err := json.Unmarshal(b, &fresh); err != nil {
		return nil, err
	}
	reset := map[string]json.RawMessage{}
	for _, key := range slices.Sorted(maps.Keys(given)) {
		if !isJSONNull(given[key]) {
			continue
		}
		// Keys match fields without regard to case, as encoding/json
		// matches them.
		i := slices.IndexFunc(c.required, func(name string) bool { return strings.EqualFold(name, key) })
		if i >= 0 {
			return nil, sdnlb.FieldErrorf(sdnlb.EINVALID, c.required[i], "%s cannot be null: it has no default to reset to", c.required[i])
		}
		for name, value := range fresh {
			switch {
			case !strings.EqualFold(name, key):
			case c.derived[name] != nil:
				derived = append(derived, name)
			default:
				reset[key] = value
			}
		}
	}
	b, err := json.Marshal(reset)
	if err != nil {
		return nil, err
	}
	return derived, json.Unmarshal(b, req)
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
