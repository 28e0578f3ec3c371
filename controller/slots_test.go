package controller

import (
	"testing"
)

func countSlots(t slotTable) map[uint32]int {
	n := map[uint32]int{}
	for _, num := range t {
		n[num]++
	}
	return n
}

func moved(a, b slotTable) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func TestAssignSlots(t *testing.T) {
	three := []slotMember{{1, 1}, {2, 1}, {3, 1}}
	tests := []struct {
		name    string
		members []slotMember
		want    map[uint32]int
	}{
		{"Equal", three, map[uint32]int{1: 22, 2: 21, 3: 21}},
		{"Weighted", []slotMember{{1, 3}, {2, 1}}, map[uint32]int{1: 48, 2: 16}},
		{"TinyWeightStillReachable", []slotMember{{1, 256}, {2, 1}}, map[uint32]int{1: 63, 2: 1}},
		{"None", nil, map[uint32]int{0: 64}},
		{"AllZeroWeight", []slotMember{{1, 0}}, map[uint32]int{0: 64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := countSlots(assignSlots(slotTable{}, tt.members))
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
		var many []slotMember
		for i := range 70 {
			many = append(many, slotMember{uint32(i + 1), 1})
		}
		got := countSlots(assignSlots(slotTable{}, many))
		if got[0] != 0 || len(got) != groupSlots {
			t.Errorf("%d members own slots, %d slots are free; want 64 members, none free", len(got), got[0])
		}
	})
}

// A change of members moves only the slots it must: those of a member
// that left, or the share a new member takes.
func TestAssignSlots_MinimalMoves(t *testing.T) {
	three := []slotMember{{1, 1}, {2, 1}, {3, 1}}
	before := assignSlots(slotTable{}, three)
	t.Run("MemberLeaves", func(t *testing.T) {
		after := assignSlots(before, []slotMember{{1, 1}, {3, 1}})
		for i := range before {
			if before[i] != 2 && after[i] != before[i] {
				t.Fatalf("slot %d moved from member %d, which stayed", i, before[i])
			}
		}
		if n := countSlots(after); n[1] != 32 || n[3] != 32 {
			t.Errorf("after member 2 left: %v", n)
		}
	})
	t.Run("MemberJoins", func(t *testing.T) {
		after := assignSlots(before, append(three, slotMember{4, 1}))
		if m := moved(before, after); m != countSlots(after)[4] || m != 16 {
			t.Errorf("%d slots moved for a new member that owns %d; want 16 and only those", m, countSlots(after)[4])
		}
	})
	t.Run("Unchanged", func(t *testing.T) {
		if m := moved(before, assignSlots(before, three)); m != 0 {
			t.Errorf("%d slots moved with no change", m)
		}
	})
	t.Run("WeightDoubles", func(t *testing.T) {
		after := assignSlots(before, []slotMember{{1, 2}, {2, 1}, {3, 1}})
		if n := countSlots(after); n[1] != 32 || moved(before, after) != 10 {
			t.Errorf("after member 1's weight doubled: %v, %d moved; want 32 slots for member 1, 10 moved", n, moved(before, after))
		}
	})
}
