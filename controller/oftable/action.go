package oftable

import (
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// ApplyActions is what a packet-out's actions, or a flow's apply-actions,
// do to p: set-fields and moves rewrite it in order and outputs name the
// ports it leaves by, in order. Out is the packet after every action, so
// a set-field after an output shows in Out although that output sent the
// packet before it. OFPP_IN_PORT becomes p.InPort; the other reserved
// ports (CONTROLLER, FLOOD, ...) stay as their numbers. Actions the model
// does not execute (groups, VLAN push and pop, TTL, queues, moves of part
// of a field) are skipped, as is a set-field or move of a header p lacks;
// Apply rejects flows that use them, and CheckActions reports them for a
// packet-out.
func ApplyActions(actions []ofp.Action, p Packet) (out Packet, ports []uint32) {
	in := p.InPort
	for _, a := range actions {
		switch a := a.(type) {
		case ofp.ActionOutput:
			ports = append(ports, resolvePort(a.Port, in))
		case *ofp.ActionOutput:
			ports = append(ports, resolvePort(a.Port, in))
		case ofp.ActionSetField:
			p.set(&a.Field)
		case *ofp.ActionSetField:
			p.set(&a.Field)
		case ofp.ActionRegMove:
			p.move(a)
		case *ofp.ActionRegMove:
			p.move(*a)
		}
	}
	return p, ports
}

func resolvePort(port, in uint32) uint32 {
	if port == ofp.PortInPort {
		return in
	}
	return port
}

// CheckActions reports the first action ApplyActions would not execute
// faithfully: anything but output, an unmasked set-field of a modelled
// field and a move between modelled fields within their bits, and outputs
// to port 0 or ANY.
func CheckActions(actions []ofp.Action) error {
	for _, a := range actions {
		if err := checkAction(a, nil); err != nil {
			return err
		}
	}
	return nil
}

// checkAction checks one action; with a match, a set-field or move must
// also have its fields' prerequisites in it, as a switch checks a flow's
// actions.
func checkAction(a ofp.Action, m *ofp.Match) error {
	var o ofp.OXM
	switch a := a.(type) {
	case ofp.ActionOutput:
		return checkOutput(a.Port)
	case *ofp.ActionOutput:
		return checkOutput(a.Port)
	case ofp.ActionRegMove:
		return checkMove(a, m)
	case *ofp.ActionRegMove:
		return checkMove(*a, m)
	case ofp.ActionSetField:
		o = a.Field
	case *ofp.ActionSetField:
		o = a.Field
	default:
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadType, "action %s is not modelled", ofp.FormatActions([]ofp.Action{a}))
	}
	f := lookupField(&o)
	switch {
	case f.ctWritable:
		return reject(ofp.ErrTypeBadAction, badActionBadSetArgument, "set_field of %s outside ct", describe(o))
	case !f.settable:
		return reject(ofp.ErrTypeBadAction, badActionBadSetType, "set_field of %s is not modelled", describe(o))
	case o.HasMask:
		return reject(ofp.ErrTypeBadAction, badActionBadSetArgument, "set_field of %s has a mask", describe(o))
	}
	if m != nil {
		if err := checkPrereq(f, m); err != nil {
			return reject(ofp.ErrTypeBadAction, badActionMatchInconsistent, "set_field of %s %v in the match", describe(o), err)
		}
	}
	return nil
}

func checkMove(a ofp.ActionRegMove, m *ofp.Match) error {
	name := ofp.FormatActions([]ofp.Action{a})
	src, srcOK := headerField(a.Src)
	dst, dstOK := headerField(a.Dst)
	if !srcOK || !dstOK {
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadType, "action %s is not modelled", name)
	}
	if _, _, ok := movedFields(a); !ok {
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "%s: the bits lie outside the fields", name)
	}
	switch {
	case fields[dst].ctWritable:
		return reject(ofp.ErrTypeBadAction, badActionBadSetArgument, "%s writes a field only ct may write", name)
	case !fields[dst].settable:
		return reject(ofp.ErrTypeBadAction, badActionBadSetArgument, "%s writes a field no action may rewrite", name)
	}
	if m != nil {
		for _, f := range []ofp.OXMField{src, dst} {
			if err := checkPrereq(fields[f], m); err != nil {
				return reject(ofp.ErrTypeBadAction, badActionMatchInconsistent, "%s %v in the match", name, err)
			}
		}
	}
	return nil
}

