package dataplane

import (
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

type recentCache struct {
	setups  [model.RecentSize]recentSetup
	replies [model.RecentSize]recentReply
}

type recentSetup struct {
	key          model.ConnKey
	memberNum    uint32
	memberOFPort uint32
	memberMAC    [6]byte
	at           int64 // unix nanoseconds
}

// recentReply is a recent setup found by its member → client direction.
type recentReply struct {
	key  model.ReplyKey
	conn model.Connection // as installed
	at   int64            // unix nanoseconds
}

// way returns the entry of set (its first index) that holds key, else
// the oldest one, which a new entry for key takes.
func way[K comparable, E any](entries *[model.RecentSize]E, set int, key K, keyOf func(*E) K, at func(*E) int64) *E {
	oldest := &entries[set]
	for i := set; i < set+model.RecentWays; i++ {
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

func (r *recentCache) setup(k model.ConnKey) *recentSetup {
	return way(&r.setups, k.Set(), k, func(e *recentSetup) model.ConnKey { return e.key }, func(e *recentSetup) int64 { return e.at })
}

func (r *recentCache) reply(k model.ReplyKey) *recentReply {
	return way(&r.replies, k.Set(), k, func(e *recentReply) model.ReplyKey { return e.key }, func(e *recentReply) int64 { return e.at })
}

// remember records a setup in both caches.
func (r *recentCache) remember(now time.Time, c *model.Connection) {
	at := now.UnixNano()
	key := c.Key()
	*r.setup(key) = recentSetup{key: key, memberNum: c.MemberNum, memberOFPort: c.MemberOFPort,
		memberMAC: c.MemberMAC, at: at}
	rk := c.ReplyKey()
	*r.reply(rk) = recentReply{key: rk, conn: *c, at: at}
}

// forwardRecent sends the packet after its connection's first one when the
// connection was set up a moment ago and its member was not purged since.
// A tracked connection's packet reaches the controller only when it
// came before the commit of the first one (a UDP burst): it is committed
// with the same member again.
func (dp *Switch) forwardRecent(p *packetIn, c *model.Connection, out *Outbox) bool {
	if dp.recent == nil {
		return false
	}
	key := c.Key()
	r := dp.recent.setup(key)
	if r.key != key || p.now.UnixNano()-r.at >= model.RecentWindow {
		return false
	}
	m := p.snap.Member(r.memberNum)
	if m == nil || m.Status == sdnlb.MemberDown {
		return false
	}
	c.SetMember(m, dp.Groups)
	c.MemberMAC, c.MemberOFPort = r.memberMAC, r.memberOFPort
	if dp.tracks(c.VIPNum) {
		dp.sendFrame(c.ClientOFPort, c.TrackActions(), p.frame, out)
		return true
	}
	dp.flows.Fill(c)
	dp.sendFrame(c.ClientOFPort, dp.flows.Actions(model.DirForward), p.frame, out)
	return true
}

// forwardReply sends a member's reply with the reverse NAT of its
// connection when the connection was set up a moment ago and is still
// allowed to run. Other packets a member's reply punt brings (health-probe
// replies, traffic to the member's own address, replies of purged
// connections) are left to L2 forwarding.
func (dp *Switch) forwardReply(p *packetIn, out *Outbox) bool {
	if dp.recent == nil {
		return false
	}
	k := model.ReplyKey{MemberIP: p.srcIP(), ClientIP: p.dstIP(), Proto: p.proto()}
	switch {
	case k.Proto == ofp.IPProtoTCP && p.hasTCP:
		k.MemberPort, k.ClientPort = uint16(p.tcp.SrcPort), uint16(p.tcp.DstPort)
	case k.Proto == ofp.IPProtoUDP && p.hasUDP:
		k.MemberPort, k.ClientPort = uint16(p.udp.SrcPort), uint16(p.udp.DstPort)
	case k.Proto == ofp.IPProtoICMP && p.isEcho(false):
	case model.HasPorts(k.Proto) || k.Proto == ofp.IPProtoICMP:
		return false
	} // other protocols, of an ANY VIP: the addresses alone
	r := dp.recent.reply(k)
	if r.key != k || p.now.UnixNano()-r.at >= model.RecentWindow {
		return false
	}
	if _, stale := purgeFor(p.snap, &r.conn); stale {
		return false
	}
	c := r.conn
	c.MemberOFPort = p.inPort // the packet-out's in_port: IN_PORT if the client is there too
	dp.flows.Fill(&c)
	dp.sendFrame(p.inPort, dp.flows.Actions(model.DirReverse), p.frame, out)
	if dp.debug {
		dp.Log.Debug("reply of a recent setup sent with the reverse NAT", "client", c.ClientIP.String(),
			"client_port", c.ClientPort, "member", c.MemberIP.String(), "member_port", c.MemberPort)
	}
	return true
}
