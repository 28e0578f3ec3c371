package dataplane

import (
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/sched"
)

// Refusal reasons, for metrics.
const (
	refusedLimit = iota
	refusedNoMember
	refusedNoFlow
	refusedCapacity
	numRefusals
)

var refusalNames = [numRefusals]string{"limit", "no_member", "no_flow", "capacity"}

// handleVIPPacket handles IP to a VIP address: the first packet of a new
// connection, or a packet that has no flow (anymore). Of ICMP only echo
// requests start connections; an ANY VIP takes other IP protocols too, by
// their addresses.
func (dp *Switch) handleVIPPacket(p *packetIn, out *Outbox) {
	proto := p.proto()
	sport, dport, ok := p.connPorts(proto)
	if !ok {
		return
	}
	vipIP := p.dstIP()
	v := p.snap.VIP(model.VIPKey{IP: vipIP, Port: dport, Proto: proto})
	if v == nil {
		return // a port or protocol no VIP serves
	}
	c := model.Connection{
		Proto:    proto,
		ClientIP: p.srcIP(), VIPIP: vipIP,
		ClientPort: sport, VIPPort: dport,
		ClientOFPort: p.inPort,
		VIPMAC:       v.MAC, VIPNum: v.Num,
		IdleTimeout: dp.connIdle(), HardTimeout: dp.HardTimeout,
		DSR: v.DSR(),
	}
	var counted countedConn
	seen := false
	if !dp.tracks(v.Num) { // a tracked connection has no flows to end or to install again
		counted, seen = dp.accounting.connection(c.Key())
	}
	// A SYN on the ports of a connection that ended opens a new one, to be
	// admitted, not forwarded as the old one's packet that overtook it.
	reopens := seen && counted.ended && p.hasTCP && p.tcp.SYN && !p.tcp.ACK
	if dp.endHere(p, &c, counted, seen, out) || !reopens && dp.forwardRecent(p, &c, out) || dp.setUpAgain(p, &c, counted, seen, out) ||
		!dp.admit(p, proto, v, out) {
		return
	}
	m := dp.choose(p, v, c.Key(), counted, seen)
	if m == nil {
		v.Cnt.Active.Add(-1)
		dp.refuse(p, v, refusedCapacity, out)
		return
	}
	e, known := dp.Learner.Host(m.IP)
	if (!known || e.Port == 0) && dp.Learner.silent(p.now, m.IP) {
		// A member that did not answer ARP for longer than a setup waits
		// takes no connection while another can; it is still asked for.
		if alt, ae, ok := dp.replaceSilent(p, v, m, c.ClientIP, out); ok {
			m, e, known = alt, ae, true
		}
	}
	c.SetMember(m, dp.Groups)
	if !known || e.Port == 0 {
		dp.hold(p, c, v, out)
		return
	}
	c.MemberMAC, c.MemberOFPort = e.MAC, e.Port
	dp.install(p.now, p.snap, &c, p.frame, out)
}

// choose picks the member of a new connection k to v: the member of the
// connection that ended on its ports while their flows remain (counted,
// when seen), else the pool's pick, passing over a member at its
// capacity; nil when every member is at its capacity. A client that
// reuses its ports keeps their member because the switch's datapath may
// still send the packets after the SYN by the old flows for a moment (it
// revalidates its cache asynchronously), to the old member.
func (dp *Switch) choose(p *packetIn, v *model.VIP, k model.ConnKey, counted countedConn, seen bool) *model.Member {
	pool := v.Pool
	var m *model.Member
	if seen && counted.ended {
		if prev, _, ok := dp.reachable(p.snap, counted.member); ok && model.InRotation(prev.Status) {
			m = prev
		}
	}
	if m == nil {
		flow := p.hashedFlow()
		m = dp.pick(p.now, pool, v, k, pool.ConnHash(&flow))
	}
	if !m.AtCapacity() {
		return m
	}
	if m = roomAfter(pool, m); m != nil && v.Persist > 0 {
		dp.Affinity.put(v.Num, pool.Client(k.ClientIP), m.Num, p.now.Add(v.Persist))
	}
	return m
}

