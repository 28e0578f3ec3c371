package model

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sdnlb/sdnlb"
)

// HealthChange is a member's new health status, as a store event carries
// it.
type HealthChange struct {
	MemberID string
	Status   sdnlb.MemberStatus
	Since    time.Time
	Agent    *sdnlb.AgentReport
}

// HealthChanges returns the changes a burst of events makes when every
// event is a health change; ok is false when one is anything else, which
// takes a full reload.
func HealthChanges(burst []sdnlb.Event) (changes []HealthChange, ok bool) {
	for _, ev := range burst {
		if ev.Kind != sdnlb.KindMember || ev.Op != sdnlb.OpHealth || ev.Status == "" {
			return nil, false
		}
		changes = append(changes, HealthChange{MemberID: ev.ID, Status: ev.Status, Since: ev.At, Agent: ev.Agent})
	}
	return changes, len(changes) > 0
}

// sameReport reports whether two agent reports say the same.
func sameReport(a, b *sdnlb.AgentReport) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// PatchScope is what a patch changed from the snapshot it was made from.
type PatchScope struct {
	Parent  uint64       // the generation patched
	Members []uint32     // whose health changed
	Replies []ReplyMatch // whose reply punt may have changed
	Addrs   []netip.Addr // of the changed members of tracked pools: their buckets and routes follow

	// What the patch copied, so that it copies each once and never
	// writes to what the snapshot before it holds.
	Pools  map[string]bool
	copied map[*Member]bool
}

// Patch returns the last snapshot built with the members' health changed.
// It costs what the changed pools hold, plus a copy of the maps keyed by
// pool and VIP and of the reply punts; the maps keyed by member are
// shared. Members the snapshot does not have (skipped, or gone) are left
// out, as a build would.
func (b *Builder) Patch(changes []HealthChange) *Snapshot {
	last := b.last
	s, sc := b.beginPatch()
	replies := map[ReplyMatch]bool{}
	for _, c := range changes {
		b.applyHealth(s, sc, c, replies)
	}
	sc.sortChanges()
	if len(replies) > 0 {
		s.ReplyPunts = maps.Clone(last.ReplyPunts)
	}
	for k := range replies {
		s.repunt(sc, k)
		sc.Replies = append(sc.Replies, k)
	}
	b.reschedule(s, sc, last)
	s.relinkVIPs(sc)
	b.last = s
	return s
}

// applyHealth gives the patch s's copy of c's member its new health,
// unless that is the health it has, and records what the change touches:
// the member, its address if the switches dispatch it, and its reply
// match (in replies) if its pool punts replies.
func (b *Builder) applyHealth(s *Snapshot, sc *PatchScope, c HealthChange, replies map[ReplyMatch]bool) {
	e, ok := b.Members.entries[c.MemberID]
	if !ok {
		return
	}
	p := s.Pools[b.last.MemberPools[e.num]]
	if p == nil {
		return
	}
	status := healthStatus(p.ByNum[e.num], c)
	if m := p.ByNum[e.num]; m.Status == status && m.Since.Equal(c.Since) && sameReport(m.Agent, c.Agent) {
		return
	}
	p = s.ownPool(sc, p)
	m := sc.ownMember(p, p.ByNum[e.num])
	if m.Status == sdnlb.MemberDown || status == sdnlb.MemberDown {
		m.Cnt.endDispatched()
	}
	if InRotation(status) && !InRotation(m.Status) {
		m.InRotationSince = c.Since
	}
	m.Status, m.Since, m.Agent = status, c.Since, c.Agent
	sc.Members = append(sc.Members, m.Num)
	if _, tracked := s.TrackedMembers[m.IP]; tracked {
		sc.Addrs = append(sc.Addrs, m.IP)
	}
	if p.punts() {
		replies[replyKeyOf(p.VIP, m)] = true
	}
}

// healthStatus is the status c gives m: DRAINING while m is admin down or
// of weight 0, or when its agent asks it to drain and c is not DOWN; else
// c's.
func healthStatus(m *Member, c HealthChange) sdnlb.MemberStatus {
	if m.draining || c.Agent != nil && c.Agent.Drain && c.Status != sdnlb.MemberDown {
		return sdnlb.MemberDraining
	}
	return c.Status
}

// sortChanges orders the members and addresses the patch changed, each
// once: one member may change twice in a burst.
func (sc *PatchScope) sortChanges() {
	slices.Sort(sc.Members)
	sc.Members = slices.Compact(sc.Members)
	slices.SortFunc(sc.Addrs, netip.Addr.Compare)
	sc.Addrs = slices.Compact(sc.Addrs)
}

