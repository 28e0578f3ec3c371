package controller

import (
	"slices"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/sched"
)

// Refusal reasons, for metrics.
const (
	refusedLimit = iota
	refusedNoMember
	refusedNoFlow
	numRefusals
)

var refusalNames = [numRefusals]string{"limit", "no_member", "no_flow"}

// handleVIPPacket handles IP to a VIP address: the first packet of a new
// connection, or a packet that has no flow (anymore). Of ICMP only echo
// requests start connections; an ANY VIP takes other IP protocols too, by
// their addresses.
func (dp *dataplane) handleVIPPacket(p *packetIn, out *outbox) {
	proto := p.proto()
	var sport, dport uint16
	switch {
	case proto == protoTCP && p.hasTCP:
		sport, dport = uint16(p.tcp.SrcPort), uint16(p.tcp.DstPort)
	case proto == protoUDP && p.hasUDP:
		sport, dport = uint16(p.udp.SrcPort), uint16(p.udp.DstPort)
	case proto == protoICMP && p.isEcho(true):
	case hasPorts(proto) || proto == protoICMP:
		return // truncated, or not an echo request
	}
	vipIP := p.dstIP()
	v := p.snap.vip(vipKey{ip: vipIP, port: dport, proto: proto})
	if v == nil {
		return // a port or protocol no VIP serves
	}
	c := connection{
		proto:    proto,
		clientIP: p.srcIP(), vipIP: vipIP,
		clientPort: sport, vipPort: dport,
		clientOFPort: p.inPort,
		vipMAC:       v.mac, vipNum: v.num,
		idleTimeout: dp.idleTimeout, hardTimeout: dp.hardTimeout,
		dsr: v.dsr(),
	}
	if dp.forwardRecent(p, &c, out) {
		return
	}
	if proto == protoTCP {
		if p.tcp.RST {
			return
		}
		if !p.tcp.SYN || p.tcp.ACK {
			// The connection's flows are gone (its member failed): make
			// the client fail fast instead of retransmitting into a void.
			dp.sendRST(p, v, out)
			dp.metrics.refusals[refusedNoFlow].Inc()
			return
		}
	}

	pool := v.pool
	if pool == nil || len(pool.rotation) == 0 {
		dp.refuse(p, v, refusedNoMember, out)
		return
	}
	if n := v.cnt.active.Add(1); v.limit > 0 && n > v.limit {
		v.cnt.active.Add(-1)
		dp.refuse(p, v, refusedLimit, out)
		return
	}
	m := dp.pick(p.now, pool, v, c.key())
	e, known := dp.learner.host(m.ip)
	if (!known || e.port == 0) && dp.learner.silent(p.now, m.ip) {
		// A member that did not answer ARP for longer than a setup waits
		// takes no connection while another can; it is still asked for.
		if alt, ae, ok := dp.reachableAfter(pool, m); ok {
			dp.askARP(p.now, v, m.ip, out)
			m, e, known = alt, ae, true
			if v.persist > 0 {
				dp.affinity.put(v.num, pool.client(c.clientIP), m.num, p.now.Add(v.persist))
			}
		}
	}
	c.setMember(m, dp.groups)
	if !known || e.port == 0 {
		dp.hold(p, c, v, out)
		return
	}
	c.memberMAC, c.memberOFPort = e.mac, e.port
	dp.install(p.now, p.snap, &c, p.frame, out)
}

// reachableAfter returns the first member of pool's rotation after m
// whose MAC and port the switch showed.
func (dp *dataplane) reachableAfter(pool *poolState, m *memberState) (*memberState, hostEntry, bool) {
	i := slices.Index(pool.rotation, m)
	for n := 1; n < len(pool.rotation); n++ {
		alt := pool.rotation[(i+n)%len(pool.rotation)]
		if e, ok := dp.learner.host(alt.ip); ok && e.port != 0 {
			return alt, e, true
		}
	}
	return nil, hostEntry{}, false
}

// setMember binds c to m; a member port of 0 means the VIP's port, as
// does DSR, which rewrites no port. tracker says whether the switch has a
// connection tracker for the in-switch dispatch.
func (c *connection) setMember(m *memberState, tracker bool) {
	c.memberIP, c.memberPort, c.memberNum = m.ip, m.port, m.num
	if c.memberPort == 0 || c.dsr {
		c.memberPort = c.vipPort
	}
	c.memberZone = tracker && m.memberZone
}

