package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
)

// Through the controller: agent reports reach an ADAPTIVE CONTROLLER pool
// as health events, the pool is weighed every stats interval, and the
// connections follow the weights.
func TestAdaptive_ControllerPicks(t *testing.T) {
	cfg := testnet.Config(func(c *sdnlb.Config) { c.Pools[0].LBMethod = sdnlb.Adaptive })
	h, sw := connected(t, cfg, Options{StatsInterval: 10 * time.Millisecond}, 1, 2, 3)
	deadline := time.Now().Add(testnet.WaitFor)
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
		sw.packetIn(testnet.ClientOF, testnet.SYN(t, uint16(41000+i)))
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

// Members that start their slow start together keep the same shares all
// through it, so no share moves; their stats must still show the ramp as
// it is, and all of it once the window has passed.
func TestSlowStart_StatsFollowRamp(t *testing.T) {
	for _, method := range []sdnlb.LBMethod{sdnlb.Adaptive, sdnlb.WeightedRoundRobin} {
		t.Run(string(method), func(t *testing.T) {
			created := time.Now()
			cfg := testnet.Config(func(c *sdnlb.Config) {
				c.Pools[0].LBMethod, c.Pools[0].SlowStart = method, 5
				for _, m := range c.Members {
					m.CreatedAt = created
				}
			})
			h := startController(t, cfg, Options{StatsInterval: 10 * time.Millisecond})
			waitRamp(t, h, func(ramp, weight float64) bool { return ramp < 0.5 && weight < 0.5 })
			h.clock.advance(6 * time.Second)
			waitRamp(t, h, func(ramp, weight float64) bool { return ramp == 1 && weight == 1 })
		})
	}
}

// waitRamp waits until every member of pool p1 shows a slow start and an
// effective weight that ok takes.
func waitRamp(t *testing.T, h *harness, ok func(ramp, weight float64) bool) {
	t.Helper()
	deadline := time.Now().Add(testnet.WaitFor)
	for {
		var members []sdnlb.MemberStats
		st, err := h.c.PoolStats(context.Background(), "p1") // not found until the first load
		if err == nil {
			members = st.Members
		}
		done := err == nil
		for _, m := range members {
			done = done && ok(m.SlowStart, m.EffectiveWeight)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stats still show %+v (%v)", members, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
