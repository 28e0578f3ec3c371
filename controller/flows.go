package controller

import (
	"encoding/binary"
	"net/netip"
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// The flow tables, in the order a packet visits them, and their rows,
// highest priority first. This is the only place the priorities are set;
// docs/ARCHITECTURE.md says why each row exists.
const (
	tableClassify   uint8 = 0  // traffic for VIPs and from members
	tableTracked    uint8 = 1  // SWITCH: clients' packets back from the tracker's VIP zone
	tableToMember   uint8 = 2  // SWITCH: packets addressed to a member
	tableFromMember uint8 = 3  // SWITCH NAT: members' replies back from the tracker's member zone
	tableNDAnswer   uint8 = 4  // IPv6 VIPs: neighbour solicitations for them, turned into advertisements
	tableSources    uint8 = 8  // L2Fabric: the rest, from hosts: is the sender known where it is?
	tableL2         uint8 = 9  // everything else
	tableFabric     uint8 = 10 // L2Fabric: toward the switch in the metadata

	// tableClassify
	prioLLDP         uint16 = 2000 // LLDP to the nearest bridge (link discovery, lldp.go) → CONTROLLER, before anything a VIP matches
	prioConnection   uint16 = 1000 // a connection's NAT flow pair, on its full 5-tuple
	prioVIPReply     uint16 = 901  // per SWITCH DSR VIP: its members' replies, from its service → the tracker's VIP zone, tableL2; +1 on one port
	prioMemberReply  uint16 = 900  // per member address: its replies → CONTROLLER, or the tracker's member zone (SWITCH NAT)
	prioLinkIngress  uint16 = 899  // L2Fabric: per port with a link: what another switch sends (its VIP work done where it entered) → tableL2
	prioMemberDirect uint16 = 898  // per member address of a SWITCH NAT pool: clients' packets to it → committed in the member zone with no VIP, tableL2
	prioARPClaim     uint16 = 511  // per VIP address: an ARP request for it from it (a host announcing it holds it; IPv6: a solicitation from ::, duplicate address detection) → drop
	prioARPAnswer    uint16 = 510  // per VIP address: an ARP request for it → the reply, built in the switch, out IN_PORT; IPv6: a neighbour solicitation → the advertisement, tableNDAnswer
	prioICMPError    uint16 = 505  // per VIP address, with the tracker: ICMP errors to it (IPv6 packet too big, IPv4 fragmentation needed) → the tracker's VIP zone, tableTracked
	prioVIPPunt      uint16 = 500  // per VIP: other ARP for it and ARP to its MAC, its service → CONTROLLER, or the tracker's VIP zone (SWITCH); +1 on one port
	prioVIPDrop      uint16 = 499  // per VIP address: any other IP to it → drop
	prioNDCopy       uint16 = 400  // IPv6: neighbour advertisements to all nodes (the answers to the controller's solicitations) → CONTROLLER, tableL2
	prioToL2         uint16 = 0    // the rest → tableL2

	// tableTracked, per SWITCH VIP; +1 for a VIP on one port
	prioTrackedNew     uint16 = 300 // a new connection → the group, or CONTROLLER while no member is ready
	prioTrackedError   uint16 = 260 // per VIP address: an ICMP error related to one of its connections → CONTROLLER, which sends it on to the connection's member
	prioTrackedStray   uint16 = 255 // per VIP address: such an error the tracker relates to none (about a CONTROLLER connection) → CONTROLLER, which asks the switch for the connection
	prioTrackedUnknown uint16 = 250 // a packet of no connection the tracker holds (invalid) → drop
	prioTrackedSYN     uint16 = 210 // SWITCH NAT: a SYN on a connection the tracker holds (a client reusing its ports) → as the next row's first packet
	prioTrackedForward uint16 = 200 // a tracked connection → its member (from the connection's label and mark), tableToMember; its first packet also committed in the member zone
	prioTrackedMiss    uint16 = 0   // the rest → tableL2

	// tableToMember, per SWITCH VIP (its group in groupReg) and member address (DSR: in
	// dsrMemberReg); the rows above the route count what they take
	prioMemberNew   uint16 = 110 // its new connections, as the route
	prioMemberFIN   uint16 = 106 // TCP: its clients' FINs (connections closing), as the route
	prioMemberRST   uint16 = 105 // TCP: its clients' resets without FIN (connections aborted), as the route
	prioMemberRoute uint16 = 100 // → its MAC, tableL2; DOWN → CONTROLLER, which resets the client
	prioRouteMiss   uint16 = 0   // → tableL2

	// tableFromMember
	// one connection of a CONTROLLER pool whose member a SWITCH NAT pool
	// shares, member → client, its VIP named by the tracker → as prioConnection
	prioFromMemberConnection uint16 = 300
	prioFromMemberReset      uint16 = 220 // per SWITCH NAT VIP and member address: the member's TCP resets (connections it refused or aborted), as the next row: counts them
	prioFromMemberOwn        uint16 = 210 // per SWITCH NAT VIP and member address: as the next row, for the member's replies alone: counts them
	prioFromMemberTracked    uint16 = 200 // per SWITCH NAT VIP: replies of its connections → from the VIP, tableL2
	// per member address of a SWITCH NAT pool: its replies of no connection
	// the tracker holds → tableL2 (clients that reach the member directly);
	// when a CONTROLLER pool shares the member's address and port, every
	// reply no row above took → CONTROLLER (that pool's replies that missed
	// their flows)
	prioFromMemberUntracked uint16 = 50
	prioFromMemberStale     uint16 = 0 // replies of connections to a VIP no longer dispatched → drop

	// tableNDAnswer
	prioNDAnswer uint16 = 100 // per IPv6 VIP address: its advertisement, turned in tableClassify → its MAC as the target's, IN_PORT

	// tableSources
	prioSourceAddress uint16 = 200 // ARP, neighbour solicitations and advertisements → CONTROLLER, which learns the sender's address, and tableL2
	prioSource        uint16 = 100 // per host, on its switch: its MAC from its port → tableL2
	prioSourceMiss    uint16 = 0   // a sender not known there → CONTROLLER, which learns it, and tableL2

	// tableL2
	prioL2     uint16 = 100 // learned MAC → its port (L2Learn); per host → its port, or tableFabric toward its switch (L2Fabric)
	prioFlood  uint16 = 10  // L2Fabric: per port: the rest → along the spanning tree, or drop (a link off the tree)
	prioL2Miss uint16 = 0   // → CONTROLLER, which learns and floods (L2Learn, L2Fabric); NORMAL (L2Normal)

	// tableFabric
	prioPath     uint16 = 100 // per other switch (metadata) → the first hop of the path to it
	prioPathMiss uint16 = 0   // a switch no path reaches → drop

	l2IdleTimeout uint16 = 300 // seconds

	// The connection tracker's zones, apart from the zones a host's own
	// firewall uses. A SWITCH NAT connection is tracked twice: as the
	// client addresses it (client → VIP) and as the member sees it
	// (client → member).
	ctZoneVIP    uint16 = 0x5d
	ctZoneMember uint16 = 0x5e
)

// L2Mode says who switches the traffic that is not for a VIP.
type L2Mode string

const (
	// L2Normal leaves it to the switch's own MAC learning (the NORMAL
	// action), so hosts keep reaching each other while the controller is
	// down.
	L2Normal L2Mode = "normal"
	// L2Learn has the controller learn MACs from table misses and install
	// a flow per destination; the switch needs no NORMAL action, but
	// destinations whose flow idles out are unreachable without the
	// controller.
	L2Learn L2Mode = "learn"
	// L2Fabric has the controller forward between hosts on every switch
	// it decides for, along paths it chooses by load, flooding along a
	// spanning tree (fabric.go): for switches linked to each other, also
	// in loops. The switches hold every row it needs, so hosts keep
	// reaching each other while the controller is down.
	L2Fabric L2Mode = "fabric"
)

// Ethernet and IP numbers the flows match on.
const (
	ethTypeIPv4 uint16 = 0x0800
	ethTypeARP  uint16 = 0x0806

	protoICMP uint8 = 1
	protoTCP  uint8 = 6
	protoUDP  uint8 = 17
	// protoAny is a VIP of every IP protocol (sdnlb.ProtocolAny): its
	// flows match no ip_proto.
	protoAny uint8 = 0

	arpRequest uint16 = 1
	arpReply   uint16 = 2

	icmpEchoRequest uint8 = 8
	icmpEchoReply   uint8 = 0
)

// toController sends the whole packet to the controller.
var toController = ofp.ActionOutput{Port: ofp.PortController, MaxLen: ofp.ControllerMaxLenNoBuffer}

// flow is one flow, described by name; add turns it into the flow-mod
// that installs it.
type flow struct {
	table       uint8
	cookie      uint64
	priority    uint16
	idleTimeout uint16 // seconds; 0: none
	match       []ofp.OXM
	actions     []ofp.Action
	metadata    *uint64 // written after the actions; nil: left alone
	gotoTable   uint8   // after the actions; 0: none (no table goes back to 0)
}

// remove is the flow-mod that deletes exactly f.
func (f flow) remove() ofp.FlowMod {
	return ofp.FlowMod{Command: ofp.FlowDeleteStrict, TableID: f.table, Priority: f.priority,
		OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Match: ofp.Match{OXMs: f.match}}
}

func (f flow) add() ofp.FlowMod {
	fm := ofp.FlowMod{
		Cookie:      f.cookie,
		TableID:     f.table,
		Command:     ofp.FlowAdd,
		IdleTimeout: f.idleTimeout,
		Priority:    f.priority,
		BufferID:    ofp.NoBuffer,
		OutPort:     ofp.PortAny,
		OutGroup:    ofp.GroupAny,
		Match:       ofp.Match{OXMs: f.match},
	}
	// No instruction at all means drop.
	if len(f.actions) > 0 {
		fm.Instructions = append(fm.Instructions, ofp.InstructionApplyActions{Actions: f.actions})
	}
	if f.metadata != nil {
		fm.Instructions = append(fm.Instructions, ofp.InstructionWriteMetadata{Metadata: *f.metadata, Mask: ^uint64(0)})
	}
	if f.gotoTable != 0 {
		fm.Instructions = append(fm.Instructions, ofp.InstructionGotoTable{TableID: f.gotoTable})
	}
	return fm
}

// deleteByCookie removes, in every table, the flows whose cookie matches
// cookie under mask.
func deleteByCookie(cookie, mask uint64) ofp.FlowMod {
	return ofp.FlowMod{
		Cookie:     cookie,
		CookieMask: mask,
		TableID:    ofp.TableAll,
		Command:    ofp.FlowDelete,
		BufferID:   ofp.NoBuffer,
		OutPort:    ofp.PortAny,
		OutGroup:   ofp.GroupAny,
	}
}

// baseFlows is what every switch gets before any VIP: LLDP goes to the
// controller, which discovers the links with it; what is not for a VIP
// goes on to the L2 table, whose miss the L2 mode decides. A switch with
// one table gets the LLDP row and the L2 miss alone, in table 0.
func baseFlows(mode L2Mode, oneTable bool) []ofp.FlowMod {
	flows := []flow{
		{table: tableClassify, cookie: makeCookie(catLLDP, 0, 0), priority: prioLLDP, actions: []ofp.Action{toController},
			match: []ofp.OXM{ofp.MatchEthDst(lldpMAC), ofp.MatchEthType(ethTypeLLDP)}},
		{table: tableClassify, priority: prioToL2, gotoTable: tableL2},
		{table: tableTracked, priority: prioTrackedMiss, gotoTable: tableL2},
		{table: tableToMember, priority: prioRouteMiss, gotoTable: tableL2},
		{table: tableFromMember, priority: prioFromMemberStale},
		{table: tableL2, priority: prioL2Miss, actions: []ofp.Action{toController}},
	}
	switch mode {
	case L2Normal:
		flows[len(flows)-1].actions = []ofp.Action{ofp.ActionOutput{Port: ofp.PortNormal}}
	case L2Fabric:
		flows[1].gotoTable = tableSources // the rest of what hosts send
		// A host's first frame may carry no address (an IPv6 multicast
		// listener report): its row here then takes its ARP too, which is
		// how the controller learns its address. So ARP and neighbour
		// discovery always come up as well.
		learn := func(match ...ofp.OXM) flow {
			return flow{table: tableSources, cookie: makeCookie(catFabric, 0, 0), priority: prioSourceAddress, match: match,
				actions: []ofp.Action{toController}, gotoTable: tableL2}
		}
		flows = append(flows,
			flow{table: tableSources, cookie: makeCookie(catFabric, 0, 0), priority: prioSourceMiss,
				actions: []ofp.Action{toController}, gotoTable: tableL2},
			learn(ofp.MatchEthType(ethTypeARP)),
			learn(ofp.MatchEthType(ethTypeIPv6), ofp.MatchIPProto(protoICMPv6), ofp.MatchICMPv6Type(ndSolicitation)),
			learn(ofp.MatchEthType(ethTypeIPv6), ofp.MatchIPProto(protoICMPv6), ofp.MatchICMPv6Type(ndAdvertisement)),
			flow{table: tableFabric, priority: prioPathMiss})
	}
	if !oneTable { // a switch with one table speaks OpenFlow 1.0, which matches no IPv6
		flows = append(flows, flow{table: tableClassify, cookie: makeCookie(catARPAnswer, 0, 0), priority: prioNDCopy,
			match: []ofp.OXM{ofp.MatchEthDst(multicastMAC(allNodes)), ofp.MatchEthType(ethTypeIPv6),
				ofp.MatchIPProto(protoICMPv6), ofp.MatchICMPv6Type(ndAdvertisement)},
			actions: []ofp.Action{toController}, gotoTable: flows[1].gotoTable})
	}
	if oneTable {
		miss := flows[len(flows)-1]
		miss.table = tableClassify
		flows = []flow{flows[0], miss}
	}
	mods := make([]ofp.FlowMod, len(flows))
	for i, f := range flows {
		if f.cookie == 0 {
			f.cookie = makeCookie(catBase, 0, 0)
		}
		mods[i] = f.add()
	}
	return mods
}

// vipFlows are a VIP's rows of tableClassify: the switch answers ARP
// requests (IPv6: neighbour solicitations) for the VIP's address itself
// (unless it has one table and no Nicira actions), with the MAC of
// answerer (the VIP that answers for the address, snapshot.vipByAddr);
// other ARP for the address, ARP to the VIP's MAC (the answers to the
// controller's probes for members) and new connections to the VIP service
// go to the controller; other IP to the address is dropped. ICMP VIPs
// punt echo requests only. On a switch with the connection tracker (and
// select groups), ICMP errors to the address go through it (icmpErrorFlows).
// A switch of one table speaks OpenFlow 1.0 and matches no IPv6: an IPv6
// VIP gets no rows there.
func vipFlows(v, answerer *vipState, l2 L2Mode, f switchFeatures) []ofp.FlowMod {
	cookie := makeCookie(catVIP, v.num, 0)
	otherDrop := flow{cookie: cookie, priority: prioVIPDrop,
		match: []ofp.OXM{ofp.MatchEthType(ethTypeOf(v.ip)), matchIPDst(v.ip)}}
	var errors []ofp.FlowMod
	if f.groups && !f.oneTable {
		errors = icmpErrorFlows(v)
	}
	if v.ip.Is6() {
		if f.oneTable {
			return nil
		}
		return append(append(ndAnswerFlows(answerer, l2), errors...), servicePunt(v), otherDrop.add())
	}
	arpPunt := flow{cookie: cookie, priority: prioVIPPunt, actions: []ofp.Action{toController},
		match: []ofp.OXM{ofp.MatchEthType(ethTypeARP), ofp.MatchARPTPA(v.ip.As4())}}
	probeAnswers := flow{cookie: cookie, priority: prioVIPPunt, actions: []ofp.Action{toController},
		match: []ofp.OXM{ofp.MatchEthDst(v.mac), ofp.MatchEthType(ethTypeARP)}}
	answer := arpAnswerFlows(answerer, l2)
	if f.oneTable {
		answer = answer[:1] // the claim's drop: the answer needs Nicira moves, so the controller answers
	}
	return append(append(answer, errors...), arpPunt.add(), probeAnswers.add(), servicePunt(v), otherDrop.add())
}

// icmpErrorFlows take ICMP errors to v's address that say a packet was too
// big (icmperr.go) through the tracker's VIP zone to the controller. One
// about a packet the address sent through a SWITCH VIP (a member's reply)
// is related to its connection there, whose label and mark name the
// member that must get it, and goes up with them; the rest (about
// CONTROLLER connections) go up without.
func icmpErrorFlows(v *vipState) []ofp.FlowMod {
	cookie := makeCookie(catVIP, v.num, 0)
	tooBig := append(matchTooBig(v.ip), matchIPDst(v.ip))
	related := flow{table: tableTracked, cookie: cookie, priority: prioTrackedError, actions: []ofp.Action{toController},
		match: append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateRel, ofp.CTStateTrk|ofp.CTStateRel)}, tooBig...)}
	stray := related
	stray.priority, stray.match = prioTrackedStray, tooBig
	track := flow{cookie: cookie, priority: prioICMPError, match: tooBig, actions: []ofp.Action{trackVIP}}
	// The rows behind the tracker first, so that no error finds them missing.
	return []ofp.FlowMod{related.add(), stray.add(), track.add()}
}

