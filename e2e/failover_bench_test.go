//go:build e2e && e2e_bench

package e2e

import (
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// TestHealth_MemberReturnsUnderLoad soaks the failover of
// TestHealth_ServerStopped: under a load four times as dense, one member's
// server is stopped and started again six times, at random moments, on
// every bed (OpenFlow 1.3 and 1.0, SWITCH and CONTROLLER). A request may
// fail only while it could have reached the dying member: from a client
// timeout before its kill to its DOWN in the API. Every other failure is
// reported with when it started against the nearest kill, DOWN, revival and
// UP, and whether the connection was refused or reset once open.
func TestHealth_MemberReturnsUnderLoad(t *testing.T) {
	const cycles = 6
	forEachOpenFlow(t, func(t *testing.T, protocol string) {
		for _, d := range sdnlb.Dispatches {
			t.Run(string(d), func(t *testing.T) {
				b := newMonitoredBedOn(t, protocol, d)
				srv, mem := b.servers[1], b.mems[1]
				status := func() sdnlb.MemberStatus { return b.lb.Member(mem.ID).Status }
				l := startLoad(b.clients, b.url, loadEvery/4, time.Minute, clientTimeout)
				var marks []cycle
				for range cycles {
					time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
					var c cycle
					c.kill = time.Now()
					srv.Stop()
					c.down = waitStatus(t, status, sdnlb.MemberDown)
					time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
					c.revive = time.Now()
					srv.Restart(t)
					c.up = waitStatus(t, status, sdnlb.MemberUp)
					marks = append(marks, c)
				}
				time.Sleep(time.Second)
				results := l.Stop()
				var outside, reset int
				for _, r := range results {
					if r.err == nil || inDetection(r, marks) {
						continue
					}
					outside++
					if errors.Is(r.err, syscall.ECONNRESET) {
						reset++
					}
					if outside <= 10 {
						t.Errorf("request from %s failed outside a detection window (%s): %v", r.client, nearest(r.start, marks), r.err)
					}
				}
				t.Logf("%d requests over %d kills and revivals: %d failed outside a detection window, %d of them reset once open",
					len(results), cycles, outside, reset)
			})
		}
	})
}

// cycle is one kill and revival of a member, as the test and the API saw it.
type cycle struct{ kill, down, revive, up time.Time }

func waitStatus(t *testing.T, status func() sdnlb.MemberStatus, want sdnlb.MemberStatus) time.Time {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if status() == want {
			return time.Now()
		}
		time.Sleep(statusPoll)
	}
	t.Fatalf("member not %s within 5s", want)
	return time.Time{}
}

// inDetection says whether r started while it could reach a dying member.
func inDetection(r result, marks []cycle) bool {
	for _, c := range marks {
		if !r.start.Before(c.kill.Add(-clientTimeout)) && !r.start.After(c.down.Add(propagation)) {
			return true
		}
	}
	return false
}

// nearest names the moments of the cycle closest to at, relative to it.
func nearest(at time.Time, marks []cycle) string {
	best := marks[0]
	for _, c := range marks[1:] {
		if absDur(at.Sub(c.kill)) < absDur(at.Sub(best.kill)) {
			best = c
		}
	}
	rel := func(x time.Time) string { return at.Sub(x).Round(time.Millisecond).String() }
	return "after kill " + rel(best.kill) + ", DOWN " + rel(best.down) + ", revival " + rel(best.revive) + ", UP " + rel(best.up)
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }
