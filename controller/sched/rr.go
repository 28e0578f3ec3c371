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

// newWeightedRoundRobin simulates smooth WRR: every step each member's
// current value grows by its weight, the largest (first on ties) is picked
// and loses the total weight. With weights 5,1,1 this gives a a b a c a a.
// Weights are divided by their gcd first: the order is the same and the
// cycle shorter. Building costs O(n · cycle), fine for pools of tens.
func newWeightedRoundRobin(members []Member) *weightedRoundRobin {
	g := 0
	for _, m := range members {
		g = gcd(g, m.Weight)
	}
	weight := make([]int64, len(members))
	index := make([]int, len(members))
	var total int64
	for i, m := range members {
		index[i] = m.Index
		weight[i] = int64(m.Weight / g)
		total += weight[i]
	}
	current := make([]int64, len(members))
	cycle := make([]uint16, total)
	for step := range cycle {
		best := 0
		for i, w := range weight {
			current[i] += w
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		cycle[step] = uint16(best)
	}
	return &weightedRoundRobin{index: index, cycle: cycle}
}

func (s *weightedRoundRobin) Pick(Key) (int, bool) {
	step := (s.next.Add(1) - 1) % uint64(len(s.cycle))
	return s.index[s.cycle[step]], true
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
