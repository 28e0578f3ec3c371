package cluster

import (
	"cmp"
	"maps"
	"slices"

	"github.com/sdnlb/sdnlb"
)

// Assign returns the assignment that follows current: the MASTER node of
// every switch that a live node is connected to, by datapath id.
// connected names, by datapath id, the live nodes connected to each
// switch. It is pure and deterministic:
//
//   - A switch keeps its master while that node is connected to it: the
//     assignment outlives a restart of the leader.
//   - A switch without one (new, or its master gone) goes to the connected
//     node that masters the fewest switches, the smaller id on a tie.
//   - Then at most maxMoves switches move, each from its master to a
//     connected node that masters at least two fewer, the most uneven pair
//     first: a node that joins takes its share over a few rounds, and no
//     switch moves that would not even the counts.
//   - A switch no live node is connected to has no master.
//
// Each switch that gets a new master gets a new generation, larger than
// floor and than every generation in current.
func Assign(connected map[string][]string, current []sdnlb.SwitchMaster, floor uint64, maxMoves int) []sdnlb.SwitchMaster {
	gen := floor
	master := map[string]sdnlb.SwitchMaster{}
	for _, m := range current {
		gen = max(gen, m.Generation)
		if slices.Contains(connected[m.DPID], m.Node) {
			master[m.DPID] = m
		}
	}
	count := map[string]int{}
	for _, m := range master {
		count[m.Node]++
	}
	// fewest is the node of nodes that masters the fewest switches.
	fewest := func(nodes []string) string {
		best := ""
		for _, n := range nodes {
			if best == "" || count[n] < count[best] || (count[n] == count[best] && n < best) {
				best = n
			}
		}
		return best
	}
	give := func(dpid, node string) {
		if old, ok := master[dpid]; ok {
			count[old.Node]--
		}
		gen++
		master[dpid] = sdnlb.SwitchMaster{DPID: dpid, Node: node, Generation: gen}
		count[node]++
	}

	dpids := make([]string, 0, len(connected))
	for dpid, nodes := range connected {
		if len(nodes) > 0 {
			dpids = append(dpids, dpid)
		}
	}
	slices.Sort(dpids)
	for _, dpid := range dpids {
		if _, ok := master[dpid]; !ok {
			give(dpid, fewest(connected[dpid]))
		}
	}
	for range maxMoves {
		moveDPID, moveTo, gap := "", "", 1
		for _, dpid := range dpids {
			to := fewest(connected[dpid])
			if d := count[master[dpid].Node] - count[to]; d > gap {
				moveDPID, moveTo, gap = dpid, to, d
			}
		}
		if moveDPID == "" {
			break
		}
		give(moveDPID, moveTo)
	}

	out := make([]sdnlb.SwitchMaster, 0, len(master))
	for _, m := range master {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b sdnlb.SwitchMaster) int { return cmp.Compare(a.DPID, b.DPID) })
	return out
}

// AssignTogether is Assign for switches one node must master together:
// they form one fabric, whose paths and hosts span them (--l2 fabric).
// Every switch goes to one node: the one connected to the most of them,
// then the one that masters the most now (so a node that comes back
// takes nothing back), then the smaller id. A switch that node is not
// connected to goes as Assign gives it.
func AssignTogether(connected map[string][]string, current []sdnlb.SwitchMaster, floor uint64) []sdnlb.SwitchMaster {
	reach, holds := map[string]int{}, map[string]int{}
	for _, nodes := range connected {
		for _, n := range nodes {
			reach[n]++
		}
	}
	for _, m := range current {
		if slices.Contains(connected[m.DPID], m.Node) {
			holds[m.Node]++
		}
	}
	best := ""
	for _, n := range slices.Sorted(maps.Keys(reach)) {
		if best == "" || cmp.Or(cmp.Compare(reach[n], reach[best]), cmp.Compare(holds[n], holds[best])) > 0 {
			best = n
		}
	}
	only := make(map[string][]string, len(connected))
	for dpid, nodes := range connected {
		if slices.Contains(nodes, best) {
			only[dpid] = []string{best}
		} else {
			only[dpid] = nodes
		}
	}
	return Assign(only, current, floor, 0)
}

// changes lists what turns from into to: the masters new or changed, and
// the switches that no longer have one. Both are sorted by datapath id.
func changes(from, to []sdnlb.SwitchMaster) (set []sdnlb.SwitchMaster, drop []string) {
	was := map[string]sdnlb.SwitchMaster{}
	for _, m := range from {
		was[m.DPID] = m
	}
	for _, m := range to {
		if was[m.DPID] != m {
			set = append(set, m)
		}
		delete(was, m.DPID)
	}
	for dpid := range was {
		drop = append(drop, dpid)
	}
	slices.Sort(drop)
	return set, drop
}

// termGeneration is the first OpenFlow role generation of a lease term:
// every generation the term's leader assigns is larger, and every one
// assigned in an earlier term smaller, so a new leader needs no record of
// generations its predecessors gave switches that no longer have a row.
// A term has 2^32 generations.
func termGeneration(term uint64) uint64 { return term << 32 }
