package dataplane

import (
	"maps"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// FlowLedger is what one switch's flows had counted when the controller
// last read them, flow by flow. Each reading adds what a flow counted
// since the one before to its member's counters, so the counters only
// grow whatever happens to the flows: removed, modified, or adopted by
// the switch's next connection, which takes the ledger over. What a flow
// counts between its last reading and its end without a flow-removed (a
// route the controller deletes) is not counted.
//
// The ledger counts in epochs: one begins when this process takes the
// switch over (its first connection, or a promotion under another role
// generation), since another process may have counted the flows until
// then. The first poll of an epoch reads every flow afresh into the
// epoch's overlap instead of the counters: what the flows counted before
// this process read them. Only what they count beyond that is this
// process's; the overlap's share of it that nobody counted is settled
// against the readings the switch's last master recorded (see
// Overlap), or, without shared stats, counted at once.
type FlowLedger struct {
	mu       sync.Mutex
	readings map[flowID]flowReading
	round    uint64 // of the last poll begun
	// live sums the readings of the flows read, by member number, as
	// their counts add them: the counters the flows hold now, as far
	// as this process read them.
	live   map[uint32]sdnlb.Counts
	shared bool // the overlap waits to be settled; else it counts at once
	epoch  ledgerEpoch
}

// ledgerEpoch is the counting of a switch by this process since it took
// the switch over.
type ledgerEpoch struct {
	begun      bool
	generation uint64 // the role generation it counts under
	// first: the epoch's first poll is not read yet; pending: it was, and
	// overlap waits to be settled.
	first, pending bool
	overlap        map[uint32]sdnlb.Counts
	// prior is what live summed when the epoch before ended in this
	// process, of generation priorGen.
	prior    map[uint32]sdnlb.Counts
	priorGen uint64
}

// flowID names a flow of one switch.
type flowID struct {
	cookie   uint64
	match    uint64 // ofp.Match.Sum64
	priority uint16
	table    uint8
}

// flowReading is a flow's counters when last read, the poll that read
// it, and what they count for which member.
type flowReading struct {
	packets, bytes uint64
	round          uint64
	member         uint32
	count          flowCount
}

// NewFlowLedger returns the ledger of a switch not yet taken over;
// shared says the overlaps of its epochs wait to be settled (Overlap).
func NewFlowLedger(shared bool) *FlowLedger {
	return &FlowLedger{readings: map[flowID]flowReading{}, live: map[uint32]sdnlb.Counts{}, shared: shared}
}

// Begin begins an epoch under generation, unless one under it is going
// on (the switch reconnected to the process that counts it): the
// readings of the epoch before are forgotten, their sum kept as its
// prior.
func (l *FlowLedger) Begin(generation uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.epoch.begun && l.epoch.generation == generation {
		return
	}
	e := ledgerEpoch{begun: true, generation: generation, first: true, overlap: map[uint32]sdnlb.Counts{}}
	if l.epoch.begun {
		e.prior, e.priorGen = l.live, l.epoch.generation
	}
	l.epoch = e
	l.readings, l.live = map[flowID]flowReading{}, map[uint32]sdnlb.Counts{}
}

// read records a flow's counters and returns what it counted since the
// last reading. A flow whose counters went back is another flow with the
// same match (the switch restarted, or the flow was deleted and added
// again): all it counted is new. A flow's age does not tell: Open vSwitch
// restarts it when an add replaces the flow, and keeps its counters. A
// counter of all ones is one the switch does not have (OpenFlow's
// "unavailable"): it counts nothing, and the last reading stands.
func (l *FlowLedger) read(id flowID, memberNum uint32, c flowCount, packets, bytes uint64, round uint64) (newPackets, newBytes uint64) {
	r, ok := l.readings[id]
	if packets == unavailable {
		packets = r.packets
	}
	if bytes == unavailable {
		bytes = r.bytes
	}
	if !ok || packets < r.packets || bytes < r.bytes || r.member != memberNum || r.count != c {
		l.unlive(r)
		r = flowReading{}
	}
	l.readings[id] = flowReading{packets: packets, bytes: bytes, round: round, member: memberNum, count: c}
	newPackets, newBytes = packets-r.packets, bytes-r.bytes
	sum := l.live[memberNum]
	sum.Add(c.counts(newPackets, newBytes))
	l.live[memberNum] = sum
	return newPackets, newBytes
}

// unlive takes a reading out of the live sums: its flow is gone, or
// another.
func (l *FlowLedger) unlive(r flowReading) {
	if r.count == 0 {
		return
	}
	sum := l.live[r.member]
	sum = sum.Above(r.count.counts(r.packets, r.bytes))
	if sum == (sdnlb.Counts{}) {
		delete(l.live, r.member)
	} else {
		l.live[r.member] = sum
	}
}

// forget forgets a flow gone.
func (l *FlowLedger) forget(id flowID) {
	if r, ok := l.readings[id]; ok {
		l.unlive(r)
		delete(l.readings, id)
	}
}

// add counts what a flow counted since it was last read: into the
// member's counters, or in an epoch's first poll into its overlap.
func (l *FlowLedger) add(snap *model.Snapshot, memberNum uint32, c flowCount, packets, bytes uint64) {
	if l.epoch.first {
		o := l.epoch.overlap[memberNum]
		o.Add(c.counts(packets, bytes))
		l.epoch.overlap[memberNum] = o
		return
	}
	addCounted(snap, memberNum, c.counts(packets, bytes))
}

// addCounted adds what flows counted to the member numbered num, nil once
// the member is deleted: each connection a row saw open is one the member
// took.
func addCounted(snap *model.Snapshot, num uint32, n sdnlb.Counts) {
	if m := snap.MemberCnt[num]; m != nil {
		n.Connections += n.Opened
		m.Add(n)
	}
}

// endFirstPoll ends the epoch's first poll: its overlap waits to be
// settled, or without shared stats counts at once.
func (l *FlowLedger) endFirstPoll(snap *model.Snapshot) {
	if !l.epoch.first {
		return
	}
	l.epoch.first = false
	if l.shared {
		l.epoch.pending = true
		return
	}
	for num, c := range l.epoch.overlap {
		addCounted(snap, num, c)
	}
	l.epoch.overlap = nil
}

// Readings are the live sums of an epoch whose overlap is settled, by
// member number, and its generation; ok is false before that. The
// caller holds the ledger (Lock).
func (l *FlowLedger) Readings() (generation uint64, live map[uint32]sdnlb.Counts, ok bool) {
	if !l.epoch.begun || l.epoch.first || l.epoch.pending {
		return 0, nil, false
	}
	return l.epoch.generation, maps.Clone(l.live), true
}

// Overlap is an epoch's overlap waiting to be settled: what the flows had
// counted when this process first read them, by member number; prior is
// what the epoch before counted in this process, under priorGen, if any.
// Who settles it counts what the overlap holds beyond what the switch's
// last master had read (Counts.Above), and calls Settle.
func (l *FlowLedger) Overlap() (generation uint64, overlap, prior map[uint32]sdnlb.Counts, priorGen uint64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.epoch.pending {
		return 0, nil, nil, 0, false
	}
	return l.epoch.generation, l.epoch.overlap, l.epoch.prior, l.epoch.priorGen, true
}

// Settle ends the overlap of the epoch of generation: add is what of it
// counts for each member, by number.
func (l *FlowLedger) Settle(snap *model.Snapshot, generation uint64, add map[uint32]sdnlb.Counts) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.epoch.pending || l.epoch.generation != generation {
		return
	}
	for num, c := range add {
		addCounted(snap, num, c)
	}
	l.epoch.pending, l.epoch.overlap, l.epoch.prior = false, nil, nil
}

