package sched

import (
	"math/bits"
	"math/rand/v2"
)

// random picks a member uniformly, weights ignored. rand.Uint64 draws from
// the runtime's per-thread generator: no lock, no allocation.
type random struct {
	index []int
	draw  func() uint64
}

// newRandom uses draw, or math/rand/v2's global generator when draw is nil;
// tests pass a seeded one (and then must not pick concurrently).
func newRandom(members []Member, draw func() uint64) *random {
	if draw == nil {
		draw = rand.Uint64
	}
	return &random{index: indexesOf(members), draw: draw}
}

func (s *random) Pick(Key) (int, bool) {
	// The high word of draw·n is uniform in [0, n) up to a bias of n/2^64.
	hi, _ := bits.Mul64(s.draw(), uint64(len(s.index)))
	return s.index[hi], true
}
