package dataplane

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// FabricHost is a host at the edge: its port and, once an ARP or IPv4
// packet showed it, its address.
type FabricHost struct {
	At model.PortRef
	IP netip.Addr // the zero Addr: not known
	// Tentative: seen on a port that had not settled yet. The switches
	// get no row for it until the port settles as a host's; if the port
	// turns out to be a link, the host was seen through it and is
	// forgotten.
	Tentative bool
}

// FabricHosts is an immutable copy of the hosts, shared by the switches'
// views of one round.
type FabricHosts struct {
	Gen   uint64
	Hosts map[[6]byte]FabricHost
}

// passReplies lets a CONTROLLER connection's replies through the switches
// between its member's and this one, whose reverse flow translates them:
// each of them would otherwise send them to the controller, or to its
// tracker, as the member's replies. The rows match the reverse flow's
// addresses and ports (not what the tracker says, which only this switch
// knows), go to the other switches without waiting, and carry the
// connection flows' configured timeouts, as no poll of theirs ages them;
// until one is in place, a reply goes the slow way, through the
// controller, which forwards it.
func (dp *Switch) passReplies(reverse *ofp.FlowMod, memberMAC [6]byte, out *Outbox) {
	home, ok := dp.Fabric.Home(memberMAC)
	if !ok || home.DPID == dp.DPID {
		return
	}
	for _, dpid := range dp.Fabric.Between(home.DPID, dp.DPID) {
		pass := ofp.FlowMod{Cookie: reverse.Cookie&^model.MaskCategory | uint64(model.CatTransit)<<model.CookieCatShift,
			Command: ofp.FlowAdd, TableID: model.TableClassify, Priority: model.PrioConnection,
			IdleTimeout: dp.IdleTimeout, HardTimeout: dp.HardTimeout,
			BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match:        ofp.Match{OXMs: slices.DeleteFunc(slices.Clone(reverse.Match.OXMs), func(o ofp.OXM) bool { return model.TrackerField(&o) })},
			Instructions: []ofp.Instruction{ofp.InstructionGotoTable{TableID: model.TableL2}}}
		out.Transit = append(out.Transit, TransitRow{DPID: dpid, FM: pass})
	}
}

// FabricView is one switch's part of the fabric, as one round computed
// it. It is not changed once made.
type FabricView struct {
	DPID    uint64
	Ingress []uint32            // ports with a link: what comes in was classified where it entered
	Blocked []uint32            // links off the tree: floods that come in are dropped
	Edge    map[uint32]bool     // hosts' ports: floods from them also go to the controller
	Carry   []uint32            // the ports floods leave by: the edge and the tree
	Floods  map[uint32][]uint32 // for each port of carry, the others
	Next    map[uint64]uint32   // the port toward each switch it reaches
	Hosts   *FabricHosts
}

// PortTo returns the port frames for mac leave this switch by.
func (v *FabricView) PortTo(mac [6]byte) (uint32, bool) {
	h, ok := v.Hosts.Hosts[mac]
	if !ok {
		return 0, false
	}
	if h.At.DPID == v.DPID {
		return h.At.Port, true
	}
	p, ok := v.Next[h.At.DPID]
	return p, ok
}

// structuralFlows are the view's rows but the hosts': the ingress of its
// links, its floods and its paths.
func (v *FabricView) structuralFlows() []model.Flow {
	cookie := model.MakeCookie(model.CatFabric, 0, 0)
	var flows []model.Flow
	for _, p := range v.Ingress {
		flows = append(flows, model.Flow{Table: model.TableClassify, Cookie: cookie, Priority: model.PrioLinkIngress,
			Match: []ofp.OXM{ofp.MatchInPort(p)}, GotoTable: model.TableL2})
	}
	for _, p := range v.Blocked {
		flows = append(flows, model.Flow{Table: model.TableL2, Cookie: cookie, Priority: model.PrioFlood, Match: []ofp.OXM{ofp.MatchInPort(p)}})
	}
	for _, in := range v.Carry {
		var acts []ofp.Action
		for _, p := range v.Floods[in] {
			acts = append(acts, ofp.ActionOutput{Port: p})
		}
		flows = append(flows, model.Flow{Table: model.TableL2, Cookie: cookie, Priority: model.PrioFlood, Match: []ofp.OXM{ofp.MatchInPort(in)}, Actions: acts})
	}
	for _, dst := range slices.Sorted(maps.Keys(v.Next)) {
		flows = append(flows, model.Flow{Table: model.TableFabric, Cookie: cookie, Priority: model.PrioPath,
			Match: []ofp.OXM{ofp.MatchMetadata(dst)}, Actions: []ofp.Action{ofp.ActionOutput{Port: v.Next[dst]}}})
	}
	return flows
}

