package dataplane

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
)

// The worked example of Juniper's SRX session distribution: two units of
// 1M sessions each, one at 500k sessions and 10 % CPU, the other at 400k
// and 20 %, share 100 as 48 and 52.
func TestSRXWeights_WorkedExample(t *testing.T) {
	w := model.SRXWeights(100, []float64{50, 50}, []float64{0.9, 0.8}, []float64{1 - 500e3/1e6, 1 - 400e3/1e6})
	if got := fmt.Sprintf("%.0f %.0f", w[0], w[1]); got != "48 52" {
		t.Errorf("weights %v, want 48 and 52", w)
	}
	if model.SRXWeights(100, []float64{50, 50}, []float64{0, 0}, []float64{1, 1}) != nil {
		t.Error("members with nothing available got weights")
	}
}

// pool is a pool of members of the given weights, in rotation since at.
func weighedPool(method sdnlb.LBMethod, slowStart time.Duration, at time.Time, weights ...int) *model.Pool {
	p := &model.Pool{ID: "p", Method: method, SlowStart: slowStart}
	for i, w := range weights {
		p.Members = append(p.Members, &model.Member{ID: fmt.Sprint("m", i), Num: uint32(i + 1), Weight: w, Share: w,
			Effective: float64(w), RampDone: 1, Status: sdnlb.MemberUp, InRotationSince: at, Cnt: &model.MemberCounters{}})
	}
	p.Rotate()
	return p
}

