package api

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// memberFields are the fields of a member a write may send besides its
// pool and address, none of them required: absent ones take their
// defaults on POST and PUT and stay as they are on PATCH.
type memberFields struct {
	Port         *int  `json:"port" default:"0" example:"8080" validate:"optional" minimum:"0" maximum:"65535"`        // 0 (the default): the port the client asked the VIP for; in a DSR pool 0 or the VIP's port
	Weight       *int  `json:"weight" default:"1" example:"1" validate:"optional" minimum:"0" maximum:"256"`           // 0-256; 0 drains the member
	Capacity     *int  `json:"capacity" default:"0" example:"1000" validate:"optional" minimum:"0" maximum:"10000000"` // connections the member can hold, 0-10000000; 0 (the default): no bound. At capacity the member takes no new connection until one of its own ends, under every method; ADAPTIVE also weighs it by the share that is free
	AdminStateUp *bool `json:"admin_state_up" default:"true" example:"true" validate:"optional"`

	Status    readOnly `json:"status" swaggerignore:"true"`
	Health    readOnly `json:"health" swaggerignore:"true"`
	CreatedAt readOnly `json:"created_at" swaggerignore:"true"`
	UpdatedAt readOnly `json:"updated_at" swaggerignore:"true"`
}

// memberCreate is the body of POST /v1/members.
type memberCreate struct {
	ID      *string `json:"id" example:"shop-1" validate:"optional" maxLength:"64"` // a UUID when absent
	PoolID  *string `json:"pool_id" example:"shop-pool" validate:"required" minLength:"1"`
	Address *string `json:"address" example:"198.51.100.21" validate:"required" minLength:"1"` // IPv4 or IPv6, of the family of the pool's VIP; kept in canonical form (2001:db8::1)
	memberFields
}

// memberReplace is the body of PUT /v1/members/{id}. pool_id may repeat
// the member's pool, as clients send back what they read, but not change.
type memberReplace struct {
	ID      readOnly `json:"id" swaggerignore:"true"`
	PoolID  *string  `json:"pool_id" example:"shop-pool" validate:"optional" minLength:"1"`     // the member's pool: members do not move between pools
	Address *string  `json:"address" example:"198.51.100.21" validate:"required" minLength:"1"` // IPv4 or IPv6, of the family of the pool's VIP; kept in canonical form (2001:db8::1)
	memberFields
}

// memberPatch is the body of PATCH /v1/members/{id}.
type memberPatch struct {
	ID      readOnly `json:"id" swaggerignore:"true"`
	PoolID  *string  `json:"pool_id" example:"shop-pool" validate:"optional" minLength:"1"`     // the member's pool: members do not move between pools
	Address *string  `json:"address" example:"198.51.100.21" validate:"optional" minLength:"1"` // IPv4 or IPv6, of the family of the pool's VIP; kept in canonical form (2001:db8::1)
	memberFields
}

func (f *memberFields) update(poolID, address *string) sdnlb.MemberUpdate {
	return sdnlb.MemberUpdate{PoolID: poolID, Address: address, Port: f.Port, Weight: f.Weight, Capacity: f.Capacity,
		AdminStateUp: f.AdminStateUp}
}

func (req *memberCreate) created() (sdnlb.MemberUpdate, *string) {
	return req.update(req.PoolID, req.Address), req.ID
}

func (req *memberPatch) patch() sdnlb.MemberUpdate { return req.update(req.PoolID, req.Address) }

// replacement sets every mutable field; pool_id, not one of them, is only
// passed on for the store to check.
func (req *memberReplace) replacement() sdnlb.MemberUpdate {
	m := sdnlb.NewMember()
	u := req.update(req.PoolID, req.Address)
	u.Apply(m)
	return sdnlb.MemberUpdate{PoolID: req.PoolID, Address: &m.Address, Port: &m.Port, Weight: &m.Weight, Capacity: &m.Capacity,
		AdminStateUp: &m.AdminStateUp}
}

// members lays the live health over every member it answers with.
func (s *Server) members() collection[sdnlb.Member, sdnlb.MemberUpdate] {
	return collection[sdnlb.Member, sdnlb.MemberUpdate]{updated: func(m *sdnlb.Member) time.Time { return m.UpdatedAt },
		path: "/v1/members", fresh: sdnlb.NewMember, apply: (*sdnlb.MemberUpdate).Apply,
		id:   func(m *sdnlb.Member) *string { return &m.ID },
		find: s.MemberService.FindMemberByID, create: s.MemberService.CreateMember, update: s.MemberService.UpdateMember,
		show:     s.overlayHealth,
		required: requiredFields(reflect.TypeFor[memberCreate]())}
}

type memberList struct {
	Members []*sdnlb.Member `json:"members"`
	Next    string          `json:"next"`
}

// overlayHealth lays the health monitors' latest probe over what the store
// keeps, as long as both agree on the status (else the store is newer),
// and the agent's latest report while both agree on its drain, which the
// member's status follows.
func (s *Server) overlayHealth(m *sdnlb.Member) {
	if s.HealthReporter == nil {
		return
	}
	h, ok := s.HealthReporter.MemberHealth(m.ID)
	if !ok || h.Status != m.Health.Status {
		return
	}
	m.Health.LastCheck = h.LastCheck
	m.Health.LatencyMS = h.LatencyMS
	m.Health.LastError = h.LastError
	if h.Agent != nil && m.Health.Agent != nil && h.Agent.Drain == m.Health.Agent.Drain {
		m.Health.Agent = h.Agent
	}
}

