package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// compatMemberUpdate reads the member keys Floodlight knows. connection_limit
// and status are accepted and ignored: sdnlb limits connections per VIP and
// only the health monitors set a member's status.
func compatMemberUpdate(rd *flatReader) sdnlb.MemberUpdate {
	return sdnlb.MemberUpdate{PoolID: rd.str("pool_id"), Address: rd.ipv4("address"), Port: rd.int("port"), Weight: rd.int("weight"),
		AdminStateUp: rd.adminState("admin_state")}
}

// compatMembers has no all: handleCompatMemberList looks each pool up once,
// not once per member.
func (s *Server) compatMembers() compatKind[sdnlb.Member, sdnlb.MemberUpdate] {
	return compatKind[sdnlb.Member, sdnlb.MemberUpdate]{native: s.members(), param: "member", keys: compatMemberKeys, parse: compatMemberUpdate,
		render: s.compatMemberObject, validate: (*sdnlb.Member).Validate, replace: replaceMember}
}

// replaceMember makes a member the one m describes, in the same pool: a
// member does not move between pools (see sdnlb.MemberUpdate.Validate).
func replaceMember(m *sdnlb.Member, _ sdnlb.MemberUpdate) sdnlb.MemberUpdate {
	return sdnlb.MemberUpdate{PoolID: &m.PoolID, Address: &m.Address, Port: &m.Port, Weight: &m.Weight, AdminStateUp: &m.AdminStateUp}
}

func memberID(m *sdnlb.Member) *string { return &m.ID }

// vipOfPool caches the VIP id of each pool for one response.
type vipOfPool struct {
	pools sdnlb.PoolService
	ids   map[string]string
}

func (c *vipOfPool) get(ctx context.Context, poolID string) (string, error) {
	if id, ok := c.ids[poolID]; ok {
		return id, nil
	}
	p, err := c.pools.FindPoolByID(ctx, poolID)
	if err != nil {
		return "", err
	}
	if c.ids == nil {
		c.ids = map[string]string{}
	}
	c.ids[poolID] = p.VIPID
	return p.VIPID, nil
}

func (s *Server) compatMemberObject(ctx context.Context, m *sdnlb.Member) (orderedObject, error) {
	vips := vipOfPool{pools: s.PoolService}
	vipID, err := vips.get(ctx, m.PoolID)
	if err != nil {
		return nil, err
	}
	return compatMember(m, vipID), nil
}

