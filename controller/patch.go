package controller

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/sdnlb/sdnlb"
)

// healthChange is a member's new health status, as a store event carries
// it.
type healthChange struct {
	memberID string
	status   sdnlb.MemberStatus
	since    time.Time
	agent    *sdnlb.AgentReport
}

// healthChanges returns the changes a burst of events makes when every
// event is a health change; ok is false when one is anything else, which
// takes a full reload.
func healthChanges(burst []sdnlb.Event) (changes []healthChange, ok bool) {
	for _, ev := range burst {
		if ev.Kind != sdnlb.KindMember || ev.Op != sdnlb.OpHealth || ev.Status == "" {
			return nil, false
		}
		changes = append(changes, healthChange{memberID: ev.ID, status: ev.Status, since: ev.At, agent: ev.Agent})
	}
	return changes, len(changes) > 0
}

// sameReport reports whether two agent reports say the same.
func sameReport(a, b *sdnlb.AgentReport) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// patchScope is what a patch changed from the snapshot it was made from.
type patchScope struct {
	parent  uint64       // the generation patched
	members []uint32     // whose health changed
	replies []replyMatch // whose reply punt may have changed
	addrs   []netip.Addr // of the changed members the switches dispatch: their buckets and routes follow

	// What the patch copied, so that it copies each once and never
	// writes to what the snapshot before it holds.
	pools  map[string]bool
	copied map[*memberState]bool
}

// patch returns the last snapshot built with the members' health changed.
// It costs what the changed pools hold, plus a copy of the maps keyed by
// pool and VIP and of the reply punts; the maps keyed by member are
// shared. Members the snapshot does not have (skipped, or gone) are left
// out, as a build would.
func (b *snapshotBuilder) patch(changes []healthChange) *snapshot {
	last := b.last
	s, sc := b.beginPatch()
	replies := map[replyMatch]bool{}
	for _, c := range changes {
		e, ok := b.members.entries[c.memberID]
		if !ok {
			continue
		}
		p := s.pools[last.memberPools[e.num]]
		if p == nil {
			continue
		}
		status := c.status
		if p.byNum[e.num].draining || c.agent != nil && c.agent.Drain && status != sdnlb.MemberDown {
			status = sdnlb.MemberDraining
		}
		if m := p.byNum[e.num]; m.status == status && m.since.Equal(c.since) && sameReport(m.agent, c.agent) {
			continue
		}
		p = s.ownPool(sc, p)
		m := sc.ownMember(p, p.byNum[e.num])
		if m.status == sdnlb.MemberDown || status == sdnlb.MemberDown {
			m.cnt.endDispatched()
		}
		if inRotation(status) && !inRotation(m.status) {
			m.inRotationSince = c.since
		}
		m.status, m.since, m.agent = status, c.since, c.agent
		sc.members = append(sc.members, m.num)
		if _, switched := s.switchedMembers[m.ip]; switched {
			sc.addrs = append(sc.addrs, m.ip)
		}
		if p.punts() {
			replies[replyKeyOf(p.vip, m)] = true
		}
	}
	slices.Sort(sc.members)
	sc.members = slices.Compact(sc.members) // one member may change twice in a burst
	slices.SortFunc(sc.addrs, netip.Addr.Compare)
	sc.addrs = slices.Compact(sc.addrs)
	if len(replies) > 0 {
		s.replyPunts = maps.Clone(last.replyPunts)
	}
	for k := range replies {
		s.repunt(sc, k)
		sc.replies = append(sc.replies, k)
	}
	for id := range sc.pools {
		p := s.pools[id]
		if p.weighs() { // weighing writes to every member of the rotation
			for _, m := range slices.Clone(p.members) {
				sc.ownMember(p, m)
			}
		}
		b.schedule(p, last.pools[id]) // its method was usable when it was built
	}
	s.relinkVIPs(sc)
	b.last = s
	return s
}

// beginPatch starts a patch of the last snapshot: a new generation that
// shares everything with it until the patch owns a pool or member.
func (b *snapshotBuilder) beginPatch() (*snapshot, *patchScope) {
	b.gen++
	s := *b.last
	s.gen = b.gen
	s.pools = maps.Clone(b.last.pools)
	s.patched = &patchScope{parent: b.last.gen, pools: map[string]bool{}, copied: map[*memberState]bool{}}
	return &s, s.patched
}

// ownPool returns the patch's own copy of p, making it the first time.
func (s *snapshot) ownPool(sc *patchScope, p *poolState) *poolState {
	if sc.pools[p.id] {
		return p
	}
	c := *p
	c.members = slices.Clone(p.members)
	c.byNum = maps.Clone(p.byNum)
	sc.pools[p.id] = true
	s.pools[p.id] = &c
	return &c
}

// ownMember returns the patch's own copy of m, making it the first time;
// p is m's pool, the patch's own.
func (sc *patchScope) ownMember(p *poolState, m *memberState) *memberState {
	if sc.copied[m] {
		return m
	}
	c := *m
	i, _ := slices.BinarySearchFunc(p.members, m.id, func(x *memberState, id string) int { return strings.Compare(x.id, id) })
	p.members[i] = &c
	p.byNum[m.num] = &c
	sc.copied[&c] = true
	return &c
}

// repunt decides the reply punt of k again from the members there, as the
// build does. Whether the switch's tracker shares k follows, for the
// members of the CONTROLLER pools there (see connection.memberZone).
func (s *snapshot) repunt(sc *patchScope, k replyMatch) {
	delete(s.replyPunts, k)
	for _, id := range s.replyPools[k] {
		p := s.pools[id]
		for _, m := range p.members {
			if m.status != sdnlb.MemberDown && replyKeyOf(p.vip, m) == k {
				s.addReplyPunt(p.vip, m, p.switched())
			}
		}
	}
	shared := s.replyPunts[k].shared
	for _, id := range s.replyPools[k] {
		if p := s.pools[id]; p.switched() {
			continue
		}
		for _, m := range s.pools[id].members {
			if m.memberZone != shared && replyKeyOf(s.pools[id].vip, m) == k {
				p := s.ownPool(sc, s.pools[id])
				sc.ownMember(p, p.byNum[m.num]).memberZone = shared
			}
		}
	}
}

// relinkVIPs gives the VIPs of the replaced pools copies that point at
// them, and every pool of such a VIP the copy.
func (s *snapshot) relinkVIPs(sc *patchScope) {
	vips := map[*vipState]*vipState{}
	for id := range sc.pools {
		if v := s.pools[id].vip; v != nil && v.pool != nil && v.pool.id == id {
			c := *v
			c.pool = s.pools[id]
			vips[v] = &c
		}
	}
	if len(vips) == 0 {
		return
	}
	s.vips, s.vipByID, s.vipByNum, s.vipByAddr = maps.Clone(s.vips), maps.Clone(s.vipByID), maps.Clone(s.vipByNum), maps.Clone(s.vipByAddr)
	for old, v := range vips {
		s.vips[v.key], s.vipByID[v.id], s.vipByNum[v.num] = v, v, v
		if s.vipByAddr[v.key.ip] == old {
			s.vipByAddr[v.key.ip] = v
		}
	}
	for id, p := range s.pools {
		if v, ok := vips[p.vip]; ok {
			if _, own := sc.pools[id]; !own {
				p = s.ownPool(sc, p)
			}
			p.vip = v
		}
	}
}
