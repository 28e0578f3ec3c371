package model

import (
	"maps"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/sched"
)

// Adaptive weights and slow start. A member is scheduled by its share
// (Member.share, 1..256 against the other members of its pool's
// rotation), which both dispatches read: the controller's schedulers as
// the member's weight, the switches' select groups as its slots. The share
// is the configured weight, except in two cases, which combine:
//
//   - ADAPTIVE pools follow each member's load, after Juniper SRX's
//     session distribution: every stats interval each member's weight
//     becomes
//
//     W_i = ΣW · E_i·C_i·S_i / Σ_j E_j·C_j·S_j
//
//     where ΣW is the sum of the configured weights, E_i the member's
//     weight in force, C_i its available CPU (what its agent reports, 1
//     without one) and S_i its available sessions (1 − active/capacity, 1
//     without a capacity). With equal weights in force that is SRX's
//     formula. Applied once, it gives a busy member less than an idle one
//     but leaves members of different costs at different loads (members
//     costing 1, 2 and 4 units a request settle at about 48, 65 and 78 %
//     CPU); applied every interval with the weights in force inside, it
//     moves the shares until every member's C·S is the same, which for
//     members reporting CPU means equal CPU use. Each step goes part of
//     the way (in ratio, adaptDamping) to the formula's weight, so that
//     the load, which answers a step one report later, does not make the
//     weights oscillate; it at most halves or doubles a weight
//     (adaptMaxStep), and keeps a member within a 16th and 16 times its
//     configured weight, so that one reporting no capacity still gets
//     the connections that tell when it has some again.
//   - In a pool with a slow start, a member that entered rotation (was
//     added, or came back UP) less than slow_start ago has its weight
//     scaled by the part of the window that passed: from nearly nothing
//     to all of it, linearly.
//
// A member with a capacity whose active connections reach it is full: the
// switches give it no slot until they fall below, which the weighting,
// like a share, carries to them (Member.Full); the controller checks it
// at every pick.
//
// A pool's shares change at most once a second. Those of an ADAPTIVE pool
// change only once some member's part of the pool moves by shareStep, or
// while a slow start runs (Due): a switch then re-points the group's
// buckets, with the fewest slots moved (slots.go), and connections
// already set up keep their member whatever their slot says (the
// tracker, or their own flows, hold it).

const (
	// reweighEvery bounds how often a pool's shares change.
	reweighEvery = time.Second
	// shareStep is the least change of a member's part of the pool that
	// an ADAPTIVE pool applies: half a slot of the select group.
	shareStep = 0.5 / GroupSlots
	// adaptDamping is the exponent of each ADAPTIVE step toward the
	// formula's weight: 0.5 goes half the way, as a ratio.
	adaptDamping = 0.3
	// adaptMaxStep bounds an ADAPTIVE step, as a factor of the weight,
	// both ways: a saturated member reports no free CPU, which the
	// formula reads as room for no connection at all, and one step would
	// take it to the floor.
	adaptMaxStep = 2.0
	// AdaptRange bounds an ADAPTIVE weight, as a factor of the configured
	// weight, both ways.
	AdaptRange = 16
	// restepUnknown is how long the reports a step read stand before a
	// step reads them again when no AGENT monitor says how often the
	// agents are asked (restepAfter).
	restepUnknown = 10 * time.Second
	// agentWriteEvery is how often, at most, the health engine passes a
	// member's agent report on (its own agentWriteEvery).
	agentWriteEvery = time.Second
)

// restepAfter is how long the reports a step read stand before a step
// reads them again: the health engine passes a report on only once it
// moved by 5 points, so reports that stood for two rounds of the agents
// and their writes since the step are what the members still say, and a
// step on them closes what is left of the gap. Sooner, a member's answer
// to the step may not have been asked yet, and a step on the same report
// would act on it twice.
func (p *Pool) restepAfter() time.Duration {
	if p.AgentRound == 0 {
		return restepUnknown
	}
	return 2 * (p.AgentRound + agentWriteEvery)
}

