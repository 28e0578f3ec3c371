package controller

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// In-switch dispatch. For a pool with SWITCH dispatch the switch picks the
// member of each new connection itself, from a select group whose buckets
// are the slots of assignSlots; the controller changes the buckets when
// the rotation or what the switch learned changes, never per connection.
//
// Both forwardings keep each connection's member in the switch's
// connection tracker, so that an established connection keeps its member
// whatever the buckets become: drains, additions, deletions and weight
// changes move new connections only. The tracker remembers and the flows
// translate; its own NAT is not used (Open vSwitch 3.1.0 to 3.1.2 let a
// closed NAT connection's reverse key outlive it and then rewrite a new
// connection's source port: docs/ARCHITECTURE.md, "Port reuse through the
// userspace connection tracker").
//
// The service flow sends into the tracker's VIP zone and on to
// tableTracked, where a new connection goes to the group. A bucket is an
// action set, which holds one ct and nothing after it: it commits the
// connection in the VIP zone, with the member's address as its label (NAT:
// and its port as its mark), and recirculates to tableTracked, where the
// connection is now a tracked one, routed by its label:
//
// DSR: dsrMemberReg gets the member's address, and tableToMember's row for
// it sets its MAC. The members answer from the VIP's address; their
// replies pass the VIP zone on their way to the client, so the tracker
// sees both directions.
//
// NAT: the packet is addressed to the member from the label and mark and
// passes the member zone, where the connection, as the member sees it, has
// the VIP's address as its label and its protocol and port as its mark;
// the first packet, and a SYN that reopens the connection, commit that.
// tableToMember sets the member's MAC. A member's replies go through the
// member zone into tableFromMember, where the VIP their connection names
// becomes their source again, and pass the VIP zone on their way to the
// client. A member's own traffic is never rewritten.
//
// A member's route needs its MAC: a member the switch has not been seen
// answering is asked by ARP and left out of the buckets until it answers.
// While no member is ready, new connections go to the controller, which
// holds or refuses them as for CONTROLLER dispatch.

// dsrMemberReg is the register that names a DSR connection's member in
// tableToMember: its address, from the bucket for a new connection, from
// the connection's label for a tracked one.
const dsrMemberReg = 0

// groupReg is the register that names a tracked connection's VIP in
// tableToMember, by the VIP's group on the switch: each VIP has its own
// rows for a member there, so that pools sharing a member's address count
// their traffic apart. The group's id, unlike the VIP's number, survives a
// restart of the controller, so adopted rows keep matching.
const groupReg = 2

// trackVIP sends a client's packet through the tracker's VIP zone and on
// to tableTracked; trackMember a member's reply through the member zone
// and on to tableFromMember.
var (
	trackVIP    = ofp.ActionCT{Zone: ctZoneVIP, Table: tableTracked}
	trackMember = ofp.ActionCT{Zone: ctZoneMember, Table: tableFromMember}
)

// serviceMark is the connection mark that names a VIP's service in the
// member zone: its protocol and port. For a VIP on every port, the port is
// the one the client asked for, which the bucket keeps in clientPortReg
// before it addresses the member.
func serviceMark(k vipKey) uint32 { return uint32(k.proto)<<16 | uint32(k.port) }

// clientPortReg is the register a NAT bucket of a VIP on every port keeps
// the client's destination port in.
const clientPortReg = 1

// everyPort says whether connections to the VIP keep the port the client
// asked for, unless the member names its own: a VIP on every port of TCP
// or UDP, or of every protocol.
func (k vipKey) everyPort() bool { return k.port == 0 && (hasPorts(k.proto) || k.proto == protoAny) }

// translation is how one protocol of a VIP's connections is translated:
// its port fields, or none. A VIP of every protocol has one for TCP, one
// for UDP and one for the rest.
type translation struct {
	proto    uint8
	dst, src ofp.NXMHeader // 0: no ports
}

func (v *vipState) translations() []translation { return translationsOf(v.proto) }

