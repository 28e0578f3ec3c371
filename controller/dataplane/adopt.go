package dataplane

import (
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Adoption. A switch that connects already holding sdnlb's flows and
// groups (sdnlb restarted, or the switch reconnected) keeps what the
// configuration still wants: the controller reads the switch's flows and
// groups when it connects (or when this node takes it over) and sends
// only the difference, instead of wiping the switch and cutting every
// connection through it.
//
// Cookies carry the numbers the store gave the VIPs and members, the same
// in every process, so a flow this process would install is found as it
// is. The switch's state is still matched by content, which holds whatever
// numbers its flows carry (a configuration without the store's numbers, a
// group whose id is now another VIP's number): a connection flow belongs
// to the VIP its match names and the member its rewrite names, a group to
// the VIP whose flow sends to it, a bucket to the member whose address
// (and port) it commits. What the switch shows also seeds what the dataplane would
// have learned: member MACs and ports, MAC locations (--l2 learn), the
// slots of each group, so the buckets do not move, and the SOURCE_IP
// persistence bindings of the clients whose connections it holds, so
// they keep their members when another node takes the switch over.

// SwitchState is what a switch holds of sdnlb's at the handshake.
type SwitchState struct {
	Flows []ofp.FlowStats
	// Unreadable are flows whose actions the switch's OpenFlow version
	// cannot read, without instructions: rows a 1.3 pipeline left on a
	// switch that now speaks 1.0.
	Unreadable []ofp.FlowStats
	// Groups are every group the switch holds (groups carry no cookie),
	// those whose buckets its version cannot read without buckets: what
	// snap does not want goes, what it wants and differs is replaced.
	Groups []ofp.GroupDesc
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

// Adopt brings a switch that holds have to snap with the fewest changes:
// stale flows go first (a flow whose match the switch spells differently
// is then put back by the adds), then what snap wants and the switch
// lacks, then stale groups. Connections the configuration still allows
// keep their flows, count as active again and bind their clients to their
// members under SOURCE_IP persistence. A switch holding a
// pipeline of another version has every flow deleted first, and gets
// what snap wants from scratch.
func (dp *Switch) Adopt(now time.Time, snap *model.Snapshot, have SwitchState, out *Outbox) {
	if dp.holdsOtherPipeline(have) {
		dp.Peer.Warn(now, "other pipeline", dp.source(), "the switch holds flows of sdnlb's that its OpenFlow version cannot read or address; deleting every flow it holds",
			"unreadable", len(have.Unreadable), "readable", len(have.Flows))
		wipe := model.DeleteAllFlows()
		out.Send(&wipe)
		have.Flows, have.Unreadable = nil, nil
	}
	dp.learnFromSwitch(snap, have, out)
	msgs, last := dp.fromScratch(now, snap, out.xids)
	adds, wanted, wantedGroups := changesFrom(msgs, last, have)
	dp.adoptHeldFlows(now, snap, have.Flows, wanted, out)
	for _, m := range adds {
		out.Send(m)
	}
	for _, g := range have.Groups {
		if !wantedGroups[g.GroupID] {
			out.Send(&ofp.GroupMod{Command: ofp.GroupDelete, GroupID: g.GroupID})
		}
	}
	dp.Peer.Info(now, "switch adopted", dp.source(), "switch adopted", "flows_held", len(have.Flows), "groups_held", len(have.Groups),
		"changes", len(adds), "connections_kept", dp.accounting.total())
}

// holdsOtherPipeline reports whether the switch holds rows of sdnlb's
// that a pipeline of another OpenFlow version installed: flows whose
// actions its version cannot read, and on one table flows in the others,
// which 1.0 flow-mods cannot address. They cannot be deleted one by one:
// 1.0 shows a match only as far as a 1.0 match goes, without the
// conntrack fields and registers that tell such rows apart.
func (dp *Switch) holdsOtherPipeline(have SwitchState) bool {
	return len(have.Unreadable) > 0 ||
		dp.OneTable && slices.ContainsFunc(have.Flows, func(f ofp.FlowStats) bool { return f.TableID != 0 })
}

// fromScratch returns what the switch would get from scratch, in the
// order it needs it, and for each flow the index in msgs of its last add:
// a later add of the same flow replaces an earlier one.
func (dp *Switch) fromScratch(now time.Time, snap *model.Snapshot, xids *atomic.Uint32) (msgs []ofp.Message, last map[flowKey]int) {
	want := NewOutbox(xids, nil) // counted when sent
	for _, fm := range model.BaseFlows(dp.L2, dp.OneTable) {
		want.Send(&fm)
	}
	dp.Configure(now, snap, want)
	last = map[flowKey]int{}
	for b := want.Buf; len(b) > 0; {
		h, _ := ofp.ParseHeader(b)
		_, m, err := ofp.Decode(b[:h.Length])
		b = b[h.Length:]
		if err != nil {
			dp.Log.Error("adopting a switch: undecodable message of our own", "type", h.Type.String(), "err", err)
			continue
		}
		if fm, ok := m.(*ofp.FlowMod); ok {
			last[keyOf(fm.TableID, fm.Priority, &fm.Match)] = len(msgs)
		}
		msgs = append(msgs, m)
	}
	return msgs, last
}

// changesFrom returns what of msgs, what the switch would get from
// scratch, the switch that holds have lacks (adds; a group it holds
// otherwise is modified), and every flow and group msgs wants.
func changesFrom(msgs []ofp.Message, last map[flowKey]int, have SwitchState) (adds []ofp.Message, wanted map[flowKey]bool, wantedGroups map[uint32]bool) {
	existing := make(map[flowKey]*ofp.FlowStats, len(have.Flows))
	for i := range have.Flows {
		f := &have.Flows[i]
		existing[keyOf(f.TableID, f.Priority, &f.Match)] = f
	}
	haveGroups := make(map[uint32]*ofp.GroupDesc, len(have.Groups))
	for i := range have.Groups {
		haveGroups[have.Groups[i].GroupID] = &have.Groups[i]
	}
	wanted = map[flowKey]bool{}
	wantedGroups = map[uint32]bool{}
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
				if sameGroup(g, m) {
					continue
				}
				m.Command = ofp.GroupModify
			}
		}
		adds = append(adds, m)
	}
	return adds, wanted, wantedGroups
}

