package model

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// The flow tables, in the order a packet visits them, and their rows,
// highest priority first. This is the only place the priorities are set;
// docs/DATAPATH.md says why each row exists.
const (
	TableClassify   uint8 = 0  // traffic for VIPs and from members
	TableTracked    uint8 = 1  // SWITCH: clients' packets back from the tracker's VIP zone
	TableToMember   uint8 = 2  // SWITCH: packets addressed to a member
	TableFromMember uint8 = 3  // SWITCH NAT: members' replies back from the tracker's member zone
	tableNDAnswer   uint8 = 4  // IPv6 VIPs: neighbour solicitations for them, turned into advertisements
	TableSlots      uint8 = 5  // SWITCH by client: a new connection's slot, from the hash of its client's address
	TableSources    uint8 = 8  // L2Fabric: the rest, from hosts: is the sender known where it is?
	TableL2         uint8 = 9  // everything else
	TableFabric     uint8 = 10 // L2Fabric: toward the switch in the metadata

	// TableClassify
	prioLLDP         uint16 = 2000 // LLDP to the nearest bridge (link discovery, lldp.go) → CONTROLLER, before anything a VIP matches
	prioVIPEnd       uint16 = 1003 // per CONTROLLER TCP VIP whose connections have flows of their own, on a switch with Nicira matches: a FIN or reset to its MAC and service → CONTROLLER, which ends the connection at once, gives its flows a closing connection's idle timeout and sends the packet on; +1 on one port
	prioVIPSYN       uint16 = 1001 // per CONTROLLER TCP VIP, on a switch with Nicira matches: a SYN to its MAC and service → CONTROLLER, also one that reuses the ports of a connection whose flows remain; +1 on one port
	PrioConnection   uint16 = 1000 // a connection's NAT flow pair, on its full 5-tuple
	prioVIPReply     uint16 = 901  // per SWITCH DSR VIP: its members' replies, from its service → the tracker's VIP zone, TableL2; +1 on one port
	PrioMemberReply  uint16 = 900  // per member address: its replies → CONTROLLER, or the tracker's member zone (SWITCH NAT)
	PrioLinkIngress  uint16 = 899  // L2Fabric: per port with a link: what another switch sends (its VIP work done where it entered) → TableL2
	prioMemberDirect uint16 = 898  // per member address of a SWITCH NAT pool: clients' packets to it → committed in the member zone with no VIP, TableL2
	prioARPClaim     uint16 = 511  // per VIP address: an ARP request for it from it (a host announcing it holds it; IPv6: a solicitation from ::, duplicate address detection) → drop
	prioARPAnswer    uint16 = 510  // per VIP address: an ARP request for it → the reply, built in the switch, out IN_PORT; IPv6: a neighbour solicitation → the advertisement, tableNDAnswer
	PrioICMPError    uint16 = 505  // per VIP address, with the tracker: ICMP errors to it (IPv6 packet too big, IPv4 fragmentation needed) → the tracker's VIP zone, TableTracked
	PrioVIPPunt      uint16 = 500  // per VIP: other ARP for it and ARP to its MAC, its service → CONTROLLER, or the tracker's VIP zone (SWITCH); +1 on one port
	prioVIPDrop      uint16 = 499  // per VIP address: any other IP to it → drop
	prioNDCopy       uint16 = 400  // IPv6: neighbour advertisements to all nodes (the answers to the controller's solicitations) → CONTROLLER, TableL2
	prioToL2         uint16 = 0    // the rest → TableL2

	// TableTracked, per SWITCH VIP; +1 for a VIP on one port
	prioTrackedNew     uint16 = 300 // a new connection → the group (by client: its slot, TableSlots), or CONTROLLER while no member is ready
	PrioTrackedError   uint16 = 260 // per VIP address: an ICMP error related to one of its connections → CONTROLLER, which sends it on to the connection's member
	prioTrackedStray   uint16 = 255 // per VIP address: such an error the tracker relates to none (about a CONTROLLER connection) → CONTROLLER, which asks the switch for the connection
	prioTrackedUnknown uint16 = 250 // a packet of no connection the tracker holds (invalid) → drop
	prioTrackedEnd     uint16 = 230 // TCP: a connection's first FIN or reset from the client → closingMark committed in the VIP zone, endReg set, back to TableTracked
	prioTrackedSYN     uint16 = 210 // SWITCH NAT: a SYN on a connection the tracker holds (a client reusing its ports) → as the next row's first packet
	prioTrackedForward uint16 = 200 // a tracked connection → its member (from the connection's label and mark), TableToMember; its first packet also committed in the member zone
	prioTrackedMiss    uint16 = 0   // the rest → TableL2

	// TableToMember, per SWITCH VIP (its group in groupReg) and member address (DSR: in
	// dsrMemberReg); the rows above the route count what they take
	PrioMemberNew   uint16 = 110 // its new connections, as the route
	PrioMemberFIN   uint16 = 106 // TCP: its connections' first FIN from the client (endReg: connections closing), as the route
	PrioMemberRST   uint16 = 105 // TCP: its connections' first reset from the client, without FIN (endReg: connections aborted), as the route
	PrioMemberRoute uint16 = 100 // → its MAC, TableL2; DOWN → CONTROLLER, which resets the client
	prioRouteMiss   uint16 = 0   // → TableL2

	// TableFromMember
	// one connection of a CONTROLLER pool whose member a SWITCH NAT pool
	// shares, member → client, its VIP named by the tracker → as PrioConnection
	prioFromMemberConnection uint16 = 300
	PrioFromMemberReset      uint16 = 220 // per SWITCH NAT VIP and member address: the member's TCP resets (connections it refused or aborted), as the next row: counts them
	PrioFromMemberOwn        uint16 = 210 // per SWITCH NAT VIP and member address: as the next row, for the member's replies alone: counts them
	prioFromMemberTracked    uint16 = 200 // per SWITCH NAT VIP: replies of its connections → from the VIP, TableL2
	// per member address of a SWITCH NAT pool: its replies of no connection
	// the tracker holds → TableL2 (clients that reach the member directly);
	// when a CONTROLLER pool shares the member's address and port, every
	// reply no row above took → CONTROLLER (that pool's replies that missed
	// their flows)
	prioFromMemberUntracked uint16 = 50
	prioFromMemberStale     uint16 = 0 // replies of connections to a VIP no longer dispatched → drop

	// TableSlots, per SWITCH VIP by client (its group in groupReg)
	prioSlot uint16 = 100 // per slot (in slotReg) → the member's: committed in the VIP zone with its member, back to TableTracked

	// tableNDAnswer
	prioNDAnswer uint16 = 100 // per IPv6 VIP address: its advertisement, turned in TableClassify → its MAC as the target's, IN_PORT

	// TableSources
	prioSourceAddress uint16 = 200 // ARP, neighbour solicitations and advertisements → CONTROLLER, which learns the sender's address, and TableL2
	PrioSource        uint16 = 100 // per host, on its switch: its MAC from its port → TableL2
	prioSourceMiss    uint16 = 0   // a sender not known there → CONTROLLER, which learns it, and TableL2

	// TableL2
	PrioL2     uint16 = 100 // learned MAC → its port (L2Learn); per host → its port, or TableFabric toward its switch (L2Fabric)
	PrioFlood  uint16 = 10  // L2Fabric: per port: the rest → along the spanning tree, or drop (a link off the tree)
	prioL2Miss uint16 = 0   // → CONTROLLER, which learns and floods (L2Learn, L2Fabric); NORMAL (L2Normal)

	// TableFabric
	PrioPath     uint16 = 100 // per other switch (metadata) → the first hop of the path to it
	prioPathMiss uint16 = 0   // a switch no path reaches → drop

	L2IdleTimeout uint16 = 300 // seconds

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

// Numbers the flows match on beyond the EtherTypes and IP protocols ofp
// names.
const (
	// protoAny is a VIP of every IP protocol (sdnlb.ProtocolAny): its
	// flows match no ip_proto.
	protoAny uint8 = 0

	ARPRequest uint16 = 1
	ARPReply   uint16 = 2

	ICMPEchoRequest uint8 = 8
	ICMPEchoReply   uint8 = 0
)

// toController sends the whole packet to the controller.
var toController = ofp.ActionOutput{Port: ofp.PortController, MaxLen: ofp.ControllerMaxLenNoBuffer}

// Flow is one flow, described by name; add turns it into the flow-mod
// that installs it.
type Flow struct {
	Table       uint8
	Cookie      uint64
	Priority    uint16
	idleTimeout uint16 // seconds; 0: none
	Match       []ofp.OXM
	Actions     []ofp.Action
	Metadata    *uint64 // written after the actions; nil: left alone
	GotoTable   uint8   // after the actions; 0: none (no table goes back to 0)
}

// Remove is the flow-mod that deletes exactly f.
func (f Flow) Remove() ofp.FlowMod {
	return ofp.FlowMod{Command: ofp.FlowDeleteStrict, TableID: f.Table, Priority: f.Priority,
		OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Match: ofp.Match{OXMs: f.Match}}
}

func (f Flow) Add() ofp.FlowMod {
	fm := ofp.FlowMod{
		Cookie:      f.Cookie,
		TableID:     f.Table,
		Command:     ofp.FlowAdd,
		IdleTimeout: f.idleTimeout,
		Priority:    f.Priority,
		BufferID:    ofp.NoBuffer,
		OutPort:     ofp.PortAny,
		OutGroup:    ofp.GroupAny,
		Match:       ofp.Match{OXMs: f.Match},
	}
	// No instruction at all means drop.
	if len(f.Actions) > 0 {
		fm.Instructions = append(fm.Instructions, ofp.InstructionApplyActions{Actions: f.Actions})
	}
	if f.Metadata != nil {
		fm.Instructions = append(fm.Instructions, ofp.InstructionWriteMetadata{Metadata: *f.Metadata, Mask: ^uint64(0)})
	}
	if f.GotoTable != 0 {
		fm.Instructions = append(fm.Instructions, ofp.InstructionGotoTable{TableID: f.GotoTable})
	}
	return fm
}

// DeleteByCookie removes, in every table, the flows whose cookie matches
// cookie under mask.
func DeleteByCookie(cookie, mask uint64) ofp.FlowMod {
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

// DeleteAllFlows removes every flow in every table, sdnlb's or not: what
// a 1.0 switch needs to part with flows it cannot select by cookie.
func DeleteAllFlows() ofp.FlowMod { return DeleteByCookie(0, 0) }

// BaseFlows is what every switch gets before any VIP: LLDP goes to the
// controller, which discovers the links with it; what is not for a VIP
// goes on to the L2 table, whose miss the L2 mode decides. A switch with
// one table gets the LLDP row and the L2 miss alone, in table 0.
func BaseFlows(mode L2Mode, oneTable bool) []ofp.FlowMod {
	flows := []Flow{
		{Table: TableClassify, Cookie: MakeCookie(CatLLDP, 0, 0), Priority: prioLLDP, Actions: []ofp.Action{toController},
			Match: []ofp.OXM{ofp.MatchEthDst(LLDPMAC), ofp.MatchEthType(ofp.EthTypeLLDP)}},
		{Table: TableClassify, Priority: prioToL2, GotoTable: TableL2},
		{Table: TableTracked, Priority: prioTrackedMiss, GotoTable: TableL2},
		{Table: TableToMember, Priority: prioRouteMiss, GotoTable: TableL2},
		{Table: TableFromMember, Priority: prioFromMemberStale},
		{Table: TableL2, Priority: prioL2Miss, Actions: []ofp.Action{toController}},
	}
	switch mode {
	case L2Normal:
		flows[len(flows)-1].Actions = []ofp.Action{ofp.ActionOutput{Port: ofp.PortNormal}}
	case L2Fabric:
		flows[1].GotoTable = TableSources // the rest of what hosts send
		// A host's first frame may carry no address (an IPv6 multicast
		// listener report): its row here then takes its ARP too, which is
		// how the controller learns its address. So ARP and neighbour
		// discovery always come up as well.
		learn := func(match ...ofp.OXM) Flow {
			return Flow{Table: TableSources, Cookie: MakeCookie(CatFabric, 0, 0), Priority: prioSourceAddress, Match: match,
				Actions: []ofp.Action{toController}, GotoTable: TableL2}
		}
		flows = append(flows,
			Flow{Table: TableSources, Cookie: MakeCookie(CatFabric, 0, 0), Priority: prioSourceMiss,
				Actions: []ofp.Action{toController}, GotoTable: TableL2},
			learn(ofp.MatchEthType(ofp.EthTypeARP)),
			learn(ofp.MatchEthType(ofp.EthTypeIPv6), ofp.MatchIPProto(ofp.IPProtoICMPv6), ofp.MatchICMPv6Type(NDSolicitation)),
			learn(ofp.MatchEthType(ofp.EthTypeIPv6), ofp.MatchIPProto(ofp.IPProtoICMPv6), ofp.MatchICMPv6Type(NDAdvertisement)),
			Flow{Table: TableFabric, Priority: prioPathMiss})
	}
	if !oneTable { // a switch with one table speaks OpenFlow 1.0, which matches no IPv6
		flows = append(flows, Flow{Table: TableClassify, Cookie: MakeCookie(CatARPAnswer, 0, 0), Priority: prioNDCopy,
			Match: []ofp.OXM{ofp.MatchEthDst(MulticastMAC(AllNodes)), ofp.MatchEthType(ofp.EthTypeIPv6),
				ofp.MatchIPProto(ofp.IPProtoICMPv6), ofp.MatchICMPv6Type(NDAdvertisement)},
			Actions: []ofp.Action{toController}, GotoTable: flows[1].GotoTable})
	}
	if oneTable {
		miss := flows[len(flows)-1]
		miss.Table = TableClassify
		flows = []Flow{flows[0], miss}
	}
	mods := make([]ofp.FlowMod, len(flows))
	for i, f := range flows {
		if f.Cookie == 0 {
			f.Cookie = MakeCookie(CatBase, 0, 0)
		}
		mods[i] = f.Add()
	}
	return mods
}

// VIPFlows are a VIP's rows of TableClassify: the switch answers ARP
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
func VIPFlows(v, answerer *VIP, l2 L2Mode, f SwitchFeatures) []ofp.FlowMod {
	cookie := MakeCookie(CatVIP, v.Num, 0)
	otherDrop := Flow{Cookie: cookie, Priority: prioVIPDrop,
		Match: []ofp.OXM{ofp.MatchEthType(EthTypeOf(v.IP)), MatchIPDst(v.IP)}}
	var errors []ofp.FlowMod
	if f.Groups && !f.OneTable {
		errors = icmpErrorFlows(v)
	}
	if v.IP.Is6() {
		if f.OneTable {
			return nil
		}
		return append(append(ndAnswerFlows(answerer, l2), errors...), ServicePunt(v), otherDrop.Add())
	}
	arpPunt := Flow{Cookie: cookie, Priority: PrioVIPPunt, Actions: []ofp.Action{toController},
		Match: []ofp.OXM{ofp.MatchEthType(ofp.EthTypeARP), ofp.MatchARPTPA(v.IP.As4())}}
	probeAnswers := Flow{Cookie: cookie, Priority: PrioVIPPunt, Actions: []ofp.Action{toController},
		Match: []ofp.OXM{ofp.MatchEthDst(v.MAC), ofp.MatchEthType(ofp.EthTypeARP)}}
	answer := ARPAnswerFlows(answerer, l2)
	if f.OneTable {
		answer = answer[:1] // the claim's drop: the answer needs Nicira moves, so the controller answers
	}
	return append(append(answer, errors...), arpPunt.Add(), probeAnswers.Add(), ServicePunt(v), otherDrop.Add())
}

// ControllerPunts are the rows that send a client's TCP packets that
// open and close connections to v to the controller, on a switch with
// Nicira matches (SwitchFeatures.Nicira) where v's connections have flows
// of their own: those of a VIP the switch's tracker does not hold, and
// every VIP's on a switch without one (tracker false: OpenFlow 1.0, where
// the controller dispatches every pool). They are every SYN, FIN and
// reset. They sit above the connection flows and match the VIP's MAC,
// which only a client's packets carry: under DSR a packet that another
// switch dispatched comes on with the VIP's address.
//
// The SYN of a client that reuses the ports of a connection whose flows
// remain (ended, or idle) so opens a new connection, which the controller
// counts and gives fresh flows. A FIN or reset ends its connection at
// once, so that connection limits and member capacities count open
// connections exactly, and gives its flows the idle timeout of a closing
// connection (FinIdle): until then they have none, and Open vSwitch does
// not age them (docs/DATAPATH.md, "Connection flows age by the
// controller's polls").
func ControllerPunts(v *VIP, tracker bool) []Flow {
	if tracker && v.Tracked() || v.Proto != ofp.IPProtoTCP && v.Proto != protoAny {
		return nil
	}
	punt := func(priority uint16, flags, mask uint16) Flow {
		match := append([]ofp.OXM{ofp.MatchEthDst(v.MAC)}, serviceMatch(ofp.IPProtoTCP, v.IP, toService, v.Port)...)
		return Flow{Cookie: MakeCookie(CatVIP, v.Num, 0), Priority: priority + v.onePort(), Actions: []ofp.Action{toController},
			Match: append(match, ofp.MatchTCPFlags(flags, mask))}
	}
	return []Flow{punt(prioVIPSYN, ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK),
		punt(prioVIPEnd, ofp.TCPFlagFIN, ofp.TCPFlagFIN), punt(prioVIPEnd, ofp.TCPFlagRST, ofp.TCPFlagRST|ofp.TCPFlagFIN)}
}

// icmpErrorFlows take ICMP errors to v's address that say a packet was too
// big (icmperr.go) through the tracker's VIP zone to the controller. One
// about a packet the address sent through a SWITCH VIP (a member's reply)
// is related to its connection there, whose label and mark name the
// member that must get it, and goes up with them; the rest (about
// CONTROLLER connections) go up without.
func icmpErrorFlows(v *VIP) []ofp.FlowMod {
	cookie := MakeCookie(CatVIP, v.Num, 0)
	tooBig := append(matchTooBig(v.IP), MatchIPDst(v.IP))
	related := Flow{Table: TableTracked, Cookie: cookie, Priority: PrioTrackedError, Actions: []ofp.Action{toController},
		Match: append([]ofp.OXM{ofp.MatchCTState(ofp.CTStateTrk|ofp.CTStateRel, ofp.CTStateTrk|ofp.CTStateRel)}, tooBig...)}
	stray := related
	stray.Priority, stray.Match = prioTrackedStray, tooBig
	track := Flow{Cookie: cookie, Priority: PrioICMPError, Match: tooBig, Actions: []ofp.Action{trackVIP}}
	// The rows behind the tracker first, so that no error finds them missing.
	return []ofp.FlowMod{related.Add(), stray.Add(), track.Add()}
}

// ARPAnswerFlows answer ARP requests for v's address in the switch, as the
// controller answers them, so that clients resolve the VIP while the
// controller is down: the request, broadcast or sent to the VIP's MAC,
// becomes the reply from v's MAC and goes back out the port it came in on.
// A request from the address itself (a host announcing that it holds it)
// is dropped, as the controller ignores it. Under L2Learn and L2Fabric
// the controller still gets each request: where the asker lives is what
// it learns from it.
func ARPAnswerFlows(v *VIP, l2 L2Mode) []ofp.FlowMod {
	cookie := MakeCookie(CatARPAnswer, v.Num, 0)
	ip := v.IP.As4()
	request := []ofp.OXM{ofp.MatchEthType(ofp.EthTypeARP), ofp.MatchARPOp(ARPRequest), ofp.MatchARPTPA(ip)}
	claim := Flow{Cookie: cookie, Priority: prioARPClaim, Match: append(slices.Clone(request), ofp.MatchARPSPA(ip))}
	actions := copyToLearn(l2)
	actions = append(actions,
		ofp.ActionRegMove{NBits: 48, Src: ofp.NXMEthSrc, Dst: ofp.NXMEthDst},
		ofp.ActionSetField{Field: ofp.MatchEthSrc(v.MAC)},
		ofp.ActionSetField{Field: ofp.MatchARPOp(ARPReply)},
		ofp.ActionRegMove{NBits: 48, Src: ofp.NXMARPSHA, Dst: ofp.NXMARPTHA},
		ofp.ActionSetField{Field: ofp.MatchARPSHA(v.MAC)},
		ofp.ActionRegMove{NBits: 32, Src: ofp.NXMARPSPA, Dst: ofp.NXMARPTPA},
		ofp.ActionSetField{Field: ofp.MatchARPSPA(ip)},
		ofp.ActionOutput{Port: ofp.PortInPort})
	answer := Flow{Cookie: cookie, Priority: prioARPAnswer, Match: request, Actions: actions}
	return []ofp.FlowMod{claim.Add(), answer.Add()}
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

// ndAnswerFlows are ARPAnswerFlows for an IPv6 VIP: neighbour
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
func ndAnswerFlows(v *VIP, l2 L2Mode) []ofp.FlowMod {
	cookie := MakeCookie(CatARPAnswer, v.Num, 0)
	ip := v.IP.As16()
	nd := func(typ uint8) []ofp.OXM {
		return []ofp.OXM{ofp.MatchEthType(ofp.EthTypeIPv6), ofp.MatchIPProto(ofp.IPProtoICMPv6), ofp.MatchICMPv6Type(typ),
			ofp.MatchIPv6NDTarget(ip)}
	}
	claim := Flow{Cookie: cookie, Priority: prioARPClaim,
		Match: append(nd(NDSolicitation), ofp.MatchIPv6Src(netip.IPv6Unspecified().As16()))}
	actions := copyToLearn(l2)
	actions = append(actions,
		ofp.ActionRegMove{NBits: 48, Src: ofp.NXMEthSrc, Dst: ofp.NXMEthDst},
		ofp.ActionSetField{Field: ofp.MatchEthSrc(v.MAC)},
		ofp.ActionRegMove{NBits: 128, Src: ofp.NXMIPv6Src, Dst: ofp.NXMIPv6Dst},
		ofp.ActionSetField{Field: ofp.MatchIPv6Src(ip)},
		ofp.ActionSetField{Field: ofp.MatchNDOptionsType(ofp.NDOptionTargetLL)},
		ofp.ActionSetField{Field: ofp.MatchNDReserved(ofp.NDFlagSolicited | ofp.NDFlagOverride)},
		ofp.ActionSetField{Field: ofp.MatchICMPv6Type(NDAdvertisement)})
	turn := Flow{Cookie: cookie, Priority: prioARPAnswer, Match: nd(NDSolicitation), Actions: actions, GotoTable: tableNDAnswer}
	answer := Flow{Table: tableNDAnswer, Cookie: cookie, Priority: prioNDAnswer, Match: nd(NDAdvertisement),
		Actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchIPv6NDTLL(v.MAC)}, ofp.ActionOutput{Port: ofp.PortInPort}}}
	// The answer first, so that no turned solicitation finds tableNDAnswer empty.
	return []ofp.FlowMod{claim.Add(), answer.Add(), turn.Add()}
}

// ServicePunt sends new connections to v's service to the controller.
// The in-switch dispatch replaces it (same match and priority) while the
// switch picks the members.
func ServicePunt(v *VIP) ofp.FlowMod {
	punt := Flow{Cookie: MakeCookie(CatVIP, v.Num, 0), Priority: PrioVIPPunt + v.onePort(), Match: v.service(),
		Actions: []ofp.Action{toController}}
	return punt.Add()
}

// service matches packets from clients to v's service.
func (v *VIP) service() []ofp.OXM {
	return serviceMatch(v.Proto, v.IP, toService, v.Port)
}

// onePort is what a VIP on one port adds to the priority of its service
// rows: they overlap those of a VIP on every port of the same address and
// protocol, and a switch's choice between overlapping rows of equal
// priority is undefined; the VIP on the port must win.
func (v *VIP) onePort() uint16 {
	if HasPorts(v.Proto) && v.Port != 0 {
		return 1
	}
	return 0
}

// DeleteVIPFlows removes a VIP's punt and drop flows, the ARP answer it
// gives for its address and every connection flow to it.
func DeleteVIPFlows(vipNum uint32) []ofp.FlowMod {
	return []ofp.FlowMod{
		DeleteByCookie(MakeCookie(CatVIP, vipNum, 0), MaskApp|MaskCategory|MaskVIP),
		DeleteByCookie(MakeCookie(CatARPAnswer, vipNum, 0), MaskApp|MaskCategory|MaskVIP),
		DeleteVIPConnections(vipNum),
	}
}

func DeleteVIPConnections(vipNum uint32) ofp.FlowMod {
	return DeleteByCookie(MakeCookie(CatConn, vipNum, 0), MaskApp|MaskConnCats|MaskVIP)
}

// DeleteMemberFlows removes every connection flow, both directions, of one
// member, whatever VIP it served.
func DeleteMemberFlows(memberNum uint32) ofp.FlowMod {
	return DeleteByCookie(MakeCookie(CatConn, 0, memberNum), MaskApp|MaskConnCats|maskMember)
}

// ReplyMatch is what a member's replies carry: its address and the port
// its service answers from (the VIP's port when the member has none; 0
// for ICMP), in the VIP's protocol.
type ReplyMatch struct {
	IP    netip.Addr
	Port  uint16
	Proto uint8
}

// ReplyOwner is the member a reply flow is installed for, which its
// cookie names; whether its pool is dispatched by the switch, whose
// connection tracker then reverses the NAT; and whether a pool the
// controller dispatches shares the member's address and port.
type ReplyOwner struct {
	VIPNum, MemberNum uint32
	Tracked           bool
	Shared            bool
}

// MemberReplyFlows take a member's replies: into the connection tracker's
// member zone when the switch dispatches the member's pool (and has select
// groups), else to the controller, for the replies that no connection flow
// took, so that no datapath cache entry of Open vSwitch ever switches them
// without the reverse NAT. ICMP VIPs match echo replies only, as their
// connection flows do. Behind the tracker, replies of no connection it
// holds go on untouched, or, from a member shared with a pool the
// controller dispatches, every reply no connection's row took goes to the
// controller, which knows that pool's connections.
func MemberReplyFlows(m ReplyMatch, o ReplyOwner, groups bool) []ofp.FlowMod {
	match := serviceMatch(m.Proto, m.IP, fromService, m.Port)
	reply := Flow{Cookie: MakeCookie(CatMemberReply, o.VIPNum, o.MemberNum), Priority: PrioMemberReply,
		Match: match, Actions: []ofp.Action{toController}}
	if !o.Tracked || !groups {
		return []ofp.FlowMod{reply.Add()}
	}
	untracked := reply
	untracked.Table, untracked.Priority = TableFromMember, prioFromMemberUntracked
	if !o.Shared {
		untracked.Match = append(slices.Clone(match), ofp.MatchCTLabel([16]byte{}))
		untracked.Actions, untracked.GotoTable = nil, TableL2
	}
	reply.Actions = []ofp.Action{trackMember}
	// The tracker's row last, once TableFromMember can take what it passes on.
	return []ofp.FlowMod{untracked.Add(), directFlow(m, o).Add(), reply.Add()}
}

// directFlow commits a client's packets to a tracked member's own address
// and service in the member zone with no VIP named: the member's answers
// are not taken for those of an earlier connection through a VIP on the
// same addresses and ports, whatever state the tracker left that one in
// (a member that refused a reused port can leave it open).
func directFlow(m ReplyMatch, o ReplyOwner) Flow {
	return Flow{Cookie: MakeCookie(CatMemberReply, o.VIPNum, o.MemberNum), Priority: prioMemberDirect,
		Match: serviceMatch(m.Proto, m.IP, toService, m.Port),
		Actions: []ofp.Action{ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneMember, Table: ofp.CTRecircNone,
			Actions: []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel([16]byte{})}}}}, GotoTable: TableL2}
}