// loadOf gives each member the CPU use a total load (in units of the
// first member's capacity) puts on it by the pool's shares, when a
// request costs the member cost[i] units: its agent reports the rest as
// available, at. It returns the CPU uses.
func loadOf(p *model.Pool, load float64, cost []float64, at time.Time) []float64 {
	total := 0
	for _, m := range p.Rotation {
		total += m.Share
	}
	use := make([]float64, len(p.Rotation))
	for i, m := range p.Rotation {
		use[i] = min(load*float64(m.Share)/float64(total)*cost[i], 1)
		m.Agent = &sdnlb.AgentReport{Available: int(math.Round(100 * (1 - use[i]))), At: at}
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
	w := model.NewWeigher()
	var use []float64
	steps := 0
	for ; steps < 30; steps++ { // a minute at the default stats interval
		use = loadOf(p, 1, cost, now)
		if spread(use) <= 1.1 {
			break
		}
		now = now.Add(2 * time.Second)
		if shares := w.Weigh(p, now, true); w.Due(p, shares, now) {
			p.SetWeights(shares)
		}
	}
	if spread(use) > 1.1 {
		t.Fatalf("after %d steps CPU use %.2f, want within 1.1 times of each other", steps, use)
	}
	t.Logf("CPU use %.2f after %d steps; shares %d %d %d", use, steps, p.Rotation[0].Share, p.Rotation[1].Share, p.Rotation[2].Share)
	if p.Rotation[0].Effective <= p.Rotation[1].Effective || p.Rotation[1].Effective <= p.Rotation[2].Effective {
		t.Errorf("effective weights %.2f %.2f %.2f, want the cheapest member first", p.Rotation[0].Effective, p.Rotation[1].Effective, p.Rotation[2].Effective)
	}

	// Settled, the weights stay settled: no step overshoots into an
	// oscillation.
	for range 15 {
		now = now.Add(2 * time.Second)
		if shares := w.Weigh(p, now, true); w.Due(p, shares, now) {
			p.SetWeights(shares)
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
	w := model.NewWeigher()
	for range 20 {
		now = now.Add(2 * time.Second)
		p.Rotation[0].Agent = &sdnlb.AgentReport{Available: 0, At: now}
		p.Rotation[1].Agent = &sdnlb.AgentReport{Available: 100, At: now}
		p.SetWeights(w.Weigh(p, now, true))
	}
	if e := p.Rotation[0].Effective; math.Abs(e-4.0/model.AdaptRange) > 1e-9 {
		t.Errorf("a member with no capacity has weight %v, want its weight over %d", e, model.AdaptRange)
	}
	if p.Rotation[0].Share < 1 {
		t.Errorf("share %d", p.Rotation[0].Share)
	}
	now = now.Add(2 * time.Second)
	p.Rotation[0].Agent = &sdnlb.AgentReport{Available: 0, At: now}
	p.Rotation[1].Agent = &sdnlb.AgentReport{Available: 0, At: now}
	before := p.Rotation[1].Effective
	p.SetWeights(w.Weigh(p, now, true))
	if p.Rotation[1].Effective != before {
		t.Errorf("with every member full the weights moved: %v to %v", before, p.Rotation[1].Effective)
	}
}

// Sessions count like CPU: a member near its capacity gets fewer new ones.
func TestAdaptive_Sessions(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.Adaptive, 0, now, 1, 1)
	p.Rotation[0].Capacity, p.Rotation[1].Capacity = 100, 100
	p.Rotation[0].Cnt.Active.Store(80)
	w := model.NewWeigher()
	p.SetWeights(w.Weigh(p, now, true))
	if p.Rotation[0].Share >= p.Rotation[1].Share {
		t.Errorf("shares %d and %d: the fuller member should get less", p.Rotation[0].Share, p.Rotation[1].Share)
	}
	if got := p.Rotation[0].AvailableSessions(); math.Abs(got-0.2) > 1e-9 {
		t.Errorf("available sessions %v, want 0.2", got)
	}
}

// A member in its slow start takes its share linearly over the window.
func TestSlowStart_Ramp(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.WeightedRoundRobin, time.Minute, start.Add(-time.Hour), 1, 1, 1)
	p.Rotation[2].InRotationSince = start
	w := model.NewWeigher()
	part := func(at time.Duration) float64 {
		p.SetWeights(w.Weigh(p, start.Add(at), false))
		return float64(p.Rotation[2].Share) / float64(p.Rotation[0].Share)
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
	if p.Rotation[2].RampDone != 1 || p.Rotation[2].Share != 1 {
		t.Errorf("after the window: ramp %v share %d, want the configured weight", p.Rotation[2].RampDone, p.Rotation[2].Share)
	}
}

// Shares change at most once a second per pool.
func TestWeigher_OncePerSecond(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.WeightedRoundRobin, time.Minute, start.Add(-time.Hour), 1, 1)
	p.Rotation[1].InRotationSince = start
	w := model.NewWeigher()
	applied := 0
	for ms := 0; ms <= 3000; ms += 100 {
		now := start.Add(time.Duration(ms) * time.Millisecond)
		if shares := w.Weigh(p, now, true); w.Due(p, shares, now) {
			p.SetWeights(shares)
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
	if snap := d.builder.Reweigh(d.now); snap != nil {
		d.snap = snap
		d.dp.Configure(d.now, snap, d.out)
	}
	return d.sent(nil)
}

// agentSays is the health change of member i (UP) whose agent reports
// available percent free.
func agentSays(i, available int, at time.Time) model.HealthChange {
	return model.HealthChange{MemberID: fmt.Sprint("m", i), Status: sdnlb.MemberUp, Since: at.Add(-time.Hour),
		Agent: &sdnlb.AgentReport{Available: available, At: at}}
}

// An ADAPTIVE pool the switch dispatches: its buckets follow the weights,
// step by step, and only when a member's part moves by half a slot.
func TestAdaptive_SwitchBuckets(t *testing.T) {
	d := newSwitchDecision(t, switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) { c.Pools[0].LBMethod = sdnlb.Adaptive }))
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	syn := testnet.SYN(t, 40000)
	if got := shares(d.bucketMembers(syn), 1, 2, 3); got[0] < 85 || got[2] < 85 {
		t.Fatalf("buckets %v before any report, want even", got)
	}
	var split []int
	for range 10 {
		d.now = d.now.Add(2 * time.Second)
		d.patch([]model.HealthChange{agentSays(1, 90, d.now), agentSays(2, 50, d.now), agentSays(3, 10, d.now)})
		d.reweigh()
		split = shares(d.bucketMembers(syn), 1, 2, 3)
	}
	if !(split[0] > split[1] && split[1] > split[2] && split[0]+split[1]+split[2] == model.GroupSlots) {
		t.Errorf("buckets %v after the agents reported 90, 50 and 10 %% free, want the freest first", split)
	}
	st := d.snap.Pools["p1"].ByNum[1].Stats("")
	if st.AvailableCPU == nil || *st.AvailableCPU != 0.9 || st.EffectiveWeight <= 1 {
		t.Errorf("member 1's stats %+v, want its agent's 0.9 and a weight above its configured 1", st)
	}

	// The same reports again and again: the weights go on moving toward
	// their bounds, and once there no group-mod goes out.
	for range 30 {
		d.now = d.now.Add(2 * time.Second)
		d.patch([]model.HealthChange{agentSays(1, 90, d.now), agentSays(2, 50, d.now), agentSays(3, 10, d.now)})
		d.reweigh()
	}
	d.now = d.now.Add(2 * time.Second)
	if sent := d.reweigh(); len(sent) > 0 {
		t.Errorf("settled weights still sent %q", sent)
	}
}

// A member back UP in a pool with a slow start takes its slots step by
// step over the window, in a SWITCH pool as in a CONTROLLER one, under
// every method that weighs members and the switch can pick by.
func TestSlowStart_SwitchBuckets(t *testing.T) {
	for _, method := range []sdnlb.LBMethod{sdnlb.WeightedRoundRobin, sdnlb.ConsistentHash} {
		t.Run(string(method), func(t *testing.T) { slowStartBuckets(t, method) })
	}
}

func slowStartBuckets(t *testing.T, method sdnlb.LBMethod) {
	d := newSwitchDecision(t, switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].SlowStart = method, 60
		for _, m := range c.Members {
			m.CreatedAt = time.Unix(1_600_000_000, 0)
		}
	}))
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	syn := testnet.SYN(t, 40000)
	owners := func() []int {
		if method == sdnlb.ConsistentHash {
			return d.slotMembers()
		}
		return d.bucketMembers(syn)
	}
	d.patch([]model.HealthChange{{MemberID: "m3", Status: sdnlb.MemberDown, Since: d.now}})
	d.now = d.now.Add(time.Minute)
	back := d.now
	d.patch([]model.HealthChange{{MemberID: "m3", Status: sdnlb.MemberUp, Since: back}})
	if got := shares(owners(), 3)[0]; got > 1 {
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
		if got := shares(owners(), 3)[0]; got < tt.min || got > tt.max {
			t.Errorf("%v into its slow start member 3 has %d buckets, want %d-%d", tt.at, got, tt.min, tt.max)
		}
	}
}