// hostFlow is a host's row on the switch of v: out of its port on its own
// switch, else on to TableFabric toward its switch.
func (v *FabricView) hostFlow(mac [6]byte, h FabricHost) model.Flow {
	f := model.Flow{Table: model.TableL2, Cookie: model.MakeCookie(model.CatL2, 0, 0), Priority: model.PrioL2, Match: []ofp.OXM{ofp.MatchEthDst(mac)}}
	if h.At.DPID == v.DPID {
		f.Actions = []ofp.Action{ofp.ActionOutput{Port: h.At.Port}}
	} else {
		f.Metadata, f.GotoTable = &h.At.DPID, model.TableFabric
	}
	return f
}

// sourceFlow is a host's row in TableSources on its own switch: what it
// sends from its port is known, and goes on without the controller.
func sourceFlow(mac [6]byte, port uint32) model.Flow {
	return model.Flow{Table: model.TableSources, Cookie: model.MakeCookie(model.CatL2, 0, 0), Priority: model.PrioSource,
		Match: []ofp.OXM{ofp.MatchInPort(port), ofp.MatchEthSrc(mac)}, GotoTable: model.TableL2}
}

// fabricRows is what a switch holds of the fabric, as sent to it.
type fabricRows struct {
	view    *FabricView
	rows    map[flowKey]installedRow // the structural rows
	hosts   map[[6]byte]FabricHost
	sources map[[6]byte]uint32 // the hosts of this switch: the port of their row in TableSources
	gen     uint64             // of the hosts
}

func newFabricRows() fabricRows {
	return fabricRows{rows: map[flowKey]installedRow{}, hosts: map[[6]byte]FabricHost{}, sources: map[[6]byte]uint32{}}
}

// installedRow is a row as sent: its match, to delete it by, and its
// instructions, to tell whether it changed.
type installedRow struct {
	match        ofp.Match
	instructions string
}

// ReconcileFabric brings the switch to v: the structural rows that
// differ, then the hosts' rows that differ, each kind's stale rows
// deleted after its new ones, so no frame finds a gap. The hosts become
// reachable for the dataplane's setups and buckets too.
func (dp *Switch) ReconcileFabric(now time.Time, v *FabricView, out *Outbox) {
	r := &dp.fabricRows
	last := r.view
	r.view = v
	dp.askUnknownMembers(now, out)
	if last == nil || !last.sameStructure(v) {
		r.reconcileStructure(v, out)
	}
	if pathsMoved := last == nil || !maps.Equal(last.Next, v.Next); r.gen != v.Hosts.Gen || pathsMoved {
		dp.reconcileHosts(now, v, pathsMoved, out)
	}
}

// sameStructure reports whether v and w want the same rows but the
// hosts'.
func (v *FabricView) sameStructure(w *FabricView) bool {
	return slices.Equal(v.Ingress, w.Ingress) && slices.Equal(v.Blocked, w.Blocked) && slices.Equal(v.Carry, w.Carry) &&
		maps.Equal(v.Edge, w.Edge) && maps.Equal(v.Next, w.Next)
}