// translationsOf is translations for a VIP of proto.
func translationsOf(proto uint8) []translation {
	tcp := translation{protoTCP, ofp.NXMTCPDst, ofp.NXMTCPSrc}
	udp := translation{protoUDP, ofp.NXMUDPDst, ofp.NXMUDPSrc}
	switch proto {
	case protoAny:
		return []translation{tcp, udp, {proto: protoAny}}
	case protoTCP:
		return []translation{tcp}
	case protoUDP:
		return []translation{udp}
	}
	return []translation{{proto: proto}}
}

// switchedVIP is what a switch has installed to dispatch one VIP itself.
// Its group id is the switch's, not the process's: a group adopted from
// the switch keeps its id, so a process that numbers the VIPs otherwise
// than its predecessor never rewrites a group another VIP's flows still
// send to.
type switchedVIP struct {
	group       uint32
	spec        dispatchSpec
	slots       slotTable
	buckets     [groupSlots]bucketTarget // what the installed group's buckets send to
	grouped     bool                     // the group is installed
	dispatching bool                     // new connections go to the group, not the controller
}

// dispatchSpec is what a VIP's dispatch flows are built from; when it
// changes they are replaced.
type dispatchSpec struct {
	key vipKey
	mac [6]byte
	dsr bool
}

func specOf(v *vipState) dispatchSpec { return dispatchSpec{key: v.key, mac: v.mac, dsr: v.dsr()} }

// bucketTarget is where one bucket sends a new connection: the member's
// address and port (NAT).
type bucketTarget struct {
	ip   netip.Addr
	port uint16
}

// routeKey names a VIP's tableToMember rows for a member address, matched
// as the destination (NAT) or in dsrMemberReg (DSR), and the VIP by its
// group in groupReg.
type routeKey struct {
	group uint32
	ip    netip.Addr
	dsr   bool
}

// memberRoute is one tableToMember row as installed.
type memberRoute struct {
	cookie uint64
	mac    [6]byte
	down   bool
	vip    dispatchSpec // NAT: the member's replies have rows of their own; TCP: rows count the clients' FINs and resets
}

// dispatcher is what a switch has installed to dispatch VIPs itself: a
// group and the flows around the connection tracker per VIP, and the
// member routes. It keeps the groups the switch held at the handshake
// until their VIPs' dispatch takes them over.
type dispatcher struct {
	switched map[uint32]*switchedVIP  // the VIPs the switch dispatches, by number
	routes   map[routeKey]memberRoute // tableToMember rows
	adopted  map[uint32]adoptedGroup  // groups the switch held at the handshake, by the number of the VIP they serve
}

func newDispatcher() dispatcher {
	return dispatcher{
		switched: map[uint32]*switchedVIP{},
		routes:   map[routeKey]memberRoute{},
		adopted:  map[uint32]adoptedGroup{},
	}
}

// dispatch brings the switch's groups and dispatch flows to snap and what
// the dataplane learned. It is called after every configuration sync.
func (dp *dataplane) dispatch(now time.Time, snap *snapshot, out *outbox) {
	if !dp.groups {
		return
	}
	dp.dispatcher.dropStale(snap, out)
	dp.redispatch(now, snap, sortedVIPs(snap), nil, out)
}

// dispatchAt is dispatch for what changed at member addresses only: their
// routes, and the buckets of the VIPs with members there. It is called
// when a member's MAC or port is learned, and after a health patch of the
// snapshot the switch had, so that neither costs what every pool holds.
func (dp *dataplane) dispatchAt(now time.Time, snap *snapshot, addrs []netip.Addr, out *outbox) {
	if !dp.groups || len(addrs) == 0 {
		return
	}
	var nums []uint32
	for _, a := range addrs {
		nums = append(nums, snap.switchedMembers[a]...)
	}
	slices.Sort(nums)
	vips := make([]*vipState, 0, len(nums))
	for _, num := range slices.Compact(nums) {
		vips = append(vips, snap.vipByNum[num])
	}
	dp.redispatch(now, snap, vips, addrs, out)
}

