package dataplane

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// trackedVIP is what a switch has installed for one VIP whose connections
// its tracker holds: the flows around the tracker, and for a VIP it
// dispatches itself, the group. The group id names the VIP in the member
// routes also without a group. It is the switch's, not the process's: a
// group adopted from the switch keeps its id, so a process that numbers
// the VIPs otherwise than its predecessor never rewrites a group another
// VIP's flows still send to.
type trackedVIP struct {
	group       uint32
	spec        model.DispatchSpec
	rotation    model.SlotTable                      // the slots of the whole rotation, ready or not
	slots       model.SlotTable                      // the ready members' slots, which the buckets follow
	buckets     [model.GroupSlots]model.BucketTarget // what the installed group's buckets (by client: slot rows) send to
	grouped     bool                                 // the group (by client: its slot rows) is installed
	dispatching bool                                 // new connections go to the group, not the controller
	switched    bool                                 // the switch dispatches the VIP: else the controller picks every member
}

// dispatcher is what a switch has installed for the VIPs whose
// connections its tracker holds: the flows around the tracker per VIP and
// the group of each it dispatches itself, and the member routes. It keeps
// the groups the switch held at the handshake until their VIPs' dispatch
// takes them over.
type dispatcher struct {
	tracked map[uint32]*trackedVIP               // the VIPs the tracker holds the connections of, by number
	routes  map[model.RouteKey]model.MemberRoute // TableToMember rows
	adopted map[uint32]adoptedGroup              // groups the switch held at the handshake, by the number of the VIP they serve
	punts   map[uint32]installedPunts            // the punts of the VIPs the controller dispatches, by number
}

// installedPunts are a VIP's controller punts the switch was sent, and
// their matches as text, to tell whether those wanted now are the same.
type installedPunts struct {
	flows     []model.Flow
	signature string
}

func newDispatcher() dispatcher {
	return dispatcher{
		tracked: map[uint32]*trackedVIP{},
		routes:  map[model.RouteKey]model.MemberRoute{},
		adopted: map[uint32]adoptedGroup{},
		punts:   map[uint32]installedPunts{},
	}
}

// dispatch brings the switch's groups and dispatch flows to snap and what
// the dataplane learned, and on a switch with Nicira matches the
// controller punts. It is called after every configuration sync.
func (dp *Switch) dispatch(now time.Time, snap *model.Snapshot, out *Outbox) {
	if !dp.Groups && !dp.Nicira {
		return
	}
	if dp.Groups {
		dp.dispatcher.dropStale(snap, out)
	}
	vips := model.SortedVIPs(snap)
	if dp.Nicira {
		dp.dispatcher.punt(snap, vips, dp.Groups, out)
	}
	if dp.Groups {
		dp.redispatch(now, snap, vips, nil, out)
	}
}

// punt gives the VIPs of snap their controller punts
// (model.ControllerPunts; tracker: the switch's tracker holds the
// connections of the VIPs it tracks), and takes them from the others. A VIP's flows
// purged (deleted, or moved to another address) took its punts with them.
func (d *dispatcher) punt(snap *model.Snapshot, vips []*model.VIP, tracker bool, out *Outbox) {
	for num := range d.punts {
		if snap.VIPByNum[num] == nil {
			delete(d.punts, num)
		}
	}
	for _, v := range vips {
		want := model.ControllerPunts(v, tracker)
		adds := make([]ofp.FlowMod, len(want))
		var sig strings.Builder
		for i := range want {
			adds[i] = want[i].Add()
			sig.WriteString(adds[i].Match.String())
			sig.WriteByte(';')
		}
		had := d.punts[v.Num]
		if had.signature == sig.String() {
			continue
		}
		for _, f := range had.flows {
			del := f.Remove()
			out.Send(&del)
		}
		for i := range adds {
			out.Send(&adds[i])
		}
		if len(want) == 0 {
			delete(d.punts, v.Num)
		} else {
			d.punts[v.Num] = installedPunts{flows: want, signature: sig.String()}
		}
	}
}

// dispatchAt is dispatch for what changed at member addresses only: their
// routes, and the buckets of the VIPs with members there. It is called
// when a member's MAC or port is learned, and after a health patch of the
// snapshot the switch had, so that neither costs what every pool holds.
func (dp *Switch) dispatchAt(now time.Time, snap *model.Snapshot, addrs []netip.Addr, out *Outbox) {
	if !dp.Groups || len(addrs) == 0 {
		return
	}
	var nums []uint32
	for _, a := range addrs {
		nums = append(nums, snap.TrackedMembers[a]...)
	}
	slices.Sort(nums)
	vips := make([]*model.VIP, 0, len(nums))
	for _, num := range slices.Compact(nums) {
		vips = append(vips, snap.VIPByNum[num])
	}
	dp.redispatch(now, snap, vips, addrs, out)
}

