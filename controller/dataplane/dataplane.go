package dataplane

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/internal/peerlog"
)

// Switch is one switch's data path as the controller decides it. It
// keeps the configuration the switch has the flows of and is made of one
// part per concern, each owning its state: what the controller learned of
// the switch's hosts (L2Learner, l2.go), its in-switch dispatch
// (dispatcher, dispatch.go), the connection setups waiting for a member's
// MAC (heldSetups, held.go) or set up a moment ago (recentCache,
// recent.go), and its share of the counters (accounting, accounting.go).
// The parts do not know each other or the dataplane: a decision that needs
// several is the dataplane's, which hands them the time, the snapshot and
// the outbox. The dataplane does no I/O: each call is given the time (and
// the configuration snapshot), and appends what the switch must be sent to
// an outbox. One goroutine at a time uses it.
type Switch struct {
	Config
	debug bool

	Installed *model.Snapshot // the configuration the switch has the flows of

	Learner    L2Learner
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
	flows *model.ConnFlows
	frame []byte // frames the controller makes (ARP, RST)
	po    ofp.PacketOut
	out   ofp.ActionOutput
	outTo []ofp.Action // {&out}
}

// Config is what every switch's dataplane shares with the
// controller.
type Config struct {
	DPID                     uint64
	IdleTimeout, HardTimeout uint16 // of connection flows, in seconds
	L2                       model.L2Mode
	Groups                   bool // the switch has select groups
	OneTable                 bool // the switch has one flow table and no Nicira actions (OpenFlow 1.0)
	Nicira                   bool // the switch takes Nicira matches: TCP flags, and on 1.0 reads by cookie (model.SwitchFeatures)
	Affinity                 *AffinityTable
	Ledger                   *FlowLedger // the switch's, which outlives its connections
	Metrics                  *Metrics
	Fabric                   FabricPaths // L2Fabric: the controller's
	// Hosts caps the hosts the switch learns, shared with the other
	// switches; New gives a Config without one caps of its own, of
	// MaxLearned.
	Hosts *HostCaps
	Log   *slog.Logger
	// Peer writes the lines the network can cause, such as a host
	// claiming a VIP's address, under the controller's limits; New gives
	// a Config without one limits of its own, over Log.
	Peer peerlog.Writer
}

// peerLogEvery is how often a dataplane without the controller's limits
// writes a line of one kind and source.
const peerLogEvery = time.Minute

// source names the switch in the lines its peers can cause, which are
// limited per source.
func (c *Config) source() string { return model.FormatDPID(c.DPID) }

// finIdle is the idle timeout the switch's TCP connection flows get at
// their FIN or reset, which the switch sends up on a switch with Nicira
// matches (model.ControllerPunts); 0 elsewhere, where they keep their
// idle timeout to the end.
func (c *Config) finIdle() uint16 {
	if !c.Nicira {
		return 0
	}
	return model.FinIdle(c.IdleTimeout)
}

// connIdle is the idle timeout connection flows are installed with. On a
// switch with Nicira matches they have none: the controller's polls age
// them (accounting.age), and a TCP connection's FIN or reset gives its
// flows finIdle, so that Open vSwitch ages only the flows of closing
// connections: it walks every flow it ages twice a second, in the thread
// that carries packet-ins and flow-mods.
func (c *Config) connIdle() uint16 {
	if c.Nicira {
		return 0
	}
	return c.IdleTimeout
}

// pollAge is how long the controller's polls let a connection flow
// without an idle timeout stay idle before they delete it: the idle
// timeout, on a switch whose connection flows have none (connIdle); 0,
// never.
func (c *Config) pollAge() time.Duration {
	if !c.Nicira {
		return 0
	}
	return time.Duration(c.IdleTimeout) * time.Second
}

// l2Table is the table of the L2 rows: TableL2, or table 0 on a switch
// with one.
func (c *Config) l2Table() uint8 {
	if c.OneTable {
		return model.TableClassify
	}
	return model.TableL2
}