// redispatch brings the switched VIPs of vips to snap: a new one's flows
// around the tracker and group id first, then the member routes (at addrs
// only, unless addrs is nil), the buckets, and last the routes no bucket
// sends to any more.
func (dp *dataplane) redispatch(now time.Time, snap *snapshot, vips []*vipState, addrs []netip.Addr, out *outbox) {
	switched := make([]*vipState, 0, len(vips))
	for _, v := range vips {
		if v.switched() {
			dp.dispatcher.dispatchOf(v, out)
			switched = append(switched, v)
		}
	}
	routes := dp.memberRoutes(snap, switched, addrs)
	dp.dispatcher.installRoutes(routes, out)
	for _, v := range switched {
		ready, targets := dp.readyMembers(now, v, out)
		dp.dispatcher.switched[v.num].setMembers(v, ready, targets, out)
	}
	if addrs == nil {
		dp.dispatcher.deleteRoutes(routes, out)
	} else {
		dp.dispatcher.deleteRoutesAt(routes, switched, addrs, out)
	}
}

// dropStale stops the dispatch of every VIP that snap no longer has the
// switch dispatch as it does: its dispatch flows and group go, and a VIP
// that stays gets its service flow back, to the controller.
func (d *dispatcher) dropStale(snap *snapshot, out *outbox) {
	for _, num := range slices.Sorted(maps.Keys(d.switched)) {
		sv := d.switched[num]
		v := snap.vipByNum[num]
		if v != nil && v.switched() && specOf(v) == sv.spec {
			continue
		}
		purge := deleteByCookie(makeCookie(catDispatch, num, 0), maskApp|maskCategory|maskVIP)
		out.send(&purge)
		if v != nil { // the purge took the service flow with it
			punt := servicePunt(v)
			out.send(&punt)
		}
		if sv.grouped {
			out.send(&ofp.GroupMod{Command: ofp.GroupDelete, GroupID: sv.group})
		}
		delete(d.switched, num)
	}
}

// dispatchOf returns the switch's dispatch of v. A new one takes the group
// the switch held for v, else a free group id, and installs the flows
// around the tracker; setMembers installs the group.
func (d *dispatcher) dispatchOf(v *vipState, out *outbox) *switchedVIP {
	if sv := d.switched[v.num]; sv != nil {
		return sv
	}
	sv := &switchedVIP{spec: specOf(v)}
	if a, ok := d.adopted[v.num]; ok {
		sv.group, sv.slots, sv.grouped = a.id, a.slots, true
		delete(d.adopted, v.num)
	} else {
		sv.group = d.freeGroupID(v.num)
	}
	d.switched[v.num] = sv
	for _, fm := range trackedFlows(v, sv.group) {
		out.send(&fm)
	}
	return sv
}

// setMembers points the group's buckets at the ready members, by their
// slots, and sends v's new connections to the group, or to the controller
// while no member is ready.
func (sv *switchedVIP) setMembers(v *vipState, ready []slotMember, targets map[uint32]bucketTarget, out *outbox) {
	if len(ready) == 0 {
		if sv.dispatching {
			fm := undispatchFlow(v)
			out.send(&fm)
			sv.dispatching = false
		}
		return
	}
	sv.slots = assignSlots(sv.slots, ready)
	var buckets [groupSlots]bucketTarget
	for i, num := range sv.slots {
		buckets[i] = targets[num]
	}
	if !sv.grouped || buckets != sv.buckets {
		cmd := ofp.GroupModify
		if !sv.grouped {
			cmd = ofp.GroupAdd
		}
		gm := groupMod(cmd, sv.group, sv.spec, &buckets)
		out.send(&gm)
		sv.grouped, sv.buckets = true, buckets
	}
	if !sv.dispatching {
		fm := dispatchFlow(v, sv.group)
		out.send(&fm)
		sv.dispatching = true
	}
}

