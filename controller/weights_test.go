package controller

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// The worked example of Juniper's SRX session distribution: two units of
// 1M sessions each, one at 500k sessions and 10 % CPU, the other at 400k
// and 20 %, share 100 as 48 and 52.
func TestSRXWeights_WorkedExample(t *testing.T) {
	w := srxWeights(100, []float64{50, 50}, []float64{0.9, 0.8}, []float64{1 - 500e3/1e6, 1 - 400e3/1e6})
	if got := fmt.Sprintf("%.0f %.0f", w[0], w[1]); got != "48 52" {
		t.Errorf("weights %v, want 48 and 52", w)
	}
	if srxWeights(100, []float64{50, 50}, []float64{0, 0}, []float64{1, 1}) != nil {
		t.Error("members with nothing available got weights")
	}
}

// pool is a pool of members of the given weights, in rotation since at.
func weighedPool(method sdnlb.LBMethod, slowStart time.Duration, at time.Time, weights ...int) *poolState {
	p := &poolState{id: "p", method: method, slowStart: slowStart}
	for i, w := range weights {
		p.members = append(p.members, &memberState{id: fmt.Sprint("m", i), num: uint32(i + 1), weight: w, share: w,
			effective: float64(w), rampDone: 1, status: sdnlb.MemberUp, inRotationSince: at, cnt: &memberCounters{}})
	}
	p.rotate()
	return p
}

// loadOf gives each member the CPU use a total load (in units of the
// first member's capacity) puts on it by the pool's shares, when a
// request costs the member cost[i] units: its agent reports the rest as
// available, at. It returns the CPU uses.
func loadOf(p *poolState, load float64, cost []float64, at time.Time) []float64 {
	total := 0
	for _, m := range p.rotation {
		total += m.share
	}
	use := make([]float64, len(p.rotation))
	for i, m := range p.rotation {
		use[i] = min(load*float64(m.share)/float64(total)*cost[i], 1)
		m.agent = &sdnlb.AgentReport{Available: int(math.Round(100 * (1 - use[i]))), At: at}
	}
	return use
}

func spread(use []float64) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, u := range use {
		lo, hi = min(lo, u), max(hi, u)
	}
	return hi / lo
}

// Members costing 1, 2 and 4 units a request, weighed every interval by
// what their agents report, end at the same CPU use; round robin leaves
// the dearest saturated and the cheapest mostly idle.
func TestAdaptive_EqualisesCPU(t *testing.T) {
	cost := []float64{1, 2, 4}
	now := time.Unix(1_700_000_000, 0)
	rr := weighedPool(sdnlb.RoundRobin, 0, now, 1, 1, 1)
	if use := loadOf(rr, 1, cost, now); spread(use) < 2.9 {
		t.Fatalf("round robin: CPU use %.2f, want the dearest at 3 times the cheapest", use)
	}

	p := weighedPool(sdnlb.Adaptive, 0, now, 1, 1, 1)
	w := newWeigher()
	var use []float64
	steps := 0
	for ; steps < 30; steps++ { // a minute at the default stats interval
		use = loadOf(p, 1, cost, now)
		if spread(use) <= 1.1 {
			break
		}
		now = now.Add(2 * time.Second)
		if shares := w.weigh(p, now, true); w.due(p, shares, now) {
			p.setWeights(shares)
		}
	}
	if spread(use) > 1.1 {
		t.Fatalf("after %d steps CPU use %.2f, want within 1.1 times of each other", steps, use)
	}
	t.Logf("CPU use %.2f after %d steps; shares %d %d %d", use, steps, p.rotation[0].share, p.rotation[1].share, p.rotation[2].share)
	if p.rotation[0].effective <= p.rotation[1].effective || p.rotation[1].effective <= p.rotation[2].effective {
		t.Errorf("effective weights %.2f %.2f %.2f, want the cheapest member first", p.rotation[0].effective, p.rotation[1].effective, p.rotation[2].effective)
	}

	// Settled, the weights stay settled: no step overshoots into an
	// oscillation.
	for range 15 {
		now = now.Add(2 * time.Second)
		if shares := w.weigh(p, now, true); w.due(p, shares, now) {
			p.setWeights(shares)
		}
		if use = loadOf(p, 1, cost, now); spread(use) > 1.1 {
			t.Fatalf("CPU use %.2f after settling", use)
		}
	}
}

