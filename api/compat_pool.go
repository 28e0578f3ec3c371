package api

import (
	"context"
	"iter"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

func compatPoolUpdate(rd *flatReader) sdnlb.PoolUpdate {
	return sdnlb.PoolUpdate{Name: rd.str("name"), VIPID: rd.str("vip_id"), Protocol: rd.protocol("protocol"), LBMethod: rd.lbMethod("lb_method")}
}

func (s *Server) compatPools() compatKind[sdnlb.Pool, sdnlb.PoolUpdate] {
	return compatKind[sdnlb.Pool, sdnlb.PoolUpdate]{native: s.pools(), param: "pool", keys: compatPoolKeys, parse: compatPoolUpdate,
		all: func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Pool, error) {
			return s.PoolService.FindPools(ctx, sdnlb.PoolFilter{Page: page})
		},
		render:  func(_ context.Context, p *sdnlb.Pool) (orderedObject, error) { return compatPool(p), nil },
		repeats: s.compatPoolMembers,
		prepare: s.prepareCompatPool, validate: (*sdnlb.Pool).Validate, replace: replacePool}
}

// compatPoolMembers lists a pool's members' ids as its repeated
// poolMembers key, a page of members at a time.
func (s *Server) compatPoolMembers(ctx context.Context, p *sdnlb.Pool) (string, iter.Seq2[string, error]) {
	members := paged(ctx, memberID, func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Member, error) {
		return s.MemberService.FindMembers(ctx, sdnlb.MemberFilter{PoolID: &p.ID, Page: page})
	})
	return "poolMembers", func(yield func(string, error) bool) {
		for m, err := range members {
			if err != nil {
				yield("", err)
				return
			}
			if !yield(m.ID, nil) {
				return
			}
		}
	}
}

// prepareCompatPool records that a new pool without lb_method has the
// default method by no client's choice, and gives it its VIP's protocol.
func (s *Server) prepareCompatPool(ctx context.Context, upd sdnlb.PoolUpdate, p *sdnlb.Pool) error {
	p.LBMethodUnset = upd.LBMethod == nil
	return s.takeVIPProtocol(ctx, upd, p)
}

// replacePool makes a pool the one p describes: its VIP is the one the
// body names, else none; its members and monitors stay.
func replacePool(p *sdnlb.Pool, upd sdnlb.PoolUpdate) sdnlb.PoolUpdate {
	return sdnlb.PoolUpdate{Name: &p.Name, VIPID: &p.VIPID, Protocol: &p.Protocol, LBMethod: upd.LBMethod,
		UnsetLBMethod: upd.LBMethod == nil}
}

// takeVIPProtocol gives a new pool without a protocol its VIP's, since
// sdnlb requires the two to match and Floodlight did not.
func (s *Server) takeVIPProtocol(ctx context.Context, upd sdnlb.PoolUpdate, p *sdnlb.Pool) error {
	if upd.Protocol != nil || p.VIPID == "" {
		return nil
	}
	v, err := s.VIPService.FindVIPByID(ctx, p.VIPID)
	if err != nil {
		return withField(err, "vip_id")
	}
	p.Protocol = v.Protocol
	return nil
}

// handleCompatPoolList lists every pool.
//
//	@Summary	List pools (Floodlight)
//	@ID			compatPoolList
//	@Description	Lists every pool.
//	@Tags		floodlight
//	@Produce	json
//	@Param		limit	query		int		false	"page size"	default(1000)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the id after which the page starts"
//	@Success	200	{array}	object	"{id, name, vipId, lbMethod, poolMembers...}; poolMembers repeats once per member"
//	@Header		200		{string}	Link	"<...?limit=&after=>; rel=\"next\" when more follow"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Failure	400	{object}	errorResponse	"limit is not 1-1000"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/ [get]
func (s *Server) handleCompatPoolList(w http.ResponseWriter, r *http.Request) error {
	return compatList(w, r, s.compatPools())
}

