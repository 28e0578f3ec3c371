package health

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, fakeTimer{at: c.now.Add(d), c: ch})
	return ch
}

// Advance moves the clock and fires the timers that came due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- c.now
	}
	c.timers = kept
}

// fakeSource is a ConfigSource whose configuration tests replace.
type fakeSource struct {
	mu      sync.Mutex
	cfg     *sdnlb.Config
	seq     uint64
	loadErr error
	loads   int
	events  chan sdnlb.Event // unbuffered: a send returns once the engine took it
}

var _ sdnlb.ConfigSource = (*fakeSource)(nil)

func newFakeSource(cfg *sdnlb.Config) *fakeSource {
	return &fakeSource{cfg: cfg, events: make(chan sdnlb.Event)}
}

func (s *fakeSource) LoadConfig(context.Context) (*sdnlb.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loads++
	if s.loadErr != nil {
		return nil, s.loadErr
	}
	cfg := *s.cfg
	cfg.Seq = s.seq
	return &cfg, nil
}

func (s *fakeSource) Subscribe() (<-chan sdnlb.Event, func()) {
	return s.events, func() {}
}

func (s *fakeSource) loadCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loads
}

func (s *fakeSource) setLoadErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loadErr = err
}

// change swaps in cfg and sends the event a store would.
func (s *fakeSource) change(cfg *sdnlb.Config, kind sdnlb.EventKind, op sdnlb.EventOp, id string) {
	s.mu.Lock()
	s.cfg = cfg
	s.seq++
	ev := sdnlb.Event{Seq: s.seq, Kind: kind, Op: op, ID: id}
	s.mu.Unlock()
	s.events <- ev
}

// fakeHealthStore is a MemberHealthService that records every write.
type fakeHealthStore struct {
	mu     sync.Mutex
	writes []healthWrite
	fail   []error // returned by the next writes, in order
}

type healthWrite struct {
	id string
	h  sdnlb.MemberHealth
}

var _ sdnlb.MemberHealthService = (*fakeHealthStore)(nil)

func (s *fakeHealthStore) SetMemberHealth(_ context.Context, id string, h sdnlb.MemberHealth) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fail) > 0 {
		err := s.fail[0]
		s.fail = s.fail[1:]
		return err
	}
	s.writes = append(s.writes, healthWrite{id, h})
	return nil
}

// statuses returns the statuses written for a member, in order.
func (s *fakeHealthStore) statuses(id string) []sdnlb.MemberStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sdnlb.MemberStatus
	for _, w := range s.writes {
		if w.id == id {
			out = append(out, w.h.Status)
		}
	}
	return out
}

func (s *fakeHealthStore) last(id string) (sdnlb.MemberHealth, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.writes) - 1; i >= 0; i-- {
		if s.writes[i].id == id {
			return s.writes[i].h, true
		}
	}
	return sdnlb.MemberHealth{}, false
}

// harness runs an engine on a fake clock.
type harness struct {
	e     *Engine
	clock *fakeClock
	src   *fakeSource
	store *fakeHealthStore
}

// startEngine runs an engine until the test ends. probers, when set,
// replace the real ones.
func startEngine(tb testing.TB, cfg *sdnlb.Config, opts Options, probers map[sdnlb.MonitorType]prober) *harness {
	tb.Helper()
	h := &harness{clock: newFakeClock(t0), src: newFakeSource(cfg), store: &fakeHealthStore{}}
	opts.Now, opts.After = h.clock.Now, h.clock.After
	h.e = New(h.src, h.store, opts)
	for typ, p := range probers {
		h.e.probers[typ] = p
	}
	h.e.settle = make(chan settleRequest)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.e.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("Run: %v", err)
		}
	})
	h.settle(tb, 0)
	return h
}

// settle waits until the engine has nothing left to do at the fake
// clock's time, with inflight probes still running.
func (h *harness) settle(tb testing.TB, inflight int) {
	tb.Helper()
	req := settleRequest{inflight: inflight, reply: make(chan time.Time, 1)}
	guard := time.NewTimer(20 * time.Second)
	defer guard.Stop()
	select {
	case h.e.settle <- req:
	case <-guard.C:
		tb.Fatal("the engine did not take the settle request")
	}
	select {
	case at := <-req.reply:
		if !at.Equal(h.clock.Now()) {
			tb.Fatalf("engine settled at %v, clock is at %v", at, h.clock.Now())
		}
	case <-guard.C:
		tb.Fatalf("the engine did not settle with %d probes in flight", inflight)
	}
}

