package controller

import (
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/sched"
)

// maxLearned bounds each session's MAC and IPv4 tables, so a switch that
// sends packets from ever new addresses cannot grow them without end.
const maxLearned = 1 << 16

// Held setups: a new connection to a member whose MAC is not known yet
// waits for the member's ARP reply, within bounds.
const (
	maxHeldPerMember = 16
	heldTimeout      = 2 * time.Second
	arpRetry         = 500 * time.Millisecond // between ARP requests for one member
)

// Packets of a connection that reach the controller after its setup (a UDP
// burst, a retransmitted SYN, or the client's ACK overtaking Open vSwitch's
// revalidation of its datapath flow cache) follow the first packet to the
// same member: the session remembers recent setups in a direct-mapped
// cache. Without it such an ACK would be taken for a packet of a purged
// connection and answered with a reset. The member's replies can overtake
// the revalidation the same way and reach the controller through the
// member's reply punt; a second cache, keyed by the reply's addresses,
// gives them the reverse NAT.
const (
	recentSize   = 8192 // slots of each cache; a power of two
	recentWindow = int64(2 * time.Second)
)

// recentCache is allocated at a session's first setup.
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
	clientIP   uint32
	clientPort uint16
	vipNum     uint32
}

func (k connKey) slot() int {
	h := k.clientIP*0x9e3779b1 ^ uint32(k.clientPort)*0x85ebca6b ^ k.vipNum*0xc2b2ae35
	return int(h>>16^h) & (recentSize - 1)
}

func (c *connection) key() connKey {
	return connKey{clientIP: ipUint(c.clientIP), clientPort: c.clientPort, vipNum: c.vipNum}
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
	memberIP, clientIP     uint32
	memberPort, clientPort uint16 // 0 for ICMP
	proto                  uint8
}

func (k replyKey) slot() int {
	h := k.memberIP*0x9e3779b1 ^ k.clientIP*0x85ebca6b ^ (uint32(k.memberPort)<<16|uint32(k.clientPort))*0xc2b2ae35
	return int(h>>16^h) & (recentSize - 1)
}

func (c *connection) replyKey() replyKey {
	k := replyKey{memberIP: ipUint(c.memberIP), clientIP: ipUint(c.clientIP), proto: c.proto}
	if c.proto != protoICMP {
		k.memberPort, k.clientPort = c.memberPort, c.clientPort
	}
	return k
}

type heldSetup struct {
	conn     connection
	data     []byte
	deadline time.Time
	vip      *vipCounters
}

// Packet-in kinds, for metrics.
const (
	kindARP = iota
	kindLB
	kindReply
	kindL2
	kindOther
	numKinds
)

var kindNames = [numKinds]string{"arp", "lb", "reply", "l2", "other"}

// handlePacketIn handles s.pin: ARP proxy and learning, new connections to
// VIPs, replies of recent setups, or L2 learning and forwarding. Replies
// are recognised by their addresses, not by the flow that punted them:
// the datapath may still hold an entry cached from an older flow.
func (s *session) handlePacketIn() {
	inPort, ok := s.pin.Match.InPort()
	d := s.dec
	if !ok || !d.decode(s.pin.Data) {
		s.c.metrics.packetIns[kindOther].Inc()
		return
	}
	snap := s.c.snap.Load()
	src := d.ethSrc()
	if _, spoofed := snap.vipMACs[src]; spoofed {
		s.c.metrics.packetIns[kindOther].Inc()
		return
	}
	s.learnMAC(src, inPort)
	switch {
	case d.hasARP:
		s.c.metrics.packetIns[kindARP].Inc()
		s.handleARP(snap, inPort)
	case d.hasIPv4 && snap.vipByAddr[ipUint(ip4(d.ip4.DstIP))] != nil:
		s.c.metrics.packetIns[kindLB].Inc()
		s.handleVIPPacket(snap, inPort)
	case d.hasIPv4 && s.forwardReply(snap, inPort): // sent if a recent setup's reply
		s.c.metrics.packetIns[kindReply].Inc()
	default:
		s.c.metrics.packetIns[kindL2].Inc()
		if srcIP := ipUint(ip4(d.ip4.SrcIP)); d.hasIPv4 && !isMulticast(src) && snap.vipByAddr[srcIP] == nil {
			s.learnIP(srcIP, src, inPort)
		}
		s.forwardL2(snap, inPort)
	}
}

