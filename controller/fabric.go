package controller

import (
	"cmp"
	"context"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// The fabric: under L2Fabric the controller forwards, across every switch
// it decides for, the traffic that is not for a VIP, and carries the
// VIPs' traffic between the switch a client enters at and the switch its
// member is on. What the switches need for it they hold themselves, so it
// keeps working while the controller is away:
//
//   - A VIP's work is done where its traffic enters the network: a packet
//     that comes in over a link (TableClassify, PrioLinkIngress) goes
//     straight to TableL2, but for members' replies, which go through
//     the trackers of every switch on their way and are translated by
//     the one that holds their connection, the client's.
//   - Per host, TableL2 sends frames for its MAC out of its port on its
//     own switch, and on every other switch to TableFabric with that
//     switch in the metadata; TableFabric sends them toward it.
//   - Paths are per destination switch: each switch sends what goes to
//     another out of the first hop of its cheapest path, where a link
//     costs a hop, and more while busy (paths.go). All traffic of a
//     switch toward another takes one path; the switches on the way hold
//     nothing of the connections, so a path that moves moves them too.
//   - Hosts are learned from what they send: TableSources has a row per
//     host of the switch, its MAC from its port, and sends the controller
//     what no row knows, once, on its way to TableL2.
//   - Broadcasts and frames for unknown MACs are flooded along a spanning
//     tree of the links, and only out of ports that have been up long
//     enough for discovery to find a link on them (settleTime); what
//     comes in on a link off the tree is dropped.
//
// The fabric's state spans switches; its lock is a leaf, taken by the
// connections' readers (learning) and by the goroutine that routes
// (route), which brings every switch to what it computes through decide.

// settleTime is how long a port must be up, with no link found on it,
// before it counts as a host's port: a round of discovery, and the
// controller asks a port that comes up at once.
const settleTime = lldpInterval

// fabric is what the controller knows of the hosts on the edge and of
// the paths it chose.
type fabric struct {
	mu       sync.Mutex
	hosts    map[[6]byte]dataplane.FabricHost // where each host attaches
	hostsGen uint64                           // counts changes of hosts
	shared   *dataplane.FabricHosts           // hosts as last handed out
	upSince  map[model.PortRef]time.Time      // when the controller first saw each port up
	levels   map[levelKey]linkLevel
	towards  map[uint64]map[uint64]uint32 // per destination switch: each switch's port toward it
	settles  time.Time                    // when the next port that is not settled settles; zero: none
	far      map[model.PortRef]uint64     // the switch at the other end of each link port
	kick     chan struct{}
	// deliver hands a flow-mod to another switch's connection, without
	// waiting: the Controller's, which knows the connections.
	deliver func(dpid uint64, fm *ofp.FlowMod)
}

func newFabric() *fabric {
	return &fabric{hosts: map[[6]byte]dataplane.FabricHost{}, shared: &dataplane.FabricHosts{Hosts: map[[6]byte]dataplane.FabricHost{}},
		upSince: map[model.PortRef]time.Time{}, levels: map[levelKey]linkLevel{}, towards: map[uint64]map[uint64]uint32{},
		far: map[model.PortRef]uint64{}, kick: make(chan struct{}, 1), deliver: func(uint64, *ofp.FlowMod) {}}
}

// poke asks for a new round at once.
func (f *fabric) poke() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// learn records that mac (with ip, the zero Addr for unknown) attaches at port, a
// host's port if settled, else one that has not settled yet. It reports
// whether that changed anything, and asks for a round if so.
func (f *fabric) learn(mac [6]byte, ip netip.Addr, at model.PortRef, settled bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, known := f.hosts[mac]
	if !ip.IsValid() {
		ip = h.IP
	}
	next := dataplane.FabricHost{At: at, IP: ip, Tentative: !settled}
	if known && h == next || !known && len(f.hosts) >= dataplane.MaxLearned {
		return false
	}
	f.hosts[mac] = next
	if known && !h.Tentative || settled {
		f.hostsGen++ // the switches' rows change
	}
	f.poke()
	return true
}

// seed records a host a switch's flows name at port, unless the fabric
// knows where it is.
func (f *fabric) seed(mac [6]byte, at model.PortRef) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, known := f.hosts[mac]; !known && len(f.hosts) < dataplane.MaxLearned {
		f.hosts[mac] = dataplane.FabricHost{At: at}
		f.hostsGen++
	}
}

// Between returns the switches a frame from switch from to switch to
// passes before to, from first, as the last round chose the paths; nil
// when to is not reached.
func (f *fabric) Between(from, to uint64) []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	ports := f.towards[to]
	var path []uint64
	for at := from; at != to; {
		p, ok := ports[at]
		next, linked := f.far[model.PortRef{DPID: at, Port: p}]
		if !ok || !linked || len(path) > len(ports) {
			return nil
		}
		path = append(path, at)
		at = next
	}
	return path
}

