//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// A pool's stats stream, watched while a member is killed: the DOWN arrives
// within the monitor's window plus a second, and the stream's counters are
// the plain GET's.
func TestWatch_PoolStats(t *testing.T) {
	b := newMonitoredBed(t, sdnlb.DispatchController)
	spread(t, b.clients, b.url, 10)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.lb.APIAddr+"/v1/pools/"+b.pool.ID+"/stats?watch=true", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan *sdnlb.PoolStats, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ps sdnlb.PoolStats
			if json.Unmarshal([]byte(data), &ps) == nil {
				events <- &ps
			}
		}
	}()
	next := func(within time.Duration) *sdnlb.PoolStats {
		t.Helper()
		select {
		case ps, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ps
		case <-time.After(within):
			t.Fatalf("no stats event within %v", within)
			return nil
		}
	}

	// Idle, the stream's counters settle on the plain GET's (the first
	// event may predate the last flow-stats poll).
	want := b.lb.PoolStats(b.pool.ID)
	deadline := time.Now().Add(5 * time.Second)
	for ps := next(5 * time.Second); ps.TotalConnections != want.TotalConnections || ps.BytesIn != want.BytesIn; {
		ps = next(time.Until(deadline))
	}

	victim := b.servers[1]
	killed := time.Now()
	victim.Stop()
	for deadline := killed.Add(detectWindow + schedMargin + time.Second); ; {
		ps := next(time.Until(deadline))
		if ps.Members[memberIndex(ps, b.mems[1].ID)].Status == sdnlb.MemberDown {
			t.Logf("DOWN in the stream %v after the kill", time.Since(killed).Round(time.Millisecond))
			return
		}
	}
}

func memberIndex(ps *sdnlb.PoolStats, id string) int {
	for i, m := range ps.Members {
		if m.MemberID == id {
			return i
		}
	}
	return 0
}
