package model

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/flowhash"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// In-switch dispatch. For a pool with SWITCH dispatch the switch picks the
// member of each new connection itself, from a select group whose buckets
// are the slots of AssignSlots; the controller changes the buckets when
// the rotation or what the switch learned changes, never per connection.
//
// Both forwardings keep each connection's member in the switch's
// connection tracker, so that an established connection keeps its member
// whatever the buckets become: drains, additions, deletions and weight
// changes move new connections only. The tracker remembers and the flows
// translate; its own NAT is not used (Open vSwitch 3.1.0 to 3.1.2 let a
// closed NAT connection's reverse key outlive it and then rewrite a new
// connection's source port: docs/DATAPATH.md, "Port reuse through the
// userspace connection tracker").
//
// The service flow sends into the tracker's VIP zone and on to
// TableTracked, where a new connection goes to the group. A bucket is an
// action set, which holds one ct and nothing after it: it commits the
// connection in the VIP zone, with the member's address as its label (NAT:
// and its port as its mark), and recirculates to TableTracked, where the
// connection is now a tracked one, routed by its label:
//
// DSR: dsrMemberReg gets the member's address, and TableToMember's row for
// it sets its MAC. The members answer from the VIP's address; their
// replies pass the VIP zone on their way to the client, so the tracker
// sees both directions.
//
// NAT: the packet is addressed to the member from the label and mark and
// passes the member zone, where the connection, as the member sees it, has
// the VIP's address as its label and its protocol and port as its mark;
// the first packet, and a SYN that reopens the connection, commit that.
// TableToMember sets the member's MAC. A member's replies go through the
// member zone into TableFromMember, where the VIP their connection names
// becomes their source again, and pass the VIP zone on their way to the
// client. A member's own traffic is never rewritten.
//
// A member's route needs its MAC: a member the switch has not been seen
// answering is asked by ARP and left out of the buckets until it answers.
// While no member is ready, new connections go to the controller, which
// holds or refuses them as for CONTROLLER dispatch.

// dsrMemberReg is the register that names a DSR connection's member in
// TableToMember: its address, from the bucket for a new connection, from
// the connection's label for a tracked one.
const dsrMemberReg = 0

// groupReg is the register that names a tracked connection's VIP in
// TableToMember, by the VIP's group on the switch: each VIP has its own
// rows for a member there, so that pools sharing a member's address count
// their traffic apart. The group's id, unlike the VIP's number, survives a
// restart of the controller, so adopted rows keep matching.
const groupReg = 2

// trackVIP sends a client's packet through the tracker's VIP zone and on
// to TableTracked; trackMember a member's reply through the member zone
// and on to TableFromMember.
var (
	trackVIP    = ofp.ActionCT{Zone: ctZoneVIP, Table: TableTracked}
	trackMember = ofp.ActionCT{Zone: ctZoneMember, Table: TableFromMember}
)

// serviceMark is the connection mark that names a VIP's service in the
// member zone: its protocol and port. For a VIP on every port, the port is
// the one the client asked for, which the bucket keeps in clientPortReg
// before it addresses the member.
func serviceMark(k VIPKey) uint32 { return uint32(k.Proto)<<16 | uint32(k.Port) }

// clientPortReg is the register a NAT bucket of a VIP on every port keeps
// the client's destination port in.
const clientPortReg = 1

// everyPort says whether connections to the VIP keep the port the client
// asked for, unless the member names its own: a VIP on every port of TCP
// or UDP, or of every protocol.
func (k VIPKey) everyPort() bool { return k.Port == 0 && (HasPorts(k.Proto) || k.Proto == protoAny) }

// translation is how one protocol of a VIP's connections is translated:
// its port fields, or none. A VIP of every protocol has one for TCP, one
// for UDP and one for the rest.
type translation struct {
	proto    uint8
	dst, src ofp.NXMHeader // 0: no ports
}

func (v *VIP) translations() []translation { return translationsOf(v.Proto) }

