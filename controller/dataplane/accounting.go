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
	mu sync.Mutex
	// readings are kept by scope, the connection flows by shard and the
	// rest apart, so that a poll that reads one shard forgets only that
	// shard's flows it did not find.
	readings [numScopes]map[flowID]flowReading
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
	// moved is when a read first found the packet count the flow has
	// (Unix nanoseconds): it has been idle at least since.
	moved  int64
	member uint32
	count  flowCount
}

// The readings' scopes: one per connection shard, then the rest.
const (
	restScope = model.ConnShards
	numScopes = model.ConnShards + 1
)

// scopeOf is the scope of the flow of cookie: its shard for a connection
// flow, else the rest (also a connection flow installed before shards,
// which an epoch's first poll finds and adoption adds again under its
// shard's cookie).
func scopeOf(cookie uint64) int {
	if cookie&model.MaskConnCats == 0 {
		return restScope
	}
	return int(model.ShardOf(cookie))
}

// NewFlowLedger returns the ledger of a switch not yet taken over;
// shared says the overlaps of its epochs wait to be settled (Overlap).
func NewFlowLedger(shared bool) *FlowLedger {
	l := &FlowLedger{live: map[uint32]sdnlb.Counts{}, shared: shared}
	l.forgetReadings()
	return l
}

func (l *FlowLedger) forgetReadings() {
	for i := range l.readings {
		l.readings[i] = map[flowID]flowReading{}
	}
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
	l.forgetReadings()
	l.live = map[uint32]sdnlb.Counts{}
}

// counting says whether what the flows count joins the counters: the
// epoch's overlap is settled. The caller holds the ledger.
func (l *FlowLedger) counting() bool {
	return !l.epoch.first && !l.epoch.pending
}

// firstPoll says whether the epoch's first poll, which must read every
// flow, is still to come.
func (l *FlowLedger) firstPoll() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.epoch.begun || l.epoch.first
}

