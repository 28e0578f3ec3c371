package dataplane

import (
	"net/netip"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb/controller/model"
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
