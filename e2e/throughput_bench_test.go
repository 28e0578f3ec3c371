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
)

const (
	benchRounds      = 3
	benchDuration    = 5 * time.Second
	benchConnections = 20
	benchSingles     = 21 // sequential requests on an idle bed, for the single-request latency
	ctlFlowIdle      = 5 * time.Second
)

// wrkResult is what one wrk run reported.
type wrkResult struct {
	reqPerSec float64
	p50, p99  time.Duration
	failures  int // socket errors and non-2xx answers
}

var (
	wrkRate    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkLatency = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	wrkSocket  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx  = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// runWrk loads url from h with new connections per request, as the
// balancers see web clients that do not keep connections alive.
func runWrk(tb testing.TB, h *Host, url string) wrkResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), benchDuration+30*time.Second)
	defer cancel()
	out, err := h.Exec(ctx, "wrk", "-t1", "-c"+strconv.Itoa(benchConnections), "-d"+benchDuration.String(),
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
// a member directly, the three sdnlb paths (SWITCH NAT, SWITCH DSR,
// CONTROLLER) in both families and HAProxy in TCP mode in front of the
// same members. SDNLB_BENCH_PATHS, a regular expression, keeps the paths
// whose family and name it matches ("CONTROLLER": both families' alone).
func TestThroughputComparison(t *testing.T) {
	only, err := regexp.Compile(os.Getenv("SDNLB_BENCH_PATHS"))
	if err != nil {
		t.Fatalf("SDNLB_BENCH_PATHS: %v", err)
	}
	const (
		natPort = 8080 // SWITCH NAT members, and HAProxy's
		ctlPort = 8081 // CONTROLLER members
		dsrPort = 8082 // SWITCH DSR: the VIP's port
		// direct: in no pool, so no flow of sdnlb's touches the traffic
		// and no connection through a VIP shares its ports in conntrack.
		directPort = 8083
		nMembers   = 3
	)
	sw := NewSwitch(t)
	client := sw.AddHost(t, "c1", sw.Addr(1))
	lbHost := sw.AddHost(t, "lb", sw.Addr(200))
	var members []*Host
	backends := map[string]string{}
	for i := range nMembers {
		name := "srv" + strconv.Itoa(i+1)
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		for _, port := range []int{natPort, ctlPort, dsrPort, directPort} {
			h.ServeHTTP(t, port, name)
		}
		members = append(members, h)
		backends[name] = net.JoinHostPort(h.IP, strconv.Itoa(natPort))
	}
	startHAProxy(t, lbHost, "tcp", backends)

	// CONTROLLER connections leave two flows each behind them, which the
	// switch revalidates with every other flow: they expire fast here, and
	// each round waits for them before the next path runs.
	lb := startSDNLB(t, "--flow-idle-timeout", ctlFlowIdle.String())
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	url := func(host string, port int) string {
		return "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/"
	}
	type mode struct{ family, name, url string }
	var modes []mode
	for fi, f := range families {
		pool := func(name string, n byte, dispatch sdnlb.Dispatch, fwd sdnlb.Forwarding, vipPort, port int) string {
			vip := lb.MustCreateVIP(name+f.name, f.addr(sw, 100+n+byte(10*fi)), sdnlb.ProtocolTCP, vipPort, nil)
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
		modes = append(modes,
			mode{f.name, "direct (client → one member)", url(f.hostIP(members[0]), directPort)},
			mode{f.name, "sdnlb SWITCH, NAT", pool("nat", 0, sdnlb.DispatchSwitch, sdnlb.ForwardingNAT, 80, natPort)},
			mode{f.name, "sdnlb SWITCH, DSR", pool("dsr", 1, sdnlb.DispatchSwitch, sdnlb.ForwardingDSR, dsrPort, 0)},
			mode{f.name, "sdnlb CONTROLLER, NAT", pool("ctl", 2, sdnlb.DispatchController, sdnlb.ForwardingNAT, 80, ctlPort)})
		if f.name == "IPv4" {
			modes = append(modes, mode{f.name, "HAProxy, TCP mode", url(lbHost.IP, 80)})
		}
	}
	// The SWITCH groups hold every member once the members answered.
	(&lbBed{sw: sw}).waitBuckets(t, 2*len(families)*nMembers, 10*time.Second)

	modes = slices.DeleteFunc(modes, func(m mode) bool { return !only.MatchString(m.family + " " + m.name) })
	runs := make([][]wrkResult, len(modes))
	singles := make([][]time.Duration, len(modes))
	for round := range benchRounds {
		for i, m := range modes {
			singles[i] = append(singles[i], singleLatency(t, client, m.url))
			setups, lbIns := lb.Metric("sdnlb_controller_setups_total"), lb.Metric(`sdnlb_controller_packet_ins_total{kind="lb"}`)
			r := runWrk(t, client, m.url)
			runs[i] = append(runs[i], r)
			t.Logf("round %d, %s %s: %.0f req/s, p50 %v, p99 %v, %d failures, %v setups by the controller, %v VIP packet-ins",
				round+1, m.family, m.name, r.reqPerSec, r.p50, r.p99, r.failures,
				lb.Metric("sdnlb_controller_setups_total")-setups, lb.Metric(`sdnlb_controller_packet_ins_total{kind="lb"}`)-lbIns)
			// Every run starts with an empty connection tracker and no
			// connection flows left by the one before.
			time.Sleep(time.Second)
			if strings.Contains(m.name, "CONTROLLER") {
				time.Sleep(ctlFlowIdle + 2*time.Second)
			}
			sw.Appctl("dpctl/flush-conntrack")
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
	fmt.Fprintf(&table, "| family | path | req/s (median; runs) | vs direct | vs IPv4 | p50 | p99 | one request, idle | failed |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for i, m := range modes {
		rates := make([]string, len(runs[i]))
		failed := 0
		for j, r := range runs[i] {
			rates[j] = fmt.Sprintf("%.0f", r.reqPerSec)
			failed += r.failures
		}
		med := medianRun(runs[i])
		slices.Sort(singles[i])
		fmt.Fprintf(&table, "| %s | %s | **%.0f** (%s) | %s | %s | %v | %v | %v | %d |\n", m.family, m.name, med.reqPerSec,
			strings.Join(rates, ", "), ratio(med.reqPerSec, direct[m.family]), ratio(med.reqPerSec, ipv4[m.name]), med.p50, med.p99,
			singles[i][len(singles[i])/2].Round(10*time.Microsecond), failed)
	}
	t.Logf("side by side, %d rounds of %v, wrk -c%d with a new connection per request:\n%s",
		benchRounds, benchDuration, benchConnections, table.String())
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
		before := runWrk(t, path.client, url)
		time.Sleep(pause)
		failures := seqCheckFailures(b.sw)
		after := runWrk(t, path.client, url)
		t.Logf("%s, one client, %v pause: %.0f → %.0f req/s (%.2f×), %d → %d failed requests, %d sequence-check failures in the tracker",
			path.name, pause, before.reqPerSec, after.reqPerSec, after.reqPerSec/before.reqPerSec, before.failures, after.failures,
			seqCheckFailures(b.sw)-failures)
	}
}
