//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// newWeightedBed is newDispatchBed with one member per weight, created with
// that weight; it returns once the controller has them all.
func newWeightedBed(tb testing.TB, nClients int, method sdnlb.LBMethod, dispatch sdnlb.Dispatch, weights []int, sdnlbArgs ...string) *lbBed {
	tb.Helper()
	return newWeightedBedOn(tb, openFlow13, nClients, method, dispatch, weights, sdnlbArgs...)
}

// newWeightedBedOn is newWeightedBed with a switch that speaks protocol.
func newWeightedBedOn(tb testing.TB, protocol string, nClients int, method sdnlb.LBMethod, dispatch sdnlb.Dispatch, weights []int, sdnlbArgs ...string) *lbBed {
	tb.Helper()
	b := newBedOn(tb, protocol, nClients, 0, method, dispatch, nil, sdnlbArgs...)
	for _, w := range weights {
		h := b.addMemberHost(tb)
		var m sdnlb.Member
		b.lb.MustAPI(http.MethodPost, "/v1/members",
			map[string]any{"pool_id": b.pool.ID, "address": h.IP, "port": memberPort, "weight": w},
			http.StatusCreated, &m)
		b.mems = append(b.mems, &m)
	}
	b.lb.WaitPoolMembers(b.pool.ID, len(weights), 10*time.Second)
	return b
}

// TestSched_WeightedRoundRobin checks that smooth WRR with weights 3,1,1
// gives exactly 15/5/5 over five full cycles of new connections.
func TestSched_WeightedRoundRobin(t *testing.T) {
	b := newWeightedBed(t, 1, sdnlb.WeightedRoundRobin, sdnlb.DispatchController, []int{3, 1, 1})
	counts := spread(t, b.clients, b.url, 25)
	for i, want := range []int{15, 5, 5} {
		name := b.servers[i].Name
		if counts[name] != want {
			t.Errorf("answers by member: %v, want %d from %s (weights 3,1,1)", counts, want, name)
		}
		if got := b.servers[i].Hits(); got != int64(want) {
			t.Errorf("server %s counted %d hits, want %d", name, got, want)
		}
	}
	if len(counts) != len(b.servers) {
		t.Errorf("answers from unexpected servers: %v", counts)
	}
}

// A SWITCH pool whose weights span 1 to 100 gives each member its weight's
// share of new connections within 2 points: the switch's hash over 256
// slots, each member owning slots in proportion to its weight. The client's
// ports are fixed, so the switch hashes the same connections every run.
func TestSched_SwitchWeightShares(t *testing.T) {
	const connections = 2000
	weights := []int{1, 7, 30, 100}
	b := newWeightedBed(t, 1, sdnlb.WeightedRoundRobin, sdnlb.DispatchSwitch, weights)
	b.waitBuckets(t, len(weights), 10*time.Second)
	counts, errs := fromPorts(b.clients[0], b.url, connections)
	requireRound(t, "new connections", counts, errs)
	var sum int
	for _, w := range weights {
		sum += w
	}
	for i, w := range weights {
		name := b.servers[i].Name
		got, want := float64(counts[name])/connections, float64(w)/float64(sum)
		t.Logf("%s, weight %d: %.2f %% of the connections, its weight's share %.2f %%", name, w, 100*got, 100*want)
		if math.Abs(got-want) > 0.02 {
			t.Errorf("%s, weight %d, took %.2f %% of the connections, want %.2f %% within 2 points (answers %v)", name, w, 100*got, 100*want, counts)
		}
	}
}

