package controller

import (
	"encoding/binary"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// The pipeline is one table. Higher priorities win:
//
//	1000  connection flows: one pair per connection, full 5-tuple, NAT rewrite
//	 900  per member address of an enabled VIP: its replies → CONTROLLER
//	 500  per VIP: ARP requests for its address and IPv4 to its service → CONTROLLER
//	 499  per VIP address: any other IPv4 to it → drop (never punted again)
//	 100  learned L2 destinations → output port
//	   0  table miss → CONTROLLER (whole packet), which learns and floods
const (
	prioConnection  uint16 = 1000
	prioMemberReply uint16 = 900
	prioVIPPunt     uint16 = 500
	prioVIPDrop     uint16 = 499
	prioL2          uint16 = 100
	prioMiss        uint16 = 0

	l2IdleTimeout uint16 = 300 // seconds
)

// Ethernet and IP numbers the flows match on.
const (
	ethTypeIPv4 uint16 = 0x0800
	ethTypeARP  uint16 = 0x0806

	protoICMP uint8 = 1
	protoTCP  uint8 = 6
	protoUDP  uint8 = 17

	arpRequest uint16 = 1
	arpReply   uint16 = 2

	icmpEchoRequest uint8 = 8
	icmpEchoReply   uint8 = 0
)

// toController sends the whole packet to the controller.
var toController = ofp.ActionOutput{Port: ofp.PortController, MaxLen: ofp.ControllerMaxLenNoBuffer}

func flowAdd(cookie uint64, prio, idle uint16, match []ofp.OXM, actions ...ofp.Action) ofp.FlowMod {
	fm := ofp.FlowMod{
		Cookie:      cookie,
		Command:     ofp.FlowAdd,
		IdleTimeout: idle,
		Priority:    prio,
		BufferID:    ofp.NoBuffer,
		OutPort:     ofp.PortAny,
		OutGroup:    ofp.GroupAny,
		Match:       ofp.Match{OXMs: match},
	}
	if len(actions) > 0 { // no instruction at all means drop
		fm.Instructions = []ofp.Instruction{ofp.InstructionApplyActions{Actions: actions}}
	}
	return fm
}

// flowDelete removes, in every table, the flows whose cookie matches cookie
// under mask.
func flowDelete(cookie, mask uint64) ofp.FlowMod {
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

// baseFlows is what every switch gets before any VIP: the table miss.
func baseFlows() []ofp.FlowMod {
	return []ofp.FlowMod{flowAdd(makeCookie(catBase, 0, 0), prioMiss, 0, nil, toController)}
}

// deleteOurFlows purges everything sdnlb ever installed on a switch.
func deleteOurFlows() ofp.FlowMod { return flowDelete(appID<<cookieAppShift, maskApp) }

// vipFlows punts ARP requests for the VIP address and new connections to
// the VIP service to the controller, and drops other IPv4 to the address.
// ICMP VIPs punt echo requests only.
func vipFlows(v *vipState) []ofp.FlowMod {
	cookie := makeCookie(catVIP, v.num, 0)
	arp := []ofp.OXM{ofp.MatchEthType(ethTypeARP), ofp.MatchARPOp(arpRequest), ofp.MatchARPTPA(v.ip)}
	service := []ofp.OXM{ofp.MatchEthType(ethTypeIPv4), ofp.MatchIPProto(v.proto), ofp.MatchIPv4Dst(v.ip)}
	switch v.proto {
	case protoTCP:
		service = append(service, ofp.MatchTCPDst(v.port))
	case protoUDP:
		service = append(service, ofp.MatchUDPDst(v.port))
	case protoICMP:
		service = append(service, ofp.MatchICMPv4Type(icmpEchoRequest))
	}
	drop := []ofp.OXM{ofp.MatchEthType(ethTypeIPv4), ofp.MatchIPv4Dst(v.ip)}
	return []ofp.FlowMod{
		flowAdd(cookie, prioVIPPunt, 0, arp, toController),
		flowAdd(cookie, prioVIPPunt, 0, service, toController),
		flowAdd(cookie, prioVIPDrop, 0, drop),
	}
}

// deleteVIPFlows removes a VIP's punt and drop flows and every connection
// flow to it.
func deleteVIPFlows(vipNum uint32) []ofp.FlowMod {
	return []ofp.FlowMod{
		flowDelete(makeCookie(catVIP, vipNum, 0), maskApp|maskCategory|maskVIP),
		flowDelete(makeCookie(catConn, vipNum, 0), maskApp|maskConnCats|maskVIP),
	}
}

// deleteMemberFlows removes every connection flow, both directions, of one
// member, whatever VIP it served.
func deleteMemberFlows(memberNum uint32) ofp.FlowMod {
	return flowDelete(makeCookie(catConn, 0, memberNum), maskApp|maskConnCats|maskMember)
}

// replyMatch is what a member's replies carry: its address and the port
// its service answers from (the VIP's port when the member has none; 0
// for ICMP), in the VIP's protocol.
type replyMatch struct {
	ip    [4]byte
	port  uint16
	proto uint8
}

// replyOwner is the member a reply punt is installed for, which its cookie
// names.
type replyOwner struct{ vipNum, memberNum uint32 }

// memberReplyFlow punts a member's replies that no connection flow took.
// Without it they would be switched by the L2 flows, and Open vSwitch
// would cache that in its datapath: a member → client packet of a purged
// connection leaves a cached entry that the next connection's replies can
// hit, before the switch revalidates its cache against the new connection
// flows, and leave without the reverse NAT. With this flow every cached
// entry for a member's replies is a punt, and the controller applies the
// NAT to those of recent setups (packetin.go). ICMP VIPs match echo
// replies only, as their connection flows do.
func memberReplyFlow(m replyMatch, o replyOwner) ofp.FlowMod {
	match := []ofp.OXM{ofp.MatchEthType(ethTypeIPv4), ofp.MatchIPProto(m.proto), ofp.MatchIPv4Src(m.ip)}
	switch m.proto {
	case protoTCP:
		match = append(match, ofp.MatchTCPSrc(m.port))
	case protoUDP:
		match = append(match, ofp.MatchUDPSrc(m.port))
	case protoICMP:
		match = append(match, ofp.MatchICMPv4Type(icmpEchoReply))
	}
	return flowAdd(makeCookie(catMemberReply, o.vipNum, o.memberNum), prioMemberReply, 0, match, toController)
}

// deleteMemberReplyFlow removes the reply punt installed for a member.
func deleteMemberReplyFlow(memberNum uint32) ofp.FlowMod {
	return flowDelete(makeCookie(catMemberReply, 0, memberNum), maskApp|maskCategory|maskMember)
}

// l2Flow forwards frames for a learned MAC. Adding it again with another
// port replaces it (same match and priority), which handles moves.
func l2Flow(mac [6]byte, port uint32) ofp.FlowMod {
	return flowAdd(makeCookie(catL2, 0, 0), prioL2, l2IdleTimeout,
		[]ofp.OXM{ofp.MatchEthDst(mac)}, ofp.ActionOutput{Port: port})
}

// connection is one client connection to a VIP, bound to a member, with
// everything its flows need.
type connection struct {
	proto                           uint8
	clientIP, vipIP, memberIP       [4]byte
	clientPort, vipPort, memberPort uint16 // unused for ICMP
	clientOFPort, memberOFPort      uint32
	vipMAC, memberMAC               [6]byte
	vipNum, memberNum               uint32
	idleTimeout, hardTimeout        uint16
}

// connFlows builds the two flow-mods of a connection into storage it owns
// and reuses, so the packet-in hot path builds them without allocating.
// The interface values inside point at the struct's own fields, so
// filling them boxes nothing.
type connFlows struct {
	mods  [2]ofp.FlowMod
	oxms  [2][7]ofp.OXM
	sets  [2][3]ofp.ActionSetField
	outs  [2]ofp.ActionOutput
	acts  [2][4]ofp.Action
	apply [2]ofp.InstructionApplyActions
	insts [2][1]ofp.Instruction
}

func newConnFlows() *connFlows {
	f := new(connFlows)
	for d := range 2 {
		f.insts[d][0] = &f.apply[d]
	}
	return f
}

// build fills the flow-mods for c: [0] client → member, [1] member → client.
// The result aliases f and is valid until the next build.
func (f *connFlows) build(c *connection) []ofp.FlowMod {
	// client → member: keep the client's eth_src, rewrite the destination.
	f.sets[0][0] = ofp.ActionSetField{Field: ofp.MatchEthDst(c.memberMAC)}
	f.sets[0][1] = ofp.ActionSetField{Field: ofp.MatchIPv4Dst(c.memberIP)}
	f.sets[0][2] = ofp.ActionSetField{Field: l4Dst(c.proto, c.memberPort)}
	f.direction(0, makeCookie(catConn, c.vipNum, c.memberNum), c,
		c.clientIP, c.vipIP, c.clientPort, c.vipPort, icmpEchoRequest, c.memberOFPort)

	// member → client: answer from the VIP's addresses.
	f.sets[1][0] = ofp.ActionSetField{Field: ofp.MatchEthSrc(c.vipMAC)}
	f.sets[1][1] = ofp.ActionSetField{Field: ofp.MatchIPv4Src(c.vipIP)}
	f.sets[1][2] = ofp.ActionSetField{Field: l4Src(c.proto, c.vipPort)}
	f.direction(1, makeCookie(catConnReply, c.vipNum, c.memberNum), c,
		c.memberIP, c.clientIP, c.memberPort, c.clientPort, icmpEchoReply, c.clientOFPort)
	return f.mods[:]
}

// forwardActions returns the client → member actions of the last build.
func (f *connFlows) forwardActions() []ofp.Action { return f.apply[0].Actions }

// replyActions returns the member → client actions of the last build.
func (f *connFlows) replyActions() []ofp.Action { return f.apply[1].Actions }

// direction fills flow-mod d, whose set-fields are already in f.sets[d],
// matching src → dst and sending out outPort.
func (f *connFlows) direction(d int, cookie uint64, c *connection, src, dst [4]byte, sport, dport uint16, icmpType uint8, outPort uint32) {
	// Slot 0 is kept for in_port, needed only when the packet leaves by the
	// port it came in on: a switch never does that unless told IN_PORT.
	match := f.oxms[d][1:1]
	match = append(match, ofp.MatchEthType(ethTypeIPv4), ofp.MatchIPProto(c.proto),
		ofp.MatchIPv4Src(src), ofp.MatchIPv4Dst(dst))
	match = appendL4(match, c.proto, sport, dport, icmpType)
	f.outs[d] = ofp.ActionOutput{Port: outPort}
	if c.memberOFPort == c.clientOFPort {
		f.oxms[d][0] = ofp.MatchInPort(c.clientOFPort)
		match = f.oxms[d][:len(match)+1]
		f.outs[d].Port = ofp.PortInPort
	}
	n := 2 // eth and ipv4 rewrites; ICMP has no port to rewrite
	if c.proto == protoTCP || c.proto == protoUDP {
		n = 3
	}
	for i := range n {
		f.acts[d][i] = &f.sets[d][i]
	}
	f.acts[d][n] = &f.outs[d]
	f.apply[d].Actions = f.acts[d][:n+1]
	f.mods[d] = ofp.FlowMod{
		Cookie:       cookie,
		Command:      ofp.FlowAdd,
		IdleTimeout:  c.idleTimeout,
		HardTimeout:  c.hardTimeout,
		Priority:     prioConnection,
		BufferID:     ofp.NoBuffer,
		OutPort:      ofp.PortAny,
		OutGroup:     ofp.GroupAny,
		Flags:        ofp.FlagSendFlowRem, // accounting reads both directions' counters
		Match:        ofp.Match{OXMs: match},
		Instructions: f.insts[d][:],
	}
}

func appendL4(m []ofp.OXM, proto uint8, src, dst uint16, icmpType uint8) []ofp.OXM {
	switch proto {
	case protoTCP:
		return append(m, ofp.MatchTCPSrc(src), ofp.MatchTCPDst(dst))
	case protoUDP:
		return append(m, ofp.MatchUDPSrc(src), ofp.MatchUDPDst(dst))
	}
	return append(m, ofp.MatchICMPv4Type(icmpType))
}

func l4Dst(proto uint8, port uint16) ofp.OXM {
	if proto == protoUDP {
		return ofp.MatchUDPDst(port)
	}
	return ofp.MatchTCPDst(port)
}

func l4Src(proto uint8, port uint16) ofp.OXM {
	if proto == protoUDP {
		return ofp.MatchUDPSrc(port)
	}
	return ofp.MatchTCPSrc(port)
}

func ipUint(ip [4]byte) uint32 { return binary.BigEndian.Uint32(ip[:]) }