// adoptHeldFlows goes through the flows the switch holds at now: it
// adopts the connections', and the persistence bindings they show, keeps
// the rows that follow a course of their own, and deletes the others snap
// does not want.
func (dp *Switch) adoptHeldFlows(now time.Time, snap *model.Snapshot, flows []ofp.FlowStats, wanted map[flowKey]bool, out *Outbox) {
	bindings := heldBindings{}
	for i := range flows {
		f := &flows[i]
		switch cat, _, _, _ := model.CookieParts(f.Cookie); {
		case cat == model.CatConn || cat == model.CatConnReply:
			if v, m := dp.adoptConnection(snap, f, out); v != nil && cat == model.CatConn {
				bindings.add(now, v, m, f)
			}
		case cat == model.CatL2 && dp.L2 == model.L2Learn:
			// kept: learnFromSwitch knows where it sends
		case (cat == model.CatL2 || cat == model.CatFabric) && dp.L2 == model.L2Fabric:
			// kept: the fabric's next round brings them up to date
		case cat == model.CatTransit:
			// kept: it idles out with its connection
		case !wanted[keyOf(f.TableID, f.Priority, &f.Match)]:
			del := model.StrictDelete(f)
			out.Send(&del)
		}
	}
	bindings.bind(dp.Affinity, now)
}

// sameFlow reports whether the switch's flow f is what fm installs.
func sameFlow(f *ofp.FlowStats, fm *ofp.FlowMod) bool {
	return f.Cookie == fm.Cookie && f.IdleTimeout == fm.IdleTimeout && f.HardTimeout == fm.HardTimeout &&
		ofp.FormatInstructions(f.Instructions) == ofp.FormatInstructions(fm.Instructions)
}

// sameGroup reports whether the switch's group g is what gm installs.
func sameGroup(g *ofp.GroupDesc, gm *ofp.GroupMod) bool {
	return g.GroupType == gm.GroupType && (ofp.GroupDesc{GroupType: g.GroupType, GroupID: g.GroupID, Buckets: gm.Buckets}).String() == g.String()
}

