package api

import (
	"net/http"

	"github.com/sdnlb/sdnlb"
)

var errNoCluster = sdnlb.Errorf(sdnlb.EUNAVAILABLE, "the cluster is not known to this server")

// handleCluster shows the nodes sharing the database and which leads.
//
//	@Summary		Show the cluster
//	@ID				cluster
//	@Description	The nodes seen recently, the switches each is the OpenFlow MASTER of, and the leader: the node holding the lease, which runs the health monitors and assigns each switch its master among the live nodes connected to it. leader is "" while no node holds the lease; self is the node that answered.
//	@Tags			cluster
//	@Produce		json
//	@Success		200	{object}	sdnlb.Cluster
//	@Failure		401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Failure		503	{object}	errorResponse	"the database is unavailable"
//	@Security		Bearer
//	@Router			/v1/cluster [get]
func (s *Server) handleCluster(w http.ResponseWriter, r *http.Request) error {
	if s.ClusterService == nil {
		return errNoCluster
	}
	c, err := s.ClusterService.Cluster(r.Context())
	if err != nil {
		return err
	}
	c.Nodes, c.Self = orEmpty(c.Nodes), s.NodeID
	for _, n := range c.Nodes {
		n.Masters = orEmpty(n.Masters)
	}
	return writeJSON(w, http.StatusOK, c)
}