// Home returns where a host attaches.
func (f *fabric) Home(mac [6]byte) (model.PortRef, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.hosts[mac]
	return h.At, ok
}

// paths follows the ports the last round chose from every switch to every
// other it reaches, over links, ordered by source and destination.
func (f *fabric) paths(links []linkState) []*sdnlb.Path {
	f.mu.Lock()
	defer f.mu.Unlock()
	far := make(map[model.PortRef]uint64, len(links)) // the switch at the other end of each link port
	for _, l := range links {
		far[l.src] = l.dst.DPID
	}
	var out []*sdnlb.Path
	for _, dst := range slices.Sorted(maps.Keys(f.towards)) {
		ports := f.towards[dst]
		for _, from := range slices.Sorted(maps.Keys(ports)) {
			p := &sdnlb.Path{From: model.FormatDPID(from), To: model.FormatDPID(dst)}
			for at := from; at != dst && len(p.Hops) <= len(ports); {
				hop := model.PortRef{DPID: at, Port: ports[at]}
				p.Hops = append(p.Hops, sdnlb.LinkEnd{DPID: model.FormatDPID(at), Port: hop.Port})
				next, ok := far[hop]
				if !ok {
					break
				}
				at = next
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *sdnlb.Path) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	return out
}

// fabricSwitch is what a round needs of one switch: its id and its ports.
type fabricSwitch struct {
	dpid  uint64
	ports []ofp.Port
}

// levelKey is a link as the paths toward one switch weigh it.
type levelKey struct {
	link
	dst uint64
}

// loadFunc gives a link's utilisation (0 to 1) by what does not go to
// switch dst, given whether it is the first hop of its source's path to
// dst (topology.loadWithout).
type loadFunc func(l link, dst uint64, carries bool) float64

// plan computes every switch's view: which of its ports are links, which
// carry floods, and the port toward each other switch.
func (f *fabric) plan(now time.Time, switches []fabricSwitch, links []linkState, load loadFunc) map[uint64]*dataplane.FabricView {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]uint64, len(switches))
	for i, s := range switches {
		ids[i] = s.dpid
	}
	linked := f.recordLinks(links)
	g := newGraph(ids, links)
	onTree := g.tree()
	f.choosePaths(now, g, ids, links, load)

	up := upPorts(switches)
	f.trackUpSince(now, up)
	f.settleHosts(now, ids, linked, up)
	f.shareHosts()

	f.settles = time.Time{}
	views := make(map[uint64]*dataplane.FabricView, len(switches))
	for _, s := range switches {
		views[s.dpid] = f.viewOf(now, s, up, linked, onTree)
	}
	return views
}

// recordLinks notes the switch at the other end of each link port, for
// Between, and returns the ports that are links.
func (f *fabric) recordLinks(links []linkState) (linked map[model.PortRef]bool) {
	linked = map[model.PortRef]bool{}
	f.far = make(map[model.PortRef]uint64, len(links))
	for _, l := range links {
		linked[l.src], linked[l.dst] = true, true
		f.far[l.src] = l.dst.DPID
	}
	return linked
}

// choosePaths chooses every switch's port toward each switch of ids. The
// paths toward each switch weigh the links by what else they carry, each
// link with its own level per destination; a link that never changed
// level is calm and takes no entry.
func (f *fabric) choosePaths(now time.Time, g *graph, ids []uint64, links []linkState, load loadFunc) {
	levels := make(map[levelKey]linkLevel, len(f.levels))
	towards := make(map[uint64]map[uint64]uint32, len(ids))
	for _, dst := range ids {
		prev := f.towards[dst]
		for _, l := range links {
			k := levelKey{l.link, dst}
			if lv := f.levels[k].next(now, load(l.link, dst, prev[l.src.DPID] == l.src.Port)); lv != (linkLevel{}) {
				levels[k] = lv
			}
		}
		towards[dst] = g.towards(dst, prev, func(l link) bool { return levels[levelKey{l, dst}].busy })
	}
	f.levels, f.towards = levels, towards
}

// upPorts returns the switches' ports that are up, of those a frame can
// leave by: physical ones and the local one.
func upPorts(switches []fabricSwitch) map[model.PortRef]bool {
	up := map[model.PortRef]bool{}
	for _, s := range switches {
		for _, p := range s.ports {
			if (p.PortNo <= ofp.PortMax || p.PortNo == ofp.PortLocal) && portUp(p) {
				up[model.PortRef{DPID: s.dpid, Port: p.PortNo}] = true
			}
		}
	}
	return up
}

// trackUpSince records when each port of up was first seen up, and
// forgets the ports no longer up.
func (f *fabric) trackUpSince(now time.Time, up map[model.PortRef]bool) {
	for ref := range f.upSince {
		if !up[ref] {
			delete(f.upSince, ref) // down or gone: it settles again when it comes back
		}
	}
	for ref := range up {
		if _, seen := f.upSince[ref]; !seen {
			f.upSince[ref] = now
		}
	}
}

