package model

import (
	"net/netip"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Connection is one client connection to a VIP, bound to a member, with
// everything its flows need. An ICMP connection is a client's echo
// requests; one of another protocol without ports (to an ANY VIP) is all
// the client's packets of that protocol.
type Connection struct {
	Proto                           uint8 // the packets', never protoAny
	ClientIP, VIPIP, MemberIP       netip.Addr
	ClientPort, VIPPort, MemberPort uint16 // TCP and UDP
	ClientOFPort, MemberOFPort      uint32
	VIPMAC, MemberMAC               [6]byte
	VIPNum, MemberNum               uint32
	IdleTimeout, HardTimeout        uint16
	// DSR: direct server return, only the destination MAC is rewritten
	// and the member replies straight to the client: no reverse flow.
	DSR bool
	// MemberZone: a SWITCH NAT pool shares the member's address and port,
	// so the switch's tracker sees its replies first. The connection is
	// committed in the member zone, naming its VIP, and its reverse flow
	// takes the replies the tracker says are its own (TableFromMember).
	MemberZone bool
}

// memberZoneMark is the mark a connection set up by the controller has in
// the member zone: its protocol and VIP port, as serviceMark has them.
func (c *Connection) memberZoneMark() uint32 {
	return serviceMark(VIPKey{Proto: c.Proto, Port: c.VIPPort})
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
func (c *Connection) forward() natDirection {
	return natDirection{
		cookie: ConnCookie(CatConn, c.Shard(), c.VIPNum, c.MemberNum),
		src:    c.ClientIP, dst: c.VIPIP, srcPort: c.ClientPort, dstPort: c.VIPPort, echoRequest: true,
		setEth: ofp.MatchEthDst(c.MemberMAC), setIP: MatchIPDst(c.MemberIP), setPort: L4Dst(c.Proto, c.MemberPort),
		outPort: c.MemberOFPort,
	}
}

// reverse is the member → client direction: the reply comes from the
// VIP's addresses.
func (c *Connection) reverse() natDirection {
	return natDirection{
		cookie: ConnCookie(CatConnReply, c.Shard(), c.VIPNum, c.MemberNum),
		src:    c.MemberIP, dst: c.ClientIP, srcPort: c.MemberPort, dstPort: c.ClientPort,
		setEth: ofp.MatchEthSrc(c.VIPMAC), setIP: MatchIPSrc(c.VIPIP), setPort: L4Src(c.Proto, c.VIPPort),
		outPort: c.ClientOFPort,
	}
}

// finIdleTimeout is the idle timeout of a TCP connection's flows once its
// FIN or reset has passed them: long enough for the quiet side of a
// half-closed connection, short enough to free the switch's table soon
// after the connection ends.
const finIdleTimeout uint16 = 10

// FinIdle is the idle timeout the flows of a TCP connection get at its
// FIN or reset, when connections idle out after idle seconds (0: never):
// finIdleTimeout, or idle where that is shorter.
func FinIdle(idle uint16) uint16 {
	if idle == 0 || idle > finIdleTimeout {
		return finIdleTimeout
	}
	return idle
}

// Closed reports whether the statistics of a connection flow say that its
// connection ended, on a switch whose TCP connection flows get idle
// timeout finIdle at their end (0: none do): a TCP flow that has it.
// Until then they have none (the controller ages them).
func Closed(st *ofp.FlowStats, finIdle uint16) bool {
	return finIdle != 0 && st.IdleTimeout == finIdle && MatchedProto(&st.Match) == ofp.IPProtoTCP
}

// Directions of a connection's flow pair, as ConnFlows indexes them.
const (
	DirForward = 0
	DirReverse = 1
)

// ConnFlows builds the two flow-mods of a connection into storage it owns
// and reuses, so the packet-in hot path builds them without allocating.
// The interface values inside point at the struct's own fields, so
// filling them boxes nothing.
type ConnFlows struct {
	Mods  [2]ofp.FlowMod
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

func NewConnFlows() *ConnFlows {
	f := new(ConnFlows)
	for d := range 2 {
		f.insts[d][0] = &f.apply[d]
	}
	f.commitActs = [2]ofp.Action{&f.commitSets[0], &f.commitSets[1]}
	f.commit = ofp.ActionCT{Flags: ofp.CTCommit, Zone: ctZoneMember, Table: ofp.CTRecircNone, Actions: f.commitActs[:]}
	return f
}

// Fill builds the flow-mods of c, indexed by DirForward and DirReverse;
// a DSR connection has the forward one only. The result aliases f and is
// valid until the next fill.
func (f *ConnFlows) Fill(c *Connection) []ofp.FlowMod {
	f.fillDirection(DirForward, c, c.forward())
	if c.DSR {
		return f.Mods[:1]
	}
	f.fillDirection(DirReverse, c, c.reverse())
	return f.Mods[:]
}

// Actions returns the actions of direction d of the last fill, for a
// packet-out that must leave as the flow would send it.
func (f *ConnFlows) Actions(d int) []ofp.Action { return f.apply[d].Actions }

func (f *ConnFlows) fillDirection(d int, c *Connection, nd natDirection) {
	// Slot 0 is kept for in_port, needed only when the packet leaves by the
	// port it came in on: a switch never does that unless told IN_PORT.
	match := f.oxms[d][1:1]
	match = append(match, ofp.MatchEthType(EthTypeOf(nd.src)), ofp.MatchIPProto(WireProto(c.Proto, nd.src)),
		MatchIPSrc(nd.src), MatchIPDst(nd.dst))
	switch c.Proto {
	case ofp.IPProtoTCP:
		match = append(match, ofp.MatchTCPSrc(nd.srcPort), ofp.MatchTCPDst(nd.dstPort))
	case ofp.IPProtoUDP:
		match = append(match, ofp.MatchUDPSrc(nd.srcPort), ofp.MatchUDPDst(nd.dstPort))
	case ofp.IPProtoICMP:
		match = append(match, matchEcho(nd.src, nd.echoRequest))
	} // other protocols: the addresses alone
	table, priority := TableClassify, PrioConnection
	if c.MemberZone && d == DirReverse {
		table, priority = TableFromMember, prioFromMemberConnection
		match = append(match, ofp.MatchCTLabel(AddressLabel(c.VIPIP)), ofp.MatchCTMark(c.memberZoneMark(), 0xffffffff))
	}
	f.outs[d] = ofp.ActionOutput{Port: nd.outPort}
	if c.MemberOFPort == c.ClientOFPort {
		f.oxms[d][0] = ofp.MatchInPort(c.ClientOFPort)
		match = f.oxms[d][:len(match)+1]
		f.outs[d].Port = ofp.PortInPort
	}
	n := 0
	f.sets[d] = [3]ofp.ActionSetField{{Field: nd.setEth}, {Field: nd.setIP}, {Field: nd.setPort}}
	sets := 2 // eth and ipv4 rewrites; ICMP has no port to rewrite
	switch {
	case c.DSR:
		sets = 1
	case HasPorts(c.Proto):
		sets = 3
	}
	for i := range sets {
		f.acts[d][n] = &f.sets[d][i]
		n++
	}
	if c.MemberZone && d == DirForward {
		f.commitSets[0].Field = ofp.MatchCTLabel(AddressLabel(c.VIPIP))
		f.commitSets[1].Field = ofp.MatchCTMark(c.memberZoneMark(), 0xffffffff)
		f.acts[d][n] = &f.commit
		n++
	}
	f.acts[d][n] = &f.outs[d]
	f.apply[d].Actions = f.acts[d][:n+1]
	f.Mods[d] = ofp.FlowMod{
		Cookie:       nd.cookie,
		TableID:      table,
		Command:      ofp.FlowAdd,
		IdleTimeout:  c.IdleTimeout,
		HardTimeout:  c.HardTimeout,
		Priority:     priority,
		BufferID:     ofp.NoBuffer,
		OutPort:      ofp.PortAny,
		OutGroup:     ofp.GroupAny,
		Flags:        ofp.FlagSendFlowRem, // accounting reads both directions' counters
		Match:        ofp.Match{OXMs: match},
		Instructions: f.insts[d][:],
	}
}

// SetMember binds c to m; a member port of 0 means the VIP's port, as
// does DSR, which rewrites no port. tracker says whether the switch has a
// connection tracker for the in-switch dispatch.
func (c *Connection) SetMember(m *Member, tracker bool) {
	c.MemberIP, c.MemberPort, c.MemberNum = m.IP, m.Port, m.Num
	if c.MemberPort == 0 || c.DSR {
		c.MemberPort = c.VIPPort
	}
	c.MemberZone = tracker && m.MemberZone
}

// Packets of a connection that reach the controller within RecentWindow
// of its setup follow the first one to the same member, and the member's
// replies get the reverse NAT: both can overtake Open vSwitch's
// revalidation of its datapath flow cache (docs/DATAPATH.md, "Recent-setup caches"). Each
// switch remembers its recent setups in two caches, one keyed by the
// client's side of the connection, one by the reply's. They are
// set-associative: a setup takes the oldest of its set's ways, so it is
// lost only when as many newer setups hash to its set, not at the first
// collision, which at thousands of setups per second reset a connection in
// a thousand.
const (
	RecentSize   = 8192 // entries of each cache; a power of two
	RecentWays   = 4    // entries per set
	recentSets   = RecentSize / RecentWays
	RecentWindow = int64(2 * time.Second)
)

type ConnKey struct {
	ClientIP   netip.Addr
	ClientPort uint16
	Proto      uint8 // an ANY VIP's connections differ by protocol too
	VIPNum     uint32
}

// Set is the first entry of k's set.
func (k ConnKey) Set() int {
	h := Fold32(k.ClientIP)*0x9e3779b1 ^ uint32(k.ClientPort)*0x85ebca6b ^ k.VIPNum*0xc2b2ae35
	return int(h>>16^h) & (recentSets - 1) * RecentWays
}

// ConnKeyOf is the key of the connection whose client → member flow has
// match m, to the VIP numbered vipNum.
func ConnKeyOf(m *ofp.Match, vipNum uint32) (ConnKey, bool) {
	client, ok := MatchedSrc(m)
	if !ok {
		return ConnKey{}, false
	}
	k := ConnKey{ClientIP: client, Proto: MatchedProto(m), VIPNum: vipNum}
	if HasPorts(k.Proto) {
		p, ok := m.Get(L4SrcField(k.Proto))
		if !ok {
			return ConnKey{}, false
		}
		k.ClientPort = uint16(p.Uint())
	}
	return k, true
}

// Shard is the shard of the connection's flows (ConnShard).
func (c *Connection) Shard() uint8 { return ConnShard(c.ClientIP, c.ClientPort) }

func (c *Connection) Key() ConnKey {
	return ConnKey{ClientIP: c.ClientIP, ClientPort: c.ClientPort, Proto: c.Proto, VIPNum: c.VIPNum}
}

// ReplyKey is what a member's reply carries of its connection. A member
// shared by two VIPs could answer the same client port for both; the
// later setup wins the slot, as a client port is rarely reused that fast.
type ReplyKey struct {
	MemberIP, ClientIP     netip.Addr
	MemberPort, ClientPort uint16 // TCP and UDP
	Proto                  uint8
}

func (k ReplyKey) Set() int {
	h := Fold32(k.MemberIP)*0x9e3779b1 ^ Fold32(k.ClientIP)*0x85ebca6b ^ (uint32(k.MemberPort)<<16|uint32(k.ClientPort))*0xc2b2ae35
	return int(h>>16^h) & (recentSets - 1) * RecentWays
}

func (c *Connection) ReplyKey() ReplyKey {
	k := ReplyKey{MemberIP: c.MemberIP, ClientIP: c.ClientIP, Proto: c.Proto}
	if HasPorts(c.Proto) {
		k.MemberPort, k.ClientPort = c.MemberPort, c.ClientPort
	}
	return k
}
