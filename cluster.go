package sdnlb

import (
	"context"
	"time"
)

// NodeRole is what a node of the cluster does.
type NodeRole string

const (
	// RoleLeader holds the lease: it runs the health monitors and assigns
	// each switch its OpenFlow MASTER node.
	RoleLeader NodeRole = "leader"
	// RoleFollower serves the API and is the MASTER of the switches
	// assigned to it, like the leader.
	RoleFollower NodeRole = "follower"
)

// ClusterNode is one sdnlb node sharing the database.
type ClusterNode struct {
	ID           string    `json:"id"`
	APIAddr      string    `json:"api_addr"`
	OpenFlowAddr string    `json:"openflow_addr"`
	Role         NodeRole  `json:"role"`
	LastSeen     time.Time `json:"last_seen"`
	// Masters are the switches the node is the OpenFlow MASTER of, by
	// datapath id (as Switch.DPID); none on SQLite, which has no roles.
	Masters []string `json:"masters"`
	// StatsRecordedAt and TopologyRecordedAt are when the node last
	// recorded its part of the cluster's stats and of its topology, by
	// the database clock; null for none (SQLite records no topology).
	StatsRecordedAt    *time.Time `json:"stats_recorded_at" extensions:"x-nullable"`
	TopologyRecordedAt *time.Time `json:"topology_recorded_at" extensions:"x-nullable"`
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

// SwitchMaster is the node assigned to be a switch's OpenFlow MASTER.
type SwitchMaster struct {
	DPID string // as Switch.DPID
	Node string // the node's id
	// Generation is the OpenFlow role generation id every node asks the
	// switch for its role with; it grows with every change of the
	// switch's master, so a switch refuses a former master's claim.
	Generation uint64
}

// SwitchConnection says that a live node is connected to a switch, as it
// last recorded Age ago by the database clock.
type SwitchConnection struct {
	Node string
	DPID string
	Age  time.Duration
}

// Mastery is what the database holds about the switches' masters, read
// in one snapshot.
type Mastery struct {
	// Term is the generation of the lease: the leader's term.
	Term uint64
	// Masters is the assignment, by datapath id.
	Masters []SwitchMaster
	// Connections are the switch connections recorded within the live
	// window SwitchMasters was given, by datapath id and node.
	Connections []SwitchConnection
}

// SwitchMasterService is the database side of spreading the switches'
// OpenFlow MASTER role over the nodes: every node records the switches it
// is connected to, the leader writes which node masters each.
type SwitchMasterService interface {
	// RecordSwitches records that node is connected to the switches dpids
	// now, and to no other. It fails with ECONFLICT, changing nothing,
	// when another process acts as node (see LeaseService.RecordNode).
	RecordSwitches(ctx context.Context, node ClusterNode, dpids []string) error
	// SwitchMasters reads the assignment and the connections recorded
	// within live.
	SwitchMasters(ctx context.Context, live time.Duration) (*Mastery, error)
	// SetSwitchMasters writes masters (new or changed) and removes the
	// assignment of the switches drop names, only while nodeID holds the
	// lease of term; otherwise it fails with ECONFLICT and changes nothing.
	SetSwitchMasters(ctx context.Context, nodeID string, term uint64, masters []SwitchMaster, drop []string) error
	// SwitchMastersChanged receives after any node changed the assignment
	// (on PostgreSQL; never on SQLite, where one node runs).
	SwitchMastersChanged() <-chan struct{}
}
