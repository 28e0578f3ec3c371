package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// compatVIPUpdate reads the VIP keys Floodlight knows; tenant_id and
// network_id are accepted and ignored (sdnlb has neither).
func compatVIPUpdate(req flatRequest) (sdnlb.VIPUpdate, error) {
	protocol, err := req.protocol("protocol")
	if err != nil {
		return sdnlb.VIPUpdate{}, err
	}
	port, err := req.int("port")
	if err != nil {
		return sdnlb.VIPUpdate{}, err
	}
	return sdnlb.VIPUpdate{Name: req.str("name"), Address: req.str("address"), Protocol: protocol, Port: port, PoolID: req.str("pool_id")}, nil
}

// handleCompatVIPList lists every VIP.
//
//	@Summary	List VIPs (Floodlight)
//	@Tags		floodlight
//	@Produce	json
//	@Success	200	{array}	object	"{name, id, address, protocol, port}, all strings"
//	@Router		/quantum/v1.0/vips/ [get]
func (s *Server) handleCompatVIPList(w http.ResponseWriter, r *http.Request) error {
	vips, err := s.VIPService.FindVIPs(r.Context(), sdnlb.VIPFilter{})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, compatArray(vips, compatVIP))
}

// handleCompatVIPCreate creates a VIP from a flat Floodlight object.
//
//	@Summary	Create a VIP (Floodlight)
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		vip	body		object	true	"id, tenant_id, name, network_id, protocol, address, port, pool_id"
//	@Success	200	{object}	object	"the VIP"
//	@Failure	400	{object}	errorResponse
//	@Failure	409	{object}	errorResponse
//	@Security	Bearer
//	@Router		/quantum/v1.0/vips/ [post]
func (s *Server) handleCompatVIPCreate(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeFlat(w, r, compatVIPKeys)
	if err != nil {
		return err
	}
	upd, err := compatVIPUpdate(req)
	if err != nil {
		return err
	}
	v := sdnlb.NewVIP()
	upd.Apply(v)
	v.ID = req["id"]
	if err := s.VIPService.CreateVIP(r.Context(), v); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, compatVIP(v))
}

// handleCompatVIPGet returns one VIP as a 1-element array.
//
//	@Summary	Get a VIP (Floodlight)
//	@Tags		floodlight
//	@Produce	json
//	@Param		vip	path	string	true	"VIP id"
//	@Success	200	{array}	object
//	@Failure	404	{object}	errorResponse
//	@Router		/quantum/v1.0/vips/{vip}/ [get]
func (s *Server) handleCompatVIPGet(w http.ResponseWriter, r *http.Request) error {
	v, err := s.VIPService.FindVIPByID(r.Context(), chi.URLParam(r, "vip"))
	if err != nil {
		return err
	}
	return writeCompatOne(w, compatVIP(v))
}

// handleCompatVIPUpdate changes the given keys of a VIP.
//
//	@Summary	Update a VIP (Floodlight)
//	@Tags		floodlight
//	@Accept		json
//	@Produce	json
//	@Param		vip		path		string	true	"VIP id"
//	@Param		body	body		object	true	"the keys to change"
//	@Success	200		{object}	object
//	@Failure	400		{object}	errorResponse
//	@Failure	404		{object}	errorResponse
//	@Security	Bearer
//	@Router		/quantum/v1.0/vips/{vip}/ [put]
func (s *Server) handleCompatVIPUpdate(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "vip")
	req, err := decodeFlatFor(w, r, compatVIPKeys, id)
	if err != nil {
		return err
	}
	upd, err := compatVIPUpdate(req)
	if err != nil {
		return err
	}
	v, err := s.VIPService.UpdateVIP(r.Context(), id, upd)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, compatVIP(v))
}

// handleCompatVIPDelete deletes a VIP no pool serves.
//
//	@Summary	Delete a VIP (Floodlight)
//	@Tags		floodlight
//	@Produce	json
//	@Param		vip	path		string	true	"VIP id"
//	@Success	200	{object}	statusResponse
//	@Failure	404	{object}	errorResponse
//	@Failure	409	{object}	errorResponse	"a pool serves the VIP"
//	@Security	Bearer
//	@Router		/quantum/v1.0/vips/{vip}/ [delete]
func (s *Server) handleCompatVIPDelete(w http.ResponseWriter, r *http.Request) error {
	if err := deleteWithCascade(r, "vip", s.VIPService.DeleteVIP); err != nil {
		return err
	}
	return writeRaw(w, compatDeleted)
}

// handleCompatClear deletes every VIP, pool, member and monitor.
//
//	@Summary	Delete everything (Floodlight)
//	@Tags		floodlight
//	@Produce	json
//	@Success	200	{object}	statusResponse
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
