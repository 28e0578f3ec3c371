package dataplane

import (
	"net/netip"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// MaxLearned bounds each switch's MAC table, and by default its host
// table (HostCaps), so a switch that sends packets from ever new
// addresses cannot grow them without end.
const MaxLearned = 1 << 16

// l2Reinstall is how long after installing a MAC's flow a packet-in for
// that destination means the flow idled out, rather than that the packet
// overtook the flow-mod.
const l2Reinstall = int64(time.Second)

// arpRetry is the least time between ARP requests for one member.
const arpRetry = 500 * time.Millisecond

// hostSweep is the least time between two passes of a full host table
// over its hosts to forget the ones not seen within sdnlb.HostTTL: a
// stream of new addresses costs one pass a minute, not one each.
const hostSweep = time.Minute

// L2Learner is what the controller learned of one switch's hosts: where
// each MAC lives, each IPv4 address's MAC and port and when a packet last
// showed it, and when it last asked for a member's MAC.
type L2Learner struct {
	table    uint8                    // of the L2 rows
	macs     map[[6]byte]macEntry     // where each MAC lives (L2Learn)
	hosts    map[netip.Addr]HostEntry // learned IPv4 addresses: MAC and port
	arpAsked map[netip.Addr]arpAsk    // when the controller ARPed for a member it has not seen
	swept    int64                    // unix nanoseconds of the last pass of forgetStale
	caps     *HostCaps                // of hosts, shared with the other switches' learners
	dpid     uint64                   // the switch's, as caps are told
}

// arpAsk is when the controller first and last asked for a member by ARP,
// since the member last answered.
type arpAsk struct {
	first, last time.Time
}

type macEntry struct {
	port      uint32
	installed int64 // unix nanoseconds of the last L2 flow-mod
}

type HostEntry struct {
	MAC  [6]byte
	Port uint32 // 0: not known yet (seen only in a route the switch held)
	// Seen is the unix nanoseconds of the last packet from the host; 0
	// when only the switch's flows named it.
	Seen int64
}

func newL2Learner(table uint8, caps *HostCaps, dpid uint64) L2Learner {
	return L2Learner{
		table:    table,
		caps:     caps,
		dpid:     dpid,
		macs:     map[[6]byte]macEntry{},
		hosts:    map[netip.Addr]HostEntry{},
		arpAsked: map[netip.Addr]arpAsk{},
	}
}

// learnMAC records where a source MAC lives and installs (or, after a
// move, replaces) its L2 flow. It reports whether it did: a full table
// learns no new MAC.
func (l *L2Learner) learnMAC(now time.Time, mac [6]byte, port uint32, out *Outbox) bool {
	if isMulticast(mac) || port > ofp.PortMax && port != ofp.PortLocal {
		return false
	}
	old, known := l.macs[mac]
	if known && old.port == port || !known && len(l.macs) >= MaxLearned {
		return false // a full table still forwards, by flooding
	}
	l.installL2(now, mac, port, out)
	return true
}

func (l *L2Learner) installL2(now time.Time, mac [6]byte, port uint32, out *Outbox) {
	l.macs[mac] = macEntry{port: port, installed: now.UnixNano()}
	fm := model.L2Flow(l.table, mac, port)
	out.Send(&fm)
}

// where returns where a MAC lives.
func (l *L2Learner) where(mac [6]byte) (macEntry, bool) {
	e, ok := l.macs[mac]
	return e, ok
}

// seedMAC records where the switch's L2 flow for a MAC sends, without
// installing it again.
func (l *L2Learner) seedMAC(mac [6]byte, port uint32) {
	l.macs[mac] = macEntry{port: port}
}

// learnHost records that a packet from an IPv4 address came now with a
// MAC and port, and reports whether that changed the address's MAC or
// port. A new address past the caps is learned only when it is needed
// (a member, or setups wait for it) or the table can forget hosts not
// seen within sdnlb.HostTTL.
func (l *L2Learner) learnHost(now time.Time, ip netip.Addr, mac [6]byte, port uint32, needed bool) bool {
	e, known := l.hosts[ip]
	if !known && !l.admit(now, needed) {
		return false // full; a member still gets in
	}
	l.hosts[ip] = HostEntry{MAC: mac, Port: port, Seen: now.UnixNano()}
	delete(l.arpAsked, ip)
	return !known || e.MAC != mac || e.Port != port
}

// admit counts a new host in the caps and reports whether it may join:
// at a cap only when it is needed, or the table can forget hosts not
// seen within sdnlb.HostTTL.
func (l *L2Learner) admit(now time.Time, needed bool) bool {
	if !needed && l.caps.full(len(l.hosts)) && !l.forgetStale(now) {
		l.caps.refuse(l.dpid, len(l.hosts))
		return false
	}
	l.caps.take()
	return true
}

// forgetStale forgets the hosts not seen within sdnlb.HostTTL, at most
// once a hostSweep, and reports whether it forgot any. The data path
// still uses a host's MAC however long ago it was seen, until the table
// is full.
func (l *L2Learner) forgetStale(now time.Time) bool {
	t := now.UnixNano()
	if t-l.swept < int64(hostSweep) {
		return false
	}
	l.swept = t
	n := len(l.hosts)
	for ip, e := range l.hosts {
		if t-e.Seen > int64(sdnlb.HostTTL) {
			delete(l.hosts, ip)
		}
	}
	l.caps.give(n - len(l.hosts))
	return len(l.hosts) < n
}

// Release gives the learner's hosts back to the caps, when its switch's
// decision ends (a disconnect, a new dataplane at a promotion).
func (l *L2Learner) Release() {
	l.caps.give(len(l.hosts))
	clear(l.hosts)
}

// Host returns an IPv4 address's MAC and port.
func (l *L2Learner) Host(ip netip.Addr) (HostEntry, bool) {
	e, ok := l.hosts[ip]
	return e, ok
}

// SeenHost returns the host at an IPv4 address if a packet from it came
// within sdnlb.HostTTL: the host that holds the address now, as far as
// the controller knows.
func (l *L2Learner) SeenHost(now time.Time, ip netip.Addr) (HostEntry, bool) {
	e, ok := l.hosts[ip]
	return e, ok && now.UnixNano()-e.Seen <= int64(sdnlb.HostTTL)
}

// SeenHosts calls f with each host a packet showed within
// sdnlb.HostTTL.
func (l *L2Learner) SeenHosts(now time.Time, f func(ip netip.Addr, e HostEntry)) {
	for ip, e := range l.hosts {
		if now.UnixNano()-e.Seen <= int64(sdnlb.HostTTL) {
			f(ip, e)
		}
	}
}

// seedHost records a host the switch's flows name, unless the learner
// knows better; port 0 is unknown.
func (l *L2Learner) seedHost(ip netip.Addr, mac [6]byte, port uint32) {
	e, ok := l.hosts[ip]
	if ok && (e.Port != 0 || port == 0) {
		return
	}
	if !ok {
		l.caps.take() // the switch's own flows name it: always known
	}
	l.hosts[ip] = HostEntry{MAC: mac, Port: port}
}

// reach records a host on another switch (L2Fabric), which frames for
// reach through port, unless a packet showed it on this switch within
// sdnlb.HostTTL. It reports whether that changed the address's MAC or
// port.
func (l *L2Learner) reach(now time.Time, ip netip.Addr, mac [6]byte, port uint32) bool {
	e, known := l.hosts[ip]
	if known && e.Seen != 0 && now.UnixNano()-e.Seen <= int64(sdnlb.HostTTL) || !known && !l.admit(now, false) {
		return false
	}
	l.hosts[ip] = HostEntry{MAC: mac, Port: port}
	delete(l.arpAsked, ip)
	return !known || e.MAC != mac || e.Port != port
}

// ipOfMAC is an address learned with the MAC; zero when none is.
func (l *L2Learner) ipOfMAC(mac [6]byte) netip.Addr {
	for ip, e := range l.hosts {
		if e.MAC == mac && ip.Is4() {
			return ip
		}
	}
	return netip.Addr{}
}

// arpDue reports whether the member at ip may be asked for by ARP, at
// most every arpRetry, and counts it asked now if so.
func (l *L2Learner) arpDue(now time.Time, ip netip.Addr) bool {
	a, asked := l.arpAsked[ip]
	if now.Sub(a.last) < arpRetry {
		return false
	}
	if !asked {
		a.first = now
	}
	a.last = now
	l.arpAsked[ip] = a
	return true
}

// silent reports whether the member at ip has been asked for, without an
// answer, for longer than a setup waits for one: a member that is not
// there, or does not answer ARP.
func (l *L2Learner) silent(now time.Time, ip netip.Addr) bool {
	a, asked := l.arpAsked[ip]
	return asked && now.Sub(a.first) > heldTimeout
}

// learnMAC learns where a source MAC lives. Under L2Normal the switch
// learns MACs itself; under L2Fabric the fabric learns the hosts on the
// edge, and its next round installs them.
func (dp *Switch) learnMAC(now time.Time, mac [6]byte, port uint32, out *Outbox) {
	if dp.L2 == model.L2Fabric {
		if edge, link := dp.portKind(port); !link && !isMulticast(mac) {
			out.Hosts = append(out.Hosts, HostSighting{MAC: mac, At: model.PortRef{DPID: dp.DPID, Port: port}, Settled: edge})
		}
		return
	}
	if dp.L2 == model.L2Learn && dp.Learner.learnMAC(now, mac, port, out) && dp.debug {
		dp.Log.Debug("learned MAC", "mac", model.MACString(mac), "port", port)
	}
}

// portKind says whether port is, under L2Fabric, a host's port (up long
// enough, with no link on it) or a link's; a port that is neither yet has
// not settled.
func (dp *Switch) portKind(port uint32) (edge, link bool) {
	v := dp.fabricRows.view
	if v == nil {
		return false, false
	}
	return v.Edge[port], slices.Contains(v.Ingress, port)
}

// forwardL2 sends the packet where its destination MAC lives, or floods;
// under L2Normal the switch's own learning decides.
func (dp *Switch) forwardL2(p *packetIn, out *Outbox) {
	dst := p.ethDst()
	if _, toVIP := p.snap.VIPMACs[dst]; toVIP {
		return // only the controller answers for a VIP MAC
	}
	switch dp.L2 {
	case model.L2Normal:
		dp.packetOut(p.inPort, ofp.PortNormal, p.frame, out)
		return
	case model.L2Fabric:
		dp.forwardFabric(p, out)
		return
	}
	port := ofp.PortFlood
	if e, ok := dp.Learner.where(dst); ok && !isMulticast(dst) {
		if e.port == p.inPort {
			return
		}
		port = e.port
		// The destination's flow is gone (idle timeout) while its host
		// stays quiet toward the controller: put the flow back, or every
		// packet to it would come here. A member's reply punt says
		// nothing about that flow: it takes the member's packets first.
		if p.now.UnixNano()-e.installed > l2Reinstall && !p.fromReplyPunt() {
			dp.Learner.installL2(p.now, dst, port, out)
		}
	}
	dp.packetOut(p.inPort, port, p.frame, out)
}

// forwardFabric sends the packet toward its destination's host, or
// floods it along the spanning tree, unless the switch forwards it itself
// and sent it up only to be learned from.
func (dp *Switch) forwardFabric(p *packetIn, out *Outbox) {
	if p.fromFabric() {
		return
	}
	if v := dp.fabricRows.view; v != nil && !isMulticast(p.ethDst()) {
		if port, ok := v.PortTo(p.ethDst()); ok {
			if port != p.inPort {
				dp.packetOut(p.inPort, port, p.frame, out)
			}
			return
		}
	}
	dp.flood(p.inPort, p.frame, out)
}

// handleARP answers requests for VIP addresses, learns every sender (that
// is how member MACs become known) and forwards the rest. The switch
// answers requests for VIP addresses itself (ARPAnswerFlows); one reaches
// the controller when it came before the switch had the answer or from a
// switch that refused it, and is answered here alike, or as the copy
// L2Learn sends up of one the switch answered, which is only learned from.
func (dp *Switch) handleARP(p *packetIn, out *Outbox) {
	a := &p.arp
	sha, spa, tpa := [6]byte(a.SourceHwAddress), model.AddrFrom(a.SourceProtAddress), model.AddrFrom(a.DstProtAddress)
	if _, claimsVIP := p.snap.VIPByAddr[spa]; claimsVIP {
		dp.noteClaim(p, spa, sha)
		return
	}
	if !spa.IsUnspecified() && !isMulticast(sha) {
		dp.learnHost(p, spa, sha, out)
	}
	v := p.snap.VIPByAddr[tpa]
	switch {
	case v == nil:
		dp.forwardL2(p, out)
	case a.Operation == model.ARPRequest && !p.fromARPAnswer():
		// Addressed to the frame's sender, as the switch's answer is.
		dp.frame = appendARP(dp.frame[:0], model.ARPReply, p.ethSrc(), v.MAC, v.IP.As4(), sha, spa.As4())
		dp.packetOut(p.inPort, ofp.PortInPort, dp.frame, out)
		if dp.debug {
			dp.Log.Debug("answered ARP for VIP", "vip", v.ID, "asker", spa.String(), "port", p.inPort)
		}
	}
	// A reply to a VIP address answers the controller's own request; it
	// has been learned and goes no further.
}

// handleND is handleARP for IPv6's neighbour discovery: it answers
// solicitations for VIP addresses (the switch answers them itself, see
// ndAnswerFlows), learns hosts from solicitations' source and
// advertisements' target, and forwards the rest. Advertisements to all
// nodes reach the controller as a copy the switch forwards itself: they
// carry the answers to the controller's own solicitations for members.
func (dp *Switch) handleND(p *packetIn, out *Outbox) {
	src, mac := p.srcIP(), p.ethSrc()
	if p.hasNA {
		target := model.AddrFrom(p.na.TargetAddress)
		if ll, ok := ndLinkLayer(p.na.Options, layers.ICMPv6OptTargetAddress); ok {
			mac = ll
		}
		if _, claimsVIP := p.snap.VIPByAddr[target]; claimsVIP {
			dp.noteClaim(p, target, mac)
			return
		}
		if hostAddress(target) && !isMulticast(mac) {
			dp.learnHost(p, target, mac, out)
		}
		if !p.fromARPAnswer() {
			dp.forwardL2(p, out)
		}
		return
	}
	target := model.AddrFrom(p.ns.TargetAddress)
	v := p.snap.VIPByAddr[target]
	if src.IsUnspecified() {
		if v != nil { // duplicate address detection of a VIP's address: a host about to claim it
			dp.noteClaim(p, target, mac)
			return
		}
	} else if ll, ok := ndLinkLayer(p.ns.Options, layers.ICMPv6OptSourceAddress); ok && hostAddress(src) && !isMulticast(ll) {
		dp.learnHost(p, src, ll, out)
	}
	switch {
	case v == nil:
		dp.forwardL2(p, out)
	case !p.fromARPAnswer():
		// Addressed to the frame's sender, as the switch's answer is.
		dp.frame = appendNA(dp.frame[:0], p.ethSrc(), v.MAC, target, src, model.NDFlagSolicited|model.NDFlagOverride)
		dp.packetOut(p.inPort, ofp.PortInPort, dp.frame, out)
		if dp.debug {
			dp.Log.Debug("answered a neighbour solicitation for VIP", "vip", v.ID, "asker", src.String(), "port", p.inPort)
		}
	}
}

// ndLinkLayer is the link-layer address in a neighbour discovery option of
// type typ.
func ndLinkLayer(opts layers.ICMPv6Options, typ layers.ICMPv6Opt) ([6]byte, bool) {
	for _, o := range opts {
		if o.Type == typ && len(o.Data) >= 6 {
			return [6]byte(o.Data[:6]), true
		}
	}
	return [6]byte{}, false
}

// hostAddress reports whether a packet's source a names a host the
// controller may learn: any IPv4 address, an IPv6 one that is neither
// link-local, multicast nor unspecified (VIPs and members never are).
func hostAddress(a netip.Addr) bool {
	return a.Is4() || a.Is6() && !a.IsUnspecified() && !a.IsLinkLocalUnicast() && !a.IsMulticast()
}

// noteClaim remembers a host whose ARP claims a VIP's address, so that the
// host gets the address back at once when the VIP gives it up (configure
// announces it), and warns: the VIP takes the host's traffic meanwhile.
// Its ARP goes no further, so no other host learns the address at its MAC.
func (dp *Switch) noteClaim(p *packetIn, ip netip.Addr, mac [6]byte) {
	if !isMulticast(mac) && dp.Learner.learnHost(p.now, ip, mac, p.inPort, dp.needed(p, ip)) {
		dp.Peer.Warn(p.now, "VIP address claimed", ip.String(), "a host claims a VIP's address; the VIP takes its traffic", "address", ip.String(),
			"mac", model.MACString(mac), "port", p.inPort)
	}
}

// learnHost records an IPv4 address's MAC and port and completes the
// setups that were waiting for it. Under L2Fabric only a host's own port
// teaches: the fabric tells the other switches where it is.
func (dp *Switch) learnHost(p *packetIn, ip netip.Addr, mac [6]byte, out *Outbox) {
	if dp.L2 == model.L2Fabric {
		edge, link := dp.portKind(p.inPort)
		if link {
			return // from another switch, which showed it where it attaches
		}
		out.Hosts = append(out.Hosts, HostSighting{MAC: mac, IP: ip, At: model.PortRef{DPID: dp.DPID, Port: p.inPort}, Settled: edge})
		if !edge {
			return // the round that settles its port teaches this switch
		}
	}
	if dp.Learner.learnHost(p.now, ip, mac, p.inPort, dp.needed(p, ip)) {
		dp.reached(p.now, p.snap, ip, out)
	}
}

// needed reports whether the data path needs the host at ip, so that the
// host caps do not keep it out: a member of a tracked pool (its route and
// buckets wait for it), or setups of the controller's wait for it.
func (dp *Switch) needed(p *packetIn, ip netip.Addr) bool {
	_, tracked := p.snap.TrackedMembers[ip]
	return tracked || dp.held.waiting(ip)
}

// reached puts a member whose MAC and port became known in the buckets
// and completes the setups that were waiting for it.
func (dp *Switch) reached(now time.Time, snap *model.Snapshot, ip netip.Addr, out *Outbox) {
	e, ok := dp.Learner.Host(ip)
	if !ok {
		return
	}
	held := dp.held.take(ip)
	if _, member := snap.TrackedMembers[ip]; member {
		dp.dispatchAt(now, snap, []netip.Addr{ip}, out)
	}
	for i := range held {
		h := &held[i]
		if _, stale := purgeFor(snap, &h.conn); stale || now.After(h.deadline) {
			h.vip.Active.Add(-1)
			continue
		}
		h.conn.MemberMAC, h.conn.MemberOFPort = e.MAC, e.Port
		dp.install(now, snap, &h.conn, h.data, out)
	}
}

// askARP asks who has ip, at most every arpRetry, by an ARP probe (RFC
// 5227: sender address 0) from v's MAC: a DSR member holds the VIP's
// address itself and ignores requests from it, and no member's ARP cache
// is touched. The answer comes back to v's MAC. An IPv6 member is asked
// by a neighbour solicitation from the unspecified address, for the same
// reasons; its answer goes to all nodes.
func (dp *Switch) askARP(now time.Time, v *model.VIP, ip netip.Addr, out *Outbox) {
	if !dp.Learner.arpDue(now, ip) {
		return
	}
	if ip.Is6() {
		dp.frame = appendNS(dp.frame[:0], v.MAC, ip)
	} else {
		dp.frame = appendARP(dp.frame[:0], model.ARPRequest, broadcastMAC, v.MAC, [4]byte{}, [6]byte{}, ip.As4())
	}
	dp.flood(ofp.PortController, dp.frame, out)
	if dp.debug {
		dp.Log.Debug("member MAC unknown; asking by ARP", "member", ip.String())
	}
}