// readyMembers returns the members of v's rotation whose MAC the switch
// showed (their route needs it), with where their buckets send; it asks
// for the others by ARP.
func (dp *dataplane) readyMembers(now time.Time, v *vipState, out *outbox) ([]slotMember, map[uint32]bucketTarget) {
	ready := make([]slotMember, 0, len(v.pool.rotation))
	targets := make(map[uint32]bucketTarget, len(v.pool.rotation))
	for _, m := range v.pool.rotation {
		if _, known := dp.learner.host(m.ip); !known {
			dp.askARP(now, v, m.ip, out)
			continue
		}
		ready = append(ready, slotMember{num: m.num, weight: m.share})
		targets[m.num] = bucketTarget{ip: m.ip, port: effectivePort(m, v)}
	}
	return ready, targets
}

// memberRoutes are the tableToMember rows snap wants for the members of
// vips, switched VIPs the switch dispatches, at addrs only unless addrs is
// nil: one per VIP and member address, with the member's MAC, or for a
// DOWN member the controller, which resets the connections still sent to
// it.
func (dp *dataplane) memberRoutes(snap *snapshot, vips []*vipState, addrs []netip.Addr) map[routeKey]memberRoute {
	want := map[routeKey]memberRoute{}
	for _, v := range vips {
		group := dp.dispatcher.switched[v.num].group
		for _, m := range v.pool.members {
			if addrs != nil && !slices.Contains(addrs, m.ip) {
				continue
			}
			h, known := dp.learner.host(m.ip)
			if !known {
				continue
			}
			k := routeKey{group: group, ip: m.ip, dsr: v.dsr()}
			r := memberRoute{cookie: makeCookie(catMemberRoute, v.num, m.num), mac: h.mac, down: m.status == sdnlb.MemberDown,
				vip: specOf(v)}
			if old, ok := want[k]; !ok || r.cookie < old.cookie {
				want[k] = r
			}
		}
	}
	return want
}

// installRoutes adds and changes the rows of want; dispatch calls it
// before the buckets change, so no bucket sends to a member whose row
// still resets its connections (a member back UP).
func (d *dispatcher) installRoutes(want map[routeKey]memberRoute, out *outbox) {
	for _, k := range slices.SortedFunc(maps.Keys(want), compareRoutes) {
		if r := want[k]; d.routes[k] != r {
			for _, fm := range routeFlows(k, r) {
				out.send(&fm)
			}
			d.routes[k] = r
		}
	}
}

// deleteRoutes removes the rows want no longer has; dispatch calls it
// once no bucket sends to them.
func (d *dispatcher) deleteRoutes(want map[routeKey]memberRoute, out *outbox) {
	for _, k := range slices.SortedFunc(maps.Keys(d.routes), compareRoutes) {
		d.deleteRoute(want, k, out)
	}
}

// deleteRoutesAt is deleteRoutes for the rows of vips at addrs, whose
// want holds every row there.
func (d *dispatcher) deleteRoutesAt(want map[routeKey]memberRoute, vips []*vipState, addrs []netip.Addr, out *outbox) {
	for _, v := range vips {
		for _, a := range addrs {
			d.deleteRoute(want, routeKey{group: d.switched[v.num].group, ip: a, dsr: v.dsr()}, out)
		}
	}
}

