package oftable

import (
	"github.com/sdnlb/sdnlb/controller/flowhash"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// ApplyActions is what a packet-out's actions, or a flow's apply-actions,
// do to p on their own, without a switch's groups and connection tracker:
// set-fields and moves rewrite it in order, ct_clear clears its tracker
// fields and outputs name the ports it leaves by, in order. Out is the
// packet after every action, so a set-field after an output shows in Out
// although that output sent the packet before it. OFPP_IN_PORT becomes
// p.InPort; the other reserved ports (CONTROLLER, FLOOD, ...) stay as
// their numbers. Actions it does not execute (group and ct, which need a
// Table; VLAN push and pop, TTL, queues) are skipped, as is a set-field or
// move of a header p lacks; CheckActions reports them.
func ApplyActions(actions []ofp.Action, p Packet) (out Packet, ports []uint32) {
	for _, a := range actions {
		switch a := deref(a).(type) {
		case ofp.ActionOutput:
			ports = append(ports, resolvePort(a.Port, p.InPort))
		case ofp.ActionSetField:
			p.set(&a.Field)
		case ofp.ActionRegMove:
			p.move(a)
		case ofp.ActionMultipath:
			p.multipath(a)
		case ofp.ActionCTClear:
			p.clearCT()
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
// faithfully: anything but output, ct_clear, an unmasked set-field of a
// modelled field and a move between modelled fields within their bits,
// and outputs to port 0 or ANY.
func CheckActions(actions []ofp.Action) error {
	for _, a := range actions {
		if err := checkAction(a, actionContext{stateless: true}); err != nil {
			return err
		}
	}
	return nil
}

// actionContext is where an action is checked.
type actionContext struct {
	// match is the flow's: a set-field or move needs its fields'
	// prerequisites there, a ct an IP eth_type, as a switch checks a
	// flow's actions. nil in a bucket or packet-out, whose packets are
	// not known.
	match *ofp.Match
	// hasGroup reports whether a group exists; nil where a group action
	// is not executed (a bucket: groups do not chain in the model).
	hasGroup func(id uint32) bool
	// stateless: ApplyActions, which executes no ct.
	stateless bool
	// inCT: the actions nested in a ct, which write the connection's
	// ct_mark and ct_label and nothing else.
	inCT bool
}

// checkAction checks one action where ctx says it is.
func checkAction(a ofp.Action, ctx actionContext) error {
	switch a := deref(a).(type) {
	case ofp.ActionSetField:
		return checkSetField(a.Field, ctx)
	case ofp.ActionRegMove:
		return checkMove(a, ctx)
	case ofp.ActionNAT:
		return notModelled(a)
	}
	if ctx.inCT {
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "%s inside ct: only set_field and move into ct_mark or ct_label may be there",
			ofp.FormatActions([]ofp.Action{a}))
	}
	switch a := deref(a).(type) {
	case ofp.ActionOutput:
		return checkOutput(a.Port)
	case ofp.ActionCTClear:
		return nil
	case ofp.ActionMultipath:
		return checkMultipath(a)
	case ofp.ActionFinTimeout:
		return checkFinTimeout(a, ctx)
	case ofp.ActionGroup:
		switch {
		case ctx.hasGroup == nil:
			return notModelled(a)
		case !ctx.hasGroup(a.GroupID):
			return reject(ofp.ErrTypeBadAction, badActionBadOutGroup, "group:%d: no such group", a.GroupID)
		}
		return nil
	case ofp.ActionCT:
		if ctx.stateless {
			return notModelled(a)
		}
		return checkCT(a, ctx)
	}
	return notModelled(a)
}

func notModelled(a ofp.Action) error {
	return reject(ofp.ErrTypeBadAction, ofp.BadActionBadType, "action %s is not modelled", ofp.FormatActions([]ofp.Action{a}))
}

func checkSetField(o ofp.OXM, ctx actionContext) error {
	f := lookupField(&o)
	switch {
	case ctx.inCT && !f.ctWritable:
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "set_field of %s inside ct: only ct_mark and ct_label may be set there", describe(o))
	case !ctx.inCT && f.ctWritable:
		return reject(ofp.ErrTypeBadAction, badActionBadSetArgument, "set_field of %s outside ct", describe(o))
	case !ctx.inCT && !f.settable:
		return reject(ofp.ErrTypeBadAction, badActionBadSetType, "set_field of %s is not modelled", describe(o))
	case o.HasMask:
		return reject(ofp.ErrTypeBadAction, badActionBadSetArgument, "set_field of %s has a mask", describe(o))
	}
	if ctx.match != nil {
		if err := checkPrereq(f, ctx.match); err != nil {
			return reject(ofp.ErrTypeBadAction, badActionMatchInconsistent, "set_field of %s %v in the match", describe(o), err)
		}
	}
	return nil
}

// checkMultipath accepts the multipath the model executes: a hash of the
// source address (or of the connection, both ways alike) modulo the
// links, into a register's bits wide enough for every link.
func checkMultipath(a ofp.ActionMultipath) error {
	name := ofp.FormatActions([]ofp.Action{a})
	dst, ok := headerField(a.Dst)
	switch {
	case !flowhash.Supported(a):
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadType, "action %s is not modelled", name)
	case !ok || dst < fieldReg0 || dst >= fieldReg0+numRegs || a.NBits == 0 || int(a.DstOfs)+int(a.NBits) > 32 ||
		a.NBits < 16 && int(a.MaxLink) >= 1<<a.NBits:
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "%s: the links do not fit the register's bits", name)
	}
	return nil
}