// handleCompatMemberList lists every member.
//
//	@Summary	List members (Floodlight)
//	@ID			compatMemberList
//	@Description	Lists every member.
//	@Tags		floodlight
//	@Produce	json
//	@Param		limit	query		int		false	"page size"	default(1000)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the id after which the page starts"
//	@Success	200	{array}	object	"{id, address, port, poolId, vipId, weight, status}, all strings"
//	@Header		200		{string}	Link	"<...?limit=&after=>; rel=\"next\" when more follow"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Failure	400	{object}	errorResponse	"limit is not 1-1000"
//	@Security	Bearer
//	@Router		/quantum/v1.0/members/ [get]
func (s *Server) handleCompatMemberList(w http.ResponseWriter, r *http.Request) error {
	members, err := compatPage(w, r, memberID, func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Member, error) {
		return s.MemberService.FindMembers(ctx, sdnlb.MemberFilter{Page: page})
	})
	if err != nil {
		return err
	}
	vips := vipOfPool{pools: s.PoolService}
	out := make([]orderedObject, 0, len(members))
	for _, m := range members {
		vipID, err := vips.get(r.Context(), m.PoolID)
		if err != nil {
			return err
		}
		out = append(out, compatMember(m, vipID))
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleCompatMemberCreate adds a member to the pool its pool_id names,
// or replaces the member its id names.
//
//	@Summary	Create or replace a member (Floodlight)
//	@ID			compatMemberCreate
//	@Description	Adds a member to the pool its pool_id names, or replaces the member its id names (in the same pool). The address is IPv4, as Floodlight's were: IPv6 members are written on /v1, and listed here as they are.
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		member	body		object	true	"id, address (required), port (default 0: the port the client asked the VIP for), connection_limit, admin_state, status, pool_id (required), weight"
//	@Success	200		{object}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse	"pool_id names no pool"
//	@Failure	409		{object}	errorResponse	"the pool has a member on the address and port, or the address is a VIP's"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/members/ [post]
func (s *Server) handleCompatMemberCreate(w http.ResponseWriter, r *http.Request) error {
	return compatCreate(w, r, s.compatMembers())
}

// handleCompatMemberGet returns one member as a 1-element array.
//
//	@Summary	Get a member (Floodlight)
//	@ID			compatMemberGet
//	@Description	Returns one member as a 1-element array.
//	@Tags		floodlight
//	@Produce	json
//	@Param		member	path	string	true	"member id"
//	@Success	200		{array}	object
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/members/{member}/ [get]
func (s *Server) handleCompatMemberGet(w http.ResponseWriter, r *http.Request) error {
	return compatGet(w, r, s.compatMembers())
}

// handleCompatMemberUpdate changes the given keys of a member.
//
//	@Summary	Update a member (Floodlight)
//	@ID			compatMemberUpdate
//	@Description	Changes the given keys of a member. An address must be IPv4.
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		member	path		string	true	"member id"
//	@Param		body	body		object	true	"the keys to change"
//	@Success	200		{object}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	409		{object}	errorResponse	"the pool has a member on the address and port, or the address is a VIP's"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/members/{member}/ [put]
func (s *Server) handleCompatMemberUpdate(w http.ResponseWriter, r *http.Request) error {
	return compatUpdate(w, r, s.compatMembers())
}

// handleCompatMemberDelete removes a member.
//
//	@Summary	Delete a member (Floodlight)
//	@ID			compatMemberDelete
//	@Description	Removes a member.
//	@Tags		floodlight
//	@Produce	json
//	@Param		member	path		string	true	"member id"
//	@Success	200		{object}	statusResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/members/{member}/ [delete]
func (s *Server) handleCompatMemberDelete(w http.ResponseWriter, r *http.Request) error {
	if err := s.MemberService.DeleteMember(r.Context(), chi.URLParam(r, "member")); err != nil {
		return err
	}
	return writeRaw(w, compatDeleted)
}

// handleCompatMemberWeight sets a member's weight.
//
//	@Summary	Set a member's weight (Floodlight)
//	@ID			compatMemberWeight
//	@Description	Sets a member's weight.
//	@Tags		floodlight
//	@Produce	json
//	@Param		member	path		string	true	"member id"
//	@Param		weight	path		integer	true	"0 (drain) to 256"
//	@Success	200		{object}	statusResponse	"{\"status\" : \"0\"}"
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/members/{member}/{weight}/ [put]
func (s *Server) handleCompatMemberWeight(w http.ResponseWriter, r *http.Request) error {
	raw := chi.URLParam(r, "weight")
	weight, ok := parseInt(raw)
	if !ok {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "weight", "weight must be an integer, not %q", raw)
	}
	if _, err := s.MemberService.UpdateMember(r.Context(), chi.URLParam(r, "member"), sdnlb.MemberUpdate{Weight: &weight}); err != nil {
		return err
	}
	return writeRaw(w, compatStatus0)
}

// handleCompatMemberPriority gives one member of a pool the weight 1+n/2 of
// a pool of n members and every other member weight 1, as Floodlight does.
//
//	@Summary	Prefer one member of a pool (Floodlight)
//	@ID			compatMemberPriority
//	@Description	Gives one member of a pool the weight 1+n/2 of a pool of n members and every other member weight 1, as Floodlight does.
//	@Tags		floodlight
//	@Produce	json
//	@Param		pool	path		string	true	"pool id"
//	@Param		member	path		string	true	"member id"
//	@Success	200		{integer}	integer	"0"
//	@Failure	404		{object}	errorResponse	"no such member in the pool"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/pools/{pool}/members/{member}/ [put]
func (s *Server) handleCompatMemberPriority(w http.ResponseWriter, r *http.Request) error {
	poolID, memberID := chi.URLParam(r, "pool"), chi.URLParam(r, "member")
	members, err := s.MemberService.FindMembers(r.Context(), sdnlb.MemberFilter{PoolID: &poolID})
	if err != nil {
		return err
	}
	found := false
	for _, m := range members {
		found = found || m.ID == memberID
	}
	if !found {
		return sdnlb.Errorf(sdnlb.ENOTFOUND, "pool %q has no member %q", poolID, memberID)
	}
	preferred := min(1+len(members)/2, sdnlb.MaxWeight)
	// The services have no batch update, so this is one write per member
	// whose weight changes; a failure part-way leaves the earlier ones done.
	for _, m := range members {
		weight := 1
		if m.ID == memberID {
			weight = preferred
		}
		if m.Weight == weight {
			continue
		}
		if _, err := s.MemberService.UpdateMember(r.Context(), m.ID, sdnlb.MemberUpdate{Weight: &weight}); err != nil {
			return err
		}
	}
	return writeRaw(w, compatOK)
}
