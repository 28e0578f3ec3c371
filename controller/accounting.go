package controller

import (
	"context"
	"maps"
	"math"
	"net/netip"
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
	active                atomic.Int64 // connections the controller set up and that have not ended
	total                 atomic.Uint64
	packetsIn, packetsOut atomic.Uint64
	bytesIn, bytesOut     atomic.Uint64
	// Connections the switches dispatched (SWITCH): opened (also in
	// total), and of TCP ones, closed (a FIN or reset from the client, a
	// reset from the member).
	opened, closed atomic.Uint64
}

// activeConns is the member's active connections: those the controller
// set up, and an estimate of those the switches dispatched, opened less
// closed. The estimate counts a connection ended at its client's FIN or
// reset, or the member's reset (NAT); one that ends with more than one
// counts more than once (the estimate stays at 0 at least), one whose
// client and member vanish without either stays counted until the member
// goes DOWN, and one of UDP never ends.
func (m *memberCounters) activeConns() uint64 {
	return uint64(max(0, m.active.Load())) + m.dispatchedActive()
}

// endDispatched counts every connection the switches dispatched to the
// member as closed: its route resets those of a DOWN member, whose clients
// may never send the FIN or reset that would count them.
func (m *memberCounters) endDispatched() {
	for {
		closed, opened := m.closed.Load(), m.opened.Load()
		if closed >= opened || m.closed.CompareAndSwap(closed, opened) {
			return
		}
	}
}