// read records a flow's counters and returns what it counted since the
// last reading. A flow whose counters went back is another flow with the
// same match (the switch restarted, or the flow was deleted and added
// again): all it counted is new. A flow's age does not tell: Open vSwitch
// restarts it when an add replaces the flow, and keeps its counters. A
// counter of all ones is one the switch does not have (OpenFlow's
// "unavailable"): it counts nothing, and the last reading stands. idle is
// how long the flow's packet count has not moved, as far as the readings,
// taken at now (Unix nanoseconds), show.
func (l *FlowLedger) read(id flowID, memberNum uint32, c flowCount, packets, bytes uint64, round uint64, now int64) (newPackets, newBytes uint64, idle time.Duration) {
	readings := l.readings[scopeOf(id.cookie)]
	r, ok := readings[id]
	if packets == unavailable {
		packets = r.packets
	}
	if bytes == unavailable {
		bytes = r.bytes
	}
	if !ok || packets < r.packets || bytes < r.bytes || r.member != memberNum || r.count != c {
		l.unlive(r)
		r = flowReading{moved: now}
	}
	moved := r.moved
	if packets != r.packets {
		moved = now
	}
	readings[id] = flowReading{packets: packets, bytes: bytes, round: round, moved: moved, member: memberNum, count: c}
	newPackets, newBytes = packets-r.packets, bytes-r.bytes
	sum := l.live[memberNum]
	sum.Add(c.counts(newPackets, newBytes))
	l.live[memberNum] = sum
	return newPackets, newBytes, time.Duration(now - moved)
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
	readings := l.readings[scopeOf(id.cookie)]
	if r, ok := readings[id]; ok {
		l.unlive(r)
		delete(readings, id)
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

// sweep forgets the flows of scope that polls up to round no longer
// found: gone from the switch, all they counted was added when they were
// last read.
func (l *FlowLedger) sweep(round uint64, scope PollScope) {
	for i, readings := range l.readings {
		if !scope.covers(i) {
			continue
		}
		for id, r := range readings {
			if r.round < round {
				l.unlive(r)
				delete(readings, id)
			}
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
//
// A connection the switch's tracker holds has no flows: its member's
// route rows count it (countsOpened, countsClosed) from the first poll
// that reads them after its setup. Until then the controller counts it
// as active itself, so that the picks in between see it.
type accounting struct {
	active  map[uint64]int64              // connections counted, by activeKey
	conns   map[model.ConnKey]countedConn // the connections counted, and those ended whose flows remain
	finIdle uint16                        // of the switch's TCP connection flows at their end; 0: they keep theirs
	// age is how long a connection flow without an idle timeout may stay
	// idle before a poll deletes it; 0: never (Config.pollAge).
	age    time.Duration
	ledger *FlowLedger
	round  uint64 // the poll being assembled
	// planned counts the polls planned; shardPolls those that read one
	// shard of the connections.
	planned, shardPolls uint64
	// unread are the cookies of connection flows installed since their
	// shard was last read, each with the polls planned before.
	unread        map[uint64]uint64
	cookieScratch map[uint64]struct{} // shardRequests'
	// unpolled counts the tracked connections set up since the last poll
	// was planned, by activeKey; polled those set up before it, which
	// its read of the routes counts.
	unpolled, polled map[uint64]int64
}

// countedConn is a connection the switch counts, or counted.
type countedConn struct {
	member uint32 // its number
	ended  bool
}

func newAccounting(ledger *FlowLedger, finIdle uint16, age time.Duration) accounting {
	return accounting{active: map[uint64]int64{}, conns: map[model.ConnKey]countedConn{}, finIdle: finIdle, age: age, ledger: ledger,
		unpolled: map[uint64]int64{}, polled: map[uint64]int64{}, unread: map[uint64]uint64{}, cookieScratch: map[uint64]struct{}{}}
}

// countTracked counts a connection set up in the switch's tracker as
// active until a poll reads its member's routes (pollPart), once what the
// routes count joins the counters (an epoch's first poll waits for its
// overlap to be settled). The VIP's active count was taken at admission.
func (a *accounting) countTracked(snap *model.Snapshot, vipNum, memberNum uint32) {
	a.unpolled[activeKey(vipNum, memberNum)]++
	if m := snap.MemberCnt[memberNum]; m != nil {
		m.Active.Add(1)
	}
}

// planPoll marks the tracked connections set up so far as the next
// poll's: the switch handles messages in order, so their first packets
// passed the routes before it reads them.
func (a *accounting) planPoll() {
	for key, n := range a.unpolled {
		a.polled[key] += n
	}
	clear(a.unpolled)
}

// uncount stops counting the tracked connections of counts, which the
// routes count now, or which went with the switch.
func uncount(snap *model.Snapshot, counts map[uint64]int64) {
	for key, n := range counts {
		if m := snap.MemberCnt[uint32(key)]; m != nil {
			m.Active.Add(-n)
		}
		if v := snap.VIPCnt[uint32(key>>32)]; v != nil {
			v.Active.Add(-n)
		}
	}
	clear(counts)
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
	return flowsOf(model.AppID<<model.CookieAppShift, model.MaskApp)
}

func flowsOf(cookie, mask uint64) ofp.FlowStatsRequest {
	return flowsIn(ofp.TableAll, cookie, mask)
}

func flowsIn(table uint8, cookie, mask uint64) ofp.FlowStatsRequest {
	return ofp.FlowStatsRequest{TableID: table, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Cookie: cookie, CookieMask: mask}
}

// pollFlowBudget is about how many connection flows a poll reads at
// most: past it, a poll reads every flow but the connections' and one
// shard of those, the next poll the next shard. A switch's cost for a
// read grows with the flows it reads (Open vSwitch 3.1 spends about
// 3.7 µs a flow, in its main thread), so a table of 200,000 connection
// flows read at once would hold the switch for most of a second every
// interval.
const pollFlowBudget = 16384

// maxCookieReads bounds the requests that read a shard of the
// connections by exact cookie (shardRequests); past it, one request
// selects the shard by cookie mask.
const maxCookieReads = 256

// shardsToRead is how many shards a poll spreads connection flows over,
// a power of two: as few as keep each read within pollFlowBudget.
func shardsToRead(flows int) uint8 {
	n := uint8(1)
	for n < model.ConnShards && flows > int(n)*pollFlowBudget {
		n *= 2
	}
	return n
}

// A PollScope is what a poll reads: the flows but the connections'
// (rest), and the connection shards congruent to shard modulo of (none
// when of is 0).
type PollScope struct {
	rest      bool
	shard, of uint8
}

var everyFlow = PollScope{rest: true, of: 1}

// covers says whether the scope reads the flows of readings' scope i.
func (s PollScope) covers(i int) bool {
	if i == restScope {
		return s.rest
	}
	return s.of != 0 && uint8(i)%s.of == s.shard
}

// A Poll is the requests of one stats poll and what they read together.
type Poll struct {
	Requests []ofp.FlowStatsRequest
	Scope    PollScope
	planned  uint64 // the polls planned before it, this one too
}

// NextPoll plans the switch's next stats poll: one request that reads
// every flow, or, when the switch holds more connection flows than a
// poll should read, the rest and the next shard of the connections, so
// that each connection is read every few intervals. An epoch's first
// poll reads every flow, as does a poll of a switch that cannot read by
// cookie (plain OpenFlow 1.0 reads every flow whatever the request; Open
// vSwitch selects by cookie on 1.0 too). A connection's end shows at the
// latest when its flows go (flow-removed), whichever shard it is in.
//
// Open vSwitch finds the flows of a request with an exact cookie through
// its index of cookies, and those of any other request by walking the
// tables it names: so the rest is read from the tables that hold what it
// counts, and a shard by the cookies its flows carry (shardRequests),
// and a poll costs the switch what it reads, not the size of its table.
func (dp *Switch) NextPoll() Poll {
	a := &dp.accounting
	a.planPoll()
	n := shardsToRead(2 * len(a.conns))
	a.planned++
	if n == 1 || dp.OneTable && !dp.Nicira || a.ledger.firstPoll() {
		return Poll{Requests: []ofp.FlowStatsRequest{StatsRequest()}, Scope: everyFlow, planned: a.planned}
	}
	a.shardPolls++
	p := Poll{Scope: PollScope{rest: !dp.OneTable, shard: uint8(a.shardPolls % uint64(n)), of: n}, planned: a.planned}
	if p.Scope.rest {
		rest, mask := model.NotConnCookie()
		for _, t := range dp.restTables() {
			p.Requests = append(p.Requests, flowsIn(t, rest, mask))
		}
	}
	p.Requests = a.shardRequests(p.Requests, p.Scope)
	return p
}

// restTables are the tables that hold the flows but the connections'
// that a poll counts: the member routes (counted) and, in a fabric, the
// paths (pathCounters). A switch of one table holds neither.
func (dp *Switch) restTables() []uint8 {
	if dp.L2 == model.L2Fabric {
		return []uint8{model.TableToMember, model.TableFromMember, model.TableFabric}
	}
	return []uint8{model.TableToMember, model.TableFromMember}
}

// shardRequests appends to reqs the requests that read the connection
// flows of scope's shards: one for each cookie they carry (one a
// direction, VIP, member and shard), those the ledger read before and those
// of connections set up since, or one by the shards' cookie mask past
// maxCookieReads cookies. Shards of no cookie have nothing to read or
// forget: a poll of them and no rest asks nothing, and has nothing to
// end.
func (a *accounting) shardRequests(reqs []ofp.FlowStatsRequest, scope PollScope) []ofp.FlowStatsRequest {
	cookies := a.cookieScratch
	clear(cookies)
	a.ledger.mu.Lock()
	for i, readings := range a.ledger.readings {
		if i == restScope || !scope.covers(i) {
			continue
		}
		for id := range readings {
			cookies[id.cookie] = struct{}{}
		}
	}
	a.ledger.mu.Unlock()
	for cookie := range a.unread {
		if scope.covers(scopeOf(cookie)) {
			cookies[cookie] = struct{}{}
		}
	}
	if len(cookies) > maxCookieReads {
		cookie, mask := model.ShardCookie(scope.shard, scope.of)
		return append(reqs, flowsOf(cookie, mask))
	}
	for cookie := range cookies {
		reqs = append(reqs, flowsOf(cookie, ^uint64(0)))
	}
	return reqs
}

// installed notes the cookies of a connection's flows just sent, which
// no poll has read yet (unread), so that the next read of their shard
// asks for them.
func (a *accounting) installed(mods []ofp.FlowMod) {
	for i := range mods {
		a.unread[mods[i].Cookie] = a.planned
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
	packets, bytes, _ := a.ledger.read(id, memberNum, c, fr.PacketCount, fr.ByteCount, 0, 0)
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

// PollPart reads one part of the reply to a request of a poll, taken at
// now, and deletes the connection flows it finds idle for longer than
// their idle timeout. It keeps nothing of stats, whose storage the caller
// reuses for the next part.
func (dp *Switch) PollPart(now time.Time, snap *model.Snapshot, stats []ofp.FlowStats, out *Outbox) {
	dp.accounting.pollPart(now, snap, stats, out)
}

// pollPart adds what each flow of one part of the reply counted since it
// was last read to its member, ends the TCP connections whose flows show
// their end, and ages the connection flows.
func (a *accounting) pollPart(now time.Time, snap *model.Snapshot, stats []ofp.FlowStats, out *Outbox) {
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
		packets, bytes, idle := a.ledger.read(id, memberNum, c, st.PacketCount, st.ByteCount, a.round, now.UnixNano())
		a.ledger.add(snap, memberNum, c, packets, bytes)
		if a.idledOut(cat, st, idle) {
			del := model.StrictDelete(st)
			del.Cookie, del.CookieMask = st.Cookie, ^uint64(0)
			out.Send(&del)
		}
	}
}

// idledOut says whether a connection flow without an idle timeout, of
// category cat and statistics st, whose packet count has not moved for
// idle, is to be deleted, as the switch would have removed it had it the
// idle timeout. Its flow-removed then ends it as one timed out would. The
// delete cannot come earlier than the switch's idle timeout would have:
// the last packet counted came before the read that first found the
// count. One that races it came after that timeout too.
func (a *accounting) idledOut(cat model.Category, st *ofp.FlowStats, idle time.Duration) bool {
	return a.age != 0 && idle >= a.age && st.IdleTimeout == 0 && st.PacketCount != unavailable &&
		(cat == model.CatConn || cat == model.CatConnReply)
}

// EndPoll ends poll p, whose every reply was read: the ledger forgets the
// flows of its scope that it did not find, a read of every flow ends an
// epoch's first poll, and the tracked connections its read of the routes
// counted stop counting apart.
func (dp *Switch) EndPoll(snap *model.Snapshot, p *Poll) {
	a := &dp.accounting
	for cookie, planned := range a.unread {
		if planned < p.planned && p.Scope.covers(scopeOf(cookie)) {
			delete(a.unread, cookie)
		}
	}
	a.ledger.mu.Lock()
	defer a.ledger.mu.Unlock()
	a.ledger.sweep(a.round, p.Scope)
	if p.Scope == everyFlow {
		a.ledger.endFirstPoll(snap)
	}
	if p.Scope.rest && a.ledger.counting() {
		uncount(snap, a.polled)
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
	uncount(snap, a.active)
	uncount(snap, a.unpolled)
	uncount(snap, a.polled)
	clear(a.unread)
}