// translationsOf is translations for a VIP of proto.
func translationsOf(proto uint8) []translation {
	tcp := translation{ofp.IPProtoTCP, ofp.NXMTCPDst, ofp.NXMTCPSrc}
	udp := translation{ofp.IPProtoUDP, ofp.NXMUDPDst, ofp.NXMUDPSrc}
	switch proto {
	case protoAny:
		return []translation{tcp, udp, {proto: protoAny}}
	case ofp.IPProtoTCP:
		return []translation{tcp}
	case ofp.IPProtoUDP:
		return []translation{udp}
	}
	return []translation{{proto: proto}}
}

// DispatchSpec is what a VIP's dispatch flows are built from; when it
// changes they are replaced.
type DispatchSpec struct {
	Key VIPKey
	mac [6]byte
	dsr bool
	// slotHash: a new connection's slot is the link this multipath gives
	// it, into TableSlots (SOURCE_IP, CONSISTENT_HASH); zero: the select
	// group picks.
	slotHash ofp.ActionMultipath
}

func SpecOf(v *VIP) DispatchSpec {
	s := DispatchSpec{Key: v.Key, mac: v.MAC, dsr: v.DSR()}
	if v.Pool != nil {
		s.slotHash = v.Pool.slotHash()
	}
	return s
}

// Slotted reports whether s picks a new connection's slot by a multipath
// hash into TableSlots, rather than by a select group's bucket.
func (s DispatchSpec) Slotted() bool { return s.slotHash != ofp.ActionMultipath{} }

// BucketTarget is where one bucket sends a new connection: the member's
// address and port (NAT).
type BucketTarget struct {
	IP   netip.Addr
	Port uint16
}

// RouteKey names a VIP's TableToMember rows for a member address, matched
// as the destination (NAT) or in dsrMemberReg (DSR), and the VIP by its
// group in groupReg.
type RouteKey struct {
	Group uint32
	IP    netip.Addr
	DSR   bool
}

// MemberRoute is one TableToMember row as installed.
type MemberRoute struct {
	Cookie uint64
	MAC    [6]byte
	Down   bool
	VIP    DispatchSpec // NAT: the member's replies have rows of their own; TCP: rows count the clients' FINs and resets
}

// TrackedFlows are a SWITCH VIP's flows around the connection tracker:
// its service into the VIP zone; in TableTracked new connections to the
// controller (until the group is ready), tracked ones to their member and
// the rest (invalid) dropped; for NAT, in TableFromMember its connections'
// replies back from the VIP, for DSR its members' replies through the VIP
// zone.
func TrackedFlows(v *VIP, group uint32) []ofp.FlowMod {
	cookie := MakeCookie(CatDispatch, v.Num, 0)
	unknown := append([]ofp.OXM{ofp.MatchCTLabel([16]byte{})}, v.service()...)
	flows := []Flow{{Table: TableTracked, Cookie: cookie, Priority: prioTrackedUnknown + v.onePort(), Match: unknown}}
	if v.DSR() {
		tracked := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk)}, v.service()...)
		name := []ofp.Action{nameGroup(group)}
		if v.IP.Is4() { // an IPv6 member is routed by the label itself, which a register cannot hold
			name = append([]ofp.Action{ofp.ActionRegMove{NBits: 32, Src: ofp.NXMCTLabel, Dst: ofp.NXMReg(dsrMemberReg)}}, name...)
		}
		flows = append(flows,
			Flow{Table: TableTracked, Cookie: cookie, Priority: prioTrackedForward + v.onePort(), Match: tracked,
				Actions: name, GotoTable: TableToMember},
			Flow{Cookie: cookie, Priority: prioVIPReply + v.onePort(),
				Match:   serviceMatch(v.Proto, v.IP, fromService, v.Port),
				Actions: []ofp.Action{ofp.ActionCT{Zone: ctZoneVIP, Table: ofp.CTRecircNone}}, GotoTable: TableL2})
	} else {
		flows = append(flows, natTranslations(v, cookie, group)...)
	}
	flows = append(flows, endRows(v, cookie)...)
	// Last, once the tables behind it are ready: the service into the tracker.
	flows = append(flows, Flow{Cookie: cookie, Priority: PrioVIPPunt + v.onePort(), Match: v.service(), Actions: []ofp.Action{trackVIP}})
	mods := make([]ofp.FlowMod, 0, len(flows)+1)
	mods = append(mods, UndispatchFlow(v))
	for _, f := range flows {
		mods = append(mods, f.Add())
	}
	return mods
}