func New(cfg Config) *Switch {
	if cfg.Hosts == nil {
		cfg.Hosts = NewHostCaps(MaxLearned, MaxLearned)
	}
	dp := &Switch{
		Config:     cfg,
		debug:      cfg.Log.Enabled(context.Background(), slog.LevelDebug),
		Installed:  model.EmptySnapshot,
		Learner:    newL2Learner(cfg.l2Table(), cfg.Hosts, cfg.DPID),
		dispatcher: newDispatcher(),
		held:       newHeldSetups(),
		accounting: newAccounting(cfg.Ledger, cfg.finIdle(), cfg.pollAge()),
		fabricRows: newFabricRows(),
		pkt:        newDecoder(),
		flows:      model.NewConnFlows(),
		frame:      make([]byte, 0, 128),
	}
	dp.outTo = []ofp.Action{&dp.out}
	if dp.Peer == (peerlog.Writer{}) {
		dp.Peer = peerlog.New(cfg.Log, peerLogEvery).To(cfg.Log)
	}
	return dp
}

// Configure brings the switch from the configuration it has to snap: the
// flows reconcile computes, gratuitous ARP for new VIPs and for the hosts
// of the addresses VIPs gave up, then the in-switch dispatch. An older
// snapshot than the switch's is ignored.
func (dp *Switch) Configure(now time.Time, snap *model.Snapshot, out *Outbox) {
	if snap.Gen <= dp.Installed.Gen {
		return
	}
	if p := snap.Patched; p != nil && p.Parent == dp.Installed.Gen {
		dp.configurePatch(now, snap, out)
		return
	}
	mods, announce := reconcile(dp.Installed, snap, model.SwitchFeatures{Groups: dp.Groups, OneTable: dp.OneTable, Nicira: dp.Nicira}, dp.L2)
	released := releasedAddrs(dp.Installed, snap)
	dp.Installed = snap
	for i := range mods {
		out.Send(&mods[i])
	}
	for _, v := range announce {
		// Clients with a stale entry for the address learn the VIP's MAC.
		dp.announce(v.IP, v.MAC, ofp.PortController, out)
	}
	for _, ip := range released {
		// Clients that cached the VIP's MAC for the address of a host
		// learn the host's at once, not when their entry goes stale. The
		// flood leaves out the host's own port.
		if h, ok := dp.Learner.SeenHost(now, ip); ok {
			dp.announce(ip, h.MAC, h.Port, out)
		}
	}
	dp.dispatch(now, snap, out)
	dp.Log.Debug("switch synced to configuration", "gen", snap.Gen, "flow_mods", len(mods), "announced", len(announce),
		"released", len(released))
}

// announce floods a gratuitous ARP request (IPv6: an unsolicited neighbour
// advertisement to all nodes) saying that ip is at mac, as if it came in
// on inPort, which the flood leaves out.
func (dp *Switch) announce(ip netip.Addr, mac [6]byte, inPort uint32, out *Outbox) {
	if ip.Is6() {
		dp.frame = appendNA(dp.frame[:0], model.MulticastMAC(model.AllNodes), mac, ip, model.AllNodes, model.NDFlagOverride)
	} else {
		dp.frame = appendARP(dp.frame[:0], model.ARPRequest, broadcastMAC, mac, ip.As4(), [6]byte{}, ip.As4())
	}
	dp.flood(inPort, dp.frame, out)
}

// configurePatch is configure for a health patch of the snapshot the
// switch has: only what the patch touched is compared and dispatched.
func (dp *Switch) configurePatch(now time.Time, snap *model.Snapshot, out *Outbox) {
	mods := reconcilePatch(dp.Installed, snap, dp.Groups)
	dp.Installed = snap
	for i := range mods {
		out.Send(&mods[i])
	}
	dp.dispatchAt(now, snap, snap.Patched.Addrs, out)
	dp.Log.Debug("switch synced to a health patch", "gen", snap.Gen, "flow_mods", len(mods))
}

