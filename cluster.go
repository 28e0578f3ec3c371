package sdnlb

import (
	"context"
	"time"
)

// NodeRole is what a node of the cluster does.
type NodeRole string

const (
	// RoleLeader holds the lease: it runs the health monitors and is the
	// OpenFlow MASTER of every switch.
	RoleLeader NodeRole = "leader"
	// RoleFollower serves the API and keeps its switch connections as
	// SLAVE.
	RoleFollower NodeRole = "follower"
)

// ClusterNode is one sdnlb node sharing the database.
type ClusterNode struct {
	ID           string    `json:"id"`
	APIAddr      string    `json:"api_addr"`
	OpenFlowAddr string    `json:"openflow_addr"`
	Role         NodeRole  `json:"role"`
	LastSeen     time.Time `json:"last_seen"`
	// Instance is a random token of the process acting as the node: a
	// second process started with the same ID is refused.
	Instance string `json:"-"`
}

// Cluster is the nodes recently seen and the one holding the lease.
type Cluster struct {
	Leader string         `json:"leader"` // "" while no node holds the lease
	Self   string         `json:"self"`   // the node that answered
	Nodes  []*ClusterNode `json:"nodes"`
}

// ClusterService shows the cluster.
type ClusterService interface {
	Cluster(ctx context.Context) (*Cluster, error)
}

// Lease is the outcome of an attempt to take or renew the leader lease.
type Lease struct {
	// Held says the attempt succeeded: the caller holds the lease until
	// the database clock passes its expiry.
	Held bool
	// Holder is the node holding the lease ("" for none), and Generation
	// the number of its term; a takeover increments it.
	Holder     string
	Generation uint64
	// Remaining is how long the lease runs, by the database clock, after
	// the attempt (0 when expired).
	Remaining time.Duration
}

// LeaseService is the database side of leader election: one lease row
// and a row per node.
type LeaseService interface {
	// TakeLease takes or renews the lease for d, in one conditional
	// statement that succeeds only while node holds the lease with
	// generation, or when the lease has expired (then the generation is
	// incremented). It also records that node was seen.
	// It fails with ECONFLICT, changing nothing, when RecordNode would.
	TakeLease(ctx context.Context, node ClusterNode, generation uint64, d time.Duration) (Lease, error)
	// RecordNode records that node was seen. It fails with ECONFLICT when
	// another instance recorded node.ID less than d ago: two live
	// processes never act as one node.
	RecordNode(ctx context.Context, node ClusterNode, d time.Duration) error
	// ReleaseLease ends the lease at once when node still holds it with
	// generation, so that another node need not wait for it to expire.
	ReleaseLease(ctx context.Context, nodeID string, generation uint64) error
	ClusterService
}
