package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"time"

	"github.com/sdnlb/sdnlb"
)

// vipFields are the fields of a VIP that every write may send, none of
// them required: absent ones take their defaults on POST and PUT and stay
// as they are on PATCH.
type vipFields struct {
	Name               *string             `json:"name" example:"shop" validate:"optional" maxLength:"255"`
	Description        *string             `json:"description" example:"the shop's web site" validate:"optional" maxLength:"1024"`
	Protocol           *sdnlb.Protocol     `json:"protocol" enums:"TCP,UDP,ICMP,ANY" default:"TCP" example:"TCP" validate:"optional"`
	Port               *int                `json:"port" default:"0" example:"80" validate:"optional" minimum:"0" maximum:"65535"` // 0 (the default): every port of the address; a VIP on the connection's own port takes precedence
	PoolID             *string             `json:"pool_id" example:"" validate:"optional"`                                        // the pool that serves the VIP: sets that pool's vip_id; "" unlinks it
	ConnectionLimit    *int                `json:"connection_limit" default:"-1" example:"-1" validate:"optional" minimum:"-1"`   // -1 (the default): no limit; otherwise positive (0 is refused)
	SessionPersistence optionalPersistence `json:"session_persistence" extensions:"x-nullable" validate:"optional"`               // null (the default): none
	AdminStateUp       *bool               `json:"admin_state_up" default:"true" example:"true" validate:"optional"`
	Announce           *bool               `json:"announce" default:"true" example:"true" validate:"optional"` // a node that speaks BGP (--bgp-asn) announces the address while a member is in rotation

	MAC       readOnly `json:"mac" swaggerignore:"true"`
	Status    readOnly `json:"status" swaggerignore:"true"`
	CreatedAt readOnly `json:"created_at" swaggerignore:"true"`
	UpdatedAt readOnly `json:"updated_at" swaggerignore:"true"`
}

// vipCreate is the body of POST /v1/vips.
type vipCreate struct {
	ID      *string `json:"id" example:"shop" validate:"optional" maxLength:"64"`           // a UUID when absent
	Address *string `json:"address" example:"192.0.2.10" validate:"required" minLength:"1"` // IPv4 or IPv6, unicast and routable; kept in canonical form (2001:db8::1)
	vipFields
}

// vipReplace is the body of PUT /v1/vips/{id}.
type vipReplace struct {
	ID      readOnly `json:"id" swaggerignore:"true"`
	Address *string  `json:"address" example:"192.0.2.10" validate:"required" minLength:"1"` // IPv4 or IPv6, unicast and routable; kept in canonical form (2001:db8::1)
	vipFields
}

// vipPatch is the body of PATCH /v1/vips/{id}.
type vipPatch struct {
	ID      readOnly `json:"id" swaggerignore:"true"`
	Address *string  `json:"address" example:"192.0.2.10" validate:"optional" minLength:"1"` // IPv4 or IPv6, unicast and routable; kept in canonical form (2001:db8::1)
	vipFields
}

// optionalPersistence tells an absent session_persistence (keep) from null
// (remove) on PATCH. It embeds what it holds, so that the spec shows that
// object's fields.
type optionalPersistence struct {
	sdnlb.SessionPersistence
	set, null bool
}

// value is the persistence the request sets, nil for none.
func (o *optionalPersistence) value() *sdnlb.SessionPersistence {
	if o.null {
		return nil
	}
	sp := o.SessionPersistence
	return &sp
}

func (o *optionalPersistence) UnmarshalJSON(b []byte) error {
	o.set = true
	if bytes.Equal(b, []byte("null")) {
		o.null = true
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o.SessionPersistence); err != nil {
		if e := jsonError(err); sdnlb.ErrorField(e) != "" {
			field := "session_persistence." + sdnlb.ErrorField(e)
			return sdnlb.FieldErrorf(sdnlb.EINVALID, field, "%s", sdnlb.ErrorMessage(e))
		}
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "session_persistence", "session_persistence must be an object with type and timeout")
	}
	return nil
}

