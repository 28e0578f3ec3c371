//go:build e2e

package e2e

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// The members of the adaptive beds: single-threaded servers (one request
// at a time, HTTPServer.SetCost) whose requests cost 4, 8 and 16 ms, and
// an agent on each that reports the part of the last second its server
// was idle, as `sdnlb agent` reports a host's idle CPU.
var memberCosts = []time.Duration{4 * time.Millisecond, 8 * time.Millisecond, 16 * time.Millisecond}

const (
	// adaptiveLoadEvery, from each of three clients, is about 250
	// requests a second: 57 % of what the three members can serve
	// together (250 + 125 + 62.5 a second), more than the dearest can
	// serve alone at a third of it.
	adaptiveLoadEvery = 12 * time.Millisecond
)

// reportIdle has each member's agent say, every 250 ms until the test
// ends, the part of the last second the member's server was idle.
func reportIdle(t *testing.T, b *lbBed) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(stop); wg.Wait() })
	for i, h := range b.members {
		agent := h.ServeAgent(t, agentPort)
		agent.Set("100%")
		srv := b.servers[i]
		wg.Go(func() {
			tick := time.NewTicker(250 * time.Millisecond)
			defer tick.Stop()
			var window [4]time.Duration // busy at the last four ticks
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				busy := srv.Busy()
				used := busy - window[n%4]
				window[n%4] = busy
				if n < 4 {
					continue
				}
				idle := 100 - int(math.Round(100*min(used.Seconds(), 1)))
				agent.Set(strconv.Itoa(idle) + "%")
			}
		})
	}
}

// busyShares runs the load for d and returns each member's busy part of
// the last measure of it.
func busyShares(b *lbBed, d, measure time.Duration) []float64 {
	l := startLoad(b.clients, b.url, adaptiveLoadEvery, d, 2*time.Second)
	defer l.Stop()
	time.Sleep(d - measure)
	shares, _ := measureBusy(b, measure)
	return shares
}

// settledBusyShares runs the load until the weights in force settle (no
// member's moved by more than a tenth over the last three weighings),
// within settleWithin, then returns each member's busy part of measure
// more of it, the fewest requests a member took in it, and how long the
// weights took to settle. How long that takes depends on how soon the
// agents' reports and the polls come round, which a busy machine delays.
func settledBusyShares(t *testing.T, b *lbBed, measure, settleWithin time.Duration) ([]float64, int64, time.Duration) {
	t.Helper()
	l := startLoad(b.clients, b.url, adaptiveLoadEvery, settleWithin+measure+time.Second, 2*time.Second)
	defer l.Stop()
	start := time.Now()
	var history [][]float64
	for time.Since(start) < settleWithin {
		time.Sleep(time.Second)
		st := b.lb.PoolStats(b.pool.ID)
		w := make([]float64, len(st.Members))
		for i, m := range st.Members {
			w[i] = m.EffectiveWeight
		}
		history = append(history, w)
		if settled(history, 3, 0.1) {
			took := time.Since(start)
			shares, fewest := measureBusy(b, measure)
			return shares, fewest, took
		}
	}
	t.Fatalf("the weights in force did not settle within %v: %v", settleWithin, history[len(history)-1])
	return nil, 0, 0
}

// settled reports whether the last n+1 weightings of history moved no
// member's weight by more than by (relative) from one to the next.
func settled(history [][]float64, n int, by float64) bool {
	if len(history) <= n {
		return false
	}
	for i := len(history) - n; i < len(history); i++ {
		for j, w := range history[i] {
			if prev := history[i-1][j]; prev <= 0 || math.Abs(w-prev)/prev > by {
				return false
			}
		}
	}
	return true
}

// measureBusy returns each member's busy part of the next measure, and
// the fewest requests a member took in it.
func measureBusy(b *lbBed, measure time.Duration) ([]float64, int64) {
	before := make([]time.Duration, len(b.servers))
	hits := make([]int64, len(b.servers))
	for i, s := range b.servers {
		before[i], hits[i] = s.Busy(), s.Hits()
	}
	start := time.Now()
	time.Sleep(measure)
	elapsed := time.Since(start)
	shares := make([]float64, len(b.servers))
	fewest := int64(math.MaxInt64)
	for i, s := range b.servers {
		shares[i] = float64(s.Busy()-before[i]) / float64(elapsed)
		fewest = min(fewest, s.Hits()-hits[i])
	}
	return shares, fewest
}

