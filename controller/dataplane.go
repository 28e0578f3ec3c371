package controller

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// dataplane is one switch's data path as the controller decides it. It
// keeps the configuration the switch has the flows of and is made of one
// part per concern, each owning its state: what the controller learned of
// the switch's hosts (l2Learner, l2.go), its in-switch dispatch
// (dispatcher, dispatch.go), the connection setups waiting for a member's
// MAC (heldSetups, held.go) or set up a moment ago (recentCache,
// recent.go), and its share of the counters (accounting, accounting.go).
// The parts do not know each other or the dataplane: a decision that needs
// several is the dataplane's, which hands them the time, the snapshot and
// the outbox. The dataplane does no I/O: each call is given the time (and
// the configuration snapshot), and appends what the switch must be sent to
// an outbox. One goroutine at a time uses it.
type dataplane struct {
	dataplaneConfig
	debug bool

	installed *snapshot // the configuration the switch has the flows of

	learner    l2Learner
	dispatcher dispatcher
	held       heldSetups
	recent     *recentCache // allocated at the first setup
	// icmpLookups are the ICMP errors waiting for their CONTROLLER
	// connection's flow, by the xid of the request for it (icmperr.go).
	icmpLookups map[uint32]icmpLookup
	accounting  accounting
	fabricRows  fabricRows // L2Fabric: the fabric's rows the switch holds

	// Scratch of the decision under way, reused so that packet-ins
	// allocate nothing.
	pkt   *decoder // the frame of the packet-in being decided
	flows *connFlows
	frame []byte // frames the controller makes (ARP, RST)
	po    ofp.PacketOut
	out   ofp.ActionOutput
	outTo []ofp.Action // {&out}
}

// dataplaneConfig is what every switch's dataplane shares with the
// controller.
type dataplaneConfig struct {
	dpid                     uint64
	idleTimeout, hardTimeout uint16 // of connection flows, in seconds
	l2                       L2Mode
	groups                   bool // the switch has select groups
	oneTable                 bool // the switch has one flow table and no Nicira actions (OpenFlow 1.0)
	affinity                 *affinityTable
	ledger                   *flowLedger // the switch's, which outlives its connections
	metrics                  *metrics
	fabric                   fabricPaths // L2Fabric: the controller's
	log                      *slog.Logger
}

// l2Table is the table of the L2 rows: tableL2, or table 0 on a switch
// with one.
func (c *dataplaneConfig) l2Table() uint8 {
	if c.oneTable {
		return tableClassify
	}
	return tableL2
}

// switchFeatures is what the handshake learned the switch's pipeline can
// do, which shapes the rows it gets.
type switchFeatures struct {
	// groups: select groups, and the connection tracker with them, so the
	// switch dispatches SWITCH pools itself.
	groups bool
	// oneTable: one flow table and no Nicira actions (OpenFlow 1.0). The
	// L2 table's rows go to table 0 below every other row, and the
	// controller answers ARP for VIPs.
	oneTable bool
}

func newDataplane(cfg dataplaneConfig) *dataplane {
	dp := &dataplane{
		dataplaneConfig: cfg,
		debug:           cfg.log.Enabled(context.Background(), slog.LevelDebug),
		installed:       emptySnapshot,
		learner:         newL2Learner(cfg.l2Table()),
		dispatcher:      newDispatcher(),
		held:            newHeldSetups(),
		accounting:      newAccounting(cfg.ledger),
		fabricRows:      newFabricRows(),
		pkt:             newDecoder(),
		flows:           newConnFlows(),
		frame:           make([]byte, 0, 128),
	}
	dp.outTo = []ofp.Action{&dp.out}
	return dp
}

// configure brings the switch from the configuration it has to snap: the
// flows reconcile computes, gratuitous ARP for new VIPs and for the hosts
// of the addresses VIPs gave up, then the in-switch dispatch. An older
// snapshot than the switch's is ignored.
func (dp *dataplane) configure(now time.Time, snap *snapshot, out *outbox) {
	if snap.gen <= dp.installed.gen {
		return
	}
	if p := snap.patched; p != nil && p.parent == dp.installed.gen {
		dp.configurePatch(now, snap, out)
		return
	}
	mods, announce := reconcile(dp.installed, snap, switchFeatures{groups: dp.groups, oneTable: dp.oneTable}, dp.l2)
	released := releasedAddrs(dp.installed, snap)
	dp.installed = snap
	for i := range mods {
		out.send(&mods[i])
	}
	for _, v := range announce {
		// Clients with a stale entry for the address learn the VIP's MAC.
		dp.announce(v.ip, v.mac, ofp.PortController, out)
	}
	for _, ip := range released {
		// Clients that cached the VIP's MAC for the address of a host
		// learn the host's at once, not when their entry goes stale. The
		// flood leaves out the host's own port.
		if h, ok := dp.learner.seenHost(now, ip); ok {
			dp.announce(ip, h.mac, h.port, out)
		}
	}
	dp.dispatch(now, snap, out)
	dp.log.Debug("switch synced to configuration", "gen", snap.gen, "flow_mods", len(mods), "announced", len(announce),
		"released", len(released))
}

