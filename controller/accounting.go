package controller

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// vipCounters outlive snapshots: one per VIP id.
type vipCounters struct {
	active  atomic.Int64
	refused atomic.Uint64
}

// memberCounters outlive snapshots: one per member id. The "done" counters
// sum flows that were removed; the "live" ones are the sum over switches of
// the latest flow-stats poll, which for SWITCH pools also counts their
// connections.
type memberCounters struct {
	active                        atomic.Int64
	total                         atomic.Uint64
	packetsIn, packetsOut         atomic.Uint64
	bytesIn, bytesOut             atomic.Uint64
	liveTotal                     atomic.Int64
	livePacketsIn, livePacketsOut atomic.Int64
	liveBytesIn, liveBytesOut     atomic.Int64
}

func (m *memberCounters) bytes() uint64 {
	return m.bytesIn.Load() + m.bytesOut.Load() + uint64(max(0, m.liveBytesIn.Load()+m.liveBytesOut.Load()))
}

// flowCounters are one member's flow counters on one switch: of its
// connection flows, or of its routes and reply flow in a SWITCH NAT pool,
// where conns counts its new connections.
type flowCounters struct {
	conns                                    int64
	packetsIn, bytesIn, packetsOut, bytesOut int64
}

// accounting is a switch's share of the counters: the connections its
// dataplane counted as active, and its connection flows' counters as the
// last complete stats poll read them and as the poll under way reads them.
type accounting struct {
	active map[uint64]int64        // connections counted, by activeKey
	live   map[uint32]flowCounters // the last complete stats poll, by member
	poll   map[uint32]flowCounters // the poll being assembled
}

func newAccounting() accounting {
	return accounting{active: map[uint64]int64{}, live: map[uint32]flowCounters{}, poll: map[uint32]flowCounters{}}
}

// activeKey names the connections of one VIP to one member.
func activeKey(vipNum, memberNum uint32) uint64 { return uint64(vipNum)<<32 | uint64(memberNum) }

// count counts a connection of the VIP numbered vipNum to the member
// numbered memberNum as active on the switch.
func (a *accounting) count(vipNum, memberNum uint32) { a.active[activeKey(vipNum, memberNum)]++ }

// release stops counting one such connection and reports whether there
// was one to stop counting.
func (a *accounting) release(vipNum, memberNum uint32) bool {
	key := activeKey(vipNum, memberNum)
	if a.active[key] <= 0 {
		return false
	}
	if a.active[key]--; a.active[key] == 0 {
		delete(a.active, key)
	}
	return true
}

// total is how many connections the switch counts as active.
func (a *accounting) total() int64 {
	var n int64
	for _, c := range a.active {
		n += c
	}
	return n
}

// flowRemoved accounts a connection flow that ended: its counters join the
// member's totals and, for the client → member direction, the connection
// stops being active.
func (dp *dataplane) flowRemoved(now time.Time, snap *snapshot, fr *ofp.FlowRemoved) {
	cat, vipNum, memberNum, ok := cookieParts(fr.Cookie)
	if !ok || (cat != catConn && cat != catConnReply) {
		return
	}
	m := snap.memberCnt[memberNum] // nil once the member is deleted
	if cat == catConnReply {
		if m != nil {
			m.packetsOut.Add(fr.PacketCount)
			m.bytesOut.Add(fr.ByteCount)
		}
		return
	}
	if m != nil {
		m.packetsIn.Add(fr.PacketCount)
		m.bytesIn.Add(fr.ByteCount)
	}
	// Only connections this switch's dataplane counted are released here:
	// after a reconnect the switch reports flows of the old connection,
	// which settled its counts when it ended.
	if !dp.accounting.release(vipNum, memberNum) {
		return
	}
	if m != nil {
		m.active.Add(-1)
	}
	if v := snap.vipCnt[vipNum]; v != nil {
		v.active.Add(-1)
	}
	if v := snap.vipByNum[vipNum]; v != nil && v.persist > 0 {
		if src, ok := fr.Match.Get(ofp.OXMIPv4Src); ok {
			dp.affinity.touch(vipNum, ipUint(src.IPv4()), memberNum, now.Add(v.persist))
		}
	}
}

// statsRequest asks for the counters of every flow sdnlb installed; the
// poll reads those of the connection flows, the member routes and the
// reply flows.
func statsRequest() ofp.FlowStatsRequest {
	return ofp.FlowStatsRequest{
		TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
		Cookie: appID << cookieAppShift, CookieMask: maskApp,
	}
}

// beginPoll starts assembling the reply to a statsRequest.
func (dp *dataplane) beginPoll() { dp.accounting.beginPoll() }

func (a *accounting) beginPoll() { clear(a.poll) }

// pollPart adds one part of the reply to a statsRequest.
func (dp *dataplane) pollPart(snap *snapshot, stats []ofp.FlowStats, last bool) {
	dp.accounting.pollPart(snap, stats, last, dp.groups)
}

