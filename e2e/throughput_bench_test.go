//go:build e2e && e2e_bench

package e2e

// The throughput comparison is a measurement, not a check, so it stays out
// of scripts/test.sh. scripts/bench-e2e.sh installs wrk and HAProxy and
// runs it as root on a quiet machine.

import (
	"context"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/internal/testbed"
)

const (
	benchRounds      = 3               // SDNLB_BENCH_ROUNDS sets another number
	benchDuration    = 5 * time.Second // of a wrk run; SDNLB_BENCH_DURATION sets another
	benchConnections = 20
	benchSingles     = 21 // sequential requests on an idle bed, for the single-request latency
	ctlFlowIdle      = 5 * time.Second
)

// wrkResult is what one wrk run reported.
type wrkResult struct {
	reqPerSec float64
	requests  int // completed, failed ones included
	p50, p99  time.Duration
	failures  int // socket errors and non-2xx answers
}

var (
	wrkRate     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkRequests = regexp.MustCompile(`(\d+) requests in `)
	wrkLatency  = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	wrkSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// runWrk loads url from h for d with new connections per request, as the
// balancers see web clients that do not keep connections alive.
func runWrk(tb testing.TB, h *Host, url string, d time.Duration) wrkResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	out, err := h.Exec(ctx, "wrk", "-t1", "-c"+strconv.Itoa(benchConnections), "-d"+d.String(),
		"--latency", "-H", "Connection: close", url)
	if err != nil {
		tb.Fatalf("wrk %s: %v\n%s", url, err, out)
	}
	text := string(out)
	var r wrkResult
	if m := wrkRate.FindStringSubmatch(text); m != nil {
		r.reqPerSec, _ = strconv.ParseFloat(m[1], 64)
	} else {
		tb.Fatalf("wrk printed no rate:\n%s", text)
	}
	if m := wrkRequests.FindStringSubmatch(text); m != nil {
		r.requests, _ = strconv.Atoi(m[1])
	}
	for _, m := range wrkLatency.FindAllStringSubmatch(text, -1) {
		d, _ := time.ParseDuration(m[2] + m[3])
		if m[1] == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	if m := wrkSocket.FindStringSubmatch(text); m != nil {
		for _, n := range m[1:] {
			v, _ := strconv.Atoi(n)
			r.failures += v
		}
	}
	if m := wrkNon2xx.FindStringSubmatch(text); m != nil {
		v, _ := strconv.Atoi(m[1])
		r.failures += v
	}
	if r.failures > 0 {
		tb.Logf("wrk %s: %s", url, strings.Join(append(wrkSocket.FindAllString(text, -1), wrkNon2xx.FindAllString(text, -1)...), "; "))
	}
	return r
}

// envDuration is the duration the environment variable name sets, or def.
func envDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return d
}

// envInt is the positive number the environment variable name sets, or
// def.
func envInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		tb.Fatalf("%s: %q is not a positive number", name, s)
	}
	return n
}

// benchOpenFlow is the OpenFlow version SDNLB_BENCH_OPENFLOW asks the
// bed's switch to speak: 13 (the default) or 10, as Switch.Protocol
// names it.
func benchOpenFlow(tb testing.TB) string {
	tb.Helper()
	switch v := os.Getenv("SDNLB_BENCH_OPENFLOW"); v {
	case "", "13", "1.3":
		return openFlow13
	case "10", "1.0":
		return openFlow10
	default:
		tb.Fatalf("SDNLB_BENCH_OPENFLOW: %q is neither 13 nor 10", v)
		return ""
	}
}

// runCost is what a run cost the controller and the switch: the
// connections the controller set up, the packet-ins to VIPs it took, and
// the CPU time of the sdnlb process and of the bed's ovs-vswitchd (which
// holds the userspace datapath: all the switch's work).
type runCost struct {
	setups, packetIns        float64
	controllerCPU, switchCPU time.Duration
}

// measureCost runs run and returns what it cost. The CPU times are read
// nearest the run, inside the reads of the controller's counters, whose
// /metrics requests cost the controller CPU of their own.
func measureCost(tb testing.TB, sw *Switch, lb *sdnlbProc, run func()) runCost {
	tb.Helper()
	setups, packetIns := lb.Metric("sdnlb_controller_setups_total"), lb.Metric(`sdnlb_controller_packet_ins_total{kind="lb"}`)
	ctl, swt := processCPU(tb, lb.PID()), processCPU(tb, sw.VswitchdPID())
	run()
	c := runCost{controllerCPU: processCPU(tb, lb.PID()) - ctl, switchCPU: processCPU(tb, sw.VswitchdPID()) - swt}
	c.setups = lb.Metric("sdnlb_controller_setups_total") - setups
	c.packetIns = lb.Metric(`sdnlb_controller_packet_ins_total{kind="lb"}`) - packetIns
	return c
}