// ROUND_ROBIN and RANDOM give every member an equal share whatever its
// weight, in every dispatch and OpenFlow version; their weighted
// counterparts are WEIGHTED_ROUND_ROBIN and the methods that say so. Over
// new connections from fixed ports (the switch hashes the same ones every
// run), members of weights 1 and 3 each take half, within four standard
// deviations of the sample where the switch's hash picks.
func TestSched_UnweightedMethodsIgnoreWeights(t *testing.T) {
	const connections = 400
	for _, method := range []sdnlb.LBMethod{sdnlb.RoundRobin, sdnlb.Random} {
		t.Run(string(method), func(t *testing.T) {
			forEachOpenFlow(t, func(t *testing.T, protocol string) {
				for _, d := range sdnlb.Dispatches {
					t.Run(string(d), func(t *testing.T) {
						b := newWeightedBedOn(t, protocol, 1, method, d, []int{1, 3})
						if b.switchDispatches() {
							b.waitBuckets(t, 2, 10*time.Second)
						}
						counts, errs := fromPorts(b.clients[0], b.url, connections)
						requireRound(t, "new connections", counts, errs)
						tolerance := 4 * math.Sqrt(0.25/connections) // four standard deviations: 1 in 16,000
						if method == sdnlb.RoundRobin && !b.switchDispatches() {
							tolerance = 1.0 / connections // an exact rotation
						}
						heavy := float64(counts[b.servers[1].Name]) / connections
						t.Logf("%s %s on %s: the member of weight 3 took %.3f of %d connections (bound 0.5 ± %.3f)", method, d, protocol, heavy, connections, tolerance)
						if math.Abs(heavy-0.5) > tolerance {
							t.Errorf("the member of weight 3 took %.3f of the connections, want 0.5 within %.3f (answers %v)", heavy, tolerance, counts)
						}
					})
				}
			})
		})
	}
}

// TestSched_SourceIP and TestPersist_SourceIP check that each of two
// clients lands on one member over all its new connections: with the
// SOURCE_IP method the hash does it, with a ROUND_ROBIN pool behind a VIP
// with SOURCE_IP persistence the controller's persistence table does.
func TestSched_SourceIP(t *testing.T) {
	b := newLBBed(t, 2, 3, sdnlb.SourceIP, nil)
	requireStickyClients(t, b, 10)
}

func TestPersist_SourceIP(t *testing.T) {
	persistence := map[string]any{"session_persistence": map[string]any{"type": sdnlb.PersistenceSourceIP, "timeout": 30}}
	b := newLBBed(t, 2, 3, sdnlb.RoundRobin, persistence)
	requireStickyClients(t, b, 10)
	// Without the persistence the pool would spread: prove it does, so the
	// check above cannot pass on a pool that only ever answers one way.
	b.lb.MustAPI(http.MethodPatch, "/v1/vips/"+b.vip.ID, map[string]any{"session_persistence": nil}, http.StatusOK, nil)
	waitSpreads(t, b, b.clients[0], 15*time.Second)
}

// requireStickyClients sends n new connections from each client in turn
// and requires that all of a client's are answered by one member.
func requireStickyClients(t *testing.T, b *lbBed, n int) {
	t.Helper()
	for _, c := range b.clients {
		t.Run(c.Name, func(t *testing.T) {
			counts := spread(t, []*Host{c}, b.url, n)
			if len(counts) != 1 {
				t.Errorf("%s's %d connections were answered by %v, want one member", c.Name, n, counts)
			}
			t.Logf("%s → %v", c.Name, counts)
		})
	}
}

// waitSpreads sends new connections from c until two members have
// answered, boundedly: configuration changes reach the controller
// asynchronously.
func waitSpreads(tb testing.TB, b *lbBed, c *Host, timeout time.Duration) {
	tb.Helper()
	start := time.Now()
	seen := map[string]int{}
	for i := 0; i < 100 && time.Since(start) < timeout; i++ {
		body, err := get(c, b.url, 5*time.Second)
		if err != nil {
			tb.Fatalf("request %d: %v", i, err)
		}
		if seen[body]++; len(seen) > 1 {
			return
		}
	}
	tb.Fatalf("without persistence %s still reaches only %v after %v", c.Name, seen, timeout)
}

// heldConn is an open keep-alive connection to the VIP and the member that
// answered its first request.
type heldConn struct {
	conn   net.Conn
	member string
}

// openHeld opens a connection from c to the VIP and makes one keep-alive
// request on it; the server keeps it open however long it idles.
func openHeld(tb testing.TB, b *lbBed, c *Host) *heldConn {
	tb.Helper()
	addr := net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", addr)
	if err != nil {
		tb.Fatalf("dial %s from %s: %v", addr, c.Name, err)
	}
	tb.Cleanup(func() { conn.Close() })
	body, err := keepAliveRequest(conn, addr)
	if err != nil {
		tb.Fatalf("first request on a held connection: %v", err)
	}
	return &heldConn{conn: conn, member: body}
}

// again makes one more request on the held connection and requires the
// same member to answer it.
func (h *heldConn) again(tb testing.TB) {
	tb.Helper()
	body, err := keepAliveRequest(h.conn, h.conn.RemoteAddr().String())
	if err != nil {
		tb.Fatalf("request on the connection held to %s: %v", h.member, err)
	}
	if body != h.member {
		tb.Fatalf("connection held to %s answered by %s", h.member, body)
	}
}