// arpAnswerFlows answer ARP requests for v's address in the switch, as the
// controller answers them, so that clients resolve the VIP while the
// controller is down: the request, broadcast or sent to the VIP's MAC,
// becomes the reply from v's MAC and goes back out the port it came in on.
// A request from the address itself (a host announcing that it holds it)
// is dropped, as the controller ignores it. Under L2Learn and L2Fabric
// the controller still gets each request: where the asker lives is what
// it learns from it.
func arpAnswerFlows(v *vipState, l2 L2Mode) []ofp.FlowMod {
	cookie := makeCookie(catARPAnswer, v.num, 0)
	ip := v.ip.As4()
	request := []ofp.OXM{ofp.MatchEthType(ethTypeARP), ofp.MatchARPOp(arpRequest), ofp.MatchARPTPA(ip)}
	claim := flow{cookie: cookie, priority: prioARPClaim, match: append(slices.Clone(request), ofp.MatchARPSPA(ip))}
	actions := copyToLearn(l2)
	actions = append(actions,
		ofp.ActionRegMove{NBits: 48, Src: ofp.NXMEthSrc, Dst: ofp.NXMEthDst},
		ofp.ActionSetField{Field: ofp.MatchEthSrc(v.mac)},
		ofp.ActionSetField{Field: ofp.MatchARPOp(arpReply)},
		ofp.ActionRegMove{NBits: 48, Src: ofp.NXMARPSHA, Dst: ofp.NXMARPTHA},
		ofp.ActionSetField{Field: ofp.MatchARPSHA(v.mac)},
		ofp.ActionRegMove{NBits: 32, Src: ofp.NXMARPSPA, Dst: ofp.NXMARPTPA},
		ofp.ActionSetField{Field: ofp.MatchARPSPA(ip)},
		ofp.ActionOutput{Port: ofp.PortInPort})
	answer := flow{cookie: cookie, priority: prioARPAnswer, match: request, actions: actions}
	return []ofp.FlowMod{claim.add(), answer.add()}
}

