package oftable

import (
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Result is where Process sent a packet.
type Result struct {
	Flow     *Flow       // the last flow that matched; nil when none did
	Path     []Flow      // every flow that matched, in the order they did
	Out      Packet      // the packet after the flows' actions
	Ports    []uint32    // outputs in order, as Outputs has them; none: dropped
	Outputs  []Output    // every output, with the packet it sent
	Selected []Selection // the bucket each select group on the way picked, in order
}

// Output is one copy of a packet leaving the switch: by Port (OFPP_IN_PORT
// resolved; other reserved ports, CONTROLLER, NORMAL, FLOOD, as their
// numbers), as the actions before the output had rewritten it. Packet
// holds what leaves: the headers, and InPort where the packet came in;
// metadata, registers and tracker fields stay in the switch, zero.
type Output struct {
	Port   uint32
	Packet Packet
}

// Selection is a select group's pick: the index of the bucket it ran.
type Selection struct {
	GroupID uint32
	Bucket  int
}

// Process runs p through the switch, from table 0, as Open vSwitch does:
//
//   - A flow's apply-actions run in order, then its write_metadata, then
//     its goto_table carries the packet on. A miss, or a last flow without
//     goto_table, ends it: OpenFlow 1.3 has no implicit punt
//     (install a table-miss flow to get one).
//   - group runs a copy of the packet through the group's buckets: every
//     bucket for an all group, the one for an indirect group, and for a
//     select group the one Select picks. What a bucket does to its copy
//     stays in the bucket.
func (t *Table) Process(p Packet) Result {
	return t.process(p, func(g *group, p *Packet) (int, bool) { return g.pick(p) })
}

// ProcessAll returns every way p can go: one Result per combination of
// buckets the select groups on its way may pick (buckets weighing 0
// never), each with Selected naming them, in bucket order. A test asks
// with it where a new connection may land, whatever the hash.
func (t *Table) ProcessAll(p Packet) []Result {
	var results []Result
	pending := [][]int{nil} // the picks each run makes, the first ones given
	for len(pending) > 0 {
		given := pending[0]
		pending = pending[1:]
		var taken []int
		choose := func(g *group, _ *Packet) (int, bool) {
			live := g.live()
			if len(live) == 0 {
				return 0, false
			}
			if len(taken) < len(given) {
				taken = append(taken, given[len(taken)])
				return taken[len(taken)-1], true
			}
			for _, other := range live[1:] {
				pending = append(pending, append(slices.Clone(taken), other))
			}
			taken = append(taken, live[0])
			return live[0], true
		}
		results = append(results, t.process(p, choose))
	}
	return results
}

// chooser picks the bucket of select group g for p, or false for none.
type chooser func(g *group, p *Packet) (int, bool)

// run is one packet's way through a table.
type run struct {
	t      *Table
	choose chooser
	r      Result
}

func (t *Table) process(p Packet, choose chooser) Result {
	x := &run{t: t, choose: choose}
	x.r.Out = x.pass(p, 0)
	if len(x.r.Path) > 0 {
		x.r.Flow = &x.r.Path[len(x.r.Path)-1]
	}
	return x.r
}

// pass runs p through the tables from table until it ends, and returns it
// as it ends.
func (x *run) pass(p Packet, table uint8) Packet {
	for {
		f, ok := x.t.LookupIn(table, p)
		if !ok {
			return p
		}
		x.r.Path = append(x.r.Path, f)
		for _, in := range f.Instructions {
			if actions, ok := applyActions(in); ok {
				p = x.actions(actions, p)
			}
		}
		next, hasNext := uint8(0), false
		for _, in := range f.Instructions {
			if w, ok := writeMetadata(in); ok {
				p.Metadata = p.Metadata&^w.Mask | w.Metadata&w.Mask
			}
			if n, ok := gotoTable(in); ok {
				next, hasNext = n, true
			}
		}
		if !hasNext {
			return p
		}
		table = next
	}
}

// actions runs an action list on p and returns p as the list leaves it.
func (x *run) actions(actions []ofp.Action, p Packet) Packet {
	for _, a := range actions {
		switch a := deref(a).(type) {
		case ofp.ActionOutput:
			port := resolvePort(a.Port, p.InPort)
			x.r.Ports = append(x.r.Ports, port)
			x.r.Outputs = append(x.r.Outputs, Output{Port: port, Packet: p.headers()})
		case ofp.ActionSetField:
			p.set(&a.Field)
		case ofp.ActionRegMove:
			p.move(a)
		case ofp.ActionGroup:
			x.group(a.GroupID, p)
		}
	}
	return p
}

// headers is p as it leaves the switch: without the metadata, registers
// and tracker fields, which are the switch's alone.
func (p Packet) headers() Packet {
	p.Metadata, p.Regs = 0, [numRegs]uint32{}
	p.CTState, p.CTZone, p.CTMark, p.CTLabel = 0, 0, 0, [16]byte{}
	return p
}

// group runs a copy of p through group id's buckets.
func (x *run) group(id uint32, p Packet) {
	g := x.t.groups[id]
	if g == nil {
		return
	}
	switch g.typ {
	case ofp.GroupTypeAll:
		for _, b := range g.buckets {
			x.actions(b.Actions, p)
		}
	case ofp.GroupTypeIndirect:
		x.actions(g.buckets[0].Actions, p)
	case ofp.GroupTypeSelect:
		if i, ok := x.choose(g, &p); ok {
			x.r.Selected = append(x.r.Selected, Selection{GroupID: id, Bucket: i})
			x.actions(g.buckets[i].Actions, p)
		}
	}
}