// handleCompatPoolCreate creates a pool, or replaces the pool its id
// names. Without a protocol it takes its VIP's, since sdnlb requires the
// two to match and Floodlight did not.
//
//	@Summary	Create or replace a pool (Floodlight)
//	@ID			compatPoolCreate
//	@Description	Creates a pool, or replaces the pool its id names (its members and monitors stay). Without a protocol it takes its VIP's, since sdnlb requires the two to match and Floodlight did not; without lb_method it balances by ROUND_ROBIN and shows "Invalid Method".
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		pool	body		object	true	"id, tenant_id, name, network_id, lb_method, protocol, vip_id"
//	@Success	200		{object}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse	"vip_id names no VIP"
//	@Failure	409		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/ [post]
func (s *Server) handleCompatPoolCreate(w http.ResponseWriter, r *http.Request) error {
	return compatCreate(w, r, s.compatPools())
}

// withField names field in a not-found error that has no field yet.
func withField(err error, field string) error {
	if sdnlb.ErrorCode(err) == sdnlb.ENOTFOUND && sdnlb.ErrorField(err) == "" {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, field, "%s", sdnlb.ErrorMessage(err))
	}
	return err
}

// handleCompatPoolGet returns one pool as a 1-element array.
//
//	@Summary	Get a pool (Floodlight)
//	@ID			compatPoolGet
//	@Description	Returns one pool as a 1-element array.
//	@Tags		floodlight
//	@Produce	json
//	@Param		pool	path	string	true	"pool id"
//	@Success	200		{array}	object
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/ [get]
func (s *Server) handleCompatPoolGet(w http.ResponseWriter, r *http.Request) error {
	return compatGet(w, r, s.compatPools())
}

// handleCompatPoolUpdate changes the given keys of a pool; its members and
// monitors stay.
//
//	@Summary	Update a pool (Floodlight)
//	@ID			compatPoolUpdate
//	@Description	Changes the given keys of a pool; its members and monitors stay.
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		pool	path		string	true	"pool id"
//	@Param		body	body		object	true	"the keys to change"
//	@Success	200		{object}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/ [put]
func (s *Server) handleCompatPoolUpdate(w http.ResponseWriter, r *http.Request) error {
	return compatUpdate(w, r, s.compatPools())
}

// handleCompatPoolDelete deletes a pool without members.
//
//	@Summary	Delete a pool (Floodlight)
//	@ID			compatPoolDelete
//	@Description	Deletes a pool without members.
//	@Tags		floodlight
//	@Produce	json
//	@Param		pool	path		string	true	"pool id"
//	@Success	200		{object}	statusResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	409		{object}	errorResponse	"the pool has members"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/ [delete]
func (s *Server) handleCompatPoolDelete(w http.ResponseWriter, r *http.Request) error {
	// Floodlight leaves a deleted pool's members pointing at nothing,
	// unreachable; sdnlb deletes them with it.
	return compatDelete(w, r, "pool", func(ctx context.Context, id string, _ bool) error {
		return s.PoolService.DeletePool(ctx, id, true)
	})
}

// handleCompatPoolMembers lists the members of a pool.
//
//	@Summary	List a pool's members (Floodlight)
//	@ID			compatPoolMembers
//	@Description	Lists the members of a pool.
//	@Tags		floodlight
//	@Produce	json
//	@Param		pool	path	string	true	"pool id"
//	@Param		limit	query		int		false	"page size"	default(1000)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the id after which the page starts"
//	@Success	200		{array}	object
//	@Header		200		{string}	Link	"<...?limit=&after=>; rel=\"next\" when more follow"
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Failure	400	{object}	errorResponse	"limit is not 1-1000"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/members/ [get]
func (s *Server) handleCompatPoolMembers(w http.ResponseWriter, r *http.Request) error {
	p, err := s.PoolService.FindPoolByID(r.Context(), chi.URLParam(r, "pool"))
	if err != nil {
		return err
	}
	members, err := compatPage(w, r, memberID, func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Member, error) {
		return s.MemberService.FindMembers(ctx, sdnlb.MemberFilter{PoolID: &p.ID, Page: page})
	})
	if err != nil {
		return err
	}
	out := compatArray(members, func(m *sdnlb.Member) orderedObject { return compatMember(m, p.VIPID) })
	return writeJSON(w, http.StatusOK, out)
}

