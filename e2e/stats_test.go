//go:build e2e

package e2e

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// statsSample is what the API and /metrics showed at one moment: every
// counter of the pools and their members, by name.
type statsSample map[string]uint64

// sampleStats reads the pools' stats and sdnlb's counter series.
func sampleStats(b *lbBed, pools ...string) statsSample {
	s := statsSample{}
	for _, id := range pools {
		st := b.lb.PoolStats(id)
		counters := func(prefix string, total, pIn, pOut, bIn, bOut uint64) {
			s[prefix+" total_connections"] = total
			s[prefix+" packets_in"], s[prefix+" packets_out"] = pIn, pOut
			s[prefix+" bytes_in"], s[prefix+" bytes_out"] = bIn, bOut
		}
		counters("pool "+id, st.TotalConnections, st.PacketsIn, st.PacketsOut, st.BytesIn, st.BytesOut)
		for _, m := range st.Members {
			counters("pool "+id+" member "+m.MemberID, m.TotalConnections, m.PacketsIn, m.PacketsOut, m.BytesIn, m.BytesOut)
		}
	}
	status, data := b.lb.API(http.MethodGet, "/metrics", nil)
	if status != http.StatusOK {
		return s
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "sdnlb_") || strings.HasPrefix(line, "sdnlb_http_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		name := line[:i]
		if !strings.Contains(name, "_total") {
			continue // gauges may go down
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			s["metric "+name] = uint64(v)
		}
	}
	return s
}

// TestStats_MonotonicAndAttributed: two SWITCH NAT pools share three
// members. Each pool counts its own traffic, not the other's; connections
// held open count as active until they close; and every counter the API
// and /metrics show only grows while traffic runs, a member goes DOWN and
// comes back, and the switch reconnects with its flows.
func TestStats_MonotonicAndAttributed(t *testing.T) {
	b := newDispatchBed(t, 2, 3, sdnlb.RoundRobin, sdnlb.DispatchSwitch, nil, "--stats-interval", "300ms")
	b.lb.MustCreateMonitor(b.pool, httpMonitorFields())
	for _, m := range b.mems {
		b.lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
	}
	otherURL, other := b.addSwitchedNATPool(t)
	waitStats := func(pool string, what string, done func(*sdnlb.PoolStats) bool) *sdnlb.PoolStats {
		t.Helper()
		var st *sdnlb.PoolStats
		for range 100 {
			if st = b.lb.PoolStats(pool); done(st) {
				return st
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("pool %s: %s not reached: %+v", pool, what, st)
		return nil
	}

	// Only the other VIP: its pool counts every connection, and the pool
	// that shares its members none of them.
	const requests = 30
	spread(t, b.clients[:1], otherURL, requests)
	st := waitStats(other.ID, "30 connections, all ended", func(st *sdnlb.PoolStats) bool {
		return st.TotalConnections >= requests && st.ActiveConnections == 0
	})
	if st.TotalConnections != requests || st.BytesIn == 0 || st.BytesOut == 0 {
		t.Errorf("pool %s after %d requests through its VIP: %+v", other.ID, requests, st)
	}
	if st := b.lb.PoolStats(b.pool.ID); st.TotalConnections != 0 || st.BytesIn != 0 || st.BytesOut != 0 || st.ActiveConnections != 0 {
		t.Errorf("pool %s counts traffic it did not carry: %+v", b.pool.ID, st)
	}

	// Connections held open are active, and no longer once closed.
	const held = 4
	addr := strings.TrimSuffix(strings.TrimPrefix(otherURL, "http://"), "/")
	var kept []*keptConn
	for range held {
		kept = append(kept, keepOpen(t, b.clients[0], addr))
	}
	waitStats(other.ID, "the held connections active", func(st *sdnlb.PoolStats) bool {
		return st.TotalConnections == requests+held && st.ActiveConnections == held
	})
	for _, k := range kept {
		k.conn.Close()
	}
	waitStats(other.ID, "the held connections closed", func(st *sdnlb.PoolStats) bool { return st.ActiveConnections == 0 })

	// Both VIPs under load while a member goes DOWN and back, and the
	// switch reconnects keeping its flows; the counters are sampled all
	// along.
	var samples []statsSample
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 600 { // bounded: 60 s at most
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			s := sampleStats(b, b.pool.ID, other.ID)
			mu.Lock()
			samples = append(samples, s)
			mu.Unlock()
		}
	})
	loads := []*load{
		startLoad(b.clients[:1], b.url, 50*time.Millisecond, 30*time.Second, clientTimeout),
		startLoad(b.clients[1:], otherURL, 50*time.Millisecond, 30*time.Second, clientTimeout),
	}
	time.Sleep(time.Second)
	b.servers[1].Stop()
	b.lb.WaitMemberStatus(b.mems[1].ID, sdnlb.MemberDown, 10*time.Second)
	time.Sleep(time.Second)
	b.servers[1].Restart(t)
	b.lb.WaitMemberStatus(b.mems[1].ID, sdnlb.MemberUp, 10*time.Second)
	time.Sleep(time.Second)
	b.sw.DelController()
	b.lb.WaitSwitches(0, 20*time.Second)
	time.Sleep(time.Second)
	b.sw.SetController(b.lb.OpenFlowAddr)
	b.lb.WaitSwitches(1, 20*time.Second)
	time.Sleep(2 * time.Second)
	for _, l := range loads {
		l.Stop()
	}
	time.Sleep(time.Second) // a poll after the last request
	close(stop)
	wg.Wait()

	if len(samples) < 20 {
		t.Fatalf("%d samples of the counters, want at least 20", len(samples))
	}
	for i := 1; i < len(samples); i++ {
		for name, v := range samples[i] {
			if before, ok := samples[i-1][name]; ok && v < before {
				t.Errorf("sample %d: %s went back from %d to %d", i, name, before, v)
			}
		}
	}
	// The switch's count of active connections is an estimate (see
	// docs/DATAPATH.md, "Accounting"): a connection that failed with neither side's FIN
	// nor reset stays in it, so a few may, of the many that failed here.
	for _, pool := range []string{b.pool.ID, other.ID} {
		last := samples[len(samples)-1]
		if last["pool "+pool+" total_connections"] <= samples[0]["pool "+pool+" total_connections"] {
			t.Errorf("pool %s counted no connection under load", pool)
		}
		st := b.lb.PoolStats(pool)
		if st.ActiveConnections > 2+st.TotalConnections/50 {
			t.Errorf("pool %s counts %d connections active once the load ended, of %d", pool, st.ActiveConnections, st.TotalConnections)
		}
	}
}
