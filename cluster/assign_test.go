package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/cluster"
)

// everyone has each switch connected to every node.
func everyone(switches int, nodes ...string) map[string][]string {
	out := map[string][]string{}
	for i := 1; i <= switches; i++ {
		out[fmt.Sprintf("s%d", i)] = nodes
	}
	return out
}

// owners writes an assignment as "dpid:node" pairs.
func owners(ms []sdnlb.SwitchMaster) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, m.DPID+":"+m.Node)
	}
	return strings.Join(parts, " ")
}

// counts is how many switches each node masters.
func counts(ms []sdnlb.SwitchMaster) map[string]int {
	out := map[string]int{}
	for _, m := range ms {
		out[m.Node]++
	}
	return out
}

// moved lists the switches whose master or generation differs.
func moved(from, to []sdnlb.SwitchMaster) []string {
	was := map[string]sdnlb.SwitchMaster{}
	for _, m := range from {
		was[m.DPID] = m
	}
	var out []string
	for _, m := range to {
		if was[m.DPID] != m {
			out = append(out, m.DPID)
		}
	}
	return out
}

const floor = 7 << 32

func TestAssign(t *testing.T) {
	t.Run("Spread", func(t *testing.T) {
		// New switches go to the node with the fewest, the smaller id on
		// a tie, each with a new generation above the floor.
		got := cluster.Assign(everyone(5, "a", "b", "c"), nil, floor, 4)
		if want := "s1:a s2:b s3:c s4:a s5:b"; owners(got) != want {
			t.Fatalf("assignment %q, want %q", owners(got), want)
		}
		for i, m := range got {
			if m.Generation != floor+uint64(i)+1 {
				t.Errorf("%s: generation %d, want %d", m.DPID, m.Generation, floor+uint64(i)+1)
			}
		}
	})
	t.Run("Stable", func(t *testing.T) {
		// An assignment whose masters are all connected is kept as it is,
		// whatever order the nodes come in: a new leader changes nothing.
		first := cluster.Assign(everyone(6, "a", "b", "c"), nil, floor, 4)
		again := cluster.Assign(everyone(6, "c", "b", "a"), first, floor+100, 4)
		if !slices.Equal(first, again) {
			t.Fatalf("reassigned %v as %v", first, again)
		}
		// Nor does it even counts that differ by one.
		uneven := []sdnlb.SwitchMaster{{DPID: "s1", Node: "a", Generation: 1}, {DPID: "s2", Node: "a", Generation: 2}, {DPID: "s3", Node: "b", Generation: 3}}
		if got := cluster.Assign(everyone(3, "a", "b"), uneven, floor, 4); !slices.Equal(got, uneven) {
			t.Fatalf("moved %v for a difference of one: %v", moved(uneven, got), got)
		}
	})
	t.Run("NodeGone", func(t *testing.T) {
		// b dies: its switches go to the nodes left, the fewest first;
		// the others keep their master and generation.
		current := cluster.Assign(everyone(6, "a", "b", "c"), nil, floor, 4)
		got := cluster.Assign(everyone(6, "a", "c"), current, floor, 4)
		if want := "s1:a s2:a s3:c s4:a s5:c s6:c"; owners(got) != want {
			t.Fatalf("assignment %q, want %q", owners(got), want)
		}
		if m := moved(current, got); !slices.Equal(m, []string{"s2", "s5"}) {
			t.Fatalf("changed %v, want only b's s2 and s5", m)
		}
		top := current[len(current)-1].Generation
		for _, m := range got {
			if (m.DPID == "s2" || m.DPID == "s5") && m.Generation <= top {
				t.Errorf("%s moved with generation %d, not above %d", m.DPID, m.Generation, top)
			}
		}
		// The last node standing masters all.
		if got := cluster.Assign(everyone(6, "c"), got, floor, 4); counts(got)["c"] != 6 {
			t.Fatalf("c alone: %q", owners(got))
		}
	})
	t.Run("NodeJoins", func(t *testing.T) {
		// b joins a, which masters every switch: switches move only while
		// that evens the counts, at most maxMoves a round.
		current := cluster.Assign(everyone(5, "a"), nil, floor, 4)
		both := everyone(5, "a", "b")
		one := cluster.Assign(both, current, floor, 1)
		if c := counts(one); c["a"] != 4 || c["b"] != 1 || len(moved(current, one)) != 1 {
			t.Fatalf("one move: %q", owners(one))
		}
		two := cluster.Assign(both, one, floor, 1)
		if c := counts(two); c["a"] != 3 || c["b"] != 2 || len(moved(one, two)) != 1 {
			t.Fatalf("second move: %q", owners(two))
		}
		if three := cluster.Assign(both, two, floor, 4); !slices.Equal(three, two) {
			t.Fatalf("moved %v once the counts were even", moved(two, three))
		}
		// All at once, as many moves as it takes and no more.
		all := cluster.Assign(both, current, floor, 100)
		if c := counts(all); c["a"] != 3 || c["b"] != 2 || len(moved(current, all)) != 2 {
			t.Fatalf("unlimited moves: %q", owners(all))
		}
	})
	t.Run("NotConnected", func(t *testing.T) {
		// A switch no live node is connected to has no master, even if it
		// had one; a switch goes only to a node connected to it.
		connected := map[string][]string{"s1": {"a"}, "s2": nil, "s3": {"b"}, "s4": {"b"}}
		current := []sdnlb.SwitchMaster{{DPID: "s2", Node: "a", Generation: 1}, {DPID: "s9", Node: "b", Generation: 2}}
		got := cluster.Assign(connected, current, floor, 4)
		if want := "s1:a s3:b s4:b"; owners(got) != want {
			t.Fatalf("assignment %q, want %q", owners(got), want)
		}
		if got[0].Generation <= floor {
			t.Errorf("generation %d, want above the floor %d", got[0].Generation, floor)
		}
	})
	t.Run("GenerationAboveCurrent", func(t *testing.T) {
		// A generation above the floor in the current assignment (an
		// earlier round of the term) raises every new one above it.
		current := []sdnlb.SwitchMaster{{DPID: "s1", Node: "gone", Generation: floor + 40}}
		got := cluster.Assign(everyone(2, "a"), current, floor, 4)
		if got[0].Generation != floor+41 || got[1].Generation != floor+42 {
			t.Fatalf("generations %d %d, want %d and %d", got[0].Generation, got[1].Generation, floor+41, floor+42)
		}
	})
}

// Switches one fabric spans go to one node, and stay with it when
// another comes back.
func TestAssignTogether(t *testing.T) {
	all := everyone(4, "a", "b")
	first := cluster.AssignTogether(all, nil, floor)
	if got := counts(first); got["a"] != 4 {
		t.Fatalf("masters %s, want all on a (the smaller id of two alike)", owners(first))
	}
	// a dies: b takes them all.
	onlyB := everyone(4, "b")
	second := cluster.AssignTogether(onlyB, first, floor)
	if got := counts(second); got["b"] != 4 {
		t.Fatalf("masters %s after a died, want all on b", owners(second))
	}
	// a is back: b keeps them.
	if third := cluster.AssignTogether(all, second, floor); len(moved(second, third)) != 0 {
		t.Errorf("a's return moved %v", moved(second, third))
	}
	// A switch only a reaches goes to a; the rest stay together on the
	// node that reaches the most.
	mixed := everyone(3, "a", "b")
	mixed["s4"] = []string{"a"}
	got := cluster.AssignTogether(mixed, second, floor)
	if c := counts(got); c["a"] != 4 {
		t.Errorf("masters %s: a reaches every switch, b three; want all on a", owners(got))
	}
}
