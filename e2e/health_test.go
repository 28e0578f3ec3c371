//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// The monitor of the health scenarios: an HTTP check of /health
// every 200 ms, 190 ms timeout, DOWN after 2 failures, UP after 2 passes.
// The timeout is as long as the delay lets it be (the API wants it
// below): a probe of a member the controller dispatches crosses the
// controller with each of its replies (docs/DATAPATH.md, "Why member
// replies are punted"), a few packet-in round trips, and on a loaded
// machine probes of members that never failed took 50 ms to over 100 ms,
// two in a row often enough to take such members DOWN with a 100 ms
// timeout.
const (
	monDelay      = 200 * time.Millisecond
	monTimeout    = 190 * time.Millisecond
	monMaxRetries = 2
	monRise       = 2
)

// Bounds of the failover measurements. The detection bound is the
// monitor's own window, delay × max_retries + timeout: the first probe
// after the kill starts within a delay, and the max_retries-th failure
// ends a timeout after its own start. The margin covers probe scheduling
// and the API round trip on a busy 2-core machine with a
// race-instrumented binary.
const (
	detectWindow = monDelay*monMaxRetries + monTimeout
	riseWindow   = monDelay*monRise + monDelay
	schedMargin  = 300 * time.Millisecond
	// propagation is how long after the API shows DOWN the controller may
	// still send a new connection to the member: the status reaches it
	// through the store's change feed.
	propagation = 100 * time.Millisecond

	loadEvery     = 20 * time.Millisecond
	loadMax       = 8 * time.Second
	clientTimeout = time.Second
	statusPoll    = 10 * time.Millisecond
)

func httpMonitorFields() map[string]any {
	return map[string]any{
		"name": "http", "type": sdnlb.MonitorHTTP,
		"delay": monDelay.Seconds(), "timeout": monTimeout.Seconds(),
		"max_retries": monMaxRetries, "rise": monRise,
		"url_path": "/health", "expected_codes": "200",
	}
}

// newMonitoredBed is an lbBed of two clients and three members whose pool
// has the HTTP monitor, with every member UP.
func newMonitoredBed(tb testing.TB, dispatch sdnlb.Dispatch) *lbBed {
	tb.Helper()
	return newMonitoredBedOn(tb, openFlow13, dispatch)
}

// newMonitoredBedOn is newMonitoredBed with a switch that speaks protocol.
func newMonitoredBedOn(tb testing.TB, protocol string, dispatch sdnlb.Dispatch) *lbBed {
	tb.Helper()
	b := newBedOn(tb, protocol, 2, 3, sdnlb.RoundRobin, dispatch, nil)
	b.lb.MustCreateMonitor(b.pool, httpMonitorFields())
	for _, m := range b.mems {
		b.lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
	}
	return b
}

// result is one request of a load run.
type result struct {
	client     string
	start, end time.Time
	body       string
	err        error
}

// load sends, from each client, a request on a new connection every
// interval, each in its own goroutine with its own timeout, until stopped
// or until maxDur has passed.
type load struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu      sync.Mutex
	results []result
}

func startLoad(clients []*Host, url string, every, maxDur, timeout time.Duration) *load {
	l := &load{stop: make(chan struct{})}
	for _, c := range clients {
		l.wg.Go(func() {
			tick := time.NewTicker(every)
			defer tick.Stop()
			end := time.After(maxDur)
			var reqs sync.WaitGroup
			defer reqs.Wait()
			for i := 0; i < int(maxDur/every)+1; i++ {
				select {
				case <-l.stop:
					return
				case <-end:
					return
				case <-tick.C:
				}
				reqs.Go(func() {
					r := result{client: c.Name, start: time.Now()}
					r.body, r.err = get(c, url, timeout)
					r.end = time.Now()
					l.mu.Lock()
					l.results = append(l.results, r)
					l.mu.Unlock()
				})
			}
		})
	}
	return l
}

// Stop ends the load, waits for the requests in flight and returns every
// result in start order.
func (l *load) Stop() []result {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.results)
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// loadStats summarises results in [from, to) by start time.
type loadStats struct {
	total, failed int
	byBody        map[string]int
	firstFail     time.Time
	slowestFail   time.Duration // how long the slowest failure took to fail
	failSample    error
}

func summarise(results []result, from, to time.Time) loadStats {
	s := loadStats{byBody: map[string]int{}}
	for _, r := range results {
		if r.start.Before(from) || !r.start.Before(to) {
			continue
		}
		s.total++
		if r.err == nil {
			s.byBody[r.body]++
			continue
		}
		s.failed++
		if s.firstFail.IsZero() {
			s.firstFail, s.failSample = r.start, r.err
		}
		s.slowestFail = max(s.slowestFail, r.end.Sub(r.start))
	}
	return s
}