func spreadOf(shares []float64) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, s := range shares {
		lo, hi = min(lo, s), max(hi, s)
	}
	return hi / lo
}

// newCostBed is a bed of three clients and three members of memberCosts
// behind an HTTP VIP whose pool has method and dispatch, with an AGENT
// monitor beside nothing else. The controller weighs the pools every
// second (--stats-interval, 2 s by default), so the weights converge in
// half the time they take with the default.
func newCostBed(t *testing.T, method sdnlb.LBMethod, dispatch sdnlb.Dispatch) *lbBed {
	b := newDispatchBed(t, 3, 3, method, dispatch, nil, "--stats-interval=1s")
	for i, s := range b.servers {
		s.SetCost(memberCosts[i])
	}
	reportIdle(t, b)
	b.lb.MustCreateMonitor(b.pool, map[string]any{"name": "agent", "type": sdnlb.MonitorAgent, "port": agentPort,
		"delay": 0.5, "timeout": 0.3, "max_retries": 3, "rise": 1})
	for _, m := range b.mems {
		b.lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
	}
	return b
}

// Members whose requests cost 4, 8 and 16 ms: ADAPTIVE, weighing them by
// what their agents report every second, settles their weights (within
// 45 s) on loads within 1.2 times of each other, in both dispatches, where
// round robin leaves the dearest saturated and the cheapest mostly idle
// (the measurement beside it, TestAdaptive_RoundRobinBaseline, runs with
// the benchmarks). The load is measured once the weights have settled, not
// after a fixed time, which a busy machine stretches.
func TestAdaptive_EqualisesLoad(t *testing.T) {
	for _, d := range sdnlb.Dispatches {
		t.Run("ADAPTIVE/"+string(d), func(t *testing.T) {
			b := newCostBed(t, sdnlb.Adaptive, d)
			shares, fewest, took := settledBusyShares(t, b, 12*time.Second, 45*time.Second)
			t.Logf("ADAPTIVE %s: the weights settled %v into the load", d, took.Round(time.Second))
			// The controller's weighted rotation hands each member its share
			// exactly; the switch hashes each connection onto the slots, so a
			// member's count spreads as a sample's: allow two standard
			// deviations of the smallest count either way.
			bound := 1.2
			if d == sdnlb.DispatchSwitch {
				e := 2 / math.Sqrt(float64(max(fewest, 100)))
				bound *= (1 + e) / (1 - e)
			}
			var weights []string
			st := b.lb.PoolStats(b.pool.ID)
			for _, m := range st.Members {
				weights = append(weights, fmt.Sprintf("%.2f", m.EffectiveWeight))
			}
			t.Logf("ADAPTIVE %s: busy %.2f, spread %.2f (bound %.2f, fewest requests %d), weights in force %s",
				d, shares, spreadOf(shares), bound, fewest, strings.Join(weights, " "))
			if spreadOf(shares) > bound {
				t.Errorf("busy %.2f: the busiest member at %.2f times the idlest, want at most %.2f", shares, spreadOf(shares), bound)
			}
		})
	}
}

