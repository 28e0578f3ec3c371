package api

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// poolRequest is the body of POST, PUT and PATCH /v1/pools. Absent fields
// take their defaults on POST and PUT and stay as they are on PATCH.
type poolRequest struct {
	ID           *string           `json:"id" example:"web-pool"`
	Name         *string           `json:"name" example:"web"`
	Description  *string           `json:"description"`
	VIPID        *string           `json:"vip_id" example:"web"`
	LBMethod     *sdnlb.LBMethod   `json:"lb_method" example:"ROUND_ROBIN" enums:"ROUND_ROBIN,WEIGHTED_ROUND_ROBIN,LEAST_CONNECTIONS,WEIGHTED_LEAST_CONNECTIONS,RANDOM,LEAST_BYTES,SOURCE_IP,CONSISTENT_HASH,ADAPTIVE"`
	Dispatch     *sdnlb.Dispatch   `json:"dispatch" enums:"SWITCH,CONTROLLER" example:"SWITCH"`    // SWITCH: the switch picks the member from a select group (ROUND_ROBIN, WEIGHTED_ROUND_ROBIN, RANDOM, CONSISTENT_HASH; the default for them); CONTROLLER: the controller picks per connection (the default for the other methods)
	Forwarding   *sdnlb.Forwarding `json:"forwarding" enums:"NAT,DSR" default:"NAT" example:"NAT"` // NAT: addresses and ports rewritten both ways; DSR: only the destination MAC, members reply directly and must use port 0 or the VIP's
	Protocol     *sdnlb.Protocol   `json:"protocol" enums:"TCP,UDP,ICMP" example:"TCP"`
	AdminStateUp *bool             `json:"admin_state_up" example:"true"`

	MonitorIDs readOnly `json:"monitor_ids" swaggerignore:"true"`
	CreatedAt  readOnly `json:"created_at" swaggerignore:"true"`
	UpdatedAt  readOnly `json:"updated_at" swaggerignore:"true"`
}

func (req *poolRequest) rejectReadOnly(update bool) error {
	return rejectReadOnly(update, req.ID, namedReadOnly{"monitor_ids", req.MonitorIDs},
		namedReadOnly{"created_at", req.CreatedAt}, namedReadOnly{"updated_at", req.UpdatedAt})
}

func (req *poolRequest) update() sdnlb.PoolUpdate {
	return sdnlb.PoolUpdate{
		Name: req.Name, Description: req.Description, VIPID: req.VIPID, LBMethod: req.LBMethod,
		Dispatch: req.Dispatch, Forwarding: req.Forwarding, Protocol: req.Protocol, AdminStateUp: req.AdminStateUp,
	}
}

func (req *poolRequest) created() (sdnlb.PoolUpdate, *string) { return req.update(), req.ID }

func (req *poolRequest) replacement() sdnlb.PoolUpdate {
	p := sdnlb.NewPool()
	u := req.update()
	u.Apply(p)
	return p.Replacement()
}

func (s *Server) pools() collection[sdnlb.Pool, sdnlb.PoolUpdate] {
	return collection[sdnlb.Pool, sdnlb.PoolUpdate]{updated: func(p *sdnlb.Pool) time.Time { return p.UpdatedAt },
		path: "/v1/pools", fresh: sdnlb.NewPool, apply: (*sdnlb.PoolUpdate).Apply,
		id:   func(p *sdnlb.Pool) *string { return &p.ID },
		find: s.PoolService.FindPoolByID, create: s.PoolService.CreatePool, update: s.PoolService.UpdatePool}
}

type poolList struct {
	Pools []*sdnlb.Pool `json:"pools"`
	Next  string        `json:"next"`
}

// handlePoolList lists pools in id order.
//
//	@Summary	List pools
//	@ID			poolList
//	@Description	Lists pools in id order.
//	@Tags		pools
//	@Produce	json
//	@Param		vip_id	query		string	false	"only the pool of this VIP"
//	@Param		limit	query		int		false	"page size (1-1000)"	default(100)
//	@Param		after	query		string	false	"the next cursor of the previous page"
//	@Success	200		{object}	poolList
//	@Failure	400		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/pools [get]
func (s *Server) handlePoolList(w http.ResponseWriter, r *http.Request) error {
	pools, next, err := listPage(r, s.pools(), func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Pool, error) {
		return s.PoolService.FindPools(ctx, sdnlb.PoolFilter{VIPID: queryFilter(r, "vip_id"), Page: page})
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, poolList{Pools: pools, Next: next})
}

// handlePoolCreate creates a pool.
//
//	@Summary	Create a pool
//	@ID			poolCreate
//	@Description	Creates a pool.
//	@Tags		pools
//	@Accept		json
//	@Produce	json
//	@Param		pool	body		poolRequest	true	"the pool; id is optional (a UUID by default)"
//	@Success	201		{object}	sdnlb.Pool
//	@Header		201		{string}	Location	"/v1/pools/{id}"
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse	"vip_id names no VIP"
//	@Failure	409		{object}	errorResponse	"the id is taken, or the VIP has a pool"
//	@Failure	413		{object}	errorResponse
//	@Failure	415		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/pools [post]
func (s *Server) handlePoolCreate(w http.ResponseWriter, r *http.Request) error {
	return writeCreated(w, r, s.pools(), (*poolRequest).created)
}

