package controller

import (
	"cmp"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb/controller/model"
)

// How the fabric weighs links (see fabric.go). A link is busy once its
// utilisation passed busyAbove and until it fell below calmBelow, and
// changes between the two at most every levelHold: paths move when a
// link's level does, so the gap and the hold keep them from flapping
// with every stats interval.
const (
	busyAbove = 0.6
	calmBelow = 0.3
	levelHold = 10 * time.Second
	// busyCost is what a busy link costs on top of its hop: a path takes
	// up to this many more calm hops to avoid it.
	busyCost = 4
)

// linkLevel is whether a link is busy, and since when.
type linkLevel struct {
	busy  bool
	since time.Time
}

// next is the link's level given its utilisation now.
func (l linkLevel) next(now time.Time, utilisation float64) linkLevel {
	if now.Sub(l.since) < levelHold {
		return l
	}
	switch {
	case !l.busy && utilisation > busyAbove:
		return linkLevel{busy: true, since: now}
	case l.busy && utilisation < calmBelow:
		return linkLevel{busy: false, since: now}
	}
	return l
}

// graph is the switches and the links that work both ways between them,
// as path finding sees them. It is built once a round; what a link costs
// depends on the destination (towards).
type graph struct {
	nodes []uint64       // datapath ids, ascending
	index map[uint64]int // a node's position in nodes
	in    [][]link       // by node: the links into it, by neighbour then port
	has   map[link]bool
}

// newGraph builds the graph of the switches over the links discovered in
// both directions: a link that carries frames only one way carries no
// traffic back.
func newGraph(switches []uint64, links []linkState) *graph {
	g := &graph{nodes: slices.Sorted(slices.Values(switches)), index: map[uint64]int{}, has: map[link]bool{}}
	g.in = make([][]link, len(g.nodes))
	for i, n := range g.nodes {
		g.index[n] = i
	}
	for _, l := range links {
		_, okSrc := g.index[l.src.DPID]
		dst, okDst := g.index[l.dst.DPID]
		if !l.both || !okSrc || !okDst || l.src.DPID == l.dst.DPID {
			continue
		}
		g.has[l.link] = true
		g.in[dst] = append(g.in[dst], l.link)
	}
	for _, in := range g.in {
		slices.SortFunc(in, func(a, b link) int { return model.ComparePortRef(a.src, b.src) })
	}
	return g
}

// towards returns, for each switch that can reach dst, the port its
// traffic to dst leaves by: the first hop of its cheapest path (Dijkstra
// from dst over the links reversed), where a link costs a hop and
// busyCost more while busy. Among paths of equal cost a switch keeps the
// port it used before (prev), so a change elsewhere moves no traffic that
// need not move, and otherwise takes the lowest neighbour. Every choice
// lies on a cheapest path and costs are positive, so following the ports
// from any switch reaches dst without a loop.
func (g *graph) towards(dst uint64, prev map[uint64]uint32, busy func(link) bool) map[uint64]uint32 {
	const unreached = int(^uint(0) >> 1)
	dist := make([]int, len(g.nodes))
	done := make([]bool, len(g.nodes))
	for i := range dist {
		dist[i] = unreached
	}
	next := make(map[uint64]uint32, len(g.nodes))
	via := make([]model.PortRef, len(g.nodes)) // the neighbour each choice goes to
	dist[g.index[dst]] = 0
	for {
		u := -1
		for i, d := range dist {
			if !done[i] && d != unreached && (u < 0 || d < dist[u]) {
				u = i
			}
		}
		if u < 0 {
			return next
		}
		done[u] = true
		for _, l := range g.in[u] {
			x := g.index[l.src.DPID]
			if done[x] {
				continue
			}
			d, from := dist[u]+1, l.src.DPID
			if busy(l) {
				d += busyCost
			}
			if d < dist[x] || d == dist[x] && preferred(l, next[from], via[x], prev[from]) {
				dist[x], next[from], via[x] = d, l.src.Port, l.dst
			}
		}
	}
}

// preferred reports whether a, of the same cost as the port a switch
// chose so far (leading to neighbour via), is the better choice: the port
// the switch used before (prev, 0 for none) first, then the lowest
// neighbour.
func preferred(a link, chosen uint32, via model.PortRef, prev uint32) bool {
	switch {
	case chosen == prev:
		return false
	case a.src.Port == prev:
		return true
	}
	return model.ComparePortRef(a.dst, via) < 0
}

// tree returns the links of a spanning tree of the graph, as the ports
// at both their ends: floods go along it alone, so a topology with loops
// does not flood a frame back to where it came from. The tree is
// breadth first from the lowest datapath id, over the lowest port to
// each neighbour, so it counts hops and not load: it moves only when the
// topology does.
func (g *graph) tree() map[model.PortRef]bool {
	out := make([][]link, len(g.nodes)) // by node: the links from it
	for _, in := range g.in {
		for _, l := range in {
			i := g.index[l.src.DPID]
			out[i] = append(out[i], l)
		}
	}
	onTree := map[model.PortRef]bool{}
	reached := make([]bool, len(g.nodes))
	for root := range g.nodes {
		if reached[root] {
			continue // another island of the network
		}
		reached[root] = true
		queue := []int{root}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			slices.SortFunc(out[n], func(a, b link) int {
				return cmp.Or(cmp.Compare(a.dst.DPID, b.dst.DPID), cmp.Compare(a.src.Port, b.src.Port))
			})
			for _, l := range out[n] {
				to := g.index[l.dst.DPID]
				if reached[to] || !g.has[link{l.dst, l.src}] {
					continue
				}
				reached[to] = true
				onTree[l.src], onTree[l.dst] = true, true
				queue = append(queue, to)
			}
		}
	}
	return onTree
}