// A tracked TCP connection ends once, however many FINs and resets its
// client sends: a retransmitted FIN, or a reset after a FIN, must not count
// a second end. The first one commits closingMark in the VIP zone and
// comes back to TableTracked with endReg set; TableToMember counts only
// packets that carry it (RouteFlows). The tracker's entry opens and ends
// once: a SYN that reuses its ports while the tracker still holds it is
// not counted as a new connection (PrioMemberNew), nor is its end.
const (
	endReg      = 5
	closingMark = 1 << 16 // above the member's port
)

// endRows are a SWITCH VIP's TableTracked rows for its TCP connections'
// first FIN or reset.
func endRows(v *VIP, cookie uint64) []Flow {
	if v.Proto != ofp.IPProtoTCP && v.Proto != protoAny {
		return nil
	}
	service := serviceMatch(ofp.IPProtoTCP, v.IP, toService, v.Port)
	prio := translationPriority(v.Key, translation{proto: ofp.IPProtoTCP})
	end := func(flag uint16) Flow {
		match := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk|ofp.CTStateNew),
			ofp.MatchCTMark(0, closingMark)}, service...)
		return Flow{Table: TableTracked, Cookie: cookie, Priority: prioTrackedEnd + prio,
			Match: append(match, ofp.MatchTCPFlags(flag, flag)),
			Actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchReg(endReg, 1, 0xffffffff)},
				ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneVIP, Table: TableTracked, Actions: []ofp.Action{
					ofp.ActionRegMove{NBits: 1, Src: ofp.NXMReg(endReg), DstOfs: 16, Dst: ofp.NXMCTMark}}}}}
	}
	return []Flow{end(ofp.TCPFlagFIN), end(ofp.TCPFlagRST)}
}

// natTranslations are a SWITCH NAT VIP's rows that address a tracked
// connection's packets to its member (a new one's first packet, just
// committed by a bucket, is committed in the member zone too) and its
// member's replies back from the VIP, one set per translation.
func natTranslations(v *VIP, cookie uint64, group uint32) []Flow {
	var flows []Flow
	for _, t := range v.translations() {
		prio := translationPriority(v.Key, t)

		service := v.service()
		if t.proto != v.Proto {
			service = serviceMatch(t.proto, v.IP, toService, 0)
		}
		tracked := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk|ofp.CTStateNew)}, service...)
		committed := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateTrk|ofp.CTStateNew)}, service...)
		translate := []ofp.Action{nameGroup(group), labelToDst(v.IP)}
		if t.dst != 0 {
			translate = append(translate, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: t.dst})
		}
		toMember := append(slices.Clone(translate), ofp.ActionCT{Zone: ctZoneMember, Table: ofp.CTRecircNone})
		var commit []ofp.Action
		memberZone := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel(AddressLabel(v.Key.IP))},
			ofp.ActionSetField{Field: ofp.MatchCTMark(serviceMark(v.Key), 0xffffffff)}}
		if v.Key.everyPort() && t.dst != 0 { // the client's port, before it becomes the member's
			commit = append(commit, ofp.ActionRegMove{NBits: 16, Src: t.dst, Dst: ofp.NXMReg(clientPortReg)})
			memberZone = append(memberZone, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMReg(clientPortReg), Dst: ofp.NXMCTMark})
		}
		commit = append(append(commit, translate...),
			ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneMember, Table: TableToMember, Actions: memberZone})

		replies := replyRow(SpecOf(v), t)
		replies.Cookie, replies.Priority = cookie, prioFromMemberTracked+prio

		if t.proto == ofp.IPProtoTCP {
			// A SYN on a connection the tracker holds reopens it (a client
			// reusing its ports, which the tracker may still count as
			// established): commit it in the member zone again, so the
			// member zone names this VIP.
			resyn := append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk|ofp.CTStateNew)}, service...)
			resyn = append(resyn, ofp.MatchTCPFlags(ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK))
			flows = append(flows, Flow{Table: TableTracked, Cookie: cookie, Priority: prioTrackedSYN + prio, Match: resyn, Actions: commit})
		}
		flows = append(flows,
			Flow{Table: TableTracked, Cookie: cookie, Priority: prioTrackedForward + prio, Match: committed, Actions: commit},
			Flow{Table: TableTracked, Cookie: cookie, Priority: prioTrackedForward + prio, Match: tracked,
				Actions: toMember, GotoTable: TableToMember},
			replies)
	}
	return flows
}