// handlePoolGet returns one pool.
//
//	@Summary	Get a pool
//	@ID			poolGet
//	@Description	Returns one pool.
//	@Tags		pools
//	@Produce	json
//	@Param		id	path		string	true	"pool id"
//	@Success	200	{object}	sdnlb.Pool
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	404	{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/pools/{id} [get]
func (s *Server) handlePoolGet(w http.ResponseWriter, r *http.Request) error {
	return writeFound(w, r, s.pools())
}

// handlePoolReplace sets every mutable field of a pool.
//
//	@Summary	Replace a pool
//	@ID			poolReplace
//	@Description	Sets every mutable field of a pool.
//	@Tags		pools
//	@Accept		json
//	@Produce	json
//	@Param		id		path		string		true	"pool id"
//	@Param		pool	body		poolRequest	true	"the pool (no id)"
//	@Success	200		{object}	sdnlb.Pool
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	400		{object}	errorResponse	"invalid; a DSR pool with a member on a port other than 0 and its VIP's: field forwarding"
//	@Failure	404		{object}	errorResponse
//	@Failure	409		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/pools/{id} [put]
func (s *Server) handlePoolReplace(w http.ResponseWriter, r *http.Request) error {
	return writeUpdated(w, r, s.pools(), (*poolRequest).replacement)
}

// handlePoolPatch changes the given fields of a pool.
//
//	@Summary	Update some fields of a pool
//	@ID			poolPatch
//	@Description	Changes the given fields of a pool.
//	@Tags		pools
//	@Accept		json,application/merge-patch+json
//	@Produce	json
//	@Param		id		path		string		true	"pool id"
//	@Param		pool	body		poolRequest	true	"the fields to change (no id)"
//	@Success	200		{object}	sdnlb.Pool
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	400		{object}	errorResponse	"invalid; a DSR pool with a member on a port other than 0 and its VIP's: field forwarding"
//	@Failure	404		{object}	errorResponse
//	@Failure	409		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/pools/{id} [patch]
func (s *Server) handlePoolPatch(w http.ResponseWriter, r *http.Request) error {
	return writeUpdated(w, r, s.pools(), (*poolRequest).update)
}

// handlePoolDelete deletes a pool. Without cascade it refuses while the
// pool has members.
//
//	@Summary	Delete a pool
//	@ID			poolDelete
//	@Description	Deletes a pool. Without cascade it refuses while the pool has members.
//	@Tags		pools
//	@Param		id		path	string	true	"pool id"
//	@Param		cascade	query	bool	false	"also delete its members"
//	@Success	204
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Failure	404	{object}	errorResponse
//	@Failure	409	{object}	errorResponse	"the pool has members"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/pools/{id} [delete]
func (s *Server) handlePoolDelete(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, deleteWithCascade(r, "id", s.PoolService.DeletePool))
}

// handlePoolMembers lists the members of one pool.
//
//	@Summary	List the members of a pool
//	@ID			poolMembers
//	@Description	Lists the members of one pool.
//	@Tags		pools
//	@Produce	json
//	@Param		id		path		string	true	"pool id"
//	@Param		limit	query		int		false	"page size (1-1000)"	default(100)
//	@Param		after	query		string	false	"the next cursor of the previous page"
//	@Success	200		{object}	memberList
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/pools/{id}/members [get]
func (s *Server) handlePoolMembers(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "id")
	// An empty list must mean an empty pool, not a mistyped id.
	if _, err := s.PoolService.FindPoolByID(r.Context(), id); err != nil {
		return err
	}
	return s.listMembers(w, r, sdnlb.MemberFilter{PoolID: &id})
}

type associateRequest struct {
	MonitorID string `json:"monitor_id" example:"http-check"`
}

// handlePoolAssociateMonitor lets a monitor check the pool's members.
//
//	@Summary	Associate a monitor with a pool
//	@ID			poolAssociateMonitor
//	@Description	Lets a monitor check the pool's members.
//	@Tags		pools
//	@Accept		json
//	@Param		id		path	string				true	"pool id"
//	@Param		monitor	body	associateRequest	true	"the monitor"
//	@Success	204
//	@Failure	400	{object}	errorResponse
//	@Failure	404	{object}	errorResponse	"no such pool or monitor"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/pools/{id}/monitors [post]
func (s *Server) handlePoolAssociateMonitor(w http.ResponseWriter, r *http.Request) error {
	var req associateRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.MonitorID == "" {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "monitor_id", "monitor_id is required")
	}
	return noContent(w, s.PoolService.AssociateMonitor(r.Context(), chi.URLParam(r, "id"), req.MonitorID))
}

// handlePoolDissociateMonitor stops a monitor checking the pool's members.
//
//	@Summary	Dissociate a monitor from a pool
//	@ID			poolDissociateMonitor
//	@Description	Stops a monitor checking the pool's members.
//	@Tags		pools
//	@Param		id			path	string	true	"pool id"
//	@Param		monitor_id	path	string	true	"monitor id"
//	@Success	204
//	@Failure	404	{object}	errorResponse	"not associated"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/pools/{id}/monitors/{monitor_id} [delete]
func (s *Server) handlePoolDissociateMonitor(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, s.PoolService.DissociateMonitor(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "monitor_id")))
}