// Lock and Unlock hold the ledger still: no reading adds to the counters
// meanwhile, so that the counters and the readings read together agree.
func (l *FlowLedger) Lock()   { l.mu.Lock() }
func (l *FlowLedger) Unlock() { l.mu.Unlock() }

// unavailable is the value OpenFlow gives a counter a switch does not
// keep.
const unavailable = ^uint64(0)

// sweep forgets the flows that polls up to round no longer found: gone
// from the switch, all they counted was added when they were last read.
func (l *FlowLedger) sweep(round uint64) {
	for id, r := range l.readings {
		if r.round < round {
			l.unlive(r)
			delete(l.readings, id)
		}
	}
}

// accounting is a switch's share of the counters: the connections its
// dataplane counts as active, and the ledger of its flows. A connection
// is active from its setup until its end: for TCP, its FIN or reset,
// which the switch shows by dropping its flows' idle timeout to finIdle
// (model.Closed), seen at the next poll, or sends up at once for a VIP
// with a connection limit or a member with a capacity
// (model.ControllerPunts); for every protocol, its flows' removal. A connection that ended is kept until its flows go, so
// that the packets the controller still gets of it (a FIN retransmitted)
// reach its member.
type accounting struct {
	active  map[uint64]int64              // connections counted, by activeKey
	conns   map[model.ConnKey]countedConn // the connections counted, and those ended whose flows remain
	finIdle uint16                        // of the switch's TCP connection flows at their end; 0: they keep theirs
	ledger  *FlowLedger
	round   uint64 // the poll being assembled
}