// step advances the clock by d and waits for every due probe to end.
func (h *harness) step(tb testing.TB, d time.Duration) {
	tb.Helper()
	h.clock.Advance(d)
	h.settle(tb, 0)
}

// change applies a configuration change and waits until it was loaded.
func (h *harness) change(tb testing.TB, cfg *sdnlb.Config, kind sdnlb.EventKind, op sdnlb.EventOp, id string) {
	tb.Helper()
	before := h.src.loadCount()
	h.src.change(cfg, kind, op, id)
	h.settle(tb, 0)
	if h.src.loadCount() == before {
		tb.Fatalf("the change was not loaded: reloads are %v apart, step the clock first", reloadInterval)
	}
}

func (h *harness) wantStatuses(tb testing.TB, memberID string, want ...sdnlb.MemberStatus) {
	tb.Helper()
	got := h.store.statuses(memberID)
	if strings.Join(statusStrings(got), ",") != strings.Join(statusStrings(want), ",") {
		tb.Fatalf("statuses written for %s: %v, want %v", memberID, got, want)
	}
}

func statusStrings(ss []sdnlb.MemberStatus) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

// Configuration builders.

func tcpMonitor(id string) *sdnlb.Monitor {
	m := sdnlb.NewMonitor()
	m.ID, m.Type, m.Delay, m.Timeout, m.MaxRetries, m.Rise = id, sdnlb.MonitorTCP, 1, 0.5, 3, 2
	return m
}

func httpMonitor(id, path string) *sdnlb.Monitor {
	m := tcpMonitor(id)
	m.Type, m.URLPath = sdnlb.MonitorHTTP, path
	return m
}

func testPool(id, vipID string, monitorIDs ...string) *sdnlb.Pool {
	p := sdnlb.NewPool()
	p.ID, p.VIPID, p.MonitorIDs = id, vipID, monitorIDs
	return p
}

func testVIP(id string, port int) *sdnlb.VIP {
	v := sdnlb.NewVIP()
	v.ID, v.Address, v.Port = id, "10.0.0.100", port
	return v
}

func testMember(id, poolID string, port int, status sdnlb.MemberStatus) *sdnlb.Member {
	m := sdnlb.NewMember()
	m.ID, m.PoolID, m.Address, m.Port = id, poolID, "127.0.0.1", port
	m.Health = sdnlb.MemberHealth{Status: status, Since: t0.Add(-time.Hour)}
	return m
}

// toggleServer is an HTTP member whose /health answers 200 or 503 and
// counts the probes it got.
type toggleServer struct {
	*httptest.Server
	healthy atomic.Bool
	hits    atomic.Int64
}

func newToggleServer(tb testing.TB) *toggleServer {
	tb.Helper()
	s := &toggleServer{}
	s.healthy.Store(true)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if r.URL.Path != "/health" || !s.healthy.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	tb.Cleanup(s.Close)
	return s
}

func (s *toggleServer) port() int { return s.Listener.Addr().(*net.TCPAddr).Port }

func TestEngine_TCPServerStopsAndRestarts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	serve := func(ln net.Listener) {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}
	go serve(ln)
	defer func() { ln.Close() }()

	// The member's port is 0: the probes go to the VIP's port.
	cfg := &sdnlb.Config{
		VIPs:     []*sdnlb.VIP{testVIP("v1", port)},
		Pools:    []*sdnlb.Pool{testPool("p1", "v1", "m1")},
		Monitors: []*sdnlb.Monitor{tcpMonitor("m1")},
		Members:  []*sdnlb.Member{testMember("a", "p1", 0, sdnlb.MemberDown)},
	}
	h := startEngine(t, cfg, Options{}, nil)
	if live, ok := h.e.MemberHealth("a"); !ok || live.Status != sdnlb.MemberDown || live.LastCheck != nil {
		t.Fatalf("before any probe: MemberHealth = %+v, %v; want the stored DOWN", live, ok)
	}
	h.wantStatuses(t, "a")

	h.step(t, time.Second) // the first probe passes: the store's new member goes UP at once
	h.wantStatuses(t, "a", sdnlb.MemberUp)
	up, _ := h.store.last("a")
	if !up.Since.Equal(h.clock.Now()) || up.LastCheck == nil || !up.LastCheck.Equal(h.clock.Now()) || up.LastError != "" {
		t.Fatalf("UP written as %+v, want since and last check %v", up, h.clock.Now())
	}

	ln.Close()
	for i := 1; i < 3; i++ {
		h.step(t, time.Second)
		h.wantStatuses(t, "a", sdnlb.MemberUp) // fewer failures than max_retries
		if live, _ := h.e.MemberHealth("a"); !strings.Contains(live.LastError, "refused") || live.Status != sdnlb.MemberUp {
			t.Fatalf("after %d failures MemberHealth = %+v, want UP with the refusal as last error", i, live)
		}
	}
	h.step(t, time.Second)
	h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberDown)
	down, _ := h.store.last("a")
	if !strings.Contains(down.LastError, "connection refused (probed from 127.0.0.1 on ") || !down.Since.Equal(h.clock.Now()) {
		t.Fatalf("DOWN written as %+v, want the refusal, where the probe left from, and since now", down)
	}
	h.step(t, time.Second)
	h.step(t, time.Second)
	h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberDown) // exactly one DOWN

	ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listen again on %d: %v", port, err)
	}
	go serve(ln)
	h.step(t, time.Second)
	h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberDown) // one success, rise is 2
	h.step(t, time.Second)
	h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberDown, sdnlb.MemberUp)
	if live, _ := h.e.MemberHealth("a"); live.Status != sdnlb.MemberUp || live.LastError != "" || !live.LastCheck.Equal(h.clock.Now()) {
		t.Fatalf("MemberHealth = %+v, want UP, no error, checked now", live)
	}
}