// reachable returns the member numbered num and where the switch showed
// it, when snap has it and the switch did.
func (dp *Switch) reachable(snap *model.Snapshot, num uint32) (*model.Member, HostEntry, bool) {
	m := snap.Member(num)
	if m == nil {
		return nil, HostEntry{}, false
	}
	e, known := dp.Learner.Host(m.IP)
	return m, e, known && e.Port != 0
}

// setUpAgain gives a SYN of a connection the switch counts as active
// (counted, when seen: a retransmission, or a client reusing the ports of
// a connection whose end the switch has not shown yet) the connection's
// member again, with fresh flows: the connection is admitted already, and
// stays counted once.
func (dp *Switch) setUpAgain(p *packetIn, c *model.Connection, counted countedConn, seen bool, out *Outbox) bool {
	if !seen || counted.ended || !p.hasTCP || !p.tcp.SYN || p.tcp.ACK {
		return false
	}
	m, e, ok := dp.reachable(p.snap, counted.member)
	if !ok || !model.InRotation(m.Status) {
		return false
	}
	c.SetMember(m, dp.Groups)
	c.MemberMAC, c.MemberOFPort = e.MAC, e.Port
	dp.installFlows(c, p.frame, out)
	return true
}

// endHere takes a client's FIN or reset that the switch sent up
// (model.ControllerPunts) on to the member of its connection (counted,
// when seen), and ends the connection: it stops counting at once, and its
// flows get a closing connection's idle timeout (finIdle), after which
// the switch removes them.
func (dp *Switch) endHere(p *packetIn, c *model.Connection, counted countedConn, seen bool, out *Outbox) bool {
	if !seen || !p.hasTCP || p.tcp.SYN || !p.tcp.FIN && !p.tcp.RST {
		return false
	}
	m, e, ok := dp.reachable(p.snap, counted.member)
	if !ok || m.Status == sdnlb.MemberDown {
		return false
	}
	c.SetMember(m, dp.Groups)
	c.MemberMAC, c.MemberOFPort = e.MAC, e.Port
	finIdle := dp.finIdle()
	shorten := !counted.ended && finIdle != 0
	if shorten {
		c.IdleTimeout = finIdle
	}
	mods := dp.flows.Fill(c)
	if !counted.ended {
		dp.accounting.end(p.snap, c.Key(), m.Num)
	}
	if shorten {
		for i := range mods {
			out.Send(&mods[i])
		}
	}
	dp.sendFrame(c.ClientOFPort, dp.flows.Actions(model.DirForward), p.frame, out)
	return true
}

// connPorts returns the client's and the VIP's port of a packet of proto
// to a VIP; ok is false for one that starts no connection: TCP or UDP
// truncated before its ports, or ICMP but an echo request. Other IP
// protocols have no ports.
func (p *packetIn) connPorts(proto uint8) (sport, dport uint16, ok bool) {
	switch {
	case proto == ofp.IPProtoTCP && p.hasTCP:
		return uint16(p.tcp.SrcPort), uint16(p.tcp.DstPort), true
	case proto == ofp.IPProtoUDP && p.hasUDP:
		return uint16(p.udp.SrcPort), uint16(p.udp.DstPort), true
	case proto == ofp.IPProtoICMP && p.isEcho(true):
	case model.HasPorts(proto) || proto == ofp.IPProtoICMP:
		return 0, 0, false // truncated, or not an echo request
	}
	return 0, 0, true
}

// admit takes a new connection of proto to v in, counting it against v's
// connection limit, or turns it away. A TCP segment but a SYN belongs to
// a connection whose flows are gone (its member failed): a reset is
// dropped, anything else gets one, so that the client fails fast instead
// of retransmitting into a void. A connection v has no member in rotation
// for, or that v's limit leaves no room for, is refused.
func (dp *Switch) admit(p *packetIn, proto uint8, v *model.VIP, out *Outbox) bool {
	if proto == ofp.IPProtoTCP {
		if p.tcp.RST {
			return false
		}
		if !p.tcp.SYN || p.tcp.ACK {
			dp.sendRST(p, v, out)
			dp.Metrics.refusals[refusedNoFlow].Inc()
			return false
		}
	}
	pool := v.Pool
	if pool == nil || len(pool.Rotation) == 0 {
		dp.refuse(p, v, refusedNoMember, out)
		return false
	}
	if v.Cnt.Active.Add(1); v.Limit > 0 && v.Cnt.ActiveConns() > v.Limit {
		v.Cnt.Active.Add(-1)
		dp.refuse(p, v, refusedLimit, out)
		return false
	}
	return true
}