// dispatchedActive is the estimate of the member's active connections
// that the switches dispatched.
func (m *memberCounters) dispatchedActive() uint64 {
	closed := m.closed.Load()
	if opened := m.opened.Load(); opened > closed {
		return opened - closed
	}
	return 0
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

// flowReading is a flow's counters when last read, and the poll that read
// it.
type flowReading struct {
	packets, bytes uint64
	round          uint64
}

func newFlowLedger() *flowLedger { return &flowLedger{readings: map[flowID]flowReading{}} }

// read records a flow's counters and returns what it counted since the
// last reading. A flow whose counters went back is another flow with the
// same match (the switch restarted, or the flow was deleted and added
// again): all it counted is new. A flow's age does not tell: Open vSwitch
// restarts it when an add replaces the flow, and keeps its counters.
func (l *flowLedger) read(id flowID, packets, bytes uint64, round uint64) (newPackets, newBytes uint64) {
	r, ok := l.readings[id]
	if !ok || packets < r.packets || bytes < r.bytes {
		r = flowReading{}
	}
	l.readings[id] = flowReading{packets: packets, bytes: bytes, round: round}
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
	if v := snap.vipByNum[vipNum]; v != nil && v.persist > 0 && v.pool != nil {
		if src, ok := matchedSrc(&fr.Match); ok {
			dp.affinity.touch(vipNum, v.pool.client(src), memberNum, now.Add(v.persist))
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
	countsIn     flowCount = 1 << iota // packets and bytes to the member
	countsOut                          // packets and bytes from the member
	countsOpened                       // packets that open a connection (SWITCH)
	countsClosed                       // packets that close one (SWITCH)
)

// counted says what a flow counts for its member: connection flows (both
// ways), and the rows SWITCH pools have per VIP and member (to the member,
// some rows its connections opening and closing, and from it).
func counted(cat category, table uint8, priority uint16) flowCount {
	switch {
	case cat == catConn:
		return countsIn
	case cat == catMemberRoute && table == tableFromMember && priority >= prioFromMemberReset:
		return countsOut | countsClosed
	case cat == catConnReply, cat == catMemberRoute && table == tableFromMember:
		return countsOut
	case cat == catMemberRoute && table == tableToMember:
		switch priority {
		case prioMemberNew:
			return countsIn | countsOpened
		case prioMemberFIN, prioMemberRST:
			return countsIn | countsClosed
		case prioMemberRoute:
			return countsIn
		}
	}
	return 0
}

// add adds what a flow counted to m, nil once the member is deleted.
func (c flowCount) add(m *memberCounters, packets, bytes uint64) {
	if m == nil {
		return
	}
	if c&countsIn != 0 {
		m.packetsIn.Add(packets)
		m.bytesIn.Add(bytes)
	}
	if c&countsOut != 0 {
		m.packetsOut.Add(packets)
		m.bytesOut.Add(bytes)
	}
	if c&countsOpened != 0 {
		m.opened.Add(packets)
		m.total.Add(packets)
	}
	if c&countsClosed != 0 {
		m.closed.Add(packets)
	}
}

// ended adds what a connection flow counted since it was last read, from
// its flow-removed, and forgets it.
func (a *accounting) ended(m *memberCounters, c flowCount, fr *ofp.FlowRemoved) {
	id := flowID{cookie: fr.Cookie, match: fr.Match.Sum64(), priority: fr.Priority, table: fr.TableID}
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	packets, bytes := a.ledger.read(id, fr.PacketCount, fr.ByteCount, 0)
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
	dp.accounting.pollPart(snap, stats, last)
}

// pollPart adds what each flow of one part of the reply counted since it
// was last read to its member; after the last part the ledger forgets the
// flows the poll did not find.
func (a *accounting) pollPart(snap *snapshot, stats []ofp.FlowStats, last bool) {
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	for i := range stats {
		st := &stats[i]
		cat, _, memberNum, ok := cookieParts(st.Cookie)
		if !ok {
			continue
		}
		c := counted(cat, st.TableID, st.Priority)
		if c == 0 {
			continue
		}
		id := flowID{cookie: st.Cookie, match: st.Match.Sum64(), priority: st.Priority, table: st.TableID}
		packets, bytes := a.ledger.read(id, st.PacketCount, st.ByteCount, a.round)
		c.add(snap.memberCnt[memberNum], packets, bytes)
	}
	if last {
		a.ledger.sweep(a.round)
	}
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

// stats reads the member's counters.
func (m *memberState) stats() sdnlb.MemberStats {
	active := m.cnt.activeConns()
	if m.status == sdnlb.MemberDown { // the switches reset what they dispatched to it
		active = uint64(max(0, m.cnt.active.Load()))
	}
	st := sdnlb.MemberStats{
		MemberID:          m.id,
		Address:           m.address,
		Port:              int(m.port),
		Status:            m.status,
		StatusSince:       m.since,
		ActiveConnections: active,
		TotalConnections:  m.cnt.total.Load(),
		PacketsIn:         m.cnt.packetsIn.Load(),
		PacketsOut:        m.cnt.packetsOut.Load(),
		BytesIn:           m.cnt.bytesIn.Load(),
		BytesOut:          m.cnt.bytesOut.Load(),
		EffectiveWeight:   math.Round(m.effective*100) / 100,
		SlowStart:         math.Round(m.rampDone*1000) / 1000,
	}
	if !inRotation(m.status) {
		st.EffectiveWeight, st.SlowStart = 0, 0 // out of rotation
	}
	if m.agent != nil {
		c := m.availableCPU()
		st.AvailableCPU = &c
	}
	if m.capacity > 0 {
		s := math.Round(m.availableSessions()*1000) / 1000
		st.AvailableSessions = &s
	}
	return st
}

// AllPoolStats returns the counters of every pool, by pool id.
func (c *Controller) AllPoolStats(ctx context.Context) ([]*sdnlb.PoolStats, error) {
	snap := c.snap.Load()
	ids := slices.Sorted(maps.Keys(snap.pools))
	var addrs []netip.Addr
	for _, id := range ids {
		for _, m := range snap.pools[id].members {
			addrs = append(addrs, m.ip)
		}
	}
	at, groupless := c.locate(addrs), c.grouplessSwitches()
	out := make([]*sdnlb.PoolStats, 0, len(ids))
	for _, id := range ids {
		out = append(out, c.poolStats(snap.pools[id], at, groupless))
	}
	return out, nil
}

// PoolStats sums the live counters of a pool's members.
func (c *Controller) PoolStats(ctx context.Context, poolID string) (*sdnlb.PoolStats, error) {
	p, ok := c.snap.Load().pools[poolID]
	if !ok {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "pool %s not found", poolID)
	}
	addrs := make([]netip.Addr, len(p.members))
	for i, m := range p.members {
		addrs[i] = m.ip
	}
	return c.poolStats(p, c.locate(addrs), c.grouplessSwitches()), nil
}

// grouplessSwitches lists the connected switches without select groups,
// which cannot dispatch SWITCH pools themselves, in order.
func (c *Controller) grouplessSwitches() []string {
	out := []string{}
	for _, s := range c.switchConns() {
		if !s.features.groups {
			out = append(out, formatDPID(s.dpid))
		}
	}
	slices.Sort(out)
	return out
}

// poolStats reads the counters of p's members, which at locates;
// groupless is grouplessSwitches.
func (c *Controller) poolStats(p *poolState, at map[netip.Addr]*sdnlb.MemberLocation, groupless []string) *sdnlb.PoolStats {
	ps := &sdnlb.PoolStats{PoolID: p.id, Members: make([]sdnlb.MemberStats, 0, len(p.members)),
		ControllerDispatchedOn: []string{}, UpdatedAt: c.now()}
	if p.switched() {
		ps.ControllerDispatchedOn = groupless
	}
	if p.vip != nil {
		ps.RefusedConnections = p.vip.cnt.refused.Load()
	}
	for _, m := range p.members {
		ms := m.stats()
		ms.Location = at[m.ip]
		ps.ActiveConnections += ms.ActiveConnections
		ps.TotalConnections += ms.TotalConnections
		ps.PacketsIn += ms.PacketsIn
		ps.PacketsOut += ms.PacketsOut
		ps.BytesIn += ms.BytesIn
		ps.BytesOut += ms.BytesOut
		ps.Members = append(ps.Members, ms)
	}
	return ps
}

// locate finds where the switches showed each of addrs, asking each
// switch's learner once: on a host's port rather than at a link's end
// (where a frame from it came from another switch), else where the
// switch's flows name it.
func (c *Controller) locate(addrs []netip.Addr) map[netip.Addr]*sdnlb.MemberLocation {
	at := map[netip.Addr]*sdnlb.MemberLocation{}
	if len(addrs) == 0 {
		return at
	}
	linked := map[portRef]bool{}
	for _, l := range c.topo.links(c.now()) {
		linked[l.src], linked[l.dst] = true, true
	}
	for _, s := range c.switchConns() {
		s.decide(func(dp *dataplane, _ *outbox) {
			for _, ip := range addrs {
				e, ok := dp.learner.host(ip)
				if !ok || at[ip] != nil && at[ip].Port != "" || linked[portRef{dpid: s.dpid, port: e.port}] {
					continue
				}
				loc := &sdnlb.MemberLocation{DPID: formatDPID(s.dpid)}
				if e.port != 0 {
					loc.Port = ofp.FormatPort(e.port)
				}
				at[ip] = loc
			}
		})
	}
	return at
}