// keepAliveRequest sends one HTTP/1.1 keep-alive request on conn and
// returns the body, leaving the connection open.
func keepAliveRequest(conn net.Conn, host string) (string, error) {
	if err := conn.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: keep-alive\r\n\r\n", host); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return "", err
	}
	body, err := readAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK || resp.Close {
		return "", fmt.Errorf("status %d, close %v: %s", resp.StatusCode, resp.Close, body)
	}
	return string(body), conn.SetDeadline(time.Time{})
}

// memberByServer returns the API member served by the server named name.
func (b *lbBed) memberByServer(tb testing.TB, name string) *sdnlb.Member {
	tb.Helper()
	for i, s := range b.servers {
		if s.Name == name {
			return b.mems[i]
		}
	}
	tb.Fatalf("no member is served by %q (servers %v)", name, b.serverNames())
	return nil
}

// memberStats returns the controller's counters of member id.
func memberStats(tb testing.TB, b *lbBed, id string) sdnlb.MemberStats {
	tb.Helper()
	for _, ms := range b.lb.PoolStats(b.pool.ID).Members {
		if ms.MemberID == id {
			return ms
		}
	}
	tb.Fatalf("pool %s stats have no member %s", b.pool.ID, id)
	return sdnlb.MemberStats{}
}

// TestDrain_AdminDown checks that a member set admin down keeps serving a
// connection it already has, gets no new ones, and shows as DRAINING.
func TestDrain_AdminDown(t *testing.T) {
	b := newLBBed(t, 1, 3, sdnlb.RoundRobin, nil)
	c := b.clients[0]
	held := openHeld(t, b, c)
	victim := b.memberByServer(t, held.member)

	var patched sdnlb.Member
	b.lb.MustAPI(http.MethodPatch, "/v1/members/"+victim.ID, map[string]any{"admin_state_up": false}, http.StatusOK, &patched)
	if patched.AdminStateUp || patched.Status != sdnlb.MemberDraining {
		t.Errorf("PATCH answer: admin_state_up %v status %s, want false and %s", patched.AdminStateUp, patched.Status, sdnlb.MemberDraining)
	}
	b.lb.WaitMemberStatus(victim.ID, sdnlb.MemberDraining, 5*time.Second)
	// The API commits at once; wait until the controller has it too.
	start := time.Now()
	for i := 0; i < 250 && memberStats(t, b, victim.ID).Status != sdnlb.MemberDraining; i++ {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("controller shows member %s as %s %v after the PATCH, want %s",
				victim.ID, memberStats(t, b, victim.ID).Status, time.Since(start), sdnlb.MemberDraining)
		}
		time.Sleep(20 * time.Millisecond)
	}

	held.again(t)
	counts := spread(t, b.clients, b.url, 10)
	if counts[held.member] != 0 {
		t.Errorf("new connections reached the draining member %s: %v", held.member, counts)
	}
	for _, s := range b.servers {
		if s.Name != held.member && counts[s.Name] != 5 {
			t.Errorf("new connections by member: %v, want 5 from each member but %s", counts, held.member)
			break
		}
	}
	held.again(t)
	if flows := flowsMentioning(b.sw, victim.Address); len(flows) == 0 {
		t.Errorf("no flow mentions the draining member %s while its connection is open", victim.Address)
	}
}

// TestSched_LeastConnections checks that a new connection goes to the
// member with the fewest active connections, counted by the controller
// from its setups and their ends. Connections are held open and refreshed
// so their flows do not idle out; one is closed, which ends it, and a
// round robin would not notice.
func TestSched_LeastConnections(t *testing.T) {
	const idle = 2 * time.Second
	b := newLBBed(t, 1, 3, sdnlb.LeastConnections, nil, "--flow-idle-timeout", idle.String())
	c := b.clients[0]

	var held []*heldConn
	seen := map[string]bool{}
	for i := range len(b.servers) {
		h := openHeld(t, b, c)
		if seen[h.member] {
			t.Fatalf("held connection %d went to %s, which already has one", i+1, h.member)
		}
		seen[h.member] = true
		held = append(held, h)
	}

	// Close the second: the order so far is that of a rotation, whose next
	// pick would be the first member.
	closed := held[1]
	closed.conn.Close()
	held = append(held[:1], held[2:]...)
	closedID := b.memberByServer(t, closed.member).ID
	start := time.Now()
	for memberStats(t, b, closedID).ActiveConnections != 0 {
		if time.Since(start) > 5*idle+5*time.Second {
			t.Fatalf("%s still has %d active connections %v after its only one closed",
				closed.member, memberStats(t, b, closedID).ActiveConnections, time.Since(start))
		}
		for _, h := range held {
			h.again(t)
		}
		time.Sleep(idle / 4)
	}
	t.Logf("closed connection counted out after %v", time.Since(start).Round(time.Millisecond))
	for _, h := range held {
		h.again(t)
		if n := memberStats(t, b, b.memberByServer(t, h.member).ID).ActiveConnections; n != 1 {
			t.Errorf("%s has %d active connections, want 1 (its held one)", h.member, n)
		}
	}

	next := openHeld(t, b, c)
	if next.member != closed.member {
		t.Errorf("new connection went to %s, want %s, the only member with no active connection", next.member, closed.member)
	}
}

