package api

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// poolFields are the fields of a pool a write may send, none of them
// required: absent ones take their defaults on POST and PUT and stay as
// they are on PATCH.
type poolFields struct {
	Name             *string           `json:"name" example:"shop" validate:"optional" maxLength:"255"`
	Description      *string           `json:"description" example:"the shop's web servers" validate:"optional" maxLength:"1024"`
	VIPID            *string           `json:"vip_id" example:"shop" validate:"optional"` // the VIP the pool serves; "" (the default): none
	LBMethod         *sdnlb.LBMethod   `json:"lb_method" default:"ROUND_ROBIN" example:"ROUND_ROBIN" enums:"ROUND_ROBIN,WEIGHTED_ROUND_ROBIN,LEAST_CONNECTIONS,WEIGHTED_LEAST_CONNECTIONS,RANDOM,LEAST_BYTES,SOURCE_IP,CONSISTENT_HASH,ADAPTIVE" validate:"optional"`
	Dispatch         *sdnlb.Dispatch   `json:"dispatch" enums:"SWITCH,CONTROLLER" example:"CONTROLLER" validate:"optional"`       // SWITCH: the switch picks the member by a hash of the connection onto the members' slots (ROUND_ROBIN, WEIGHTED_ROUND_ROBIN, RANDOM, CONSISTENT_HASH, ADAPTIVE), or of the client's address (SOURCE_IP, with client_ipv6_prefix 128); the default for them; CONTROLLER: the controller picks per connection (the default for the other methods, and the only dispatch of a pool whose VIP has session_persistence or a connection_limit)
	Forwarding       *sdnlb.Forwarding `json:"forwarding" enums:"NAT,DSR" default:"NAT" example:"NAT" validate:"optional"`        // NAT: addresses and ports rewritten both ways; DSR: only the destination MAC, members reply directly and must use port 0 or the VIP's
	Protocol         *sdnlb.Protocol   `json:"protocol" enums:"TCP,UDP,ICMP,ANY" default:"TCP" example:"TCP" validate:"optional"` // the VIP's
	AdminStateUp     *bool             `json:"admin_state_up" default:"true" example:"true" validate:"optional"`
	SlowStart        *sdnlb.Seconds    `json:"slow_start" swaggertype:"number" default:"0" example:"0" validate:"optional" minimum:"0" maximum:"3600"` // seconds a member added or back UP takes to ramp linearly to its full share of new connections, 0-3600; 0: at once. Above 0 only with the methods that weigh members: WEIGHTED_ROUND_ROBIN, WEIGHTED_LEAST_CONNECTIONS, CONSISTENT_HASH or ADAPTIVE
	ClientIPv6Prefix *int              `json:"client_ipv6_prefix" default:"128" example:"64" validate:"optional" minimum:"1" maximum:"128"`            // the length of the prefix an IPv6 client is known by, 1-128, for SOURCE_IP balancing, CONSISTENT_HASH by CLIENT and its VIP's SOURCE_IP persistence: 64 keeps a client whose privacy addresses change within its /64 on its member; below 128 these methods need dispatch CONTROLLER
	HashKey          *sdnlb.HashKey    `json:"hash_key" enums:"CONNECTION,CLIENT" default:"CONNECTION" example:"CONNECTION" validate:"optional"`       // what CONSISTENT_HASH hashes, the same way in both dispatches: CONNECTION, the connection (addresses, protocol and TCP's ports; a client's UDP flows share a member); CLIENT, the client's address (or client_ipv6_prefix), so a client keeps its member. CLIENT with another lb_method is a 400; a write that changes lb_method away from CONSISTENT_HASH puts back CONNECTION

	MonitorIDs readOnly `json:"monitor_ids" swaggerignore:"true"`
	CreatedAt  readOnly `json:"created_at" swaggerignore:"true"`
	UpdatedAt  readOnly `json:"updated_at" swaggerignore:"true"`
}

// poolCreate is the body of POST /v1/pools.
type poolCreate struct {
	ID *string `json:"id" example:"shop-pool" validate:"optional" maxLength:"64"` // a UUID when absent
	poolFields
}

// poolEdit is the body of PUT and PATCH /v1/pools/{id}.
type poolEdit struct {
	ID readOnly `json:"id" swaggerignore:"true"`
	poolFields
}

func (f *poolFields) update() sdnlb.PoolUpdate {
	return sdnlb.PoolUpdate{
		Name: f.Name, Description: f.Description, VIPID: f.VIPID, LBMethod: f.LBMethod,
		Dispatch: f.Dispatch, Forwarding: f.Forwarding, Protocol: f.Protocol, AdminStateUp: f.AdminStateUp,
		SlowStart: f.SlowStart, ClientIPv6Prefix: f.ClientIPv6Prefix, HashKey: f.HashKey,
	}
}

func (req *poolCreate) created() (sdnlb.PoolUpdate, *string) { return req.update(), req.ID }