// countedConn is a connection the switch counts, or counted.
type countedConn struct {
	member uint32 // its number
	ended  bool
}

func newAccounting(ledger *FlowLedger, finIdle uint16) accounting {
	return accounting{active: map[uint64]int64{}, conns: map[model.ConnKey]countedConn{}, finIdle: finIdle, ledger: ledger}
}

// activeKey names the connections of one VIP to one member.
func activeKey(vipNum, memberNum uint32) uint64 { return uint64(vipNum)<<32 | uint64(memberNum) }

// count counts connection k to the member numbered memberNum as active on
// the switch, once: it reports false for a connection counted already,
// set up again (a SYN retransmitted while its flows were being
// installed). One counted for another member stops counting for it; one
// that ended is a new connection on the same ports.
func (a *accounting) count(snap *model.Snapshot, k model.ConnKey, memberNum uint32) bool {
	if c, ok := a.conns[k]; ok && !c.ended {
		if c.member == memberNum {
			return false
		}
		a.end(snap, k, c.member)
	}
	a.conns[k] = countedConn{member: memberNum}
	a.active[activeKey(k.VIPNum, memberNum)]++
	return true
}

// end stops counting connection k, to the member numbered memberNum, if
// the switch counts it: the VIP's and the member's active counters drop.
func (a *accounting) end(snap *model.Snapshot, k model.ConnKey, memberNum uint32) {
	c, ok := a.conns[k]
	if !ok || c.member != memberNum || c.ended {
		return
	}
	a.conns[k] = countedConn{member: memberNum, ended: true}
	key := activeKey(k.VIPNum, memberNum)
	if a.active[key]--; a.active[key] <= 0 {
		delete(a.active, key)
	}
	if m := snap.MemberCnt[memberNum]; m != nil {
		m.Active.Add(-1)
	}
	if v := snap.VIPCnt[k.VIPNum]; v != nil {
		v.Active.Add(-1)
	}
}

// forget ends connection k, whose client → member flow is gone, and
// forgets it.
func (a *accounting) forget(snap *model.Snapshot, k model.ConnKey, memberNum uint32) {
	a.end(snap, k, memberNum)
	if c, ok := a.conns[k]; ok && c.member == memberNum {
		delete(a.conns, k)
	}
}

// connection returns the connection k the switch counts or counted.
func (a *accounting) connection(k model.ConnKey) (countedConn, bool) {
	c, ok := a.conns[k]
	return c, ok
}

// total is how many connections the switch counts as active.
func (a *accounting) total() int64 {
	var n int64
	for _, c := range a.active {
		n += c
	}
	return n
}

// FlowRemoved accounts a connection flow that ended: its counters join the
// member's totals and, for the client → member direction, the connection
// ends. Only connections this switch's dataplane counted end here: after a
// reconnect the switch reports flows of the old connection, which settled
// its counts when it ended.
func (dp *Switch) FlowRemoved(now time.Time, snap *model.Snapshot, fr *ofp.FlowRemoved) {
	cat, vipNum, memberNum, ok := model.CookieParts(fr.Cookie)
	if !ok || (cat != model.CatConn && cat != model.CatConnReply) {
		return
	}
	dir := countsIn
	if cat == model.CatConnReply {
		dir = countsOut
	}
	dp.accounting.ended(snap, memberNum, dir, fr)
	if cat == model.CatConnReply {
		return
	}
	if k, ok := model.ConnKeyOf(&fr.Match, vipNum); ok {
		dp.accounting.forget(snap, k, memberNum)
	}
	if v := snap.VIPByNum[vipNum]; v != nil && v.Persist > 0 && v.Pool != nil {
		if src, ok := model.MatchedSrc(&fr.Match); ok {
			dp.Affinity.touch(vipNum, v.Pool.Client(src), memberNum, now.Add(v.Persist))
		}
	}
}