// update returns the fields the request gives.
func (f *vipFields) update(address *string) sdnlb.VIPUpdate {
	return sdnlb.VIPUpdate{
		Name: f.Name, Description: f.Description, Address: address, Protocol: f.Protocol,
		Port: f.Port, PoolID: f.PoolID, ConnectionLimit: f.ConnectionLimit, AdminStateUp: f.AdminStateUp,
		Announce: f.Announce, SetSessionPersistence: f.SessionPersistence.set, SessionPersistence: f.SessionPersistence.value(),
	}
}

func (req *vipCreate) created() (sdnlb.VIPUpdate, *string) { return req.update(req.Address), req.ID }

func (req *vipPatch) patch() sdnlb.VIPUpdate { return req.update(req.Address) }

// replacement returns an update that sets every mutable field: the given
// value or the default of a new VIP.
func (req *vipReplace) replacement() sdnlb.VIPUpdate {
	v := sdnlb.NewVIP()
	u := req.update(req.Address)
	u.Apply(v)
	return v.Replacement()
}

func (s *Server) vips() collection[sdnlb.VIP, sdnlb.VIPUpdate] {
	return collection[sdnlb.VIP, sdnlb.VIPUpdate]{updated: func(v *sdnlb.VIP) time.Time { return v.UpdatedAt },
		path: "/v1/vips", fresh: sdnlb.NewVIP, apply: (*sdnlb.VIPUpdate).Apply,
		id:   func(v *sdnlb.VIP) *string { return &v.ID },
		find: s.VIPService.FindVIPByID, create: s.createVIP, update: s.updateVIP,
		required: requiredFields(reflect.TypeFor[vipCreate]())}
}

// createVIP creates v unless a host the switches learned holds its
// address (checkVIPWrite); the store checks the rest.
func (s *Server) createVIP(ctx context.Context, v *sdnlb.VIP) error {
	if err := s.checkVIPWrite(ctx, nil, v); err != nil {
		return err
	}
	return s.VIPService.CreateVIP(ctx, v)
}

// updateVIP applies upd unless the VIP would take the address of a host
// the switches learned (checkVIPWrite); the store checks the rest.
func (s *Server) updateVIP(ctx context.Context, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
	if s.HostService != nil {
		old, err := s.VIPService.FindVIPByID(ctx, id)
		if err != nil {
			return nil, err
		}
		v := *old
		upd.Apply(&v)
		if err := s.checkVIPWrite(ctx, old, &v); err != nil {
			return nil, err
		}
	}
	return s.VIPService.UpdateVIP(ctx, id, upd)
}

// checkVIPWrite is checkVIPHost before a single write, which the store
// checks after it: the address of a member, which the switches learn
// too, is left for the store to refuse, naming the member.
func (s *Server) checkVIPWrite(ctx context.Context, old, v *sdnlb.VIP) error {
	refused := s.checkVIPHost(ctx, old, v)
	if refused == nil {
		return nil
	}
	members, err := s.MemberService.FindMembers(ctx, sdnlb.MemberFilter{Address: &v.Address, Page: sdnlb.Page{Limit: 1}})
	if err != nil {
		return err
	}
	if len(members) > 0 {
		return nil
	}
	return refused
}

// checkVIPHost refuses a VIP that takes the address of a host the
// switches learned: created there (old is nil), moved there, or enabled
// there. The switches would answer ARP for the address with the VIP's MAC
// and take the host's traffic, which only a request that says so
// (?take_address=true) may do. It asks what the controller knows now,
// outside the write's transaction: a host that shows up in between is
// missed.
func (s *Server) checkVIPHost(ctx context.Context, old, v *sdnlb.VIP) error {
	if s.HostService == nil || old != nil && old.Address == v.Address && (old.AdminStateUp || !v.AdminStateUp) || takesAddress(ctx) {
		return nil
	}
	h, err := s.HostService.FindHost(ctx, v.Address)
	if sdnlb.ErrorCode(err) == sdnlb.ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	port := h.Port
	if h.PortName != "" {
		port += " (" + h.PortName + ")"
	}
	return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address",
		"%s is in use: host %s (MAC %s) learned on switch %s port %s, last seen %v ago; a vip there would take its traffic (a host is forgotten %d minutes after its last packet; ?take_address=true takes the address from it)",
		v.Address, h.Address, h.MAC, h.DPID, port, time.Since(h.LastSeen).Round(time.Second), int(sdnlb.HostTTL.Minutes()))
}

