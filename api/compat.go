package api

import (
	"net/http"

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
	// is required on every method.
	r.Group(func(r chi.Router) {
		r.Use(s.requireToken)
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPost} {
			r.Method(method, "/health_monitors/all/enable", s.handle(s.handleCompatMonitorsEnable))
			r.Method(method, "/health_monitors/all/disable", s.handle(s.handleCompatMonitorsDisable))
			r.Method(method, "/health_monitors/monitors/{n}", s.handle(s.handleCompatMonitorsPeriod))
		}
	})
	r.Delete("/clear", s.handle(s.handleCompatClear))
}

// decodeFlatFor decodes the body of an update and refuses a body id that
// names another object than the path.
func decodeFlatFor(w http.ResponseWriter, r *http.Request, allowed []string, pathID string) (flatRequest, error) {
	req, err := decodeFlat(w, r, allowed)
	if err != nil {
		return nil, err
	}
	if id, ok := req["id"]; ok && id != pathID {
		return nil, sdnlb.FieldErrorf(sdnlb.EINVALID, "id", "the body's id %q differs from the path's %q", id, pathID)
	}
	return req, nil
}

// writeCompatOne writes the one object as Floodlight's 1-element array.
func writeCompatOne(w http.ResponseWriter, o orderedObject) error {
	return writeJSON(w, http.StatusOK, []orderedObject{o})
}
