package model

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// tableSpec describes one table of the pipeline (the ids and priorities
// are in flows.go): its name, whether its packets can come back from the
// connection tracker, so that its rows may match the tracker's fields, and
// the tables its rows may send a packet to, by goto_table or by a ct that
// recirculates.
type tableSpec struct {
	name    string
	tracked bool
	next    []uint8
}

// pipeline is every table sdnlb installs rows in, by id: every flow-mod
// the decision sends is checked against it, so a look-up is an index.
var pipeline = [...]tableSpec{
	TableClassify:   {name: "classify", next: []uint8{TableTracked, TableFromMember, tableNDAnswer, TableSources, TableL2}},
	TableTracked:    {name: "tracked", tracked: true, next: []uint8{TableTracked, TableToMember, TableSlots, TableL2}}, // itself: once, with a connection's end committed
	TableToMember:   {name: "to-member", tracked: true, next: []uint8{TableL2}},
	TableFromMember: {name: "from-member", tracked: true, next: []uint8{TableL2}},
	tableNDAnswer:   {name: "nd-answer"},
	TableSlots:      {name: "slots", tracked: true, next: bucketNext},
	TableSources:    {name: "sources", next: []uint8{TableL2}},
	TableL2:         {name: "l2", next: []uint8{TableFabric}},
	TableFabric:     {name: "fabric"},
}

// bucketNext is where a select group's buckets, and the slot rows of a
// VIP dispatched by client, may recirculate to: they commit a new
// connection and send it back to TableTracked.
var bucketNext = []uint8{TableTracked}

// TableName names table id as the pipeline does, or by its number.
func TableName(id uint8) string {
	if t, ok := tableOf(id); ok {
		return t.name
	}
	return strconv.Itoa(int(id))
}

// CheckFlow reports how a flow-mod sdnlb sends breaks the pipeline: a
// table that is not in it, a row that matches the tracker's fields where
// no packet comes back from the tracker, or one that sends packets to a
// table its own may not go to. Deletes are not checked.
func CheckFlow(fm *ofp.FlowMod) error {
	if fm.Command == ofp.FlowDelete || fm.Command == ofp.FlowDeleteStrict {
		return nil
	}
	t, ok := tableOf(fm.TableID)
	if !ok {
		return fmt.Errorf("table %d is not in the pipeline", fm.TableID)
	}
	if !t.tracked {
		for i := range fm.Match.OXMs {
			if o := &fm.Match.OXMs[i]; TrackerField(o) {
				m := ofp.Match{OXMs: []ofp.OXM{*o}}
				return fmt.Errorf("table %s matches %s, but no packet comes back to it from the tracker", t.name, m.String())
			}
		}
	}
	for _, in := range fm.Instructions {
		var next []uint8
		switch in := in.(type) {
		case ofp.InstructionGotoTable:
			next = []uint8{in.TableID}
		case *ofp.InstructionGotoTable:
			next = []uint8{in.TableID}
		case ofp.InstructionApplyActions:
			next = recirculations(in.Actions)
		case *ofp.InstructionApplyActions:
			next = recirculations(in.Actions)
		}
		for _, n := range next {
			if !slices.Contains(t.next, n) {
				return fmt.Errorf("table %s sends to table %s, which it may not", t.name, TableName(n))
			}
		}
	}
	return nil
}

func tableOf(id uint8) (tableSpec, bool) {
	if int(id) >= len(pipeline) || pipeline[id].name == "" {
		return tableSpec{}, false
	}
	return pipeline[id], true
}

// trackerFields are the connection tracker's fields a row may match.
var trackerFields = [...]ofp.NXMHeader{ofp.NXMCTState, ofp.NXMCTMark, ofp.NXMCTLabel}

// TrackerField reports whether o is one of the connection tracker's
// fields.
func TrackerField(o *ofp.OXM) bool {
	for _, h := range trackerFields {
		if o.Class == h.Class() && o.Field == h.Field() {
			return true
		}
	}
	return false
}

// CheckGroup reports a group-mod whose buckets recirculate elsewhere than
// bucketNext.
func CheckGroup(gm *ofp.GroupMod) error {
	for i, b := range gm.Buckets {
		for _, n := range recirculations(b.Actions) {
			if !slices.Contains(bucketNext, n) {
				return fmt.Errorf("group %d bucket %d sends to table %s, which buckets may not", gm.GroupID, i, TableName(n))
			}
		}
	}
	return nil
}

// recirculations are the tables the ct actions in actions send the packet
// to.
func recirculations(actions []ofp.Action) []uint8 {
	var tables []uint8
	for _, a := range actions {
		switch a := a.(type) {
		case ofp.ActionCT:
			if a.Table != ofp.CTRecircNone {
				tables = append(tables, a.Table)
			}
		case *ofp.ActionCT:
			if a.Table != ofp.CTRecircNone {
				tables = append(tables, a.Table)
			}
		}
	}
	return tables
}