func (s loadStats) String() string {
	out := fmt.Sprintf("%d requests, %d failed, answers %v", s.total, s.failed, s.byBody)
	if s.failed > 0 {
		out += fmt.Sprintf(", slowest failure took %v", s.slowestFail.Round(time.Millisecond))
	}
	return out
}

// failover is what one member failure and recovery measured.
type failover struct {
	killAt, downAt, reviveAt, upAt time.Time
	results                        []result
}

func (f failover) detection() time.Duration { return f.downAt.Sub(f.killAt) }
func (f failover) recovery() time.Duration  { return f.upAt.Sub(f.reviveAt) }

// failures returns how many requests failed in all, and how many of them
// started outside the detection window [killAt - clientTimeout, downAt +
// propagation]: a request in flight when the member died may fail too.
func (f failover) failures() (all, outside int) {
	for _, r := range f.results {
		if r.err == nil {
			continue
		}
		all++
		if r.start.Before(f.killAt.Add(-clientTimeout)) || r.start.After(f.downAt.Add(propagation)) {
			outside++
		}
	}
	return all, outside
}

// failoverRun is one kill and revival of a member under load, for any
// balancer: isUp is the balancer's view of the victim.
type failoverRun struct {
	clients      []*Host
	url          string
	srv          *HTTPServer // the victim's server
	isUp         func() bool
	kill, revive func()
	// whileDown runs once the victim is seen DOWN, while the load runs.
	whileDown func(f failover)
}

// measureFailover runs the load, kills the victim, waits until the
// balancer shows it DOWN, checks that it gets no request while DOWN,
// revives it, waits until it is UP (checking it gets nothing before) and
// until it takes a request again, then stops the load.
func measureFailover(t *testing.T, r failoverRun) failover {
	t.Helper()
	var f failover
	l := startLoad(r.clients, r.url, loadEvery, loadMax, clientTimeout)
	stopped := false
	defer func() {
		if !stopped {
			l.Stop()
		}
	}()
	waitFor := func(up bool, what string, from time.Time) time.Time {
		t.Helper()
		for i := 0; i < 1000 && time.Since(from) < 5*time.Second; i++ {
			if r.isUp() == up {
				return time.Now()
			}
			time.Sleep(statusPoll)
		}
		t.Fatalf("%s: not %s %v after the change", r.srv.Name, what, time.Since(from))
		return time.Time{}
	}

	time.Sleep(time.Second)
	f.killAt = time.Now()
	r.kill()
	f.downAt = waitFor(false, "DOWN", f.killAt)
	hitsAtDown := r.srv.Hits()
	if r.whileDown != nil {
		r.whileDown(f)
	}
	// DOWN for a while under load: nothing may reach the member.
	time.Sleep(time.Second)
	if got := r.srv.Hits(); got != hitsAtDown {
		t.Errorf("DOWN member %s got %d requests", r.srv.Name, got-hitsAtDown)
	}

	f.reviveAt = time.Now()
	hitsAtRevive := r.srv.Hits()
	r.revive()
	// Read the hits before each status read: while the balancer still says
	// DOWN, it cannot have sent the member anything.
	for i := 0; i < 1000 && f.upAt.IsZero(); i++ {
		hits := r.srv.Hits()
		if r.isUp() {
			f.upAt = time.Now()
			break
		}
		if hits != hitsAtRevive {
			t.Errorf("member %s answered %d requests while still DOWN", r.srv.Name, hits-hitsAtRevive)
			hitsAtRevive = hits
		}
		if time.Since(f.reviveAt) > 5*time.Second {
			t.Fatalf("member %s not UP %v after its revival", r.srv.Name, time.Since(f.reviveAt))
		}
		time.Sleep(statusPoll)
	}
	for i := 0; i < 300 && r.srv.Hits() == hitsAtRevive && time.Since(f.upAt) < 3*time.Second; i++ {
		time.Sleep(statusPoll)
	}
	if r.srv.Hits() == hitsAtRevive {
		t.Errorf("member %s took no request in %v after UP", r.srv.Name, time.Since(f.upAt))
	}
	time.Sleep(500 * time.Millisecond)
	f.results = l.Stop()
	stopped = true
	return f
}