// learnMAC records where a source MAC lives and installs (or, after a
// move, replaces) its L2 flow.
func (s *session) learnMAC(mac [6]byte, port uint32) {
	if isMulticast(mac) || port > ofp.PortMax && port != ofp.PortLocal {
		return
	}
	old, known := s.macs[mac]
	if known && old.port == port || !known && len(s.macs) >= maxLearned {
		return // a full table still forwards, by flooding
	}
	s.installL2(mac, port, s.c.now())
	if s.debug {
		s.log.Debug("learned MAC", "mac", macString(mac), "port", port)
	}
}

func (s *session) installL2(mac [6]byte, port uint32, now time.Time) {
	s.macs[mac] = macEntry{port: port, installed: now.UnixNano()}
	fm := l2Flow(mac, port)
	s.wmu.Lock()
	s.writeLocked(s.nextXID(), &fm)
	s.wmu.Unlock()
}

// l2Reinstall is how long after installing a MAC's flow a packet-in for
// that destination means the flow idled out, rather than that the packet
// overtook the flow-mod.
const l2Reinstall = int64(time.Second)

// forwardL2 sends the packet where its destination MAC lives, or floods.
func (s *session) forwardL2(snap *snapshot, inPort uint32) {
	dst := s.dec.ethDst()
	if _, toVIP := snap.vipMACs[dst]; toVIP {
		return // only the controller answers for a VIP MAC
	}
	port := ofp.PortFlood
	if e, ok := s.macs[dst]; ok && !isMulticast(dst) {
		if e.port == inPort {
			return
		}
		port = e.port
		// The destination's flow is gone (idle timeout) while its host
		// stays quiet toward the controller: put the flow back, or every
		// packet to it would come here. A member's reply punt says
		// nothing about that flow: it takes the member's packets first.
		if now := s.c.now(); now.UnixNano()-e.installed > l2Reinstall && !s.puntedReply() {
			s.installL2(dst, port, now)
		}
	}
	s.packetOut(inPort, port, s.pin.Data)
}

// puntedReply reports whether the packet-in came from a member's reply punt.
func (s *session) puntedReply() bool {
	cat, _, _, ok := cookieParts(s.pin.Cookie)
	return ok && cat == catMemberReply
}

// packetOut sends data out of port; inPort is the port it came in on.
func (s *session) packetOut(inPort, port uint32, data []byte) {
	s.out = ofp.ActionOutput{Port: port}
	s.po = ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: inPort, Actions: s.outActs, Data: data}
	s.wmu.Lock()
	s.writeLocked(s.nextXID(), &s.po)
	s.wmu.Unlock()
}

// handleARP answers requests for VIP addresses, learns every sender (that
// is how member MACs become known) and forwards the rest.
func (s *session) handleARP(snap *snapshot, inPort uint32) {
	a := &s.dec.arp
	sha, spa, tpa := [6]byte(a.SourceHwAddress), ip4(a.SourceProtAddress), ip4(a.DstProtAddress)
	if _, claimsVIP := snap.vipByAddr[ipUint(spa)]; claimsVIP {
		return
	}
	if spa != ([4]byte{}) && !isMulticast(sha) {
		s.learnIP(ipUint(spa), sha, inPort)
	}
	v := snap.vipByAddr[ipUint(tpa)]
	switch {
	case v == nil:
		s.forwardL2(snap, inPort)
	case a.Operation == arpRequest:
		s.frame = appendARP(s.frame[:0], arpReply, sha, v.mac, v.ip, sha, spa)
		s.packetOut(inPort, ofp.PortInPort, s.frame)
		if s.debug {
			s.log.Debug("answered ARP for VIP", "vip", v.id, "asker", ipString(spa), "port", inPort)
		}
	}
	// A reply to a VIP address answers the controller's own request; it
	// has been learned and goes no further.
}