// SRXWeights is the SRX formula: the weights that share sumW among the
// members in proportion to w_i·c_i·s_i. It returns nil when no member has
// anything available.
func SRXWeights(sumW float64, w, c, s []float64) []float64 {
	total := 0.0
	for i := range w {
		total += w[i] * c[i] * s[i]
	}
	if !(total > 0) {
		return nil
	}
	out := make([]float64, len(w))
	for i := range w {
		out[i] = sumW * w[i] * c[i] * s[i] / total
	}
	return out
}

// weighting is how one member of a rotation is weighted.
type weighting struct {
	share     int     // the weight it is scheduled by, 1..sched.MaxWeight
	effective float64 // its weight in force, in units of the configured weights
	ramp      float64 // the part of its slow start that passed; 1 when none
	full      bool    // at its capacity: no new connection
}

// weigher keeps what the weights of ADAPTIVE pools and slow starts need
// across snapshots. Only the goroutine that follows the configuration uses
// it.
type weigher struct {
	pools map[string]*poolWeights
}

// poolWeights is one pool's weighting state.
type poolWeights struct {
	inForce map[uint32]float64   // ADAPTIVE: each member's weight in force (E_i)
	changed time.Time            // when the pool's shares last changed
	heard   map[uint32]time.Time // ADAPTIVE: each member's agent report the last step read
	stepped time.Time            // ADAPTIVE: when the last step was taken
}

func NewWeigher() *weigher { return &weigher{pools: map[string]*poolWeights{}} }

// weighs reports whether p's weighting may differ from its configured
// weights: ADAPTIVE, a slow start, an agent's NN% under a method that
// weighs members, or a member with a capacity.
func (p *Pool) weighs() bool {
	return p.Method == sdnlb.Adaptive || p.SlowStart > 0 || p.Method.Weighs() && slices.ContainsFunc(p.Rotation, (*Member).reports) ||
		slices.ContainsFunc(p.Rotation, func(m *Member) bool { return m.Capacity > 0 })
}

// AtCapacity reports whether the member's active connections reached its
// capacity: it takes no new connection until one ends.
func (m *Member) AtCapacity() bool {
	return m.Capacity > 0 && m.Cnt.ActiveConns() >= uint64(m.Capacity)
}

// reports says whether an agent has told the member's free share (NN%).
func (m *Member) reports() bool { return m.Agent != nil }

// Weigh returns the weighting of each member of p's rotation at now, by
// member number; step takes an ADAPTIVE pool's weights one step toward the
// formula's. The pool's state keeps only members of the rotation: one that
// leaves it and comes back starts again from its configured weight.
func (w *weigher) Weigh(p *Pool, now time.Time, step bool) map[uint32]weighting {
	pw := w.pools[p.ID]
	if pw == nil {
		pw = &poolWeights{inForce: map[uint32]float64{}, heard: map[uint32]time.Time{}}
		w.pools[p.ID] = pw
	}
	inForce := make([]float64, len(p.Rotation))
	agents := false
	for i, m := range p.Rotation {
		e, ok := pw.inForce[m.Num]
		switch {
		case ok && p.Method == sdnlb.Adaptive:
		case p.Method != sdnlb.Adaptive && p.Method.Weighs() && m.reports():
			// As HAProxy's agent check: NN% of the configured weight.
			e, agents = float64(m.Weight)*m.availableCPU(), true
		default:
			e = float64(m.Weight)
		}
		inForce[i] = e
	}
	if step && p.Method == sdnlb.Adaptive {
		if due := pw.due(p.Rotation, now, p.restepAfter()); due != nil {
			adapt(p.Rotation, inForce, due)
		}
	}
	clear(pw.inForce)
	if p.Method == sdnlb.Adaptive {
		for i, m := range p.Rotation {
			pw.inForce[m.Num] = inForce[i]
		}
	}
	out := make(map[uint32]weighting, len(p.Rotation))
	scaled := p.Method == sdnlb.Adaptive || agents
	peak := 0.0
	for i, m := range p.Rotation {
		r := m.ramp(now, p.SlowStart)
		if r < 1 {
			scaled = true
		}
		peak = max(peak, inForce[i])
		out[m.Num] = weighting{share: m.Weight, effective: inForce[i] * r, ramp: r, full: m.AtCapacity()}
	}
	if scaled {
		for num, wt := range out {
			wt.share = sched.MinWeight
			if peak > 0 {
				wt.share = min(max(int(math.Round(sched.MaxWeight*wt.effective/peak)), sched.MinWeight), sched.MaxWeight)
			}
			out[num] = wt
		}
	}
	return out
}