// reconcileStructure sends the ingress, flood and path rows of v that the
// switch does not hold as v wants them, then deletes those v does not
// want.
func (r *fabricRows) reconcileStructure(v *FabricView, out *Outbox) {
	want := map[flowKey]bool{}
	for _, f := range v.structuralFlows() {
		fm := f.Add()
		k, ins := keyOf(fm.TableID, fm.Priority, &fm.Match), ofp.FormatInstructions(fm.Instructions)
		want[k] = true
		if r.rows[k].instructions != ins {
			r.rows[k] = installedRow{match: fm.Match, instructions: ins}
			out.Send(&fm)
		}
	}
	for k, row := range r.rows {
		if !want[k] {
			delete(r.rows, k)
			out.Send(&ofp.FlowMod{Command: ofp.FlowDeleteStrict, TableID: k.table, Priority: k.priority,
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
func (dp *Switch) reconcileHosts(now time.Time, v *FabricView, pathsMoved bool, out *Outbox) {
	r := &dp.fabricRows
	var reached []netip.Addr
	for mac, h := range v.Hosts.Hosts {
		old, had := r.hosts[mac]
		changed := !had || old != h
		if changed {
			r.hosts[mac] = h
			fm := v.hostFlow(mac, h).Add()
			out.Send(&fm)
			r.source(mac, h.At, dp.DPID, out)
		}
		switch {
		case !h.IP.IsValid() || !changed && (h.At.DPID == dp.DPID || !pathsMoved):
		case h.At.DPID == dp.DPID:
			if dp.Learner.learnHost(now, h.IP, mac, h.At.Port, true) {
				reached = append(reached, h.IP)
			}
		default:
			if port, ok := v.PortTo(mac); ok && dp.Learner.reach(now, h.IP, mac, port) {
				reached = append(reached, h.IP)
			}
		}
	}
	if r.gen != v.Hosts.Gen {
		r.forgetGoneHosts(v, dp.DPID, out)
	}
	for _, ip := range reached {
		dp.reached(now, dp.Installed, ip, out)
	}
}

// forgetGoneHosts deletes the rows of the hosts v no longer has, on switch
// self, and takes on v's generation of hosts.
func (r *fabricRows) forgetGoneHosts(v *FabricView, self uint64, out *Outbox) {
	for mac := range r.hosts {
		if _, ok := v.Hosts.Hosts[mac]; !ok {
			delete(r.hosts, mac)
			fm := model.Flow{Table: model.TableL2, Priority: model.PrioL2, Match: []ofp.OXM{ofp.MatchEthDst(mac)}}.Remove()
			out.Send(&fm)
			r.source(mac, model.PortRef{}, self, out)
		}
	}
	r.gen = v.Hosts.Gen
}

// source brings the TableSources row of mac to a host at (a switch's
// own host has one; a host elsewhere, or gone, none).
func (r *fabricRows) source(mac [6]byte, at model.PortRef, self uint64, out *Outbox) {
	old, had := r.sources[mac]
	if had && (at.DPID != self || at.Port != old) {
		delete(r.sources, mac)
		fm := sourceFlow(mac, old).Remove()
		out.Send(&fm)
	}
	if at.DPID == self && (!had || at.Port != old) {
		r.sources[mac] = at.Port
		fm := sourceFlow(mac, at.Port).Add()
		out.Send(&fm)
	}
}

// askUnknownMembers asks again, by ARP, for the members of SWITCH pools
// no switch has shown yet: a probe flooded before their port settled, or
// lost, would otherwise leave them out of the buckets until something
// else brought them up.
func (dp *Switch) askUnknownMembers(now time.Time, out *Outbox) {
	snap := dp.Installed
	for ip, nums := range snap.TrackedMembers {
		if _, known := dp.Learner.Host(ip); !known && len(nums) > 0 {
			if v := snap.VIPByNum[nums[0]]; v != nil {
				dp.askARP(now, v, ip, out)
			}
		}
	}
}

// adoptFabricRow takes over one of the fabric's rows a switch holds: it is
// kept, and the next round replaces it if it differs or deletes it if
// the fabric no longer wants it. A host's row on its own switch tells the
// fabric where the host is.
func (dp *Switch) adoptFabricRow(f *ofp.FlowStats, out *Outbox) {
	r := &dp.fabricRows
	if cat, _, _, _ := model.CookieParts(f.Cookie); cat == model.CatFabric {
		r.rows[keyOf(f.TableID, f.Priority, &f.Match)] = installedRow{match: f.Match, instructions: ofp.FormatInstructions(f.Instructions)}
		return
	}
	if src, ok := f.Match.Get(ofp.OXMEthSrc); ok && f.TableID == model.TableSources {
		if port, ok := f.Match.InPort(); ok {
			r.sources[src.MAC()] = port
		}
		return
	}
	dst, ok := f.Match.Get(ofp.OXMEthDst)
	if f.TableID != model.TableL2 || f.Priority != model.PrioL2 || !ok {
		return
	}
	at := model.PortRef{DPID: dp.DPID}
	if port, ok := model.OutputPort(model.Applied(f.Instructions)); ok {
		at.Port = port
		out.Hosts = append(out.Hosts, HostSighting{MAC: dst.MAC(), At: at, Seed: true})
	}
	r.hosts[dst.MAC()] = FabricHost{At: at}
}
