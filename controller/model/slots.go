package model

import (
	"cmp"
	"slices"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/sched"
)

// GroupSlots is how many buckets the select group of a SWITCH pool has.
// Open vSwitch selects a bucket by the datapath's hash (dp_hash, no upcall
// per connection) when the bucket weights fit 256 hash values (3.1's
// MAX_SELECT_GROUP_HASH_VALUES), so every bucket has weight 1 and a member
// owns buckets in proportion to its weight: within 1/256 of its weight's
// share, and up to 256 members. A bucket is a slot of the hash space: a
// change of members reassigns only the slots it must, so the new
// connections of clients hashed to other slots keep their member.
const GroupSlots = sdnlb.SwitchSlots

// SlotMember is a member that can own slots: its number and weight.
type SlotMember struct {
	Num    uint32
	Weight int
}

// SlotTable says which member number owns each slot; 0 is no member.
type SlotTable [GroupSlots]uint32

// AssignSlots gives every member a share of the slots in proportion to
// its weight (largest remainder, at least one slot each while there are
// slots to give) and keeps every slot of prev whose owner is still
// within its share. Members beyond the 256th by weight get no slot. Ties
// go to the member listed first: list them in an order that outlives the
// process (by id), so a restarted controller assigns as its predecessor.
func AssignSlots(prev SlotTable, members []SlotMember) SlotTable {
	quota := slotQuotas(members)
	var next SlotTable
	owned := map[uint32]int{}
	for i, num := range prev {
		if num != 0 && owned[num] < quota[num] {
			next[i] = num
			owned[num]++
		}
	}
	// Free slots go to the members furthest below their share, the first
	// listed among equals, so the result depends on nothing else.
	for i := range next {
		if next[i] != 0 {
			continue
		}
		var best uint32
		bestDeficit := 0
		for _, m := range members {
			if d := quota[m.Num] - owned[m.Num]; d > bestDeficit {
				best, bestDeficit = m.Num, d
			}
		}
		if best == 0 {
			break
		}
		next[i] = best
		owned[best]++
	}
	return next
}

// HashSlots is CONSISTENT_HASH's assignment of the slots to members of
// p (sched.HashSlots): by the members' ids and weights alone, so that a
// switch holds the table the controller's scheduler picks from when every
// member of the rotation is ready, and a change of members moves few
// slots.
func HashSlots(p *Pool, members []SlotMember) SlotTable {
	sm := make([]sched.Member, len(members))
	for i, m := range members {
		sm[i] = sched.Member{Index: i, ID: p.ByNum[m.Num].ID, Weight: m.Weight}
	}
	var t SlotTable
	for slot, pos := range sched.HashSlots(sm) {
		if pos >= 0 {
			t[slot] = members[pos].Num
		}
	}
	return t
}

// slotQuotas shares the slots by weight with the largest remainder
// method; a member of positive weight gets at least one slot while the
// members fit.
func slotQuotas(members []SlotMember) map[uint32]int {
	quota := make(map[uint32]int, len(members))
	total := 0
	for _, m := range members {
		total += max(m.Weight, 0)
	}
	if total == 0 {
		return quota
	}
	type share struct {
		num       uint32
		remainder int
		raised    bool // given one slot above its share, to be reachable
	}
	shares := make([]share, 0, len(members))
	given := 0
	for _, m := range members {
		exact := GroupSlots * max(m.Weight, 0)
		q := exact / total
		raised := q == 0 && m.Weight > 0
		if raised {
			q = 1 // every member in rotation is reachable
		}
		quota[m.Num] = q
		given += q
		shares = append(shares, share{m.Num, exact % total, raised})
	}
	// Hand out what is left to the largest remainders of the members not
	// raised already; take back from the smallest when the minimum of one
	// overshot, from raised members last.
	slices.SortStableFunc(shares, func(a, b share) int { return cmp.Compare(b.remainder, a.remainder) })
	for i := 0; given < GroupSlots && i < len(shares); i++ {
		if !shares[i].raised {
			quota[shares[i].num]++
			given++
		}
	}
	for _, takeRaised := range []bool{false, true} {
		for i := len(shares) - 1; given > GroupSlots && i >= 0; i-- {
			if shares[i].raised == takeRaised && quota[shares[i].num] > 0 {
				quota[shares[i].num]--
				given--
			}
		}
	}
	return quota
}
