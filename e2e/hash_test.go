//go:build e2e

package e2e

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// CONSISTENT_HASH on a real Open vSwitch: by CONNECTION a client's
// connections spread over the members; by CLIENT its 12 connections reach
// one member under SWITCH dispatch, and the same member once the
// controller dispatches the pool, which computes the switch's hash.
func TestDispatch_ConsistentHashKeys(t *testing.T) {
	b := newDispatchBed(t, 4, 4, sdnlb.ConsistentHash, sdnlb.DispatchSwitch, nil)
	for _, c := range b.clients {
		if counts := spread(t, []*Host{c}, b.url, 24); len(counts) < 2 {
			t.Errorf("by CONNECTION, %s's 24 connections were answered by %v, want them spread", c.Name, counts)
		}
	}

	poolPath := "/v1/pools/" + b.pool.ID
	b.lb.MustAPI("PATCH", poolPath, map[string]any{"hash_key": sdnlb.HashKeyClient}, 200, nil)
	b.waitFlows(t, "table=1", func(flows []string) bool { return strings.Contains(strings.Join(flows, "\n"), "multipath(nw_src") })
	bySwitch := b.clientMembers(t, "SWITCH")
	if n := b.lb.Metric("sdnlb_controller_setups_total"); n != 0 {
		t.Errorf("the controller set up %v connections, want none: the switch dispatches", n)
	}

	b.lb.MustAPI("PATCH", poolPath, map[string]any{"dispatch": sdnlb.DispatchController}, 200, nil)
	b.waitFlows(t, "table=5", func(flows []string) bool { return len(flows) == 0 })
	byController := b.clientMembers(t, "CONTROLLER")
	if n := b.lb.Metric("sdnlb_controller_setups_total"); n == 0 {
		t.Error("the controller set up no connection: it does not dispatch")
	}
	if !maps.Equal(byController, bySwitch) {
		t.Errorf("clients' members %v under CONTROLLER, %v under SWITCH", byController, bySwitch)
	}
	t.Logf("by CLIENT, each client reached one member, the same in both dispatches: %v", bySwitch)
}

// waitFlows waits until the switch's flows of filter (an ovs-ofctl flow
// filter) are as done says.
func (b *lbBed) waitFlows(tb testing.TB, filter string, done func(flows []string) bool) {
	tb.Helper()
	var flows []string
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(25 * time.Millisecond) {
		if flows = b.sw.DumpFlows(filter); done(flows) {
			return
		}
	}
	tb.Fatalf("after 10 s the flows of %s are still %q", filter, flows)
}
