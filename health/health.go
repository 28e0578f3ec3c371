// Package health runs the active health monitors (PING, TCP, HTTP, HTTPS,
// AGENT) against every member of every monitored pool and writes each
// member's status (UP, DOWN, NO_MONITOR) to the store when it changes, so
// that the controller takes dead members out of rotation within the
// monitor's window. cmd/sdnlb wires it:
//
//	h := health.New(store, store, health.Options{Logger: log, Registerer: reg})
//	go h.Run(ctx)
//	// h is the API's sdnlb.HealthReporter
//
// Status rules (state.go): a monitor takes a member DOWN after max_retries
// consecutive failures and brings it UP after rise consecutive successes;
// with several monitors a member is UP only while all of them say up. A
// pool without an admin-up monitor makes its members NO_MONITOR. A monitor
// added to members in rotation (UP, NO_MONITOR) counts as up until
// max_retries failures. A member the store created DOWN and nobody checked
// yet (no LastCheck) is decided by its first probe, like HAProxy's initial
// check: UP on the first success. DRAINING is the store's business; drained
// members are still probed so their status is fresh when they return.
//
// An AGENT monitor (agent.go) asks the member's own agent how loaded it is
// and whether it takes connections. A reply that passes counts as up; one
// that says the member is out takes it DOWN at once. What the agent said
// goes to the store with the member's health (its drain at once, a moved
// share at most once a second; see memberState.hear), and from there to
// every node's controller.
//
// Scheduling: one goroutine (Run) owns all state. It keeps one task per
// (member, monitor) in a timer heap, so 10,000 members cost one timer, not
// 10,000 tickers, and the concurrency limit and the one-probe-in-flight rule
// live in one place. It starts due probes on goroutines up to
// Options.MaxConcurrent; a task goes back into the heap only when its probe
// returned, so a slow probe delays the next one and never overlaps it. First
// probes are spread at random over the delay. The configuration is reloaded
// on the store's change feed (bursts are coalesced, reloads at least
// reloadInterval apart) and the tasks reconciled: removed members and
// monitors stop at once, a probe in flight is cancelled and its result
// dropped. Transitions go to the store through a writer goroutine, so a slow
// store never stalls probing.
package health

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/internal/peerlog"
)

// DefaultMaxConcurrent is the default bound on probes in flight.
const DefaultMaxConcurrent = 512

const (
	// reloadInterval spaces reloads during bursts of writes (a bulk
	// import is thousands of events); the changes still apply within it.
	reloadInterval = 250 * time.Millisecond
	// reloadRetry is the wait after a failed load.
	reloadRetry = time.Second
)

// Options configure an Engine; the zero value works.
type Options struct {
	Logger *slog.Logger // nil: discard
	// Now and After are the clock that schedules probes and stamps results
	// (Since, LastCheck); tests replace both with a fake clock. Latency is
	// measured on the real monotonic clock since it describes the network.
	Now           func() time.Time
	After         func(time.Duration) <-chan time.Time
	MaxConcurrent int                   // probes in flight at once; 0: DefaultMaxConcurrent
	Registerer    prometheus.Registerer // nil: no metrics
}

type clock struct {
	now   func() time.Time
	after func(time.Duration) <-chan time.Time
}

// Engine probes members and reports their health. Create it with New and
// start it with Run, one run at a time.
type Engine struct {
	src     sdnlb.ConfigSource
	svc     sdnlb.MemberHealthService
	log     *slog.Logger
	clock   clock
	max     int
	metrics *metrics
	probers map[sdnlb.MonitorType]prober
	agent   *agentProber
	pingers *pingers
	routes  *routes

	mu   sync.RWMutex
	live map[string]sdnlb.MemberHealth // by member id, for MemberHealth

	// Owned by Run's goroutine.
	members  map[string]*memberEntry
	heap     taskHeap
	inflight int
	lastSeq  uint64 // of the loaded configuration
	results  chan probeDone
	kick     chan struct{}
	writer   *healthWriter
	// peer writes what members and their agents can make happen, often
	// on purpose: unreadable agent replies, failed probes, health
	// changes; at most one line a minute per kind and member.
	peer *peerlog.Log

	// settle, when not nil, answers a settleRequest once the engine has
	// nothing left to do at the current time: tests step a fake clock with
	// it instead of sleeping.
	settle chan settleRequest
}

