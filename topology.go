package sdnlb

import (
	"context"
	"time"
)

// Topology is the network the connected switches make: the links between
// them, which the controller discovers by LLDP, and the hosts on their
// other ports.
type Topology struct {
	Switches []*TopologySwitch `json:"switches"`
	// Links lists each direction apart: a link is the LLDP frame one
	// switch sent arriving at another.
	Links []*Link `json:"links"`
	// Hosts are the hosts the switches learned within HostTTL on ports
	// with no link: where the network ends.
	Hosts []*Host `json:"hosts"`
	// Paths are the ways traffic takes between the switches, one per
	// switch and destination switch, when sdnlb forwards between them
	// (--l2 fabric); empty otherwise.
	Paths []*Path `json:"paths"`
	// Omitted counts what an answer bounded by a limit left out of each
	// list, past its first ones in order.
	Omitted TopologyOmitted `json:"omitted"`
}

// TopologyOmitted counts the links, hosts and paths a bounded topology
// left out.
type TopologyOmitted struct {
	Links int `json:"links"`
	Hosts int `json:"hosts"`
	Paths int `json:"paths"`
}

// Bound keeps the first limit links, hosts and paths of t and counts the
// rest in Omitted.
func (t *Topology) Bound(limit int) {
	t.Links, t.Omitted.Links = firstOf(t.Links, limit)
	t.Hosts, t.Omitted.Hosts = firstOf(t.Hosts, limit)
	t.Paths, t.Omitted.Paths = firstOf(t.Paths, limit)
}

// firstOf returns the first limit items of list and how many it left out.
func firstOf[T any](list []T, limit int) ([]T, int) {
	if len(list) <= limit {
		return list, 0
	}
	return list[:limit], len(list) - limit
}

// Path is the way a switch sends what goes to another: the port each
// switch on the way sends it out of, from From's to the last before To.
type Path struct {
	From string    `json:"from"` // as Switch.DPID
	To   string    `json:"to"`
	Hops []LinkEnd `json:"hops"`
}

// TopologySwitch is a switch of the topology and its ports.
type TopologySwitch struct {
	DPID  string       `json:"dpid"` // as Switch.DPID
	Ports []SwitchPort `json:"ports"`
}

// Link is one direction of a link between two switch ports.
type Link struct {
	Src LinkEnd `json:"src"`
	Dst LinkEnd `json:"dst"`
	// Bidirectional says the reverse direction was discovered too.
	Bidirectional bool `json:"bidirectional"`
	// RateBPS is what Src's port sent over the last stats interval, in
	// bits per second; CapacityBPS the port's current speed (0 when the
	// switch does not say), and Utilisation their ratio, from 0 to 1 (0
	// when the capacity is not known). Paths between switches avoid the
	// links with the highest utilisation.
	RateBPS     uint64  `json:"rate_bps"`
	CapacityBPS uint64  `json:"capacity_bps"`
	Utilisation float64 `json:"utilisation"`
}

// LinkEnd is one end of a link: a port of a switch.
type LinkEnd struct {
	DPID string `json:"dpid"` // as Switch.DPID
	Port uint32 `json:"port"`
}

// TopologyService tells how the switches are linked.
type TopologyService interface {
	Topology(ctx context.Context) (*Topology, error)
}

// TopologyPart is what one node of a cluster discovered. A switch sends
// its packet-ins to its MASTER only, so a node discovers the links into
// the switches it masters and learns the hosts on them, and only a
// switch's master reads its port counters: each node records its part,
// and every node shows the parts merged.
type TopologyPart struct {
	Node     string
	Switches []*TopologySwitch
	// Links are the links the node discovered, Src and Dst only: what a
	// link carries is its source port's load, in the part of the source
	// switch's master.
	Links []*Link
	Hosts []*Host
	// Loads are the loads of the ports at either end of Links that are on
	// the switches the node masters.
	Loads []PortLoad
	// Paths are the node's paths between the switches it masters.
	Paths []*Path
}

// PortLoad is what a switch port sent, as Link reports it for a link
// from the port.
type PortLoad struct {
	Port        LinkEnd `json:"port"`
	RateBPS     uint64  `json:"rate_bps"`
	CapacityBPS uint64  `json:"capacity_bps"`
	Utilisation float64 `json:"utilisation"`
}

// TopologyPartService is the database side of sharing the topology among
// the nodes: each records its part, every node reads them all.
type TopologyPartService interface {
	// RecordTopology records part as node's, replacing the last, by the
	// database clock, and forgets the parts nobody recorded again within
	// live (of nodes gone); a nil part forgets node's. It fails with
	// ECONFLICT, changing nothing, when another process acts as node (see
	// LeaseService.RecordNode).
	RecordTopology(ctx context.Context, node ClusterNode, part *TopologyPart, live time.Duration) error
	// TopologyParts reads the parts recorded within live, by node.
	TopologyParts(ctx context.Context, live time.Duration) ([]*TopologyPart, error)
}
