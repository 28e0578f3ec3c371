package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

var errNoController = sdnlb.Errorf(sdnlb.EUNAVAILABLE, "the OpenFlow controller is not running")

type switchList struct {
	Switches []*sdnlb.Switch `json:"switches"`
}

type flowList struct {
	Flows []*sdnlb.Flow `json:"flows"`
}

// handleSwitchList lists the connected OpenFlow switches.
//
//	@Summary	List connected switches
//	@ID			switchList
//	@Description	Lists the connected OpenFlow switches.
//	@Tags		switches
//	@Produce	json
//	@Success	200	{object}	switchList
//	@Failure	503	{object}	errorResponse	"no controller"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/switches [get]
func (s *Server) handleSwitchList(w http.ResponseWriter, r *http.Request) error {
	if s.SwitchService == nil {
		return errNoController
	}
	switches, err := s.SwitchService.Switches(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, switchList{Switches: orEmpty(switches)})
}

// handleSwitchFlows lists the flows sdnlb installed on one switch.
//
//	@Summary	List the flows sdnlb installed on a switch
//	@ID			switchFlows
//	@Description	Lists the flows sdnlb installed on one switch.
//	@Tags		switches
//	@Produce	json
//	@Param		dpid	path		string	true	"datapath id: 16 hex digits in colon-separated pairs"	extensions(x-example=00:00:00:00:00:00:00:01)
//	@Success	200		{object}	flowList
//	@Failure	404		{object}	errorResponse	"no such switch connected"
//	@Failure	503		{object}	errorResponse	"no controller"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/switches/{dpid}/flows [get]
func (s *Server) handleSwitchFlows(w http.ResponseWriter, r *http.Request) error {
	if s.SwitchService == nil {
		return errNoController
	}
	flows, err := s.SwitchService.SwitchFlows(r.Context(), chi.URLParam(r, "dpid"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, flowList{Flows: orEmpty(flows)})
}

// handlePoolStats returns the live traffic counters of a pool; with
// ?watch=true it streams them as Server-Sent Events (see watchStats).
//
//	@Summary	Get a pool's traffic counters, or watch them (Server-Sent Events)
//	@ID			poolStats
//	@Description	Returns the live traffic counters of a pool; with ?watch=true it streams them as Server-Sent Events (see watchStats).
//	@Tags		pools
//	@Produce	json,text/event-stream
//	@Param		id		path		string	true	"pool id"	extensions(x-example=shop-pool)
//	@Param		watch	query		bool	false	"stream: the stats at once, then on every health change and at most once a second while counters move; event ids are unix milliseconds"
//	@Success	200		{object}	sdnlb.PoolStats
//	@Failure	400		{object}	errorResponse	"watch is not a boolean"
//	@Failure	404		{object}	errorResponse
//	@Failure	503		{object}	errorResponse	"no controller, or too many streams open"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/pools/{id}/stats [get]
func (s *Server) handlePoolStats(w http.ResponseWriter, r *http.Request) error {
	watching, err := queryBool(r, "watch")
	if err != nil {
		return err
	}
	if s.StatsService != nil && watching {
		return s.watchStats(w, r, s.poolStatsReader(r))
	}
	stats, err := s.poolStats(r, "id")
	if err != nil {
		return err
	}
	return streamJSON(w, func(out *jsonStream) error { return writePoolStats(out, stats) })
}

// poolStats reads the live counters of the pool the path parameter names.
func (s *Server) poolStats(r *http.Request, param string) (*sdnlb.PoolStats, error) {
	if s.StatsService == nil {
		return nil, errNoController
	}
	return s.StatsService.PoolStats(r.Context(), chi.URLParam(r, param))
}

// orEmpty returns items, or an empty slice for nil, so that a list encodes
// as [] and not null.
func orEmpty[T any](items []T) []T {
	if items == nil {
		return []T{}
	}
	return items
}