func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	d, err := testbed.ProcessCPU(pid)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// packetInsPerConnection is how many packet-ins to a VIP each of n
// connections took, or false without setups (a SWITCH path). A request is
// a connection: the setups leave out a connection whose client reused the
// ports of one set up a moment before, which follows it to its member.
func (c runCost) packetInsPerConnection(n int) (float64, bool) {
	return c.packetIns / float64(n), c.setups > 0 && n > 0
}

// controllerPerConnections is the controller's CPU time per 1,000 of n
// connections, or false without setups.
func (c runCost) controllerPerConnections(n int) (time.Duration, bool) {
	return perThousand(c.controllerCPU, float64(n)), c.setups > 0 && n > 0
}

// switchPerRequests is the switch's CPU time per 1,000 of n requests.
func (c runCost) switchPerRequests(n int) (time.Duration, bool) {
	return perThousand(c.switchCPU, float64(n)), n > 0
}

func perThousand(d time.Duration, n float64) time.Duration {
	if n == 0 {
		return 0
	}
	return time.Duration(float64(d) * 1000 / n)
}

// String is the per-run line of the cost.
func (c runCost) String() string {
	return fmt.Sprintf("%v setups by the controller, %v VIP packet-ins, CPU: controller %v, switch %v",
		c.setups, c.packetIns, c.controllerCPU, c.switchCPU)
}

// emptyCaches empties the switch's connection tracker and its datapath
// flow cache between runs. The cache goes through the revalidators
// (revalidator/purge), which forget their keys with it: flows deleted
// from the datapath behind their back (dpctl/del-flows) leave keys they
// translate again at every sweep until those idle out, which slowed the
// runs after one with flows per connection.
func emptyCaches(sw *Switch) {
	sw.Appctl("dpctl/flush-conntrack")
	sw.Appctl("revalidator/purge")
}

// costColumns are the table columns of what the runs cost, the median of
// each: VIP packet-ins per connection, the controller's CPU per 1,000
// connections, the switch's per 1,000 requests (each request is a
// connection); "—" where no run has a figure.
func costColumns(runs []wrkResult, costs []runCost) (packetIns, controller, switchCPU string) {
	median := func(value func(i int) (float64, bool), format string, unit float64) string {
		var xs []float64
		for i := range runs {
			if x, ok := value(i); ok {
				xs = append(xs, x/unit)
			}
		}
		if len(xs) == 0 {
			return "—"
		}
		slices.Sort(xs)
		return fmt.Sprintf(format, xs[len(xs)/2])
	}
	ms := float64(time.Millisecond)
	return median(func(i int) (float64, bool) { return costs[i].packetInsPerConnection(runs[i].requests) }, "%.2f", 1),
		median(func(i int) (float64, bool) {
			d, ok := costs[i].controllerPerConnections(runs[i].requests)
			return float64(d), ok
		}, "%.0f ms", ms),
		median(func(i int) (float64, bool) {
			d, ok := costs[i].switchPerRequests(runs[i].requests)
			return float64(d), ok
		}, "%.0f ms", ms)
}