// copyToLearn is what an answer row sends the controller first: under
// L2Learn and L2Fabric the request as it came, since where the asker
// lives is what the controller learns from it.
func copyToLearn(l2 L2Mode) []ofp.Action {
	if l2 == L2Learn || l2 == L2Fabric {
		return []ofp.Action{toController}
	}
	return nil
}

// ndAnswerFlows are arpAnswerFlows for an IPv6 VIP: neighbour
// solicitations for its address, multicast or unicast, are answered in
// the switch. Open vSwitch writes a neighbour advertisement's target
// link-layer address only in a row that matches an advertisement, so two
// rows build the answer: the first turns the solicitation into an
// advertisement from the VIP's MAC and address back to the asker (the
// option's type, the solicited and override flags, the ICMPv6 type), the
// second, in tableNDAnswer, writes the VIP's MAC into the option and sends
// it back out the port it came in on. A solicitation from the unspecified
// address (duplicate address detection, a host about to take the address)
// is dropped, as a claim is.
func ndAnswerFlows(v *vipState, l2 L2Mode) []ofp.FlowMod {
	cookie := makeCookie(catARPAnswer, v.num, 0)
	ip := v.ip.As16()
	nd := func(typ uint8) []ofp.OXM {
		return []ofp.OXM{ofp.MatchEthType(ethTypeIPv6), ofp.MatchIPProto(protoICMPv6), ofp.MatchICMPv6Type(typ),
			ofp.MatchIPv6NDTarget(ip)}
	}
	claim := flow{cookie: cookie, priority: prioARPClaim,
		match: append(nd(ndSolicitation), ofp.MatchIPv6Src(netip.IPv6Unspecified().As16()))}
	actions := copyToLearn(l2)
	actions = append(actions,
		ofp.ActionRegMove{NBits: 48, Src: ofp.NXMEthSrc, Dst: ofp.NXMEthDst},
		ofp.ActionSetField{Field: ofp.MatchEthSrc(v.mac)},
		ofp.ActionRegMove{NBits: 128, Src: ofp.NXMIPv6Src, Dst: ofp.NXMIPv6Dst},
		ofp.ActionSetField{Field: ofp.MatchIPv6Src(ip)},
		ofp.ActionSetField{Field: ofp.MatchNDOptionsType(ofp.NDOptionTargetLL)},
		ofp.ActionSetField{Field: ofp.MatchNDReserved(ofp.NDFlagSolicited | ofp.NDFlagOverride)},
		ofp.ActionSetField{Field: ofp.MatchICMPv6Type(ndAdvertisement)})
	turn := flow{cookie: cookie, priority: prioARPAnswer, match: nd(ndSolicitation), actions: actions, gotoTable: tableNDAnswer}
	answer := flow{table: tableNDAnswer, cookie: cookie, priority: prioNDAnswer, match: nd(ndAdvertisement),
		actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchIPv6NDTLL(v.mac)}, ofp.ActionOutput{Port: ofp.PortInPort}}}
	// The answer first, so that no turned solicitation finds tableNDAnswer empty.
	return []ofp.FlowMod{claim.add(), answer.add(), turn.add()}
}