// DeleteDirectFlow removes a member's directFlow, once its pool is no
// longer dispatched by the switch.
func DeleteDirectFlow(m ReplyMatch) ofp.FlowMod {
	f := directFlow(m, ReplyOwner{})
	fm := StrictDelete(&ofp.FlowStats{TableID: f.Table, Priority: f.Priority, Match: ofp.Match{OXMs: f.Match}})
	fm.Cookie, fm.CookieMask = MakeCookie(CatMemberReply, 0, 0), MaskApp|MaskCategory
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
	ip, l4 := MatchIPSrc(address), L4Src
	if side == toService {
		ip, l4 = MatchIPDst(address), L4Dst
	}
	if proto == protoAny {
		return []ofp.OXM{ofp.MatchEthType(EthTypeOf(address)), ip}
	}
	match := []ofp.OXM{ofp.MatchEthType(EthTypeOf(address)), ofp.MatchIPProto(WireProto(proto, address)), ip}
	switch {
	case proto == ofp.IPProtoICMP:
		return append(match, matchEcho(address, bool(side)))
	case port == 0: // every port
		return match
	}
	return append(match, l4(proto, port))
}

// HasPorts reports whether connections of proto are told apart by L4
// ports.
func HasPorts(proto uint8) bool { return proto == ofp.IPProtoTCP || proto == ofp.IPProtoUDP }