// deleteRoute removes the row of k when the switch has it and want not.
func (d *dispatcher) deleteRoute(want map[routeKey]memberRoute, k routeKey, out *outbox) {
	r, installed := d.routes[k]
	if _, wanted := want[k]; installed && !wanted {
		fm := deleteByCookie(r.cookie, ^uint64(0))
		out.send(&fm)
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
func (dp *dataplane) answerMemberRoute(p *packetIn, memberNum uint32, out *outbox) bool {
	m := p.snap.member(memberNum)
	if m == nil || !p.hasIP() {
		return false
	}
	if m.status != sdnlb.MemberDown {
		h, known := dp.learner.host(m.ip)
		if !known || h.port == 0 {
			return false
		}
		dp.out.Port = h.port
		dp.sendFrame(p.inPort, []ofp.Action{ofp.ActionSetField{Field: ofp.MatchEthDst(h.mac)}, &dp.out}, p.frame, out)
		return true
	}
	if !p.hasTCP || p.tcp.RST {
		return false
	}
	pool := p.snap.pools[m.poolID]
	if pool == nil || pool.vip == nil || !pool.vip.carries(protoTCP) {
		return false
	}
	v := pool.vip
	r := rstFor(p.decoder, v.mac)
	r.src = v.ip
	if v.port != 0 { // else the client asked for the member's port
		r.sport = v.port
	}
	dp.frame = appendTCPRST(dp.frame[:0], r)
	dp.packetOut(p.inPort, ofp.PortInPort, dp.frame, out)
	dp.metrics.refusals[refusedNoFlow].Inc()
	return true
}

// trackedFlows are a SWITCH VIP's flows around the connection tracker:
// its service into the VIP zone; in tableTracked new connections to the
// controller (until the group is ready), tracked ones to their member and
// the rest (invalid) dropped; for NAT, in tableFromMember its connections'
// replies back from the VIP, for DSR its members' replies through the VIP
// zone.
func trackedFlows(v *vipState, group uint32) []ofp.FlowMod {
	cookie := makeCookie(catDispatch, v.num, 0)
	unknown := append([]ofp.OXM{ofp.MatchCTLabel([16]byte{})}, v.service()...)
	flows := []flow{{table: tableTracked, cookie: cookie, priority: prioTrackedUnknown + v.onePort(), match: unknown}}
	if v.dsr() {
		tracked := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk)}, v.service()...)
		name := []ofp.Action{nameGroup(group)}
		if v.ip.Is4() { // an IPv6 member is routed by the label itself, which a register cannot hold
			name = append([]ofp.Action{ofp.ActionRegMove{NBits: 32, Src: ofp.NXMCTLabel, Dst: ofp.NXMReg(dsrMemberReg)}}, name...)
		}
		flows = append(flows,
			flow{table: tableTracked, cookie: cookie, priority: prioTrackedForward + v.onePort(), match: tracked,
				actions: name, gotoTable: tableToMember},
			flow{cookie: cookie, priority: prioVIPReply + v.onePort(),
				match:   serviceMatch(v.proto, v.ip, fromService, v.port),
				actions: []ofp.Action{ofp.ActionCT{Zone: ctZoneVIP, Table: ofp.CTRecircNone}}, gotoTable: tableL2})
	} else {
		flows = append(flows, natTranslations(v, cookie, group)...)
	}
	// Last, once the tables behind it are ready: the service into the tracker.
	flows = append(flows, flow{cookie: cookie, priority: prioVIPPunt + v.onePort(), match: v.service(), actions: []ofp.Action{trackVIP}})
	mods := make([]ofp.FlowMod, 0, len(flows)+1)
	mods = append(mods, undispatchFlow(v))
	for _, f := range flows {
		mods = append(mods, f.add())
	}
	return mods
}