// A member whose agent reports no capacity keeps a 16th of its weight,
// so that its connections tell when it has some again; all members full
// leaves the weights as they are.
func TestAdaptive_Bounds(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.Adaptive, 0, now, 4, 4)
	w := newWeigher()
	for range 20 {
		now = now.Add(2 * time.Second)
		p.rotation[0].agent = &sdnlb.AgentReport{Available: 0, At: now}
		p.rotation[1].agent = &sdnlb.AgentReport{Available: 100, At: now}
		p.setWeights(w.weigh(p, now, true))
	}
	if e := p.rotation[0].effective; math.Abs(e-4.0/adaptRange) > 1e-9 {
		t.Errorf("a member with no capacity has weight %v, want its weight over %d", e, adaptRange)
	}
	if p.rotation[0].share < 1 {
		t.Errorf("share %d", p.rotation[0].share)
	}
	now = now.Add(2 * time.Second)
	p.rotation[0].agent = &sdnlb.AgentReport{Available: 0, At: now}
	p.rotation[1].agent = &sdnlb.AgentReport{Available: 0, At: now}
	before := p.rotation[1].effective
	p.setWeights(w.weigh(p, now, true))
	if p.rotation[1].effective != before {
		t.Errorf("with every member full the weights moved: %v to %v", before, p.rotation[1].effective)
	}
}

// Sessions count like CPU: a member near its capacity gets fewer new ones.
func TestAdaptive_Sessions(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.Adaptive, 0, now, 1, 1)
	p.rotation[0].capacity, p.rotation[1].capacity = 100, 100
	p.rotation[0].cnt.active.Store(80)
	w := newWeigher()
	p.setWeights(w.weigh(p, now, true))
	if p.rotation[0].share >= p.rotation[1].share {
		t.Errorf("shares %d and %d: the fuller member should get less", p.rotation[0].share, p.rotation[1].share)
	}
	if got := p.rotation[0].availableSessions(); math.Abs(got-0.2) > 1e-9 {
		t.Errorf("available sessions %v, want 0.2", got)
	}
}

// A member in its slow start takes its share linearly over the window.
func TestSlowStart_Ramp(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.WeightedRoundRobin, time.Minute, start.Add(-time.Hour), 1, 1, 1)
	p.rotation[2].inRotationSince = start
	w := newWeigher()
	part := func(at time.Duration) float64 {
		p.setWeights(w.weigh(p, start.Add(at), false))
		return float64(p.rotation[2].share) / float64(p.rotation[0].share)
	}
	for _, tt := range []struct {
		at       time.Duration
		min, max float64
	}{
		{0, 0, 0.01},
		{6 * time.Second, 0.09, 0.11}, // the first 10 % of the window: at most 10 % of its share
		{30 * time.Second, 0.49, 0.51},
		{time.Minute, 1, 1},
		{2 * time.Minute, 1, 1},
	} {
		if got := part(tt.at); got < tt.min || got > tt.max {
			t.Errorf("at %v the member has %.3f of its share, want %.2f-%.2f", tt.at, got, tt.min, tt.max)
		}
	}
	if p.rotation[2].rampDone != 1 || p.rotation[2].share != 1 {
		t.Errorf("after the window: ramp %v share %d, want the configured weight", p.rotation[2].rampDone, p.rotation[2].share)
	}
}