// redispatch brings the tracked VIPs of vips to snap: a new one's flows
// around the tracker and group id first, then the member routes (at addrs
// only, unless addrs is nil), the buckets of those the switch dispatches,
// and last the routes no bucket sends to any more.
func (dp *Switch) redispatch(now time.Time, snap *model.Snapshot, vips []*model.VIP, addrs []netip.Addr, out *Outbox) {
	tracked := make([]*model.VIP, 0, len(vips))
	for _, v := range vips {
		if v.Tracked() {
			dp.dispatcher.trackedOf(v, out)
			tracked = append(tracked, v)
		}
	}
	routes := dp.memberRoutes(snap, tracked, addrs)
	dp.dispatcher.installRoutes(routes, out)
	for _, v := range tracked {
		if v.Switched() {
			rotation, ready, targets := dp.readyMembers(now, v, out)
			dp.dispatcher.tracked[v.Num].setMembers(v, rotation, ready, targets, out)
		}
	}
	if addrs == nil {
		dp.dispatcher.deleteRoutes(routes, out)
	} else {
		dp.dispatcher.deleteRoutesAt(routes, tracked, addrs, out)
	}
}

// dropStale stops tracking every VIP that snap no longer has the switch
// track as it does: its flows around the tracker and group go, and a VIP
// that stays gets its service flow back, to the controller.
func (d *dispatcher) dropStale(snap *model.Snapshot, out *Outbox) {
	for _, num := range slices.Sorted(maps.Keys(d.tracked)) {
		sv := d.tracked[num]
		v := snap.VIPByNum[num]
		if v != nil && v.Tracked() && model.SpecOf(v) == sv.spec {
			if sv.switched && !v.Switched() {
				sv.undispatch(v, out)
			}
			sv.switched = v.Switched()
			continue
		}
		purge := model.DeleteByCookie(model.MakeCookie(model.CatDispatch, num, 0), model.MaskApp|model.MaskCategory|model.MaskVIP)
		out.Send(&purge)
		if v != nil { // the purge took the service flow with it
			punt := model.ServicePunt(v)
			out.Send(&punt)
		}
		if sv.grouped && !sv.spec.Slotted() { // a VIP's slot rows went with the purge
			out.Send(&ofp.GroupMod{Command: ofp.GroupDelete, GroupID: sv.group})
		}
		delete(d.tracked, num)
	}
}

// undispatch hands v's new connections to the controller, which picks
// their members from then on; the group or slot rows go. The connections
// the switch dispatched keep their members in the tracker.
func (sv *trackedVIP) undispatch(v *model.VIP, out *Outbox) {
	if sv.dispatching {
		fm := model.UndispatchFlow(v)
		out.Send(&fm)
	}
	switch {
	case !sv.grouped:
	case sv.spec.Slotted():
		del := model.DeleteByCookie(model.MakeCookie(model.CatDispatch, v.Num, 0), model.MaskApp|model.MaskCategory|model.MaskVIP)
		del.TableID = model.TableSlots
		out.Send(&del)
	default:
		out.Send(&ofp.GroupMod{Command: ofp.GroupDelete, GroupID: sv.group})
	}
	sv.dispatching, sv.grouped, sv.slots, sv.buckets = false, false, model.SlotTable{}, [model.GroupSlots]model.BucketTarget{}
}

// trackedOf returns what the switch has installed for v. A new one takes
// the group the switch held for v, else a free group id, and installs the
// flows around the tracker; setMembers installs the group of a VIP the
// switch dispatches.
func (d *dispatcher) trackedOf(v *model.VIP, out *Outbox) *trackedVIP {
	if sv := d.tracked[v.Num]; sv != nil {
		return sv
	}
	sv := &trackedVIP{spec: model.SpecOf(v), switched: v.Switched()}
	if a, ok := d.adopted[v.Num]; ok {
		sv.group, sv.rotation, sv.slots, sv.grouped = a.id, a.slots, a.slots, true
		delete(d.adopted, v.Num)
	} else {
		sv.group = d.freeGroupID(v.Num)
	}
	d.tracked[v.Num] = sv
	for _, fm := range model.TrackedFlows(v, sv.group) {
		out.Send(&fm)
	}
	return sv
}