// translationPriority is what a VIP's rows for translation t add to their
// priority: a VIP on one port wins over one on every port (onePort), and
// a VIP of every protocol takes TCP and UDP before the rest.
func translationPriority(k VIPKey, t translation) uint16 {
	var prio uint16
	if HasPorts(k.Proto) && k.Port != 0 {
		prio = 1
	}
	if t.proto != k.Proto {
		prio++
	}
	return prio
}

// replyRow is a SWITCH NAT VIP's TableFromMember row for translation t:
// the replies of its connections, which the member zone names by the VIP's
// address (label) and service (mark), go back from the VIP.
func replyRow(s DispatchSpec, t translation) Flow {
	mark := ofp.MatchCTMark(serviceMark(s.Key), 0xffffffff)
	if s.Key.Port == 0 { // the port is the client's, whatever it is
		mark = ofp.MatchCTMark(serviceMark(s.Key), 0xffff0000)
	}
	match := []ofp.OXM{ofp.MatchEthType(EthTypeOf(s.Key.IP))}
	if t.proto != protoAny {
		match = append(match, ofp.MatchIPProto(WireProto(t.proto, s.Key.IP)))
	}
	match = append(match, ofp.MatchCTLabel(AddressLabel(s.Key.IP)), mark)
	fromVIP := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchEthSrc(s.mac)}, ofp.ActionSetField{Field: MatchIPSrc(s.Key.IP)}}
	if t.src != 0 {
		fromVIP = append(fromVIP, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMCTMark, Dst: t.src})
	}
	fromVIP = append(append(fromVIP, ofp.ActionCT{Zone: ctZoneVIP, Table: ofp.CTRecircNone}), fromTheBridge...)
	return Flow{Table: TableFromMember, Match: match, Actions: fromVIP, GotoTable: TableL2}
}

// bridgePortReg carries the port a reply enters TableL2 by (fromTheBridge).
const bridgePortReg = 4

// fromTheBridge has a member's reply, which carries the VIP's MAC once
// translated, go on to TableL2 as if it came from the switch's own port:
// the bridge's NORMAL learns the VIP's MAC there, on one port, instead of
// on each member's port in turn. Every such move makes Open vSwitch
// revalidate its datapath cache and walk every flow with a timeout, in
// the thread that also carries the packet-ins and packet-outs
// (docs/DATAPATH.md, "Open vSwitch behaviours that shaped the design").
// Open vSwitch takes no set_field of in_port in 1.3: a register moves it.
var fromTheBridge = []ofp.Action{
	ofp.ActionSetField{Field: ofp.MatchReg(bridgePortReg, ofp.PortLocal&0xffff, 0xffffffff)},
	ofp.ActionRegMove{NBits: 16, Src: ofp.NXMReg(bridgePortReg), Dst: ofp.NXMInPort},
}

// nameGroup names a VIP's group in groupReg for TableToMember.
func nameGroup(group uint32) ofp.Action {
	return ofp.ActionSetField{Field: ofp.MatchReg(groupReg, group, 0xffffffff)}
}

// slotReg is the register the slot of a new connection to a VIP
// dispatched by client is hashed into, for its row in TableSlots.
const slotReg = 3