var _ sdnlb.HealthReporter = (*Engine)(nil)

// memberEntry is one member the engine watches.
type memberEntry struct {
	id      string
	address string
	state   *memberState
	tasks   map[string]*task // by monitor id
}

// probeDone is a finished probe on its way back to Run.
type probeDone struct {
	task    *task
	gen     uint64
	started time.Time
	res     probeResult
}

type loadResult struct {
	cfg *sdnlb.Config
	err error
}

type settleRequest struct {
	inflight int            // answer once exactly this many probes are in flight
	reply    chan time.Time // the engine's time when it answered
}

// New returns an engine that reads the configuration from src and writes
// transitions to svc.
func New(src sdnlb.ConfigSource, svc sdnlb.MemberHealthService, opts Options) *Engine {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "health")
	c := clock{now: opts.Now, after: opts.After}
	if c.now == nil {
		c.now = time.Now
	}
	if c.after == nil {
		c.after = time.After
	}
	limit := opts.MaxConcurrent
	if limit <= 0 {
		limit = DefaultMaxConcurrent
	}
	e := &Engine{
		src: src, svc: svc, log: log, clock: c, max: limit,
		metrics: newMetrics(opts.Registerer, log),
		agent:   &agentProber{},
		pingers: newPingers(log),
		routes:  newRoutes(),
		peer:    peerlog.New(log, time.Minute),
		live:    make(map[string]sdnlb.MemberHealth),
		members: make(map[string]*memberEntry),
		results: make(chan probeDone, limit), // every probe in flight has room: they never block
		kick:    make(chan struct{}, 1),
	}
	httpP := newHTTPProber(nil)
	e.probers = map[sdnlb.MonitorType]prober{
		sdnlb.MonitorPING:  e.pingers,
		sdnlb.MonitorTCP:   &tcpProber{},
		sdnlb.MonitorHTTP:  httpP,
		sdnlb.MonitorHTTPS: httpP,
	}
	e.writer = newHealthWriter(svc, c, log, e.kick)
	return e
}

// MemberHealth returns the member's latest live health: status, since,
// last check, latency and error of the latest probe.
func (e *Engine) MemberHealth(memberID string) (sdnlb.MemberHealth, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	h, ok := e.live[memberID]
	return h, ok
}

