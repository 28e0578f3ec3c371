package controller

import (
	"net/netip"
	"time"

	"github.com/sdnlb/sdnlb"
)

// Packets of a connection that reach the controller within recentWindow
// of its setup follow the first one to the same member, and the member's
// replies get the reverse NAT: both can overtake Open vSwitch's
// revalidation of its datapath flow cache (docs/ARCHITECTURE.md). Each
// switch remembers its recent setups in two caches, one keyed by the
// client's side of the connection, one by the reply's. They are
// set-associative: a setup takes the oldest of its set's ways, so it is
// lost only when as many newer setups hash to its set, not at the first
// collision, which at thousands of setups per second reset a connection in
// a thousand.
const (
	recentSize   = 8192 // entries of each cache; a power of two
	recentWays   = 4    // entries per set
	recentSets   = recentSize / recentWays
	recentWindow = int64(2 * time.Second)
)

type recentCache struct {
	setups  [recentSize]recentSetup
	replies [recentSize]recentReply
}

type recentSetup struct {
	key          connKey
	memberNum    uint32
	memberOFPort uint32
	memberMAC    [6]byte
	at           int64 // unix nanoseconds
}

type connKey struct {
	clientIP   netip.Addr
	clientPort uint16
	proto      uint8 // an ANY VIP's connections differ by protocol too
	vipNum     uint32
}

// set is the first entry of k's set.
func (k connKey) set() int {
	h := fold32(k.clientIP)*0x9e3779b1 ^ uint32(k.clientPort)*0x85ebca6b ^ k.vipNum*0xc2b2ae35
	return int(h>>16^h) & (recentSets - 1) * recentWays
}

func (c *connection) key() connKey {
	return connKey{clientIP: c.clientIP, clientPort: c.clientPort, proto: c.proto, vipNum: c.vipNum}
}

// recentReply is a recent setup found by its member → client direction.
type recentReply struct {
	key  replyKey
	conn connection // as installed
	at   int64      // unix nanoseconds
}

// replyKey is what a member's reply carries of its connection. A member
// shared by two VIPs could answer the same client port for both; the
// later setup wins the slot, as a client port is rarely reused that fast.
type replyKey struct {
	memberIP, clientIP     netip.Addr
	memberPort, clientPort uint16 // TCP and UDP
	proto                  uint8
}

func (k replyKey) set() int {
	h := fold32(k.memberIP)*0x9e3779b1 ^ fold32(k.clientIP)*0x85ebca6b ^ (uint32(k.memberPort)<<16|uint32(k.clientPort))*0xc2b2ae35
	return int(h>>16^h) & (recentSets - 1) * recentWays
}

// way returns the entry of set (its first index) that holds key, else
// the oldest one, which a new entry for key takes.
func way[K comparable, E any](entries *[recentSize]E, set int, key K, keyOf func(*E) K, at func(*E) int64) *E {
	oldest := &entries[set]
	for i := set; i < set+recentWays; i++ {
		e := &entries[i]
		if keyOf(e) == key {
			return e
		}
		if at(e) < at(oldest) {
			oldest = e
		}
	}
	return oldest
}

func (r *recentCache) setup(k connKey) *recentSetup {
	return way(&r.setups, k.set(), k, func(e *recentSetup) connKey { return e.key }, func(e *recentSetup) int64 { return e.at })
}

func (r *recentCache) reply(k replyKey) *recentReply {
	return way(&r.replies, k.set(), k, func(e *recentReply) replyKey { return e.key }, func(e *recentReply) int64 { return e.at })
}

func (c *connection) replyKey() replyKey {
	k := replyKey{memberIP: c.memberIP, clientIP: c.clientIP, proto: c.proto}
	if hasPorts(c.proto) {
		k.memberPort, k.clientPort = c.memberPort, c.clientPort
	}
	return k
}

// remember records a setup in both caches.
func (r *recentCache) remember(now time.Time, c *connection) {
	at := now.UnixNano()
	key := c.key()
	*r.setup(key) = recentSetup{key: key, memberNum: c.memberNum, memberOFPort: c.memberOFPort,
		memberMAC: c.memberMAC, at: at}
	rk := c.replyKey()
	*r.reply(rk) = recentReply{key: rk, conn: *c, at: at}
}

// forwardRecent sends the packet after its connection's first one when the
// connection was set up a moment ago and its member was not purged since.
func (dp *dataplane) forwardRecent(p *packetIn, c *connection, out *outbox) bool {
	if dp.recent == nil {
		return false
	}
	key := c.key()
	r := dp.recent.setup(key)
	if r.key != key || p.now.UnixNano()-r.at >= recentWindow {
		return false
	}
	m := p.snap.member(r.memberNum)
	if m == nil || m.status == sdnlb.MemberDown {
		return false
	}
	c.setMember(m, dp.groups)
	c.memberMAC, c.memberOFPort = r.memberMAC, r.memberOFPort
	dp.flows.fill(c)
	dp.sendFrame(c.clientOFPort, dp.flows.actions(dirForward), p.frame, out)
	return true
}

// forwardReply sends a member's reply with the reverse NAT of its
// connection when the connection was set up a moment ago and is still
// allowed to run. Other packets a member's reply punt brings (health-probe
// replies, traffic to the member's own address, replies of purged
// connections) are left to L2 forwarding.
func (dp *dataplane) forwardReply(p *packetIn, out *outbox) bool {
	if dp.recent == nil {
		return false
	}
	k := replyKey{memberIP: p.srcIP(), clientIP: p.dstIP(), proto: p.proto()}
	switch {
	case k.proto == protoTCP && p.hasTCP:
		k.memberPort, k.clientPort = uint16(p.tcp.SrcPort), uint16(p.tcp.DstPort)
	case k.proto == protoUDP && p.hasUDP:
		k.memberPort, k.clientPort = uint16(p.udp.SrcPort), uint16(p.udp.DstPort)
	case k.proto == protoICMP && p.isEcho(false):
	case hasPorts(k.proto) || k.proto == protoICMP:
		return false
	} // other protocols, of an ANY VIP: the addresses alone
	r := dp.recent.reply(k)
	if r.key != k || p.now.UnixNano()-r.at >= recentWindow {
		return false
	}
	if _, stale := purgeFor(p.snap, &r.conn); stale {
		return false
	}
	c := r.conn
	c.memberOFPort = p.inPort // the packet-out's in_port: IN_PORT if the client is there too
	dp.flows.fill(&c)
	dp.sendFrame(p.inPort, dp.flows.actions(dirReverse), p.frame, out)
	if dp.debug {
		dp.log.Debug("reply of a recent setup sent with the reverse NAT", "client", c.clientIP.String(),
			"client_port", c.clientPort, "member", c.memberIP.String(), "member_port", c.memberPort)
	}
	return true
}