// replaceSilent returns, for m, a silent member of v, the next member of
// v's rotation the switch showed, if any; it asks for m again, and gives
// the client's persistence to the replacement.
func (dp *Switch) replaceSilent(p *packetIn, v *model.VIP, m *model.Member, client netip.Addr, out *Outbox) (*model.Member, HostEntry, bool) {
	alt, e, ok := dp.reachableAfter(v.Pool, m)
	if !ok {
		return nil, HostEntry{}, false
	}
	dp.askARP(p.now, v, m.IP, out)
	if v.Persist > 0 {
		dp.Affinity.put(v.Num, v.Pool.Client(client), alt.Num, p.now.Add(v.Persist))
	}
	return alt, e, true
}

// roomAfter returns the first member of pool's rotation after m that is
// not at its capacity, or nil when every one is.
func roomAfter(pool *model.Pool, m *model.Member) *model.Member {
	i := slices.Index(pool.Rotation, m)
	for n := 1; n < len(pool.Rotation); n++ {
		if alt := pool.Rotation[(i+n)%len(pool.Rotation)]; !alt.AtCapacity() {
			return alt
		}
	}
	return nil
}

// reachableAfter returns the first member of pool's rotation after m
// whose MAC and port the switch showed.
func (dp *Switch) reachableAfter(pool *model.Pool, m *model.Member) (*model.Member, HostEntry, bool) {
	i := slices.Index(pool.Rotation, m)
	for n := 1; n < len(pool.Rotation); n++ {
		alt := pool.Rotation[(i+n)%len(pool.Rotation)]
		if e, ok := dp.Learner.Host(alt.IP); ok && e.Port != 0 {
			return alt, e, true
		}
	}
	return nil, HostEntry{}, false
}

// pick chooses the member: the client's persistent one while it is in
// rotation, else the pool's scheduler's choice, which CONSISTENT_HASH
// makes by the packet's hash. The client is known by the pool's IPv6
// prefix.
func (dp *Switch) pick(now time.Time, pool *model.Pool, v *model.VIP, key model.ConnKey, hash uint32) *model.Member {
	client := pool.Client(key.ClientIP)
	if v.Persist > 0 {
		if num, ok := dp.Affinity.get(v.Num, client, now); ok {
			for _, m := range pool.Rotation {
				if m.Num == num {
					dp.Affinity.put(v.Num, client, num, now.Add(v.Persist))
					return m
				}
			}
		}
	}
	i, ok := pool.Sched.Pick(sched.Key{ClientIP: model.Fold32(client), ClientPort: key.ClientPort, Proto: key.Proto, Hash: hash})
	if !ok || i < 0 || i >= len(pool.Rotation) {
		i = 0 // the scheduler was built from this rotation; stay safe anyway
	}
	m := pool.Rotation[i]
	if v.Persist > 0 {
		dp.Affinity.put(v.Num, client, m.Num, now.Add(v.Persist))
	}
	return m
}

// install releases a connection's first packet to its member and counts
// it: committed in the tracker, for a VIP the switch's tracker holds,
// else with the connection's flows. The VIP's active count was taken at
// admission; a connection with flows counted already (a held SYN and its
// retransmission) gives it back.
func (dp *Switch) install(now time.Time, snap *model.Snapshot, c *model.Connection, data []byte, out *Outbox) {
	if dp.tracks(c.VIPNum) {
		dp.sendFrame(c.ClientOFPort, c.TrackActions(), data, out)
		dp.accounting.countTracked(snap, c.VIPNum, c.MemberNum)
	} else {
		dp.installFlows(c, data, out)
		dp.countWithFlows(snap, c)
	}
	if dp.recent == nil {
		dp.recent = new(recentCache)
	}
	dp.recent.remember(now, c)
	dp.Metrics.setups.Inc()
	if dp.debug {
		dp.Log.Debug("connection set up", "client", c.ClientIP.String(), "client_port", c.ClientPort,
			"vip", c.VIPIP.String(), "member", c.MemberIP.String(), "member_port", c.MemberPort)
	}
}

