package api

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// compatVIPUpdate reads the VIP keys Floodlight knows; tenant_id and
// network_id are accepted and ignored (sdnlb has neither).
func compatVIPUpdate(rd *flatReader) sdnlb.VIPUpdate {
	return sdnlb.VIPUpdate{Name: rd.str("name"), Address: rd.ipv4("address"), Protocol: rd.protocol("protocol"), Port: rd.int("port"), PoolID: rd.str("pool_id")}
}

func (s *Server) compatVIPs() compatKind[sdnlb.VIP, sdnlb.VIPUpdate] {
	return compatKind[sdnlb.VIP, sdnlb.VIPUpdate]{native: s.vips(), param: "vip", keys: compatVIPKeys, parse: compatVIPUpdate,
		all: func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.VIP, error) {
			return s.VIPService.FindVIPs(ctx, sdnlb.VIPFilter{Page: page})
		},
		render:  func(_ context.Context, v *sdnlb.VIP) (orderedObject, error) { return compatVIP(v), nil },
		prepare: anyProtocolByDefault, validate: (*sdnlb.VIP).Validate, replace: replaceVIP}
}

// anyProtocolByDefault gives a new VIP without a protocol every protocol:
// Floodlight's VIP protocol 0 balances all traffic to the address.
func anyProtocolByDefault(_ context.Context, upd sdnlb.VIPUpdate, v *sdnlb.VIP) error {
	if upd.Protocol == nil {
		v.Protocol = sdnlb.ProtocolAny
	}
	return nil
}

// replaceVIP makes a VIP the one v describes. Its pool is the one the body
// names, else none, as Floodlight's VIP posted again has the pools its
// body lists: the pool stays, unlinked, until it is posted again.
func replaceVIP(v *sdnlb.VIP, _ sdnlb.VIPUpdate) sdnlb.VIPUpdate {
	return sdnlb.VIPUpdate{Name: &v.Name, Address: &v.Address, Protocol: &v.Protocol, Port: &v.Port, PoolID: &v.PoolID}
}

// handleCompatVIPList lists every VIP.
//
//	@Summary	List VIPs (Floodlight)
//	@ID			compatVIPList
//	@Description	Lists every VIP.
//	@Tags		floodlight
//	@Produce	json
//	@Param		limit	query		int		false	"page size"	default(1000)	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the id after which the page starts"
//	@Success	200	{array}	object	"{name, id, address, protocol, port}, all strings"
//	@Header		200		{string}	Link	"<...?limit=&after=>; rel=\"next\" when more follow"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Failure	400	{object}	errorResponse	"limit is not 1-1000"
//	@Security	Bearer
//	@Router		/quantum/v1.0/vips/ [get]
func (s *Server) handleCompatVIPList(w http.ResponseWriter, r *http.Request) error {
	return compatList(w, r, s.compatVIPs())
}

// handleCompatVIPCreate creates a VIP from a flat Floodlight object, or
// replaces the VIP its id names.
//
//	@Summary	Create or replace a VIP (Floodlight)
//	@ID			compatVIPCreate
//	@Description	Creates a VIP from a flat Floodlight object, or replaces the VIP its id names. Without a protocol it serves every protocol (ANY, shown as "0"). The address is IPv4, as Floodlight's were: IPv6 VIPs are written on /v1, and listed here as they are.
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		vip	body		object	true	"id, tenant_id, name, network_id, protocol, address, port, pool_id"
//	@Success	200	{object}	object	"the VIP"
//	@Failure	400	{object}	errorResponse
//	@Failure	409	{object}	errorResponse	"the address is a member's, or a host's the switches learned, or another VIP listens there on the protocol and port"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/vips/ [post]
func (s *Server) handleCompatVIPCreate(w http.ResponseWriter, r *http.Request) error {
	return compatCreate(w, r, s.compatVIPs())
}

