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
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// The fabric: under L2Fabric the controller forwards, across every switch
// it decides for, the traffic that is not for a VIP, and carries the
// VIPs' traffic between the switch a client enters at and the switch its
// member is on. What the switches need for it they hold themselves, so it
// keeps working while the controller is away:
//
//   - A VIP's work is done where its traffic enters the network: a packet
//     that comes in over a link (tableClassify, prioLinkIngress) goes
//     straight to tableL2, but for members' replies, which go through
//     the trackers of every switch on their way and are translated by
//     the one that holds their connection, the client's.
//   - Per host, tableL2 sends frames for its MAC out of its port on its
//     own switch, and on every other switch to tableFabric with that
//     switch in the metadata; tableFabric sends them toward it.
//   - Paths are per destination switch: each switch sends what goes to
//     another out of the first hop of its cheapest path, where a link
//     costs a hop, and more while busy (paths.go). All traffic of a
//     switch toward another takes one path; the switches on the way hold
//     nothing of the connections, so a path that moves moves them too.
//   - Hosts are learned from what they send: tableSources has a row per
//     host of the switch, its MAC from its port, and sends the controller
//     what no row knows, once, on its way to tableL2.
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
	hosts    map[[6]byte]fabricHost // where each host attaches
	hostsGen uint64                 // counts changes of hosts
	shared   *fabricHosts           // hosts as last handed out
	upSince  map[portRef]time.Time  // when the controller first saw each port up
	levels   map[levelKey]linkLevel
	towards  map[uint64]map[uint64]uint32 // per destination switch: each switch's port toward it
	settles  time.Time                    // when the next port that is not settled settles; zero: none
	far      map[portRef]uint64           // the switch at the other end of each link port
	kick     chan struct{}
	// deliver hands a flow-mod to another switch's connection, without
	// waiting: the Controller's, which knows the connections.
	deliver func(dpid uint64, fm *ofp.FlowMod)
}

// fabricHost is a host at the edge: its port and, once an ARP or IPv4
// packet showed it, its address.
type fabricHost struct {
	at portRef
	ip netip.Addr // the zero Addr: not known
	// tentative: seen on a port that had not settled yet. The switches
	// get no row for it until the port settles as a host's; if the port
	// turns out to be a link, the host was seen through it and is
	// forgotten.
	tentative bool
}

// fabricHosts is an immutable copy of the hosts, shared by the switches'
// views of one round.
type fabricHosts struct {
	gen   uint64
	hosts map[[6]byte]fabricHost
}

func newFabric() *fabric {
	return &fabric{hosts: map[[6]byte]fabricHost{}, shared: &fabricHosts{hosts: map[[6]byte]fabricHost{}},
		upSince: map[portRef]time.Time{}, levels: map[levelKey]linkLevel{}, towards: map[uint64]map[uint64]uint32{},
		far: map[portRef]uint64{}, kick: make(chan struct{}, 1), deliver: func(uint64, *ofp.FlowMod) {}}
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
func (f *fabric) learn(mac [6]byte, ip netip.Addr, at portRef, settled bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, known := f.hosts[mac]
	if !ip.IsValid() {
		ip = h.ip
	}
	next := fabricHost{at: at, ip: ip, tentative: !settled}
	if known && h == next || !known && len(f.hosts) >= maxLearned {
		return false
	}
	f.hosts[mac] = next
	if known && !h.tentative || settled {
		f.hostsGen++ // the switches' rows change
	}
	f.poke()
	return true
}

// seed records a host a switch's flows name at port, unless the fabric
// knows where it is.
func (f *fabric) seed(mac [6]byte, at portRef) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, known := f.hosts[mac]; !known && len(f.hosts) < maxLearned {
		f.hosts[mac] = fabricHost{at: at}
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
		next, linked := f.far[portRef{dpid: at, port: p}]
		if !ok || !linked || len(path) > len(ports) {
			return nil
		}
		path = append(path, at)
		at = next
	}
	return path
}

// Home returns where a host attaches.
func (f *fabric) Home(mac [6]byte) (portRef, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h, ok := f.hosts[mac]
	return h.at, ok
}