func TestEngine_MonitorsOfAPool(t *testing.T) {
	srv := newToggleServer(t)
	vip := testVIP("v1", srv.port())
	base := func(monitors []*sdnlb.Monitor, poolMonitors ...string) *sdnlb.Config {
		return &sdnlb.Config{
			VIPs:     []*sdnlb.VIP{vip},
			Pools:    []*sdnlb.Pool{testPool("p1", "v1", poolMonitors...)},
			Monitors: monitors,
			Members:  []*sdnlb.Member{testMember("a", "p1", srv.port(), sdnlb.MemberNoMonitor)},
		}
	}
	httpMon := httpMonitor("m-http", "/health")
	tcpMon := tcpMonitor("m-tcp")

	h := startEngine(t, base(nil), Options{}, nil)
	h.step(t, time.Second)
	if srv.hits.Load() != 0 {
		t.Fatal("a member of a pool without monitors was probed")
	}
	if live, _ := h.e.MemberHealth("a"); live.Status != sdnlb.MemberNoMonitor {
		t.Fatalf("MemberHealth = %+v, want NO_MONITOR", live)
	}

	t.Run("AddedMonitorCountsAsUp", func(t *testing.T) {
		h.change(t, base([]*sdnlb.Monitor{httpMon, tcpMon}, "m-http", "m-tcp"), sdnlb.KindPool, sdnlb.OpUpdate, "p1")
		h.wantStatuses(t, "a", sdnlb.MemberUp)
		srv.healthy.Store(false) // TCP still connects
		h.step(t, time.Second)
		h.step(t, time.Second)
		h.wantStatuses(t, "a", sdnlb.MemberUp)
		h.step(t, time.Second)
		h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberDown) // one monitor down is enough
	})
	t.Run("ChangedMonitorTakesEffect", func(t *testing.T) {
		fixed := httpMonitor("m-http", "/health")
		fixed.ExpectedCodes = "200,503"
		h.change(t, base([]*sdnlb.Monitor{fixed, tcpMon}, "m-http", "m-tcp"), sdnlb.KindMonitor, sdnlb.OpUpdate, "m-http")
		h.step(t, time.Second)
		h.step(t, time.Second)
		h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberDown, sdnlb.MemberUp)
	})
	t.Run("DisabledMonitorStopsProbing", func(t *testing.T) {
		off := httpMonitor("m-http", "/health")
		off.AdminStateUp = false
		h.change(t, base([]*sdnlb.Monitor{off, tcpMon}, "m-http", "m-tcp"), sdnlb.KindMonitor, sdnlb.OpUpdate, "m-http")
		before := srv.hits.Load()
		h.step(t, time.Second)
		h.step(t, time.Second)
		if n := srv.hits.Load() - before; n != 0 {
			t.Fatalf("a disabled HTTP monitor sent %d requests", n)
		}
		h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberDown, sdnlb.MemberUp)
	})
	t.Run("RemovedMonitorsNoMonitor", func(t *testing.T) {
		h.change(t, base([]*sdnlb.Monitor{httpMon, tcpMon}), sdnlb.KindPool, sdnlb.OpUpdate, "p1")
		h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberDown, sdnlb.MemberUp, sdnlb.MemberNoMonitor)
		if live, _ := h.e.MemberHealth("a"); live.Status != sdnlb.MemberNoMonitor {
			t.Fatalf("MemberHealth = %+v, want NO_MONITOR", live)
		}
	})
	t.Run("LongerDelayProbesLessOften", func(t *testing.T) {
		slow := httpMonitor("m-http", "/health")
		slow.Delay, slow.Timeout = 5, 1
		h.step(t, time.Second)
		h.change(t, base([]*sdnlb.Monitor{slow}, "m-http"), sdnlb.KindPool, sdnlb.OpUpdate, "p1")
		before := srv.hits.Load()
		for range 10 {
			h.step(t, time.Second)
		}
		if n := srv.hits.Load() - before; n != 2 {
			t.Fatalf("%d probes in 10 s at delay 5 s, want 2", n)
		}
	})
	t.Run("DeletedMemberStopsProbing", func(t *testing.T) {
		gone := base([]*sdnlb.Monitor{httpMon}, "m-http")
		gone.Members = nil
		h.change(t, gone, sdnlb.KindMember, sdnlb.OpDelete, "a")
		before := srv.hits.Load()
		h.step(t, 5*time.Second)
		h.step(t, 5*time.Second)
		if n := srv.hits.Load() - before; n != 0 {
			t.Fatalf("a deleted member got %d probes", n)
		}
		if _, ok := h.e.MemberHealth("a"); ok {
			t.Fatal("MemberHealth still knows the deleted member")
		}
	})
}

// gateProber blocks every probe until its gate opens (or its context
// ends), and checks that no target is probed twice at once.
type gateProber struct {
	tb       testing.TB
	gate     chan struct{}
	started  chan target
	mu       sync.Mutex
	inflight map[target]bool
	now      int
	max      int
	total    int
	canceled int
}

func newGateProber(tb testing.TB) *gateProber {
	return &gateProber{tb: tb, gate: make(chan struct{}), started: make(chan target, 1024), inflight: make(map[target]bool)}
}