// checkFinTimeout accepts a fin_timeout on a flow that matches TCP, as
// Open vSwitch does. It changes no packet; the table keeps no timeouts.
func checkFinTimeout(a ofp.ActionFinTimeout, ctx actionContext) error {
	if ctx.match == nil {
		return nil
	}
	if proto, ok := ctx.match.Get(ofp.OXMIPProto); !ok || proto.Uint() != uint64(ofp.IPProtoTCP) {
		return reject(ofp.ErrTypeBadAction, badActionMatchInconsistent, "%s on a flow that does not match TCP", ofp.FormatActions([]ofp.Action{a}))
	}
	return nil
}

func checkMove(a ofp.ActionRegMove, ctx actionContext) error {
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
	case ctx.inCT && !fields[dst].ctWritable:
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "%s inside ct: only ct_mark and ct_label may be written there", name)
	case !ctx.inCT && fields[dst].ctWritable:
		return reject(ofp.ErrTypeBadAction, badActionBadSetArgument, "%s writes a field only ct may write", name)
	case !ctx.inCT && !fields[dst].settable:
		return reject(ofp.ErrTypeBadAction, badActionBadSetArgument, "%s writes a field no action may rewrite", name)
	}
	if ctx.match != nil {
		for _, f := range []ofp.OXMField{src, dst} {
			if err := checkPrereq(fields[f], ctx.match); err != nil {
				return reject(ofp.ErrTypeBadAction, badActionMatchInconsistent, "%s %v in the match", name, err)
			}
		}
	}
	return nil
}

// checkCT accepts the ct actions the tracker models: commit (and force),
// a zone or a zone field, a recirculation table or none, and inside it
// set-fields and moves of ct_mark and ct_label, which need commit. A
// flow's match must name IPv4 or IPv6, as Open vSwitch requires.
func checkCT(a ofp.ActionCT, ctx actionContext) error {
	name := ofp.FormatActions([]ofp.Action{a})
	switch {
	case a.Flags&^(ofp.CTCommit|ofp.CTForce) != 0 || a.Flags&(ofp.CTCommit|ofp.CTForce) == ofp.CTForce:
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "%s: bad flags %#x", name, a.Flags)
	case a.Alg != 0:
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadType, "%s: helpers (alg) are not modelled", name)
	case len(a.Actions) > 0 && a.Flags&ofp.CTCommit == 0:
		return reject(ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "%s: actions inside ct need commit", name)
	}
	if a.ZoneField != 0 {
		f, ok := headerField(a.ZoneField)
		if !ok || int(a.ZoneOfs)+16 > 8*width(f) {
			return reject(ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "%s: the zone field is not modelled or too short", name)
		}
		if ctx.match != nil {
			if err := checkPrereq(fields[f], ctx.match); err != nil {
				return reject(ofp.ErrTypeBadAction, badActionMatchInconsistent, "%s %v in the match", name, err)
			}
		}
	}
	if ctx.match != nil {
		if err := checkPrereq(field{ethTypes: anyIP}, ctx.match); err != nil {
			return reject(ofp.ErrTypeBadAction, badActionMatchInconsistent, "%s %v in the match", name, err)
		}
	}
	inner := actionContext{match: ctx.match, inCT: true}
	for _, n := range a.Actions {
		if err := checkAction(n, inner); err != nil {
			return err
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
// actions are modelled and consistent with the flow's match (and whose
// groups exist), a write_metadata, and a goto_table to a later table than
// the flow's own.
func (t *Table) checkInstructions(is []ofp.Instruction, m *ofp.Match, table uint8) error {
	ctx := actionContext{match: m, hasGroup: func(id uint32) bool { return t.groups[id] != nil }}
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
			if err := checkAction(a, ctx); err != nil {
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

// deref returns a modelled action given by pointer as its value, so one
// switch on values handles both.
func deref(a ofp.Action) ofp.Action {
	switch a := a.(type) {
	case *ofp.ActionOutput:
		return *a
	case *ofp.ActionSetField:
		return *a
	case *ofp.ActionRegMove:
		return *a
	case *ofp.ActionMultipath:
		return *a
	case *ofp.ActionGroup:
		return *a
	case *ofp.ActionCT:
		return *a
	case *ofp.ActionCTClear:
		return *a
	case *ofp.ActionFinTimeout:
		return *a
	case *ofp.ActionNAT:
		return *a
	}
	return a
}

// copyActions deep-copies checked actions as values, so the table never
// aliases the caller's flow-mod or group-mod.
func copyActions(actions []ofp.Action) []ofp.Action {
	if len(actions) == 0 {
		return nil
	}
	copied := make([]ofp.Action, len(actions))
	for i, a := range actions {
		a = deref(a)
		if ct, ok := a.(ofp.ActionCT); ok {
			ct.Actions = copyActions(ct.Actions)
			a = ct
		}
		copied[i] = a
	}
	return copied
}

// copyInstructions deep-copies instructions checkInstructions accepted,
// as values.
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
		out[i] = ofp.InstructionApplyActions{Actions: copyActions(actions)}
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

// sendsToGroup reports whether instructions send to group id (any group
// for ofp.GroupAll), as the out_group filter of a delete and a group's
// deletion ask.
func sendsToGroup(is []ofp.Instruction, id uint32) bool {
	for _, in := range is {
		actions, _ := applyActions(in)
		for _, a := range actions {
			if g, ok := a.(ofp.ActionGroup); ok && (id == ofp.GroupAll || g.GroupID == id) {
				return true
			}
		}
	}
	return false
}
