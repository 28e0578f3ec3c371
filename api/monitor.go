package api

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/sdnlb/sdnlb"
)

// monitorFields are the fields of a monitor a write may send besides its
// type, none of them required: absent ones take their defaults on POST and
// PUT and stay as they are on PATCH. Pools are associated through
// /v1/pools/{id}/monitors.
type monitorFields struct {
	Name          *string        `json:"name" example:"shop-check" validate:"optional" maxLength:"255"`
	Delay         *sdnlb.Seconds `json:"delay" swaggertype:"number" default:"5" example:"5" validate:"optional" minimum:"0.05" maximum:"3600"` // seconds between probes of one member, 0.05-3600
	Timeout       *sdnlb.Seconds `json:"timeout" swaggertype:"number" default:"2" example:"2" validate:"optional"`                             // seconds one probe may take, above 0 and below delay
	MaxRetries    *int           `json:"max_retries" default:"3" example:"3" validate:"optional" minimum:"1" maximum:"10"`                     // consecutive failures that take a member DOWN, 1-10
	Rise          *int           `json:"rise" default:"2" example:"2" validate:"optional" minimum:"1" maximum:"10"`                            // consecutive successes that bring it UP, 1-10
	HTTPMethod    *string        `json:"http_method" default:"GET" example:"GET" validate:"optional"`                                          // HTTP and HTTPS
	URLPath       *string        `json:"url_path" default:"/" example:"/" validate:"optional"`                                                 // HTTP and HTTPS
	ExpectedCodes *string        `json:"expected_codes" default:"200" example:"200-299" validate:"optional"`                                   // HTTP and HTTPS: "200", "200-299", "200,202"
	TLSVerify     *bool          `json:"tls_verify" default:"false" example:"false" validate:"optional"`                                       // HTTPS: verify the member's certificate
	Port          *int           `json:"port" default:"0" example:"0" validate:"optional" minimum:"0" maximum:"65535"`                         // AGENT: the agent's TCP port on each member, 1-65535, required; 0 for the other types, which probe the member's own port
	AdminStateUp  *bool          `json:"admin_state_up" default:"true" example:"true" validate:"optional"`

	PoolIDs   readOnly `json:"pool_ids" swaggerignore:"true"`
	CreatedAt readOnly `json:"created_at" swaggerignore:"true"`
	UpdatedAt readOnly `json:"updated_at" swaggerignore:"true"`
}

// monitorCreate is the body of POST /v1/monitors.
type monitorCreate struct {
	ID   *string            `json:"id" example:"shop-check" validate:"optional" maxLength:"64"`                // a UUID when absent
	Type *sdnlb.MonitorType `json:"type" enums:"PING,TCP,HTTP,HTTPS,AGENT" example:"HTTP" validate:"required"` // required: no type is a safe guess, as url_path and expected_codes mean nothing to TCP or PING (the Floodlight route takes TCP). AGENT asks an agent on the member, on port, how loaded it is (HAProxy's agent check)
	monitorFields
}

// monitorReplace is the body of PUT /v1/monitors/{id}.
type monitorReplace struct {
	ID   readOnly           `json:"id" swaggerignore:"true"`
	Type *sdnlb.MonitorType `json:"type" enums:"PING,TCP,HTTP,HTTPS,AGENT" example:"HTTP" validate:"required"` // required: no type is a safe guess, as url_path and expected_codes mean nothing to TCP or PING (the Floodlight route takes TCP). AGENT asks an agent on the member, on port, how loaded it is (HAProxy's agent check)
	monitorFields
}

// monitorPatch is the body of PATCH /v1/monitors/{id}.
type monitorPatch struct {
	ID   readOnly           `json:"id" swaggerignore:"true"`
	Type *sdnlb.MonitorType `json:"type" enums:"PING,TCP,HTTP,HTTPS,AGENT" example:"HTTP" validate:"optional"`
	monitorFields
}

func (f *monitorFields) update(typ *sdnlb.MonitorType) sdnlb.MonitorUpdate {
	return sdnlb.MonitorUpdate{
		Name: f.Name, Type: typ, Delay: f.Delay, Timeout: f.Timeout, MaxRetries: f.MaxRetries,
		Rise: f.Rise, HTTPMethod: f.HTTPMethod, URLPath: f.URLPath, ExpectedCodes: f.ExpectedCodes,
		TLSVerify: f.TLSVerify, Port: f.Port, AdminStateUp: f.AdminStateUp,
	}
}

func (req *monitorCreate) created() (sdnlb.MonitorUpdate, *string) {
	return req.update(req.Type), req.ID
}

func (req *monitorPatch) patch() sdnlb.MonitorUpdate { return req.update(req.Type) }

func (req *monitorReplace) replacement() sdnlb.MonitorUpdate {
	m := sdnlb.NewMonitor()
	u := req.update(req.Type)
	u.Apply(m)
	return sdnlb.MonitorUpdate{
		Name: &m.Name, Type: &m.Type, Delay: &m.Delay, Timeout: &m.Timeout, MaxRetries: &m.MaxRetries,
		Rise: &m.Rise, HTTPMethod: &m.HTTPMethod, URLPath: &m.URLPath, ExpectedCodes: &m.ExpectedCodes,
		TLSVerify: &m.TLSVerify, Port: &m.Port, AdminStateUp: &m.AdminStateUp,
	}
}

