// Package sched holds the scheduling methods that pick a pool member for a
// new connection. It is pure: no I/O, no logging, no globals it writes.
//
// # Use
//
// The controller builds one Scheduler per pool whenever it builds a new
// configuration snapshot, from the pool's eligible members only (admin up,
// weight > 0, healthy):
//
//	s, err := sched.New(pool.LBMethod, members, load) // members []sched.Member
//	...
//	i, ok := s.Pick(sched.Key{ClientIP: ip, ClientPort: port, Proto: proto})
//	// ok == false: no eligible member; otherwise members[i] (Member.Index == i)
//
// A pool whose members changed gets a new Scheduler; sched.Continue(next,
// prev) makes it take its turns on from the one it replaces, so frequent
// rebuilds do not favour the first members.
//
// New copies what it needs; the Scheduler is immutable apart from its
// internal atomic counters, Pick is safe for concurrent use, allocates
// nothing and never blocks. The method names are the domain's
// (sdnlb.LBMethods), which the store validates lb_method against. New fails
// only on programming errors: an unknown method (ErrUnknownMethod), a bad
// member (ErrInvalidMember: Index < 0, Weight outside 1..256, empty or
// duplicate ID, more than MaxMembers) or a nil Load for a method that reads
// one (ErrNoLoad). An empty member list is not an error: Pick then reports
// ok=false.
//
// Load is read at pick time by LEAST_CONNECTIONS, WEIGHTED_LEAST_CONNECTIONS
// and LEAST_BYTES; the controller implements it with atomics it
// updates on flow install, flow-removed and flow-stats replies. Negative
// connection counts are read as 0.
//
// # Methods
//
//   - ROUND_ROBIN (LVS rr): members in the caller's order, weights ignored. O(1).
//   - WEIGHTED_ROUND_ROBIN (LVS wrr, nginx's smooth variant): interleaved and
//     deterministic; weights 5,1,1 give a a b a c a a, repeating. The cycle
//     (sum of weights / their gcd) is precomputed by New in
//     O(cycle · distinct weights): microseconds for tens of members, tens of
//     milliseconds for 1000 members of 256 different weights. Pick is O(1).
//   - LEAST_CONNECTIONS (LVS lc): fewest ActiveConns, weights ignored. O(n).
//   - WEIGHTED_LEAST_CONNECTIONS (LVS wlc): smallest ActiveConns/Weight,
//     compared as c_i·w_j < c_j·w_i. O(n).
//   - RANDOM: uniform, weights ignored, from math/rand/v2's lock-free
//     generator. O(1).
//   - LEAST_BYTES: fewest Bytes carried, weights ignored. O(n).
//   - SOURCE_IP: hash(ClientIP) mod n over the members sorted by ID: stable
//     per client while the member set is unchanged, whatever the caller's
//     order. O(1).
//   - CONSISTENT_HASH: Key.Hash, the switch's multipath hash of the packet
//     by the pool's hash key, modulo the 256 slots of HashSlots (see
//     slots.go), the table a switch that dispatches the pool holds too:
//     members own slots in proportion to their weights, by their ids
//     alone; one of ten members leaving moves its own slots and about a
//     third as many besides. O(1); build O(256·n log). Over 256 members
//     (the controller alone dispatches such a pool), a Maglev table of
//     65537 slots with weights (see maglev.go) over the same hash.
//   - ADAPTIVE: WEIGHTED_ROUND_ROBIN over the weights the controller
//     adapts to the members' load (after Juniper SRX's session
//     distribution) and rebuilds the scheduler with.
//
// The O(n) methods scan every member; that suits pools of tens. Each scan
// starts one position further than the last one and the first strictly
// best member wins, so ties are spread over the tied members (round robin
// when all are tied, deterministic for a given pick count) instead of all
// going to the first member while the load counters lag behind a burst of
// new connections.
package sched
