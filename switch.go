package sdnlb

import (
	"context"
	"time"
)

// Switch is an OpenFlow switch connected to the controller.
type Switch struct {
	DPID        string       `json:"dpid"` // 16 hex digits in colon-separated pairs, as Floodlight shows it
	Address     string       `json:"address"`
	Ports       []SwitchPort `json:"ports"`
	ConnectedAt time.Time    `json:"connected_since"`
	// OpenFlow is the version the switch and the controller agreed on.
	OpenFlow string `json:"openflow" example:"1.3" enums:"1.0,1.3"`
	// SelectGroups says whether the switch dispatches SWITCH pools itself;
	// without select groups (OpenFlow 1.0 has none) the controller
	// dispatches them per connection.
	SelectGroups bool `json:"select_groups"`
	// Master is the node that is the switch's OpenFlow MASTER, as this
	// node last read the cluster's assignment; "" on SQLite, where the one
	// node is the switch's only controller, or while no node masters it.
	Master string `json:"master"`
}

// SwitchPort is one port of a switch.
type SwitchPort struct {
	No   uint32 `json:"no"`
	Name string `json:"name"`
	MAC  string `json:"mac"`
	Up   bool   `json:"up"`
}

// Flow is one flow entry the controller installed, rendered as ovs-ofctl
// renders it.
type Flow struct {
	Cookie          string  `json:"cookie"` // 0x-prefixed hex
	TableID         int     `json:"table_id"`
	Table           string  `json:"table" example:"tracked"` // the table's name in sdnlb's pipeline (docs/DATAPATH.md)
	Priority        int     `json:"priority"`
	Match           string  `json:"match"`
	Actions         string  `json:"actions"`
	IdleTimeout     int     `json:"idle_timeout"`
	HardTimeout     int     `json:"hard_timeout"`
	Packets         uint64  `json:"packets"`
	Bytes           uint64  `json:"bytes"`
	DurationSeconds float64 `json:"duration_seconds"`
}

// SwitchService shows the switches and the flows installed on them.
type SwitchService interface {
	Switches(ctx context.Context) ([]*Switch, error)
	// SwitchFlows asks the switch for the flows sdnlb installed; ENOTFOUND
	// when no switch with that dpid is connected.
	SwitchFlows(ctx context.Context, dpid string) ([]*Flow, error)
}

// Host is an IPv4 address in use on a switch's network, as the controller
// learned it from the packets a switch sent it: the host's ARP, or its
// IPv4 traffic through the controller.
type Host struct {
	Address string `json:"address"`
	MAC     string `json:"mac"`
	DPID    string `json:"dpid"` // the switch it was learned on, as Switch.DPID
	// Port is the switch port it was learned on as ovs-ofctl names it:
	// "3", or "LOCAL" for the switch's own interface (a bridge's address
	// on its host).
	Port     string    `json:"port" example:"3"`
	PortName string    `json:"port_name"` // the switch's name for the port, "" when unknown
	LastSeen time.Time `json:"last_seen"` // the last packet from it the controller saw
}

// HostTTL is how long the controller remembers a host after the last
// packet from it, whether or not its switch stays connected.
const HostTTL = 15 * time.Minute

// HostService tells which hosts the switches learned.
type HostService interface {
	// FindHost returns the host with the IPv4 address that a switch showed
	// the controller within HostTTL, the one seen last when several
	// switches did; ENOTFOUND when none did.
	FindHost(ctx context.Context, address string) (*Host, error)
}