// clientSlot hashes a packet's source address onto the GroupSlots slots,
// into slotReg: the same client, the same slot, whatever its port.
// connectionSlot hashes the connection, both directions alike.
var (
	clientSlot = ofp.ActionMultipath{Fields: ofp.HashFieldsNWSrc, Algorithm: ofp.MultipathModuloN,
		MaxLink: GroupSlots - 1, NBits: 8, Dst: ofp.NXMReg(slotReg)}
	connectionSlot = ofp.ActionMultipath{Fields: ofp.HashFieldsSymmetricL4, Algorithm: ofp.MultipathModuloN,
		MaxLink: GroupSlots - 1, NBits: 8, Dst: ofp.NXMReg(slotReg)}
)

// slotHash is the multipath that gives p's new connections their slot
// when the switch dispatches p by slots: SOURCE_IP's by the client,
// CONSISTENT_HASH's by its hash key; zero for the methods a select group
// serves.
func (p *Pool) slotHash() ofp.ActionMultipath {
	switch {
	case p.Method == sdnlb.SourceIP, p.Method == sdnlb.ConsistentHash && p.hashKey == sdnlb.HashKeyClient,
		p.VIP != nil && p.VIP.Persist > 0: // session persistence: a client keeps its slot
		return clientSlot
	case p.Method == sdnlb.ConsistentHash:
		return connectionSlot
	}
	return ofp.ActionMultipath{}
}

// ConnHash is the hash a CONSISTENT_HASH pool picks a new connection's
// member by (sched.Key.Hash): Open vSwitch's hash of its first packet f
// by the pool's hash key, as the switch's multipath computes it, so the
// controller's pick is the member of the slot the switch would give it.
// An IPv6 client is hashed by its client_ipv6_prefix (128, the whole
// address, whenever the switch dispatches). 0 for the other methods.
func (p *Pool) ConnHash(f *flowhash.Flow) uint32 {
	if p.Method != sdnlb.ConsistentHash {
		return 0
	}
	mp := p.slotHash()
	if mp.Fields == ofp.HashFieldsNWSrc {
		f.Src = p.Client(f.Src)
	}
	return flowhash.Hash(f, mp.Fields, mp.Basis)
}

// DispatchFlow sends v's new connections to its group, or for a VIP
// dispatched by slots to the slot its multipath gives them, in TableSlots.
func DispatchFlow(v *VIP, group uint32) ofp.FlowMod {
	f := newConnectionFlow(v)
	if spec := SpecOf(v); spec.Slotted() {
		f.Actions = []ofp.Action{nameGroup(group), spec.slotHash}
		f.GotoTable = TableSlots
	} else {
		f.Actions = []ofp.Action{ofp.ActionGroup{GroupID: group}}
	}
	return f.Add()
}

// SlotFlows are the TableSlots rows of slot of a VIP dispatched by
// slots, which name the VIP by its group: they commit the connection
// with its member t, as a bucket does. A flow's actions must agree with
// its match, as a bucket's need not, so a VIP of every protocol has a row
// per translation, each taking the client's port from its own field.
func SlotFlows(cookie uint64, group uint32, spec DispatchSpec, slot int, t BucketTarget) []ofp.FlowMod {
	var mods []ofp.FlowMod
	for _, tr := range translationsOf(spec.Key.Proto) {
		match := []ofp.OXM{ofp.MatchEthType(EthTypeOf(spec.Key.IP))}
		prio := prioSlot
		if tr.proto != protoAny {
			match = append(match, ofp.MatchIPProto(WireProto(tr.proto, spec.Key.IP)))
			prio++
		}
		match = append(match, ofp.MatchReg(groupReg, group, 0xffffffff), ofp.MatchReg(slotReg, uint32(slot), 0xffffffff))
		mods = append(mods, Flow{Table: TableSlots, Cookie: cookie, Priority: prio, Match: match,
			Actions: commitToMember(spec, t, tr.dst)}.Add())
	}
	return mods
}

// SlotOf reads the group and slot a TableSlots row matches.
func SlotOf(m *ofp.Match) (group uint32, slot int, ok bool) {
	g, okGroup := m.GetNX(ofp.NXMReg(groupReg))
	s, okSlot := m.GetNX(ofp.NXMReg(slotReg))
	if !okGroup || !okSlot || s.Uint() >= GroupSlots {
		return 0, 0, false
	}
	return uint32(g.Uint()), int(s.Uint()), true
}