// setMembers points the group's buckets at the ready members, by their
// slots, and sends v's new connections to the group, or to the controller
// while no member is ready. The slots are the rotation's, which follow the
// snapshots alone, so every switch holds the same buckets once it can
// reach the same members, whatever order it learned their MACs in; a
// member not ready yet lends its slots to the others until it is.
func (sv *trackedVIP) setMembers(v *model.VIP, rotation, ready []model.SlotMember, targets map[uint32]model.BucketTarget, out *Outbox) {
	sv.rotation = model.AssignSlots(sv.rotation, rotation)
	if len(ready) == 0 {
		if sv.dispatching {
			fm := model.UndispatchFlow(v)
			out.Send(&fm)
			sv.dispatching = false
		}
		return
	}
	if v.Pool.Method == sdnlb.ConsistentHash {
		sv.slots = model.HashSlots(v.Pool, ready) // the controller's table, whatever the switch held
	} else {
		sv.slots = model.AssignSlots(sv.rotation, ready)
	}
	var buckets [model.GroupSlots]model.BucketTarget
	for i, num := range sv.slots {
		buckets[i] = targets[num]
	}
	switch {
	case sv.spec.Slotted():
		sv.setSlotRows(v, &buckets, out)
	case !sv.grouped || buckets != sv.buckets:
		cmd := ofp.GroupModify
		if !sv.grouped {
			cmd = ofp.GroupAdd
		}
		gm := model.GroupMod(cmd, sv.group, sv.spec, &buckets)
		out.Send(&gm)
	}
	sv.grouped, sv.buckets = true, buckets
	if !sv.dispatching {
		fm := model.DispatchFlow(v, sv.group)
		out.Send(&fm)
		sv.dispatching = true
	}
}

// setSlotRows is setMembers's group for a VIP dispatched by slots: one
// TableSlots row per slot, of which only those whose member changed are
// sent again.
func (sv *trackedVIP) setSlotRows(v *model.VIP, buckets *[model.GroupSlots]model.BucketTarget, out *Outbox) {
	cookie := model.MakeCookie(model.CatDispatch, v.Num, 0)
	for i, t := range buckets {
		if !sv.grouped || t != sv.buckets[i] {
			for _, fm := range model.SlotFlows(cookie, sv.group, sv.spec, i, t) {
				out.Send(&fm)
			}
		}
	}
}

// readyMembers returns the members of v's rotation, and of those the ones
// whose MAC the switch showed (their route needs it), with where their
// buckets send; it asks for the others by ARP. A method that does not
// weigh members gives each the same slots, as the controller's rotation
// gives each the same turns.
func (dp *Switch) readyMembers(now time.Time, v *model.VIP, out *Outbox) (rotation, ready []model.SlotMember, targets map[uint32]model.BucketTarget) {
	rotation = make([]model.SlotMember, 0, len(v.Pool.Rotation))
	ready = make([]model.SlotMember, 0, len(v.Pool.Rotation))
	targets = make(map[uint32]model.BucketTarget, len(v.Pool.Rotation))
	weighs := v.Pool.Method.Weighs()
	for _, m := range v.Pool.Rotation {
		weight := 1
		if weighs {
			weight = m.Share
		}
		sm := model.SlotMember{Num: m.Num, Weight: weight}
		rotation = append(rotation, sm)
		if _, known := dp.Learner.Host(m.IP); !known {
			dp.askARP(now, v, m.IP, out)
			continue
		}
		if m.Full {
			continue // no new connection until one of its own ends
		}
		ready = append(ready, sm)
		targets[m.Num] = model.BucketTarget{IP: m.IP, Port: effectivePort(m, v)}
	}
	return rotation, ready, targets
}

// memberRoutes are the TableToMember rows snap wants for the members of
// vips, tracked VIPs, at addrs only unless addrs is
// nil: one per VIP and member address, with the member's MAC, or for a
// DOWN member the controller, which resets the connections still sent to
// it.
func (dp *Switch) memberRoutes(snap *model.Snapshot, vips []*model.VIP, addrs []netip.Addr) map[model.RouteKey]model.MemberRoute {
	want := map[model.RouteKey]model.MemberRoute{}
	for _, v := range vips {
		group := dp.dispatcher.tracked[v.Num].group
		for _, m := range v.Pool.Members {
			if addrs != nil && !slices.Contains(addrs, m.IP) {
				continue
			}
			h, known := dp.Learner.Host(m.IP)
			if !known {
				continue
			}
			k := model.RouteKey{Group: group, IP: m.IP, DSR: v.DSR()}
			r := model.MemberRoute{Cookie: model.MakeCookie(model.CatMemberRoute, v.Num, m.Num), MAC: h.MAC, Down: m.Status == sdnlb.MemberDown,
				VIP: model.SpecOf(v)}
			if old, ok := want[k]; !ok || r.Cookie < old.Cookie {
				want[k] = r
			}
		}
	}
	return want
}

