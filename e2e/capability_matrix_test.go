//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// The capability matrix: every cell of the capability table that is not
// refused, on a real Open vSwitch, with traffic. A bed per OpenFlow
// version, a VIP per cell on it over the same two members (weights 1 and
// 3). Each cell's pool must read the dispatch the cell says (or list the
// switch in controller_dispatched_on), then the row's scenario measures
// what the row promises. A cell that capabilityChecks gives to other tests
// is theirs; "" in a cell's OpenFlow or family runs on 1.3, over IPv4: the
// table says it is the same on the others.
func TestCapabilityMatrix_OpenFlow13(t *testing.T) { runCapabilityMatrix(t, openFlow13) }
func TestCapabilityMatrix_OpenFlow10(t *testing.T) { runCapabilityMatrix(t, openFlow10) }

// memberWeights are the weights of the matrix's members, srv1 and srv2.
var memberWeights = []int{1, 3}

func runCapabilityMatrix(t *testing.T, protocol string) {
	bed := newBedOn(t, protocol, 1, 0, sdnlb.RoundRobin, sdnlb.DispatchController, nil)
	for range memberWeights {
		bed.addMemberHost(t)
	}
	// The bed's own VIP leaves the switch's groups to the cells'.
	bed.lb.MustAPI(http.MethodDelete, "/v1/vips/"+bed.vip.ID+"?cascade=true", nil, http.StatusNoContent, nil)
	version := map[string]string{openFlow13: "1.3", openFlow10: "1.0"}[protocol]
	n := 0
	for _, row := range sdnlb.Capabilities() {
		check := capabilityChecks[row.Setting]
		for _, cell := range row.Cells {
			if cell.Verdict == sdnlb.Refused || len(check.tests[cell.Name()]) > 0 || cell.OpenFlow != version && !(cell.OpenFlow == "" && protocol == openFlow13) {
				continue
			}
			n++
			t.Run(row.Setting+"/"+cell.Name(), func(t *testing.T) {
				scenario, ok := matrixScenarios[check.scenario]
				if !ok {
					t.Fatalf("no scenario %q for row %s (TestCapabilityChecks)", check.scenario, row.Setting)
				}
				b := bed.cellBed(t, cell, n)
				requireDispatch(t, b, cell)
				if b.switchDispatches() {
					b.waitBuckets(t, len(b.members), 10*time.Second)
				}
				scenario(t, b)
			})
		}
	}
}

// cellBed is b with a VIP, a pool and b's members as the cell configures
// them (n numbers the VIP); the cleanup deletes them and waits until the
// switch holds none of their slots.
func (b *lbBed) cellBed(t *testing.T, cell sdnlb.Cell, n int) *lbBed {
	t.Helper()
	c := *b
	c.mems = nil
	address, memberIP := c.sw.Addr(byte(100+n)), func(h *Host) string { return h.IP }
	if cell.Family == "IPv6" {
		address, memberIP = c.sw.Addr6(byte(100+n)), func(h *Host) string { return h.IP6 }
	}
	vip := fields(cell.Config.VIP, map[string]any{"name": fmt.Sprintf("cell%d", n), "address": address, "protocol": sdnlb.ProtocolTCP, "port": vipPort})
	c.vip = &sdnlb.VIP{}
	c.lb.MustAPI(http.MethodPost, "/v1/vips", vip, http.StatusCreated, c.vip)
	t.Cleanup(func() {
		c.lb.MustAPI(http.MethodDelete, "/v1/vips/"+c.vip.ID+"?cascade=true", nil, http.StatusNoContent, nil)
		if c.sw.Protocol == openFlow13 {
			c.waitBuckets(t, 0, 10*time.Second)
		}
	})
	pool := fields(cell.Config.Pool, map[string]any{"name": fmt.Sprintf("cell%d", n), "vip_id": c.vip.ID, "protocol": sdnlb.ProtocolTCP})
	if cell.NamesDispatch() {
		pool["dispatch"] = cell.Dispatch
	}
	c.pool = &sdnlb.Pool{}
	c.lb.MustAPI(http.MethodPost, "/v1/pools", pool, http.StatusCreated, c.pool)
	// Members beyond the hosts come first, drained: the hosts' are the
	// pool's last, past any bound on its size.
	for i := range cell.Config.Members - len(c.members) {
		c.lb.MustAPI(http.MethodPost, "/v1/members", map[string]any{"pool_id": c.pool.ID,
			"address": fmt.Sprintf("10.200.%d.%d", i/250, i%250+1), "port": memberPort, "weight": 0}, http.StatusCreated, nil)
	}
	for i, h := range c.members {
		member := map[string]any{"pool_id": c.pool.ID, "address": memberIP(h), "port": memberPort, "weight": memberWeights[i]}
		if i == 0 {
			member = fields(cell.Config.Member, member)
		}
		m := &sdnlb.Member{}
		c.lb.MustAPI(http.MethodPost, "/v1/members", member, http.StatusCreated, m)
		c.mems = append(c.mems, m)
	}
	c.lb.WaitPoolMembers(c.pool.ID, max(cell.Config.Members, len(c.members)), 10*time.Second)
	c.url = "http://" + net.JoinHostPort(c.vip.Address, strconv.Itoa(vipPort)) + "/"
	return &c
}