// logFailover logs the figures of a run for the lead's table.
func logFailover(t *testing.T, name string, f failover) {
	t.Helper()
	all, outside := f.failures()
	t.Logf("%s: DOWN %v after the kill, UP %v after the revival", name,
		f.detection().Round(time.Millisecond), f.recovery().Round(time.Millisecond))
	t.Logf("%s: load before the kill: %v", name, summarise(f.results, time.Time{}, f.killAt))
	t.Logf("%s: load in the detection window (%v): %v", name, f.downAt.Add(propagation).Sub(f.killAt).Round(time.Millisecond),
		summarise(f.results, f.killAt, f.downAt.Add(propagation)))
	t.Logf("%s: load after DOWN: %v", name, summarise(f.results, f.downAt.Add(propagation), time.Now()))
	t.Logf("%s: failed requests: %d of %d, %d outside the detection window", name, all, len(f.results), outside)
}

// runFailover is the sdnlb failover scenario on b: member victim is killed
// and revived under load; detection and recovery must stay within the
// monitor's windows, the member's flows must go, and requests may fail only
// inside the detection window.
func runFailover(t *testing.T, b *lbBed, victim int, kill, revive func()) failover {
	t.Helper()
	srv, mem, host := b.servers[victim], b.mems[victim], b.members[victim]
	start := time.Now()
	var totalAtDown uint64
	if b.switchDispatches() {
		// Connections the switch has counted for the member before it
		// fails, so that a count lost at DOWN shows.
		spread(t, b.clients, b.url, 100)
		for i := 0; i < 50 && memberTotal(b.lb, b.pool.ID, mem.ID) == 0; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	}
	f := measureFailover(t, failoverRun{
		clients: b.clients, url: b.url, srv: srv, kill: kill, revive: revive,
		isUp: func() bool { return b.lb.Member(mem.ID).Status == sdnlb.MemberUp },
		whileDown: func(f failover) {
			engineAt := b.lb.Member(mem.ID).Health.Since
			t.Logf("detection: DOWN in the API %v after the kill (engine stamped %v); bound %v + margin %v",
				f.detection().Round(time.Millisecond), engineAt.Sub(f.killAt).Round(time.Millisecond), detectWindow, schedMargin)
			if b.tracks() {
				if b.switchDispatches() {
					totalAtDown = memberTotal(b.lb, b.pool.ID, mem.ID)
					took := b.waitBuckets(t, len(b.mems)-1, 2*time.Second)
					t.Logf("buckets of %s gone %v after DOWN was seen", host.IP, took.Round(time.Millisecond))
				}
				// What still names it resets its clients' connections.
				for _, f := range flowsMentioning(b.sw, host.IP) {
					if !strings.HasSuffix(f, "actions=CONTROLLER:65535") {
						t.Errorf("a flow still sends to the DOWN member %s: %s", host.IP, f)
					}
				}
				return
			}
			took := waitNoFlows(t, b.sw, host.IP, 2*time.Second)
			t.Logf("flows of %s gone %v after DOWN was seen", host.IP, took.Round(time.Millisecond))
			time.Sleep(500 * time.Millisecond)
			if left := flowsMentioning(b.sw, host.IP); len(left) > 0 {
				t.Errorf("new flows to the DOWN member %s:\n%s", host.IP, strings.Join(left, "\n"))
			}
		},
	})
	logFailover(t, "sdnlb", f)
	if b.switchDispatches() {
		// The switch counts the member's connections: once a poll has
		// read it after DOWN and UP, the count has not gone back.
		time.Sleep(2500 * time.Millisecond)
		got := memberTotal(b.lb, b.pool.ID, mem.ID)
		t.Logf("member %s: %d connections counted at DOWN, %d after UP", mem.ID, totalAtDown, got)
		if got < totalAtDown {
			t.Errorf("member %s counts %d connections after DOWN and UP, %d before", mem.ID, got, totalAtDown)
		}
	}
	// The other members stayed UP throughout: one whose probes outlast the
	// timeout goes DOWN without having failed, and the requests it held
	// fail with it, outside the victim's window.
	for i, m := range b.mems {
		if h := b.lb.Member(m.ID).Health; i != victim && h.Since.After(start) {
			t.Errorf("member %s, never killed, went %s %v into the run (its last probe took %.0f ms: %q)",
				m.Address, h.Status, h.Since.Sub(start).Round(time.Millisecond), h.LatencyMS, h.LastError)
		}
	}
	if f.detection() > detectWindow+schedMargin {
		t.Errorf("member DOWN %v after the kill, want within %v (+%v margin)", f.detection(), detectWindow, schedMargin)
	}
	if f.recovery() > riseWindow+schedMargin {
		t.Errorf("member UP %v after its revival, want within %v (+%v margin)", f.recovery(), riseWindow, schedMargin)
	}
	// A request in flight at the kill may fail; one that ended before it
	// may not, and neither may one that started once DOWN was seen.
	for _, r := range f.results {
		if r.err != nil && r.end.Before(f.killAt) {
			t.Errorf("request from %s failed %v before the kill: %v", r.client, f.killAt.Sub(r.end).Round(time.Millisecond), r.err)
		}
	}
	if after := summarise(f.results, f.downAt.Add(propagation), time.Now()); after.failed > 0 {
		t.Errorf("%d requests failed after DOWN was seen, first at +%v after DOWN: %v",
			after.failed, after.firstFail.Sub(f.downAt).Round(time.Millisecond), after.failSample)
	} else if after.byBody[srv.Name] == 0 {
		t.Errorf("after recovery no answer came from %s: %v", srv.Name, after)
	}
	return f
}