// natTranslations are a SWITCH NAT VIP's rows that address a tracked
// connection's packets to its member (a new one's first packet, just
// committed by a bucket, is committed in the member zone too) and its
// member's replies back from the VIP, one set per translation.
func natTranslations(v *vipState, cookie uint64, group uint32) []flow {
	var flows []flow
	for _, t := range v.translations() {
		prio := translationPriority(v.key, t)

		service := v.service()
		if t.proto != v.proto {
			service = serviceMatch(t.proto, v.ip, toService, 0)
		}
		tracked := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk|ofp.CTStateNew)}, service...)
		committed := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateTrk|ofp.CTStateNew)}, service...)
		translate := []ofp.Action{nameGroup(group), labelToDst(v.ip)}
		if t.dst != 0 {
			translate = append(translate, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: t.dst})
		}
		toMember := append(slices.Clone(translate), ofp.ActionCT{Zone: ctZoneMember, Table: ofp.CTRecircNone})
		var commit []ofp.Action
		memberZone := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel(addressLabel(v.key.ip))},
			ofp.ActionSetField{Field: ofp.MatchCTMark(serviceMark(v.key), 0xffffffff)}}
		if v.key.everyPort() && t.dst != 0 { // the client's port, before it becomes the member's
			commit = append(commit, ofp.ActionRegMove{NBits: 16, Src: t.dst, Dst: ofp.NXMReg(clientPortReg)})
			memberZone = append(memberZone, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMReg(clientPortReg), Dst: ofp.NXMCTMark})
		}
		commit = append(append(commit, translate...),
			ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneMember, Table: tableToMember, Actions: memberZone})

		replies := replyRow(specOf(v), t)
		replies.cookie, replies.priority = cookie, prioFromMemberTracked+prio

		if t.proto == protoTCP {
			// A SYN on a connection the tracker holds reopens it (a client
			// reusing its ports, which the tracker may still count as
			// established): commit it in the member zone again, so the
			// member zone names this VIP.
			resyn := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk|ofp.CTStateNew)}, service...)
			resyn = append(resyn, ofp.MatchTCPFlags(ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK))
			flows = append(flows, flow{table: tableTracked, cookie: cookie, priority: prioTrackedSYN + prio, match: resyn, actions: commit})
		}
		flows = append(flows,
			flow{table: tableTracked, cookie: cookie, priority: prioTrackedForward + prio, match: committed, actions: commit},
			flow{table: tableTracked, cookie: cookie, priority: prioTrackedForward + prio, match: tracked,
				actions: toMember, gotoTable: tableToMember},
			replies)
	}
	return flows
}

// translationPriority is what a VIP's rows for translation t add to their
// priority: a VIP on one port wins over one on every port (onePort), and
// a VIP of every protocol takes TCP and UDP before the rest.
func translationPriority(k vipKey, t translation) uint16 {
	var prio uint16
	if hasPorts(k.proto) && k.port != 0 {
		prio = 1
	}
	if t.proto != k.proto {
		prio++
	}
	return prio
}

// replyRow is a SWITCH NAT VIP's tableFromMember row for translation t:
// the replies of its connections, which the member zone names by the VIP's
// address (label) and service (mark), go back from the VIP.
func replyRow(s dispatchSpec, t translation) flow {
	mark := ofp.MatchCTMark(serviceMark(s.key), 0xffffffff)
	if s.key.port == 0 { // the port is the client's, whatever it is
		mark = ofp.MatchCTMark(serviceMark(s.key), 0xffff0000)
	}
	match := []ofp.OXM{ofp.MatchEthType(ethTypeOf(s.key.ip))}
	if t.proto != protoAny {
		match = append(match, ofp.MatchIPProto(wireProto(t.proto, s.key.ip)))
	}
	match = append(match, ofp.MatchCTLabel(addressLabel(s.key.ip)), mark)
	fromVIP := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchEthSrc(s.mac)}, ofp.ActionSetField{Field: matchIPSrc(s.key.ip)}}
	if t.src != 0 {
		fromVIP = append(fromVIP, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: t.src})
	}
	fromVIP = append(fromVIP, ofp.ActionCT{Zone: ctZoneVIP, Table: ofp.CTRecircNone})
	return flow{table: tableFromMember, match: match, actions: fromVIP, gotoTable: tableL2}
}

// nameGroup names a VIP's group in groupReg for tableToMember.
func nameGroup(group uint32) ofp.Action {
	return ofp.ActionSetField{Field: ofp.MatchReg(groupReg, group, 0xffffffff)}
}

