package sdnlb

import "context"

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