// Weighing a patch's pools writes to the patch's own members, never to
// those of the snapshot the switches may still be reading.
func TestWeights_PatchLeavesParent(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b := model.NewBuilder(func() time.Time { return now })
	cfg := testnet.Config(func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].SlowStart = sdnlb.WeightedRoundRobin, 60
		for _, m := range c.Members {
			m.CreatedAt, m.Health = now.Add(-time.Hour), sdnlb.MemberHealth{Status: sdnlb.MemberUp, Since: now.Add(-time.Hour)}
		}
	})
	parent, _ := b.Build(cfg)
	shares := func(s *model.Snapshot) [3]int {
		p := s.Pools["p1"]
		return [3]int{p.ByNum[1].Share, p.ByNum[2].Share, p.ByNum[3].Share}
	}
	before := shares(parent)
	b.Patch([]model.HealthChange{{MemberID: "m3", Status: sdnlb.MemberDown, Since: now}})
	now = now.Add(time.Second)
	up := b.Patch([]model.HealthChange{{MemberID: "m3", Status: sdnlb.MemberUp, Since: now}})
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
	b := model.NewBuilder(func() time.Time { return now })
	cfg := testnet.Config(func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].SlowStart = sdnlb.WeightedRoundRobin, 60
		for _, m := range c.Members {
			m.CreatedAt = now.Add(-time.Hour)
		}
	})
	b.Build(cfg)
	now = now.Add(time.Second)
	s := b.Patch([]model.HealthChange{{MemberID: "m1", Status: sdnlb.MemberUp, Since: now}})
	monitored := testnet.Config(func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].SlowStart = sdnlb.WeightedRoundRobin, 60
		for _, m := range c.Members {
			m.CreatedAt, m.Health = now.Add(-time.Hour), sdnlb.MemberHealth{Status: sdnlb.MemberUp, Since: now}
		}
	})
	if r := s.Pools["p1"].ByNum[1].RampDone; r != 1 {
		t.Errorf("after a patch from NO_MONITOR to UP member 1 is %v into a slow start", r)
	}
	s, _ = b.Build(monitored)
	for num, m := range s.Pools["p1"].ByNum {
		if m.RampDone != 1 {
			t.Errorf("after a reload with every member just UP, member %d is %v into a slow start", num, m.RampDone)
		}
	}
	b.Patch([]model.HealthChange{{MemberID: "m2", Status: sdnlb.MemberDown, Since: now}})
	now = now.Add(6 * time.Second)
	s = b.Patch([]model.HealthChange{{MemberID: "m2", Status: sdnlb.MemberUp, Since: now}})
	if r := s.Pools["p1"].ByNum[2].RampDone; r != 0 {
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
	w := model.NewWeigher()
	var use []float64
	for step := range 45 { // 90 s at 2 s; a report every 6 s
		now = now.Add(2 * time.Second)
		if step%3 == 0 {
			use = loadOf(p, 1, cost, now)
		}
		if shares := w.Weigh(p, now, true); w.Due(p, shares, now) {
			p.SetWeights(shares)
		}
	}
	if spread(use) > 1.1 {
		t.Errorf("CPU use %.2f with reports every third interval, want within 1.1 times of each other", use)
	}
}

// Reports that stand still are what the members still say: a step reads
// them again after 10 s (no AGENT monitor tells how often the agents
// are asked), and closes the gap they show.
func TestAdaptive_StandingReports(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.Adaptive, 0, now, 1, 1)
	p.Rotation[0].Agent = &sdnlb.AgentReport{Available: 40, At: now}
	p.Rotation[1].Agent = &sdnlb.AgentReport{Available: 60, At: now}
	w := model.NewWeigher()
	steps := 0
	last := p.Rotation[1].Effective
	for range 10 { // 20 s at 2 s, the reports unchanged
		now = now.Add(2 * time.Second)
		p.SetWeights(w.Weigh(p, now, true))
		if e := p.Rotation[1].Effective; e != last {
			steps, last = steps+1, e
		}
	}
	if steps != 2 { // the first, then one per 10 s
		t.Errorf("%d steps in 20 s on reports that stood still, want 2", steps)
	}
}