// servicePunt sends new connections to v's service to the controller.
// The in-switch dispatch replaces it (same match and priority) while the
// switch picks the members.
func servicePunt(v *vipState) ofp.FlowMod {
	punt := flow{cookie: makeCookie(catVIP, v.num, 0), priority: prioVIPPunt + v.onePort(), match: v.service(),
		actions: []ofp.Action{toController}}
	return punt.add()
}

// service matches packets from clients to v's service.
func (v *vipState) service() []ofp.OXM {
	return serviceMatch(v.proto, v.ip, toService, v.port)
}

// onePort is what a VIP on one port adds to the priority of its service
// rows: they overlap those of a VIP on every port of the same address and
// protocol, and a switch's choice between overlapping rows of equal
// priority is undefined; the VIP on the port must win.
func (v *vipState) onePort() uint16 {
	if hasPorts(v.proto) && v.port != 0 {
		return 1
	}
	return 0
}

// deleteVIPFlows removes a VIP's punt and drop flows, the ARP answer it
// gives for its address and every connection flow to it.
func deleteVIPFlows(vipNum uint32) []ofp.FlowMod {
	return []ofp.FlowMod{
		deleteByCookie(makeCookie(catVIP, vipNum, 0), maskApp|maskCategory|maskVIP),
		deleteByCookie(makeCookie(catARPAnswer, vipNum, 0), maskApp|maskCategory|maskVIP),
		deleteVIPConnections(vipNum),
	}
}