// handleCompatPoolStats returns a pool's traffic counters.
//
//	@Summary	Get a pool's counters (Floodlight)
//	@ID			compatPoolStats
//	@Description	Returns a pool's traffic counters.
//	@Tags		floodlight
//	@Produce	json
//	@Param		pool	path		string	true	"pool id"
//	@Success	200		{object}	object	"{Bytes In, Bytes Out, Active Flows}, all strings"
//	@Failure	404		{object}	errorResponse
//	@Failure	503		{object}	errorResponse	"no controller"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/stats/ [get]
func (s *Server) handleCompatPoolStats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.poolStats(r, "pool")
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, compatStats(st))
}

// handleCompatPoolMonitors lists the monitors of a pool.
//
//	@Summary	List a pool's monitors (Floodlight)
//	@ID			compatPoolMonitors
//	@Description	Lists the monitors of a pool.
//	@Tags		floodlight
//	@Produce	json
//	@Param		pool	path	string	true	"pool id"
//	@Success	200		{array}	object
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/health_monitors/ [get]
func (s *Server) handleCompatPoolMonitors(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "pool")
	if _, err := s.PoolService.FindPoolByID(r.Context(), id); err != nil {
		return err
	}
	return s.writeCompatPoolMonitors(w, r, id)
}

func (s *Server) writeCompatPoolMonitors(w http.ResponseWriter, r *http.Request, poolID string) error {
	monitors, err := s.MonitorService.FindMonitors(r.Context(), sdnlb.MonitorFilter{PoolID: &poolID})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, compatArray(monitors, compatMonitor))
}

// handleCompatAssociate associates the monitor the body's id names with the
// pool and lists the pool's monitors.
//
//	@Summary	Associate a monitor with a pool (Floodlight)
//	@ID			compatAssociate
//	@Description	Associates the monitor the body's id names with the pool and lists the pool's monitors.
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		pool	path	string	true	"pool id"
//	@Param		monitor	body	object	true	"{\"id\": monitor id}"
//	@Success	200		{array}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse	"no such pool or monitor"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/health_monitors/ [post]
func (s *Server) handleCompatAssociate(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeFlat(w, r, compatMonitorKeys)
	if err != nil {
		return err
	}
	monitorID, ok := req["id"]
	if !ok {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "id", "id (of the monitor to associate) is required")
	}
	poolID := chi.URLParam(r, "pool")
	// Floodlight's load_balancer.py creates the monitor here: a monitor
	// the body describes and that does not exist yet is created first,
	// once the pool is known to exist.
	if _, err := s.PoolService.FindPoolByID(r.Context(), poolID); err != nil {
		return err
	}
	if _, err := s.MonitorService.FindMonitorByID(r.Context(), monitorID); sdnlb.ErrorCode(err) == sdnlb.ENOTFOUND {
		if _, err := compatNew(r.Context(), s.compatMonitors(), req); err != nil {
			return compatMonitorError(err)
		}
	}
	if err := s.PoolService.AssociateMonitor(r.Context(), poolID, monitorID); err != nil {
		return err
	}
	return s.writeCompatPoolMonitors(w, r, poolID)
}

// handleCompatDissociate dissociates a monitor from a pool.
//
//	@Summary	Dissociate a monitor from a pool (Floodlight)
//	@ID			compatDissociate
//	@Description	Dissociates a monitor from a pool.
//	@Tags		floodlight
//	@Produce	json
//	@Param		pool	path	string	true	"pool id"
//	@Param		monitor	path	string	true	"monitor id"
//	@Success	200		{integer}	integer	"0"
//	@Failure	404		{object}	errorResponse	"not associated"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/health_monitors/{monitor}/ [delete]
func (s *Server) handleCompatDissociate(w http.ResponseWriter, r *http.Request) error {
	if err := s.PoolService.DissociateMonitor(r.Context(), chi.URLParam(r, "pool"), chi.URLParam(r, "monitor")); err != nil {
		return err
	}
	return writeRaw(w, compatOK)
}
