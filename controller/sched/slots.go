package sched

import (
	"cmp"
	"slices"

	"github.com/sdnlb/sdnlb"
)

// Slots is how many slots CONSISTENT_HASH spreads connections over: the
// links of the switch's multipath, so that the controller and a switch
// pick from the same table.
const Slots = sdnlb.SwitchSlots

// consistentHash is CONSISTENT_HASH: the connection's slot is its hash
// (Key.Hash, the switch's multipath hash) modulo Slots, as the switch's
// modulo_n takes it, and the slot's member is HashSlots's. A pool of more
// members than slots, which only the controller dispatches, picks by
// Maglev over the same hash instead, so that every member takes its part.
type consistentHash struct {
	index  []int // caller indexes, by the positions slots holds
	slots  [Slots]uint16
	maglev *maglev // more members than slots
}

func newConsistentHash(members []Member) *consistentHash {
	if len(members) > Slots {
		return &consistentHash{maglev: newMaglev(members, maglevTableSize)}
	}
	c := &consistentHash{index: indexesOf(members)}
	for slot, pos := range HashSlots(members) {
		c.slots[slot] = uint16(pos)
	}
	return c
}

func (c *consistentHash) Pick(k Key) (int, bool) {
	if c.maglev != nil {
		return c.maglev.Pick(k)
	}
	return c.index[c.slots[k.Hash%Slots]], true
}

// HashSlots gives each slot a member, as positions in members: each
// member owns slots in proportion to its weight (largest remainder,
// within one slot, at least one each while they fit), and which slots a
// member owns depends only on the members' ids and weights, never on
// their order or on an earlier table, so every node, a restarted
// controller and every switch compute the same. Within those shares each
// slot goes to the member that ranks it highest by a hash of the member's
// id and the slot (a stable matching, rendezvous hashing with
// capacities): when a member leaves, its slots go to the others and the
// others' shares grow, which moves a few of their slots besides (about a
// third of the leaver's count, ten members alike). Slots no member has
// room for (no member of positive weight) hold -1.
func HashSlots(members []Member) [Slots]int {
	quota := slotQuotas(members)
	type rank struct {
		score uint64
		slot  int
		pos   int
	}
	ranks := make([]rank, 0, Slots*len(members))
	for pos, m := range members {
		if quota[pos] == 0 {
			continue
		}
		base := hashID(saltSlots, m.ID)
		for slot := range Slots {
			ranks = append(ranks, rank{mix64(base ^ uint64(slot)*0x9e3779b97f4a7c15), slot, pos})
		}
	}
	slices.SortFunc(ranks, func(a, b rank) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.slot, b.slot); c != 0 {
			return c
		}
		return cmp.Compare(members[a.pos].ID, members[b.pos].ID)
	})
	var table [Slots]int
	for i := range table {
		table[i] = -1
	}
	owned := make([]int, len(members))
	for _, r := range ranks {
		if table[r.slot] == -1 && owned[r.pos] < quota[r.pos] {
			table[r.slot] = r.pos
			owned[r.pos]++
		}
	}
	return table
}

// saltSlots salts the ids' hashes for HashSlots.
const saltSlots = 0x736c6f74732d6368 // "slots-ch"

// slotQuotas shares the slots among members by weight, largest remainder
// first (the larger id first among equals), each member of positive
// weight one slot at least; a member past the slots, by weight then id,
// gets none.
func slotQuotas(members []Member) []int {
	quota := make([]int, len(members))
	total := 0
	for _, m := range members {
		total += max(m.Weight, 0)
	}
	if total == 0 {
		return quota
	}
	order := make([]int, len(members)) // by remainder, largest first
	given := 0
	for pos, m := range members {
		quota[pos] = Slots * max(m.Weight, 0) / total
		given += quota[pos]
		order[pos] = pos
	}
	remainder := func(pos int) int { return Slots * max(members[pos].Weight, 0) % total }
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(remainder(b), remainder(a)); c != 0 {
			return c
		}
		return cmp.Compare(members[b].ID, members[a].ID)
	})
	for _, pos := range order {
		if given == Slots {
			break
		}
		quota[pos]++
		given++
	}
	// Every member of positive weight gets a slot, taken from the member
	// furthest above its share; past Slots members, the lightest (then
	// the last by id) none.
	excess := func(pos int) int { return quota[pos]*total - Slots*max(members[pos].Weight, 0) }
	byWeight := slices.Clone(order)
	slices.SortStableFunc(byWeight, func(a, b int) int { return cmp.Compare(members[b].Weight, members[a].Weight) })
	for i, pos := range byWeight {
		if i >= Slots || members[pos].Weight <= 0 || quota[pos] > 0 {
			continue
		}
		giver := -1
		for _, p := range byWeight {
			if quota[p] > 1 && (giver < 0 || excess(p) > excess(giver)) {
				giver = p
			}
		}
		if giver < 0 {
			break
		}
		quota[giver]--
		quota[pos]++
	}
	return quota
}