func deleteVIPConnections(vipNum uint32) ofp.FlowMod {
	return deleteByCookie(makeCookie(catConn, vipNum, 0), maskApp|maskConnCats|maskVIP)
}

// deleteMemberFlows removes every connection flow, both directions, of one
// member, whatever VIP it served.
func deleteMemberFlows(memberNum uint32) ofp.FlowMod {
	return deleteByCookie(makeCookie(catConn, 0, memberNum), maskApp|maskConnCats|maskMember)
}

// replyMatch is what a member's replies carry: its address and the port
// its service answers from (the VIP's port when the member has none; 0
// for ICMP), in the VIP's protocol.
type replyMatch struct {
	ip    netip.Addr
	port  uint16
	proto uint8
}

// replyOwner is the member a reply flow is installed for, which its
// cookie names; whether its pool is dispatched by the switch, whose
// connection tracker then reverses the NAT; and whether a pool the
// controller dispatches shares the member's address and port.
type replyOwner struct {
	vipNum, memberNum uint32
	tracked           bool
	shared            bool
}

// memberReplyFlows take a member's replies: into the connection tracker's
// member zone when the switch dispatches the member's pool (and has select
// groups), else to the controller, for the replies that no connection flow
// took, so that no datapath cache entry of Open vSwitch ever switches them
// without the reverse NAT. ICMP VIPs match echo replies only, as their
// connection flows do. Behind the tracker, replies of no connection it
// holds go on untouched, or, from a member shared with a pool the
// controller dispatches, every reply no connection's row took goes to the
// controller, which knows that pool's connections.
func memberReplyFlows(m replyMatch, o replyOwner, groups bool) []ofp.FlowMod {
	match := serviceMatch(m.proto, m.ip, fromService, m.port)
	reply := flow{cookie: makeCookie(catMemberReply, o.vipNum, o.memberNum), priority: prioMemberReply,
		match: match, actions: []ofp.Action{toController}}
	if !o.tracked || !groups {
		return []ofp.FlowMod{reply.add()}
	}
	untracked := reply
	untracked.table, untracked.priority = tableFromMember, prioFromMemberUntracked
	if !o.shared {
		untracked.match = append(slices.Clone(match), ofp.MatchCTLabel([16]byte{}))
		untracked.actions, untracked.gotoTable = nil, tableL2
	}
	reply.actions = []ofp.Action{trackMember}
	// The tracker's row last, once tableFromMember can take what it passes on.
	return []ofp.FlowMod{untracked.add(), directFlow(m, o).add(), reply.add()}
}

