// Package oftable models an Open vSwitch switch speaking OpenFlow 1.3 in
// memory, so tests can ask where a packet goes without a socket or a
// switch: Apply and ApplyGroup take the controller's flow-mods and
// group-mods as a switch would, Process runs a packet through the tables
// from table 0, through groups and the connection tracker, and says where
// it leaves, rewritten how; Lines and GroupLines render the tables as
// ovs-ofctl dumps them. A Fabric joins switches by links, to follow a
// packet across them.
//
// The model is deliberately partial, and says so instead of guessing: a
// flow-mod whose match uses a field Packet does not carry, or whose
// instructions go beyond apply-actions (output, set-field, move, group,
// ct, ct_clear), write_metadata and goto_table, is rejected with an error
// naming the part. Timeouts are stored but never expire; there are no
// counters, buffers, meters or fast failover groups. Tracker says what of
// the connection tracker is modelled. Packet carries Ethernet, ARP, and
// IPv4 or IPv6 with TCP, UDP, ICMP or ICMPv6 (neighbour discovery read as
// Open vSwitch reads it); it holds no checksums, so a rewrite has none to
// recompute.
package oftable

import (
	"cmp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Flow is one flow entry. Flows a Table returns share their slices with
// it: read them, do not modify them.
type Flow struct {
	Cookie                   uint64
	TableID                  uint8
	Priority                 uint16
	IdleTimeout, HardTimeout uint16
	Flags                    ofp.FlowModFlags
	Match                    ofp.Match
	Instructions             []ofp.Instruction
}

// storedFlags are the flags a flow keeps; check_overlap and reset_counts
// only direct the flow-mod that carries them.
const storedFlags = ofp.FlagSendFlowRem | ofp.FlagNoPktCounts | ofp.FlagNoBytCounts

var flagNames = []struct {
	flag ofp.FlowModFlags
	name string
}{
	{ofp.FlagSendFlowRem, "send_flow_rem"}, {ofp.FlagCheckOverlap, "check_overlap"},
	{ofp.FlagResetCounts, "reset_counts"}, {ofp.FlagNoPktCounts, "no_packet_counts"},
	{ofp.FlagNoBytCounts, "no_byte_counts"},
}

// String renders f as ovs-ofctl dump-flows prints it, without duration
// and counters, for example
// "cookie=0x2, priority=1000, idle_timeout=60, send_flow_rem, tcp,nw_src=10.0.0.1,tp_src=4000 actions=output:3".
// table= appears for tables other than 0 only.
func (f Flow) String() string {
	parts := []string{"cookie=0x" + strconv.FormatUint(f.Cookie, 16)}
	if f.TableID != 0 {
		parts = append(parts, "table="+strconv.Itoa(int(f.TableID)))
	}
	parts = append(parts, "priority="+strconv.Itoa(int(f.Priority)))
	if f.IdleTimeout != 0 {
		parts = append(parts, "idle_timeout="+strconv.Itoa(int(f.IdleTimeout)))
	}
	if f.HardTimeout != 0 {
		parts = append(parts, "hard_timeout="+strconv.Itoa(int(f.HardTimeout)))
	}
	for _, fl := range flagNames {
		if f.Flags&fl.flag != 0 {
			parts = append(parts, fl.name)
		}
	}
	if m := f.Match.String(); m != "" {
		parts = append(parts, m)
	}
	return strings.Join(parts, ", ") + " actions=" + ofp.FormatInstructions(f.Instructions)
}

// entry is a flow and its rendering, which orders flows of equal priority.
type entry struct {
	flow Flow
	line string
}

// Table is the flow tables, group table and connection tracker of one
// switch. The zero value is empty and ready; a Table is not safe for
// concurrent use.
type Table struct {
	flows  []entry // by table, then priority descending, then line
	groups map[uint32]*group
	ct     Tracker
}

// New returns an empty table.
func New() *Table { return &Table{} }

// Apply applies one flow-mod as an OpenFlow 1.3 switch does, or rejects
// it, changing nothing, with an error wrapping the *ofp.ErrorMsg a switch
// would answer with:
//
//   - ADD replaces a flow of the same table with the identical match and
//     priority, keeping nothing of it (a replaced flow is not "removed").
//     With check_overlap it fails on an overlapping flow of that priority.
//   - MODIFY and MODIFY_STRICT replace the instructions of the flows they
//     select; they never add one.
//   - DELETE and DELETE_STRICT remove the flows they select and return
//     them, in Flows order, whatever their flags: a caller modelling
//     flow-removed messages keeps those with ofp.FlagSendFlowRem.
//
// Non-strict commands select every flow whose match is at least as
// specific as fm's, strict ones the flow with fm's exact match and
// priority. Modify and delete select only flows whose cookie equals fm's
// under a non-zero CookieMask; delete also honours OutPort and OutGroup
// unless they are ANY, and TableID ofp.TableAll. BufferID is ignored.
// Apply copies what it keeps: fm may be reused afterwards.
func (t *Table) Apply(fm *ofp.FlowMod) (removed []Flow, err error) {
	if err := checkMatch(&fm.Match); err != nil {
		return nil, err
	}
	switch fm.Command {
	case ofp.FlowAdd:
		return nil, t.add(fm)
	case ofp.FlowModify, ofp.FlowModifyStrict:
		return nil, t.modify(fm)
	case ofp.FlowDelete, ofp.FlowDeleteStrict:
		return t.delete(fm), nil
	}
	return nil, reject(ofp.ErrTypeFlowModFailed, ofp.FlowModFailedBadCommand, "flow-mod command %d", fm.Command)
}

func (t *Table) add(fm *ofp.FlowMod) error {
	if fm.TableID == ofp.TableAll {
		return reject(ofp.ErrTypeFlowModFailed, ofp.FlowModFailedBadTableID, "add to table ALL")
	}
	if err := t.checkInstructions(fm.Instructions, &fm.Match, fm.TableID); err != nil {
		return err
	}
	if fm.Flags&ofp.FlagCheckOverlap != 0 {
		for _, e := range t.flows {
			if e.flow.TableID == fm.TableID && e.flow.Priority == fm.Priority && overlaps(&e.flow.Match, &fm.Match) {
				return reject(ofp.ErrTypeFlowModFailed, ofp.FlowModFailedOverlap, "check_overlap: %s overlaps", e.line)
			}
		}
	}
	t.flows = slices.DeleteFunc(t.flows, func(e entry) bool {
		return e.flow.TableID == fm.TableID && e.flow.Priority == fm.Priority && sameMatch(&e.flow.Match, &fm.Match)
	})
	f := Flow{
		Cookie: fm.Cookie, TableID: fm.TableID, Priority: fm.Priority,
		IdleTimeout: fm.IdleTimeout, HardTimeout: fm.HardTimeout, Flags: fm.Flags & storedFlags,
		Match:        ofp.Match{OXMs: slices.Clone(fm.Match.OXMs)},
		Instructions: copyInstructions(fm.Instructions),
	}
	t.flows = append(t.flows, entry{f, f.String()})
	t.sort()
	return nil
}

func (t *Table) modify(fm *ofp.FlowMod) error {
	if fm.TableID == ofp.TableAll {
		return reject(ofp.ErrTypeFlowModFailed, ofp.FlowModFailedBadTableID, "modify in table ALL")
	}
	var selected []int
	for i := range t.flows {
		if selects(fm, &t.flows[i].flow, false) {
			if err := t.checkInstructions(fm.Instructions, &t.flows[i].flow.Match, t.flows[i].flow.TableID); err != nil {
				return err
			}
			selected = append(selected, i)
		}
	}
	for _, i := range selected {
		e := &t.flows[i]
		e.flow.Instructions = copyInstructions(fm.Instructions)
		e.line = e.flow.String()
	}
	t.sort()
	return nil
}

func (t *Table) delete(fm *ofp.FlowMod) (removed []Flow) {
	t.flows = slices.DeleteFunc(t.flows, func(e entry) bool {
		if selects(fm, &e.flow, true) {
			removed = append(removed, e.flow)
			return true
		}
		return false
	})
	return removed
}

// selects reports whether modify or delete fm applies to f.
func selects(fm *ofp.FlowMod, f *Flow, isDelete bool) bool {
	strict := fm.Command == ofp.FlowModifyStrict || fm.Command == ofp.FlowDeleteStrict
	switch {
	case fm.TableID != ofp.TableAll && fm.TableID != f.TableID:
		return false
	case (f.Cookie^fm.Cookie)&fm.CookieMask != 0:
		return false
	case strict && (f.Priority != fm.Priority || !sameMatch(&f.Match, &fm.Match)):
		return false
	case !strict && !covers(&fm.Match, &f.Match):
		return false
	case isDelete && fm.OutPort != ofp.PortAny && !outputsTo(f.Instructions, fm.OutPort):
		return false
	case isDelete && fm.OutGroup != ofp.GroupAny && !sendsToGroup(f.Instructions, fm.OutGroup):
		return false
	}
	return true
}

func (t *Table) sort() {
	slices.SortStableFunc(t.flows, func(a, b entry) int {
		return cmp.Or(
			cmp.Compare(a.flow.TableID, b.flow.TableID),
			cmp.Compare(b.flow.Priority, a.flow.Priority),
			strings.Compare(a.line, b.line),
		)
	})
}

// Lookup returns the flow of table 0 that p matches; see LookupIn.
func (t *Table) Lookup(p Packet) (Flow, bool) { return t.LookupIn(0, p) }

// LookupIn returns the flow of table that p matches: the one of highest
// priority and, where flows of equal priority overlap (which OpenFlow
// leaves undefined), the first of them in Flows order, that is the one
// whose rendered line sorts first.
func (t *Table) LookupIn(table uint8, p Packet) (Flow, bool) {
	for i := range t.flows {
		f := &t.flows[i].flow
		if f.TableID == table && matches(&f.Match, &p) {
			return *f, true
		}
	}
	return Flow{}, false
}

// Flows returns every flow, by table, then priority descending, then
// rendered line.
func (t *Table) Flows() []Flow {
	flows := make([]Flow, len(t.flows))
	for i, e := range t.flows {
		flows[i] = e.flow
	}
	return flows
}

// Lines returns every flow rendered by Flow.String, sorted, for tests
// that compare a table with the lines they expect.
func (t *Table) Lines() []string {
	lines := make([]string, len(t.flows))
	for i, e := range t.flows {
		lines[i] = e.line
	}
	sort.Strings(lines)
	return lines
}