// learnIP records an IPv4 address's MAC and port and completes setups
// that were waiting for it.
func (s *session) learnIP(ip uint32, mac [6]byte, port uint32) {
	e, known := s.arps[ip]
	if known && e.mac == mac && e.port == port {
		return
	}
	s.heldMu.Lock()
	held := s.held[ip]
	delete(s.held, ip)
	s.heldMu.Unlock()
	if !known && len(s.arps) >= maxLearned && len(held) == 0 {
		return // full; a member still gets in through its held setups
	}
	s.arps[ip] = arpEntry{mac: mac, port: port}
	now := s.c.now()
	snap := s.c.snap.Load()
	for i := range held {
		h := &held[i]
		if _, stale := purgeFor(snap, &h.conn); stale || now.After(h.deadline) {
			h.vip.active.Add(-1)
			continue
		}
		h.conn.memberMAC, h.conn.memberOFPort = mac, port
		s.install(&h.conn, h.data, snap)
	}
}

// handleVIPPacket handles IPv4 to a VIP address: the first packet of a new
// connection, or a packet that has no flow (anymore).
func (s *session) handleVIPPacket(snap *snapshot, inPort uint32) {
	d := s.dec
	proto := uint8(d.ip4.Protocol)
	var sport, dport uint16
	switch {
	case proto == protoTCP && d.hasTCP:
		sport, dport = uint16(d.tcp.SrcPort), uint16(d.tcp.DstPort)
	case proto == protoUDP && d.hasUDP:
		sport, dport = uint16(d.udp.SrcPort), uint16(d.udp.DstPort)
	case proto == protoICMP && d.hasICMP && d.icmp.TypeCode.Type() == icmpEchoRequest:
	default:
		return
	}
	vipIP := ip4(d.ip4.DstIP)
	v := snap.vips[vipKey{ip: ipUint(vipIP), port: dport, proto: proto}]
	if v == nil {
		return // a port or protocol no VIP serves
	}
	c := connection{
		proto:    proto,
		clientIP: ip4(d.ip4.SrcIP), vipIP: vipIP,
		clientPort: sport, vipPort: dport,
		clientOFPort: inPort,
		vipMAC:       v.mac, vipNum: v.num,
		idleTimeout: s.c.idle, hardTimeout: s.c.hard,
	}
	now := s.c.now()
	if s.forwardRecent(snap, &c, now) {
		return
	}
	if proto == protoTCP {
		if d.tcp.RST {
			return
		}
		if !d.tcp.SYN || d.tcp.ACK {
			// The connection's flows are gone (its member failed): make
			// the client fail fast instead of retransmitting into a void.
			s.sendRST(inPort, v)
			s.c.metrics.refusals[refusedNoFlow].Inc()
			return
		}
	}

	pool := v.pool
	if pool == nil || len(pool.rotation) == 0 {
		s.refuse(inPort, v, refusedNoMember)
		return
	}
	if n := v.cnt.active.Add(1); v.limit > 0 && n > v.limit {
		v.cnt.active.Add(-1)
		s.refuse(inPort, v, refusedLimit)
		return
	}
	m := s.pick(pool, v, c.key(), proto, now)
	c.setMember(m)
	e, known := s.arps[ipUint(m.ip)]
	if !known {
		s.hold(c, v, now)
		return
	}
	c.memberMAC, c.memberOFPort = e.mac, e.port
	s.install(&c, s.pin.Data, snap)
}

// setMember binds c to m; a member port of 0 means the VIP's port.
func (c *connection) setMember(m *memberState) {
	c.memberIP, c.memberPort, c.memberNum = m.ip, m.port, m.num
	if c.memberPort == 0 {
		c.memberPort = c.vipPort
	}
}

// forwardRecent sends the packet after its connection's first one when the
// connection was set up a moment ago and its member was not purged since.
func (s *session) forwardRecent(snap *snapshot, c *connection, now time.Time) bool {
	if s.recent == nil {
		return false
	}
	key := c.key()
	r := &s.recent.setups[key.slot()]
	if r.key != key || now.UnixNano()-r.at >= recentWindow {
		return false
	}
	m := snap.memberByNum[r.memberNum]
	if m == nil || m.status == sdnlb.MemberDown {
		return false
	}
	c.setMember(m)
	c.memberMAC, c.memberOFPort = r.memberMAC, r.memberOFPort
	s.flows.build(c)
	s.po = ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: c.clientOFPort, Actions: s.flows.forwardActions(), Data: s.pin.Data}
	s.wmu.Lock()
	s.writeLocked(s.nextXID(), &s.po)
	s.wmu.Unlock()
	return true
}