// directFlow commits a client's packets to a tracked member's own address
// and service in the member zone with no VIP named: the member's answers
// are not taken for those of an earlier connection through a VIP on the
// same addresses and ports, whatever state the tracker left that one in
// (a member that refused a reused port can leave it open).
func directFlow(m replyMatch, o replyOwner) flow {
	return flow{cookie: makeCookie(catMemberReply, o.vipNum, o.memberNum), priority: prioMemberDirect,
		match: serviceMatch(m.proto, m.ip, toService, m.port),
		actions: []ofp.Action{ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneMember, Table: ofp.CTRecircNone,
			Actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel([16]byte{})}}}}, gotoTable: tableL2}
}

// deleteDirectFlow removes a member's directFlow, once its pool is no
// longer dispatched by the switch.
func deleteDirectFlow(m replyMatch) ofp.FlowMod {
	f := directFlow(m, replyOwner{})
	fm := strictDelete(&ofp.FlowStats{TableID: f.table, Priority: f.priority, Match: ofp.Match{OXMs: f.match}})
	fm.Cookie, fm.CookieMask = makeCookie(catMemberReply, 0, 0), maskApp|maskCategory
	return fm
}

// serviceSide says which side of a packet a service is on: packets to it
// (clients' requests, ICMP echo requests) or from it (its replies).
type serviceSide bool

const (
	toService   serviceSide = true
	fromService serviceSide = false
)

// serviceMatch matches IP packets of proto, in address's family, to or
// from the service at address and port; port 0 is every port, ICMP
// services match echo requests or replies instead, and protoAny matches
// the address alone.
func serviceMatch(proto uint8, address netip.Addr, side serviceSide, port uint16) []ofp.OXM {
	ip, l4 := matchIPSrc(address), l4Src
	if side == toService {
		ip, l4 = matchIPDst(address), l4Dst
	}
	if proto == protoAny {
		return []ofp.OXM{ofp.MatchEthType(ethTypeOf(address)), ip}
	}
	match := []ofp.OXM{ofp.MatchEthType(ethTypeOf(address)), ofp.MatchIPProto(wireProto(proto, address)), ip}
	switch {
	case proto == protoICMP:
		return append(match, matchEcho(address, bool(side)))
	case port == 0: // every port
		return match
	}
	return append(match, l4(proto, port))
}

// hasPorts reports whether connections of proto are told apart by L4
// ports.
func hasPorts(proto uint8) bool { return proto == protoTCP || proto == protoUDP }

// deleteMemberReplyFlow removes the reply punt installed for a member.
func deleteMemberReplyFlow(memberNum uint32) ofp.FlowMod {
	return deleteByCookie(makeCookie(catMemberReply, 0, memberNum), maskApp|maskCategory|maskMember)
}

// deleteUntrackedReplyFlow removes only the tableFromMember row of a
// member's reply punt, once the switch no longer dispatches its pool.
func deleteUntrackedReplyFlow(memberNum uint32) ofp.FlowMod {
	fm := deleteMemberReplyFlow(memberNum)
	fm.TableID = tableFromMember
	return fm
}

