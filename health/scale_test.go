package health

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// countingProber passes at once and checks the engine's promises: at most
// one probe per target at a time, and the concurrency limit.
type countingProber struct {
	tb       testing.TB
	limit    int64
	total    atomic.Int64
	inflight atomic.Int64
	max      atomic.Int64
	mu       sync.Mutex
	busy     map[target]bool
}

func newCountingProber(tb testing.TB, limit int) *countingProber {
	return &countingProber{tb: tb, limit: int64(limit), busy: make(map[target]bool)}
}

func (p *countingProber) probe(_ context.Context, t target) error {
	p.mu.Lock()
	if p.busy[t] {
		p.tb.Errorf("%v probed twice at once", t)
	}
	p.busy[t] = true
	p.mu.Unlock()
	n := p.inflight.Add(1)
	for {
		m := p.max.Load()
		if n <= m || p.max.CompareAndSwap(m, n) {
			break
		}
	}
	if n > p.limit {
		p.tb.Errorf("%d probes in flight, limit %d", n, p.limit)
	}
	p.total.Add(1)
	p.inflight.Add(-1)
	p.mu.Lock()
	delete(p.busy, t)
	p.mu.Unlock()
	return nil
}

// TestEngine_Scale probes 10,000 members at delay 1 s for 3 s of fake
// time in 10 ms steps: the first second spreads the first probes evenly,
// then every second probes every member exactly once.
func TestEngine_Scale(t *testing.T) {
	if testing.Short() {
		t.Skip("30,000 probes")
	}
	const members, step = 10_000, 10 * time.Millisecond
	p := newCountingProber(t, DefaultMaxConcurrent)
	h := startEngine(t, membersOnOnePool(members, tcpMonitor("m1")), Options{},
		map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: p})

	perStep := make([]int64, 0, 300)
	last := p.total.Load()
	for range 300 {
		h.step(t, step)
		n := p.total.Load()
		perStep = append(perStep, n-last)
		last = n
	}
	// First second: the first probes, spread by jitter. Each 100 ms should
	// see about a tenth of the members (binomial: sd ≈ 30).
	for b := range 10 {
		var n int64
		for _, c := range perStep[b*10 : b*10+10] {
			n += c
		}
		if n < members/10-300 || n > members/10+300 {
			t.Errorf("first probes in [%d ms, %d ms): %d, want about %d", b*100, b*100+100, n, members/10)
		}
	}
	for sec := 1; sec < 3; sec++ {
		var n int64
		for _, c := range perStep[sec*100 : sec*100+100] {
			n += c
		}
		if n < members*99/100 || n > members*101/100 {
			t.Errorf("second %d: %d probes, want about %d (members/delay)", sec+1, n, members)
		}
	}
	if m := p.max.Load(); m > DefaultMaxConcurrent {
		t.Errorf("%d probes in flight at once, limit %d", m, DefaultMaxConcurrent)
	}
}

// BenchmarkEngine_Probes measures the scheduler's cost per probe with
// 10,000 members at delay 1 s and probes that pass at once; one iteration
// is one second of fake time.
func BenchmarkEngine_Probes(b *testing.B) {
	const members = 10_000
	p := newCountingProber(b, DefaultMaxConcurrent)
	h := startEngine(b, membersOnOnePool(members, tcpMonitor("m1")), Options{},
		map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: p})
	h.step(b, time.Second) // every member probed once
	start := p.total.Load()
	b.ResetTimer()
	for range b.N {
		for range 10 {
			h.step(b, 100*time.Millisecond)
		}
	}
	b.StopTimer()
	probes := p.total.Load() - start
	b.ReportMetric(float64(probes)/float64(b.N), "probes/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(probes), "ns/probe")
}