// Shares change at most once a second per pool.
func TestWeigher_OncePerSecond(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.WeightedRoundRobin, time.Minute, start.Add(-time.Hour), 1, 1)
	p.rotation[1].inRotationSince = start
	w := newWeigher()
	applied := 0
	for ms := 0; ms <= 3000; ms += 100 {
		now := start.Add(time.Duration(ms) * time.Millisecond)
		if shares := w.weigh(p, now, true); w.due(p, shares, now) {
			p.setWeights(shares)
			applied++
		}
	}
	if applied != 4 { // at 0, 1, 2 and 3 s
		t.Errorf("shares changed %d times in 3 s, want 4", applied)
	}
}

// reweigh has the decision's switch follow the weights at d.now.
func (d *decision) reweigh() []string {
	d.tb.Helper()
	if snap := d.builder.reweigh(d.now); snap != nil {
		d.snap = snap
		d.dp.configure(d.now, snap, d.out)
	}
	return d.sent(nil)
}

// agentSays is the health change of member i (UP) whose agent reports
// available percent free.
func agentSays(i, available int, at time.Time) healthChange {
	return healthChange{memberID: fmt.Sprint("m", i), status: sdnlb.MemberUp, since: at.Add(-time.Hour),
		agent: &sdnlb.AgentReport{Available: available, At: at}}
}

// An ADAPTIVE pool the switch dispatches: its buckets follow the weights,
// step by step, and only when a member's part moves by half a slot.
func TestAdaptive_SwitchBuckets(t *testing.T) {
	d := newSwitchDecision(t, switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) { c.Pools[0].LBMethod = sdnlb.Adaptive }))
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	group := d.dp.dispatcher.switched[1].group
	if got := d.bucketShares(group, natTo(1), natTo(2), natTo(3)); got[0] < 85 || got[2] < 85 {
		t.Fatalf("buckets %v before any report, want even", got)
	}
	var shares []int
	for range 10 {
		d.now = d.now.Add(2 * time.Second)
		d.patch([]healthChange{agentSays(1, 90, d.now), agentSays(2, 50, d.now), agentSays(3, 10, d.now)})
		d.reweigh()
		shares = d.bucketShares(group, natTo(1), natTo(2), natTo(3))
	}
	if !(shares[0] > shares[1] && shares[1] > shares[2] && shares[0]+shares[1]+shares[2] == groupSlots) {
		t.Errorf("buckets %v after the agents reported 90, 50 and 10 %% free, want the freest first", shares)
	}
	st := d.snap.pools["p1"].byNum[1].stats()
	if st.AvailableCPU == nil || *st.AvailableCPU != 0.9 || st.EffectiveWeight <= 1 {
		t.Errorf("member 1's stats %+v, want its agent's 0.9 and a weight above its configured 1", st)
	}

	// The same reports again and again: the weights go on moving toward
	// their bounds, and once there no group-mod goes out.
	for range 30 {
		d.now = d.now.Add(2 * time.Second)
		d.patch([]healthChange{agentSays(1, 90, d.now), agentSays(2, 50, d.now), agentSays(3, 10, d.now)})
		d.reweigh()
	}
	d.now = d.now.Add(2 * time.Second)
	if sent := d.reweigh(); len(sent) > 0 {
		t.Errorf("settled weights still sent %q", sent)
	}
}