// takeAddressKey marks, in a request's context, a write that takes the
// address of a host the switches learned (?take_address=true).
type takeAddressKey struct{}

// takingAddress runs h with ?take_address= read into the request's
// context, for the writes that check learned hosts.
func takingAddress(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		take, err := queryBool(r, "take_address")
		if err != nil {
			return err
		}
		if take {
			r = r.WithContext(context.WithValue(r.Context(), takeAddressKey{}, true))
		}
		return h(w, r)
	}
}

// takesAddress reports whether the write of ctx takes a learned host's
// address.
func takesAddress(ctx context.Context) bool {
	take, _ := ctx.Value(takeAddressKey{}).(bool)
	return take
}

type vipList struct {
	VIPs []*sdnlb.VIP `json:"vips"`
	Next string       `json:"next"` // pass as ?after= for the next page; "" on the last
}

// handleVIPList lists VIPs in id order.
//
//	@Summary	List VIPs
//	@ID			vipList
//	@Description	Lists VIPs in id order.
//	@Tags		vips
//	@Produce	json
//	@Param		address	query		string	false	"only VIPs with this address, IPv4 or IPv6 in any spelling"
//	@Param		limit	query		int		false	"page size"	default(100)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the next cursor of the previous page"
//	@Success	200		{object}	vipList
//	@Failure	400		{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/vips [get]
func (s *Server) handleVIPList(w http.ResponseWriter, r *http.Request) error {
	vips, next, err := listPage(r, s.vips(), func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.VIP, error) {
		return s.VIPService.FindVIPs(ctx, sdnlb.VIPFilter{Address: addressFilter(r), Page: page})
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, vipList{VIPs: vips, Next: next})
}

// handleVIPCreate creates a VIP.
//
//	@Summary	Create a VIP
//	@ID			vipCreate
//	@Description	Creates a VIP.
//	@Tags		vips
//	@Accept		json
//	@Produce	json
//	@Param		vip	body		vipCreate	true	"the VIP"
//	@Param		take_address	query	bool	false	"take the address from a host the switches learned there (otherwise 409 naming the host)"
//	@Success	201	{object}	sdnlb.VIP
//	@Header		201	{string}	Location	"/v1/vips/{id}"
//	@Failure	400	{object}	errorResponse	"invalid; a DSR pool with a member on a port other than 0 and the VIP's: field port, or pool_id when the write links it"
//	@Failure	404	{object}	errorResponse	"pool_id names no pool"
//	@Failure	409	{object}	errorResponse	"the id is taken; or the address is a member's, or a host's the switches learned, or another VIP listens there on the protocol and port; the message names it"
//	@Failure	413	{object}	errorResponse
//	@Failure	415	{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/vips [post]
func (s *Server) handleVIPCreate(w http.ResponseWriter, r *http.Request) error {
	return writeCreated(w, r, s.vips(), (*vipCreate).created)
}