// TestHealth_ServerStopped: the member's server dies (its host stays) and
// comes back. On OpenFlow 1.0 a SWITCH pool is dispatched by the
// controller: it fails over as a CONTROLLER pool does.
func TestHealth_ServerStopped(t *testing.T) {
	forEachOpenFlow(t, func(t *testing.T, protocol string) {
		for _, d := range sdnlb.Dispatches {
			t.Run(string(d), func(t *testing.T) {
				b := newMonitoredBedOn(t, protocol, d)
				srv := b.servers[1]
				runFailover(t, b, 1, srv.Stop, func() { srv.Restart(t) })
			})
		}
	})
}

// TestHealth_HostGone: the member's host drops off the switch entirely and
// comes back.
func TestHealth_HostGone(t *testing.T) {
	forEachOpenFlow(t, func(t *testing.T, protocol string) {
		for _, d := range sdnlb.Dispatches {
			t.Run(string(d), func(t *testing.T) {
				b := newMonitoredBedOn(t, protocol, d)
				h := b.members[1]
				runFailover(t, b, 1, func() { h.SetDown(t) }, func() { h.SetUp(t) })
			})
		}
	})
}

// TestHealth_AllMembersDown: with every member DOWN the VIP is DOWN,
// connections are refused at once, the API stays responsive and the
// controller sees one packet-in per attempt, not a storm.
func TestHealth_AllMembersDown(t *testing.T) {
	b := newMonitoredBed(t, sdnlb.DispatchController)
	for _, s := range b.servers {
		s.Stop()
	}
	for _, m := range b.mems {
		b.lb.WaitMemberStatus(m.ID, sdnlb.MemberDown, 5*time.Second)
	}
	// The VIP status is derived by the store from member health.
	deadline := time.Now().Add(5 * time.Second)
	var status sdnlb.VIPStatus
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		if status = b.lb.VIP(b.vip.ID).Status; status == sdnlb.VIPDown {
			break
		}
		time.Sleep(statusPoll)
	}
	if status != sdnlb.VIPDown {
		t.Errorf("VIP status %s with every member DOWN, want %s", status, sdnlb.VIPDown)
	}

	packetIns := `sdnlb_controller_packet_ins_total`
	inBefore := b.lb.Metric(packetIns)
	refusedBefore := b.lb.Metric(`sdnlb_controller_refusals_total{reason="no_member"}`)

	// The API must answer promptly while the load runs.
	apiCtx, apiStop := context.WithCancel(context.Background())
	var apiSlowest time.Duration
	var apiErr error
	apiDone := make(chan struct{})
	go func() {
		defer close(apiDone)
		for i := 0; i < 1000 && apiCtx.Err() == nil; i++ {
			ctx, cancel := context.WithTimeout(apiCtx, 2*time.Second)
			start := time.Now()
			status, _, err := b.lb.Do(ctx, http.MethodGet, "/v1/vips/"+b.vip.ID, nil)
			cancel()
			if apiCtx.Err() != nil {
				return
			}
			if err == nil && status != http.StatusOK {
				err = fmt.Errorf("status %d", status)
			}
			if err != nil && apiErr == nil {
				apiErr = err
			}
			apiSlowest = max(apiSlowest, time.Since(start))
			time.Sleep(50 * time.Millisecond)
		}
	}()

	const loadFor = 2 * time.Second
	l := startLoad(b.clients, b.url, loadEvery, loadFor, clientTimeout)
	time.Sleep(loadFor)
	results := l.Stop()
	apiStop()
	<-apiDone

	var slowest time.Duration
	answered := 0
	for _, r := range results {
		if r.err == nil {
			answered++
		}
		slowest = max(slowest, r.end.Sub(r.start))
	}
	t.Logf("%d requests with every member DOWN: %d answered, slowest took %v", len(results), answered, slowest.Round(time.Microsecond))
	if answered > 0 {
		t.Errorf("%d requests answered with every member DOWN", answered)
	}
	const failFast = 200 * time.Millisecond
	if slowest > failFast {
		t.Errorf("slowest request took %v to fail, want at most %v (refused, not hanging)", slowest, failFast)
	}
	for _, r := range results {
		if r.err != nil && !strings.Contains(r.err.Error(), "connection refused") && !strings.Contains(r.err.Error(), "reset") {
			t.Errorf("request failed with %v, want connection refused or reset", r.err)
			break
		}
	}
	if apiErr != nil || apiSlowest > time.Second {
		t.Errorf("API under load: slowest %v, error %v; want answers within 1s", apiSlowest, apiErr)
	}

	// Settle, then the counters must be still: nothing loops.
	time.Sleep(500 * time.Millisecond)
	inAfter := b.lb.Metric(packetIns)
	refused := b.lb.Metric(`sdnlb_controller_refusals_total{reason="no_member"}`) - refusedBefore
	t.Logf("packet-ins during the load: %.0f for %d requests; refused no_member: %.0f; API slowest %v",
		inAfter-inBefore, len(results), refused, apiSlowest.Round(time.Microsecond))
	if refused < float64(len(results)) {
		t.Errorf("controller refused %.0f connections for %d requests", refused, len(results))
	}
	// One SYN per request, plus a few ARP and L2 packet-ins.
	if perReq := (inAfter - inBefore) / float64(len(results)); perReq > 2 {
		t.Errorf("%.1f packet-ins per refused request, want at most 2", perReq)
	}
	time.Sleep(time.Second)
	if quiet := b.lb.Metric(packetIns) - inAfter; quiet > 20 {
		t.Errorf("%.0f packet-ins in a quiet second after the load: something loops", quiet)
	}

	// One member back: the VIP serves again.
	b.servers[0].Restart(t)
	b.lb.WaitMemberStatus(b.mems[0].ID, sdnlb.MemberUp, 5*time.Second)
	waitServes(t, b.clients[0], b.url, 5*time.Second)
}