// passReplies lets a CONTROLLER connection's replies through the switches
// between its member's and this one, whose reverse flow translates them:
// each of them would otherwise send them to the controller, or to its
// tracker, as the member's replies. The rows match the reverse flow's
// addresses and ports (not what the tracker says, which only this switch
// knows), go to the other switches without waiting, and carry the
// connection's timeouts; until one is in place, a reply goes the slow
// way, through the controller, which forwards it.
func (dp *dataplane) passReplies(reverse *ofp.FlowMod, memberMAC [6]byte, out *outbox) {
	home, ok := dp.fabric.Home(memberMAC)
	if !ok || home.dpid == dp.dpid {
		return
	}
	for _, dpid := range dp.fabric.Between(home.dpid, dp.dpid) {
		pass := ofp.FlowMod{Cookie: reverse.Cookie&^maskCategory | uint64(catTransit)<<cookieCatShift,
			Command: ofp.FlowAdd, TableID: tableClassify, Priority: prioConnection,
			IdleTimeout: reverse.IdleTimeout, HardTimeout: reverse.HardTimeout,
			BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match:        ofp.Match{OXMs: slices.DeleteFunc(slices.Clone(reverse.Match.OXMs), func(o ofp.OXM) bool { return trackerField(&o) })},
			Instructions: []ofp.Instruction{ofp.InstructionGotoTable{TableID: tableL2}}}
		out.transit = append(out.transit, transitRow{dpid: dpid, fm: pass})
	}
}