// announce floods a gratuitous ARP request (IPv6: an unsolicited neighbour
// advertisement to all nodes) saying that ip is at mac, as if it came in
// on inPort, which the flood leaves out.
func (dp *dataplane) announce(ip netip.Addr, mac [6]byte, inPort uint32, out *outbox) {
	if ip.Is6() {
		dp.frame = appendNA(dp.frame[:0], multicastMAC(allNodes), mac, ip, allNodes, ndFlagOverride)
	} else {
		dp.frame = appendARP(dp.frame[:0], arpRequest, broadcastMAC, mac, ip.As4(), [6]byte{}, ip.As4())
	}
	dp.flood(inPort, dp.frame, out)
}

// configurePatch is configure for a health patch of the snapshot the
// switch has: only what the patch touched is compared and dispatched.
func (dp *dataplane) configurePatch(now time.Time, snap *snapshot, out *outbox) {
	mods := reconcilePatch(dp.installed, snap, dp.groups)
	dp.installed = snap
	for i := range mods {
		out.send(&mods[i])
	}
	dp.dispatchAt(now, snap, snap.patched.addrs, out)
	dp.log.Debug("switch synced to a health patch", "gen", snap.gen, "flow_mods", len(mods))
}

// packetIn is one packet-in being decided.
type packetIn struct {
	now    time.Time
	snap   *snapshot
	inPort uint32
	cookie uint64 // of the flow that punted it
	frame  []byte
	*decoder
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

// packetIn decides what to do with a packet the switch sent up: answer
// ARP for VIPs and learn from it, set up a new connection to a VIP, give
// a recent setup's reply its reverse NAT, or learn and forward by MAC.
// Replies are recognised by their addresses, not by the flow that punted
// them: the datapath may still hold an entry cached from an older flow.
func (dp *dataplane) packetIn(now time.Time, snap *snapshot, msg *ofp.PacketIn, out *outbox) {
	inPort, ok := msg.Match.InPort()
	if !ok || !dp.pkt.decode(msg.Data) {
		dp.metrics.packetIns[kindOther].Inc()
		return
	}
	p := &packetIn{now: now, snap: snap, inPort: inPort, cookie: msg.Cookie, frame: msg.Data, decoder: dp.pkt}
	src := p.ethSrc()
	if _, spoofed := snap.vipMACs[src]; spoofed {
		dp.metrics.packetIns[kindOther].Inc()
		return
	}
	dp.learnMAC(now, src, inPort, out)
	switch cat, _, memberNum, _ := cookieParts(msg.Cookie); {
	case cat == catMemberRoute && dp.answerMemberRoute(p, memberNum, out):
		dp.metrics.packetIns[kindLB].Inc()
	case cat == catVIP && p.isTooBig() && dp.forwardICMPError(p, &msg.Match, out):
		dp.metrics.packetIns[kindReply].Inc()
	case p.hasARP:
		dp.metrics.packetIns[kindARP].Inc()
		dp.handleARP(p, out)
	case p.hasNS || p.hasNA:
		dp.metrics.packetIns[kindARP].Inc()
		dp.handleND(p, out)
	case p.hasIP() && snap.vipByAddr[p.dstIP()] != nil:
		dp.metrics.packetIns[kindLB].Inc()
		dp.handleVIPPacket(p, out)
	case p.hasIP() && dp.forwardReply(p, out):
		dp.metrics.packetIns[kindReply].Inc()
	default:
		dp.metrics.packetIns[kindL2].Inc()
		if srcIP := p.srcIP(); p.hasIP() && hostAddress(srcIP) && !isMulticast(src) && snap.vipByAddr[srcIP] == nil {
			dp.learnHost(p, srcIP, src, out)
		}
		dp.forwardL2(p, out)
	}
}

// fromReplyPunt reports whether a member's reply punt sent the packet.
func (p *packetIn) fromReplyPunt() bool {
	cat, _, _, ok := cookieParts(p.cookie)
	return ok && cat == catMemberReply
}

// fromFabric reports whether one of the fabric's rows sent the packet up
// to be learned from: the switch forwards it itself.
func (p *packetIn) fromFabric() bool {
	cat, _, _, ok := cookieParts(p.cookie)
	return ok && cat == catFabric
}

// fromARPAnswer reports whether the switch's ARP answer sent the packet,
// which the switch has then answered.
func (p *packetIn) fromARPAnswer() bool {
	cat, _, _, ok := cookieParts(p.cookie)
	return ok && cat == catARPAnswer
}

// flood sends data out of every port but inPort, the port it came in on;
// under L2Fabric, out of the ports floods leave by (along the spanning
// tree).
func (dp *dataplane) flood(inPort uint32, data []byte, out *outbox) {
	if dp.l2 != L2Fabric {
		dp.packetOut(inPort, ofp.PortFlood, data, out)
		return
	}
	v := dp.fabricRows.view
	if v == nil {
		return // no round yet: no port is known to be safe to flood
	}
	acts := make([]ofp.Action, 0, len(v.carry))
	for _, p := range v.carry {
		if p != inPort {
			acts = append(acts, ofp.ActionOutput{Port: p})
		}
	}
	if len(acts) > 0 {
		dp.sendFrame(inPort, acts, data, out)
	}
}

// packetOut sends data out of port; inPort is the port it came in on.
func (dp *dataplane) packetOut(inPort, port uint32, data []byte, out *outbox) {
	dp.out = ofp.ActionOutput{Port: port}
	dp.sendFrame(inPort, dp.outTo, data, out)
}

// sendFrame sends data through actions; inPort is the port it came in on.
func (dp *dataplane) sendFrame(inPort uint32, actions []ofp.Action, data []byte, out *outbox) {
	dp.po = ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: inPort, Actions: actions, Data: data}
	out.send(&dp.po)
}