// due reports which of rotation's members a step moves at now, or nil
// for none: one whose agent has a report newer than the one the last step
// read, one without an agent (its sessions, which every stats poll
// renews), and every member once the reports stood for restep since the
// last step. A step on a report it acted on already would act on it again
// before its effect shows: a saturated member, whose report stays at no
// room while its backlog drains, would be cut at each other member's
// report down to the floor; with agents answering less often than the
// pool is weighed, the weights would overshoot and swing.
func (pw *poolWeights) due(rotation []*Member, now time.Time, restep time.Duration) []bool {
	again := now.Sub(pw.stepped) >= restep
	due := make([]bool, len(rotation))
	some := false
	for i, m := range rotation {
		due[i] = again || m.Agent == nil || m.Agent.At.After(pw.heard[m.Num])
		some = some || due[i]
	}
	if !some {
		return nil
	}
	pw.stepped = now
	clear(pw.heard)
	for _, m := range rotation {
		if m.Agent != nil {
			pw.heard[m.Num] = m.Agent.At
		}
	}
	return due
}

// adapt takes inForce, the weights in force of rotation's members, one
// damped step toward the SRX formula's, for the members due.
func adapt(rotation []*Member, inForce []float64, due []bool) {
	sumW := 0.0
	c, s := make([]float64, len(rotation)), make([]float64, len(rotation))
	for i, m := range rotation {
		sumW += float64(m.Weight)
		c[i], s[i] = m.availableCPU(), m.AvailableSessions()
	}
	target := SRXWeights(sumW, inForce, c, s)
	if target == nil {
		return // every member full: nothing tells them apart
	}
	for i, m := range rotation {
		if !due[i] {
			continue
		}
		step := min(max(math.Pow(target[i]/inForce[i], adaptDamping), 1/adaptMaxStep), adaptMaxStep)
		e := inForce[i] * step
		inForce[i] = min(max(e, float64(m.Weight)/AdaptRange), float64(m.Weight)*AdaptRange)
	}
}

// availableCPU is the member's C_i: what its agent reports, 1 without one.
func (m *Member) availableCPU() float64 {
	if m.Agent == nil {
		return 1
	}
	return float64(m.Agent.Available) / 100
}

// AvailableSessions is the member's S_i: 1 − active/capacity, 1 without a
// capacity.
func (m *Member) AvailableSessions() float64 {
	if m.Capacity <= 0 {
		return 1
	}
	return min(max(1-float64(m.Cnt.ActiveConns())/float64(m.Capacity), 0), 1)
}

// ramp is the part of its slow start the member has behind it at now: 1
// without one, or once it is over.
func (m *Member) ramp(now time.Time, slowStart time.Duration) float64 {
	if slowStart <= 0 {
		return 1
	}
	return min(max(float64(now.Sub(m.InRotationSince))/float64(slowStart), 0), 1)
}