func (p *gateProber) probe(ctx context.Context, t target) error {
	p.mu.Lock()
	if p.inflight[t] {
		p.tb.Errorf("%v probed twice at once", t)
	}
	p.inflight[t] = true
	p.now++
	p.total++
	p.max = max(p.max, p.now)
	p.mu.Unlock()
	p.started <- t
	var err error
	select {
	case <-p.gate:
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.mu.Lock()
	delete(p.inflight, t)
	p.now--
	if err != nil {
		p.canceled++
	}
	p.mu.Unlock()
	return err
}

func (p *gateProber) counts() (total, maxInflight, canceled int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, p.max, p.canceled
}

// membersOnOnePool returns n members of a pool with one TCP monitor.
func membersOnOnePool(n int, mon *sdnlb.Monitor) *sdnlb.Config {
	cfg := &sdnlb.Config{
		VIPs:     []*sdnlb.VIP{testVIP("v1", 80)},
		Pools:    []*sdnlb.Pool{testPool("p1", "v1", mon.ID)},
		Monitors: []*sdnlb.Monitor{mon},
	}
	for i := range n {
		m := testMember("m"+strconv.Itoa(i), "p1", 1+i, sdnlb.MemberUp)
		cfg.Members = append(cfg.Members, m)
	}
	return cfg
}

// slowMonitor has a timeout longer than any test, so that only a
// gateProber's gate ends its probes.
func slowMonitor() *sdnlb.Monitor {
	m := tcpMonitor("m1")
	m.Delay, m.Timeout = 100, 99
	return m
}

func TestEngine_SlowProbeNeverOverlaps(t *testing.T) {
	p := newGateProber(t)
	mon := slowMonitor()
	h := startEngine(t, membersOnOnePool(1, mon), Options{}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: p})
	h.clock.Advance(mon.Delay.Duration())
	h.settle(t, 1)
	<-p.started
	for range 3 {
		h.clock.Advance(mon.Delay.Duration())
		h.settle(t, 1)
	}
	if total, _, _ := p.counts(); total != 1 {
		t.Fatalf("%d probes started while the first was running, want 1", total)
	}
	close(p.gate)
	h.settle(t, 0) // the next probe was overdue: it runs at once
	if total, maxInflight, _ := p.counts(); total != 2 || maxInflight != 1 {
		t.Fatalf("probes %d (max %d at once), want 2 one after the other", total, maxInflight)
	}
}

func TestEngine_MaxConcurrent(t *testing.T) {
	const members, limit = 40, 4
	p := newGateProber(t)
	mon := slowMonitor()
	h := startEngine(t, membersOnOnePool(members, mon), Options{MaxConcurrent: limit},
		map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: p})
	h.clock.Advance(mon.Delay.Duration())
	h.settle(t, limit)
	for range limit {
		<-p.started
	}
	if total, _, _ := p.counts(); total != limit {
		t.Fatalf("%d probes started, limit %d", total, limit)
	}
	close(p.gate)
	h.settle(t, 0)
	if total, maxInflight, _ := p.counts(); total != members || maxInflight > limit {
		t.Fatalf("probes %d (max %d at once), want %d, at most %d at once", total, maxInflight, members, limit)
	}
}

func TestEngine_RemovedMemberCancelsProbe(t *testing.T) {
	p := newGateProber(t)
	mon := slowMonitor()
	cfg := membersOnOnePool(1, mon)
	cfg.Members[0].Health.Status = sdnlb.MemberDown // a result would be a transition
	h := startEngine(t, cfg, Options{}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: p})
	h.clock.Advance(mon.Delay.Duration())
	h.settle(t, 1)
	gone := membersOnOnePool(0, mon)
	h.src.change(gone, sdnlb.KindMember, sdnlb.OpDelete, "m0")
	h.settle(t, 0) // the reload is due at once and cancels the probe
	if _, _, canceled := p.counts(); canceled != 1 {
		t.Fatalf("%d probes cancelled, want the one in flight", canceled)
	}
	h.wantStatuses(t, "m0")
	if _, ok := h.e.MemberHealth("m0"); ok {
		t.Fatal("MemberHealth still knows the deleted member")
	}
}

// passProber passes every probe at once.
type passProber struct{ n atomic.Int64 }

func (p *passProber) probe(context.Context, target) error {
	p.n.Add(1)
	return nil
}

func TestEngine_StoreWrites(t *testing.T) {
	t.Run("RetriedAfterFailure", func(t *testing.T) {
		cfg := membersOnOnePool(1, tcpMonitor("m1"))
		cfg.Members[0].Health.Status = sdnlb.MemberDown
		h := startEngine(t, cfg, Options{}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: &passProber{}})
		h.store.fail = []error{errors.New("database is locked")}
		h.step(t, time.Second)
		h.wantStatuses(t, "m0") // refused, waiting to retry
		h.step(t, writeRetryDelay)
		h.wantStatuses(t, "m0", sdnlb.MemberUp)
	})
	t.Run("DeletedMemberNotRetried", func(t *testing.T) {
		cfg := membersOnOnePool(1, tcpMonitor("m1"))
		cfg.Members[0].Health.Status = sdnlb.MemberDown
		h := startEngine(t, cfg, Options{}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: &passProber{}})
		h.store.fail = []error{sdnlb.Errorf(sdnlb.ENOTFOUND, "member m0 not found")}
		h.step(t, time.Second)
		h.step(t, writeRetryDelay)
		h.wantStatuses(t, "m0")
	})
}