// TestMember_CapacityBounds: a member at its capacity takes no new
// connection, under either dispatch, until one of its own ends. Under the
// controller's a connection no member has room for is refused at once.
func TestMember_CapacityBounds(t *testing.T) {
	for _, dispatch := range []sdnlb.Dispatch{sdnlb.DispatchController, sdnlb.DispatchSwitch} {
		t.Run(string(dispatch), func(t *testing.T) {
			b := newDispatchBed(t, 1, 2, sdnlb.RoundRobin, dispatch, nil)
			c := b.clients[0]
			full := b.mems[0]
			b.lb.MustAPI(http.MethodPatch, "/v1/members/"+full.ID, map[string]any{"capacity": 1}, http.StatusOK, nil)
			fullName := b.servers[0].Name
			// Hold a connection on the member with the capacity.
			var held *heldConn
			for i := 0; held == nil; i++ {
				if i == 20 {
					t.Fatalf("20 connections and none reached %s", fullName)
				}
				if h := openHeld(t, b, c); h.member == fullName {
					held = h
				} else {
					h.conn.Close()
				}
			}
			// Short connections now all go to the other member: under the
			// switch's dispatch once it has weighed the full one out of the
			// group, at once under the controller's.
			start := time.Now()
			if dispatch == sdnlb.DispatchSwitch {
				b.waitBuckets(t, 1, 15*time.Second)
			}
			held.again(t)
			if got := spread(t, b.clients, b.url, 20); got[fullName] != 0 {
				t.Errorf("answers %v with %s at its capacity of 1, want none from it", got, fullName)
			}
			t.Logf("%s out of new connections %v after reaching its capacity", fullName, time.Since(start).Round(time.Millisecond))
			// Its connection ends: it takes new ones again.
			held.conn.Close()
			start = time.Now()
			if dispatch == sdnlb.DispatchSwitch {
				b.waitBuckets(t, 2, 15*time.Second)
			}
			for answers := spread(t, b.clients, b.url, 10); answers[fullName] == 0; answers = spread(t, b.clients, b.url, 10) {
				if time.Since(start) > 15*time.Second {
					t.Fatalf("%s takes no new connection %v after its only one closed", fullName, time.Since(start))
				}
			}
			if dispatch != sdnlb.DispatchController {
				return
			}
			// Every member at its capacity: a new connection is refused. A
			// short connection's end reaches the controller after its
			// answer: once none counts, each held one finds a member with
			// room. The second capacity reaches the controller a moment
			// after the API: until then a third connection finds room with
			// the second member, and once it closed counts no more.
			waitActive(t, b, 0)
			b.lb.MustAPI(http.MethodPatch, "/v1/members/"+b.mems[1].ID, map[string]any{"capacity": 1}, http.StatusOK, nil)
			first, second := openHeld(t, b, c), openHeld(t, b, c)
			if first.member == second.member {
				t.Fatalf("both held connections went to %s, one past its capacity", first.member)
			}
			addr := net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort))
			for start := time.Now(); ; waitActive(t, b, 2) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				conn, err := c.DialContext(ctx, "tcp", addr)
				cancel()
				if err != nil {
					if !errors.Is(err, syscall.ECONNREFUSED) {
						t.Errorf("a connection with every member at its capacity: %v, want refused", err)
					}
					break
				}
				conn.Close()
				if time.Since(start) > 5*time.Second {
					t.Fatalf("a connection with every member at its capacity still accepted %v after the capacity's write", time.Since(start))
				}
			}
		})
	}
}