// An agent's NN% scales its member's weight under every method that
// weighs members, as HAProxy's agent check scales a server's; the methods
// that treat members alike leave it.
func TestAgent_PercentScalesWeight(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, method := range []sdnlb.LBMethod{sdnlb.WeightedRoundRobin, sdnlb.WeightedLeastConnections, sdnlb.ConsistentHash, sdnlb.RoundRobin} {
		t.Run(string(method), func(t *testing.T) {
			p := weighedPool(method, 0, now.Add(-time.Hour), 2, 2)
			p.Rotation[0].Agent = &sdnlb.AgentReport{Available: 50, At: now}
			p.SetWeights(model.NewWeigher().Weigh(p, now, false))
			got := float64(p.Rotation[0].Share) / float64(p.Rotation[1].Share)
			want := 0.5
			if !method.Weighs() {
				want = 1
			}
			if math.Abs(got-want) > 0.01 {
				t.Errorf("a member whose agent says 50%% has %.2f of its peer's share, want %.2f", got, want)
			}
		})
	}
}

// Members costing 1, 2 and 4 units a request, at equal weights to begin
// with, which saturate the dearest, weighed every second on what their
// agents, asked every half second, report as the health engine passes
// reports on: only once one moved by 5 points. A saturated member goes on
// reporting no room for a while after its share fell, as its backlog
// drains. From 8 s on, the loads stay within 1.2 times of each other. A
// step on each other member's report while the saturated one's still
// said no room would cut it to the floor, and steps too small to move a
// report by 5 points would then leave it there until a step read the
// reports again: 10 s later, where every 3 s is enough for agents asked
// that often.
func TestAdaptive_SaturatedMemberRecovers(t *testing.T) {
	cost := []float64{1, 2, 4}
	now := time.Unix(1_700_000_000, 0)
	p := weighedPool(sdnlb.Adaptive, 0, now, 1, 1, 1)
	p.AgentRound = 500 * time.Millisecond
	w := model.NewWeigher()
	written := make([]*sdnlb.AgentReport, len(p.Rotation))
	backlog := make([]int, len(p.Rotation))
	for s := range 45 {
		use := loadOf(p, 1, cost, now)
		for i, m := range p.Rotation {
			switch {
			case use[i] >= 1:
				backlog[i] = 3
			case backlog[i] > 0:
				backlog[i]--
				m.Agent.Available = 0
			}
			if last := written[i]; last != nil && max(m.Agent.Available-last.Available, last.Available-m.Agent.Available) < 5 {
				m.Agent = last
			}
			written[i] = m.Agent
		}
		if s >= 8 && spread(use) > 1.2 {
			t.Fatalf("CPU use %.2f %d s into the load, weights %.2f %.2f %.2f; want within 1.2 times of each other from 8 s on", use, s,
				p.Rotation[0].Effective, p.Rotation[1].Effective, p.Rotation[2].Effective)
		}
		now = now.Add(time.Second)
		if shares := w.Weigh(p, now, true); w.Due(p, shares, now) {
			p.SetWeights(shares)
		}
	}
}

// A pool's agents are asked as often as its AGENT monitors say: the
// longest delay of those it has, none without.
func TestAdaptive_AgentRoundFromMonitors(t *testing.T) {
	cfg := testnet.Config(func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].MonitorIDs = sdnlb.Adaptive, []string{"http", "agent", "slow-agent"}
		c.Monitors = []*sdnlb.Monitor{
			{ID: "http", Type: sdnlb.MonitorHTTP, Delay: 9},
			{ID: "agent", Type: sdnlb.MonitorAgent, Delay: 0.5},
			{ID: "slow-agent", Type: sdnlb.MonitorAgent, Delay: 2},
			{ID: "elsewhere", Type: sdnlb.MonitorAgent, Delay: 30},
		}
	})
	s, _ := model.NewBuilder(time.Now).Build(cfg)
	if got := s.Pools["p1"].AgentRound; got != 2*time.Second {
		t.Errorf("agent round %v, want the slower of its AGENT monitors' delays, 2s", got)
	}
	cfg.Pools[0].MonitorIDs = []string{"http"}
	if s, _ = model.NewBuilder(time.Now).Build(cfg); s.Pools["p1"].AgentRound != 0 {
		t.Errorf("agent round %v without an AGENT monitor, want none", s.Pools["p1"].AgentRound)
	}
}