func TestEngine_LoadConfig(t *testing.T) {
	t.Run("RetriedAfterFailure", func(t *testing.T) {
		p := &passProber{}
		cfg := membersOnOnePool(1, tcpMonitor("m1"))
		h := startEngine(t, &sdnlb.Config{}, Options{}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: p})
		h.src.setLoadErr(errors.New("disk I/O error"))
		h.step(t, time.Second)
		h.change(t, cfg, sdnlb.KindMember, sdnlb.OpCreate, "m0")
		if _, ok := h.e.MemberHealth("m0"); ok {
			t.Fatal("a member appeared although the load failed")
		}
		h.src.setLoadErr(nil)
		h.step(t, reloadRetry)
		if _, ok := h.e.MemberHealth("m0"); !ok {
			t.Fatal("the failed load was not retried")
		}
	})
	t.Run("HealthEventsDoNotReload", func(t *testing.T) {
		h := startEngine(t, membersOnOnePool(1, tcpMonitor("m1")), Options{}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: &passProber{}})
		before := h.src.loadCount()
		h.src.events <- sdnlb.Event{Seq: 99, Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: "m0"}
		h.step(t, time.Second)
		after := h.src.loadCount()
		if after != before {
			t.Fatalf("a health event caused %d reloads", after-before)
		}
	})
	t.Run("BurstCoalesced", func(t *testing.T) {
		h := startEngine(t, membersOnOnePool(1, tcpMonitor("m1")), Options{}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: &passProber{}})
		before := h.src.loadCount()
		for i := range 50 {
			h.src.change(membersOnOnePool(i+2, tcpMonitor("m1")), sdnlb.KindMember, sdnlb.OpCreate, "m"+strconv.Itoa(i+1))
		}
		h.step(t, reloadInterval)
		after := h.src.loadCount()
		if after-before != 1 {
			t.Fatalf("50 events caused %d reloads, want 1", after-before)
		}
		if _, ok := h.e.MemberHealth("m50"); !ok {
			t.Fatal("the reload missed the last change")
		}
	})
}

func TestEngine_ChangeFeedClosed(t *testing.T) {
	src := newFakeSource(&sdnlb.Config{})
	e := New(src, &fakeHealthStore{}, Options{})
	close(src.events)
	if err := e.Run(context.Background()); err == nil {
		t.Fatal("Run returned nil after the change feed closed")
	}
}

func TestEngine_Metrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := membersOnOnePool(3, tcpMonitor("m1"))
	cfg.Members[0].Health.Status = sdnlb.MemberDown
	h := startEngine(t, cfg, Options{Registerer: reg}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: &passProber{}})
	h.step(t, time.Second)
	h.step(t, time.Second)
	got := gatherValues(t, reg)
	want := map[string]float64{
		`sdnlb_health_probes_total{result="success",type="TCP"}`: 6,
		`sdnlb_health_transitions_total{status="UP"}`:            1,
		`sdnlb_members{status="UP"}`:                             3,
		`sdnlb_members{status="DOWN"}`:                           0,
		`sdnlb_health_probe_seconds_count{type="TCP"}`:           6,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	checks := 0
	for k := range got {
		if strings.HasPrefix(k, "sdnlb_member_check_duration_seconds{member=") {
			checks++
		}
	}
	if checks != 3 {
		t.Errorf("%d members with a check duration, want 3", checks)
	}
	for _, m := range cfg.Members {
		if k := `sdnlb_member_health_up{member="` + m.ID + `"}`; got[k] != 1 {
			t.Errorf("%s = %v, want 1", k, got[k])
		}
	}
	t.Run("SecondEngineSharesCollectors", func(t *testing.T) {
		again := newMetrics(reg, h.e.log)
		if again.probes != h.e.metrics.probes || again.members != h.e.metrics.members {
			t.Fatal("a second engine on the registry got collectors of its own")
		}
	})
}