func (s *Server) monitors() collection[sdnlb.Monitor, sdnlb.MonitorUpdate] {
	return collection[sdnlb.Monitor, sdnlb.MonitorUpdate]{updated: func(m *sdnlb.Monitor) time.Time { return m.UpdatedAt },
		path: "/v1/monitors", fresh: sdnlb.NewMonitor, apply: (*sdnlb.MonitorUpdate).Apply,
		id:   func(m *sdnlb.Monitor) *string { return &m.ID },
		find: s.MonitorService.FindMonitorByID, create: s.MonitorService.CreateMonitor, update: s.MonitorService.UpdateMonitor,
		required: requiredFields(reflect.TypeFor[monitorCreate]())}
}

type monitorList struct {
	Monitors []*sdnlb.Monitor `json:"monitors"`
	Next     string           `json:"next"`
}

// handleMonitorList lists monitors in id order.
//
//	@Summary	List monitors
//	@ID			monitorList
//	@Description	Lists monitors in id order.
//	@Tags		monitors
//	@Produce	json
//	@Param		pool_id	query		string	false	"only monitors of this pool"
//	@Param		limit	query		int		false	"page size"	default(100)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the next cursor of the previous page"
//	@Success	200		{object}	monitorList
//	@Failure	400		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/monitors [get]
func (s *Server) handleMonitorList(w http.ResponseWriter, r *http.Request) error {
	monitors, next, err := listPage(r, s.monitors(), func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Monitor, error) {
		return s.MonitorService.FindMonitors(ctx, sdnlb.MonitorFilter{PoolID: queryFilter(r, "pool_id"), Page: page})
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, monitorList{Monitors: monitors, Next: next})
}

// handleMonitorCreate creates a monitor.
//
//	@Summary	Create a monitor
//	@ID			monitorCreate
//	@Description	Creates a monitor.
//	@Tags		monitors
//	@Accept		json
//	@Produce	json
//	@Param		monitor	body		monitorCreate	true	"the monitor"
//	@Success	201		{object}	sdnlb.Monitor
//	@Header		201		{string}	Location	"/v1/monitors/{id}"
//	@Failure	400		{object}	errorResponse
//	@Failure	409		{object}	errorResponse	"the id is taken"
//	@Failure	413		{object}	errorResponse
//	@Failure	415		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/monitors [post]
func (s *Server) handleMonitorCreate(w http.ResponseWriter, r *http.Request) error {
	return writeCreated(w, r, s.monitors(), (*monitorCreate).created)
}

// handleMonitorGet returns one monitor.
//
//	@Summary	Get a monitor
//	@ID			monitorGet
//	@Description	Returns one monitor.
//	@Tags		monitors
//	@Produce	json
//	@Param		id	path		string	true	"monitor id"	extensions(x-example=shop-check)
//	@Success	200	{object}	sdnlb.Monitor
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	404	{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/monitors/{id} [get]
func (s *Server) handleMonitorGet(w http.ResponseWriter, r *http.Request) error {
	return writeFound(w, r, s.monitors())
}

// handleMonitorReplace sets every mutable field of a monitor.
//
//	@Summary	Replace a monitor
//	@ID			monitorReplace
//	@Description	Sets every mutable field of a monitor.
//	@Tags		monitors
//	@Accept		json
//	@Produce	json
//	@Param		id		path		string			true	"monitor id"	extensions(x-example=shop-check)
//	@Param		monitor	body		monitorReplace	true	"the monitor: absent fields take their defaults"
//	@Success	200		{object}	sdnlb.Monitor
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/monitors/{id} [put]
func (s *Server) handleMonitorReplace(w http.ResponseWriter, r *http.Request) error {
	return writeUpdated(w, r, s.monitors(), (*monitorReplace).replacement)
}

// handleMonitorPatch changes the given fields of a monitor (writePatched).
//
//	@Summary	Update some fields of a monitor
//	@ID			monitorPatch
//	@Description	Changes the given fields of a monitor, a JSON merge patch (RFC 7396): null puts a field back to its default, the value a PUT without it gives (type has none: null on it is refused).
//	@Tags		monitors
//	@Accept		json,application/merge-patch+json
//	@Produce	json
//	@Param		id		path		string			true	"monitor id"	extensions(x-example=shop-check)
//	@Param		monitor	body		monitorPatch	true	"the fields to change"
//	@Success	200		{object}	sdnlb.Monitor
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/monitors/{id} [patch]
func (s *Server) handleMonitorPatch(w http.ResponseWriter, r *http.Request) error {
	return writePatched(w, r, s.monitors(), (*monitorPatch).patch)
}

// handleMonitorDelete deletes a monitor. Without cascade it refuses while
// pools use it; with cascade it is dissociated from them first.
//
//	@Summary	Delete a monitor
//	@ID			monitorDelete
//	@Description	Deletes a monitor. Without cascade it refuses while pools use it; with cascade it is dissociated from them first.
//	@Tags		monitors
//	@Param		id		path	string	true	"monitor id"	extensions(x-example=shop-check)
//	@Param		cascade	query	bool	false	"dissociate it from its pools"
//	@Success	204
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Failure	404	{object}	errorResponse
//	@Failure	400	{object}	errorResponse	"cascade is not true or false"
//	@Failure	409	{object}	errorResponse	"pools use the monitor; the message names ?cascade=true"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/monitors/{id} [delete]
func (s *Server) handleMonitorDelete(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, deleteWithCascade(r, "id", s.MonitorService.DeleteMonitor))
}