// l2Flow forwards frames for a learned MAC, in the L2 table. Adding it again with another
// port replaces it (same match and priority), which handles moves.
func l2Flow(table uint8, mac [6]byte, port uint32) ofp.FlowMod {
	learned := flow{table: table, cookie: makeCookie(catL2, 0, 0), priority: prioL2, idleTimeout: l2IdleTimeout,
		match: []ofp.OXM{ofp.MatchEthDst(mac)}, actions: []ofp.Action{ofp.ActionOutput{Port: port}}}
	return learned.add()
}

// connection is one client connection to a VIP, bound to a member, with
// everything its flows need. An ICMP connection is a client's echo
// requests; one of another protocol without ports (to an ANY VIP) is all
// the client's packets of that protocol.
type connection struct {
	proto                           uint8 // the packets', never protoAny
	clientIP, vipIP, memberIP       netip.Addr
	clientPort, vipPort, memberPort uint16 // TCP and UDP
	clientOFPort, memberOFPort      uint32
	vipMAC, memberMAC               [6]byte
	vipNum, memberNum               uint32
	idleTimeout, hardTimeout        uint16
	// dsr: direct server return, only the destination MAC is rewritten
	// and the member replies straight to the client: no reverse flow.
	dsr bool
	// memberZone: a SWITCH NAT pool shares the member's address and port,
	// so the switch's tracker sees its replies first. The connection is
	// committed in the member zone, naming its VIP, and its reverse flow
	// takes the replies the tracker says are its own (tableFromMember).
	memberZone bool
}

// memberZoneMark is the mark a connection set up by the controller has in
// the member zone: its protocol and VIP port, as serviceMark has them.
func (c *connection) memberZoneMark() uint32 {
	return serviceMark(vipKey{proto: c.proto, port: c.vipPort})
}

// natDirection is one direction of a connection's flow pair: what it
// matches, how it rewrites the packet and where it sends it.
type natDirection struct {
	cookie           uint64
	src, dst         netip.Addr
	srcPort, dstPort uint16 // TCP and UDP
	echoRequest      bool   // ICMP: echo requests, else replies
	setEth, setIP    ofp.OXM
	setPort          ofp.OXM // TCP and UDP
	outPort          uint32
}

// forward is the client → member direction: the client's eth_src stays,
// the destination becomes the member.
func (c *connection) forward() natDirection {
	return natDirection{
		cookie: makeCookie(catConn, c.vipNum, c.memberNum),
		src:    c.clientIP, dst: c.vipIP, srcPort: c.clientPort, dstPort: c.vipPort, echoRequest: true,
		setEth: ofp.MatchEthDst(c.memberMAC), setIP: matchIPDst(c.memberIP), setPort: l4Dst(c.proto, c.memberPort),
		outPort: c.memberOFPort,
	}
}

// reverse is the member → client direction: the reply comes from the
// VIP's addresses.
func (c *connection) reverse() natDirection {
	return natDirection{
		cookie: makeCookie(catConnReply, c.vipNum, c.memberNum),
		src:    c.memberIP, dst: c.clientIP, srcPort: c.memberPort, dstPort: c.clientPort,
		setEth: ofp.MatchEthSrc(c.vipMAC), setIP: matchIPSrc(c.vipIP), setPort: l4Src(c.proto, c.vipPort),
		outPort: c.clientOFPort,
	}
}

// Directions of a connection's flow pair, as connFlows indexes them.
const (
	dirForward = 0
	dirReverse = 1
)

// connFlows builds the two flow-mods of a connection into storage it owns
// and reuses, so the packet-in hot path builds them without allocating.
// The interface values inside point at the struct's own fields, so
// filling them boxes nothing.
type connFlows struct {
	mods  [2]ofp.FlowMod
	oxms  [2][9]ofp.OXM
	sets  [2][3]ofp.ActionSetField
	outs  [2]ofp.ActionOutput
	acts  [2][5]ofp.Action
	apply [2]ofp.InstructionApplyActions
	insts [2][1]ofp.Instruction
	// the forward direction's commit in the member zone (memberZone)
	commit     ofp.ActionCT
	commitSets [2]ofp.ActionSetField
	commitActs [2]ofp.Action
}

func newConnFlows() *connFlows {
	f := new(connFlows)
	for d := range 2 {
		f.insts[d][0] = &f.apply[d]
	}
	f.commitActs = [2]ofp.Action{&f.commitSets[0], &f.commitSets[1]}
	f.commit = ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneMember, Table: ofp.CTRecircNone, Actions: f.commitActs[:]}
	return f
}

// fill builds the flow-mods of c, indexed by dirForward and dirReverse;
// a DSR connection has the forward one only. The result aliases f and is
// valid until the next fill.
func (f *connFlows) fill(c *connection) []ofp.FlowMod {
	f.fillDirection(dirForward, c, c.forward())
	if c.dsr {
		return f.mods[:1]
	}
	f.fillDirection(dirReverse, c, c.reverse())
	return f.mods[:]
}

// actions returns the actions of direction d of the last fill, for a
// packet-out that must leave as the flow would send it.
func (f *connFlows) actions(d int) []ofp.Action { return f.apply[d].Actions }