// forwardReply sends a member's reply with the reverse NAT of its
// connection when the connection was set up a moment ago and is still
// allowed to run: the reply overtook the switch's revalidation of its
// cache. Other packets the member's reply punt brings (health-probe
// replies, traffic to the member's own address, replies of purged
// connections) are left to L2 forwarding, by packet-out only. A purged
// connection's reply thus reaches its client from the member's address,
// and the client's reset ends the member's side of it; dropping it instead
// would leave the member retransmitting, and the controller cannot tell it
// from direct traffic to the member without tracking purged connections.
func (s *session) forwardReply(snap *snapshot, inPort uint32) bool {
	if s.recent == nil {
		return false
	}
	d := s.dec
	k := replyKey{memberIP: ipUint(ip4(d.ip4.SrcIP)), clientIP: ipUint(ip4(d.ip4.DstIP)), proto: uint8(d.ip4.Protocol)}
	switch {
	case k.proto == protoTCP && d.hasTCP:
		k.memberPort, k.clientPort = uint16(d.tcp.SrcPort), uint16(d.tcp.DstPort)
	case k.proto == protoUDP && d.hasUDP:
		k.memberPort, k.clientPort = uint16(d.udp.SrcPort), uint16(d.udp.DstPort)
	case k.proto == protoICMP && d.hasICMP && d.icmp.TypeCode.Type() == icmpEchoReply:
	default:
		return false
	}
	r := &s.recent.replies[k.slot()]
	if r.key != k || s.c.now().UnixNano()-r.at >= recentWindow {
		return false
	}
	if _, stale := purgeFor(snap, &r.conn); stale {
		return false
	}
	c := r.conn
	c.memberOFPort = inPort // the packet-out's in_port: IN_PORT if the client is there too
	s.flows.build(&c)
	s.po = ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: inPort, Actions: s.flows.replyActions(), Data: s.pin.Data}
	s.wmu.Lock()
	s.writeLocked(s.nextXID(), &s.po)
	s.wmu.Unlock()
	if s.debug {
		s.log.Debug("reply of a recent setup sent with the reverse NAT", "client", ipString(c.clientIP),
			"client_port", c.clientPort, "member", ipString(c.memberIP), "member_port", c.memberPort)
	}
	return true
}

// pick chooses the member: the client's persistent one while it is in
// rotation, else the pool's scheduler's choice.
func (s *session) pick(pool *poolState, v *vipState, key connKey, proto uint8, now time.Time) *memberState {
	if v.persist > 0 {
		if num, ok := s.c.persist.get(v.num, key.clientIP, now); ok {
			for _, m := range pool.rotation {
				if m.num == num {
					s.c.persist.put(v.num, key.clientIP, num, now.Add(v.persist))
					return m
				}
			}
		}
	}
	i, ok := pool.sched.Pick(sched.Key{ClientIP: key.clientIP, ClientPort: key.clientPort, Proto: proto})
	if !ok || i < 0 || i >= len(pool.rotation) {
		i = 0 // the scheduler was built from this rotation; stay safe anyway
	}
	m := pool.rotation[i]
	if v.persist > 0 {
		s.c.persist.put(v.num, key.clientIP, m.num, now.Add(v.persist))
	}
	return m
}

// install pushes a connection's flow pair and releases its first packet
// with the same rewrite. The switch handles messages in order, so no
// barrier is needed. The VIP's active count was taken at admission.
//
// snap is the configuration the setup was decided on. When a newer one has
// taken its member or VIP away, the purge the configuration sync sent may
// already be on the wire ahead of these flows; the setup then sends the
// purge again behind them, so no flow to a failed member survives.
func (s *session) install(c *connection, data []byte, snap *snapshot) {
	mods := s.flows.build(c)
	s.po = ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: c.clientOFPort, Actions: s.flows.forwardActions(), Data: data}
	s.wmu.Lock()
	s.writeLocked(s.nextXID(), &mods[0])
	s.writeLocked(s.nextXID(), &mods[1])
	s.writeLocked(s.nextXID(), &s.po)
	cur := s.c.snap.Load()
	if cur != snap {
		if fm, stale := purgeFor(cur, c); stale {
			s.writeLocked(s.nextXID(), &fm)
		}
	}
	s.wmu.Unlock()
	if m := cur.memberCnt[c.memberNum]; m != nil {
		m.active.Add(1)
		m.total.Add(1)
	}
	s.active[uint64(c.vipNum)<<32|uint64(c.memberNum)]++
	if s.recent == nil {
		s.recent = new(recentCache)
	}
	now := s.c.now().UnixNano()
	key := c.key()
	s.recent.setups[key.slot()] = recentSetup{key: key, memberNum: c.memberNum, memberOFPort: c.memberOFPort,
		memberMAC: c.memberMAC, at: now}
	rk := c.replyKey()
	s.recent.replies[rk.slot()] = recentReply{key: rk, conn: *c, at: now}
	s.c.metrics.setups.Inc()
	if s.debug {
		s.log.Debug("connection set up", "client", ipString(c.clientIP), "client_port", c.clientPort,
			"vip", ipString(c.vipIP), "member", ipString(c.memberIP), "member_port", c.memberPort)
	}
}