// StatsRequest asks for the counters of every flow sdnlb installed; the
// poll reads those of the connection flows, the member routes and the
// reply flows.
func StatsRequest() ofp.FlowStatsRequest {
	return ofp.FlowStatsRequest{
		TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
		Cookie: model.AppID << model.CookieAppShift, CookieMask: model.MaskApp,
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
func counted(cat model.Category, table uint8, priority uint16) flowCount {
	switch {
	case cat == model.CatConn:
		return countsIn
	case cat == model.CatMemberRoute && table == model.TableFromMember && priority >= model.PrioFromMemberReset:
		return countsOut | countsClosed
	case cat == model.CatConnReply, cat == model.CatMemberRoute && table == model.TableFromMember:
		return countsOut
	case cat == model.CatMemberRoute && table == model.TableToMember:
		switch priority {
		case model.PrioMemberNew:
			return countsIn | countsOpened
		case model.PrioMemberFIN, model.PrioMemberRST:
			return countsIn | countsClosed
		case model.PrioMemberRoute:
			return countsIn
		}
	}
	return 0
}

// counts is what packets and bytes of a flow count for its member.
func (c flowCount) counts(packets, bytes uint64) sdnlb.Counts {
	var n sdnlb.Counts
	if c&countsIn != 0 {
		n.PacketsIn, n.BytesIn = packets, bytes
	}
	if c&countsOut != 0 {
		n.PacketsOut, n.BytesOut = packets, bytes
	}
	if c&countsOpened != 0 {
		n.Opened = packets
	}
	if c&countsClosed != 0 {
		n.Closed = packets
	}
	return n
}

// ended adds what a connection flow counted since it was last read, from
// its flow-removed, and forgets it.
func (a *accounting) ended(snap *model.Snapshot, memberNum uint32, c flowCount, fr *ofp.FlowRemoved) {
	id := flowID{cookie: fr.Cookie, match: fr.Match.Sum64(), priority: fr.Priority, table: fr.TableID}
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	packets, bytes := a.ledger.read(id, memberNum, c, fr.PacketCount, fr.ByteCount, 0)
	a.ledger.forget(id)
	a.ledger.add(snap, memberNum, c, packets, bytes)
}

// BeginPoll starts reading the reply to a StatsRequest.
func (dp *Switch) BeginPoll() { dp.accounting.beginPoll() }

func (a *accounting) beginPoll() {
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	a.ledger.round++
	a.round = a.ledger.round
}

// PollPart reads one part of the reply to a StatsRequest.
func (dp *Switch) PollPart(snap *model.Snapshot, stats []ofp.FlowStats, last bool) {
	dp.accounting.pollPart(snap, stats, last)
}

// pollPart adds what each flow of one part of the reply counted since it
// was last read to its member, and ends the TCP connections whose flows
// show their end; after the last part the ledger forgets the flows the
// poll did not find.
func (a *accounting) pollPart(snap *model.Snapshot, stats []ofp.FlowStats, last bool) {
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	for i := range stats {
		st := &stats[i]
		cat, vipNum, memberNum, ok := model.CookieParts(st.Cookie)
		if !ok {
			continue
		}
		if cat == model.CatConn && model.Closed(st, a.finIdle) {
			if k, ok := model.ConnKeyOf(&st.Match, vipNum); ok {
				a.end(snap, k, memberNum)
			}
		}
		c := counted(cat, st.TableID, st.Priority)
		if c == 0 {
			continue
		}
		id := flowID{cookie: st.Cookie, match: st.Match.Sum64(), priority: st.Priority, table: st.TableID}
		packets, bytes := a.ledger.read(id, memberNum, c, st.PacketCount, st.ByteCount, a.round)
		a.ledger.add(snap, memberNum, c, packets, bytes)
	}
	if last {
		a.ledger.sweep(a.round)
		a.ledger.endFirstPoll(snap)
	}
}

// Settle takes back what the dataplane of a switch that went away
// contributed to the active counters, and gives up its held setups. What
// its flows counted stays counted.
func (dp *Switch) Settle(snap *model.Snapshot) {
	dp.accounting.settle(snap)
	dp.held.release()
}

// settle takes back what the switch contributed to the active counters.
func (a *accounting) settle(snap *model.Snapshot) {
	clear(a.conns)
	for key, n := range a.active {
		if m := snap.MemberCnt[uint32(key)]; m != nil {
			m.Active.Add(-n)
		}
		if v := snap.VIPCnt[uint32(key>>32)]; v != nil {
			v.Active.Add(-n)
		}
	}
	clear(a.active)
}