// dispatchFlow sends v's new connections to its group.
func dispatchFlow(v *vipState, group uint32) ofp.FlowMod {
	f := newConnectionFlow(v)
	f.actions = []ofp.Action{ofp.ActionGroup{GroupID: group}}
	return f.add()
}

// freeGroupID is the id for a new group of the VIP numbered vipNum: its
// number, unless a group on the switch has it; then the lowest free id.
func (d *dispatcher) freeGroupID(vipNum uint32) uint32 {
	taken := func(id uint32) bool {
		for _, sv := range d.switched {
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

// undispatchFlow sends v's new connections to the controller.
func undispatchFlow(v *vipState) ofp.FlowMod {
	f := newConnectionFlow(v)
	f.actions = []ofp.Action{toController}
	return f.add()
}

// newConnectionFlow is the row that takes v's new connections, without
// its actions.
func newConnectionFlow(v *vipState) flow {
	isNew := ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateTrk|ofp.CTStateNew|ofp.CTStateInv)
	return flow{table: tableTracked, cookie: makeCookie(catDispatch, v.num, 0), priority: prioTrackedNew + v.onePort(),
		match: append([]ofp.OXM{isNew, ofp.MatchCTLabel([16]byte{})}, v.service()...)}
}

// groupMod builds a VIP's select group: one equal bucket per slot.
func groupMod(cmd ofp.GroupModCommand, groupID uint32, spec dispatchSpec, targets *[groupSlots]bucketTarget) ofp.GroupMod {
	buckets := make([]ofp.Bucket, groupSlots)
	for i, t := range targets {
		buckets[i] = ofp.Bucket{Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: bucketActions(spec, t)}
	}
	return ofp.GroupMod{Command: cmd, GroupType: ofp.GroupTypeSelect, GroupID: groupID, Buckets: buckets}
}

// bucketActions commit a new connection in the VIP zone with its member t
// (address, and for NAT port: the client's for a member without one on a
// VIP on every port) and send it back to tableTracked, which routes it as
// a tracked one. A bucket is an action set, which holds one ct and no
// action after it, so everything else happens in the tables.
func bucketActions(spec dispatchSpec, t bucketTarget) []ofp.Action {
	exec := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel(addressLabel(t.ip))}}
	switch {
	case spec.dsr:
	case t.port == 0 && spec.key.everyPort():
		exec = append(exec, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMTCPDst, Dst: ofp.NXMCTMark})
	default:
		exec = append(exec, ofp.ActionSetField{Field: ofp.MatchCTMark(uint32(t.port), 0xffffffff)})
	}
	return []ofp.Action{ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneVIP, Table: tableTracked, Actions: exec}}
}

// bucketTargetOf reads the member a bucket commits its connection to in
// the VIP zone: the address in the label, the port in the mark (none for
// DSR, or when the member serves the port the client asked for).
func bucketTargetOf(actions []ofp.Action) (ip netip.Addr, port uint16, ok bool) {
	for _, a := range actions {
		ct, isCT := a.(ofp.ActionCT)
		if !isCT || ct.Zone != ctZoneVIP || ct.Flags&ofp.CTCommit == 0 {
			continue
		}
		for _, a := range ct.Actions {
			sf, isSet := a.(ofp.ActionSetField)
			switch {
			case !isSet || sf.Field.Class != ofp.NXMCTLabel.Class():
			case sf.Field.Field == ofp.NXMCTLabel.Field():
				if v := sf.Field.Value(); len(v) == 16 {
					ip = labelAddress([16]byte(v))
				}
			case sf.Field.Field == ofp.NXMCTMark.Field():
				port = uint16(sf.Field.Uint())
			}
		}
		return ip, port, ip.IsValid()
	}
	return netip.Addr{}, 0, false
}