// Run probes until ctx ends, then stops the probes in flight and returns
// nil. It returns an error if the change feed closes.
//
// Run may be called again once it has returned (the leader of a cluster
// runs the monitors only while it leads): each run starts afresh from the
// store, and what the last one had not written yet is dropped.
func (e *Engine) Run(ctx context.Context) error {
	e.reset()
	events, unsubscribe := e.src.Subscribe()
	defer unsubscribe()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		e.pingers.close()
		e.metrics.forget()
		// The live health is this run's: the store's answers without it.
		e.mu.Lock()
		e.live = make(map[string]sdnlb.MemberHealth)
		e.mu.Unlock()
	}()
	wg.Go(func() { e.writer.run(ctx) })

	loaded := make(chan loadResult, 1)
	var (
		loading  bool
		reloadAt = e.clock.now() // the first load: at once
		lastLoad time.Time
		timerC   <-chan time.Time
		timerAt  time.Time
		settling *settleRequest
	)
	for {
		now := e.clock.now()
		if !loading && !reloadAt.IsZero() && !reloadAt.After(now) {
			loading, reloadAt, lastLoad = true, time.Time{}, now
			wg.Go(func() {
				cfg, err := e.src.LoadConfig(ctx)
				loaded <- loadResult{cfg, err}
			})
		}
		e.dispatch(ctx, &wg, now)

		if settling != nil && !loading && e.quiet(now, reloadAt) && e.inflight == settling.inflight {
			settling.reply <- now
			settling = nil
		}
		settleC := e.settle
		if settling != nil {
			settleC = nil
		}

		wake := reloadAt
		if loading {
			wake = time.Time{}
		}
		if next := e.heap.nextAt(); e.inflight < e.max && !next.IsZero() && (wake.IsZero() || next.Before(wake)) {
			wake = next
		}
		switch {
		case wake.IsZero():
			timerC = nil
		case timerC == nil || wake.Before(timerAt):
			timerC, timerAt = e.clock.after(wake.Sub(now)), wake
		}

		select {
		case <-ctx.Done():
			return nil
		case <-timerC:
			timerC = nil
		case d := <-e.results:
			e.finish(d)
		case ev, ok := <-events:
			if !ok {
				return errors.New("health: the store's change feed closed")
			}
			// Health events are our own writes; older ones are in the loaded config.
			stale := ev.Op != sdnlb.OpResync && ev.Seq <= e.lastSeq
			if ev.Op != sdnlb.OpHealth && !stale && reloadAt.IsZero() {
				reloadAt = lastLoad.Add(reloadInterval)
			}
		case r := <-loaded:
			loading = false
			if r.err != nil {
				e.log.Warn("load configuration failed; retrying", "err", r.err, "retry_in", reloadRetry)
				if reloadAt.IsZero() {
					reloadAt = e.clock.now().Add(reloadRetry)
				}
				break
			}
			e.reconcile(r.cfg, e.clock.now())
		case <-e.kick:
		case req := <-settleC:
			settling = &req
		}
	}
}

// reset forgets what an earlier run left: members, tasks, results,
// unwritten transitions, the live health and the closed ICMP sockets.
func (e *Engine) reset() {
	e.members = make(map[string]*memberEntry)
	e.heap = nil
	e.inflight = 0
	e.lastSeq = 0
	for {
		select {
		case <-e.results:
			continue
		case <-e.kick:
			continue
		default:
		}
		break
	}
	e.mu.Lock()
	e.live = make(map[string]sdnlb.MemberHealth)
	e.mu.Unlock()
	e.writer.reset()
	e.pingers.reset()
}

// quiet reports whether nothing is left to do at now besides waiting.
func (e *Engine) quiet(now, reloadAt time.Time) bool {
	if !reloadAt.IsZero() && !reloadAt.After(now) {
		return false
	}
	if next := e.heap.nextAt(); e.inflight < e.max && !next.IsZero() && !next.After(now) {
		return false
	}
	return e.writer.quiet(now)
}

// dispatch starts the due probes the concurrency limit allows.
func (e *Engine) dispatch(ctx context.Context, wg *sync.WaitGroup, now time.Time) {
	for e.inflight < e.max {
		t := e.heap.due(now)
		if t == nil {
			return
		}
		pctx, cancel := context.WithTimeout(ctx, t.timeout)
		t.inflight, t.cancel = true, cancel
		e.inflight++
		p, tg, gen := e.probers[t.target.Type], t.target, t.gen
		wg.Go(func() {
			defer cancel()
			began := time.Now()
			var res probeResult
			switch {
			case tg.Type == sdnlb.MonitorAgent:
				said, err := e.agent.ask(pctx, tg)
				if res.Err = e.routes.explain(err, tg.Addr); err == nil {
					res.Said = &said
				}
			case p == nil:
				res.Err = fmt.Errorf("unknown monitor type %q", tg.Type)
			default:
				res.Err = e.routes.explain(p.probe(pctx, tg), tg.Addr)
			}
			res.Latency = time.Since(began)
			e.results <- probeDone{task: t, gen: gen, started: now, res: res}
		})
	}
}

