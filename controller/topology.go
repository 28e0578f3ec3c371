package controller

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// portRef is one port of one switch.
type portRef struct {
	dpid uint64
	port uint32
}

func comparePortRef(a, b portRef) int {
	return cmp.Or(cmp.Compare(a.dpid, b.dpid), cmp.Compare(a.port, b.port))
}

// link is one direction of a link between two switches: the LLDP frame
// that src sent arrived at dst.
type link struct {
	src, dst portRef
}

// linkState is a discovered link as the topology reports it; both says
// its reverse direction was discovered too.
type linkState struct {
	link
	both bool
}

// topology is the links between the switches, as LLDP discovers them. It
// spans switches, so it is the Controller's, fed by every connection's
// reader; it has its own lock and does no I/O.
type topology struct {
	mu   sync.Mutex
	seen map[link]time.Time // each direction: when its frame last came back
}

func newTopology() *topology { return &topology{seen: map[link]time.Time{}} }

// discovered records that the frame src sent arrived at dst now.
func (t *topology) discovered(now time.Time, src, dst portRef) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[link{src, dst}] = now
}

// expire forgets the links no frame came back on within linkTimeout.
func (t *topology) expire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for l, at := range t.seen {
		if now.Sub(at) > linkTimeout {
			delete(t.seen, l)
		}
	}
}

// portDown forgets, at once, the links of a port that went down or away,
// in both directions.
func (t *topology) portDown(p portRef) {
	t.forget(func(l link) bool { return l.src == p || l.dst == p })
}

// switchGone forgets the links of a switch that disconnected.
func (t *topology) switchGone(dpid uint64) {
	t.forget(func(l link) bool { return l.src.dpid == dpid || l.dst.dpid == dpid })
}

func (t *topology) forget(match func(link) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for l := range t.seen {
		if match(l) {
			delete(t.seen, l)
		}
	}
}

// links returns every direction discovered, paired with its reverse,
// ordered by source and then destination.
func (t *topology) links() []linkState {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]linkState, 0, len(t.seen))
	for l := range t.seen {
		_, both := t.seen[link{l.dst, l.src}]
		out = append(out, linkState{link: l, both: both})
	}
	slices.SortFunc(out, func(a, b linkState) int {
		return cmp.Or(comparePortRef(a.src, b.src), comparePortRef(a.dst, b.dst))
	})
	return out
}
