package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

func countSlots(t SlotTable) map[uint32]int {
	n := map[uint32]int{}
	for _, num := range t {
		n[num]++
	}
	return n
}

func moved(a, b SlotTable) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func TestAssignSlots(t *testing.T) {
	three := []SlotMember{{1, 1}, {2, 1}, {3, 1}}
	tests := []struct {
		name    string
		members []SlotMember
		want    map[uint32]int
	}{
		{"Equal", three, map[uint32]int{1: 86, 2: 85, 3: 85}},
		{"Weighted", []SlotMember{{1, 3}, {2, 1}}, map[uint32]int{1: 192, 2: 64}},
		{"TinyWeightStillReachable", []SlotMember{{1, 1024}, {2, 1}}, map[uint32]int{1: 255, 2: 1}},
		{"None", nil, map[uint32]int{0: GroupSlots}},
		{"AllZeroWeight", []SlotMember{{1, 0}}, map[uint32]int{0: GroupSlots}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := countSlots(AssignSlots(SlotTable{}, tt.members))
			if len(got) != len(tt.want) {
				t.Fatalf("slots %v, want %v", got, tt.want)
			}
			for num, n := range tt.want {
				if got[num] != n {
					t.Errorf("slots %v, want %v", got, tt.want)
				}
			}
		})
	}
	t.Run("MoreMembersThanSlots", func(t *testing.T) {
		var many []SlotMember
		for i := range GroupSlots + 6 {
			many = append(many, SlotMember{uint32(i + 1), 1})
		}
		got := countSlots(AssignSlots(SlotTable{}, many))
		if got[0] != 0 || len(got) != GroupSlots {
			t.Errorf("%d members own slots, %d slots are free; want %d members, none free", len(got), got[0], GroupSlots)
		}
	})
}

// A change of members moves only the slots it must: those of a member
// that left, or the share a new member takes.
func TestAssignSlots_MinimalMoves(t *testing.T) {
	three := []SlotMember{{1, 1}, {2, 1}, {3, 1}}
	before := AssignSlots(SlotTable{}, three)
	t.Run("MemberLeaves", func(t *testing.T) {
		after := AssignSlots(before, []SlotMember{{1, 1}, {3, 1}})
		for i := range before {
			if before[i] != 2 && after[i] != before[i] {
				t.Fatalf("slot %d moved from member %d, which stayed", i, before[i])
			}
		}
		if n := countSlots(after); n[1] != GroupSlots/2 || n[3] != GroupSlots/2 {
			t.Errorf("after member 2 left: %v", n)
		}
	})
	t.Run("MemberJoins", func(t *testing.T) {
		after := AssignSlots(before, append(three, SlotMember{4, 1}))
		if m := moved(before, after); m != countSlots(after)[4] || m != GroupSlots/4 {
			t.Errorf("%d slots moved for a new member that owns %d; want %d and only those", m, countSlots(after)[4], GroupSlots/4)
		}
	})
	t.Run("Unchanged", func(t *testing.T) {
		if m := moved(before, AssignSlots(before, three)); m != 0 {
			t.Errorf("%d slots moved with no change", m)
		}
	})
	t.Run("WeightDoubles", func(t *testing.T) {
		after := AssignSlots(before, []SlotMember{{1, 2}, {2, 1}, {3, 1}})
		if n := countSlots(after); n[1] != GroupSlots/2 || moved(before, after) != 42 {
			t.Errorf("after member 1's weight doubled: %v, %d moved; want %d slots for member 1, 42 moved", n, moved(before, after), GroupSlots/2)
		}
	})
}

// Every member's share of the slots is within 1/256 of its weight's share,
// for pools of weights 1 to 100 (the share is what the switch's hash gives
// the member's new connections).
func TestAssignSlots_SharesFollowWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	worst := 0.0
	for range 1000 {
		members := make([]SlotMember, 2+r.IntN(30))
		total := 0
		for i := range members {
			members[i] = SlotMember{uint32(i + 1), 1 + r.IntN(100)}
			total += members[i].Weight
		}
		got := countSlots(AssignSlots(SlotTable{}, members))
		for _, m := range members {
			diff := math.Abs(float64(got[m.Num])/GroupSlots - float64(m.Weight)/float64(total))
			worst = max(worst, diff)
			if diff > 1.0/GroupSlots {
				t.Fatalf("weights %v: member %d (weight %d) owns %d slots, %.2f%% against its weight's %.2f%%",
					members, m.Num, m.Weight, got[m.Num], 100*float64(got[m.Num])/GroupSlots, 100*float64(m.Weight)/float64(total))
			}
		}
	}
	t.Logf("the largest gap between a member's slots and its weight's share: %.2f percentage points", 100*worst)
}
