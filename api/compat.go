package api

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/sdnlb/sdnlb"
)

// The Floodlight LoadBalancer REST API (/quantum/v1.0), served from the same
// services as /v1. docs/floodlight-compat.md lists where it deliberately
// differs from Floodlight.

// Floodlight's request keys per object.
var (
	compatVIPKeys     = []string{"id", "tenant_id", "name", "network_id", "protocol", "address", "port", "pool_id"}
	compatPoolKeys    = []string{"id", "tenant_id", "name", "network_id", "lb_method", "protocol", "vip_id"}
	compatMemberKeys  = []string{"id", "address", "port", "connection_limit", "admin_state", "status", "pool_id", "weight"}
	compatMonitorKeys = []string{"id", "name", "type", "delay", "timeout", "attempts_before_deactivation", "network_id", "pool_id", "address", "protocol", "port", "admin_state", "status"}
)

// Bodies Floodlight writes by hand; clients may compare them verbatim.
const (
	compatDeleted = `{"status" : "200 OK!"}`
	compatCleared = `{"status" : "All Vips, Pools, Members and Monitors have been deleted "}`
	compatOK      = `0`
	compatStatus0 = `{"status" : "0"}`
)

// compatPrefix is where the Floodlight-compatible routes live.
const compatPrefix = "/quantum/v1.0"

func (s *Server) compatRoutes(r chi.Router) {
	// Floodlight's routes end in "/" since 2018 and did not before; both work.
	r.Use(middleware.StripSlashes)

	r.Get("/vips", s.handle(s.handleCompatVIPList))
	r.Post("/vips", s.handle(s.handleCompatVIPCreate))
	r.Put("/vips", s.handle(s.handleCompatVIPCreate))
	r.Get("/vips/{vip}", s.handle(s.handleCompatVIPGet))
	r.Put("/vips/{vip}", s.handle(s.handleCompatVIPUpdate))
	r.Post("/vips/{vip}", s.handle(s.handleCompatVIPUpdate))
	r.Delete("/vips/{vip}", s.handle(s.handleCompatVIPDelete))

	r.Get("/pools", s.handle(s.handleCompatPoolList))
	r.Post("/pools", s.handle(s.handleCompatPoolCreate))
	r.Put("/pools", s.handle(s.handleCompatPoolCreate))
	r.Get("/pools/{pool}", s.handle(s.handleCompatPoolGet))
	r.Put("/pools/{pool}", s.handle(s.handleCompatPoolUpdate))
	r.Post("/pools/{pool}", s.handle(s.handleCompatPoolUpdate))
	r.Delete("/pools/{pool}", s.handle(s.handleCompatPoolDelete))
	r.Get("/pools/{pool}/members", s.handle(s.handleCompatPoolMembers))
	r.Put("/pools/{pool}/members/{member}", s.handle(s.handleCompatMemberPriority))
	r.Post("/pools/{pool}/members/{member}", s.handle(s.handleCompatMemberPriority))
	r.Get("/pools/{pool}/stats", s.handle(s.handleCompatPoolStats))
	r.Get("/pools/{pool}/health_monitors", s.handle(s.handleCompatPoolMonitors))
	r.Put("/pools/{pool}/health_monitors", s.handle(s.handleCompatAssociate))
	r.Post("/pools/{pool}/health_monitors", s.handle(s.handleCompatAssociate))
	r.Delete("/pools/{pool}/health_monitors/{monitor}", s.handle(s.handleCompatDissociate))

	r.Get("/members", s.handle(s.handleCompatMemberList))
	r.Post("/members", s.handle(s.handleCompatMemberCreate))
	r.Put("/members", s.handle(s.handleCompatMemberCreate))
	r.Get("/members/{member}", s.handle(s.handleCompatMemberGet))
	r.Put("/members/{member}", s.handle(s.handleCompatMemberUpdate))
	r.Post("/members/{member}", s.handle(s.handleCompatMemberUpdate))
	r.Delete("/members/{member}", s.handle(s.handleCompatMemberDelete))
	r.Put("/members/{member}/{weight}", s.handle(s.handleCompatMemberWeight))
	r.Post("/members/{member}/{weight}", s.handle(s.handleCompatMemberWeight))

	r.Get("/health_monitors", s.handle(s.handleCompatMonitorList))
	r.Post("/health_monitors", s.handle(s.handleCompatMonitorCreate))
	r.Put("/health_monitors", s.handle(s.handleCompatMonitorCreate))
	r.Get("/health_monitors/{monitor}", s.handle(s.handleCompatMonitorGet))
	r.Put("/health_monitors/{monitor}", s.handle(s.handleCompatMonitorUpdate))
	r.Post("/health_monitors/{monitor}", s.handle(s.handleCompatMonitorUpdate))
	r.Delete("/health_monitors/{monitor}", s.handle(s.handleCompatMonitorDelete))

	// Floodlight answers GET on these too, although they write: the token
	// is required on every method, and without one a GET must come from
	// this origin.
	r.Get("/health_monitors/monitors/period", s.handle(s.writeMonitorsPeriod))
	r.Group(func(r chi.Router) {
		r.Use(s.sameOriginGet)
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPost} {
			r.Method(method, "/health_monitors/all/enable", s.handle(s.handleCompatMonitorsEnable))
			r.Method(method, "/health_monitors/all/disable", s.handle(s.handleCompatMonitorsDisable))
			// Floodlight's load_balancer.py posts these, with no body.
			r.Method(method, "/health_monitors/enable", s.handle(s.handleCompatMonitorsEnable))
			r.Method(method, "/health_monitors/disable", s.handle(s.handleCompatMonitorsDisable))
			r.Method(method, "/health_monitors/monitors/{n}", s.handle(s.handleCompatMonitorsPeriod))
		}
	})
	r.Delete("/clear", s.handle(s.handleCompatClear))
}