// shareHosts hands out the settled hosts anew when they changed since they
// were last handed out; the switches' views share them.
func (f *fabric) shareHosts() {
	if f.shared.Gen == f.hostsGen {
		return
	}
	f.shared = &dataplane.FabricHosts{Gen: f.hostsGen, Hosts: make(map[[6]byte]dataplane.FabricHost, len(f.hosts))}
	for mac, h := range f.hosts {
		if !h.Tentative {
			f.shared.Hosts[mac] = h
		}
	}
}

// viewOf computes s's view: its up ports that are links take traffic in,
// and carry floods when on the tree; those that settled are hosts' ports
// and carry floods; the others do neither yet, and the first of them to
// settle sets when the next round is due (settles).
func (f *fabric) viewOf(now time.Time, s fabricSwitch, up, linked, onTree map[model.PortRef]bool) *dataplane.FabricView {
	v := &dataplane.FabricView{DPID: s.dpid, Edge: map[uint32]bool{}, Floods: map[uint32][]uint32{}, Next: map[uint64]uint32{}, Hosts: f.shared}
	for _, p := range s.ports {
		ref := model.PortRef{DPID: s.dpid, Port: p.PortNo}
		if !up[ref] {
			continue
		}
		since := f.upSince[ref]
		switch {
		case linked[ref]:
			v.Ingress = append(v.Ingress, p.PortNo)
			if onTree[ref] {
				v.Carry = append(v.Carry, p.PortNo)
			} else {
				v.Blocked = append(v.Blocked, p.PortNo)
			}
		case now.Sub(since) >= settleTime || p.PortNo == ofp.PortLocal:
			v.Edge[p.PortNo] = true
			v.Carry = append(v.Carry, p.PortNo)
		case f.settles.IsZero() || since.Add(settleTime).Before(f.settles):
			f.settles = since.Add(settleTime)
		}
	}
	slices.Sort(v.Carry)
	slices.Sort(v.Ingress)
	slices.Sort(v.Blocked)
	for _, in := range v.Carry {
		v.Floods[in] = slices.DeleteFunc(slices.Clone(v.Carry), func(p uint32) bool { return p == in })
	}
	f.nextHops(v)
	return v
}

// nextHops gives v, one switch's view, the port that switch sends by
// toward each other switch, as the paths chose.
func (f *fabric) nextHops(v *dataplane.FabricView) {
	for dst, ports := range f.towards {
		if p, ok := ports[v.DPID]; ok && dst != v.DPID {
			v.Next[dst] = p
		}
	}
}

// settleHosts forgets the hosts whose port went down or turned out to be a
// link, and confirms the tentative ones whose port settled. Hosts of
// switches not in the round (ids) stay as they are.
func (f *fabric) settleHosts(now time.Time, ids []uint64, linked, up map[model.PortRef]bool) {
	connected := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		connected[id] = true
	}
	for mac, h := range f.hosts {
		switch {
		case !connected[h.At.DPID]:
		case linked[h.At] || !up[h.At]:
			delete(f.hosts, mac) // learned again where it shows
			if !h.Tentative {
				f.hostsGen++
			}
		case h.Tentative && now.Sub(f.upSince[h.At]) >= settleTime:
			h.Tentative = false
			f.hosts[mac] = h
			f.hostsGen++
		}
	}
}

// route runs a round: it plans every switch's view and brings each switch
// the controller is MASTER of to it.
func (c *Controller) route() {
	now := c.now()
	var conns []*switchConn
	var switches []fabricSwitch
	for _, s := range c.switchConns() {
		if s.master.Load() {
			conns = append(conns, s)
			switches = append(switches, fabricSwitch{dpid: s.dpid, ports: s.ports.all()})
		}
	}
	views := c.fabric.plan(now, switches, c.topo.links(now), c.topo.loadWithout)
	for _, s := range conns {
		v := views[s.dpid]
		s.decide(func(dp *dataplane.Switch, out *dataplane.Outbox) { dp.ReconcileFabric(now, v, out) })
		s.flush()
	}
}

// followFabric routes at every change the fabric is poked for, when a
// port settles, and at least once per discovery round, for the links that
// age and the load that changes.
func (c *Controller) followFabric(ctx context.Context) {
	t := time.NewTimer(lldpInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.fabric.kick:
		case <-t.C:
		}
		c.route()
		t.Reset(c.fabric.nextRound(c.now()))
	}
}

// nextRound is how long until the next round is due: a port settles, or
// a discovery round passes.
func (f *fabric) nextRound(now time.Time) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.settles.IsZero() {
		return lldpInterval
	}
	return min(max(f.settles.Sub(now), time.Millisecond), lldpInterval)
}