// gatherValues flattens a registry into "name{labels}" → value.
func gatherValues(tb testing.TB, reg *prometheus.Registry) map[string]float64 {
	tb.Helper()
	families, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]float64)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			key := "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.Counter != nil:
				out[f.GetName()+key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[f.GetName()+key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[f.GetName()+"_count"+key] = float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return out
}

func TestEngine_ChangedTargetDropsResultInFlight(t *testing.T) {
	p := newGateProber(t)
	mon := slowMonitor()
	cfg := membersOnOnePool(1, mon)
	cfg.Members[0].Health.Status = sdnlb.MemberDown // never checked: one success would bring it UP
	h := startEngine(t, cfg, Options{}, map[sdnlb.MonitorType]prober{sdnlb.MonitorTCP: p})
	h.clock.Advance(mon.Delay.Duration())
	h.settle(t, 1)
	old := <-p.started

	moved := membersOnOnePool(1, mon)
	moved.Members[0].Health.Status = sdnlb.MemberDown
	moved.Members[0].Port = old.Port + 1000
	h.src.change(moved, sdnlb.KindMember, sdnlb.OpUpdate, "m0")
	h.settle(t, 1)
	close(p.gate) // the old port's probe passes, but it is stale
	h.settle(t, 0)
	h.wantStatuses(t, "m0")

	h.step(t, mon.Delay.Duration())
	h.wantStatuses(t, "m0", sdnlb.MemberUp)
	if next := <-p.started; next.Port != old.Port+1000 {
		t.Fatalf("the next probe went to port %d, want the new port %d", next.Port, old.Port+1000)
	}
}

// TestEngine_RunAgain stops the engine and runs it again, as a node that
// loses and regains the lead of a cluster does: nothing is probed or
// written between the runs, and the second run starts from the store.
func TestEngine_RunAgain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	cfg := &sdnlb.Config{
		VIPs:     []*sdnlb.VIP{testVIP("v1", port)},
		Pools:    []*sdnlb.Pool{testPool("p1", "v1", "m1")},
		Monitors: []*sdnlb.Monitor{tcpMonitor("m1")},
		Members:  []*sdnlb.Member{testMember("a", "p1", 0, sdnlb.MemberDown)},
	}
	h := &harness{clock: newFakeClock(t0), src: newFakeSource(cfg), store: &fakeHealthStore{}}
	reg := prometheus.NewRegistry()
	h.e = New(h.src, h.store, Options{Now: h.clock.Now, After: h.clock.After, Registerer: reg})
	h.e.settle = make(chan settleRequest)
	run := func() func() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- h.e.Run(ctx) }()
		h.settle(t, 0)
		return func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
		}
	}
	stop := run()
	h.step(t, time.Second)
	h.wantStatuses(t, "a", sdnlb.MemberUp)
	stop()

	if live, ok := h.e.MemberHealth("a"); ok {
		t.Fatalf("live health %+v after the run; want none, the store answers", live)
	}
	for k, v := range gatherValues(t, reg) {
		if strings.HasPrefix(k, "sdnlb_members{") || strings.HasPrefix(k, "sdnlb_member_") {
			t.Errorf("after the run %s = %v; want no member gauges", k, v)
		}
	}
	h.clock.Advance(10 * time.Second)
	h.wantStatuses(t, "a", sdnlb.MemberUp) // nothing while stopped

	stop = run()
	defer stop()
	// The store still says DOWN (the fake source does not change): the
	// new run starts from that and writes UP again.
	if live, ok := h.e.MemberHealth("a"); !ok || live.Status != sdnlb.MemberDown {
		t.Fatalf("second run starts from %+v, want the stored DOWN", live)
	}
	h.step(t, time.Second)
	h.wantStatuses(t, "a", sdnlb.MemberUp, sdnlb.MemberUp)
	got := gatherValues(t, reg)
	if got[`sdnlb_members{status="UP"}`] != 1 || got[`sdnlb_member_health_up{member="a"}`] != 1 {
		t.Errorf("second run's gauges %v; want the one member counted once, UP", got)
	}
}
