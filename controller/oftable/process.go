package oftable

import (
	"errors"
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Result is where Process sent a packet.
type Result struct {
	Flow     *Flow       // the last flow that matched; nil when none did
	Path     []Flow      // every flow that matched, in the order they did, across recirculations
	Out      Packet      // the packet as the last pass through the tables left it
	Ports    []uint32    // outputs in order, as Outputs has them; none: dropped
	Outputs  []Output    // every output, with the packet it sent
	Selected []Selection // the bucket each select group on the way picked, in order
	Err      error       // why the model stopped before the packet's end (ErrLoop), or nil
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

// ErrLoop is Result.Err when a packet recirculated more often than the
// model follows (maxPasses), as a datapath drops a packet that recirculates
// without end.
var ErrLoop = errors.New("oftable: the packet recirculates without end")

// maxPasses is how many passes through the tables (the first and each
// recirculation) the model follows for one packet.
const maxPasses = 64

// Process runs p through the switch, from table 0, as Open vSwitch does:
//
//   - A flow's apply-actions run in order, then its write_metadata, then
//     its goto_table carries the packet on. A miss, or a last flow without
//     goto_table, ends the pass: OpenFlow 1.3 has no implicit punt
//     (install a table-miss flow to get one).
//   - group runs a copy of the packet through the group's buckets: every
//     bucket for an all group, the one for an indirect group, and for a
//     select group the one Select picks. What a bucket does to its copy
//     stays in the bucket.
//   - ct sends the packet through the tracker (see Tracker), which commits
//     what it must at once. With a recirculation table, the packet as the
//     tracker returns it, with ct_state, ct_zone, ct_mark and ct_label,
//     goes through the tables again from that table once the current pass
//     ends (registers and metadata kept); the packet the current actions
//     go on with is untracked: those fields are cleared.
//
// The tracker keeps what a packet committed, so a test sends a
// connection's packets one after another: the SYN, then the rest and the
// replies. Process follows at most maxPasses passes (Result.Err then is
// ErrLoop).
func (t *Table) Process(p Packet) Result {
	return t.process(p, &t.ct, func(g *group, p *Packet) (int, bool) { return g.pick(p) })
}

// ProcessAll returns every way p can go: one Result per combination of
// buckets the select groups on its way may pick (buckets weighing 0
// never), each with Selected naming them, in bucket order. Each runs on a
// copy of the tracker, which ProcessAll leaves as it was. A test asks with
// it where a new connection may land, whatever the hash.
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
		ct := t.ct.clone()
		results = append(results, t.process(p, &ct, choose))
	}
	return results
}

// Tracker returns the switch's connection tracker, for tests that look at
// or change what it holds.
func (t *Table) Tracker() *Tracker { return &t.ct }

// chooser picks the bucket of select group g for p, or false for none.
type chooser func(g *group, p *Packet) (int, bool)

// run is one packet's way through a table.
type run struct {
	t      *Table
	ct     *Tracker
	choose chooser
	r      Result
	queue  []recirculation
}

// recirculation is a packet the tracker sends back to a table.
type recirculation struct {
	p     Packet
	table uint8
}

// PacketOut runs the actions of a packet-out on p, as Open vSwitch runs
// them on the packet a controller sends: outside the tables first, then
// through them from the table of each recirculation they ask for (a ct
// with a table), as Process does.
func (t *Table) PacketOut(p Packet, actions []ofp.Action) Result {
	x := &run{t: t, ct: &t.ct, choose: func(g *group, p *Packet) (int, bool) { return g.pick(p) }}
	x.r.Out = x.actions(actions, p)
	return x.recirculate()
}

func (t *Table) process(p Packet, ct *Tracker, choose chooser) Result {
	x := &run{t: t, ct: ct, choose: choose}
	x.r.Out = p
	x.queue = append(x.queue, recirculation{p, 0})
	return x.recirculate()
}

// recirculate runs the packets queued for the tables through them, and
// what they queue in turn, up to maxPasses passes.
func (x *run) recirculate() Result {
	for passes := 0; len(x.queue) > 0; passes++ {
		if passes == maxPasses {
			x.r.Err = ErrLoop
			break
		}
		next := x.queue[0]
		x.queue = x.queue[1:]
		x.r.Out = x.pass(next.p, next.table)
	}
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
		case ofp.ActionMultipath:
			p.multipath(a)
		case ofp.ActionGroup:
			x.group(a.GroupID, p)
		case ofp.ActionCT:
			tracked := x.ct.track(zoneOf(a, &p), a, p)
			if a.Table != ofp.CTRecircNone {
				x.queue = append(x.queue, recirculation{tracked, a.Table})
			}
			p.clearCT()
		case ofp.ActionCTClear:
			p.clearCT()
		}
	}
	return p
}

// headers is p as it leaves the switch: without the metadata, registers
// and tracker fields, which are the switch's alone.
func (p Packet) headers() Packet {
	p.Metadata, p.Regs = 0, [numRegs]uint32{}
	p.clearCT()
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