// DeleteMemberReplyFlow removes the reply punt installed for a member.
func DeleteMemberReplyFlow(memberNum uint32) ofp.FlowMod {
	return DeleteByCookie(MakeCookie(CatMemberReply, 0, memberNum), MaskApp|MaskCategory|maskMember)
}

// DeleteUntrackedReplyFlow removes only the TableFromMember row of a
// member's reply punt, once the switch no longer dispatches its pool.
func DeleteUntrackedReplyFlow(memberNum uint32) ofp.FlowMod {
	fm := DeleteMemberReplyFlow(memberNum)
	fm.TableID = TableFromMember
	return fm
}

// L2Flow forwards frames for a learned MAC, in the L2 table. Adding it again with another
// port replaces it (same match and priority), which handles moves.
func L2Flow(table uint8, mac [6]byte, port uint32) ofp.FlowMod {
	learned := Flow{Table: table, Cookie: MakeCookie(CatL2, 0, 0), Priority: PrioL2, idleTimeout: L2IdleTimeout,
		Match: []ofp.OXM{ofp.MatchEthDst(mac)}, Actions: []ofp.Action{ofp.ActionOutput{Port: port}}}
	return learned.Add()
}

func L4Dst(proto uint8, port uint16) ofp.OXM {
	if proto == ofp.IPProtoUDP {
		return ofp.MatchUDPDst(port)
	}
	return ofp.MatchTCPDst(port)
}