// finish applies a probe's result and schedules the task's next probe,
// one delay after this one started (at once if it ran longer than that).
func (e *Engine) finish(d probeDone) {
	e.inflight--
	t := d.task
	t.inflight, t.cancel = false, nil
	if t.removed {
		return
	}
	now := e.clock.now()
	next := d.started.Add(t.delay)
	if next.Before(now) {
		next = now
	}
	e.heap.schedule(t, next)
	if d.gen != t.gen {
		return // it probed what the member or monitor used to be
	}
	m := t.member
	e.metrics.probed(m.id, t.target.Type, d.res.Err, d.res.Latency)
	if e.log.Enabled(context.Background(), slog.LevelDebug) {
		e.log.Debug("probe", "member", m.id, "monitor", t.monitorID, "type", t.target.Type,
			"latency", d.res.Latency, "err", d.res.Err)
	}
	var bad *agentReplyError
	if errors.As(d.res.Err, &bad) {
		e.peer.Warn(now, "unreadable agent reply", t.monitorID, "unreadable agent reply", "member", m.id, "address", m.address,
			"monitor", t.monitorID, "err", d.res.Err)
	}
	report := d.res.Said != nil && m.state.hear(*d.res.Said, now)
	if d.res.Said != nil {
		e.metrics.agentSaid(m.id, m.state.health.Agent.Available)
	}
	tr, changed := m.state.observe(t.monitorID, d.res, t.rise, t.fall, now)
	e.publish(m)
	if changed && tr.To == sdnlb.MemberDown && d.res.Err != nil {
		e.peer.Warn(now, "probe failed", m.id, "health probe failed", "member", m.id, "address", m.address, "monitor", t.monitorID,
			"type", t.target.Type, "err", d.res.Err)
	}
	switch {
	case changed:
		e.transition(m, tr, now)
	case report:
		e.write(m, now)
	}
}

// transition reports a status change: log, metrics, store.
func (e *Engine) transition(m *memberEntry, tr transition, now time.Time) {
	e.peer.Info(now, "health changed", m.id, "member health changed", "member", m.id, "address", m.address,
		"from", tr.From, "to", tr.To, "reason", tr.Reason)
	e.metrics.changed(m.id, tr.From, tr.To)
	e.write(m, now)
}

// write queues the member's health, with its agent's report, for the store.
func (e *Engine) write(m *memberEntry, now time.Time) {
	e.writer.put(m.id, m.state.health)
	m.state.wrote(now)
}

func (e *Engine) publish(m *memberEntry) {
	e.mu.Lock()
	e.live[m.id] = m.state.health
	e.mu.Unlock()
}

// poolPlan is what the configuration asks of one pool's members.
type poolPlan struct {
	monitors []*sdnlb.Monitor // admin up, by id
	vipPort  int
}

// reconcile makes the tasks those cfg asks for: new members and monitors
// start probing (first probes spread over the delay), changed ones probe
// the new way from their next probe, removed ones stop at once.
func (e *Engine) reconcile(cfg *sdnlb.Config, now time.Time) {
	e.lastSeq = cfg.Seq
	vipPorts := make(map[string]int, len(cfg.VIPs))
	for _, v := range cfg.VIPs {
		vipPorts[v.ID] = v.Port
	}
	monitors := make(map[string]*sdnlb.Monitor, len(cfg.Monitors))
	for _, m := range cfg.Monitors {
		if m.AdminStateUp {
			monitors[m.ID] = m
		}
	}
	plans := make(map[string]*poolPlan, len(cfg.Pools))
	for _, p := range cfg.Pools {
		plan := &poolPlan{vipPort: vipPorts[p.VIPID]}
		for _, id := range p.MonitorIDs {
			if m := monitors[id]; m != nil {
				plan.monitors = append(plan.monitors, m)
			}
		}
		slices.SortFunc(plan.monitors, func(a, b *sdnlb.Monitor) int { return cmp.Compare(a.ID, b.ID) })
		plans[p.ID] = plan
	}

	seen := make(map[string]bool, len(cfg.Members))
	for _, m := range cfg.Members {
		seen[m.ID] = true
		plan := plans[m.PoolID]
		if plan == nil {
			plan = &poolPlan{}
		}
		e.reconcileMember(m, plan, now)
	}
	for id, m := range e.members {
		if !seen[id] {
			e.removeMember(m)
		}
	}
}