// MemberStats are the traffic counters of one member. "In" is client to
// member, "out" member to client.
type MemberStats struct {
	MemberID    string       `json:"member_id"`
	Address     string       `json:"address"`
	Port        int          `json:"port"`
	Status      MemberStatus `json:"status"`
	StatusSince time.Time    `json:"status_since"` // when the health status was last entered
	// Location is where the member attaches, as the switches showed it;
	// null while no switch has shown it. Such a member takes no
	// connection: SWITCH pools leave it out of their buckets, CONTROLLER
	// pools hold its connections while the controller asks for it by ARP,
	// and once it has not answered for 2 s give them to the members the
	// switch has shown.
	Location          *MemberLocation `json:"location" extensions:"x-nullable"`
	ActiveConnections uint64          `json:"active_connections"`
	TotalConnections  uint64          `json:"total_connections"`
	PacketsIn         uint64          `json:"packets_in"`
	PacketsOut        uint64          `json:"packets_out"`
	BytesIn           uint64          `json:"bytes_in"`
	BytesOut          uint64          `json:"bytes_out"`
	// EffectiveWeight is the weight the member takes new connections by,
	// in units of the configured weights: the configured weight, unless
	// the pool is ADAPTIVE (the SRX formula moved it) or the member is in
	// its slow start (scaled by SlowStart).
	EffectiveWeight float64 `json:"effective_weight"`
	// AvailableCPU is the part of its CPU the member's agent says is free
	// (ADAPTIVE's C), 0-1; null without an agent.
	AvailableCPU *float64 `json:"available_cpu" extensions:"x-nullable"`
	// AvailableSessions is 1 − active connections / capacity (ADAPTIVE's
	// S), 0-1; null without a capacity.
	AvailableSessions *float64 `json:"available_sessions" extensions:"x-nullable"`
	// SlowStart is the part of the member's slow start behind it, 0-1; 1
	// once over, or in a pool without one.
	SlowStart float64 `json:"slow_start"`
	// Nodes is what each node of the cluster counted of the above, by
	// node id; one entry on a node alone.
	Nodes []NodeStats `json:"nodes"`
}

// NodeStats is one node's share of a pool's or a member's counters: what
// it counted since the cluster's counters began, and the parts of nodes
// gone that it absorbed as the leader. Active connections are those the
// node's controller set up, and its estimate of those its switches
// dispatched.
type NodeStats struct {
	Node              string `json:"node"`
	ActiveConnections uint64 `json:"active_connections"`
	TotalConnections  uint64 `json:"total_connections"`
	PacketsIn         uint64 `json:"packets_in"`
	PacketsOut        uint64 `json:"packets_out"`
	BytesIn           uint64 `json:"bytes_in"`
	BytesOut          uint64 `json:"bytes_out"`
}

// Add adds o's counters to n's.
func (n *NodeStats) Add(o NodeStats) {
	n.ActiveConnections += o.ActiveConnections
	n.TotalConnections += o.TotalConnections
	n.PacketsIn += o.PacketsIn
	n.PacketsOut += o.PacketsOut
	n.BytesIn += o.BytesIn
	n.BytesOut += o.BytesOut
}

// Share is m's counters as a node's share of them.
func (m *MemberStats) Share() NodeStats {
	return NodeStats{ActiveConnections: m.ActiveConnections, TotalConnections: m.TotalConnections,
		PacketsIn: m.PacketsIn, PacketsOut: m.PacketsOut, BytesIn: m.BytesIn, BytesOut: m.BytesOut}
}

// MemberLocation is the switch and port a member was learned on.
type MemberLocation struct {
	DPID string `json:"dpid"` // as Switch.DPID
	// Port is as Host.Port has it; "" when only the switch's flows
	// named the member (a restarted controller that adopted them).
	Port string `json:"port" example:"3"`
}

// PoolStats sums its members' counters.
type PoolStats struct {
	PoolID             string        `json:"pool_id"`
	ActiveConnections  uint64        `json:"active_connections"`
	TotalConnections   uint64        `json:"total_connections"`
	RefusedConnections uint64        `json:"refused_connections"` // over the connection limit or with no member in rotation
	PacketsIn          uint64        `json:"packets_in"`
	PacketsOut         uint64        `json:"packets_out"`
	BytesIn            uint64        `json:"bytes_in"`
	BytesOut           uint64        `json:"bytes_out"`
	Members            []MemberStats `json:"members"`
	// ControllerDispatchedOn lists, for a pool the switches dispatch, the
	// connected switches that cannot (no select groups: OpenFlow 1.0, or
	// a switch built without them), where the controller picks the member
	// of each new connection instead.
	ControllerDispatchedOn []string `json:"controller_dispatched_on"`
	// Nodes is what each node of the cluster counted, by node id, as
	// NodeStats; one entry on a node alone.
	Nodes     []NodeStats `json:"nodes"`
	UpdatedAt time.Time   `json:"updated_at"`
}

// StatsService gives live traffic counters.
type StatsService interface {
	// PoolStats is ENOTFOUND for a pool the controller does not know.
	PoolStats(ctx context.Context, poolID string) (*PoolStats, error)
	// AllPoolStats returns the counters of every pool, by pool id.
	AllPoolStats(ctx context.Context) ([]*PoolStats, error)
}