// installRoutes adds and changes the rows of want; dispatch calls it
// before the buckets change, so no bucket sends to a member whose row
// still resets its connections (a member back UP).
func (d *dispatcher) installRoutes(want map[model.RouteKey]model.MemberRoute, out *Outbox) {
	for _, k := range slices.SortedFunc(maps.Keys(want), model.CompareRoutes) {
		if r := want[k]; d.routes[k] != r {
			for _, fm := range model.RouteFlows(k, r) {
				out.Send(&fm)
			}
			d.routes[k] = r
		}
	}
}

// deleteRoutes removes the rows want no longer has; dispatch calls it
// once no bucket sends to them.
func (d *dispatcher) deleteRoutes(want map[model.RouteKey]model.MemberRoute, out *Outbox) {
	for _, k := range slices.SortedFunc(maps.Keys(d.routes), model.CompareRoutes) {
		d.deleteRoute(want, k, out)
	}
}

// deleteRoutesAt is deleteRoutes for the rows of vips at addrs, whose
// want holds every row there.
func (d *dispatcher) deleteRoutesAt(want map[model.RouteKey]model.MemberRoute, vips []*model.VIP, addrs []netip.Addr, out *Outbox) {
	for _, v := range vips {
		for _, a := range addrs {
			d.deleteRoute(want, model.RouteKey{Group: d.tracked[v.Num].group, IP: a, DSR: v.DSR()}, out)
		}
	}
}

// deleteRoute removes the row of k when the switch has it and want not.
func (d *dispatcher) deleteRoute(want map[model.RouteKey]model.MemberRoute, k model.RouteKey, out *Outbox) {
	r, installed := d.routes[k]
	if _, wanted := want[k]; installed && !wanted {
		fm := model.DeleteByCookie(r.Cookie, ^uint64(0))
		out.Send(&fm)
		delete(d.routes, k)
	}
}

// answerMemberRoute answers a packet that a member's route sent up. The
// route of a DOWN member sends to the controller: a TCP client still
// sending on a connection to the member gets a reset from the VIP, so it
// fails now instead of retransmitting into a void. Once the member is back
// the route sends to it again, but the switch's datapath may go on using
// an entry it cached from the DOWN route until it revalidates it: what
// that sends up goes on to the member, as the route now does, instead of
// resetting a new connection to a healthy member.
func (dp *Switch) answerMemberRoute(p *packetIn, memberNum uint32, out *Outbox) bool {
	m := p.snap.Member(memberNum)
	if m == nil || !p.hasIP() {
		return false
	}
	if m.Status != sdnlb.MemberDown {
		h, known := dp.Learner.Host(m.IP)
		if !known || h.Port == 0 {
			return false
		}
		dp.out.Port = h.Port
		dp.sendFrame(p.inPort, []ofp.Action{ofp.ActionSetField{Field: ofp.MatchEthDst(h.MAC)}, &dp.out}, p.frame, out)
		return true
	}
	if !p.hasTCP || p.tcp.RST {
		return false
	}
	pool := p.snap.Pools[m.PoolID]
	if pool == nil || pool.VIP == nil || !pool.VIP.Carries(ofp.IPProtoTCP) {
		return false
	}
	v := pool.VIP
	r := rstFor(p.decoder, v.MAC)
	r.src = v.IP
	if v.Port != 0 { // else the client asked for the member's port
		r.sport = v.Port
	}
	dp.frame = appendTCPRST(dp.frame[:0], r)
	dp.packetOut(p.inPort, ofp.PortInPort, dp.frame, out)
	dp.Metrics.refusals[refusedNoFlow].Inc()
	return true
}

// freeGroupID is the id for a new group of the VIP numbered vipNum: its
// number, unless a group on the switch has it; then the lowest free id.
func (d *dispatcher) freeGroupID(vipNum uint32) uint32 {
	taken := func(id uint32) bool {
		for _, sv := range d.tracked {
			if sv.group == id {
				return true
			}
		}
		for _, a := range d.adopted {
			if a.id == id {
				return true
			}
		}
		return false
	}
	if !taken(vipNum) {
		return vipNum
	}
	id := uint32(1)
	for taken(id) {
		id++
	}
	return id
}