// compatKind is one kind of object as the Floodlight routes serve it, so
// that the list, get, create and update handlers of every kind take one
// path: the native collection, how to read every object, the path parameter
// of an object's id, the keys a body may hold and how they read as an
// update, and how Floodlight shows an object.
type compatKind[T, U any] struct {
	native collection[T, U]
	all    func(context.Context, sdnlb.Page) ([]*T, error) // nil where the kind lists its own way
	param  string
	keys   []string
	parse  func(*flatReader) U
	render func(context.Context, *T) (orderedObject, error)
	// prepare, when set, fills in a new object what Floodlight clients
	// leave out and sdnlb needs.
	prepare func(ctx context.Context, upd U, obj *T) error
	// validate is the domain's Validate, which a replacement passes as a
	// create does.
	validate func(*T) error
	// repeats, when set, lists after the object's other keys the values
	// of a key it repeats (a pool's poolMembers), read as they are
	// written: they may run to hundreds of thousands.
	repeats func(context.Context, *T) (key string, values iter.Seq2[string, error])
	// replace is the update that makes an existing object the new one a
	// body describes (upd over the defaults, prepared): every key
	// Floodlight knows takes the new object's value; what only sdnlb has
	// (a pool's dispatch, a VIP's connection limit, its members and
	// monitors) stays.
	replace func(obj *T, upd U) U
}

// compatList answers with a page of the objects, as Floodlight's array,
// each written as it is read.
func compatList[T, U any](w http.ResponseWriter, r *http.Request, k compatKind[T, U]) error {
	objs, err := compatPage(w, r, k.native.id, k.all)
	if err != nil {
		return err
	}
	return streamJSON(w, func(out *jsonStream) error {
		return writeArray(out, all(objs), func(obj *T) error { return k.writeObject(r.Context(), out, obj) })
	})
}

// compatPage returns the page of the objects find selects that ?limit=
// (1-MaxPageLimit, MaxPageLimit by default) and ?after= ask for. Floodlight
// lists everything in one array; sdnlb lists at most MaxPageLimit objects,
// so that one request cannot make the API render the whole store, and
// when more follow says where in a Link header (rel="next").
func compatPage[T any](w http.ResponseWriter, r *http.Request, id func(*T) *string, find func(context.Context, sdnlb.Page) ([]*T, error)) ([]*T, error) {
	page, err := pageFromQuery(r)
	if err != nil {
		return nil, err
	}
	if r.URL.Query().Get("limit") == "" {
		page.Limit = sdnlb.MaxPageLimit
	}
	items, err := find(r.Context(), sdnlb.Page{Limit: page.Limit + 1, After: page.After})
	if err != nil {
		return nil, err
	}
	if len(items) > page.Limit {
		items = items[:page.Limit]
		q := url.Values{"limit": {strconv.Itoa(page.Limit)}, "after": {*id(items[page.Limit-1])}}
		next := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
		w.Header().Set("Link", "<"+next.String()+`>; rel="next"`)
	}
	return items, nil
}

// compatGet answers with the object the path names, as Floodlight's
// 1-element array.
func compatGet[T, U any](w http.ResponseWriter, r *http.Request, k compatKind[T, U]) error {
	obj, err := k.native.find(r.Context(), chi.URLParam(r, k.param))
	if err != nil {
		return err
	}
	return streamJSON(w, func(out *jsonStream) error {
		return writeArray(out, all([]*T{obj}), func(obj *T) error { return k.writeObject(r.Context(), out, obj) })
	})
}

