package api

import (
	"net/http"

	"github.com/sdnlb/sdnlb"
)

// handleTopology shows how the switches are linked.
//
//	@Summary	Show the topology: switches, the links between them, the hosts at the edge
//	@ID			topology
//	@Description	Lists the connected switches and their ports, the links between them that LLDP discovered (each direction apart, found within a second, gone within three once a link stops carrying the frames, at once when a port goes down) and the hosts the switches learned on ports with no link. Every node of a cluster answers for the whole network: each node discovers the links into the switches it is the MASTER of and the hosts on them, records that part every second, and shows its own merged with the parts the other nodes recorded in the last 3 s (a link once, bidirectional when any node discovered its reverse; a host once per switch, as seen last, another node's last_seen to the minute). While the database is away a node shows its own part only.
//	@Description	The answer is bounded: at most limit links, hosts and paths each, the first in order (links by source then destination, hosts by switch, port and address, paths by switch and destination), and omitted counts the rest; the controller itself holds at most --max-links links and --max-hosts hosts per node.
//	@Tags		switches
//	@Produce	json
//	@Param		limit	query	int	false	"links, hosts and paths at most, each"	default(1000)	minimum(1)	maximum(1000)
//	@Success	200	{object}	sdnlb.Topology
//	@Failure	400	{object}	errorResponse	"limit is not 1-1000"
//	@Failure	503	{object}	errorResponse	"no controller"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/topology [get]
func (s *Server) handleTopology(w http.ResponseWriter, r *http.Request) error {
	if s.TopologyService == nil {
		return errNoController
	}
	limit := sdnlb.MaxPageLimit
	if r.URL.Query().Get("limit") != "" {
		page, err := pageFromQuery(r)
		if err != nil {
			return err
		}
		limit = page.Limit
	}
	top, err := s.TopologyService.Topology(r.Context())
	if err != nil {
		return err
	}
	top.Bound(limit)
	return writeJSON(w, http.StatusOK, top)
}