// routeFlows are a member address's tableToMember rows: the route, and the
// same for new connections alone, whose counter is the member's
// connection count. A DOWN member's rows send to the controller instead;
// they are modified rather than deleted, so the switch keeps their
// counters (an add over an existing row copies them).
func routeFlows(k routeKey, r memberRoute) []ofp.FlowMod {
	match := []ofp.OXM{ofp.MatchEthType(ethTypeOf(k.ip)), matchIPDst(k.ip)}
	switch {
	case k.dsr && k.ip.Is6():
		match[1] = ofp.MatchCTLabel(addressLabel(k.ip))
	case k.dsr:
		match[1] = ofp.MatchReg(dsrMemberReg, ipUint(k.ip.As4()), 0xffffffff)
	}
	match = append(match, ofp.MatchReg(groupReg, k.group, 0xffffffff))
	f := flow{table: tableToMember, cookie: r.cookie, priority: prioMemberRoute, match: match,
		actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchEthDst(r.mac)}}, gotoTable: tableL2}
	if r.down {
		f.actions, f.gotoTable = []ofp.Action{toController}, 0
	}
	row := func(priority uint16, match []ofp.OXM) ofp.FlowMod {
		g := f
		g.priority, g.match = priority, match
		return g.add()
	}
	mods := []ofp.FlowMod{row(prioMemberNew,
		append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateTrk|ofp.CTStateNew)}, f.match...))}
	if r.vip.key.proto == protoTCP || r.vip.key.proto == protoAny {
		// The protocol right after the EtherType, before what needs it.
		tcp := append([]ofp.OXM{f.match[0], ofp.MatchIPProto(protoTCP)}, f.match[1:]...)
		mods = append(mods,
			row(prioMemberFIN, append(slices.Clone(tcp), ofp.MatchTCPFlags(ofp.TCPFlagFIN, ofp.TCPFlagFIN))),
			row(prioMemberRST, append(slices.Clone(tcp), ofp.MatchTCPFlags(ofp.TCPFlagRST, ofp.TCPFlagRST|ofp.TCPFlagFIN))))
	}
	if !k.dsr {
		// The member's replies to this VIP's clients, as the VIP's row for
		// them: counted for this VIP's member alone. A DOWN member has none,
		// as it has no reply flow.
		for _, t := range translationsOf(r.vip.key.proto) {
			reply := replyRow(r.vip, t)
			reply.cookie, reply.priority = r.cookie, prioFromMemberOwn+translationPriority(r.vip.key, t)
			reply.match = append(reply.match, matchIPSrc(k.ip))
			rows := []flow{reply}
			if t.proto == protoTCP {
				reset := reply
				reset.priority += prioFromMemberReset - prioFromMemberOwn
				reset.match = append(slices.Clone(reply.match), ofp.MatchTCPFlags(ofp.TCPFlagRST, ofp.TCPFlagRST))
				rows = append(rows, reset)
			}
			for _, f := range rows {
				if r.down {
					mods = append(mods, f.remove())
				} else {
					mods = append(mods, f.add())
				}
			}
		}
	}
	return append(mods, f.add())
}

// routedAddress is the member address a tableToMember row routes: its
// destination (NAT) or dsrMemberReg (DSR; IPv6: the connection's label).
func routedAddress(m *ofp.Match) (netip.Addr, bool) {
	if dst, ok := matchedDst(m); ok {
		return dst, true
	}
	if l, ok := m.GetNX(ofp.NXMCTLabel); ok && len(l.Value()) == 16 {
		return netip.AddrFrom16([16]byte(l.Value())), true
	}
	reg := ofp.MatchReg(dsrMemberReg, 0, 0xffffffff)
	for _, o := range m.OXMs {
		if o.Class == reg.Class && o.Field == reg.Field && !o.HasMask {
			return netip.AddrFrom4(uintIP(uint32(o.Uint()))), true
		}
	}
	return netip.Addr{}, false
}

// compareRoutes orders routes by address, then group.
func compareRoutes(a, b routeKey) int {
	if c := a.ip.Compare(b.ip); c != 0 {
		return c
	}
	return cmp.Compare(a.group, b.group)
}