// Due reports whether shares, p's rotation's new weighting, are to be
// applied at now: at most once every reweighEvery, for an ADAPTIVE pool
// only once a member's part of the pool moved by shareStep, and while a
// slow start runs whatever the shares do: members ramping together keep
// their shares, and their weights and ramps would otherwise show where
// they stood when the ramp began; and once a member reached its capacity
// or fell below it.
func (w *weigher) Due(p *Pool, shares map[uint32]weighting, now time.Time) bool {
	pw := w.pools[p.ID]
	if now.Sub(pw.changed) < reweighEvery {
		return false
	}
	if !sharesMoved(p, shares) && !rampMoved(p, shares) && !fullnessMoved(p, shares) {
		return false
	}
	pw.changed = now
	return true
}

// sharesMoved reports whether shares differ from p's rotation's, for an
// ADAPTIVE pool by shareStep of some member's part at least.
func sharesMoved(p *Pool, shares map[uint32]weighting) bool {
	oldTotal, newTotal := 0, 0
	changed := false
	for _, m := range p.Rotation {
		oldTotal += m.Share
		newTotal += shares[m.Num].share
		changed = changed || shares[m.Num].share != m.Share
	}
	if !changed || p.Method != sdnlb.Adaptive {
		return changed
	}
	for _, m := range p.Rotation {
		d := float64(shares[m.Num].share)/float64(newTotal) - float64(m.Share)/float64(oldTotal)
		if math.Abs(d) >= shareStep {
			return true
		}
	}
	return false
}

// rampMoved reports whether a member of p's rotation is further into its
// slow start than its weighting says.
func rampMoved(p *Pool, shares map[uint32]weighting) bool {
	return slices.ContainsFunc(p.Rotation, func(m *Member) bool { return shares[m.Num].ramp != m.RampDone })
}

// fullnessMoved reports whether a member of p's rotation reached its
// capacity, or fell below it, since it was last weighed.
func fullnessMoved(p *Pool, shares map[uint32]weighting) bool {
	return slices.ContainsFunc(p.Rotation, func(m *Member) bool { return shares[m.Num].full != m.Full })
}

// SetWeights gives p's rotation the weighting of shares.
func (p *Pool) SetWeights(shares map[uint32]weighting) {
	for _, m := range p.Rotation {
		wt := shares[m.Num]
		m.Share, m.Effective, m.RampDone, m.Full = wt.share, wt.effective, wt.ramp, wt.full
	}
}

// forget drops the state of the pools cfg no longer has.
func (w *weigher) forget(pools map[string]*Pool) {
	maps.DeleteFunc(w.pools, func(id string, _ *poolWeights) bool { return pools[id] == nil })
}

// Reweigh takes the ADAPTIVE pools one step and the slow starts on to now,
// and returns the snapshot with the shares that changed, or nil when none
// did. Like a health patch, it copies only the pools it changes.
func (b *Builder) Reweigh(now time.Time) *Snapshot {
	last := b.last
	type change struct {
		pool   *Pool
		shares map[uint32]weighting
	}
	var changes []change
	for _, id := range slices.Sorted(maps.Keys(last.Pools)) {
		p := last.Pools[id]
		if !p.weighs() || len(p.Rotation) == 0 {
			continue
		}
		if shares := b.weigher.Weigh(p, now, true); b.weigher.Due(p, shares, now) {
			changes = append(changes, change{p, shares})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	s, sc := b.beginPatch()
	for _, ch := range changes {
		p := s.ownPool(sc, ch.pool)
		for _, m := range ch.pool.Rotation {
			sc.ownMember(p, m)
		}
		p.Rotate() // of the patch's copies
		p.SetWeights(ch.shares)
		p.pickScheduler(ch.pool)
		if p.Switched() {
			for _, m := range p.Rotation {
				sc.Addrs = append(sc.Addrs, m.IP)
			}
		}
	}
	slices.SortFunc(sc.Addrs, netip.Addr.Compare)
	sc.Addrs = slices.Compact(sc.Addrs)
	s.relinkVIPs(sc)
	b.last = s
	return s
}