// reschedule gives the pools the patch replaced their rotation and
// scheduler again, from those of last. Weighing writes to every member of
// a rotation, so a weighed pool's members are all the patch's own first.
func (b *Builder) reschedule(s *Snapshot, sc *PatchScope, last *Snapshot) {
	for id := range sc.Pools {
		p := s.Pools[id]
		if p.weighs() {
			for _, m := range slices.Clone(p.Members) {
				sc.ownMember(p, m)
			}
		}
		b.schedule(p, last.Pools[id]) // its method was usable when it was built
	}
}

// beginPatch starts a patch of the last snapshot: a new generation that
// shares everything with it until the patch owns a pool or member.
func (b *Builder) beginPatch() (*Snapshot, *PatchScope) {
	b.gen++
	s := *b.last
	s.Gen = b.gen
	s.Pools = maps.Clone(b.last.Pools)
	s.Patched = &PatchScope{Parent: b.last.Gen, Pools: map[string]bool{}, copied: map[*Member]bool{}}
	return &s, s.Patched
}

// ownPool returns the patch's own copy of p, making it the first time.
func (s *Snapshot) ownPool(sc *PatchScope, p *Pool) *Pool {
	if sc.Pools[p.ID] {
		return p
	}
	c := *p
	c.Members = slices.Clone(p.Members)
	c.ByNum = maps.Clone(p.ByNum)
	sc.Pools[p.ID] = true
	s.Pools[p.ID] = &c
	return &c
}

// ownMember returns the patch's own copy of m, making it the first time;
// p is m's pool, the patch's own.
func (sc *PatchScope) ownMember(p *Pool, m *Member) *Member {
	if sc.copied[m] {
		return m
	}
	c := *m
	i, _ := slices.BinarySearchFunc(p.Members, m.ID, func(x *Member, id string) int { return strings.Compare(x.ID, id) })
	p.Members[i] = &c
	p.ByNum[m.Num] = &c
	sc.copied[&c] = true
	return &c
}

// repunt decides the reply punt of k again from the members there, as the
// build does. Whether the switch's tracker shares k follows, for the
// members of the CONTROLLER pools there (see connection.memberZone).
func (s *Snapshot) repunt(sc *PatchScope, k ReplyMatch) {
	delete(s.ReplyPunts, k)
	for _, id := range s.replyPools[k] {
		p := s.Pools[id]
		for _, m := range p.Members {
			if m.Status != sdnlb.MemberDown && replyKeyOf(p.VIP, m) == k {
				s.addReplyPunt(p.VIP, m, p.Tracked())
			}
		}
	}
	shared := s.ReplyPunts[k].Shared
	for _, id := range s.replyPools[k] {
		if p := s.Pools[id]; p.Tracked() {
			continue
		}
		for _, m := range s.Pools[id].Members {
			if m.MemberZone != shared && replyKeyOf(s.Pools[id].VIP, m) == k {
				p := s.ownPool(sc, s.Pools[id])
				sc.ownMember(p, p.ByNum[m.Num]).MemberZone = shared
			}
		}
	}
}

// relinkVIPs gives the VIPs of the replaced pools copies that point at
// them, and every pool of such a VIP the copy.
func (s *Snapshot) relinkVIPs(sc *PatchScope) {
	vips := map[*VIP]*VIP{}
	for id := range sc.Pools {
		if v := s.Pools[id].VIP; v != nil && v.Pool != nil && v.Pool.ID == id {
			c := *v
			c.Pool = s.Pools[id]
			vips[v] = &c
		}
	}
	if len(vips) == 0 {
		return
	}
	s.VIPs, s.VIPByID, s.VIPByNum, s.VIPByAddr = maps.Clone(s.VIPs), maps.Clone(s.VIPByID), maps.Clone(s.VIPByNum), maps.Clone(s.VIPByAddr)
	for old, v := range vips {
		s.VIPs[v.Key], s.VIPByID[v.ID], s.VIPByNum[v.Num] = v, v, v
		if s.VIPByAddr[v.Key.IP] == old {
			s.VIPByAddr[v.Key.IP] = v
		}
	}
	for id, p := range s.Pools {
		if v, ok := vips[p.VIP]; ok {
			if _, own := sc.Pools[id]; !own {
				p = s.ownPool(sc, p)
			}
			p.VIP = v
		}
	}
}