// tracks reports whether the switch's tracker holds the connections of
// the VIP numbered vipNum.
func (dp *Switch) tracks(vipNum uint32) bool {
	_, ok := dp.dispatcher.tracked[vipNum]
	return ok
}

// countWithFlows counts a connection whose flows were installed.
func (dp *Switch) countWithFlows(snap *model.Snapshot, c *model.Connection) {
	if m := snap.MemberCnt[c.MemberNum]; m != nil {
		m.Total.Add(1)
	}
	if dp.accounting.count(snap, c.Key(), c.MemberNum) {
		if m := snap.MemberCnt[c.MemberNum]; m != nil {
			m.Active.Add(1)
		}
	} else if v := snap.VIPCnt[c.VIPNum]; v != nil {
		v.Active.Add(-1)
	}
}

// installFlows pushes a connection's flow pair and releases its first
// packet with the same rewrite. The switch handles messages in order, so
// no barrier is needed.
func (dp *Switch) installFlows(c *model.Connection, data []byte, out *Outbox) {
	mods := dp.flows.Fill(c)
	for i := range mods {
		out.Send(&mods[i])
	}
	dp.accounting.installed(mods)
	dp.sendFrame(c.ClientOFPort, dp.flows.Actions(model.DirForward), data, out)
	if dp.L2 == model.L2Fabric && !c.DSR {
		dp.passReplies(&dp.flows.Mods[model.DirReverse], c.MemberMAC, out)
	}
}

// hold parks a setup until the member's MAC is known and asks for it.
func (dp *Switch) hold(p *packetIn, c model.Connection, v *model.VIP, out *Outbox) {
	if dp.held.add(p.now, c, p.frame, v.Cnt) {
		dp.askARP(p.now, v, c.MemberIP, out)
	}
}

// ExpireHeld drops setups whose member never answered. It is cheap to
// call for every message.
func (dp *Switch) ExpireHeld(now time.Time) { dp.held.expire(now) }

// refuse turns a new connection away: TCP gets a reset, UDP and ICMP are
// dropped. It is counted against the VIP's pool.
func (dp *Switch) refuse(p *packetIn, v *model.VIP, reason int, out *Outbox) {
	v.Cnt.Refused.Add(1)
	dp.Metrics.refusals[reason].Inc()
	if p.proto() == ofp.IPProtoTCP {
		dp.sendRST(p, v, out)
	}
	if dp.debug {
		dp.Log.Debug("connection refused", "vip", v.ID, "reason", refusalNames[reason])
	}
}

func (dp *Switch) sendRST(p *packetIn, v *model.VIP, out *Outbox) {
	dp.frame = appendTCPRST(dp.frame[:0], rstFor(p.decoder, v.MAC))
	dp.packetOut(p.inPort, ofp.PortInPort, dp.frame, out)
}

// purgeFor returns the flow delete a connection needs when snap no longer
// lets it run: its VIP is gone or no longer serves it, or its member is
// gone, moved or DOWN. A DRAINING member keeps its connections.
func purgeFor(snap *model.Snapshot, c *model.Connection) (ofp.FlowMod, bool) {
	v := snap.VIPByNum[c.VIPNum]
	if v == nil || v.IP != c.VIPIP || v.MAC != c.VIPMAC || !v.Serves(c.Proto, c.VIPPort) {
		return model.DeleteVIPConnections(c.VIPNum), true
	}
	m := snap.Member(c.MemberNum)
	if m == nil || m.Status == sdnlb.MemberDown || m.IP != c.MemberIP {
		return model.DeleteMemberFlows(c.MemberNum), true
	}
	return ofp.FlowMod{}, false
}