// pollPart adds one part of the reply; at the last part the members' live
// counters move by the difference to the previous poll. groups says
// whether the switch has select groups.
func (a *accounting) pollPart(snap *snapshot, stats []ofp.FlowStats, last, groups bool) {
	for i := range stats {
		st := &stats[i]
		cat, _, memberNum, ok := cookieParts(st.Cookie)
		if !ok {
			continue
		}
		fc := a.poll[memberNum]
		switch {
		case cat == catConn, cat == catMemberRoute && st.Priority == prioMemberRoute:
			fc.packetsIn += int64(st.PacketCount)
			fc.bytesIn += int64(st.ByteCount)
		case cat == catMemberRoute && st.Priority == prioMemberNew:
			fc.conns += int64(st.PacketCount)
		case cat == catConnReply, cat == catMemberReply && st.Priority == prioMemberReply && tracksReplies(snap, memberNum, groups):
			fc.packetsOut += int64(st.PacketCount)
			fc.bytesOut += int64(st.ByteCount)
		default:
			continue
		}
		a.poll[memberNum] = fc
	}
	if !last {
		return
	}
	moveLive(snap, a.live, a.poll)
	a.live, a.poll = a.poll, a.live
	clear(a.poll)
}

// moveLive moves the members' live counters from what the previous poll
// read (before) to what this one read (now).
func moveLive(snap *snapshot, before, now map[uint32]flowCounters) {
	for num, old := range before {
		if _, ok := now[num]; !ok {
			addLive(snap.memberCnt[num], flowCounters{}, old)
		}
	}
	for num, fc := range now {
		addLive(snap.memberCnt[num], fc, before[num])
	}
}

func addLive(m *memberCounters, now, before flowCounters) {
	if m == nil {
		return
	}
	m.liveTotal.Add(now.conns - before.conns)
	m.livePacketsIn.Add(now.packetsIn - before.packetsIn)
	m.liveBytesIn.Add(now.bytesIn - before.bytesIn)
	m.livePacketsOut.Add(now.packetsOut - before.packetsOut)
	m.liveBytesOut.Add(now.bytesOut - before.bytesOut)
}

// tracksReplies reports whether the member's reply flow forwards its
// replies (into the connection tracker) rather than punting them, so that
// its counters are the member's traffic; groups says whether the switch
// has select groups.
func tracksReplies(snap *snapshot, memberNum uint32, groups bool) bool {
	m := snap.member(memberNum)
	if m == nil || !groups {
		return false
	}
	p := snap.pools[m.poolID]
	return p != nil && p.switched() && p.forwarding != sdnlb.ForwardingDSR
}

// settle takes back what the dataplane of a switch that went away
// contributed to the live and active counters, and gives up its held
// setups.
func (dp *dataplane) settle(snap *snapshot) {
	dp.accounting.settle(snap)
	dp.held.release()
}

// settle takes back what the switch contributed to the live and active
// counters.
func (a *accounting) settle(snap *snapshot) {
	for num, fc := range a.live {
		addLive(snap.memberCnt[num], flowCounters{}, fc)
	}
	clear(a.live)
	for key, n := range a.active {
		if m := snap.memberCnt[uint32(key)]; m != nil {
			m.active.Add(-n)
		}
		if v := snap.vipCnt[uint32(key>>32)]; v != nil {
			v.active.Add(-n)
		}
	}
	clear(a.active)
}

// stats reads the member's counters: what ended plus what is live.
func (m *memberState) stats() sdnlb.MemberStats {
	return sdnlb.MemberStats{
		MemberID:          m.id,
		Address:           m.address,
		Port:              int(m.port),
		Status:            m.status,
		StatusSince:       m.since,
		ActiveConnections: uint64(max(0, m.cnt.active.Load())),
		TotalConnections:  m.cnt.total.Load() + uint64(max(0, m.cnt.liveTotal.Load())),
		PacketsIn:         m.cnt.packetsIn.Load() + uint64(max(0, m.cnt.livePacketsIn.Load())),
		PacketsOut:        m.cnt.packetsOut.Load() + uint64(max(0, m.cnt.livePacketsOut.Load())),
		BytesIn:           m.cnt.bytesIn.Load() + uint64(max(0, m.cnt.liveBytesIn.Load())),
		BytesOut:          m.cnt.bytesOut.Load() + uint64(max(0, m.cnt.liveBytesOut.Load())),
	}
}

// AllPoolStats returns the counters of every pool, by pool id.
func (c *Controller) AllPoolStats(ctx context.Context) ([]*sdnlb.PoolStats, error) {
	snap := c.snap.Load()
	ids := slices.Sorted(maps.Keys(snap.pools))
	out := make([]*sdnlb.PoolStats, 0, len(ids))
	for _, id := range ids {
		ps, err := c.PoolStats(ctx, id)
		if err != nil {
			continue // gone since the snapshot was read
		}
		out = append(out, ps)
	}
	return out, nil
}

// PoolStats sums the live counters of a pool's members.
func (c *Controller) PoolStats(ctx context.Context, poolID string) (*sdnlb.PoolStats, error) {
	snap := c.snap.Load()
	p, ok := snap.pools[poolID]
	if !ok {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "pool %s not found", poolID)
	}
	ps := &sdnlb.PoolStats{PoolID: poolID, Members: make([]sdnlb.MemberStats, 0, len(p.members)), UpdatedAt: c.now()}
	if p.vip != nil {
		ps.RefusedConnections = p.vip.cnt.refused.Load()
	}
	for _, m := range p.members {
		ms := m.stats()
		ps.ActiveConnections += ms.ActiveConnections
		ps.TotalConnections += ms.TotalConnections
		ps.PacketsIn += ms.PacketsIn
		ps.PacketsOut += ms.PacketsOut
		ps.BytesIn += ms.BytesIn
		ps.BytesOut += ms.BytesOut
		ps.Members = append(ps.Members, ms)
	}
	return ps, nil
}