// A member back UP in a pool with a slow start takes the new connections
// of a CONTROLLER pool, and the buckets of a SWITCH pool, step by step: in
// the first tenth of the window at most a fifth of its share, once the
// controller has its ramp done all of it. The two pools share the members,
// on two ports, so that one window serves both. The window is as short as
// the controller's weighing (every stats interval, 2 s) leaves steps in.
func TestSlowStart_MemberBackUp(t *testing.T) {
	const (
		window    = 8 * time.Second
		vipPort2  = 81
		member2nd = 8081
	)
	b := newDispatchBed(t, 3, 3, sdnlb.WeightedRoundRobin, sdnlb.DispatchController, nil)
	var switched sdnlb.Pool
	vip2 := b.lb.MustCreateVIP("switched", b.sw.Addr(101), sdnlb.ProtocolTCP, vipPort2, nil)
	b.lb.MustAPI("POST", "/v1/pools", map[string]any{"name": "switched", "vip_id": vip2.ID, "lb_method": sdnlb.WeightedRoundRobin,
		"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "slow_start": window.Seconds()}, 201, &switched)
	b.lb.MustAPI("PATCH", "/v1/pools/"+b.pool.ID, map[string]any{"slow_start": window.Seconds()}, 200, nil)
	var second []*HTTPServer
	for i, h := range b.members {
		second = append(second, h.ServeHTTP(t, member2nd, b.servers[i].Name))
		b.lb.MustCreateMember(&switched, h.IP, member2nd)
	}
	tcp := map[string]any{"name": "tcp", "type": sdnlb.MonitorTCP, "delay": 0.2, "timeout": 0.15, "max_retries": 2, "rise": 1}
	b.lb.MustCreateMonitor(b.pool, tcp)
	b.lb.MustCreateMonitor(&switched, tcp)
	b.lb.WaitPoolMembers(switched.ID, 3, 10*time.Second)
	b.waitBuckets(t, 3, 10*time.Second)

	back := b.servers[2]
	back.Stop()
	second[2].Stop()
	b.lb.WaitMemberStatus(b.mems[2].ID, sdnlb.MemberDown, 5*time.Second)
	// The other members were added a moment ago: their own slow starts
	// end first, so that only the member coming back ramps.
	time.Sleep(time.Until(b.lb.Member(b.mems[1].ID).CreatedAt.Add(window)))
	back.Restart(t)
	second[2].Restart(t)
	b.lb.WaitMemberStatus(b.mems[2].ID, sdnlb.MemberUp, 5*time.Second)
	up := b.lb.Member(b.mems[2].ID).Health.Since

	l := startLoad(b.clients, b.url, 15*time.Millisecond, window+25*time.Second, 2*time.Second)
	defer l.Stop()
	// part counts the member's share of the CONTROLLER pool's requests,
	// against its steady third, over [from, to] after it came back.
	var measured int64 // the requests the last part counted
	part := func(from, to time.Duration) float64 {
		time.Sleep(time.Until(up.Add(from)))
		h0, all0 := back.Hits(), hitsOf(b.servers)
		time.Sleep(time.Until(up.Add(to)))
		measured = hitsOf(b.servers) - all0
		return float64(back.Hits()-h0) / float64(measured) * 3
	}
	buckets := func() int {
		var n int
		for target, c := range b.buckets(t) {
			if strings.HasSuffix(target, " "+bucketLabel(b.members[2].IP)) {
				n += c
			}
		}
		return n
	}
	first := part(0, window/10)
	firstBuckets := buckets()
	if first > 0.2 || firstBuckets > 17 {
		t.Errorf("in the first tenth of the window the member took %.2f of its share of connections and has %d buckets, want at most 0.2 and 17",
			first, firstBuckets)
	}
	// The ramp ends a weighing after the window, by the controller's
	// clock, which saw the member UP after the engine did: wait for the
	// weights in force rather than for the window.
	rampDone := waitRampDone(t, b.lb, b.pool.ID, b.mems[2].ID, window+10*time.Second)
	const measure = 8 * time.Second
	from := rampDone.Sub(up)
	end := part(from, from+measure)
	endBuckets := buckets()
	// Weighted round robin gives the member every third pick, yet the
	// members' answers over a window spread wider than one pick (529, 543
	// and 527 of 1,599 were seen), as a sample's would. Bound the share by
	// three standard deviations of a third of the requests measured.
	tolerance := 3 * math.Sqrt(2/float64(max(measured, 1)))
	if math.Abs(end-1) > tolerance || endBuckets < 81 {
		t.Errorf("with its ramp done the member took %.2f of its share of %d connections and has %d buckets, want 1 within %.2f and 85",
			end, measured, endBuckets, tolerance)
	}
	t.Logf("share of connections: %.2f in the first tenth, %.2f of %d with the ramp done (%v after UP; bound %.2f); buckets %d then %d",
		first, end, measured, from.Round(time.Millisecond), tolerance, firstBuckets, endBuckets)
}

// waitRampDone waits until the controller weighs member of pool at its
// whole weight (its slow start behind it) and returns when it saw that.
func waitRampDone(t *testing.T, lb *sdnlbProc, poolID, memberID string, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for i := 0; ; i++ {
		ps := lb.PoolStats(poolID)
		if ps.Members[memberIndex(ps, memberID)].SlowStart == 1 {
			return time.Now()
		}
		if i > 10000 || time.Now().After(deadline) {
			t.Fatalf("member %s still ramping %v later", memberID, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// bucketLabel is how a bucket of a select group names the member at ip.
func bucketLabel(ip string) string {
	return fmt.Sprintf("%#x", binary.BigEndian.Uint32(netip.MustParseAddr(ip).AsSlice()))
}

func hitsOf(servers []*HTTPServer) int64 {
	var n int64
	for _, s := range servers {
		n += s.Hits()
	}
	return n
}
