package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// compatMonitorUpdate reads the monitor keys Floodlight knows. network_id,
// address, protocol, port and status are accepted and ignored: sdnlb probes
// each member at its own address and only health sets a status. pool_id is
// ignored as Floodlight ignores it on create; associate through
// /pools/{pool}/health_monitors/.
func compatMonitorUpdate(rd *flatReader) sdnlb.MonitorUpdate {
	return sdnlb.MonitorUpdate{Name: rd.str("name"), Type: rd.monitorType("type"), Delay: rd.seconds("delay"), Timeout: rd.seconds("timeout"),
		MaxRetries: rd.int("attempts_before_deactivation"), AdminStateUp: rd.adminState("admin_state")}
}

func (s *Server) compatMonitors() compatKind[sdnlb.Monitor, sdnlb.MonitorUpdate] {
	return compatKind[sdnlb.Monitor, sdnlb.MonitorUpdate]{native: s.monitors(), param: "monitor", keys: compatMonitorKeys, parse: compatMonitorUpdate,
		all: func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Monitor, error) {
			return s.MonitorService.FindMonitors(ctx, sdnlb.MonitorFilter{Page: page})
		},
		render:   func(_ context.Context, m *sdnlb.Monitor) (orderedObject, error) { return compatMonitor(m), nil },
		validate: (*sdnlb.Monitor).Validate, replace: replaceMonitor}
}

// replaceMonitor makes a monitor the one m describes; its pools, and its
// settings Floodlight has no key for (rise, the HTTP check), stay. An
// agent's port goes: Floodlight's types probe the member's own port.
func replaceMonitor(m *sdnlb.Monitor, _ sdnlb.MonitorUpdate) sdnlb.MonitorUpdate {
	return sdnlb.MonitorUpdate{Name: &m.Name, Type: &m.Type, Delay: &m.Delay, Timeout: &m.Timeout, MaxRetries: &m.MaxRetries,
		Port: &m.Port, AdminStateUp: &m.AdminStateUp}
}

// compatMonitorError renames the native max_retries to Floodlight's key.
func compatMonitorError(err error) error {
	if sdnlb.ErrorField(err) == "max_retries" {
		return sdnlb.FieldErrorf(sdnlb.ErrorCode(err), "attempts_before_deactivation", "%s", sdnlb.ErrorMessage(err))
	}
	return err
}

// handleCompatMonitorList lists every monitor.
//
//	@Summary	List monitors (Floodlight)
//	@ID			compatMonitorList
//	@Description	Lists every monitor.
//	@Tags		floodlight
//	@Produce	json
//	@Param		limit	query		int		false	"page size"	default(1000)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the id after which the page starts"
//	@Success	200	{array}	object	"{id, address, name, type, poolId}, all strings"
//	@Header		200		{string}	Link	"<...?limit=&after=>; rel=\"next\" when more follow"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Failure	400	{object}	errorResponse	"limit is not 1-1000"
//	@Security	Bearer
//	@Router		/quantum/v1.0/health_monitors/ [get]
func (s *Server) handleCompatMonitorList(w http.ResponseWriter, r *http.Request) error {
	return compatList(w, r, s.compatMonitors())
}

// handleCompatMonitorCreate creates a monitor, or replaces the monitor its
// id names.
//
//	@Summary	Create or replace a monitor (Floodlight)
//	@ID			compatMonitorCreate
//	@Description	Creates a monitor, or replaces the monitor its id names; its pools stay.
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		monitor	body		object	true	"id, name, type (default TCP), delay, timeout, attempts_before_deactivation, network_id, pool_id, address, protocol, port, admin_state, status"
//	@Success	200		{object}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	409		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/health_monitors/ [post]
func (s *Server) handleCompatMonitorCreate(w http.ResponseWriter, r *http.Request) error {
	return compatMonitorError(compatCreate(w, r, s.compatMonitors()))
}

// handleCompatMonitorGet returns one monitor as a 1-element array.
//
//	@Summary	Get a monitor (Floodlight)
//	@ID			compatMonitorGet
//	@Description	Returns one monitor as a 1-element array.
//	@Tags		floodlight
//	@Produce	json
//	@Param		monitor	path	string	true	"monitor id"
//	@Success	200		{array}	object
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/health_monitors/{monitor}/ [get]
func (s *Server) handleCompatMonitorGet(w http.ResponseWriter, r *http.Request) error {
	return compatGet(w, r, s.compatMonitors())
}

// handleCompatMonitorUpdate changes the given keys of a monitor.
//
//	@Summary	Update a monitor (Floodlight)
//	@ID			compatMonitorUpdate
//	@Description	Changes the given keys of a monitor.
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		monitor	path		string	true	"monitor id"
//	@Param		body	body		object	true	"the keys to change"
//	@Success	200		{object}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/health_monitors/{monitor}/ [put]
func (s *Server) handleCompatMonitorUpdate(w http.ResponseWriter, r *http.Request) error {
	return compatMonitorError(compatUpdate(w, r, s.compatMonitors()))
}

