package dataplane

import (
	"net/netip"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// AffinityTable remembers, for VIPs with SOURCE_IP session persistence,
// which member each client went to, across switches. It is sharded so
// packet-ins on different switches rarely meet on a lock, and no API call
// takes it.
type AffinityTable struct {
	shards [64]affinityShard
}

type affinityShard struct {
	mu sync.Mutex
	m  map[affinityKey]affinityEntry
}

type affinityEntry struct {
	member  uint32
	expires int64 // unix nanoseconds
}

func NewAffinityTable() *AffinityTable {
	t := new(AffinityTable)
	for i := range t.shards {
		t.shards[i].m = map[affinityKey]affinityEntry{}
	}
	return t
}

// affinityKey is a client of a VIP.
type affinityKey struct {
	vipNum uint32
	client netip.Addr
}

func (t *AffinityTable) shard(k affinityKey) *affinityShard {
	h := uint64(k.vipNum)<<32 | uint64(model.Fold32(k.client))
	return &t.shards[(h*0x9e3779b97f4a7c15)>>58]
}

// get returns the client's member while the entry has not expired.
func (t *AffinityTable) get(vipNum uint32, clientIP netip.Addr, now time.Time) (uint32, bool) {
	k := affinityKey{vipNum: vipNum, client: clientIP}
	sh := t.shard(k)
	sh.mu.Lock()
	e, ok := sh.m[k]
	sh.mu.Unlock()
	if !ok || now.UnixNano() > e.expires {
		return 0, false
	}
	return e.member, true
}

// put binds the client to member until expires.
func (t *AffinityTable) put(vipNum uint32, clientIP netip.Addr, member uint32, expires time.Time) {
	k := affinityKey{vipNum: vipNum, client: clientIP}
	sh := t.shard(k)
	sh.mu.Lock()
	sh.m[k] = affinityEntry{member: member, expires: expires.UnixNano()}
	sh.mu.Unlock()
}

// touch extends a binding that still names member, when one of the
// client's connections ends: the timeout runs from the last connection.
func (t *AffinityTable) touch(vipNum uint32, clientIP netip.Addr, member uint32, expires time.Time) {
	k := affinityKey{vipNum: vipNum, client: clientIP}
	sh := t.shard(k)
	sh.mu.Lock()
	if e, ok := sh.m[k]; ok && e.member == member {
		sh.m[k] = affinityEntry{member: member, expires: max(e.expires, expires.UnixNano())}
	}
	sh.mu.Unlock()
}

// Expire drops entries that ran out.
func (t *AffinityTable) Expire(now time.Time) {
	n := now.UnixNano()
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		for k, e := range sh.m {
			if n > e.expires {
				delete(sh.m, k)
			}
		}
		sh.mu.Unlock()
	}
}

// adopt binds the client to member until persist after now, as a switch
// being adopted shows it: the client's newest connection there, to
// member, started at since. A live binding to another member made or
// refreshed after since stands, being newer than anything the switch
// shows; a live binding to member keeps the later expiry.
func (t *AffinityTable) adopt(vipNum uint32, clientIP netip.Addr, member uint32, since, now time.Time, persist time.Duration) {
	k := affinityKey{vipNum: vipNum, client: clientIP}
	expires := now.Add(persist).UnixNano()
	sh := t.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[k]
	live := ok && now.UnixNano() <= e.expires
	switch {
	case live && e.member == member:
		e.expires = max(e.expires, expires)
	case live && e.expires-int64(persist) > since.UnixNano():
		return
	default:
		e = affinityEntry{member: member, expires: expires}
	}
	sh.m[k] = e
}

// heldBindings are the SOURCE_IP persistence bindings the connection
// flows of a switch being adopted show, by client: the member of the
// client's newest connection, which its last master bound it to last (a
// client whose member changed, which left rotation or reached its
// capacity, still has connections to the old one). A connection started
// when its client → member flow was added, to the second: Open vSwitch
// shows a flow's age in seconds (and nanoseconds), and restarts it when an
// add replaces the flow, as an adoption that gives it this process's
// cookie does, so flows re-added together show one age. A tie goes to the
// member of the smaller id, the same on every node.
type heldBindings map[affinityKey]heldBinding

type heldBinding struct {
	member  *model.Member
	since   time.Time // the start of the client's newest connection to member
	persist time.Duration
}

// add records the client → member flow f of a connection of v to m, held
// by the switch at now.
func (b heldBindings) add(now time.Time, v *model.VIP, m *model.Member, f *ofp.FlowStats) {
	if v.Persist <= 0 || v.Pool == nil {
		return
	}
	src, ok := model.MatchedSrc(&f.Match)
	if !ok {
		return
	}
	k := affinityKey{vipNum: v.Num, client: v.Pool.Client(src)}
	since := now.Add(-time.Duration(f.DurationSec) * time.Second)
	if e, ok := b[k]; ok && (e.since.After(since) || e.since.Equal(since) && e.member.ID <= m.ID) {
		return
	}
	b[k] = heldBinding{member: m, since: since, persist: v.Persist}
}

// bind puts the bindings into t, each for its VIP's persistence timeout
// from now: the client's connections are still on the switch, and their
// ends (FlowRemoved) extend it as usual.
func (b heldBindings) bind(t *AffinityTable, now time.Time) {
	for k, e := range b {
		t.adopt(k.vipNum, k.client, e.member.Num, e.since, now, e.persist)
	}
}
