package controller

import (
	"cmp"
	"encoding/binary"
	"maps"
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
// DSR: the VIP's service flow sends to the group, whose buckets rewrite
// the destination MAC and output to the member's port.
//
// NAT: the connection tracker remembers each connection's member, and the
// flows translate. The tracker is asked to translate nothing itself: Open
// vSwitch 3.1.0 to 3.1.2 let a closed NAT connection's reverse key outlive
// it and then rewrite a new connection's source port (see
// docs/ARCHITECTURE.md, "Port reuse through the userspace connection
// tracker"). A connection is tracked twice. In the VIP zone, as the client
// addresses it, its label is the member's address and its mark the
// member's port; in the member zone, as the member sees it, its label is
// the VIP's address and its mark the VIP's protocol and port. The service
// flow sends into the VIP zone and on to tableTracked. There a new
// connection goes to the group, whose buckets commit it in the VIP zone,
// address it to a member, commit it in the member zone and continue in
// tableToMember; a tracked one is addressed to the member its label and
// mark name, passes the member zone and goes to tableToMember, which sets
// the member's MAC. A member's replies go through the member zone into
// tableFromMember, where the VIP their connection names becomes their
// source again; they pass the VIP zone on their way to the client. An
// established connection keeps its member whatever the buckets become,
// both zones see every packet of it, and a member's own traffic is never
// rewritten.
//
// Buckets need the member's MAC (and, for DSR, its port): a member the
// switch has not been seen answering is asked by ARP and left out until it
// answers. While no member is ready, new connections go to the controller,
// which holds or refuses them as for CONTROLLER dispatch.

// dsrMemberReg is the register a DSR bucket writes its member's address
// to.
const dsrMemberReg = 0

// trackVIP sends a client's packet through the tracker's VIP zone and on
// to tableTracked; trackMember a member's reply through the member zone
// and on to tableFromMember.
var (
	trackVIP    = ofp.ActionCT{Zone: ctZoneVIP, Table: tableTracked}
	trackMember = ofp.ActionCT{Zone: ctZoneMember, Table: tableFromMember}
)

// addressLabel is the connection label that names an address: its low 32
// bits.
func addressLabel(ip uint32) [16]byte {
	var label [16]byte
	binary.BigEndian.PutUint32(label[12:], ip)
	return label
}

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

func (v *vipState) translations() []translation {
	tcp := translation{protoTCP, ofp.NXMTCPDst, ofp.NXMTCPSrc}
	udp := translation{protoUDP, ofp.NXMUDPDst, ofp.NXMUDPSrc}
	switch v.proto {
	case protoAny:
		return []translation{tcp, udp, {proto: protoAny}}
	case protoTCP:
		return []translation{tcp}
	case protoUDP:
		return []translation{udp}
	}
	return []translation{{proto: v.proto}}
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
// address and port, and for DSR its MAC and switch port.
type bucketTarget struct {
	ip     [4]byte
	port   uint16
	mac    [6]byte
	ofPort uint32
}

// memberRoute is one tableToMember row as installed.
type memberRoute struct {
	cookie uint64
	mac    [6]byte
	down   bool
}

// dispatch brings the switch's groups and dispatch flows to snap and what
// the dataplane learned. It is called after every configuration sync and
// when a member's MAC or port is learned.
func (dp *dataplane) dispatch(now time.Time, snap *snapshot, out *outbox) {
	if !dp.groups {
		return
	}
	for _, num := range slices.Sorted(maps.Keys(dp.switched)) {
		sv := dp.switched[num]
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
		delete(dp.switched, num)
	}
	for _, v := range sortedVIPs(snap) {
		if v.switched() {
			dp.dispatchVIP(now, v, out)
		}
	}
	dp.routeMembers(snap, out)
}

func (dp *dataplane) dispatchVIP(now time.Time, v *vipState, out *outbox) {
	sv := dp.switched[v.num]
	if sv == nil {
		sv = &switchedVIP{spec: specOf(v)}
		if a, ok := dp.adopted[v.num]; ok {
			sv.group, sv.slots, sv.grouped = a.id, a.slots, true
			delete(dp.adopted, v.num)
		} else {
			sv.group = dp.freeGroupID(v.num)
		}
		dp.switched[v.num] = sv
		if !sv.spec.dsr {
			for _, fm := range trackedFlows(v) {
				out.send(&fm)
			}
		}
	}
	ready, targets := dp.readyMembers(now, v, out)
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
		if sv.spec.dsr {
			dp.bankGroupCounters(dp.installed)
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

// readyMembers returns the members of v's rotation whose MAC and port the
// switch showed, with where their buckets send; it asks for the others by
// ARP.
func (dp *dataplane) readyMembers(now time.Time, v *vipState, out *outbox) ([]slotMember, map[uint32]bucketTarget) {
	ready := make([]slotMember, 0, len(v.pool.rotation))
	targets := make(map[uint32]bucketTarget, len(v.pool.rotation))
	for _, m := range v.pool.rotation {
		h, known := dp.hosts[ipUint(m.ip)]
		if !known || v.dsr() && h.port == 0 {
			dp.askARP(now, v, m.ip, out)
			continue
		}
		ready = append(ready, slotMember{num: m.num, weight: m.weight})
		t := bucketTarget{ip: m.ip, port: effectivePort(m, v)}
		if v.dsr() { // NAT buckets name no MAC or port: the route has the MAC
			t.mac, t.ofPort = h.mac, h.port
		}
		targets[m.num] = t
	}
	return ready, targets
}

// routeMembers keeps one tableToMember row per member address of the SWITCH
// NAT pools: the member's MAC, or for a DOWN member the controller, which
// resets the connections still sent to it.
func (dp *dataplane) routeMembers(snap *snapshot, out *outbox) {
	want := map[[4]byte]memberRoute{}
	for _, v := range snap.vipByID {
		if !v.switched() || v.dsr() {
			continue
		}
		for _, m := range v.pool.members {
			h, known := dp.hosts[ipUint(m.ip)]
			if !known {
				continue
			}
			r := memberRoute{cookie: makeCookie(catMemberRoute, 0, m.num), mac: h.mac, down: m.status == sdnlb.MemberDown}
			if old, ok := want[m.ip]; !ok || r.cookie < old.cookie {
				want[m.ip] = r
			}
		}
	}
	for _, ip := range slices.SortedFunc(maps.Keys(dp.routes), compareIP) {
		if _, ok := want[ip]; !ok {
			fm := deleteByCookie(dp.routes[ip].cookie, ^uint64(0))
			out.send(&fm)
			delete(dp.routes, ip)
		}
	}
	for _, ip := range slices.SortedFunc(maps.Keys(want), compareIP) {
		if r := want[ip]; dp.routes[ip] != r {
			for _, fm := range routeFlows(ip, r) {
				out.send(&fm)
			}
			dp.routes[ip] = r
		}
	}
}

// askARP asks who has ip, at most every arpRetry, by an ARP probe (RFC
// 5227: sender address 0) from v's MAC: a DSR member holds the VIP's
// address itself and ignores requests from it, and no member's ARP cache
// is touched. The answer comes back to v's MAC.
func (dp *dataplane) askARP(now time.Time, v *vipState, ip [4]byte, out *outbox) {
	if now.Sub(dp.arpAsked[ipUint(ip)]) < arpRetry {
		return
	}
	dp.arpAsked[ipUint(ip)] = now
	dp.frame = appendARP(dp.frame[:0], arpRequest, broadcastMAC, v.mac, [4]byte{}, [6]byte{}, ip)
	dp.packetOut(ofp.PortController, ofp.PortFlood, dp.frame, out)
	if dp.debug {
		dp.log.Debug("member MAC unknown; asking by ARP", "member", ipString(ip))
	}
}

// resetToDownMember answers a packet that a DOWN member's route sent up:
// a TCP client still sending on a connection to the member gets a reset
// from the VIP, so it fails now instead of retransmitting into a void.
func (dp *dataplane) resetToDownMember(p *packetIn, memberNum uint32, out *outbox) bool {
	m := p.snap.memberByNum[memberNum]
	if m == nil || !p.hasIPv4 || !p.hasTCP || p.tcp.RST {
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

// trackedFlows are a SWITCH NAT VIP's flows around the connection
// tracker: its service into the VIP zone; in tableTracked new connections
// to the controller (until the group is ready), tracked ones to their
// member and the rest (invalid) dropped; in tableFromMember its
// connections' replies back from the VIP.
func trackedFlows(v *vipState) []ofp.FlowMod {
	cookie := makeCookie(catDispatch, v.num, 0)
	unknown := append([]ofp.OXM{ofp.MatchCTLabel([16]byte{})}, v.service()...)
	flows := []flow{{table: tableTracked, cookie: cookie, priority: prioTrackedUnknown + v.onePort(), match: unknown}}

	replyMark := ofp.MatchCTMark(serviceMark(v.key), 0xffffffff)
	if v.port == 0 { // the port is the client's, whatever it is
		replyMark = ofp.MatchCTMark(serviceMark(v.key), 0xffff0000)
	}
	for _, t := range v.translations() {
		// A VIP of every protocol: TCP and UDP before the rest.
		prio := v.onePort()
		if t.proto != v.proto {
			prio++
		}

		service := v.service()
		if t.proto != v.proto {
			service = serviceMatch(t.proto, ofp.MatchIPv4Dst(v.ip), l4Dst, 0, icmpEchoRequest)
		}
		tracked := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk|ofp.CTStateNew)}, service...)
		toMember := []ofp.Action{ofp.ActionRegMove{NBits: 32, Src: ofp.NXMCTLabel, Dst: ofp.NXMIPDst}}
		if t.dst != 0 {
			toMember = append(toMember, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: t.dst})
		}
		toMember = append(toMember, ofp.ActionCT{Zone: ctZoneMember, Table: ofp.CTRecircNone})

		replies := []ofp.OXM{ofp.MatchEthType(ethTypeIPv4)}
		if t.proto != protoAny {
			replies = append(replies, ofp.MatchIPProto(t.proto))
		}
		replies = append(replies, ofp.MatchCTLabel(addressLabel(v.key.ip)), replyMark)
		fromVIP := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchEthSrc(v.mac)}, ofp.ActionSetField{Field: ofp.MatchIPv4Src(v.ip)}}
		if t.src != 0 {
			fromVIP = append(fromVIP, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: t.src})
		}
		fromVIP = append(fromVIP, ofp.ActionCT{Zone: ctZoneVIP, Table: ofp.CTRecircNone})

		flows = append(flows,
			flow{table: tableTracked, cookie: cookie, priority: prioTrackedForward + prio, match: tracked,
				actions: toMember, gotoTable: tableToMember},
			flow{table: tableFromMember, cookie: cookie, priority: prioFromMemberTracked + prio, match: replies,
				actions: fromVIP, gotoTable: tableL2})
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

// dispatchFlow sends v's new connections to its group: from tableTracked
// for NAT, straight from the service flow for DSR.
func dispatchFlow(v *vipState, group uint32) ofp.FlowMod {
	f := newConnectionFlow(v)
	f.actions = []ofp.Action{ofp.ActionGroup{GroupID: group}}
	return f.add()
}

// freeGroupID is the id for a new group of the VIP numbered vipNum: its
// number, unless a group on the switch has it; then the lowest free id.
func (dp *dataplane) freeGroupID(vipNum uint32) uint32 {
	taken := func(id uint32) bool {
		for _, sv := range dp.switched {
			if sv.group == id {
				return true
			}
		}
		for _, a := range dp.adopted {
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

// switchedByGroup is the VIP dispatch that owns the switch's group id.
func (dp *dataplane) switchedByGroup(id uint32) *switchedVIP {
	for _, sv := range dp.switched {
		if sv.group == id {
			return sv
		}
	}
	return nil
}

// undispatchFlow sends v's new connections to the controller.
func undispatchFlow(v *vipState) ofp.FlowMod {
	if v.dsr() {
		return servicePunt(v)
	}
	f := newConnectionFlow(v)
	f.actions = []ofp.Action{toController}
	return f.add()
}

// newConnectionFlow is the row that takes v's new connections, without
// its actions.
func newConnectionFlow(v *vipState) flow {
	if v.dsr() {
		return flow{cookie: makeCookie(catDispatch, v.num, 0), priority: prioVIPPunt + v.onePort(), match: v.service()}
	}
	isNew := ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateTrk|ofp.CTStateNew|ofp.CTStateInv)
	return flow{table: tableTracked, cookie: makeCookie(catDispatch, v.num, 0), priority: prioTrackedNew + v.onePort(),
		match: append([]ofp.OXM{isNew}, v.service()...)}
}

// groupMod builds a VIP's select group: one equal bucket per slot.
func groupMod(cmd ofp.GroupModCommand, groupID uint32, spec dispatchSpec, targets *[groupSlots]bucketTarget) ofp.GroupMod {
	buckets := make([]ofp.Bucket, groupSlots)
	for i, t := range targets {
		var actions []ofp.Action
		if spec.dsr {
			// reg0 changes nothing in the datapath; it names the member's
			// address, so a restarted controller can tell whose bucket
			// this is (see adopt.go).
			actions = []ofp.Action{ofp.ActionSetField{Field: ofp.MatchReg(dsrMemberReg, ipUint(t.ip), 0xffffffff)},
				ofp.ActionSetField{Field: ofp.MatchEthDst(t.mac)}, ofp.ActionOutput{Port: t.ofPort}}
		} else {
			actions = natBucket(spec.key, t)
		}
		buckets[i] = ofp.Bucket{Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: actions}
	}
	return ofp.GroupMod{Command: cmd, GroupType: ofp.GroupTypeSelect, GroupID: groupID, Buckets: buckets}
}

// natBucket commits a new connection to the VIP k in the VIP zone with its
// member t, addresses it to t, commits it in the member zone with the VIP
// and goes on to tableToMember.
func natBucket(k vipKey, t bucketTarget) []ofp.Action {
	var actions []ofp.Action
	member := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel(addressLabel(ipUint(t.ip)))},
		ofp.ActionSetField{Field: ofp.MatchCTMark(uint32(t.port), 0xffffffff)}}
	vip := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel(addressLabel(k.ip))},
		ofp.ActionSetField{Field: ofp.MatchCTMark(serviceMark(k), 0xffffffff)}}
	if k.everyPort() {
		clientPort := ofp.ActionRegMove{NBits: 16, Src: ofp.NXMReg(clientPortReg), Dst: ofp.NXMCTMark}
		actions = append(actions, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMTCPDst, Dst: ofp.NXMReg(clientPortReg)})
		vip = append(vip, clientPort)
		if t.port == 0 { // the member serves the port the client asked for
			member[1] = clientPort
		}
	}
	actions = append(actions,
		ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneVIP, Table: ofp.CTRecircNone, Actions: member},
		ofp.ActionSetField{Field: ofp.MatchIPv4Dst(t.ip)})
	if t.port != 0 {
		switch k.proto {
		case protoTCP, protoUDP:
			actions = append(actions, ofp.ActionSetField{Field: l4Dst(k.proto, t.port)})
		case protoAny: // each applies to its protocol only
			actions = append(actions, ofp.ActionSetField{Field: l4Dst(protoTCP, t.port)},
				ofp.ActionSetField{Field: l4Dst(protoUDP, t.port)})
		}
	}
	return append(actions, ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneMember, Table: tableToMember, Actions: vip})
}

// routeFlows are a member address's tableToMember rows: the route, and the
// same for new connections alone, whose counter is the member's
// connection count. A DOWN member's rows send to the controller instead;
// they are modified rather than deleted, so the switch keeps their
// counters (an add over an existing row copies them).
func routeFlows(ip [4]byte, r memberRoute) []ofp.FlowMod {
	f := flow{table: tableToMember, cookie: r.cookie, priority: prioMemberRoute,
		match:   []ofp.OXM{ofp.MatchEthType(ethTypeIPv4), ofp.MatchIPv4Dst(ip)},
		actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchEthDst(r.mac)}}, gotoTable: tableL2}
	if r.down {
		f.actions, f.gotoTable = []ofp.Action{toController}, 0
	}
	isNew := f
	isNew.priority = prioMemberNew
	isNew.match = append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateTrk|ofp.CTStateNew)}, f.match...)
	return []ofp.FlowMod{isNew.add(), f.add()}
}

func compareIP(a, b [4]byte) int { return cmp.Compare(ipUint(a), ipUint(b)) }