// handleCompatMonitorDelete deletes a monitor, dissociating it from the
// pools that use it.
//
//	@Summary	Delete a monitor (Floodlight)
//	@ID			compatMonitorDelete
//	@Description	Deletes a monitor, dissociating it from the pools that use it, as Floodlight does; nothing else is deleted.
//	@Tags		floodlight
//	@Produce	json
//	@Param		monitor	path		string	true	"monitor id"
//	@Success	200		{object}	statusResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/health_monitors/{monitor}/ [delete]
func (s *Server) handleCompatMonitorDelete(w http.ResponseWriter, r *http.Request) error {
	// As in Floodlight, a monitor goes whatever pools use it: they are
	// dissociated, and nothing else is deleted.
	return compatDelete(w, r, "monitor", func(ctx context.Context, id string, _ bool) error {
		return s.MonitorService.DeleteMonitor(ctx, id, true)
	})
}

// handleCompatMonitorsEnable turns every monitor on.
//
//	@Summary	Enable every monitor (Floodlight)
//	@ID			compatMonitorsEnable
//	@Description	Turns every monitor on.
//	@Tags		floodlight
//	@Produce	json
//	@Success	200	{object}	object	"{\"health monitors\":\"enabled\"}"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/health_monitors/all/enable/ [post]
func (s *Server) handleCompatMonitorsEnable(w http.ResponseWriter, r *http.Request) error {
	return s.setAllMonitorsAdmin(w, r, true)
}

// handleCompatMonitorsDisable turns every monitor off; their members then
// count as unmonitored.
//
//	@Summary	Disable every monitor (Floodlight)
//	@ID			compatMonitorsDisable
//	@Description	Turns every monitor off; their members then count as unmonitored.
//	@Tags		floodlight
//	@Produce	json
//	@Success	200	{object}	object	"{\"health monitors\":\"disabled\"}"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/health_monitors/all/disable/ [post]
func (s *Server) handleCompatMonitorsDisable(w http.ResponseWriter, r *http.Request) error {
	return s.setAllMonitorsAdmin(w, r, false)
}

func (s *Server) setAllMonitorsAdmin(w http.ResponseWriter, r *http.Request, up bool) error {
	if _, err := s.MonitorService.UpdateAllMonitors(r.Context(), sdnlb.MonitorUpdate{AdminStateUp: &up}); err != nil {
		return err
	}
	state := "disabled"
	if up {
		state = "enabled"
	}
	return writeRaw(w, `{"health monitors":"`+state+`"}`)
}

// handleCompatMonitorsPeriod sets every monitor's delay to n seconds, or
// reads it when n is "period".
//
//	@Summary	Set or read the monitors' period (Floodlight)
//	@ID			compatMonitorsPeriod
//	@Description	Sets every monitor's delay to n seconds, or reads it when n is 'period'.
//	@Tags		floodlight
//	@Produce	json
//	@Param		n	path		string	true	"seconds, or \"period\" to read"
//	@Success	200	{object}	statusResponse
//	@Failure	400	{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/health_monitors/monitors/{n}/ [post]
func (s *Server) handleCompatMonitorsPeriod(w http.ResponseWriter, r *http.Request) error {
	n := chi.URLParam(r, "n")
	if n == "period" {
		return s.writeMonitorsPeriod(w, r)
	}
	period, ok := parseDecimal(n)
	if !ok || period <= 0 {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "period", "the period must be a positive number of seconds or \"period\", not %q", n)
	}
	delay := sdnlb.Seconds(period)
	if _, err := s.MonitorService.UpdateAllMonitors(r.Context(), sdnlb.MonitorUpdate{Delay: &delay}); err != nil {
		return err
	}
	return writeRaw(w, fmt.Sprintf(`{"status" : "Monitors period changed to %s seconds "}`, n))
}

// writeMonitorsPeriod reports the monitors' delay: sdnlb has one per
// monitor, so a range when they differ and a new monitor's when none exist.
func (s *Server) writeMonitorsPeriod(w http.ResponseWriter, r *http.Request) error {
	monitors, err := s.MonitorService.FindMonitors(r.Context(), sdnlb.MonitorFilter{})
	if err != nil {
		return err
	}
	lo, hi := sdnlb.NewMonitor().Delay, sdnlb.NewMonitor().Delay
	for i, m := range monitors {
		if i == 0 || m.Delay < lo {
			lo = m.Delay
		}
		if i == 0 || m.Delay > hi {
			hi = m.Delay
		}
	}
	period := strconv.FormatFloat(float64(lo), 'f', -1, 64)
	if hi != lo {
		period += "-" + strconv.FormatFloat(float64(hi), 'f', -1, 64)
	}
	return writeRaw(w, fmt.Sprintf(`{"status" : "Monitors' period is %s seconds "}`, period))
}