// handleCompatVIPGet returns one VIP as a 1-element array.
//
//	@Summary	Get a VIP (Floodlight)
//	@ID			compatVIPGet
//	@Description	Returns one VIP as a 1-element array.
//	@Tags		floodlight
//	@Produce	json
//	@Param		vip	path	string	true	"VIP id"
//	@Success	200	{array}	object
//	@Failure	404	{object}	errorResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/vips/{vip}/ [get]
func (s *Server) handleCompatVIPGet(w http.ResponseWriter, r *http.Request) error {
	return compatGet(w, r, s.compatVIPs())
}

// handleCompatVIPUpdate changes the given keys of a VIP.
//
//	@Summary	Update a VIP (Floodlight)
//	@ID			compatVIPUpdate
//	@Description	Changes the given keys of a VIP. An address must be IPv4.
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		vip		path		string	true	"VIP id"
//	@Param		body	body		object	true	"the keys to change"
//	@Success	200		{object}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse
//	@Failure	409		{object}	errorResponse	"the address is a member's, or a host's the switches learned, or another VIP listens there on the protocol and port"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Failure	415	{object}	errorResponse	"the body is not JSON"
//	@Failure	413	{object}	errorResponse	"the body is over 1 MiB"
//	@Security	Bearer
//	@Router		/quantum/v1.0/vips/{vip}/ [put]
func (s *Server) handleCompatVIPUpdate(w http.ResponseWriter, r *http.Request) error {
	return compatUpdate(w, r, s.compatVIPs())
}

// handleCompatVIPDelete deletes a VIP no pool serves.
//
//	@Summary	Delete a VIP (Floodlight)
//	@ID			compatVIPDelete
//	@Description	Deletes a VIP no pool serves.
//	@Tags		floodlight
//	@Produce	json
//	@Param		vip	path		string	true	"VIP id"
//	@Param		cascade	query	bool	false	"also delete its pool and members; without it the pool stays, with no VIP"
//	@Success	200	{object}	statusResponse
//	@Failure	400	{object}	errorResponse	"cascade is not a boolean"
//	@Failure	404	{object}	errorResponse
//	@Failure	409	{object}	errorResponse	"a pool serves the VIP"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/vips/{vip}/ [delete]
func (s *Server) handleCompatVIPDelete(w http.ResponseWriter, r *http.Request) error {
	// As in Floodlight, the VIP's pool outlives it: unlinked, not left
	// pointing at nothing.
	cascade, err := cascadeFromQuery(r)
	if err != nil {
		return err
	}
	if !cascade {
		v, err := s.VIPService.FindVIPByID(r.Context(), chi.URLParam(r, "vip"))
		if err != nil {
			return err
		}
		if v.PoolID != "" {
			none := ""
			if _, err := s.PoolService.UpdatePool(r.Context(), v.PoolID, sdnlb.PoolUpdate{VIPID: &none}); err != nil {
				return err
			}
		}
	}
	return compatDelete(w, r, "vip", s.VIPService.DeleteVIP)
}

// handleCompatClear deletes every VIP, pool, member and monitor.
//
//	@Summary	Delete everything (Floodlight)
//	@ID			compatClear
//	@Description	Deletes every VIP, pool, member and monitor.
//	@Tags		floodlight
//	@Produce	json
//	@Success	200	{object}	statusResponse
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (when sdnlb runs with --api-token)"
//	@Failure	403	{object}	errorResponse	"a write from another site's page (see --cors-origin)"
//	@Security	Bearer
//	@Router		/quantum/v1.0/clear/ [delete]
func (s *Server) handleCompatClear(w http.ResponseWriter, r *http.Request) error {
	if s.ConfigService == nil {
		return sdnlb.Errorf(sdnlb.EUNAVAILABLE, "no configuration service")
	}
	if err := s.ConfigService.Clear(r.Context()); err != nil {
		return err
	}
	return writeRaw(w, compatCleared)
}