// singleLatency is the median time of one request on a new connection
// from h to url on an otherwise idle bed.
func singleLatency(tb testing.TB, h *Host, url string) time.Duration {
	tb.Helper()
	var took []time.Duration
	for range benchSingles {
		start := time.Now()
		if _, err := get(h, url, 5*time.Second); err != nil {
			tb.Fatalf("single request to %s: %v", url, err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	return took[len(took)/2]
}

// TestThroughputComparison loads, side by side on one bed and in rounds,
// a member directly, the sdnlb paths (SWITCH NAT, SWITCH DSR, CONTROLLER
// with the connections in the switch's tracker, CONTROLLER with flows per
// connection) in both families and HAProxy in TCP mode in front of the
// same members, and reports what each path cost the controller and the
// switch: packet-ins per connection, CPU per 1,000 connections (each
// request is one). SDNLB_BENCH_PATHS, a regular expression, keeps the paths
// whose family and name it matches ("CONTROLLER": both families' alone);
// SDNLB_BENCH_ROUNDS and SDNLB_BENCH_DURATION set the rounds (3) and the
// length of each run (5 s). SDNLB_BENCH_OPENFLOW=10 has the switch speak
// OpenFlow 1.0, which has no select groups and matches no IPv6: the bed
// then loads IPv4 alone, and no SWITCH path.
func TestThroughputComparison(t *testing.T) {
	only, err := regexp.Compile(os.Getenv("SDNLB_BENCH_PATHS"))
	if err != nil {
		t.Fatalf("SDNLB_BENCH_PATHS: %v", err)
	}
	rounds, duration := envInt(t, "SDNLB_BENCH_ROUNDS", benchRounds), envDuration(t, "SDNLB_BENCH_DURATION", benchDuration)
	protocol := benchOpenFlow(t)
	const (
		natPort   = 8080 // SWITCH NAT members, and HAProxy's
		ctlPort   = 8081 // CONTROLLER members
		flowsPort = 8084 // CONTROLLER members of the pool with flows per connection
		dsrPort   = 8082 // SWITCH DSR: the VIP's port
		// direct: in no pool, so no flow of sdnlb's touches the traffic
		// and no connection through a VIP shares its ports in conntrack.
		directPort = 8083
		nMembers   = 3
	)
	sw := NewSwitch(t)
	sw.Protocol = protocol
	client := sw.AddHost(t, "c1", sw.Addr(1))
	lbHost := sw.AddHost(t, "lb", sw.Addr(200))
	var members []*Host
	for i := range nMembers {
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		for _, port := range []int{natPort, ctlPort, dsrPort, directPort, flowsPort} {
			h.ServeHTTP(t, port, "srv"+strconv.Itoa(i+1))
		}
		members = append(members, h)
	}

	// CONTROLLER connections with flows of their own leave two flows each
	// behind them, which the switch revalidates with every other flow: they
	// expire fast here, and each round waits for them before the next path
	// runs.
	lb := startSDNLB(t, "--flow-idle-timeout", ctlFlowIdle.String())
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	url := func(host string, port int) string {
		return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/"
	}
	type mode struct{ family, name, url string }
	var modes []mode
	switched := protocol == openFlow13 // 1.0: no select groups, the controller would dispatch SWITCH pools
	for fi, f := range families {
		if protocol == openFlow10 && f.name != "IPv4" {
			continue
		}
		pool := func(name string, n byte, dispatch sdnlb.Dispatch, fwd sdnlb.Forwarding, vipPort, port int, vipExtra map[string]any) string {
			vip := lb.MustCreateVIP(name+f.name, f.addr(sw, 100+n+byte(10*fi)), sdnlb.ProtocolTCP, vipPort, vipExtra)
			var p sdnlb.Pool
			lb.MustAPI("POST", "/v1/pools", map[string]any{"name": vip.Name, "vip_id": vip.ID, "lb_method": sdnlb.RoundRobin,
				"protocol": sdnlb.ProtocolTCP, "dispatch": dispatch, "forwarding": fwd}, 201, &p)
			for _, h := range members {
				if fwd == sdnlb.ForwardingDSR {
					h.HoldVIP(t, vip.Address)
				}
				lb.MustCreateMember(&p, f.hostIP(h), port)
			}
			lb.WaitPoolMembers(p.ID, nMembers, 10*time.Second)
			return url(vip.Address, vipPort)
		}
		modes = append(modes, mode{f.name, "direct (client → one member)", url(f.hostIP(members[0]), directPort)})
		if switched {
			modes = append(modes,
				mode{f.name, "sdnlb SWITCH, NAT", pool("nat", 0, sdnlb.DispatchSwitch, sdnlb.ForwardingNAT, 80, natPort, nil)},
				mode{f.name, "sdnlb SWITCH, DSR", pool("dsr", 1, sdnlb.DispatchSwitch, sdnlb.ForwardingDSR, dsrPort, 0, nil)})
		}
		modes = append(modes,
			mode{f.name, "sdnlb CONTROLLER, NAT", pool("ctl", 2, sdnlb.DispatchController, sdnlb.ForwardingNAT, 80, ctlPort, nil)},
			// A connection limit, which no run reaches, gives each
			// connection flows of its own.
			mode{f.name, "sdnlb CONTROLLER, NAT, flows per connection", pool("flows", 3, sdnlb.DispatchController, sdnlb.ForwardingNAT, 80, flowsPort,
				map[string]any{"connection_limit": 1_000_000})})
		backends := map[string]string{}
		for i, h := range members {
			backends["srv"+strconv.Itoa(i+1)] = net.JoinHostPort(f.hostIP(h), strconv.Itoa(natPort))
		}
		startHAProxy(t, lbHost, f.hostIP(lbHost), "tcp", backends)
		modes = append(modes, mode{f.name, "HAProxy, TCP mode", url(f.hostIP(lbHost), 80)})
	}
	if switched {
		// The SWITCH groups hold every member once the members answered.
		(&lbBed{sw: sw}).waitBuckets(t, 2*len(families)*nMembers, 10*time.Second)
	}

	modes = slices.DeleteFunc(modes, func(m mode) bool { return !only.MatchString(m.family + " " + m.name) })
	runs := make([][]wrkResult, len(modes))
	costs := make([][]runCost, len(modes))
	singles := make([][]time.Duration, len(modes))
	for round := range rounds {
		for i, m := range modes {
			singles[i] = append(singles[i], singleLatency(t, client, m.url))
			var r wrkResult
			c := measureCost(t, sw, lb, func() { r = runWrk(t, client, m.url, duration) })
			runs[i], costs[i] = append(runs[i], r), append(costs[i], c)
			t.Logf("round %d, %s %s: %.0f req/s (%d requests), p50 %v, p99 %v, %d failures, %v",
				round+1, m.family, m.name, r.reqPerSec, r.requests, r.p50, r.p99, r.failures, c)
			// Every run starts with an empty connection tracker, no
			// connection flows left by the one before and an empty
			// datapath flow cache.
			time.Sleep(time.Second)
			if strings.Contains(m.name, "CONTROLLER") {
				time.Sleep(ctlFlowIdle + 2*time.Second)
			}
			emptyCaches(sw)
		}
	}

	for _, series := range []string{"sdnlb_controller_setups_total", `sdnlb_controller_refusals_total{reason="no_flow"}`,
		`sdnlb_controller_refusals_total{reason="no_member"}`, `sdnlb_controller_packet_ins_total{kind="lb"}`,
		`sdnlb_controller_packet_ins_total{kind="reply"}`, `sdnlb_controller_packet_ins_total{kind="l2"}`} {
		t.Logf("%s %v", series, lb.Metric(series))
	}
	// Each path against direct traffic of its family, and an IPv6 path
	// against the same path over IPv4.
	direct, ipv4 := map[string]float64{}, map[string]float64{}
	for i, m := range modes {
		if strings.HasPrefix(m.name, "direct") {
			direct[m.family] = medianRate(runs[i])
		}
		if m.family == "IPv4" {
			ipv4[m.name] = medianRate(runs[i])
		}
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| family | path | req/s (median; runs) | vs direct | vs IPv4 | p50 | p99 | one request, idle | failed "+
		"| packet-ins / connection | controller CPU / 1,000 connections | switch CPU / 1,000 requests |\n"+
		"|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, m := range modes {
		rates := make([]string, len(runs[i]))
		failed := 0
		for j, r := range runs[i] {
			rates[j] = fmt.Sprintf("%.0f", r.reqPerSec)
			failed += r.failures
		}
		med := medianRun(runs[i])
		slices.Sort(singles[i])
		packetIns, controller, switchCPU := costColumns(runs[i], costs[i])
		fmt.Fprintf(&table, "| %s | %s | **%.0f** (%s) | %s | %s | %v | %v | %v | %d | %s | %s | %s |\n", m.family, m.name, med.reqPerSec,
			strings.Join(rates, ", "), ratio(med.reqPerSec, direct[m.family]), ratio(med.reqPerSec, ipv4[m.name]), med.p50, med.p99,
			singles[i][len(singles[i])/2].Round(10*time.Microsecond), failed, packetIns, controller, switchCPU)
	}
	t.Logf("side by side on %s, rounds: %d of %v, wrk -c%d with a new connection per request; "+
		"the costs are the medians of the runs, CPU time of the sdnlb process and of ovs-vswitchd:\n%s",
		protocol, rounds, duration, benchConnections, table.String())
}

// ratio is a/b to two places, or "-" without a b (a path left out).
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// medianRun is the run with the median rate.
func medianRun(runs []wrkResult) wrkResult {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b wrkResult) int {
		switch {
		case a.reqPerSec < b.reqPerSec:
			return -1
		case a.reqPerSec > b.reqPerSec:
			return 1
		}
		return 0
	})
	return sorted[len(sorted)/2]
}

func medianRate(runs []wrkResult) float64 { return medianRun(runs).reqPerSec }

// TestThroughputAfterPause loads each SWITCH path from one client, pauses
// (SDNLB_BENCH_PAUSE, default 15 s: longer than a few seconds, shorter
// than the hosts' 60 s TIME_WAIT) and loads it again, as a client that
// comes back does; the connection tracker is not flushed in between. It
// reports both rates, the second's ratio to the first and the tracker's
// sequence-check failures (see "Port reuse through the userspace
// connection tracker" in docs/DATAPATH.md).
func TestThroughputAfterPause(t *testing.T) {
	pause := envDuration(t, "SDNLB_BENCH_PAUSE", 15*time.Second)
	b := newForwardingBed(t, 3, 3)

	for _, path := range b.paths {
		url := "http://" + path.addr + "/"
		before := runWrk(t, path.client, url, benchDuration)
		time.Sleep(pause)
		failures := seqCheckFailures(b.sw)
		after := runWrk(t, path.client, url, benchDuration)
		t.Logf("%s, one client, %v pause: %.0f → %.0f req/s (%.2f×), %d → %d failed requests, %d sequence-check failures in the tracker",
			path.name, pause, before.reqPerSec, after.reqPerSec, after.reqPerSec/before.reqPerSec, before.failures, after.failures,
			seqCheckFailures(b.sw)-failures)
	}
}