// pick chooses the member: the client's persistent one while it is in
// rotation, else the pool's scheduler's choice. The client is known by
// the pool's IPv6 prefix.
func (dp *dataplane) pick(now time.Time, pool *poolState, v *vipState, key connKey) *memberState {
	client := pool.client(key.clientIP)
	if v.persist > 0 {
		if num, ok := dp.affinity.get(v.num, client, now); ok {
			for _, m := range pool.rotation {
				if m.num == num {
					dp.affinity.put(v.num, client, num, now.Add(v.persist))
					return m
				}
			}
		}
	}
	i, ok := pool.sched.Pick(sched.Key{ClientIP: fold32(client), ClientPort: key.clientPort, Proto: key.proto})
	if !ok || i < 0 || i >= len(pool.rotation) {
		i = 0 // the scheduler was built from this rotation; stay safe anyway
	}
	m := pool.rotation[i]
	if v.persist > 0 {
		dp.affinity.put(v.num, client, m.num, now.Add(v.persist))
	}
	return m
}

// install pushes a connection's flow pair and releases its first packet
// with the same rewrite. The switch handles messages in order, so no
// barrier is needed. The VIP's active count was taken at admission.
func (dp *dataplane) install(now time.Time, snap *snapshot, c *connection, data []byte, out *outbox) {
	for i, mods := 0, dp.flows.fill(c); i < len(mods); i++ {
		out.send(&mods[i])
	}
	dp.sendFrame(c.clientOFPort, dp.flows.actions(dirForward), data, out)
	if dp.l2 == L2Fabric && !c.dsr {
		dp.passReplies(&dp.flows.mods[dirReverse], c.memberMAC, out)
	}
	if m := snap.memberCnt[c.memberNum]; m != nil {
		m.active.Add(1)
		m.total.Add(1)
	}
	dp.accounting.count(c.vipNum, c.memberNum)
	if dp.recent == nil {
		dp.recent = new(recentCache)
	}
	dp.recent.remember(now, c)
	dp.metrics.setups.Inc()
	if dp.debug {
		dp.log.Debug("connection set up", "client", c.clientIP.String(), "client_port", c.clientPort,
			"vip", c.vipIP.String(), "member", c.memberIP.String(), "member_port", c.memberPort)
	}
}

// hold parks a setup until the member's MAC is known and asks for it.
func (dp *dataplane) hold(p *packetIn, c connection, v *vipState, out *outbox) {
	if dp.held.add(p.now, c, p.frame, v.cnt) {
		dp.askARP(p.now, v, c.memberIP, out)
	}
}

// expireHeld drops setups whose member never answered. It is cheap to
// call for every message.
func (dp *dataplane) expireHeld(now time.Time) { dp.held.expire(now) }

// refuse turns a new connection away: TCP gets a reset, UDP and ICMP are
// dropped. It is counted against the VIP's pool.
func (dp *dataplane) refuse(p *packetIn, v *vipState, reason int, out *outbox) {
	v.cnt.refused.Add(1)
	dp.metrics.refusals[reason].Inc()
	if p.proto() == protoTCP {
		dp.sendRST(p, v, out)
	}
	if dp.debug {
		dp.log.Debug("connection refused", "vip", v.id, "reason", refusalNames[reason])
	}
}

func (dp *dataplane) sendRST(p *packetIn, v *vipState, out *outbox) {
	dp.frame = appendTCPRST(dp.frame[:0], rstFor(p.decoder, v.mac))
	dp.packetOut(p.inPort, ofp.PortInPort, dp.frame, out)
}

// purgeFor returns the flow delete a connection needs when snap no longer
// lets it run: its VIP is gone or no longer serves it, or its member is
// gone, moved or DOWN. A DRAINING member keeps its connections.
func purgeFor(snap *snapshot, c *connection) (ofp.FlowMod, bool) {
	v := snap.vipByNum[c.vipNum]
	if v == nil || v.ip != c.vipIP || v.mac != c.vipMAC || !v.serves(c.proto, c.vipPort) {
		return deleteVIPConnections(c.vipNum), true
	}
	m := snap.member(c.memberNum)
	if m == nil || m.status == sdnlb.MemberDown || m.ip != c.memberIP {
		return deleteMemberFlows(c.memberNum), true
	}
	return ofp.FlowMod{}, false
}
