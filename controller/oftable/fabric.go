package oftable

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Fabric is switches joined by links, to follow a packet from the port it
// enters by to the ports it leaves the fabric by. Each switch is a Table
// with its own groups and tracker. The zero value is empty and ready; a
// Fabric is not safe for concurrent use.
type Fabric struct {
	switches map[uint64]*Table
	links    map[Port]Port
}

// Port is a port of a switch in a Fabric: its datapath ID and port number.
type Port struct {
	DPID uint64
	Port uint32
}

func (p Port) String() string { return fmt.Sprintf("%#x:%s", p.DPID, portString(p.Port)) }

// Switch returns the table of switch dpid, adding an empty one the first
// time.
func (f *Fabric) Switch(dpid uint64) *Table {
	if f.switches == nil {
		f.switches = map[uint64]*Table{}
	}
	t := f.switches[dpid]
	if t == nil {
		t = New()
		f.switches[dpid] = t
	}
	return t
}

// DPIDs returns the switches' datapath IDs, in order.
func (f *Fabric) DPIDs() []uint64 { return slices.Sorted(maps.Keys(f.switches)) }

// Link joins two ports, both ways: what one switch outputs on a, the other
// receives on b, and the reverse. A port has one link; linking it again
// replaces its link.
func (f *Fabric) Link(a, b Port) {
	if f.links == nil {
		f.links = map[Port]Port{}
	}
	for _, p := range []Port{a, b} {
		if old, ok := f.links[p]; ok {
			delete(f.links, old)
		}
	}
	f.links[a], f.links[b] = b, a
}

// Unlink cuts the link at a, both ways.
func (f *Fabric) Unlink(a Port) {
	if b, ok := f.links[a]; ok {
		delete(f.links, a)
		delete(f.links, b)
	}
}

// Trip is where Send took a packet.
type Trip struct {
	Hops  []Hop  // every switch the packet went through, in order
	Exits []Exit // every copy that left the fabric, in order
	Err   error  // ErrLoop from a switch or the fabric, or an unknown switch
}

// Hop is one switch's part of a Trip: the packet as it arrived and what
// the switch did with it.
type Hop struct {
	DPID   uint64
	In     Packet
	Result Result
}

// Exit is a copy of the packet leaving the fabric: by a port without a
// link, or a reserved port (CONTROLLER, NORMAL, FLOOD, LOCAL ...: the
// model does not follow them), as it left.
type Exit struct {
	At     Port
	Packet Packet
}

// maxHops is how many switch passes Send follows for one packet.
const maxHops = 64

// Send follows p, arriving at port at, through the fabric: each switch
// processes it (Table.Process, so trackers keep what it commits), its
// outputs to linked ports arrive at the other end, the rest leave. A
// packet crossing a link keeps its headers alone (Output.Packet), and
// gets the port it arrives by as in_port. Send follows at
// most maxHops switch passes (Err then is ErrLoop).
func (f *Fabric) Send(at Port, p Packet) Trip {
	var trip Trip
	type arrival struct {
		at Port
		p  Packet
	}
	queue := []arrival{{at, p}}
	for len(queue) > 0 {
		if len(trip.Hops) == maxHops {
			trip.Err = ErrLoop
			break
		}
		a := queue[0]
		queue = queue[1:]
		t := f.switches[a.at.DPID]
		if t == nil {
			trip.Err = errors.Join(trip.Err, fmt.Errorf("oftable: no switch %#x in the fabric", a.at.DPID))
			continue
		}
		in := a.p
		in.InPort = a.at.Port
		r := t.Process(in)
		trip.Hops = append(trip.Hops, Hop{DPID: a.at.DPID, In: in, Result: r})
		if r.Err != nil {
			trip.Err = errors.Join(trip.Err, fmt.Errorf("switch %#x: %w", a.at.DPID, r.Err))
		}
		for _, o := range r.Outputs {
			from := Port{a.at.DPID, o.Port}
			if to, ok := f.links[from]; ok {
				queue = append(queue, arrival{to, o.Packet})
				continue
			}
			trip.Exits = append(trip.Exits, Exit{At: from, Packet: o.Packet})
		}
	}
	return trip
}

// ExitPorts returns the ports the trip left the fabric by, in order.
func (t Trip) ExitPorts() []Port {
	ports := make([]Port, len(t.Exits))
	for i, e := range t.Exits {
		ports[i] = e.At
	}
	return ports
}