// compatCreate creates the object a body describes, with the body's id or,
// without one, a new id. As in Floodlight, whose resources keep objects in
// a map by id, a body whose id names an object replaces it.
func compatCreate[T, U any](w http.ResponseWriter, r *http.Request, k compatKind[T, U]) error {
	req, err := decodeFlat(w, r, k.keys)
	if err != nil {
		return err
	}
	obj, err := compatPut(r.Context(), k, req)
	if err != nil {
		return err
	}
	return k.write(w, r, obj)
}

// compatPutAttempts bounds how often compatPut goes between create and
// replace while other writes create and delete the same id.
const compatPutAttempts = 3

// compatPut creates the object a Floodlight request describes or, when
// its id is taken, replaces that object with it in one update, which
// checks what a create checks. A replacement that finds the object gone
// (deleted meanwhile) creates it after all.
func compatPut[T, U any](ctx context.Context, k compatKind[T, U], req flatRequest) (*T, error) {
	upd, err := k.read(req)
	if err != nil {
		return nil, err
	}
	id := req.str("id")
	for range compatPutAttempts {
		obj, err := compatFresh(ctx, k, upd, id)
		if err != nil {
			return nil, err
		}
		err = k.native.create(ctx, obj)
		if id == nil || sdnlb.ErrorCode(err) != sdnlb.ECONFLICT || sdnlb.ErrorField(err) != "id" {
			return obj, err
		}
		if err := k.validate(obj); err != nil {
			return nil, err
		}
		replaced, err := k.native.update(ctx, *id, k.replace(obj, upd))
		if sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND || sdnlb.ErrorField(err) != "" {
			return replaced, err
		}
	}
	return nil, sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "%q was created and deleted by other writes meanwhile; try again", *id)
}

// compatNew creates the object a Floodlight request describes.
func compatNew[T, U any](ctx context.Context, k compatKind[T, U], req flatRequest) (*T, error) {
	upd, err := k.read(req)
	if err != nil {
		return nil, err
	}
	obj, err := compatFresh(ctx, k, upd, req.str("id"))
	if err != nil {
		return nil, err
	}
	return obj, k.native.create(ctx, obj)
}

// compatFresh is the new object upd and id describe, prepared.
func compatFresh[T, U any](ctx context.Context, k compatKind[T, U], upd U, id *string) (*T, error) {
	obj := k.native.newObject(upd, id)
	if k.prepare != nil {
		if err := k.prepare(ctx, upd, obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// compatUpdate changes the keys a body gives of the object the path names;
// a body id must be the path's.
func compatUpdate[T, U any](w http.ResponseWriter, r *http.Request, k compatKind[T, U]) error {
	id := chi.URLParam(r, k.param)
	req, err := decodeFlat(w, r, k.keys)
	if err != nil {
		return err
	}
	if bodyID, ok := req["id"]; ok && bodyID != id {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "id", "the body's id %q differs from the path's %q", bodyID, id)
	}
	upd, err := k.read(req)
	if err != nil {
		return err
	}
	obj, err := k.native.update(r.Context(), id, upd)
	if err != nil {
		return err
	}
	return k.write(w, r, obj)
}

// compatDelete deletes the object the path parameter names, honouring
// ?cascade=, and answers as Floodlight does.
func compatDelete(w http.ResponseWriter, r *http.Request, param string, del func(ctx context.Context, id string, cascade bool) error) error {
	if err := deleteWithCascade(r, param, del); err != nil {
		return err
	}
	return writeRaw(w, compatDeleted)
}

// compatArray renders objects as Floodlight's array; never null.
func compatArray[T any](items []*T, render func(*T) orderedObject) []orderedObject {
	out := make([]orderedObject, 0, len(items))
	for _, item := range items {
		out = append(out, render(item))
	}
	return out
}

func (k compatKind[T, U]) read(req flatRequest) (U, error) {
	rd := flatReader{req: req}
	upd := k.parse(&rd)
	return upd, rd.err
}

func (k compatKind[T, U]) write(w http.ResponseWriter, r *http.Request, obj *T) error {
	return streamJSON(w, func(out *jsonStream) error { return k.writeObject(r.Context(), out, obj) })
}

// writeObject writes obj as Floodlight shows it, its repeated key last.
func (k compatKind[T, U]) writeObject(ctx context.Context, out *jsonStream, obj *T) error {
	o, err := k.render(ctx, obj)
	if err != nil {
		return err
	}
	if k.repeats == nil {
		return out.value(o)
	}
	head, _ := o.MarshalJSON()
	out.write(head[:len(head)-1]) // open: the repeated pairs follow
	key, values := k.repeats(ctx, obj)
	var b []byte
	for v, err := range values {
		if err != nil {
			return err
		}
		if out.gone() {
			return nil
		}
		b = pair{key, &v}.appendJSON(append(b[:0], ','))
		out.write(b)
	}
	out.raw("}")
	return nil
}