// learnFromSwitch seeds the host and MAC tables and the groups' slots from
// what the switch holds. A VIP dispatched by client holds its slots in
// TableSlots rows, read as the buckets of a group of its own.
func (dp *Switch) learnFromSwitch(snap *model.Snapshot, have SwitchState, out *Outbox) {
	groupVIP := map[uint32]*model.VIP{} // group id → the VIP whose flow sends to it
	slotRows := map[uint32][]ofp.Bucket{}
	for i := range have.Flows {
		f := &have.Flows[i]
		acts := model.Applied(f.Instructions)
		dp.learnFromFlow(f, acts, out)
		g, ok := model.GroupOf(acts)
		if !ok {
			g, ok = model.SlotGroupOf(acts)
		}
		if ok {
			if v := snap.VIP(model.MatchedVIP(&f.Match)); v != nil {
				groupVIP[g] = v
			}
		}
		if group, slot, ok := model.SlotOf(&f.Match); ok && f.TableID == model.TableSlots {
			if slotRows[group] == nil {
				slotRows[group] = make([]ofp.Bucket, model.GroupSlots)
			}
			slotRows[group][slot] = ofp.Bucket{Actions: acts}
		}
	}
	groups := have.Groups
	for id, buckets := range slotRows {
		groups = append(groups, ofp.GroupDesc{GroupType: ofp.GroupTypeSelect, GroupID: id, Buckets: buckets})
	}
	dp.dispatcher.adoptGroups(groups, groupVIP)
}

// learnFromFlow seeds what one flow the switch holds, of actions acts,
// shows of where hosts are: a member route's and a connection's the
// member's MAC (and port), an L2 row a MAC's port; a fabric row is
// adopted.
func (dp *Switch) learnFromFlow(f *ofp.FlowStats, acts []ofp.Action, out *Outbox) {
	cat, _, _, _ := model.CookieParts(f.Cookie)
	switch {
	case cat == model.CatMemberRoute && f.Priority == model.PrioMemberRoute:
		if ip, ok := model.RoutedAddress(&f.Match); ok {
			if mac, ok := model.SetField(acts, ofp.OXMEthDst); ok {
				dp.Learner.seedHost(ip, mac.MAC(), 0)
			}
		}
	case cat == model.CatConn:
		dp.seedConnMember(acts)
	case (cat == model.CatL2 || cat == model.CatFabric) && dp.L2 == model.L2Fabric:
		dp.adoptFabricRow(f, out)
	case cat == model.CatL2 && dp.L2 == model.L2Learn:
		if dst, ok := f.Match.Get(ofp.OXMEthDst); ok {
			if port, ok := model.OutputPort(acts); ok {
				dp.Learner.seedMAC(dst.MAC(), port)
			}
		}
	}
}

// seedConnMember seeds the host a connection flow of actions acts sends
// to: its member's address, MAC and port, when it rewrites all three.
func (dp *Switch) seedConnMember(acts []ofp.Action) {
	ip, okIP := model.SetIPDst(acts)
	mac, okMAC := model.SetField(acts, ofp.OXMEthDst)
	if port, ok := model.OutputPort(acts); okIP && okMAC && ok && port <= ofp.PortMax {
		dp.Learner.seedHost(ip, mac.MAC(), port)
	}
}

// adoptGroups keeps the switch's groups of SWITCH VIPs, by the VIP whose
// flow sends to each (groupVIP), for their dispatch to take over with the
// members their buckets send to.
func (d *dispatcher) adoptGroups(groups []ofp.GroupDesc, groupVIP map[uint32]*model.VIP) {
	for _, g := range groups {
		v := groupVIP[g.GroupID]
		if v == nil || !v.Switched() || len(g.Buckets) != model.GroupSlots {
			continue
		}
		var slots model.SlotTable
		for i, b := range g.Buckets {
			ip, port, ok := model.BucketTargetOf(b.Actions)
			if !ok {
				continue
			}
			for _, m := range v.Pool.Members {
				if m.IP == ip && (v.DSR() || effectivePort(m, v) == port) {
					slots[i] = m.Num
					break
				}
			}
		}
		d.adopted[v.Num] = adoptedGroup{id: g.GroupID, slots: slots}
	}
}

// adoptedGroup is a group the switch held for a VIP: its id on the switch
// and the members its buckets send to.
type adoptedGroup struct {
	id    uint32
	slots model.SlotTable
}