func checkOutput(port uint32) error {
	if port == 0 || port == ofp.PortAny {
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadOutPort, "output to port %s", portString(port))
	}
	return nil
}

// checkInstructions accepts what Process executes: apply-actions whose
// actions are modelled and consistent with the flow's match, a
// write_metadata, and a goto_table to a later table than the flow's own.
func checkInstructions(is []ofp.Instruction, m *ofp.Match, table uint8) error {
	for _, in := range is {
		if _, ok := writeMetadata(in); ok {
			continue
		}
		if next, ok := gotoTable(in); ok {
			if next <= table {
				return reject(ofp.ErrTypeBadInstruction, badInstructionBadTableID, "goto_table:%d does not lead past table %d", next, table)
			}
			continue
		}
		actions, ok := applyActions(in)
		if !ok {
			return reject(ofp.ErrTypeBadInstruction, badInstructionUnsupInst, "instruction %s is not modelled", ofp.FormatInstructions([]ofp.Instruction{in}))
		}
		for _, a := range actions {
			if err := checkAction(a, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyActions returns the actions of an apply-actions instruction.
func applyActions(in ofp.Instruction) ([]ofp.Action, bool) {
	switch in := in.(type) {
	case ofp.InstructionApplyActions:
		return in.Actions, true
	case *ofp.InstructionApplyActions:
		return in.Actions, true
	}
	return nil, false
}

// writeMetadata returns a write_metadata instruction.
func writeMetadata(in ofp.Instruction) (ofp.InstructionWriteMetadata, bool) {
	switch in := in.(type) {
	case ofp.InstructionWriteMetadata:
		return in, true
	case *ofp.InstructionWriteMetadata:
		return *in, true
	}
	return ofp.InstructionWriteMetadata{}, false
}

// gotoTable returns the table a goto_table instruction leads to.
func gotoTable(in ofp.Instruction) (uint8, bool) {
	switch in := in.(type) {
	case ofp.InstructionGotoTable:
		return in.TableID, true
	case *ofp.InstructionGotoTable:
		return in.TableID, true
	}
	return 0, false
}

// copyInstructions deep-copies instructions checkInstructions accepted,
// as values, so the table never aliases the caller's flow-mod.
func copyInstructions(is []ofp.Instruction) []ofp.Instruction {
	if len(is) == 0 {
		return nil
	}
	out := make([]ofp.Instruction, len(is))
	for i, in := range is {
		if next, ok := gotoTable(in); ok {
			out[i] = ofp.InstructionGotoTable{TableID: next}
			continue
		}
		if w, ok := writeMetadata(in); ok {
			out[i] = w
			continue
		}
		actions, _ := applyActions(in)
		copied := make([]ofp.Action, len(actions))
		for j, a := range actions {
			switch a := a.(type) {
			case *ofp.ActionOutput:
				copied[j] = *a
			case *ofp.ActionSetField:
				copied[j] = *a
			case *ofp.ActionRegMove:
				copied[j] = *a
			default:
				copied[j] = a // a value: ActionOutput, ActionSetField or ActionRegMove
			}
		}
		out[i] = ofp.InstructionApplyActions{Actions: copied}
	}
	return out
}

// outputsTo reports whether instructions send to port, as the out_port
// filter of a delete asks.
func outputsTo(is []ofp.Instruction, port uint32) bool {
	for _, in := range is {
		actions, _ := applyActions(in)
		for _, a := range actions {
			if out, ok := a.(ofp.ActionOutput); ok && out.Port == port {
				return true
			}
		}
	}
	return false
}