// packetIn is one packet-in being decided.
type packetIn struct {
	now    time.Time
	snap   *model.Snapshot
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

// PacketIn decides what to do with a packet the switch sent up: answer
// ARP for VIPs and learn from it, set up a new connection to a VIP, give
// a recent setup's reply its reverse NAT, or learn and forward by MAC.
// Replies are recognised by their addresses, not by the flow that punted
// them: the datapath may still hold an entry cached from an older flow.
func (dp *Switch) PacketIn(now time.Time, snap *model.Snapshot, msg *ofp.PacketIn, out *Outbox) {
	inPort, ok := msg.Match.InPort()
	if !ok || !dp.pkt.decode(msg.Data) {
		dp.Metrics.packetIns[kindOther].Inc()
		return
	}
	p := &packetIn{now: now, snap: snap, inPort: inPort, cookie: msg.Cookie, frame: msg.Data, decoder: dp.pkt}
	src := p.ethSrc()
	if _, spoofed := snap.VIPMACs[src]; spoofed {
		dp.Metrics.packetIns[kindOther].Inc()
		return
	}
	dp.learnMAC(now, src, inPort, out)
	switch cat, _, memberNum, _ := model.CookieParts(msg.Cookie); {
	case cat == model.CatMemberRoute && dp.answerMemberRoute(p, memberNum, out):
		dp.Metrics.packetIns[kindLB].Inc()
	case cat == model.CatVIP && p.isTooBig() && dp.forwardICMPError(p, &msg.Match, out):
		dp.Metrics.packetIns[kindReply].Inc()
	case p.hasARP:
		dp.Metrics.packetIns[kindARP].Inc()
		dp.handleARP(p, out)
	case p.hasND():
		dp.Metrics.packetIns[kindARP].Inc()
		dp.handleND(p, out)
	case p.hasIP() && snap.VIPByAddr[p.dstIP()] != nil:
		dp.Metrics.packetIns[kindLB].Inc()
		dp.handleVIPPacket(p, out)
	case p.hasIP() && dp.forwardReply(p, out):
		dp.Metrics.packetIns[kindReply].Inc()
	default:
		dp.Metrics.packetIns[kindL2].Inc()
		dp.handleL2(p, src, out)
	}
}

// handleL2 forwards by MAC a packet for no VIP and no connection, learning
// first where its sender is when it is a host's IP packet.
func (dp *Switch) handleL2(p *packetIn, src [6]byte, out *Outbox) {
	if srcIP := p.srcIP(); p.hasIP() && hostAddress(srcIP) && !isMulticast(src) && p.snap.VIPByAddr[srcIP] == nil {
		dp.learnHost(p, srcIP, src, out)
	}
	dp.forwardL2(p, out)
}

// fromReplyPunt reports whether a member's reply punt sent the packet.
func (p *packetIn) fromReplyPunt() bool {
	cat, _, _, ok := model.CookieParts(p.cookie)
	return ok && cat == model.CatMemberReply
}

// fromFabric reports whether one of the fabric's rows sent the packet up
// to be learned from: the switch forwards it itself.
func (p *packetIn) fromFabric() bool {
	cat, _, _, ok := model.CookieParts(p.cookie)
	return ok && cat == model.CatFabric
}

// fromARPAnswer reports whether the switch's ARP answer sent the packet,
// which the switch has then answered.
func (p *packetIn) fromARPAnswer() bool {
	cat, _, _, ok := model.CookieParts(p.cookie)
	return ok && cat == model.CatARPAnswer
}

// flood sends data out of every port but inPort, the port it came in on;
// under L2Fabric, out of the ports floods leave by (along the spanning
// tree).
func (dp *Switch) flood(inPort uint32, data []byte, out *Outbox) {
	if dp.L2 != model.L2Fabric {
		dp.packetOut(inPort, ofp.PortFlood, data, out)
		return
	}
	v := dp.fabricRows.view
	if v == nil {
		return // no round yet: no port is known to be safe to flood
	}
	acts := make([]ofp.Action, 0, len(v.Carry))
	for _, p := range v.Carry {
		if p != inPort {
			acts = append(acts, ofp.ActionOutput{Port: p})
		}
	}
	if len(acts) > 0 {
		dp.sendFrame(inPort, acts, data, out)
	}
}

// packetOut sends data out of port; inPort is the port it came in on.
func (dp *Switch) packetOut(inPort, port uint32, data []byte, out *Outbox) {
	dp.out = ofp.ActionOutput{Port: port}
	dp.sendFrame(inPort, dp.outTo, data, out)
}

// sendFrame sends data through actions; inPort is the port it came in on.
func (dp *Switch) sendFrame(inPort uint32, actions []ofp.Action, data []byte, out *Outbox) {
	dp.po = ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: inPort, Actions: actions, Data: data}
	out.Send(&dp.po)
}