// adoptConnection keeps one direction of a connection the configuration
// still allows, under the cookie of its VIP's and member's numbers in the
// shard it had (re-added when it carries others), and returns its VIP and
// member; it deletes the others and returns nil. The client → member
// direction counts the connection as active, unless it shows the
// connection's end.
func (dp *Switch) adoptConnection(snap *model.Snapshot, f *ofp.FlowStats, out *Outbox) (*model.VIP, *model.Member) {
	cat, _, _, _ := model.CookieParts(f.Cookie)
	v, m := dp.connectionOf(snap, cat, f)
	if v == nil || m == nil {
		del := model.StrictDelete(f)
		out.Send(&del)
		return nil, nil
	}
	if cookie := model.ConnCookie(cat, model.ShardOf(f.Cookie), v.Num, m.Num); cookie != f.Cookie {
		fm := ofp.FlowMod{Cookie: cookie, TableID: f.TableID, Command: ofp.FlowAdd, IdleTimeout: f.IdleTimeout,
			HardTimeout: f.HardTimeout, Priority: f.Priority, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny,
			OutGroup: ofp.GroupAny, Flags: f.Flags, Match: f.Match, Instructions: f.Instructions}
		out.Send(&fm)
	}
	if cat != model.CatConn || model.Closed(f, dp.finIdle()) {
		return v, m
	}
	if k, ok := model.ConnKeyOf(&f.Match, v.Num); ok && dp.accounting.count(snap, k, m.Num) {
		m.Cnt.Active.Add(1)
		v.Cnt.Active.Add(1)
	}
	return v, m
}

// connectionOf finds the VIP and member of one direction of a connection
// in snap; nil when either is gone, changed or DOWN.
func (dp *Switch) connectionOf(snap *model.Snapshot, cat model.Category, f *ofp.FlowStats) (*model.VIP, *model.Member) {
	acts := model.Applied(f.Instructions)
	var key model.VIPKey
	var memberIP netip.Addr
	var memberPort uint16
	if cat == model.CatConn {
		key, memberIP, memberPort = dp.forwardEnds(f, acts)
	} else {
		key, memberIP, memberPort = replyEnds(f, acts)
	}
	v := snap.VIP(key)
	if v == nil || v.Pool == nil {
		return nil, nil
	}
	for _, m := range v.Pool.Members {
		if port := effectivePort(m, v); m.IP == memberIP && m.Status != sdnlb.MemberDown &&
			(!model.HasPorts(key.Proto) || port == 0 || port == memberPort) { // 0: every port
			return v, m
		}
	}
	return nil, nil
}

// forwardEnds reads the client → member flow f, of actions acts: the VIP
// it matches, and the member's address and port its rewrite names (under
// NAT) or its MAC's address (under DSR, on the VIP's port).
func (dp *Switch) forwardEnds(f *ofp.FlowStats, acts []ofp.Action) (key model.VIPKey, memberIP netip.Addr, memberPort uint16) {
	key = model.MatchedVIP(&f.Match)
	if ip, ok := model.SetIPDst(acts); ok { // NAT
		memberIP = ip
		if p, ok := model.SetField(acts, model.L4DstField(key.Proto)); ok {
			memberPort = uint16(p.Uint())
		}
	} else if mac, ok := model.SetField(acts, ofp.OXMEthDst); ok { // DSR
		memberIP, memberPort = dp.Learner.ipOfMAC(mac.MAC()), key.Port
	}
	return key, memberIP, memberPort
}

// replyEnds reads the member → client flow f, of actions acts: the
// member's address and port it matches, and the VIP address and port its
// rewrite gives the reply.
func replyEnds(f *ofp.FlowStats, acts []ofp.Action) (key model.VIPKey, memberIP netip.Addr, memberPort uint16) {
	memberIP, _ = model.MatchedSrc(&f.Match)
	key.Proto = model.MatchedProto(&f.Match)
	if p, ok := f.Match.Get(model.L4SrcField(key.Proto)); ok {
		memberPort = uint16(p.Uint())
	}
	if ip, ok := model.SetField(acts, ofp.OXMIPv4Src); ok {
		key.IP = model.SetAddr(ip)
	} else if ip, ok := model.SetField(acts, ofp.OXMIPv6Src); ok {
		key.IP = model.SetAddr(ip)
	}
	if p, ok := model.SetField(acts, model.L4SrcField(key.Proto)); ok {
		key.Port = uint16(p.Uint())
	}
	return key, memberIP, memberPort
}

// effectivePort is the port m serves v on.
func effectivePort(m *model.Member, v *model.VIP) uint16 {
	if m.Port == 0 || v.DSR() {
		return v.Port
	}
	return m.Port
}