// paths follows the ports the last round chose from every switch to every
// other it reaches, over links, ordered by source and destination.
func (f *fabric) paths(links []linkState) []*sdnlb.Path {
	f.mu.Lock()
	defer f.mu.Unlock()
	far := make(map[portRef]uint64, len(links)) // the switch at the other end of each link port
	for _, l := range links {
		far[l.src] = l.dst.dpid
	}
	var out []*sdnlb.Path
	for _, dst := range slices.Sorted(maps.Keys(f.towards)) {
		ports := f.towards[dst]
		for _, from := range slices.Sorted(maps.Keys(ports)) {
			p := &sdnlb.Path{From: formatDPID(from), To: formatDPID(dst)}
			for at := from; at != dst && len(p.Hops) <= len(ports); {
				hop := portRef{dpid: at, port: ports[at]}
				p.Hops = append(p.Hops, sdnlb.LinkEnd{DPID: formatDPID(at), Port: hop.port})
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
func (f *fabric) plan(now time.Time, switches []fabricSwitch, links []linkState, load loadFunc) map[uint64]*fabricView {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]uint64, len(switches))
	for i, s := range switches {
		ids[i] = s.dpid
	}
	linked := map[portRef]bool{}
	f.far = make(map[portRef]uint64, len(links))
	for _, l := range links {
		linked[l.src], linked[l.dst] = true, true
		f.far[l.src] = l.dst.dpid
	}
	g := newGraph(ids, links)
	onTree := g.tree()
	// The paths toward each switch weigh the links by what else they
	// carry, each link with its own level per destination; a link that
	// never changed level is calm and takes no entry.
	levels := make(map[levelKey]linkLevel, len(f.levels))
	towards := make(map[uint64]map[uint64]uint32, len(ids))
	for _, dst := range ids {
		prev := f.towards[dst]
		for _, l := range links {
			k := levelKey{l.link, dst}
			if lv := f.levels[k].next(now, load(l.link, dst, prev[l.src.dpid] == l.src.port)); lv != (linkLevel{}) {
				levels[k] = lv
			}
		}
		towards[dst] = g.towards(dst, prev, func(l link) bool { return levels[levelKey{l, dst}].busy })
	}
	f.levels, f.towards = levels, towards

	up := map[portRef]bool{}
	for _, s := range switches {
		for _, p := range s.ports {
			if (p.PortNo <= ofp.PortMax || p.PortNo == ofp.PortLocal) && portUp(p) {
				up[portRef{dpid: s.dpid, port: p.PortNo}] = true
			}
		}
	}
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
	f.settleHosts(now, ids, linked, up)
	if f.shared.gen != f.hostsGen {
		f.shared = &fabricHosts{gen: f.hostsGen, hosts: make(map[[6]byte]fabricHost, len(f.hosts))}
		for mac, h := range f.hosts {
			if !h.tentative {
				f.shared.hosts[mac] = h
			}
		}
	}

	f.settles = time.Time{}
	views := make(map[uint64]*fabricView, len(switches))
	for _, s := range switches {
		v := &fabricView{dpid: s.dpid, edge: map[uint32]bool{}, floods: map[uint32][]uint32{}, next: map[uint64]uint32{}, hosts: f.shared}
		for _, p := range s.ports {
			ref := portRef{dpid: s.dpid, port: p.PortNo}
			if !up[ref] {
				continue
			}
			since := f.upSince[ref]
			switch {
			case linked[ref]:
				v.ingress = append(v.ingress, p.PortNo)
				if onTree[ref] {
					v.carry = append(v.carry, p.PortNo)
				} else {
					v.blocked = append(v.blocked, p.PortNo)
				}
			case now.Sub(since) >= settleTime || p.PortNo == ofp.PortLocal:
				v.edge[p.PortNo] = true
				v.carry = append(v.carry, p.PortNo)
			case f.settles.IsZero() || since.Add(settleTime).Before(f.settles):
				f.settles = since.Add(settleTime)
			}
		}
		slices.Sort(v.carry)
		slices.Sort(v.ingress)
		slices.Sort(v.blocked)
		for _, in := range v.carry {
			v.floods[in] = slices.DeleteFunc(slices.Clone(v.carry), func(p uint32) bool { return p == in })
		}
		for dst, ports := range towards {
			if p, ok := ports[s.dpid]; ok && dst != s.dpid {
				v.next[dst] = p
			}
		}
		views[s.dpid] = v
	}
	return views
}

// settleHosts forgets the hosts whose port went down or turned out to be a
// link, and confirms the tentative ones whose port settled. Hosts of
// switches not in the round (ids) stay as they are.
func (f *fabric) settleHosts(now time.Time, ids []uint64, linked, up map[portRef]bool) {
	connected := make(map[uint64]bool, len(ids))
	for _, id := range ids {
		connected[id] = true
	}
	for mac, h := range f.hosts {
		switch {
		case !connected[h.at.dpid]:
		case linked[h.at] || !up[h.at]:
			delete(f.hosts, mac) // learned again where it shows
			if !h.tentative {
				f.hostsGen++
			}
		case h.tentative && now.Sub(f.upSince[h.at]) >= settleTime:
			h.tentative = false
			f.hosts[mac] = h
			f.hostsGen++
		}
	}
}

// fabricView is one switch's part of the fabric, as one round computed
// it. It is not changed once made.
type fabricView struct {
	dpid    uint64
	ingress []uint32            // ports with a link: what comes in was classified where it entered
	blocked []uint32            // links off the tree: floods that come in are dropped
	edge    map[uint32]bool     // hosts' ports: floods from them also go to the controller
	carry   []uint32            // the ports floods leave by: the edge and the tree
	floods  map[uint32][]uint32 // for each port of carry, the others
	next    map[uint64]uint32   // the port toward each switch it reaches
	hosts   *fabricHosts
}

// portTo returns the port frames for mac leave this switch by.
func (v *fabricView) portTo(mac [6]byte) (uint32, bool) {
	h, ok := v.hosts.hosts[mac]
	if !ok {
		return 0, false
	}
	if h.at.dpid == v.dpid {
		return h.at.port, true
	}
	p, ok := v.next[h.at.dpid]
	return p, ok
}

// structuralFlows are the view's rows but the hosts': the ingress of its
// links, its floods and its paths.
func (v *fabricView) structuralFlows() []flow {
	cookie := makeCookie(catFabric, 0, 0)
	var flows []flow
	for _, p := range v.ingress {
		flows = append(flows, flow{table: tableClassify, cookie: cookie, priority: prioLinkIngress,
			match: []ofp.OXM{ofp.MatchInPort(p)}, gotoTable: tableL2})
	}
	for _, p := range v.blocked {
		flows = append(flows, flow{table: tableL2, cookie: cookie, priority: prioFlood, match: []ofp.OXM{ofp.MatchInPort(p)}})
	}
	for _, in := range v.carry {
		var acts []ofp.Action
		for _, p := range v.floods[in] {
			acts = append(acts, ofp.ActionOutput{Port: p})
		}
		flows = append(flows, flow{table: tableL2, cookie: cookie, priority: prioFlood, match: []ofp.OXM{ofp.MatchInPort(in)}, actions: acts})
	}
	for _, dst := range slices.Sorted(maps.Keys(v.next)) {
		flows = append(flows, flow{table: tableFabric, cookie: cookie, priority: prioPath,
			match: []ofp.OXM{ofp.MatchMetadata(dst)}, actions: []ofp.Action{ofp.ActionOutput{Port: v.next[dst]}}})
	}
	return flows
}

// hostFlow is a host's row on the switch of v: out of its port on its own
// switch, else on to tableFabric toward its switch.
func (v *fabricView) hostFlow(mac [6]byte, h fabricHost) flow {
	f := flow{table: tableL2, cookie: makeCookie(catL2, 0, 0), priority: prioL2, match: []ofp.OXM{ofp.MatchEthDst(mac)}}
	if h.at.dpid == v.dpid {
		f.actions = []ofp.Action{ofp.ActionOutput{Port: h.at.port}}
	} else {
		f.metadata, f.gotoTable = &h.at.dpid, tableFabric
	}
	return f
}

// sourceFlow is a host's row in tableSources on its own switch: what it
// sends from its port is known, and goes on without the controller.
func sourceFlow(mac [6]byte, port uint32) flow {
	return flow{table: tableSources, cookie: makeCookie(catL2, 0, 0), priority: prioSource,
		match: []ofp.OXM{ofp.MatchInPort(port), ofp.MatchEthSrc(mac)}, gotoTable: tableL2}
}

// fabricRows is what a switch holds of the fabric, as sent to it.
type fabricRows struct {
	view    *fabricView
	rows    map[flowKey]installedRow // the structural rows
	hosts   map[[6]byte]fabricHost
	sources map[[6]byte]uint32 // the hosts of this switch: the port of their row in tableSources
	gen     uint64             // of the hosts
}

func newFabricRows() fabricRows {
	return fabricRows{rows: map[flowKey]installedRow{}, hosts: map[[6]byte]fabricHost{}, sources: map[[6]byte]uint32{}}
}

// installedRow is a row as sent: its match, to delete it by, and its
// instructions, to tell whether it changed.
type installedRow struct {
	match        ofp.Match
	instructions string
}

// reconcileFabric brings the switch to v: the structural rows that
// differ, then the hosts' rows that differ, each kind's stale rows
// deleted after its new ones, so no frame finds a gap. The hosts become
// reachable for the dataplane's setups and buckets too.
func (dp *dataplane) reconcileFabric(now time.Time, v *fabricView, out *outbox) {
	r := &dp.fabricRows
	last := r.view
	r.view = v
	dp.askUnknownMembers(now, out)
	if last == nil || !last.sameStructure(v) {
		r.reconcileStructure(v, out)
	}
	if pathsMoved := last == nil || !maps.Equal(last.next, v.next); r.gen != v.hosts.gen || pathsMoved {
		dp.reconcileHosts(now, v, pathsMoved, out)
	}
}

// sameStructure reports whether v and w want the same rows but the
// hosts'.
func (v *fabricView) sameStructure(w *fabricView) bool {
	return slices.Equal(v.ingress, w.ingress) && slices.Equal(v.blocked, w.blocked) && slices.Equal(v.carry, w.carry) &&
		maps.Equal(v.edge, w.edge) && maps.Equal(v.next, w.next)
}

// reconcileStructure sends the ingress, flood and path rows of v that the
// switch does not hold as v wants them, then deletes those v does not
// want.
func (r *fabricRows) reconcileStructure(v *fabricView, out *outbox) {
	want := map[flowKey]bool{}
	for _, f := range v.structuralFlows() {
		fm := f.add()
		k, ins := keyOf(fm.TableID, fm.Priority, &fm.Match), ofp.FormatInstructions(fm.Instructions)
		want[k] = true
		if r.rows[k].instructions != ins {
			r.rows[k] = installedRow{match: fm.Match, instructions: ins}
			out.send(&fm)
		}
	}
	for k, row := range r.rows {
		if !want[k] {
			delete(r.rows, k)
			out.send(&ofp.FlowMod{Command: ofp.FlowDeleteStrict, TableID: k.table, Priority: k.priority,
				BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Match: row.match})
		}
	}
}

// reconcileHosts sends the rows of the hosts that came or moved and
// deletes those of the hosts gone; then it tells the dataplane where the
// hosts with an address are, for setups and buckets: on this switch at
// their port (one that settled since it showed them), on the others
// through the port their path leaves by now (every one of them when the
// paths moved).
func (dp *dataplane) reconcileHosts(now time.Time, v *fabricView, pathsMoved bool, out *outbox) {
	r := &dp.fabricRows
	var reached []netip.Addr
	for mac, h := range v.hosts.hosts {
		old, had := r.hosts[mac]
		changed := !had || old != h
		if changed {
			r.hosts[mac] = h
			fm := v.hostFlow(mac, h).add()
			out.send(&fm)
			r.source(mac, h.at, dp.dpid, out)
		}
		switch {
		case !h.ip.IsValid() || !changed && (h.at.dpid == dp.dpid || !pathsMoved):
		case h.at.dpid == dp.dpid:
			if dp.learner.learnHost(now, h.ip, mac, h.at.port, true) {
				reached = append(reached, h.ip)
			}
		default:
			if port, ok := v.portTo(mac); ok && dp.learner.reach(now, h.ip, mac, port) {
				reached = append(reached, h.ip)
			}
		}
	}
	if r.gen != v.hosts.gen {
		for mac := range r.hosts {
			if _, ok := v.hosts.hosts[mac]; !ok {
				delete(r.hosts, mac)
				fm := flow{table: tableL2, priority: prioL2, match: []ofp.OXM{ofp.MatchEthDst(mac)}}.remove()
				out.send(&fm)
				r.source(mac, portRef{}, dp.dpid, out)
			}
		}
		r.gen = v.hosts.gen
	}
	for _, ip := range reached {
		dp.reached(now, dp.installed, ip, out)
	}
}

// source brings the tableSources row of mac to a host at (a switch's
// own host has one; a host elsewhere, or gone, none).
func (r *fabricRows) source(mac [6]byte, at portRef, self uint64, out *outbox) {
	old, had := r.sources[mac]
	if had && (at.dpid != self || at.port != old) {
		delete(r.sources, mac)
		fm := sourceFlow(mac, old).remove()
		out.send(&fm)
	}
	if at.dpid == self && (!had || at.port != old) {
		r.sources[mac] = at.port
		fm := sourceFlow(mac, at.port).add()
		out.send(&fm)
	}
}

// askUnknownMembers asks again, by ARP, for the members of SWITCH pools
// no switch has shown yet: a probe flooded before their port settled, or
// lost, would otherwise leave them out of the buckets until something
// else brought them up.
func (dp *dataplane) askUnknownMembers(now time.Time, out *outbox) {
	snap := dp.installed
	for ip, nums := range snap.switchedMembers {
		if _, known := dp.learner.host(ip); !known && len(nums) > 0 {
			if v := snap.vipByNum[nums[0]]; v != nil {
				dp.askARP(now, v, ip, out)
			}
		}
	}
}

// adoptFabricRow takes over one of the fabric's rows a switch holds: it is
// kept, and the next round replaces it if it differs or deletes it if
// the fabric no longer wants it. A host's row on its own switch tells the
// fabric where the host is.
func (dp *dataplane) adoptFabricRow(f *ofp.FlowStats, out *outbox) {
	r := &dp.fabricRows
	if cat, _, _, _ := cookieParts(f.Cookie); cat == catFabric {
		r.rows[keyOf(f.TableID, f.Priority, &f.Match)] = installedRow{match: f.Match, instructions: ofp.FormatInstructions(f.Instructions)}
		return
	}
	if src, ok := f.Match.Get(ofp.OXMEthSrc); ok && f.TableID == tableSources {
		if port, ok := f.Match.InPort(); ok {
			r.sources[src.MAC()] = port
		}
		return
	}
	dst, ok := f.Match.Get(ofp.OXMEthDst)
	if f.TableID != tableL2 || f.Priority != prioL2 || !ok {
		return
	}
	at := portRef{dpid: dp.dpid}
	if port, ok := outputPort(applied(f.Instructions)); ok {
		at.port = port
		out.hosts = append(out.hosts, hostSighting{mac: dst.MAC(), at: at, seed: true})
	}
	r.hosts[dst.MAC()] = fabricHost{at: at}
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
		s.decide(func(dp *dataplane, out *outbox) { dp.reconcileFabric(now, v, out) })
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
