//go:build e2e

package e2e

import (
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// TestController_TrackedConnections: a CONTROLLER pool's TCP connections,
// on a switch with the connection tracker, cost the controller one
// packet-in each and the switch no flow-mod: the controller commits each
// in the tracker with its member, and the switch carries the rest both
// ways, also once the controller is gone.
func TestController_TrackedConnections(t *testing.T) {
	const n = 50
	b := newBedOn(t, openFlow13, 1, 3, sdnlb.RoundRobin, sdnlb.DispatchController, nil)
	c := b.clients[0]
	requireAll(t, spread(t, b.clients, b.url, 6), b.serverNames()) // every member known to the switch
	const flowMods, packetIns = "sdnlb_controller_flow_mods_total", `sdnlb_controller_packet_ins_total{kind="lb"}`
	modsBefore, insBefore := b.lb.Metric(flowMods), b.lb.Metric(packetIns)

	seen := map[string]int{}
	for i := range n {
		body, err := get(c, b.url, 5*time.Second)
		if err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, n, err)
		}
		seen[body]++
	}
	mods, ins := b.lb.Metric(flowMods)-modsBefore, b.lb.Metric(packetIns)-insBefore
	t.Logf("%d sequential connections: members %v, %v flow-mods, %v VIP packet-ins", n, seen, mods, ins)
	for _, s := range b.servers {
		if seen[s.Name] != n/len(b.servers) && seen[s.Name] != n/len(b.servers)+1 {
			t.Errorf("members %v, want the rotation's %d or %d each", seen, n/len(b.servers), n/len(b.servers)+1)
			break
		}
	}
	if mods != 0 {
		t.Errorf("%v flow-mods for %d connections, want none: the tracker holds them", mods, n)
	}
	// One packet-in per connection: its SYN. The bound leaves room for a
	// SYN the client sent again; the connection's other packets never
	// come up, whatever the switch's timing.
	if ins < n || ins > 2*n {
		t.Errorf("%v VIP packet-ins for %d connections, want one per connection", ins, n)
	}

	// A connection held open goes on once the controller is gone.
	held := openHeld(t, b, c)
	b.lb.Kill()
	for range 3 {
		held.again(t)
	}
}