// A member back UP in a pool with a slow start takes its slots step by
// step over the window, in a SWITCH pool as in a CONTROLLER one.
func TestSlowStart_SwitchBuckets(t *testing.T) {
	d := newSwitchDecision(t, switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].SlowStart = sdnlb.WeightedRoundRobin, 60
		for _, m := range c.Members {
			m.CreatedAt = time.Unix(1_600_000_000, 0)
		}
	}))
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	group := d.dp.dispatcher.switched[1].group
	d.patch([]healthChange{{memberID: "m3", status: sdnlb.MemberDown, since: d.now}})
	d.now = d.now.Add(time.Minute)
	back := d.now
	d.patch([]healthChange{{memberID: "m3", status: sdnlb.MemberUp, since: back}})
	if got := d.bucketShares(group, natTo(3))[0]; got > 1 {
		t.Errorf("member 3 has %d buckets as it comes back, want at most 1", got)
	}
	for _, tt := range []struct {
		at       time.Duration
		min, max int
	}{
		// Its weight ramps linearly: a tenth of it, 0.1 of 2.1 of the
		// slots; half of it, 0.5 of 2.5; all of it.
		{6 * time.Second, 11, 13},
		{30 * time.Second, 50, 52},
		{time.Minute, 85, 86},
	} {
		for d.now.Before(back.Add(tt.at)) {
			d.now = d.now.Add(time.Second)
			d.reweigh()
		}
		if got := d.bucketShares(group, natTo(3))[0]; got < tt.min || got > tt.max {
			t.Errorf("%v into its slow start member 3 has %d buckets, want %d-%d", tt.at, got, tt.min, tt.max)
		}
	}
}

// Through the controller: agent reports reach an ADAPTIVE CONTROLLER pool
// as health events, the pool is weighed every stats interval, and the
// connections follow the weights.
func TestAdaptive_ControllerPicks(t *testing.T) {
	cfg := testConfig(func(c *sdnlb.Config) { c.Pools[0].LBMethod = sdnlb.Adaptive })
	h, sw := connected(t, cfg, Options{StatsInterval: 10 * time.Millisecond}, 1, 2, 3)
	deadline := time.Now().Add(waitFor)
	var st *sdnlb.PoolStats
	for {
		// The agents say it again, and a step is due once a second of
		// the controller's time passed.
		h.clock.advance(2 * time.Second)
		for i, free := range []int{90, 50, 10} {
			h.src.setHealthReport(fmt.Sprint("m", i+1), sdnlb.MemberUp, &sdnlb.AgentReport{Available: free, At: h.clock.now()})
		}
		st, _ = h.c.PoolStats(context.Background(), "p1")
		w := []float64{st.Members[0].EffectiveWeight, st.Members[1].EffectiveWeight, st.Members[2].EffectiveWeight}
		if w[0] > 1.5*w[1] && w[1] > 1.5*w[2] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("effective weights %v never followed the agents' 90, 50 and 10 %% free", w)
		}
		time.Sleep(20 * time.Millisecond)
	}
	counts := map[string]int{}
	for i := range 60 {
		sw.packetIn(clientOF, syn(t, uint16(41000+i)))
		s := nextSetup(t, sw)
		counts[memberOf(t, &s.fwd)]++
	}
	if !(counts["10.0.0.1"] > counts["10.0.0.2"] && counts["10.0.0.2"] > counts["10.0.0.3"] && counts["10.0.0.3"] > 0) {
		t.Errorf("connections %v with weights %.2f %.2f %.2f, want them in that order", counts,
			st.Members[0].EffectiveWeight, st.Members[1].EffectiveWeight, st.Members[2].EffectiveWeight)
	}
	if c := st.Members[2].AvailableCPU; c == nil || *c != 0.1 {
		t.Errorf("member 3's available CPU %v, want its agent's 0.1", c)
	}
}

// Weighing a patch's pools writes to the patch's own members, never to
// those of the snapshot the switches may still be reading.
func TestWeights_PatchLeavesParent(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := newSnapshotBuilder(func() time.Time { return now })
	cfg := testConfig(func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].SlowStart = sdnlb.WeightedRoundRobin, 60
		for _, m := range c.Members {
			m.CreatedAt, m.Health = now.Add(-time.Hour), sdnlb.MemberHealth{Status: sdnlb.MemberUp, Since: now.Add(-time.Hour)}
		}
	})
	parent, _ := b.build(cfg)
	shares := func(s *snapshot) [3]int {
		p := s.pools["p1"]
		return [3]int{p.byNum[1].share, p.byNum[2].share, p.byNum[3].share}
	}
	before := shares(parent)
	b.patch([]healthChange{{memberID: "m3", status: sdnlb.MemberDown, since: now}})
	now = now.Add(time.Second)
	up := b.patch([]healthChange{{memberID: "m3", status: sdnlb.MemberUp, since: now}})
	if shares(parent) != before {
		t.Errorf("the parent's shares moved from %v to %v", before, shares(parent))
	}
	if s := shares(up); s[2] > 1 || s[0] != 256 {
		t.Errorf("shares %v with member 3 back UP a second into its slow start, want it at the least", s)
	}
}

