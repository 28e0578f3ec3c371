package controller

import (
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Adoption. A switch that connects already holding sdnlb's flows and
// groups (sdnlb restarted, or the switch reconnected) keeps what the
// configuration still wants: the controller reads the switch's flows and
// groups when it connects (or when this node takes it over) and sends
// only the difference, instead of wiping the switch and cutting every
// connection through it.
//
// Cookie and group numbers are the process's own, so the switch's state
// is matched by content, not by number: a connection flow belongs to the
// VIP its match names and the member its rewrite names, a group to the VIP
// whose flow sends to it, a bucket to the member whose address (and port)
// it commits. What the switch shows also seeds what the dataplane would
// have learned: member MACs and ports, MAC locations (--l2 learn), and the
// slots of each group, so the buckets do not move.

// switchState is what a switch holds of sdnlb's at the handshake.
type switchState struct {
	flows  []ofp.FlowStats
	groups []ofp.GroupDesc
}

// flowKey identifies a flow as a switch does: table, priority and match.
type flowKey struct {
	table    uint8
	priority uint16
	match    string
}

func keyOf(table uint8, priority uint16, m *ofp.Match) flowKey {
	return flowKey{table: table, priority: priority, match: m.String()}
}

// adopt brings a switch that holds have to snap with the fewest changes:
// stale flows go first (a flow whose match the switch spells differently
// is then put back by the adds), then what snap wants and the switch
// lacks, then stale groups. Connections the configuration still allows
// keep their flows and count as active again.
func (dp *dataplane) adopt(now time.Time, snap *snapshot, have switchState, out *outbox) {
	dp.learnFromSwitch(snap, have, out)
	existing := make(map[flowKey]*ofp.FlowStats, len(have.flows))
	for i := range have.flows {
		f := &have.flows[i]
		existing[keyOf(f.TableID, f.Priority, &f.Match)] = f
	}
	haveGroups := make(map[uint32]*ofp.GroupDesc, len(have.groups))
	for i := range have.groups {
		haveGroups[have.groups[i].GroupID] = &have.groups[i]
	}

	// What the switch would get from scratch, in the order it needs it.
	want := newOutbox(out.xids, nil) // counted when sent
	for _, fm := range baseFlows(dp.l2, dp.oneTable) {
		want.send(&fm)
	}
	dp.configure(now, snap, want)
	var msgs []ofp.Message
	last := map[flowKey]int{} // a later add of the same flow replaces an earlier one
	for b := want.buf; len(b) > 0; {
		h, _ := ofp.ParseHeader(b)
		_, m, err := ofp.Decode(b[:h.Length])
		b = b[h.Length:]
		if err != nil {
			dp.log.Error("adopting a switch: undecodable message of our own", "type", h.Type.String(), "err", err)
			continue
		}
		if fm, ok := m.(*ofp.FlowMod); ok {
			last[keyOf(fm.TableID, fm.Priority, &fm.Match)] = len(msgs)
		}
		msgs = append(msgs, m)
	}
	var adds []ofp.Message
	wanted := map[flowKey]bool{}
	wantedGroups := map[uint32]bool{}
	for i, m := range msgs {
		switch m := m.(type) {
		case *ofp.FlowMod:
			k := keyOf(m.TableID, m.Priority, &m.Match)
			wanted[k] = true
			if f := existing[k]; last[k] != i || f != nil && sameFlow(f, m) {
				continue
			}
		case *ofp.GroupMod:
			wantedGroups[m.GroupID] = true
			if g := haveGroups[m.GroupID]; g != nil {
				if g.GroupType == m.GroupType && (ofp.GroupDesc{GroupType: g.GroupType, GroupID: g.GroupID, Buckets: m.Buckets}).String() == g.String() {
					continue
				}
				m.Command = ofp.GroupModify
			}
		}
		adds = append(adds, m)
	}

	for i := range have.flows {
		f := &have.flows[i]
		switch cat, _, _, _ := cookieParts(f.Cookie); {
		case cat == catConn || cat == catConnReply:
			dp.adoptConnection(snap, f, out)
		case cat == catL2 && dp.l2 == L2Learn:
			// kept: learnFromSwitch knows where it sends
		case (cat == catL2 || cat == catFabric) && dp.l2 == L2Fabric:
			// kept: the fabric's next round brings them up to date
		case cat == catTransit:
			// kept: it idles out with its connection
		case !wanted[keyOf(f.TableID, f.Priority, &f.Match)]:
			del := strictDelete(f)
			out.send(&del)
		}
	}
	for _, m := range adds {
		out.send(m)
	}
	for _, g := range have.groups {
		if !wantedGroups[g.GroupID] {
			out.send(&ofp.GroupMod{Command: ofp.GroupDelete, GroupID: g.GroupID})
		}
	}
	dp.log.Info("switch adopted", "flows_held", len(have.flows), "groups_held", len(have.groups),
		"changes", len(adds), "connections_kept", dp.accounting.total())
}

// sameFlow reports whether the switch's flow f is what fm installs.
func sameFlow(f *ofp.FlowStats, fm *ofp.FlowMod) bool {
	return f.Cookie == fm.Cookie && f.IdleTimeout == fm.IdleTimeout && f.HardTimeout == fm.HardTimeout &&
		ofp.FormatInstructions(f.Instructions) == ofp.FormatInstructions(fm.Instructions)
}

func strictDelete(f *ofp.FlowStats) ofp.FlowMod {
	return ofp.FlowMod{Command: ofp.FlowDeleteStrict, TableID: f.TableID, Priority: f.Priority, Match: f.Match,
		BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}
}

// learnFromSwitch seeds the host and MAC tables and the groups' slots from
// what the switch holds.
func (dp *dataplane) learnFromSwitch(snap *snapshot, have switchState, out *outbox) {
	groupVIP := map[uint32]*vipState{} // group id → the VIP whose flow sends to it
	for i := range have.flows {
		f := &have.flows[i]
		acts := applied(f.Instructions)
		cat, _, _, _ := cookieParts(f.Cookie)
		switch {
		case cat == catMemberRoute && f.Priority == prioMemberRoute:
			if ip, ok := routedAddress(&f.Match); ok {
				if mac, ok := setField(acts, ofp.OXMEthDst); ok {
					dp.learner.seedHost(ip, mac.MAC(), 0)
				}
			}
		case cat == catConn:
			ip, okIP := setIPDst(acts)
			mac, okMAC := setField(acts, ofp.OXMEthDst)
			if port, ok := outputPort(acts); okIP && okMAC && ok && port <= ofp.PortMax {
				dp.learner.seedHost(ip, mac.MAC(), port)
			}
		case (cat == catL2 || cat == catFabric) && dp.l2 == L2Fabric:
			dp.adoptFabricRow(f, out)
		case cat == catL2 && dp.l2 == L2Learn:
			if dst, ok := f.Match.Get(ofp.OXMEthDst); ok {
				if port, ok := outputPort(acts); ok {
					dp.learner.seedMAC(dst.MAC(), port)
				}
			}
		}
		if g, ok := groupOf(acts); ok {
			if v := snap.vip(matchedVIP(&f.Match)); v != nil {
				groupVIP[g] = v
			}
		}
	}
	dp.dispatcher.adoptGroups(have.groups, groupVIP)
}

// adoptGroups keeps the switch's groups of SWITCH VIPs, by the VIP whose
// flow sends to each (groupVIP), for their dispatch to take over with the
// members their buckets send to.
func (d *dispatcher) adoptGroups(groups []ofp.GroupDesc, groupVIP map[uint32]*vipState) {
	for _, g := range groups {
		v := groupVIP[g.GroupID]
		if v == nil || !v.switched() || len(g.Buckets) != groupSlots {
			continue
		}
		var slots slotTable
		for i, b := range g.Buckets {
			ip, port, ok := bucketTargetOf(b.Actions)
			if !ok {
				continue
			}
			for _, m := range v.pool.members {
				if m.ip == ip && (v.dsr() || effectivePort(m, v) == port) {
					slots[i] = m.num
					break
				}
			}
		}
		d.adopted[v.num] = adoptedGroup{id: g.GroupID, slots: slots}
	}
}

// adoptedGroup is a group the switch held for a VIP: its id on the switch
// and the members its buckets send to.
type adoptedGroup struct {
	id    uint32
	slots slotTable
}

// adoptConnection keeps one direction of a connection the configuration
// still allows, under its cookie of this process, and deletes the others.
// The client → member direction counts the connection as active.
func (dp *dataplane) adoptConnection(snap *snapshot, f *ofp.FlowStats, out *outbox) {
	cat, _, _, _ := cookieParts(f.Cookie)
	v, m := dp.connectionOf(snap, cat, f)
	if v == nil || m == nil {
		del := strictDelete(f)
		out.send(&del)
		return
	}
	if cookie := makeCookie(cat, v.num, m.num); cookie != f.Cookie {
		fm := ofp.FlowMod{Cookie: cookie, TableID: f.TableID, Command: ofp.FlowAdd, IdleTimeout: f.IdleTimeout,
			HardTimeout: f.HardTimeout, Priority: f.Priority, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny,
			OutGroup: ofp.GroupAny, Flags: f.Flags, Match: f.Match, Instructions: f.Instructions}
		out.send(&fm)
	}
	if cat != catConn {
		return
	}
	dp.accounting.count(v.num, m.num)
	m.cnt.active.Add(1)
	v.cnt.active.Add(1)
}

// connectionOf finds the VIP and member of one direction of a connection
// in snap; nil when either is gone, changed or DOWN.
func (dp *dataplane) connectionOf(snap *snapshot, cat category, f *ofp.FlowStats) (*vipState, *memberState) {
	acts := applied(f.Instructions)
	var key vipKey
	var memberIP netip.Addr
	var memberPort uint16
	if cat == catConn {
		key = matchedVIP(&f.Match)
		if ip, ok := setIPDst(acts); ok { // NAT
			memberIP = ip
			if p, ok := setField(acts, l4DstField(key.proto)); ok {
				memberPort = uint16(p.Uint())
			}
		} else if mac, ok := setField(acts, ofp.OXMEthDst); ok { // DSR
			memberIP, memberPort = dp.learner.ipOfMAC(mac.MAC()), key.port
		}
	} else {
		memberIP, _ = matchedSrc(&f.Match)
		key.proto = matchedProto(&f.Match)
		if p, ok := f.Match.Get(l4SrcField(key.proto)); ok {
			memberPort = uint16(p.Uint())
		}
		if ip, ok := setField(acts, ofp.OXMIPv4Src); ok {
			key.ip = setAddr(ip)
		} else if ip, ok := setField(acts, ofp.OXMIPv6Src); ok {
			key.ip = setAddr(ip)
		}
		if p, ok := setField(acts, l4SrcField(key.proto)); ok {
			key.port = uint16(p.Uint())
		}
	}
	v := snap.vip(key)
	if v == nil || v.pool == nil {
		return nil, nil
	}
	for _, m := range v.pool.members {
		if port := effectivePort(m, v); m.ip == memberIP && m.status != sdnlb.MemberDown &&
			(!hasPorts(key.proto) || port == 0 || port == memberPort) { // 0: every port
			return v, m
		}
	}
	return nil, nil
}

// effectivePort is the port m serves v on.
func effectivePort(m *memberState, v *vipState) uint16 {
	if m.port == 0 || v.dsr() {
		return v.port
	}
	return m.port
}

// applied returns the actions of a flow's apply-actions instruction.
func applied(is []ofp.Instruction) []ofp.Action {
	for _, in := range is {
		if a, ok := in.(ofp.InstructionApplyActions); ok {
			return a.Actions
		}
	}
	return nil
}

func setField(actions []ofp.Action, f ofp.OXMField) (ofp.OXM, bool) {
	for _, a := range actions {
		if sf, ok := a.(ofp.ActionSetField); ok && sf.Field.Class == ofp.OXMClassBasic && sf.Field.Field == f {
			return sf.Field, true
		}
	}
	return ofp.OXM{}, false
}

func outputPort(actions []ofp.Action) (uint32, bool) {
	for _, a := range slices.Backward(actions) {
		if o, ok := a.(ofp.ActionOutput); ok {
			return o.Port, true
		}
	}
	return 0, false
}

func groupOf(actions []ofp.Action) (uint32, bool) {
	for _, a := range actions {
		if g, ok := a.(ofp.ActionGroup); ok {
			return g.GroupID, true
		}
	}
	return 0, false
}
