package sched

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sdnlb/sdnlb"
)

// needsLoad reports whether the method reads Load at pick time.
func needsLoad(method sdnlb.LBMethod) bool {
	switch method {
	case sdnlb.LeastConnections, sdnlb.WeightedLeastConnections, sdnlb.LeastBytes:
		return true
	}
	return false
}

// Limits on the input New accepts.
const (
	MinWeight  = 1
	MaxWeight  = sdnlb.MaxWeight
	MaxMembers = 1 << 16 // member positions are stored as uint16 in WRR and Maglev tables
)

// Errors New returns, wrapped with details; test them with errors.Is.
var (
	ErrUnknownMethod = errors.New("unknown scheduling method")
	ErrInvalidMember = errors.New("invalid member")
	ErrNoLoad        = errors.New("method needs a Load")
)

// Member is one eligible pool member as the scheduler sees it.
type Member struct {
	Index  int    // position in the caller's slice; Pick returns it
	ID     string // stable, unique member id; the hash input of CONSISTENT_HASH and the order of SOURCE_IP
	Weight int    // MinWeight..MaxWeight
}

// Load is read at pick time by the load-aware methods. The controller
// implements it with atomics it updates on flow install, flow-removed and
// stats replies. index is Member.Index. It must be safe for concurrent use.
type Load interface {
	ActiveConns(index int) int64
	Bytes(index int) uint64
}

// Key describes the new connection being scheduled.
type Key struct {
	ClientIP   uint32 // an IPv4 address in host byte order, or a digest of an IPv6 one
	ClientPort uint16
	Proto      uint8 // IP protocol number
	// Hash is the switch's multipath hash of the packet by the pool's hash
	// key (controller/flowhash), which CONSISTENT_HASH picks by.
	Hash uint32
}

// Scheduler picks a member for a new connection. Pick is safe for
// concurrent use and allocates nothing. ok is false when there is no member.
type Scheduler interface {
	Pick(k Key) (index int, ok bool)
}

const (
	// maglevTableSize is the lookup table size of CONSISTENT_HASH over
	// more members than Slots: a prime, as Maglev's permutations need,
	// above MaxMembers so that every member gets a slot, and 100 times the
	// members of pools up to 655, which Maglev suggests for an even spread.
	maglevTableSize = 65537
)

// New builds the scheduler of method for members, which must be the pool's
// eligible members (admin up, weight > 0, healthy). New copies what it needs,
// so members may be reused after it returns. load may be nil for methods
// that do not read it. With no members every method returns a scheduler
// whose Pick reports ok=false.
func New(method sdnlb.LBMethod, members []Member, load Load) (Scheduler, error) {
	if !sdnlb.ValidLBMethod(method) {
		return nil, fmt.Errorf("sched: %w %q", ErrUnknownMethod, method)
	}
	if load == nil && needsLoad(method) {
		return nil, fmt.Errorf("sched: %s: %w", method, ErrNoLoad)
	}
	if err := validateMembers(members); err != nil {
		return nil, err
	}
	if len(members) == 0 {
		return empty{}, nil
	}
	switch method {
	case sdnlb.RoundRobin:
		return newRoundRobin(members), nil
	case sdnlb.WeightedRoundRobin, sdnlb.Adaptive:
		return newWeightedRoundRobin(members), nil
	case sdnlb.LeastConnections:
		return &leastConns{ring: newRing(members), load: load}, nil
	case sdnlb.WeightedLeastConnections:
		return newWeightedLeastConns(members, load), nil
	case sdnlb.Random:
		return newRandom(members, nil), nil
	case sdnlb.LeastBytes:
		return &leastBytes{ring: newRing(members), load: load}, nil
	case sdnlb.SourceIP:
		return newSourceIP(members), nil
	default: // ConsistentHash: ValidLBMethod has ruled out anything else
		return newConsistentHash(members), nil
	}
}

func validateMembers(members []Member) error {
	if len(members) > MaxMembers {
		return fmt.Errorf("sched: %w: %d members, at most %d", ErrInvalidMember, len(members), MaxMembers)
	}
	seen := make(map[string]struct{}, len(members))
	for i, m := range members {
		switch {
		case m.Index < 0:
			return fmt.Errorf("sched: %w: member %d: negative index %d", ErrInvalidMember, i, m.Index)
		case m.Weight < MinWeight || m.Weight > MaxWeight:
			return fmt.Errorf("sched: %w: member %q: weight %d not in [%d, %d]", ErrInvalidMember, m.ID, m.Weight, MinWeight, MaxWeight)
		case m.ID == "":
			return fmt.Errorf("sched: %w: member %d: empty id", ErrInvalidMember, i)
		}
		if _, dup := seen[m.ID]; dup {
			return fmt.Errorf("sched: %w: duplicate id %q", ErrInvalidMember, m.ID)
		}
		seen[m.ID] = struct{}{}
	}
	return nil
}

// Continue makes s take its turns on from where prev left off. A pool's
// scheduler is rebuilt whenever its members change; starting each new one
// at the first member would give the first members an extra connection
// per change, which a flapping member turns into a steady bias. Methods
// without turns (hashes, random) ignore it.
func Continue(s, prev Scheduler) {
	next, ok := s.(turnTaker)
	last, ok2 := prev.(turnTaker)
	if ok && ok2 {
		next.setTurn(last.turn())
	}
}

// turnTaker is a scheduler that counts its picks: the round robins and the
// load-aware scans, whose ties go to the member whose turn it is.
type turnTaker interface {
	turn() uint64
	setTurn(uint64)
}

// empty is the scheduler of a pool with no eligible member.
type empty struct{}

func (empty) Pick(Key) (int, bool) { return 0, false }

// ring holds the caller's indexes and a shared pick counter. RR uses the
// counter directly; the scanning methods start each scan at the next
// position so ties spread over the tied members instead of piling onto the
// first one during a burst of new connections before the load catches up.
type ring struct {
	index []int
	next  atomic.Uint64
}

func newRing(members []Member) *ring { return &ring{index: indexesOf(members)} }

// indexesOf returns the members' caller indexes, in the members' order.
func indexesOf(members []Member) []int {
	index := make([]int, len(members))
	for i, m := range members {
		index[i] = m.Index
	}
	return index
}

// start returns the position of this pick's turn, 0 first.
func (r *ring) start() int {
	return int((r.next.Add(1) - 1) % uint64(len(r.index)))
}

func (r *ring) turn() uint64     { return r.next.Load() }
func (r *ring) setTurn(t uint64) { r.next.Store(t) }

// following returns the position after i, back to 0 after the last.
func (r *ring) following(i int) int {
	if i++; i == len(r.index) {
		return 0
	}
	return i
}

// maxConns bounds the load a scheduler trusts, far above any real count, so
// that conns·weight products cannot overflow int64 whatever Load reports.
const maxConns = 1 << 40

// conns reads the active connections of position i, clamped to [0, maxConns].
func conns(load Load, index int) int64 {
	c := load.ActiveConns(index)
	if c < 0 {
		return 0
	}
	return min(c, maxConns)
}