// SlotGroupOf reads the group a VIP's new connections are hashed to slots
// of, from the actions of its TableTracked row (DispatchFlow).
func SlotGroupOf(actions []ofp.Action) (uint32, bool) {
	if !slices.ContainsFunc(actions, func(a ofp.Action) bool { _, ok := a.(ofp.ActionMultipath); return ok }) {
		return 0, false
	}
	for _, a := range actions {
		if sf, ok := a.(ofp.ActionSetField); ok && sf.Field.Class == ofp.NXMReg(groupReg).Class() && sf.Field.Field == ofp.NXMReg(groupReg).Field() {
			return uint32(sf.Field.Uint()), true
		}
	}
	return 0, false
}

// UndispatchFlow sends v's new connections to the controller.
func UndispatchFlow(v *VIP) ofp.FlowMod {
	f := newConnectionFlow(v)
	f.Actions = []ofp.Action{toController}
	return f.Add()
}

// newConnectionFlow is the row that takes v's new connections, without
// its actions.
func newConnectionFlow(v *VIP) Flow {
	isNew := ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateTrk|ofp.CTStateNew|ofp.CTStateInv)
	return Flow{Table: TableTracked, Cookie: MakeCookie(CatDispatch, v.Num, 0), Priority: prioTrackedNew + v.onePort(),
		Match: append([]ofp.OXM{isNew, ofp.MatchCTLabel([16]byte{})}, v.service()...)}
}

// GroupMod builds a VIP's select group: one equal bucket per slot.
func GroupMod(cmd ofp.GroupModCommand, groupID uint32, spec DispatchSpec, targets *[GroupSlots]BucketTarget) ofp.GroupMod {
	buckets := make([]ofp.Bucket, GroupSlots)
	for i, t := range targets {
		buckets[i] = ofp.Bucket{Weight: 1, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: bucketActions(spec, t)}
	}
	return ofp.GroupMod{Command: cmd, GroupType: ofp.GroupTypeSelect, GroupID: groupID, Buckets: buckets}
}

// bucketActions commit a new connection in the VIP zone with its member t
// (address, and for NAT port: the client's for a member without one on a
// VIP on every port) and send it back to TableTracked, which routes it as
// a tracked one. A bucket is an action set, which holds one ct and no
// action after it, so everything else happens in the tables.
func bucketActions(spec DispatchSpec, t BucketTarget) []ofp.Action {
	return commitToMember(spec, t, ofp.NXMTCPDst) // a bucket reads TCP's and UDP's destination port alike
}

// commitToMember commits a new connection in the VIP zone with its member
// t, the member's port taken from the client's destination port field
// clientPort (0: none) when the member has none, and sends it back to
// TableTracked.
func commitToMember(spec DispatchSpec, t BucketTarget, clientPort ofp.NXMHeader) []ofp.Action {
	exec := []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel(AddressLabel(t.IP))}}
	switch {
	case spec.dsr:
	case t.Port == 0 && spec.Key.everyPort():
		if clientPort != 0 {
			exec = append(exec, ofp.ActionRegMove{NBits: 16, Src: clientPort, Dst: ofp.NXMCTMark})
		}
	default:
		exec = append(exec, ofp.ActionSetField{Field: ofp.MatchCTMark(uint32(t.Port), 0xffffffff)})
	}
	return []ofp.Action{ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneVIP, Table: TableTracked, Actions: exec}}
}

// TrackActions commit c, a connection the controller set up, in the VIP
// zone with its member, as a bucket commits one the switch dispatches,
// and send it back to TableTracked, which routes it as a tracked one: the
// actions of the packet-out that releases its first packet. Its member's
// port is always named (the client's when the member has none).
func (c *Connection) TrackActions() []ofp.Action {
	return commitToMember(DispatchSpec{dsr: c.DSR}, BucketTarget{IP: c.MemberIP, Port: c.MemberPort}, 0)
}