// handleVIPGet returns one VIP.
//
//	@Summary	Get a VIP
//	@ID			vipGet
//	@Description	Returns one VIP.
//	@Tags		vips
//	@Produce	json
//	@Param		id	path		string	true	"VIP id"	extensions(x-example=shop)
//	@Success	200	{object}	sdnlb.VIP
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	404	{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/vips/{id} [get]
func (s *Server) handleVIPGet(w http.ResponseWriter, r *http.Request) error {
	return writeFound(w, r, s.vips())
}

// handleVIPReplace sets every mutable field of a VIP; absent ones get the
// defaults of a new VIP.
//
//	@Summary	Replace a VIP
//	@ID			vipReplace
//	@Description	Sets every mutable field of a VIP; absent ones get the defaults of a new VIP.
//	@Tags		vips
//	@Accept		json
//	@Produce	json
//	@Param		id	path		string		true	"VIP id"	extensions(x-example=shop)
//	@Param		vip	body		vipReplace	true	"the VIP: absent fields take their defaults"
//	@Param		take_address	query	bool	false	"take the address from a host the switches learned there (otherwise 409 naming the host)"
//	@Success	200	{object}	sdnlb.VIP
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	400	{object}	errorResponse	"invalid; a DSR pool with a member on a port other than 0 and the VIP's: field port, or pool_id when the write links it"
//	@Failure	404	{object}	errorResponse
//	@Failure	409	{object}	errorResponse	"the address is a member's, or a host's the switches learned, or another VIP listens there on the protocol and port; the message names it"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/vips/{id} [put]
func (s *Server) handleVIPReplace(w http.ResponseWriter, r *http.Request) error {
	return writeUpdated(w, r, s.vips(), (*vipReplace).replacement)
}

// handleVIPPatch changes the given fields of a VIP; null puts one back
// to its default (writePatched).
//
//	@Summary	Update some fields of a VIP
//	@ID			vipPatch
//	@Description	Changes the given fields of a VIP, a JSON merge patch (RFC 7396): null puts a field back to its default, the value a PUT without it gives (address has none: null on it is refused).
//	@Tags		vips
//	@Accept		json,application/merge-patch+json
//	@Produce	json
//	@Param		id	path		string		true	"VIP id"	extensions(x-example=shop)
//	@Param		vip	body		vipPatch	true	"the fields to change"
//	@Param		take_address	query	bool	false	"take the address from a host the switches learned there (otherwise 409 naming the host)"
//	@Success	200	{object}	sdnlb.VIP
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Header		200	{string}	ETag	"the version of the object, for If-Match"
//	@Failure	400	{object}	errorResponse	"invalid; a DSR pool with a member on a port other than 0 and the VIP's: field port, or pool_id when the write links it"
//	@Failure	404	{object}	errorResponse
//	@Failure	409	{object}	errorResponse	"the address is a member's, or a host's the switches learned, or another VIP listens there on the protocol and port; the message names it"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/v1/vips/{id} [patch]
func (s *Server) handleVIPPatch(w http.ResponseWriter, r *http.Request) error {
	return writePatched(w, r, s.vips(), (*vipPatch).patch)
}

// handleVIPDelete deletes a VIP. Without cascade it refuses while a pool
// serves the VIP; with cascade the pool and its members go too.
//
//	@Summary	Delete a VIP
//	@ID			vipDelete
//	@Description	Deletes a VIP. Without cascade it refuses while a pool serves the VIP; with cascade the pool and its members go too.
//	@Tags		vips
//	@Param		id		path	string	true	"VIP id"	extensions(x-example=shop)
//	@Param		cascade	query	bool	false	"also delete its pool and members"
//	@Success	204
//	@Param		If-Match	header	string	false	"the ETag the client read: the write applies only to that version (412 otherwise)"
//	@Failure	412	{object}	errorResponse	"the object changed since the ETag in If-Match was read"
//	@Failure	404	{object}	errorResponse
//	@Failure	400	{object}	errorResponse	"cascade is not true or false"
//	@Failure	409	{object}	errorResponse	"a pool serves the VIP; the message names ?cascade=true"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/v1/vips/{id} [delete]
func (s *Server) handleVIPDelete(w http.ResponseWriter, r *http.Request) error {
	return noContent(w, deleteWithCascade(r, "id", s.VIPService.DeleteVIP))
}

func cascadeFromQuery(r *http.Request) (bool, error) { return queryBool(r, "cascade") }
