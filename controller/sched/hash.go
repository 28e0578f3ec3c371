package sched

import (
	"cmp"
	"slices"
)

// sourceIP maps a client address to a member with a hash mod n. Members are
// ordered by ID, so the mapping depends on the member set only, not on the
// order the caller lists them in; it changes for most clients whenever the
// set changes (CONSISTENT_HASH is the method that limits that).
type sourceIP struct {
	index []int // caller indexes in ID order
}

func newSourceIP(members []Member) sourceIP {
	return sourceIP{index: indexesOf(sortedByID(members))}
}

// sortedByID returns a copy of members in ID order, the order the hashing
// methods use so that their mapping ignores the caller's order.
func sortedByID(members []Member) []Member {
	return slices.SortedFunc(slices.Values(members), func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
}

func (s sourceIP) Pick(k Key) (int, bool) {
	return s.index[mix64(uint64(k.ClientIP))%uint64(len(s.index))], true
}

// mix64 is the splitmix64 finalizer: every input bit flips about half of the
// output bits, so neighbouring addresses land on unrelated members.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// hashID is 64-bit FNV-1a of s, salted through the offset basis and mixed,
// so different salts give independent hashes of the same id.
func hashID(salt uint64, s string) uint64 {
	h := uint64(0xcbf29ce484222325) ^ salt
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 0x100000001b3
	}
	return mix64(h)
}
