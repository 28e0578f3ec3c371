package sched

import "sync/atomic"

// roundRobin is LVS rr: members in the caller's order, one after another,
// weights ignored.
type roundRobin struct{ *ring }

func newRoundRobin(members []Member) roundRobin { return roundRobin{newRing(members)} }

func (s roundRobin) Pick(Key) (int, bool) {
	return s.index[s.start()], true
}

// weightedRoundRobin is nginx's smooth weighted round robin, precomputed:
// New runs the algorithm over one full cycle and Pick walks the cycle with
// an atomic counter, so Pick is O(1) and lock-free.
type weightedRoundRobin struct {
	index []int
	cycle []uint16 // positions into index, one cycle of sum(weight)/gcd picks
	next  atomic.Uint64
}

// newWeightedRoundRobin runs smooth WRR over one cycle: every step each
// member's current value grows by its weight, the largest (the first in
// the caller's order on ties) is picked and loses the total weight. With
// weights 5,1,1 this gives a a b a c a a. Weights are divided by their gcd
// first: the order is the same and the cycle shorter.
//
// After step t a member's current value is weight·t − total·picks, so
// among members of equal weight the one picked least often (the first on
// ties) leads: they take turns in order. The simulation therefore tracks
// one candidate per distinct weight, and costs O(cycle · distinct weights)
// rather than O(cycle · members).
func newWeightedRoundRobin(members []Member) *weightedRoundRobin {
	g := 0
	for _, m := range members {
		g = gcd(g, m.Weight)
	}
	s := &weightedRoundRobin{index: indexesOf(members)}
	var groups []wrrGroup
	byWeight := map[int]int{} // reduced weight → position in groups
	var total int64
	for i, m := range members {
		w := m.Weight / g
		total += int64(w)
		gi, ok := byWeight[w]
		if !ok {
			gi = len(groups)
			byWeight[w] = gi
			groups = append(groups, wrrGroup{weight: int64(w)})
		}
		groups[gi].members = append(groups[gi].members, uint16(i))
	}
	s.cycle = make([]uint16, total)
	for step := range s.cycle {
		t := int64(step) + 1
		best, bestCurrent, bestPos := 0, int64(0), uint16(0)
		for gi := range groups {
			gr := &groups[gi]
			size := int64(len(gr.members))
			pos := gr.members[gr.picks%size]
			current := gr.weight*t - total*(gr.picks/size)
			if gi == 0 || current > bestCurrent || current == bestCurrent && pos < bestPos {
				best, bestCurrent, bestPos = gi, current, pos
			}
		}
		groups[best].picks++
		s.cycle[step] = bestPos
	}
	return s
}

// wrrGroup is the members of one weight, in the caller's order.
type wrrGroup struct {
	weight  int64
	members []uint16
	picks   int64 // picks of the group so far; they rotate through members
}

func (s *weightedRoundRobin) Pick(Key) (int, bool) {
	step := (s.next.Add(1) - 1) % uint64(len(s.cycle))
	return s.index[s.cycle[step]], true
}

func (s *weightedRoundRobin) turn() uint64     { return s.next.Load() }
func (s *weightedRoundRobin) setTurn(t uint64) { s.next.Store(t) }

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
