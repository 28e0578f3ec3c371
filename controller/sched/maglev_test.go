package sched

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// mustMaglev builds a Maglev table and returns it as member IDs, slot by
// slot.
func mustMaglev(tb testing.TB, members []Member) []string {
	tb.Helper()
	s := newMaglev(members, maglevTableSize)
	idByIndex := map[int]string{}
	for _, m := range members {
		idByIndex[m.Index] = m.ID
	}
	ids := make([]string, len(s.table))
	for slot, pos := range s.table {
		ids[slot] = idByIndex[s.index[pos]]
	}
	return ids
}

// uuidMembers returns n members with realistic ids and the given weight.
func uuidMembers(n, weight int) []Member {
	ms := make([]Member, n)
	for i := range ms {
		ms[i] = Member{Index: i, ID: fmt.Sprintf("%08x-7d1c-4f0e-9a55-%012x", i*2654435761, i), Weight: weight}
	}
	return ms
}

func TestMaglev_Deterministic(t *testing.T) {
	members := uuidMembers(9, 1)
	members[2].Weight = 3
	a := mustMaglev(t, members)
	b := mustMaglev(t, members)
	if !slices.Equal(a, b) {
		t.Fatal("two builds from the same input differ")
	}
	reordered := slices.Clone(members)
	slices.Reverse(reordered)
	for i := range reordered {
		reordered[i].Index = 100 + i
	}
	if c := mustMaglev(t, reordered); !slices.Equal(a, c) {
		t.Fatal("the caller's member order changed the table")
	}
}

func TestMaglev_Weights(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
	}{
		{"Equal/3", []int{1, 1, 1}},
		{"Equal/10", []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}},
		{"OneToFour", []int{1, 2, 3, 4}},
		{"Skewed", []int{256, 1, 16, 64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := uuidMembers(len(tt.weights), 1)
			total := 0
			for i, w := range tt.weights {
				members[i].Weight = w
				total += w
			}
			ids := mustMaglev(t, members)
			if len(ids) != maglevTableSize {
				t.Fatalf("table has %d slots, want %d", len(ids), maglevTableSize)
			}
			slots := map[string]int{}
			for _, id := range ids {
				slots[id]++
			}
			for _, m := range members {
				share := float64(slots[m.ID]) / float64(maglevTableSize)
				want := float64(m.Weight) / float64(total)
				if share < want*0.97-0.001 || share > want*1.03+0.001 {
					t.Errorf("member weight %d holds %.4f of the table, want %.4f ± 3 %%", m.Weight, share, want)
				}
			}
		})
	}
}

// TestMaglev_MinimalDisruption removes one member and counts the slots that
// change owner: the removed member's own, about 1/N, must move; Maglev
// moves a few others too, and the paper's figures keep that small.
func TestMaglev_MinimalDisruption(t *testing.T) {
	tests := []struct {
		name   string
		n      int
		weight int
		remove int
	}{
		{"N5", 5, 1, 2},
		{"N10", 10, 1, 7},
		{"N50", 50, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := uuidMembers(tt.n, tt.weight)
			before := mustMaglev(t, members)
			gone := members[tt.remove].ID
			after := mustMaglev(t, slices.Delete(slices.Clone(members), tt.remove, tt.remove+1))
			moved, ofGone := 0, 0
			for slot := range before {
				if before[slot] == gone {
					ofGone++
				}
				if before[slot] != after[slot] {
					moved++
				}
				if after[slot] == gone {
					t.Fatalf("slot %d still points at the removed member", slot)
				}
			}
			frac := float64(moved) / float64(len(before))
			minimal := float64(ofGone) / float64(len(before))
			t.Logf("moved %.4f of keys, the removed member held %.4f", frac, minimal)
			if frac > 1/float64(tt.n)+0.03 {
				t.Errorf("%.4f of keys moved, want at most 1/%d + 0.03", frac, tt.n)
			}
		})
	}
}

// TestMaglev_AddMember checks the reverse: a new member takes about its
// share and the others keep the rest.
func TestMaglev_AddMember(t *testing.T) {
	members := uuidMembers(11, 1)
	before := mustMaglev(t, members[:10])
	after := mustMaglev(t, members)
	moved := 0
	for slot := range before {
		if before[slot] != after[slot] {
			moved++
		}
	}
	if frac := float64(moved) / float64(len(before)); frac > 1.0/11+0.03 {
		t.Errorf("%.4f of keys moved adding 1 to 10 members, want at most 1/11 + 0.03", frac)
	}
}

// TestMaglev_PicksByHash checks that a pool of more members than slots
// picks by Maglev over the hash: every member takes keys, and one hash
// one member.
func TestMaglev_PicksByHash(t *testing.T) {
	members := uuidMembers(Slots+4, 1)
	s := mustNew(t, sdnlb.ConsistentHash, members, nil)
	seen := map[int]bool{}
	for h := range uint32(20000) {
		idx, _ := s.Pick(Key{Hash: h * 2654435761})
		seen[idx] = true
	}
	if len(seen) != len(members) {
		t.Errorf("20,000 hashes reached %d members, want all %d", len(seen), len(members))
	}
	first, _ := s.Pick(Key{Hash: 42})
	for range 10 {
		if idx, _ := s.Pick(Key{Hash: 42}); idx != first {
			t.Fatalf("same hash went to %d and %d", first, idx)
		}
	}
}
