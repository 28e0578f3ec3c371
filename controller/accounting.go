package controller

import (
	"context"
	"maps"
	"slices"
	"sync"
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

// memberCounters outlive snapshots: one per member id. Every counter but
// active only grows: what the member's flows counted, added as the
// switches' flow ledgers read it.
type memberCounters struct {
	active                atomic.Int64
	total                 atomic.Uint64
	packetsIn, packetsOut atomic.Uint64
	bytesIn, bytesOut     atomic.Uint64
}

func (m *memberCounters) bytes() uint64 { return m.bytesIn.Load() + m.bytesOut.Load() }

// flowLedger is what one switch's flows had counted when the controller
// last read them, flow by flow. Each reading adds what a flow counted
// since the one before to its member's counters, so the counters only
// grow whatever happens to the flows: removed, modified, or adopted by
// the switch's next connection, which takes the ledger over. What a flow
// counts between its last reading and its end without a flow-removed (a
// route the controller deletes) is not counted.
type flowLedger struct {
	mu       sync.Mutex
	readings map[flowID]flowReading
	round    uint64 // of the last poll begun
}

// flowID names a flow of one switch.
type flowID struct {
	cookie   uint64
	match    uint64 // ofp.Match.Sum64
	priority uint16
	table    uint8
}

// flowReading is a flow's counters and age when last read, and the poll
// that read it.
type flowReading struct {
	packets, bytes uint64
	age            time.Duration
	round          uint64
}

func newFlowLedger() *flowLedger { return &flowLedger{readings: map[flowID]flowReading{}} }

// read records a flow's counters and age and returns what it counted
// since the last reading. A flow younger than its last reading, or whose
// counters went back, is another flow with the same match (the switch
// restarted, or the flow was deleted and added again): all it counted is
// new.
func (l *flowLedger) read(id flowID, packets, bytes uint64, age time.Duration, round uint64) (newPackets, newBytes uint64) {
	r, ok := l.readings[id]
	if !ok || age < r.age || packets < r.packets || bytes < r.bytes {
		r = flowReading{}
	}
	l.readings[id] = flowReading{packets: packets, bytes: bytes, age: age, round: round}
	return packets - r.packets, bytes - r.bytes
}

// sweep forgets the flows that polls up to round no longer found: gone
// from the switch, all they counted was added when they were last read.
func (l *flowLedger) sweep(round uint64) {
	for id, r := range l.readings {
		if r.round < round {
			delete(l.readings, id)
		}
	}
}

// accounting is a switch's share of the counters: the connections its
// dataplane counted as active, and the ledger of its flows.
type accounting struct {
	active map[uint64]int64 // connections counted, by activeKey
	ledger *flowLedger
	round  uint64 // the poll being assembled
}

func newAccounting(ledger *flowLedger) accounting {
	return accounting{active: map[uint64]int64{}, ledger: ledger}
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
	dir := countsIn
	if cat == catConnReply {
		dir = countsOut
	}
	dp.accounting.ended(m, dir, fr)
	if cat == catConnReply {
		return
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

// What a flow's counters count for its member.
type flowCount uint8

const (
	countsNothing flowCount = iota
	countsIn                // packets and bytes to the member
	countsOut               // packets and bytes from the member
	countsNew               // packets that are new connections
)

// counted says what a flow counts for its member: connection flows (both
// ways), member routes (to the member, and their new connections), and
// the reply flows that forward replies into the tracker.
func counted(snap *snapshot, cat category, priority uint16, memberNum uint32, groups bool) flowCount {
	switch {
	case cat == catConn, cat == catMemberRoute && priority == prioMemberRoute:
		return countsIn
	case cat == catMemberRoute && priority == prioMemberNew:
		return countsNew
	case cat == catConnReply, cat == catMemberReply && priority == prioMemberReply && tracksReplies(snap, memberNum, groups):
		return countsOut
	}
	return countsNothing
}

// add adds what a flow counted to m, nil once the member is deleted.
func (c flowCount) add(m *memberCounters, packets, bytes uint64) {
	switch {
	case m == nil:
	case c == countsIn:
		m.packetsIn.Add(packets)
		m.bytesIn.Add(bytes)
	case c == countsOut:
		m.packetsOut.Add(packets)
		m.bytesOut.Add(bytes)
	case c == countsNew:
		m.total.Add(packets)
	}
}

func flowAge(sec, nsec uint32) time.Duration {
	return time.Duration(sec)*time.Second + time.Duration(nsec)
}

// ended adds what a connection flow counted since it was last read, from
// its flow-removed, and forgets it.
func (a *accounting) ended(m *memberCounters, c flowCount, fr *ofp.FlowRemoved) {
	id := flowID{cookie: fr.Cookie, match: fr.Match.Sum64(), priority: fr.Priority, table: fr.TableID}
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	packets, bytes := a.ledger.read(id, fr.PacketCount, fr.ByteCount, flowAge(fr.DurationSec, fr.DurationNsec), 0)
	delete(a.ledger.readings, id)
	c.add(m, packets, bytes)
}

// beginPoll starts reading the reply to a statsRequest.
func (dp *dataplane) beginPoll() { dp.accounting.beginPoll() }

func (a *accounting) beginPoll() {
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	a.ledger.round++
	a.round = a.ledger.round
}

// pollPart reads one part of the reply to a statsRequest.
func (dp *dataplane) pollPart(snap *snapshot, stats []ofp.FlowStats, last bool) {
	dp.accounting.pollPart(snap, stats, last, dp.groups)
}

// pollPart adds what each flow of one part of the reply counted since it
// was last read to its member; after the last part the ledger forgets the
// flows the poll did not find. groups says whether the switch has select
// groups.
func (a *accounting) pollPart(snap *snapshot, stats []ofp.FlowStats, last, groups bool) {
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	for i := range stats {
		st := &stats[i]
		cat, _, memberNum, ok := cookieParts(st.Cookie)
		if !ok {
			continue
		}
		c := counted(snap, cat, st.Priority, memberNum, groups)
		if c == countsNothing {
			continue
		}
		id := flowID{cookie: st.Cookie, match: st.Match.Sum64(), priority: st.Priority, table: st.TableID}
		packets, bytes := a.ledger.read(id, st.PacketCount, st.ByteCount, flowAge(st.DurationSec, st.DurationNsec), a.round)
		c.add(snap.memberCnt[memberNum], packets, bytes)
	}
	if last {
		a.ledger.sweep(a.round)
	}
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
// contributed to the active counters, and gives up its held setups. What
// its flows counted stays counted.
func (dp *dataplane) settle(snap *snapshot) {
	dp.accounting.settle(snap)
	dp.held.release()
}

// settle takes back what the switch contributed to the active counters.
func (a *accounting) settle(snap *snapshot) {
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
		TotalConnections:  m.cnt.total.Load(),
		PacketsIn:         m.cnt.packetsIn.Load(),
		PacketsOut:        m.cnt.packetsOut.Load(),
		BytesIn:           m.cnt.bytesIn.Load(),
		BytesOut:          m.cnt.bytesOut.Load(),
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