// BucketTargetOf reads the member a bucket commits its connection to in
// the VIP zone: the address in the label, the port in the mark (none for
// DSR, or when the member serves the port the client asked for).
func BucketTargetOf(actions []ofp.Action) (ip netip.Addr, port uint16, ok bool) {
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
					ip = LabelAddress([16]byte(v))
				}
			case sf.Field.Field == ofp.NXMCTMark.Field():
				port = uint16(sf.Field.Uint())
			}
		}
		return ip, port, ip.IsValid()
	}
	return netip.Addr{}, 0, false
}

// RouteFlows are a member address's TableToMember rows: the route, and the
// same for new connections alone, whose counter is the member's
// connection count. A DOWN member's rows send to the controller instead;
// they are modified rather than deleted, so the switch keeps their
// counters (an add over an existing row copies them).
func RouteFlows(k RouteKey, r MemberRoute) []ofp.FlowMod {
	match := []ofp.OXM{ofp.MatchEthType(EthTypeOf(k.IP)), MatchIPDst(k.IP)}
	switch {
	case k.DSR && k.IP.Is6():
		match[1] = ofp.MatchCTLabel(AddressLabel(k.IP))
	case k.DSR:
		match[1] = ofp.MatchReg(dsrMemberReg, ipUint(k.IP.As4()), 0xffffffff)
	}
	match = append(match, ofp.MatchReg(groupReg, k.Group, 0xffffffff))
	f := Flow{Table: TableToMember, Cookie: r.Cookie, Priority: PrioMemberRoute, Match: match,
		Actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchEthDst(r.MAC)}}, GotoTable: TableL2}
	if r.Down {
		f.Actions, f.GotoTable = []ofp.Action{toController}, 0
	}
	row := func(priority uint16, match []ofp.OXM) ofp.FlowMod {
		g := f
		g.Priority, g.Match = priority, match
		return g.Add()
	}
	mods := []ofp.FlowMod{row(PrioMemberNew,
		append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateNew, ofp.CTStateTrk|ofp.CTStateNew)}, f.Match...))}
	if r.VIP.Key.Proto == ofp.IPProtoTCP || r.VIP.Key.Proto == protoAny {
		// The protocol right after the EtherType, before what needs it.
		tcp := append([]ofp.OXM{f.Match[0], ofp.MatchIPProto(ofp.IPProtoTCP)}, f.Match[1:]...)
		mods = append(mods,
			row(PrioMemberFIN, append(slices.Clone(tcp), ofp.MatchReg(endReg, 1, 1), ofp.MatchTCPFlags(ofp.TCPFlagFIN, ofp.TCPFlagFIN))),
			row(PrioMemberRST, append(slices.Clone(tcp), ofp.MatchReg(endReg, 1, 1), ofp.MatchTCPFlags(ofp.TCPFlagRST, ofp.TCPFlagRST|ofp.TCPFlagFIN))))
	}
	if !k.DSR {
		// The member's replies to this VIP's clients, as the VIP's row for
		// them: counted for this VIP's member alone. A DOWN member has none,
		// as it has no reply flow.
		for _, t := range translationsOf(r.VIP.Key.Proto) {
			reply := replyRow(r.VIP, t)
			reply.Cookie, reply.Priority = r.Cookie, PrioFromMemberOwn+translationPriority(r.VIP.Key, t)
			reply.Match = append(reply.Match, MatchIPSrc(k.IP))
			rows := []Flow{reply}
			if t.proto == ofp.IPProtoTCP {
				reset := reply
				reset.Priority += PrioFromMemberReset - PrioFromMemberOwn
				reset.Match = append(slices.Clone(reply.Match), ofp.MatchTCPFlags(ofp.TCPFlagRST, ofp.TCPFlagRST))
				rows = append(rows, reset)
			}
			for _, f := range rows {
				if r.Down {
					mods = append(mods, f.Remove())
				} else {
					mods = append(mods, f.Add())
				}
			}
		}
	}
	return append(mods, f.Add())
}

// RoutedAddress is the member address a TableToMember row routes: its
// destination (NAT) or dsrMemberReg (DSR; IPv6: the connection's label).
func RoutedAddress(m *ofp.Match) (netip.Addr, bool) {
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

// CompareRoutes orders routes by address, then group.
func CompareRoutes(a, b RouteKey) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	return cmp.Compare(a.Group, b.Group)
}
