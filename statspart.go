package sdnlb

import (
	"context"
	"time"
)

// Counts are one member's cumulative traffic counters as one node
// counted them. They only grow, except Opened and Closed, which a member
// that goes DOWN evens.
type Counts struct {
	Connections uint64 `json:"connections"` // the connections the member took
	PacketsIn   uint64 `json:"packets_in"`
	PacketsOut  uint64 `json:"packets_out"`
	BytesIn     uint64 `json:"bytes_in"`
	BytesOut    uint64 `json:"bytes_out"`
	// Opened and Closed are the connections the switches dispatched
	// (SWITCH pools) as their rows counted them opening and closing: the
	// cluster's estimate of those active is the sum of Opened less the
	// sum of Closed over every part.
	Opened uint64 `json:"opened"`
	Closed uint64 `json:"closed"`
}

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.Connections += o.Connections
	c.PacketsIn += o.PacketsIn
	c.PacketsOut += o.PacketsOut
	c.BytesIn += o.BytesIn
	c.BytesOut += o.BytesOut
	c.Opened += o.Opened
	c.Closed += o.Closed
}

// Share is c, with active connections, as a node's share of a pool's or
// a member's counters.
func (c Counts) Share(active uint64) NodeStats {
	return NodeStats{ActiveConnections: active, TotalConnections: c.Connections,
		PacketsIn: c.PacketsIn, PacketsOut: c.PacketsOut, BytesIn: c.BytesIn, BytesOut: c.BytesOut}
}

// Above is what c has beyond base, field by field, 0 where c has less.
func (c Counts) Above(base Counts) Counts {
	sub := func(a, b uint64) uint64 {
		if a > b {
			return a - b
		}
		return 0
	}
	return Counts{
		Connections: sub(c.Connections, base.Connections),
		PacketsIn:   sub(c.PacketsIn, base.PacketsIn), PacketsOut: sub(c.PacketsOut, base.PacketsOut),
		BytesIn: sub(c.BytesIn, base.BytesIn), BytesOut: sub(c.BytesOut, base.BytesOut),
		Opened: sub(c.Opened, base.Opened), Closed: sub(c.Closed, base.Closed),
	}
}

// MemberPart is one member's share of a node's stats part.
type MemberPart struct {
	Counts
	// Active are the connections the node's controller set up through the
	// member that have not ended; they count only while the part is live.
	Active uint64 `json:"active"`
}

// VIPPart is one VIP's share of a node's stats part.
type VIPPart struct {
	Refused uint64 `json:"refused"` // cumulative
	Active  uint64 `json:"active"`  // as MemberPart.Active
}

// SwitchReadings are what the rows of one switch had counted, per
// member, when its master last read them: the counters of the rows live
// then, from each row's start. A node that takes the switch over reads
// the same rows again and counts only what they counted beyond these, so
// that what the switch counted is counted once across masters, restarts
// and the time between.
type SwitchReadings struct {
	DPID string `json:"dpid"` // as Switch.DPID
	// Generation is the OpenFlow role generation the writer mastered the
	// switch under; 0 without roles (SQLite).
	Generation uint64 `json:"generation"`
	// Final says the readings will not change: the writer no longer
	// masters the switch (these are its last readings of it), or, as
	// SwitchReadings reads them, its part is not live or was absorbed.
	Final bool `json:"final"`
	// Members are the readings by member id. Connections is always 0:
	// the rows count the connections they see open as Opened.
	Members map[string]Counts `json:"members"`
}

// StatsPart is what one node counted: each node records its part, and
// every node shows the parts summed. A part lives while its node records
// it; the leader absorbs a part not recorded within a while (its node
// died, stopped or restarted) into its own, so the cluster's totals keep
// what the part counted and the number of parts stays that of the nodes.
type StatsPart struct {
	// ID names the part: a node draws a new one when it starts and when
	// it finds its part absorbed (it was taken for gone).
	ID   string `json:"id"`
	Node string `json:"node"`
	// RecordedAt is when the part was last recorded, by the database's
	// clock; set by StatsParts.
	RecordedAt time.Time             `json:"recorded_at"`
	Members    map[string]MemberPart `json:"members"` // by member id
	VIPs       map[string]VIPPart    `json:"vips"`    // by VIP id
	// Switches are the readings of the switches the node masters.
	Switches []SwitchReadings `json:"switches"`
}

// SwitchReadingsOf are the last readings recorded of a switch, and the
// part that recorded them.
type SwitchReadingsOf struct {
	SwitchReadings
	Part string // the id of the part that recorded them
}

// Absorbed is what AbsorbStats moved into the leader's part.
type Absorbed struct {
	Parts   []string          // the ids of the parts absorbed
	Members map[string]Counts // by member id
	VIPs    map[string]uint64 // refused, by VIP id
}

// StatsPartService is the database side of sharing the stats among the
// nodes: each records its part, every node reads them all, the leader
// absorbs the parts of nodes gone.
type StatsPartService interface {
	// RecordStats records part, replacing what part.ID last recorded,
	// with the database clock as RecordedAt; the readings of a switch
	// are written only while their Generation is at least that of the
	// readings held (a former master's never replace its successor's),
	// and those of a switch part.ID no longer lists stay, final. It fails
	// with ECONFLICT, changing nothing, when part.ID was absorbed, or when
	// another process acts as node (see LeaseService.RecordNode).
	RecordStats(ctx context.Context, node ClusterNode, part *StatsPart) error
	// StatsParts reads every part, live or not, without their Switches;
	// a part's RecordedAt tells whether it is live.
	StatsParts(ctx context.Context) ([]*StatsPart, error)
	// SwitchReadings reads the last readings recorded of each switch of
	// dpids that has some: Final as recorded, or when their part was not
	// recorded within live or was absorbed.
	SwitchReadings(ctx context.Context, dpids []string, live time.Duration) ([]SwitchReadingsOf, error)
	// AbsorbStats, in one transaction while nodeID holds the lease of
	// term, adds every part not recorded within live, and every part of
	// nodeID other than into, to the part into (which must exist, not
	// absorbed: ENOTFOUND otherwise) and deletes them; their switches'
	// readings stay, Final. It returns what it added, which the caller
	// adds to its part into before it records that again; ECONFLICT when
	// nodeID does not hold the lease of term.
	AbsorbStats(ctx context.Context, nodeID string, term uint64, into string, live time.Duration) (*Absorbed, error)
}

// MemberElsewhere is what the rest of a cluster counted of a member, as
// a node last read the parts: the other nodes' parts, and those of nodes
// gone that it absorbed.
type MemberElsewhere struct {
	Counts
	Active uint64 // the connections the other live nodes' controllers set up
	// Nodes is each node's share; the reading node's holds only what it
	// absorbed.
	Nodes []NodeStats
}

// Elsewhere is what the rest of a cluster counted, by member and VIP id:
// a node's decisions and stats add it to its own counts.
type Elsewhere struct {
	Members map[string]*MemberElsewhere
	VIPs    map[string]*VIPPart
}

// StatsOverlap is what a switch's rows had counted when a node took the
// switch over and first read them, per member: the node counts the part
// of it beyond the readings the switch's last master recorded, once
// those are final.
type StatsOverlap struct {
	DPID       string
	Generation uint64 // the role generation the node took it over under
	// Members are the rows' counters, by member id; as in
	// SwitchReadings, Connections is 0.
	Members map[string]Counts
	// Prior is what the node's own reading of the switch summed when it
	// last stopped counting it, under PriorGeneration: what the node's
	// part counted of it, which its recorded readings may lag.
	Prior           map[string]Counts
	PriorGeneration uint64
}
