package sched

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// slotIDs is HashSlots's table as member ids.
func slotIDs(members []Member) []string {
	ids := make([]string, Slots)
	for slot, pos := range HashSlots(members) {
		if pos >= 0 {
			ids[slot] = members[pos].ID
		}
	}
	return ids
}

// The table depends on the members' ids and weights, not on their order.
func TestHashSlots_OrderFree(t *testing.T) {
	members := uuidMembers(9, 1)
	members[2].Weight = 3
	a := slotIDs(members)
	reordered := slices.Clone(members)
	slices.Reverse(reordered)
	if b := slotIDs(reordered); !slices.Equal(a, b) {
		t.Fatal("the members' order changed the table")
	}
}

// Each member owns its weight's share of the slots within two slots (one,
// unless a member too light for a slot of its own took one), far inside
// the 4 slots (1/64) promised, and one slot at least.
func TestHashSlots_SharesFollowWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	worst := 0.0
	for range 200 {
		members := uuidMembers(1+r.IntN(40), 1)
		total := 0
		for i := range members {
			members[i].Weight = 1 + r.IntN(MaxWeight)
			total += members[i].Weight
		}
		count := map[string]int{}
		for _, id := range slotIDs(members) {
			count[id]++
		}
		for _, m := range members {
			exact := float64(Slots*m.Weight) / float64(total)
			got := count[m.ID]
			worst = max(worst, math.Abs(float64(got)-exact))
			if got == 0 || math.Abs(float64(got)-exact) >= 2 {
				t.Fatalf("member of weight %d/%d owns %d slots, want %.2f within two, at least one", m.Weight, total, got, exact)
			}
		}
	}
	t.Logf("200 pools of 1-40 members of weights 1-256: a share at most %.2f slots (1/%.0f) from its weight's", worst, Slots/worst)
}

// When one of ten members leaves, its slots go to the others and a few of
// theirs move besides; a member that joins takes its share and moves few
// others. The fraction is what the clients of a switch or the controller
// see move.
func TestHashSlots_FewMove(t *testing.T) {
	movedAll, ownAll, trials := 0, 0, 0
	for seed := range 20 {
		members := uuidMembers(10, 1)
		for i := range members {
			members[i].ID += string(rune('a' + seed))
		}
		before := slotIDs(members)
		for leave := range members {
			after := slotIDs(slices.Delete(slices.Clone(members), leave, leave+1))
			moved, own := 0, 0
			for slot := range before {
				if before[slot] == members[leave].ID {
					own++
				}
				if before[slot] != after[slot] {
					moved++
				}
				if after[slot] == members[leave].ID || after[slot] == "" {
					t.Fatalf("slot %d is %q after member %s left", slot, after[slot], members[leave].ID)
				}
			}
			if moved > own*3/2+4 {
				t.Errorf("%d slots moved when a member of %d left", moved, own)
			}
			movedAll, ownAll, trials = movedAll+moved, ownAll+own, trials+1
		}
	}
	t.Logf("one of 10 equal members leaving, over %d cases: %.1f %% of the slots move (its own: %.1f %%)",
		trials, 100*float64(movedAll)/float64(trials*Slots), 100*float64(ownAll)/float64(trials*Slots))
	if frac := float64(movedAll) / float64(trials*Slots); frac > 0.15 {
		t.Errorf("%.3f of the slots move on average, want at most 0.15", frac)
	}

	members := uuidMembers(11, 1)
	before, after := slotIDs(members[:10]), slotIDs(members)
	moved := 0
	for slot := range before {
		if before[slot] != after[slot] && after[slot] != members[10].ID {
			moved++
		}
	}
	t.Logf("an 11th member joining: it takes %d slots, %d others move", countID(after, members[10].ID), moved)
	if moved > 12 {
		t.Errorf("%d slots moved between the ten as an 11th joined", moved)
	}
}

func countID(ids []string, id string) (n int) {
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// CONSISTENT_HASH picks the member of the hash's slot.
func TestConsistentHash_PicksTheSlot(t *testing.T) {
	members := uuidMembers(5, 2)
	s := mustNew(t, sdnlb.ConsistentHash, members, nil)
	table := HashSlots(members)
	for h := range uint32(2000) {
		hash := h * 0x9e3779b1
		if got, _ := s.Pick(Key{Hash: hash}); got != members[table[hash%Slots]].Index {
			t.Fatalf("hash %#x: member %d, its slot's is %d", hash, got, table[hash%Slots])
		}
	}
}