// handleMemberList lists members in id order.
//
//	@Summary	List members
//	@ID			memberList
//	@Description	Lists members in id order.
//	@Tags		members
//	@Produce	json
//	@Param		pool_id	query		string	false	"only members of this pool"
//	@Param		address	query		string	false	"only members with this address, IPv4 or IPv6 in any spelling"
//	@Param		limit	query		int		false	"page size"	default(100)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the next cursor of the previous page"
//	@Success	200		{object}	memberList
//	@Failure	400		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/members [get]
func (s *Server) handleMemberList(w http.ResponseWriter, r *http.Request) error {
	return s.listMembers(w, r, sdnlb.MemberFilter{PoolID: queryFilter(r, "pool_id"), Address: addressFilter(r)})
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request, filter sdnlb.MemberFilter) error {
	members, next, err := listPage(r, s.members(), func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Member, error) {
		filter.Page = page
		return s.MemberService.FindMembers(ctx, filter)
	})
	if err != nil {
		return err
	}
	for _, m := range members {
		s.overlayHealth(m)
	}
	return writeJSON(w, http.StatusOK, memberList{Members: members, Next: next})
}

// handleMemberCreate adds a member to a pool.
//
//	@Summary	Create a member
//	@ID			memberCreate
//	@Description	Adds a member to a pool.
//	@Tags		members
//	@Accept		json
//	@Produce	json
//	@Param		member	body		memberCreate	true	"the member"
//	@Success	201		{object}	sdnlb.Member
//	@Header		201		{string}	Location	"/v1/members/{id}"
//	@Failure	400		{object}	errorResponse	"invalid; in a DSR pool, a port other than 0 and the VIP's: field port"
//	@Failure	404		{object}	errorResponse	"pool_id names no pool"
//	@Failure	409		{object}	errorResponse	"the id, or pool+address+port, is taken; or the address is a VIP's, which the message names"
//	@Failure	413		{object}	errorResponse
//	@Failure	415		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/members [post]
func (s *Server) handleMemberCreate(w http.ResponseWriter, r *http.Request) error {
	return writeCreated(w, r, s.members(), (*memberCreate).created)
}

// handleMemberGet returns one member with its live health.
//
//	@Summary	Get a member
//	@ID			memberGet
//	@Description	Returns one member with its live health.
//	@Tags		members
//	@Produce	json
//	@Param		id	path		string	true	"member id"	extensions(x-example=shop-1)
//	@Success	200	{object}	sdnlb.Member
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	404	{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/members/{id} [get]
func (s *Server) handleMemberGet(w http.ResponseWriter, r *http.Request) error {
	return writeFound(w, r, s.members())
}

// handleMemberReplace sets every mutable field of a member.
//
//	@Summary	Replace a member
//	@ID			memberReplace
//	@Description	Sets every mutable field of a member.
//	@Tags		members
//	@Accept		json
//	@Produce	json
//	@Param		id		path		string			true	"member id"	extensions(x-example=shop-1)
//	@Param		member	body		memberReplace	true	"the member: absent fields take their defaults; pool_id cannot change"
//	@Success	200		{object}	sdnlb.Member
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	400		{object}	errorResponse	"invalid; in a DSR pool, a port other than 0 and the VIP's: field port"
//	@Failure	404		{object}	errorResponse
//	@Failure	409		{object}	errorResponse	"pool+address+port is taken, or the address is a VIP's, which the message names"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/members/{id} [put]
func (s *Server) handleMemberReplace(w http.ResponseWriter, r *http.Request) error {
	return writeUpdated(w, r, s.members(), (*memberReplace).replacement)
}

// handleMemberPatch changes the given fields of a member (writePatched).
//
//	@Summary	Update some fields of a member
//	@ID			memberPatch
//	@Description	Changes the given fields of a member, a JSON merge patch (RFC 7396): null puts a field back to its default, the value a PUT without it gives (pool_id and address have none: null on them is refused).
//	@Tags		members
//	@Accept		json,application/merge-patch+json
//	@Produce	json
//	@Param		id		path		string			true	"member id"	extensions(x-example=shop-1)
//	@Param		member	body		memberPatch	true	"the fields to change; pool_id cannot change"
//	@Success	200		{object}	sdnlb.Member
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	400		{object}	errorResponse	"invalid; in a DSR pool, a port other than 0 and the VIP's: field port"
//	@Failure	404		{object}	errorResponse
//	@Failure	409		{object}	errorResponse	"pool+address+port is taken, or the address is a VIP's, which the message names"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/members/{id} [patch]
func (s *Server) handleMemberPatch(w http.ResponseWriter, r *http.Request) error {
	return writePatched(w, r, s.members(), (*memberPatch).patch)
}

// handleMemberDelete removes a member from its pool.
//
//	@Summary	Delete a member
//	@ID			memberDelete
//	@Description	Removes a member from its pool.
//	@Tags		members
//	@Param		id	path	string	true	"member id"	extensions(x-example=shop-1)
//	@Success	204
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Failure	404	{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/members/{id} [delete]
func (s *Server) handleMemberDelete(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, s.MemberService.DeleteMember(r.Context(), chi.URLParam(r, "id")))
}