// A monitor attached to members in rotation (NO_MONITOR, then UP) brings
// no slow start, through a patch as through a full reload; coming back
// from DOWN does.
func TestSlowStart_OnlyBackIntoRotation(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := newSnapshotBuilder(func() time.Time { return now })
	cfg := testConfig(func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].SlowStart = sdnlb.WeightedRoundRobin, 60
		for _, m := range c.Members {
			m.CreatedAt = now.Add(-time.Hour)
		}
	})
	b.build(cfg)
	now = now.Add(time.Second)
	s := b.patch([]healthChange{{memberID: "m1", status: sdnlb.MemberUp, since: now}})
	monitored := testConfig(func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].SlowStart = sdnlb.WeightedRoundRobin, 60
		for _, m := range c.Members {
			m.CreatedAt, m.Health = now.Add(-time.Hour), sdnlb.MemberHealth{Status: sdnlb.MemberUp, Since: now}
		}
	})
	if r := s.pools["p1"].byNum[1].rampDone; r != 1 {
		t.Errorf("after a patch from NO_MONITOR to UP member 1 is %v into a slow start", r)
	}
	s, _ = b.build(monitored)
	for num, m := range s.pools["p1"].byNum {
		if m.rampDone != 1 {
			t.Errorf("after a reload with every member just UP, member %d is %v into a slow start", num, m.rampDone)
		}
	}
	b.patch([]healthChange{{memberID: "m2", status: sdnlb.MemberDown, since: now}})
	now = now.Add(6 * time.Second)
	s = b.patch([]healthChange{{memberID: "m2", status: sdnlb.MemberUp, since: now}})
	if r := s.pools["p1"].byNum[2].rampDone; r != 0 {
		t.Errorf("member 2 back from DOWN is %v into its slow start, want 0", r)
	}
}

// Agents that answer less often than the pool is weighed: a step acts
// only on a report it has not acted on, so the weights settle instead of
// overshooting and swinging.
func TestAdaptive_SlowReports(t *testing.T) {
	cost := []float64{1, 2, 4}
	now := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.Adaptive, 0, now, 1, 1, 1)
	w := newWeigher()
	var use []float64
	for step := range 45 { // 90 s at 2 s; a report every 6 s
		now = now.Add(2 * time.Second)
		if step%3 == 0 {
			use = loadOf(p, 1, cost, now)
		}
		if shares := w.weigh(p, now, true); w.due(p, shares, now) {
			p.setWeights(shares)
		}
	}
	if spread(use) > 1.1 {
		t.Errorf("CPU use %.2f with reports every third interval, want within 1.1 times of each other", use)
	}
}

// Reports that stand still are what the members still say: a step reads
// them again after restepEvery, and closes the gap they show.
func TestAdaptive_StandingReports(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.Adaptive, 0, now, 1, 1)
	p.rotation[0].agent = &sdnlb.AgentReport{Available: 40, At: now}
	p.rotation[1].agent = &sdnlb.AgentReport{Available: 60, At: now}
	w := newWeigher()
	steps := 0
	last := p.rotation[1].effective
	for range 10 { // 20 s at 2 s, the reports unchanged
		now = now.Add(2 * time.Second)
		p.setWeights(w.weigh(p, now, true))
		if e := p.rotation[1].effective; e != last {
			steps, last = steps+1, e
		}
	}
	if steps != 2 { // the first, then one per restepEvery
		t.Errorf("%d steps in 20 s on reports that stood still, want 2", steps)
	}
}