// hold parks a setup until the member's MAC is known and asks for it.
func (s *session) hold(c connection, v *vipState, now time.Time) {
	ip := ipUint(c.memberIP)
	s.heldMu.Lock()
	q := s.held[ip]
	if len(q) >= maxHeldPerMember {
		s.heldMu.Unlock()
		v.cnt.active.Add(-1) // dropped: the client will retransmit
		return
	}
	s.held[ip] = append(q, heldSetup{conn: c, data: append([]byte(nil), s.pin.Data...), deadline: now.Add(heldTimeout), vip: v.cnt})
	s.heldMu.Unlock()
	if now.Sub(s.arpSent[ip]) < arpRetry {
		return
	}
	s.arpSent[ip] = now
	s.frame = appendARP(s.frame[:0], arpRequest, broadcastMAC, v.mac, v.ip, [6]byte{}, c.memberIP)
	s.packetOut(ofp.PortController, ofp.PortFlood, s.frame)
	if s.debug {
		s.log.Debug("member MAC unknown; asking by ARP", "member", ipString(c.memberIP))
	}
}

// expireHeld drops setups whose member never answered, releasing their
// VIP connection slots.
func (s *session) expireHeld(now time.Time) {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	for ip, q := range s.held {
		kept := q[:0]
		for _, h := range q {
			if now.After(h.deadline) {
				h.vip.active.Add(-1)
			} else {
				kept = append(kept, h)
			}
		}
		if len(kept) == 0 {
			delete(s.held, ip)
		} else {
			s.held[ip] = kept
		}
	}
}

// Refusal reasons, for metrics.
const (
	refusedLimit = iota
	refusedNoMember
	refusedNoFlow
	numRefusals
)

var refusalNames = [numRefusals]string{"limit", "no_member", "no_flow"}

// refuse turns a new connection away: TCP gets a reset, UDP and ICMP are
// dropped. It is counted against the VIP's pool.
func (s *session) refuse(inPort uint32, v *vipState, reason int) {
	v.cnt.refused.Add(1)
	s.c.metrics.refusals[reason].Inc()
	if v.proto == protoTCP {
		s.sendRST(inPort, v)
	}
	if s.debug {
		s.log.Debug("connection refused", "vip", v.id, "reason", refusalNames[reason])
	}
}

func (s *session) sendRST(inPort uint32, v *vipState) {
	s.frame = appendTCPRST(s.frame[:0], rstFor(s.dec, v.mac))
	s.packetOut(inPort, ofp.PortInPort, s.frame)
}

// purgeFor returns the flow delete a connection needs when snap no longer
// lets it run: its VIP is gone or changed, or its member is gone, moved or
// DOWN. A DRAINING member keeps its connections.
func purgeFor(snap *snapshot, c *connection) (ofp.FlowMod, bool) {
	v := snap.vipByNum[c.vipNum]
	if v == nil || v.ip != c.vipIP || v.proto != c.proto || v.mac != c.vipMAC || v.port != c.vipPort && c.proto != protoICMP {
		return deleteVIPFlows(c.vipNum)[1], true
	}
	m := snap.memberByNum[c.memberNum]
	if m == nil || m.status == sdnlb.MemberDown || m.ip != c.memberIP {
		return deleteMemberFlows(c.memberNum), true
	}
	return ofp.FlowMod{}, false
}
