package sched

// The load-aware methods scan all members on every pick: O(n), fine for
// pools of tens. Each scan starts at the ring's next position and keeps the
// first strictly better member, so ties are spread deterministically.

// leastConns is LVS lc: fewest active connections, weights ignored.
type leastConns struct {
	*ring
	load Load
}

func (s *leastConns) Pick(Key) (int, bool) {
	i := s.start()
	best, bestConns := i, conns(s.load, s.index[i])
	for range len(s.index) - 1 {
		i = s.following(i)
		if c := conns(s.load, s.index[i]); c < bestConns {
			best, bestConns = i, c
		}
	}
	return s.index[best], true
}

// weightedLeastConns is LVS wlc: fewest active connections per unit of
// weight. c_i/w_i < c_j/w_j is compared as c_i·w_j < c_j·w_i, exact in
// integers.
type weightedLeastConns struct {
	*ring
	weight []int64
	load   Load
}

func newWeightedLeastConns(members []Member, load Load) *weightedLeastConns {
	s := &weightedLeastConns{ring: newRing(members), weight: make([]int64, len(members)), load: load}
	for i, m := range members {
		s.weight[i] = int64(m.Weight)
	}
	return s
}

func (s *weightedLeastConns) Pick(Key) (int, bool) {
	i := s.start()
	best, bestConns := i, conns(s.load, s.index[i])
	for range len(s.index) - 1 {
		i = s.following(i)
		if c := conns(s.load, s.index[i]); c*s.weight[best] < bestConns*s.weight[i] {
			best, bestConns = i, c
		}
	}
	return s.index[best], true
}

// leastBytes picks the member that has carried the fewest bytes, as the flow
// stats report them; weights ignored.
type leastBytes struct {
	*ring
	load Load
}

func (s *leastBytes) Pick(Key) (int, bool) {
	i := s.start()
	best, bestBytes := i, s.load.Bytes(s.index[i])
	for range len(s.index) - 1 {
		i = s.following(i)
		if b := s.load.Bytes(s.index[i]); b < bestBytes {
			best, bestBytes = i, b
		}
	}
	return s.index[best], true
}