// fields returns base with the cell's settings over it.
func fields(settings, base map[string]any) map[string]any {
	for k, v := range settings {
		base[k] = v
	}
	return base
}

// requireDispatch checks that the pool is dispatched as the cell says,
// and shown so by the API.
func requireDispatch(t *testing.T, b *lbBed, cell sdnlb.Cell) {
	t.Helper()
	want := cell.Dispatch
	if cell.Verdict == sdnlb.ByController && cell.Shown == sdnlb.ShownInDispatch {
		want = sdnlb.DispatchController
	}
	if want != "" && b.pool.Dispatch != want {
		t.Fatalf("the pool reads dispatch %s, want %s", b.pool.Dispatch, want)
	}
	if cell.Verdict != sdnlb.ByController || cell.Shown != sdnlb.ShownInStats {
		return
	}
	dpid := b.lb.Switches()[0].DPID
	start := time.Now()
	for !slices.Contains(b.lb.PoolStats(b.pool.ID).ControllerDispatchedOn, dpid) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the pool's stats list %v in controller_dispatched_on, want %s", b.lb.PoolStats(b.pool.ID).ControllerDispatchedOn, dpid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// matrixScenarios measure what a row promises on a cell's bed; the
// capabilityChecks name them.
var matrixScenarios = map[string]func(t *testing.T, b *lbBed){
	"shares":      measureShares,
	"oneMember":   measureOneMember,
	"limit":       measureLimit,
	"active":      measureActive,
	"weight":      measureWeight,
	"capacity":    measureCapacity,
	"everyMember": measureEveryMember,
}

// measureShares: over 120 new connections, the member of weight 3 takes
// three quarters under a method that weighs members, half under the
// others, within four standard deviations of the sample (1 in 16,000).
// LEAST_BYTES picks by the bytes the last stats poll read, so a poll
// within the burst sends the rest of it to one member: every member
// answers, in no set share.
func measureShares(t *testing.T, b *lbBed) {
	const connections, parallel = 120, 6
	counts := spread(t, slices.Repeat(b.clients, parallel), b.url, connections/parallel)
	if b.pool.LBMethod == sdnlb.LeastBytes {
		t.Logf("%s: answers %v", b.pool.LBMethod, counts)
		requireAll(t, counts, b.serverNames())
		return
	}
	want := 0.5
	if b.pool.LBMethod.Weighs() {
		want = 0.75
	}
	heavy, bound := float64(counts[b.servers[1].Name])/connections, 4*math.Sqrt(want*(1-want)/connections)
	t.Logf("%s: the member of weight 3 took %.3f of %d connections (%v), want %.2f ± %.3f", b.pool.LBMethod, heavy, connections, counts, want, bound)
	if math.Abs(heavy-want) > bound {
		t.Errorf("the member of weight 3 took %.3f of the connections, want %.2f within %.3f (answers %v)", heavy, want, bound, counts)
	}
}

// measureOneMember: 12 new connections of one client reach one member.
func measureOneMember(t *testing.T, b *lbBed) {
	if counts := spread(t, b.clients, b.url, 12); len(counts) != 1 {
		t.Errorf("the client's 12 connections were answered by %v, want one member", counts)
	}
}

// measureLimit: the VIP's connection_limit connections held open are
// answered, the next is refused.
func measureLimit(t *testing.T, b *lbBed) {
	for range b.vip.ConnectionLimit {
		openHeld(t, b, b.clients[0])
	}
	addr := net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := b.clients[0].DialContext(ctx, "tcp", addr)
	if err == nil {
		err = keepAliveGet(conn, addr)
		conn.Close()
	}
	if err == nil {
		t.Errorf("connection %d over a limit of %d was answered", b.vip.ConnectionLimit+1, b.vip.ConnectionLimit)
	}
}

// measureActive: two connections held open show as the pool's two
// active ones, and once closed as none.
func measureActive(t *testing.T, b *lbBed) {
	held := []*heldConn{openHeld(t, b, b.clients[0]), openHeld(t, b, b.clients[0])}
	waitActive(t, b, 2)
	for _, h := range held {
		h.conn.Close()
	}
	waitActive(t, b, 0)
}

// waitActive waits until the pool shows n active connections: the
// counts come with the stats polls.
func waitActive(t *testing.T, b *lbBed, n uint64) {
	t.Helper()
	start := time.Now()
	for b.lb.PoolStats(b.pool.ID).ActiveConnections != n {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the pool shows %d active connections after %v, want %d", b.lb.PoolStats(b.pool.ID).ActiveConnections, time.Since(start), n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// measureWeight: members take shares by weight, and weight 0 drains one.
func measureWeight(t *testing.T, b *lbBed) {
	measureShares(t, b)
	b.lb.MustAPI(http.MethodPatch, "/v1/members/"+b.mems[1].ID, map[string]any{"weight": 0}, http.StatusOK, nil)
	waitOnly(t, b, b.servers[0].Name)
}

// waitOnly waits until 10 new connections in a row reach only the member
// named name, then requires 20 more to: weights and bounds reach the
// switch's slots, or the controller, a moment after the API.
func waitOnly(t *testing.T, b *lbBed, name string) {
	t.Helper()
	if b.switchDispatches() {
		b.waitBuckets(t, 1, 15*time.Second)
	}
	start := time.Now()
	for counts := spread(t, b.clients, b.url, 10); counts[name] != 10; counts = spread(t, b.clients, b.url, 10) {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("new connections still reach %v %v after the change, want only %s", counts, time.Since(start), name)
		}
	}
	if counts := spread(t, b.clients, b.url, 20); counts[name] != 20 {
		t.Errorf("new connections reach %v, want only %s", counts, name)
	}
}

// measureCapacity: a member at its capacity (the cell's first member, of
// capacity 1, holding a connection) takes no new connection.
func measureCapacity(t *testing.T, b *lbBed) {
	full := b.servers[0].Name
	for i := 0; ; i++ {
		if i == 20 {
			t.Fatalf("20 connections and none reached %s", full)
		}
		if h := openHeld(t, b, b.clients[0]); h.member == full {
			break
		} else {
			h.conn.Close()
		}
	}
	waitOnly(t, b, b.servers[1].Name)
}

// measureEveryMember: each member of the hosts answers new connections.
func measureEveryMember(t *testing.T, b *lbBed) {
	requireAll(t, spread(t, slices.Repeat(b.clients, 4), b.url, 5), b.serverNames())
}