// TestHealth_ControllerRemoved: the health probes leave this host on the
// bridge's LOCAL port and cross the bridge to the members, so they need
// its flows like any packet. A controller that is only away (sdnlb down
// or unreachable) leaves the flows, and the members stay UP. `ovs-vsctl
// del-controller` makes Open vSwitch flush them; in secure mode the bridge
// then drops everything, the probes too, and every member goes DOWN, its
// error naming where the probes left from, until a controller is set
// again and sdnlb reinstalls the flows.
func TestHealth_ControllerRemoved(t *testing.T) {
	b := newMonitoredBed(t, sdnlb.DispatchSwitch)

	t.Run("Unreachable", func(t *testing.T) {
		b.sw.Disconnect()
		b.lb.WaitSwitches(0, 20*time.Second)
		if len(b.sw.DumpFlows()) == 0 {
			t.Fatal("the bridge lost its flows with its controller only unreachable")
		}
		waitProbedSince(t, b, time.Now().Add(detectWindow))
		for _, m := range b.mems {
			if got := b.lb.Member(m.ID); got.Status != sdnlb.MemberUp {
				t.Errorf("member %s is %s with the controller away, want UP: %s", m.ID, got.Status, got.Health.LastError)
			}
		}
		b.lb.Connect(b.sw)
	})

	t.Run("Removed", func(t *testing.T) {
		b.sw.DelController()
		b.lb.WaitSwitches(0, 20*time.Second)
		if flows := b.sw.DumpFlows(); len(flows) > 0 {
			t.Fatalf("del-controller left %d flows, first: %s", len(flows), flows[0])
		}
		from := "probed from " + b.sw.LocalIP + " on " + b.sw.Name
		for _, m := range b.mems {
			b.lb.WaitMemberStatus(m.ID, sdnlb.MemberDown, 5*time.Second)
			if got := b.lb.Member(m.ID).Health.LastError; !strings.Contains(got, from) {
				t.Errorf("member %s: check error %q, want it to say %q", m.ID, got, from)
			}
		}
		b.lb.Connect(b.sw)
		for _, m := range b.mems {
			b.lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
		}
	})
}

// waitProbedSince waits until every member of b was probed after at.
func waitProbedSince(t *testing.T, b *lbBed, at time.Time) {
	t.Helper()
	deadline := at.Add(10 * time.Second)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		probed := 0
		for _, m := range b.mems {
			if c := b.lb.Member(m.ID).Health.LastCheck; c != nil && c.After(at) {
				probed++
			}
		}
		if probed == len(b.mems) {
			return
		}
		time.Sleep(statusPoll)
	}
	t.Fatalf("members not all probed since %v", at)
}