func (f *connFlows) fillDirection(d int, c *connection, nd natDirection) {
	// Slot 0 is kept for in_port, needed only when the packet leaves by the
	// port it came in on: a switch never does that unless told IN_PORT.
	match := f.oxms[d][1:1]
	match = append(match, ofp.MatchEthType(ethTypeOf(nd.src)), ofp.MatchIPProto(wireProto(c.proto, nd.src)),
		matchIPSrc(nd.src), matchIPDst(nd.dst))
	switch c.proto {
	case protoTCP:
		match = append(match, ofp.MatchTCPSrc(nd.srcPort), ofp.MatchTCPDst(nd.dstPort))
	case protoUDP:
		match = append(match, ofp.MatchUDPSrc(nd.srcPort), ofp.MatchUDPDst(nd.dstPort))
	case protoICMP:
		match = append(match, matchEcho(nd.src, nd.echoRequest))
	} // other protocols: the addresses alone
	table, priority := tableClassify, prioConnection
	if c.memberZone && d == dirReverse {
		table, priority = tableFromMember, prioFromMemberConnection
		match = append(match, ofp.MatchCTLabel(addressLabel(c.vipIP)), ofp.MatchCTMark(c.memberZoneMark(), 0xffffffff))
	}
	f.outs[d] = ofp.ActionOutput{Port: nd.outPort}
	if c.memberOFPort == c.clientOFPort {
		f.oxms[d][0] = ofp.MatchInPort(c.clientOFPort)
		match = f.oxms[d][:len(match)+1]
		f.outs[d].Port = ofp.PortInPort
	}
	f.sets[d] = [3]ofp.ActionSetField{{Field: nd.setEth}, {Field: nd.setIP}, {Field: nd.setPort}}
	n := 2 // eth and ipv4 rewrites; ICMP has no port to rewrite
	switch {
	case c.dsr:
		n = 1
	case hasPorts(c.proto):
		n = 3
	}
	for i := range n {
		f.acts[d][i] = &f.sets[d][i]
	}
	if c.memberZone && d == dirForward {
		f.commitSets[0].Field = ofp.MatchCTLabel(addressLabel(c.vipIP))
		f.commitSets[1].Field = ofp.MatchCTMark(c.memberZoneMark(), 0xffffffff)
		f.acts[d][n] = &f.commit
		n++
	}
	f.acts[d][n] = &f.outs[d]
	f.apply[d].Actions = f.acts[d][:n+1]
	f.mods[d] = ofp.FlowMod{
		Cookie:       nd.cookie,
		TableID:      table,
		Command:      ofp.FlowAdd,
		IdleTimeout:  c.idleTimeout,
		HardTimeout:  c.hardTimeout,
		Priority:     priority,
		BufferID:     ofp.NoBuffer,
		OutPort:      ofp.PortAny,
		OutGroup:     ofp.GroupAny,
		Flags:        ofp.FlagSendFlowRem, // accounting reads both directions' counters
		Match:        ofp.Match{OXMs: match},
		Instructions: f.insts[d][:],
	}
}

func l4Dst(proto uint8, port uint16) ofp.OXM {
	if proto == protoUDP {
		return ofp.MatchUDPDst(port)
	}
	return ofp.MatchTCPDst(port)
}

// l4DstHeader names proto's destination port field in a move.
func l4DstHeader(proto uint8) ofp.NXMHeader {
	if proto == protoUDP {
		return ofp.NXMUDPDst
	}
	return ofp.NXMTCPDst
}

func l4Src(proto uint8, port uint16) ofp.OXM {
	if proto == protoUDP {
		return ofp.MatchUDPSrc(port)
	}
	return ofp.MatchTCPSrc(port)
}

// matchedVIP is the VIP service a flow's match is for: its destination
// address, protocol and port.
func matchedVIP(m *ofp.Match) vipKey {
	k := vipKey{proto: matchedProto(m)}
	k.ip, _ = matchedDst(m)
	if hasPorts(k.proto) {
		if p, ok := m.Get(l4DstField(k.proto)); ok {
			k.port = uint16(p.Uint())
		}
	}
	return k
}

// matchedProto is the protocol a match is for, as a VIP names it (ICMPv6
// is ICMP).
func matchedProto(m *ofp.Match) uint8 {
	if p, ok := m.Get(ofp.OXMIPProto); ok {
		if uint8(p.Uint()) == protoICMPv6 {
			return protoICMP
		}
		return uint8(p.Uint())
	}
	return 0
}

func l4DstField(proto uint8) ofp.OXMField {
	if proto == protoUDP {
		return ofp.OXMUDPDst
	}
	return ofp.OXMTCPDst
}

func l4SrcField(proto uint8) ofp.OXMField {
	if proto == protoUDP {
		return ofp.OXMUDPSrc
	}
	return ofp.OXMTCPSrc
}

func ipUint(ip [4]byte) uint32 { return binary.BigEndian.Uint32(ip[:]) }

func uintIP(ip uint32) (b [4]byte) { binary.BigEndian.PutUint32(b[:], ip); return b }
