package model

import (
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

func StrictDelete(f *ofp.FlowStats) ofp.FlowMod {
	return ofp.FlowMod{Command: ofp.FlowDeleteStrict, TableID: f.TableID, Priority: f.Priority, Match: f.Match,
		BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}
}

// Applied returns the actions of a flow's apply-actions instruction.
func Applied(is []ofp.Instruction) []ofp.Action {
	for _, in := range is {
		if a, ok := in.(ofp.InstructionApplyActions); ok {
			return a.Actions
		}
	}
	return nil
}

func SetField(actions []ofp.Action, f ofp.OXMField) (ofp.OXM, bool) {
	for _, a := range actions {
		if sf, ok := a.(ofp.ActionSetField); ok && sf.Field.Class == ofp.OXMClassBasic && sf.Field.Field == f {
			return sf.Field, true
		}
	}
	return ofp.OXM{}, false
}

func OutputPort(actions []ofp.Action) (uint32, bool) {
	for _, a := range slices.Backward(actions) {
		if o, ok := a.(ofp.ActionOutput); ok {
			return o.Port, true
		}
	}
	return 0, false
}

func GroupOf(actions []ofp.Action) (uint32, bool) {
	for _, a := range actions {
		if g, ok := a.(ofp.ActionGroup); ok {
			return g.GroupID, true
		}
	}
	return 0, false
}
