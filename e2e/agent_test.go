//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/internal/testbed"
)

// agentPort is where the members' agents answer.
const agentPort = 5555

// agentLoadMax bounds the load of the drain scenario, which runs
// through the drain and back.
const agentLoadMax = 15 * time.Second

// drainBound is how long after its agent says drain a member may still
// get a new connection: the monitor's delay, the store's write, the
// change feed and the controller's change to the switch, with room for
// a busy machine.
const drainBound = 2 * time.Second

// newAgentBed is an lbBed of two clients and three members, each with an
// agent the test controls, and an AGENT monitor on the pool (delay 0.2
// s, timeout 0.15 s), with every member UP.
func newAgentBed(t *testing.T, dispatch sdnlb.Dispatch) (*lbBed, []*testbed.Agent) {
	t.Helper()
	b := newDispatchBed(t, 2, 3, sdnlb.RoundRobin, dispatch, nil)
	agents := make([]*testbed.Agent, len(b.members))
	for i, h := range b.members {
		agents[i] = h.ServeAgent(t, agentPort)
	}
	b.lb.MustCreateMonitor(b.pool, map[string]any{
		"name": "agent", "type": sdnlb.MonitorAgent, "port": agentPort,
		"delay": 0.2, "timeout": 0.15, "max_retries": monMaxRetries, "rise": monRise,
	})
	for _, m := range b.mems {
		b.lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
	}
	return b, agents
}

// TestAgent_Drain: under load, a member whose agent says drain gets no
// new connection once drainBound has passed, while a connection it holds
// keeps working; ready brings it back.
func TestAgent_Drain(t *testing.T) {
	for _, d := range sdnlb.Dispatches {
		t.Run(string(d), func(t *testing.T) {
			b, agents := newAgentBed(t, d)
			held := openHeld(t, b, b.clients[0])
			victim := b.memberByServer(t, held.member)
			var srv *HTTPServer
			var agent *testbed.Agent
			for i, s := range b.servers {
				if s.Name == held.member {
					srv, agent = s, agents[i]
				}
			}

			l := startLoad(b.clients, b.url, loadEvery, agentLoadMax, clientTimeout)
			stopped := false
			defer func() {
				if !stopped {
					l.Stop()
				}
			}()
			time.Sleep(time.Second)
			if srv.Hits() < 2 { // the held connection's request, and the load's
				t.Fatalf("%s took no connection of the load before the drain", srv.Name)
			}

			saidAt := time.Now()
			agent.Set("80% drain\n")
			drainedAt := b.lb.WaitMemberStatus(victim.ID, sdnlb.MemberDraining, drainBound)
			if m := b.lb.Member(victim.ID); m.Health.Agent == nil || !m.Health.Agent.Drain || m.Health.Agent.Available != 80 {
				t.Errorf("member %s's agent report %+v, want 80%% and a drain", victim.ID, m.Health.Agent)
			}
			t.Logf("DRAINING in the API %v after the agent said so", drainedAt.Sub(saidAt).Round(time.Millisecond))
			time.Sleep(time.Until(saidAt.Add(drainBound)))
			hitsAtBound := srv.Hits()
			time.Sleep(2 * time.Second)
			if got := srv.Hits(); got != hitsAtBound {
				t.Errorf("the drained member %s got %d new connections more than %v after its agent said drain", srv.Name, got-hitsAtBound, drainBound)
			}
			held.again(t)

			readyAt := time.Now()
			agent.Set("80% ready\n")
			b.lb.WaitMemberStatus(victim.ID, sdnlb.MemberUp, drainBound)
			hitsAtUp := srv.Hits()
			for i := 0; i < 300 && srv.Hits() == hitsAtUp && time.Since(readyAt) < 3*time.Second; i++ {
				time.Sleep(statusPoll)
			}
			if srv.Hits() == hitsAtUp {
				t.Errorf("%s took no new connection %v after its agent said ready", srv.Name, time.Since(readyAt).Round(time.Millisecond))
			}
			results := l.Stop()
			stopped = true
			if s := summarise(results, time.Time{}, time.Now()); s.failed > 0 {
				t.Errorf("requests failed through the drain: %v", s)
			}
			held.again(t)
		})
	}
}

// TestAgent_Garbage: an agent that answers garbage fails its probes: the
// member goes DOWN after max_retries, and comes back UP once the agent
// answers well again.
func TestAgent_Garbage(t *testing.T) {
	for _, d := range sdnlb.Dispatches {
		t.Run(string(d), func(t *testing.T) {
			b, agents := newAgentBed(t, d)
			victim, agent := b.mems[1], agents[1]
			agent.Set("all good!\n")
			b.lb.WaitMemberStatus(victim.ID, sdnlb.MemberDown, 5*time.Second)
			if m := b.lb.Member(victim.ID); !strings.Contains(m.Health.LastError, `"all good!" has no word sdnlb reads`) {
				t.Errorf("last error %q, want it to quote the agent", m.Health.LastError)
			}
			if lines := b.lb.LogLines("unreadable agent reply"); len(lines) != 1 {
				t.Errorf("%d log lines of unreadable replies, want 1 in the first minute: %q", len(lines), lines)
			}
			hits := b.servers[1].Hits()
			spread(t, b.clients, b.url, 6)
			if got := b.servers[1].Hits(); got != hits {
				t.Errorf("the DOWN member %s took %d requests", b.servers[1].Name, got-hits)
			}

			agent.Set("100%\n")
			b.lb.WaitMemberStatus(victim.ID, sdnlb.MemberUp, 5*time.Second)
			waitServedBy(t, b, b.servers[1].Name, 5*time.Second)
		})
	}
}

// waitServedBy sends new connections until the server named name answers
// one, boundedly: the change reaches the switch asynchronously.
func waitServedBy(t *testing.T, b *lbBed, name string, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	for i := 0; i < 200 && time.Since(start) < timeout; i++ {
		body, err := get(b.clients[0], b.url, clientTimeout)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if body == name {
			return
		}
	}
	t.Fatalf("%s answered none of the new connections in %v", name, timeout)
}
