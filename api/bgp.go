package api

import (
	"net/http"

	"github.com/sdnlb/sdnlb"
)

// handleBGP shows what this node announces over BGP.
//
//	@Summary		Show this node's BGP sessions and announced routes
//	@ID				bgp
//	@Description	With --bgp-asn the node announces to the routers of --bgp-peers the address of every VIP whose announce is true and whose pool has a member in rotation (UP or unmonitored), a /32 or /128, with the next hop of each edge switch it serves (--bgp-next-hops): on one node every connected edge, in a cluster the edges it is the MASTER of. Each path of a prefix carries its edge's next hop; a router that takes several paths per prefix (add_paths) spreads the VIP's packets over the edges by ECMP. A route goes within a second of the VIP's last member leaving rotation, of the VIP's deletion or of the node's loss of the edge.
//	@Description	holding says the sessions are not open yet: after a start with graceful restart the node waits, at most 30 s, until it knows who serves each edge, so that the routers, which kept its routes while it was away, swap them for a whole announcement. Each peer shows its session's state, since when it is established, the paths received and advertised, whether it takes several paths per prefix and whether graceful restart was negotiated. Without --bgp-asn, enabled is false and the lists are empty.
//	@Tags			bgp
//	@Produce		json
//	@Success		200	{object}	sdnlb.BGP
//	@Failure		401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security		Bearer
//	@Router			/v1/bgp [get]
func (s *Server) handleBGP(w http.ResponseWriter, r *http.Request) error {
	if s.BGPService == nil {
		return writeJSON(w, http.StatusOK, &sdnlb.BGP{Peers: []*sdnlb.BGPPeer{}, Routes: []*sdnlb.BGPRoute{}})
	}
	b, err := s.BGPService.BGP(r.Context())
	if err != nil {
		return err
	}
	b.Peers, b.Routes = orEmpty(b.Peers), orEmpty(b.Routes)
	for _, route := range b.Routes {
		route.VIPIDs = orEmpty(route.VIPIDs)
	}
	return writeJSON(w, http.StatusOK, b)
}
