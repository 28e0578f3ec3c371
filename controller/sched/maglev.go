package sched

// maglev is the Maglev lookup table (Eisenbud et al., NSDI '16, §3.4) with
// weights. Each member has a permutation of the M slots,
//
//	offset = h1(id) mod M,  skip = h2(id) mod (M−1) + 1,  slot_j = (offset + j·skip) mod M,
//
// a full cycle because M is prime. Members take turns claiming their next
// free preferred slot until the table is full. For weights, every round
// each member earns its weight in credit and takes a turn when its credit
// reaches the largest weight, so turns, and hence slots, are proportional
// to weight. When a member leaves, the others keep most of their slots:
// about 1/N of the keys move, plus a small margin.
//
// Pick takes the key's Hash, the switch's hash of the packet by the
// pool's hash key.
type maglev struct {
	index []int    // caller indexes in ID order
	table []uint16 // slot → position in index
}

// Salts of the two member-id hashes.
const (
	saltOffset = 0x6d61676c65762d6f // "maglev-o"
	saltSkip   = 0x6d61676c65762d73 // "maglev-s"
)

func newMaglev(members []Member, size int) *maglev {
	byID := sortedByID(members)
	m := uint64(size)
	n := len(byID)
	s := &maglev{index: indexesOf(byID), table: make([]uint16, size)}
	next := make([]uint64, n) // the slot each member tries next
	skip := make([]uint64, n)
	credit := make([]int, n)
	maxWeight := 0
	for i, mb := range byID {
		next[i] = hashID(saltOffset, mb.ID) % m
		skip[i] = hashID(saltSkip, mb.ID)%(m-1) + 1
		maxWeight = max(maxWeight, mb.Weight)
	}
	taken := make([]bool, size)
	for filled := 0; filled < size; {
		for i := 0; i < n && filled < size; i++ {
			credit[i] += byID[i].Weight
			if credit[i] < maxWeight {
				continue
			}
			credit[i] -= maxWeight
			for taken[next[i]] {
				// next, skip < m, so one subtraction replaces a division.
				if next[i] += skip[i]; next[i] >= m {
					next[i] -= m
				}
			}
			taken[next[i]] = true
			s.table[next[i]] = uint16(i)
			filled++
		}
	}
	return s
}

func (s *maglev) Pick(k Key) (int, bool) {
	h := mix64(uint64(k.Hash))
	return s.index[s.table[h%uint64(len(s.table))]], true
}