// l4DstHeader names proto's destination port field in a move.
func l4DstHeader(proto uint8) ofp.NXMHeader {
	if proto == ofp.IPProtoUDP {
		return ofp.NXMUDPDst
	}
	return ofp.NXMTCPDst
}

func L4Src(proto uint8, port uint16) ofp.OXM {
	if proto == ofp.IPProtoUDP {
		return ofp.MatchUDPSrc(port)
	}
	return ofp.MatchTCPSrc(port)
}

// MatchedVIP is the VIP service a flow's match is for: its destination
// address, protocol and port.
func MatchedVIP(m *ofp.Match) VIPKey {
	k := VIPKey{Proto: MatchedProto(m)}
	k.IP, _ = matchedDst(m)
	if HasPorts(k.Proto) {
		if p, ok := m.Get(L4DstField(k.Proto)); ok {
			k.Port = uint16(p.Uint())
		}
	}
	return k
}

// MatchedProto is the protocol a match is for, as a VIP names it (ICMPv6
// is ICMP).
func MatchedProto(m *ofp.Match) uint8 {
	if p, ok := m.Get(ofp.OXMIPProto); ok {
		if uint8(p.Uint()) == ofp.IPProtoICMPv6 {
			return ofp.IPProtoICMP
		}
		return uint8(p.Uint())
	}
	return 0
}

func L4DstField(proto uint8) ofp.OXMField {
	if proto == ofp.IPProtoUDP {
		return ofp.OXMUDPDst
	}
	return ofp.OXMTCPDst
}

func L4SrcField(proto uint8) ofp.OXMField {
	if proto == ofp.IPProtoUDP {
		return ofp.OXMUDPSrc
	}
	return ofp.OXMTCPSrc
}

func ipUint(ip [4]byte) uint32 { return binary.BigEndian.Uint32(ip[:]) }

func uintIP(ip uint32) (b [4]byte) { binary.BigEndian.PutUint32(b[:], ip); return b }

// FlowSeconds converts a timeout to OpenFlow's 16-bit seconds; 0 is none.
func FlowSeconds(d time.Duration) uint16 {
	if d <= 0 {
		return 0
	}
	return uint16(min(max(int64((d+time.Second-1)/time.Second), 1), 0xffff))
}