func (e *Engine) reconcileMember(m *sdnlb.Member, plan *poolPlan, now time.Time) {
	entry := e.members[m.ID]
	if entry == nil {
		entry = &memberEntry{id: m.ID, state: newMemberState(m.Health), tasks: make(map[string]*task)}
		e.members[m.ID] = entry
		e.metrics.added(m.ID, entry.state.health)
	}
	entry.address = m.Address

	ids := make([]string, len(plan.monitors))
	asked := false // by an AGENT monitor
	for i, mon := range plan.monitors {
		ids[i] = mon.ID
		asked = asked || mon.Type == sdnlb.MonitorAgent
	}
	forgot := !asked && entry.state.forgetAgent()
	if forgot {
		e.metrics.agentGone(m.ID)
	}
	switch tr, changed := entry.state.setMonitors(ids, now); {
	case changed:
		e.transition(entry, tr, now)
	case forgot:
		e.write(entry, now)
	}
	e.publish(entry)

	for id, t := range entry.tasks {
		if !slices.Contains(ids, id) {
			e.removeTask(t)
			delete(entry.tasks, id)
		}
	}
	addr, _ := netip.ParseAddr(m.Address) // invalid: the probe says so
	addr = addr.Unmap()                   // an IPv4-mapped member is an IPv4 one
	port := m.Port
	if port == 0 {
		port = plan.vipPort
	}
	for _, mon := range plan.monitors {
		tg := target{Type: mon.Type, Addr: addr, Port: port}
		switch {
		case mon.Type.IsHTTP():
			tg.Method, tg.Path, tg.Codes, tg.TLSVerify = mon.HTTPMethod, mon.URLPath, mon.ExpectedCodes, mon.TLSVerify
		case mon.Type == sdnlb.MonitorAgent:
			tg.Port = mon.Port // the agent's, not the service's
		}
		delay := max(mon.Delay.Duration(), sdnlb.MinMonitorDelay.Duration())
		timeout := mon.Timeout.Duration()
		if timeout <= 0 || timeout > delay {
			timeout = delay
		}
		t := entry.tasks[mon.ID]
		if t == nil {
			t = &task{member: entry, monitorID: mon.ID, index: -1}
			entry.tasks[mon.ID] = t
		} else if t.target != tg || t.timeout != timeout {
			t.gen++
		}
		delayChanged := t.delay != delay
		t.target, t.timeout, t.delay, t.rise, t.fall = tg, timeout, delay, mon.Rise, mon.MaxRetries
		if !t.inflight && delayChanged {
			// Spread first probes over the delay so members are not probed in lockstep.
			next := now.Add(rand.N(delay))
			if t.index >= 0 && t.next.Before(next) {
				next = t.next
			}
			e.heap.schedule(t, next)
		}
	}
}

// removeTask stops a task; a probe in flight is cancelled and its result dropped.
func (e *Engine) removeTask(t *task) {
	t.removed = true
	e.heap.unschedule(t)
	if t.cancel != nil {
		t.cancel()
	}
}

func (e *Engine) removeMember(m *memberEntry) {
	for _, t := range m.tasks {
		e.removeTask(t)
	}
	delete(e.members, m.id)
	e.writer.drop(m.id)
	e.metrics.removed(m.id, m.state.health.Status)
	e.mu.Lock()
	delete(e.live, m.id)
	e.mu.Unlock()
}
