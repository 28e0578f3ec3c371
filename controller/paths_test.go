package controller

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/controller/model"
)

// square is four switches linked in a loop, 1-2-3-4-1, with a chord 1-3:
// each link both ways, port n of switch s leading to switch n.
func square() []linkState {
	var links []linkState
	for _, pair := range [][2]uint64{{1, 2}, {2, 3}, {3, 4}, {4, 1}, {1, 3}} {
		a, b := pair[0], pair[1]
		links = append(links,
			linkState{link: link{src: model.PortRef{DPID: a, Port: uint32(b)}, dst: model.PortRef{DPID: b, Port: uint32(a)}}, both: true},
			linkState{link: link{src: model.PortRef{DPID: b, Port: uint32(a)}, dst: model.PortRef{DPID: a, Port: uint32(b)}}, both: true})
	}
	return links
}

func calm(link) bool { return false }

// follow walks the ports from switch from toward dst and returns the
// switches passed, dst last; it fails on a loop or a dead end.
func follow(t *testing.T, ports map[uint64]uint32, from, dst uint64) []uint64 {
	t.Helper()
	path := []uint64{from}
	for at := from; at != dst; {
		p, ok := ports[at]
		if !ok {
			t.Fatalf("switch %d has no port toward %d (path so far %v)", at, dst, path)
		}
		at = uint64(p) // port n leads to switch n
		if slices.Contains(path, at) {
			t.Fatalf("loop toward %d: %v then %d", dst, path, at)
		}
		path = append(path, at)
	}
	return path
}

func TestGraph_TowardsTakesTheCheapestPath(t *testing.T) {
	g := newGraph([]uint64{1, 2, 3, 4}, square())
	ports := g.towards(3, nil, calm)
	if got := follow(t, ports, 1, 3); !slices.Equal(got, []uint64{1, 3}) {
		t.Errorf("1→3 takes %v, want the chord", got)
	}
	// 2 and 4 are one hop from 3.
	for _, from := range []uint64{2, 4} {
		if got := follow(t, ports, from, 3); len(got) != 2 {
			t.Errorf("%d→3 takes %v, want the direct link", from, got)
		}
	}
	if _, ok := ports[3]; ok {
		t.Errorf("the destination has a port toward itself: %v", ports)
	}

	// The chord busy: 1 goes around, through 2 (the lowest neighbour of
	// the two equal ways).
	busy := func(l link) bool { return l.src == model.PortRef{DPID: 1, Port: 3} }
	ports = g.towards(3, ports, busy)
	if got := follow(t, ports, 1, 3); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("1→3 with the chord busy takes %v, want 1-2-3", got)
	}
	// Of two equal ways, the one used before is kept.
	prev := map[uint64]uint32{1: 4}
	ports = g.towards(3, prev, busy)
	if got := follow(t, ports, 1, 3); !slices.Equal(got, []uint64{1, 4, 3}) {
		t.Errorf("1→3 having gone through 4 takes %v, want it kept", got)
	}
}

func TestGraph_OnlyLinksBothWaysCarryTraffic(t *testing.T) {
	links := square()
	for i := range links {
		if links[i].src == (model.PortRef{DPID: 1, Port: 3}) || links[i].dst == (model.PortRef{DPID: 1, Port: 3}) {
			links[i].both = false // the chord heard only one way
		}
	}
	ports := newGraph([]uint64{1, 2, 3, 4}, links).towards(3, nil, calm)
	if got := follow(t, ports, 1, 3); len(got) != 3 {
		t.Errorf("1→3 takes %v over a link heard one way", got)
	}
}

func TestGraph_PartitionedSwitchesHaveNoPath(t *testing.T) {
	links := []linkState{
		{link: link{src: model.PortRef{DPID: 1, Port: 2}, dst: model.PortRef{DPID: 2, Port: 1}}, both: true},
		{link: link{src: model.PortRef{DPID: 2, Port: 1}, dst: model.PortRef{DPID: 1, Port: 2}}, both: true},
	}
	ports := newGraph([]uint64{1, 2, 3}, links).towards(3, nil, calm)
	if len(ports) != 0 {
		t.Errorf("ports toward an unreachable switch: %v", ports)
	}
}

func TestGraph_TreeSpansWithoutLoops(t *testing.T) {
	tree := newGraph([]uint64{1, 2, 3, 4}, square()).tree()
	// Three links span four switches: six link ends.
	if len(tree) != 6 {
		t.Fatalf("tree ends %v, want 6", slices.Collect(maps.Keys(tree)))
	}
	// Breadth first from 1: its three neighbours hang off it directly.
	for _, end := range []model.PortRef{{DPID: 1, Port: 2}, {DPID: 1, Port: 3}, {DPID: 1, Port: 4}, {DPID: 2, Port: 1}, {DPID: 3, Port: 1}, {DPID: 4, Port: 1}} {
		if !tree[end] {
			t.Errorf("port %v is not on the tree %v", end, tree)
		}
	}
	// Two islands: each gets its own tree.
	links := []linkState{
		{link: link{src: model.PortRef{DPID: 1, Port: 2}, dst: model.PortRef{DPID: 2, Port: 1}}, both: true},
		{link: link{src: model.PortRef{DPID: 2, Port: 1}, dst: model.PortRef{DPID: 1, Port: 2}}, both: true},
		{link: link{src: model.PortRef{DPID: 3, Port: 4}, dst: model.PortRef{DPID: 4, Port: 3}}, both: true},
		{link: link{src: model.PortRef{DPID: 4, Port: 3}, dst: model.PortRef{DPID: 3, Port: 4}}, both: true},
	}
	if got := newGraph([]uint64{1, 2, 3, 4}, links).tree(); len(got) != 4 {
		t.Errorf("two islands' trees %v, want both links", got)
	}
}

func TestLinkLevel_Hysteresis(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var l linkLevel
	if l = l.next(t0, 0.5); l.busy {
		t.Fatal("busy at 0.5")
	}
	if l = l.next(t0, 0.7); !l.busy {
		t.Fatal("not busy at 0.7")
	}
	// Calm again, but within the hold: stays busy.
	if l = l.next(t0.Add(levelHold/2), 0.1); !l.busy {
		t.Fatal("calmed within the hold")
	}
	// Between the thresholds it stays as it is.
	if l = l.next(t0.Add(2*levelHold), 0.4); !l.busy {
		t.Fatal("calmed at 0.4, above calmBelow")
	}
	if l = l.next(t0.Add(3*levelHold), 0.2); l.busy {
		t.Fatal("still busy at 0.2 after the hold")
	}
}