func (req *poolEdit) patch() sdnlb.PoolUpdate { return req.update() }

func (req *poolEdit) replacement() sdnlb.PoolUpdate {
	p := sdnlb.NewPool()
	u := req.update()
	u.Apply(p)
	return p.Replacement()
}

func (s *Server) pools() collection[sdnlb.Pool, sdnlb.PoolUpdate] {
	return collection[sdnlb.Pool, sdnlb.PoolUpdate]{updated: func(p *sdnlb.Pool) time.Time { return p.UpdatedAt },
		path: "/v1/pools", fresh: sdnlb.NewPool, apply: (*sdnlb.PoolUpdate).Apply,
		id:   func(p *sdnlb.Pool) *string { return &p.ID },
		find: s.PoolService.FindPoolByID, create: s.PoolService.CreatePool, update: s.PoolService.UpdatePool,
		required: requiredFields(reflect.TypeFor[poolCreate]()),
		derived:  map[string]func(*sdnlb.PoolUpdate){"dispatch": func(u *sdnlb.PoolUpdate) { u.UnsetDispatch = true }}}
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
//	@Param		limit	query		int		false	"page size"	default(100)	minimum(1)	maximum(1000)
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
//	@Param		pool	body		poolCreate	true	"the pool"
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
	return writeCreated(w, r, s.pools(), (*poolCreate).created)
}

// handlePoolGet returns one pool.
//
//	@Summary	Get a pool
//	@ID			poolGet
//	@Description	Returns one pool.
//	@Tags		pools
//	@Produce	json
//	@Param		id	path		string	true	"pool id"	extensions(x-example=shop-pool)
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
//	@Param		id		path		string		true	"pool id"	extensions(x-example=shop-pool)
//	@Param		pool	body		poolEdit	true	"the pool: absent fields take their defaults"
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
	return writeUpdated(w, r, s.pools(), (*poolEdit).replacement)
}

// handlePoolPatch changes the given fields of a pool (writePatched).
//
//	@Summary	Update some fields of a pool
//	@ID			poolPatch
//	@Description	Changes the given fields of a pool, a JSON merge patch (RFC 7396): null puts a field back to its default, the value a PUT without it gives (dispatch the one its method and VIP need).
//	@Tags		pools
//	@Accept		json,application/merge-patch+json
//	@Produce	json
//	@Param		id		path		string		true	"pool id"	extensions(x-example=shop-pool)
//	@Param		pool	body		poolEdit	true	"the fields to change"
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
	return writePatched(w, r, s.pools(), (*poolEdit).patch)
}

// handlePoolDelete deletes a pool. Without cascade it refuses while the
// pool has members.
//
//	@Summary	Delete a pool
//	@ID			poolDelete
//	@Description	Deletes a pool. Without cascade it refuses while the pool has members.
//	@Tags		pools
//	@Param		id		path	string	true	"pool id"	extensions(x-example=shop-pool)
//	@Param		cascade	query	bool	false	"also delete its members"
//	@Success	204
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Failure	404	{object}	errorResponse
//	@Failure	400	{object}	errorResponse	"cascade is not true or false"
//	@Failure	409	{object}	errorResponse	"the pool has members; the message names ?cascade=true"
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
//	@Param		id		path		string	true	"pool id"	extensions(x-example=shop-pool)
//	@Param		limit	query		int		false	"page size"	default(100)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the next cursor of the previous page"
//	@Success	200		{object}	memberList
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Failure	400	{object}	errorResponse	"limit is not 1-1000"
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
	MonitorID *string `json:"monitor_id" example:"shop-check" validate:"required"`
}

// handlePoolAssociateMonitor lets a monitor check the pool's members.
//
//	@Summary	Associate a monitor with a pool
//	@ID			poolAssociateMonitor
//	@Description	Lets a monitor check the pool's members.
//	@Tags		pools
//	@Accept		json
//	@Param		id		path	string				true	"pool id"	extensions(x-example=shop-pool)
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
	if err := decodeRequest(w, r, &req); err != nil {
		return err
	}
	return noContent(w, s.PoolService.AssociateMonitor(r.Context(), chi.URLParam(r, "id"), *req.MonitorID))
}

// handlePoolDissociateMonitor stops a monitor checking the pool's members.
//
//	@Summary	Dissociate a monitor from a pool
//	@ID			poolDissociateMonitor
//	@Description	Stops a monitor checking the pool's members.
//	@Tags		pools
//	@Param		id			path	string	true	"pool id"	extensions(x-example=shop-pool)
//	@Param		monitor_id	path	string	true	"monitor id"	extensions(x-example=shop-check)
//	@Success	204
//	@Failure	404	{object}	errorResponse	"not associated"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/pools/{id}/monitors/{monitor_id} [delete]
func (s *Server) handlePoolDissociateMonitor(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, s.PoolService.DissociateMonitor(r.Context(), chi.URLParam(r, "id"), chi.URLParam(r, "monitor_id")))
}
