//go:build e2e && e2e_bench

package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/internal/testbed"
)

const (
	// scaleFlowIdle is the controller's idle timeout of connections:
	// the held ones outlive the bench, idle as they are.
	scaleFlowIdle = time.Hour
	// heldPortsPerClient are the client ports the held connections of
	// one client address take, from 1024 up.
	heldPortsPerClient = 60_000
	// heldFirstClient is the host number of the first client address of
	// the held connections: clients that exist only in the flows.
	heldFirstClient = 150
	// flowsPerAdd bounds one ovs-ofctl add-flows.
	flowsPerAdd = 20_000
)

// TestLiveFlowsScale measures what the switch's table of live connection
// flows costs: the switch holds an empty table, then in turn each number
// of connection flows SDNLB_BENCH_FLOWS lists (default 10000, 100000,
// 200000; two per connection), of idle connections of a CONTROLLER pool
// whose connections have flows of their own (its VIP has a connection
// limit), which the controller counts as its own. At each it reports
//
//   - how long a controller started on the switch takes to adopt them;
//   - the stats poll's cost over SDNLB_BENCH_POLL_WINDOW (10 s, five polls
//     at the default --stats-interval): its time from request to last
//     reply part (sdnlb_controller_stats_poll_seconds), and the CPU of
//     the controller and of the switch over the window per poll; beside
//     it, the switch's CPU a second holding the flows with no controller
//     connected (what of the switch's share is not the poll's);
//   - the controller's resident memory per connection (against the empty
//     table; its Go heap in use too in the log) and the switch's resident
//     memory;
//   - the rate of new connections (wrk as in TestThroughputComparison:
//     SDNLB_BENCH_ROUNDS runs of SDNLB_BENCH_DURATION) of that pool and of
//     a CONTROLLER pool whose connections the switch's tracker holds,
//     against the empty table, and what it cost.
//
// The flows are copies of those the controller installed for real
// connections, one to each member, with other client addresses and
// ports: the controller is stopped, the copies
// are added, and a controller started on the same database adopts them
// as it adopts any switch's connections on a restart (Adopt), so that
// it counts them and reads them at every poll as it does the
// connections it set up itself. The switch speaks OpenFlow 1.3: the
// copies are added in bundles, which 1.0 does not have.
func TestLiveFlowsScale(t *testing.T) {
	sizes := envFlowCounts(t, "SDNLB_BENCH_FLOWS", []int{10_000, 100_000, 200_000})
	rounds, duration := envInt(t, "SDNLB_BENCH_ROUNDS", benchRounds), envDuration(t, "SDNLB_BENCH_DURATION", benchDuration)
	window := envDuration(t, "SDNLB_BENCH_POLL_WINDOW", 10*time.Second)
	args := []string{"--flow-idle-timeout", scaleFlowIdle.String()}
	b := newBedOn(t, openFlow13, 1, 3, sdnlb.RoundRobin, sdnlb.DispatchController, nil, args...)
	limited := withFlowsOfTheirOwn(t, b)
	restart := func() {
		b.lb = startSDNLB(t, append([]string{"--db", b.lb.DB}, args...)...)
		b.lb.Connect(b.sw)
		limited.lb = b.lb
	}
	templates := connectionTemplates(t, limited)
	for _, tpl := range templates {
		t.Logf("a connection's flows, copied for each held connection of its member:\n%s\n%s", tpl.forward, tpl.reply)
	}

	var rows []scaleRow
	held := 0 // connections
	for _, flows := range append([]int{0}, sizes...) {
		b.lb.Kill()
		addHeldConnections(t, b.sw, templates, held, flows/2)
		held = flows / 2
		r := scaleRow{flows: flows}
		swt := processCPU(t, b.sw.VswitchdPID())
		time.Sleep(window)
		r.switchAlone = perSecond(processCPU(t, b.sw.VswitchdPID())-swt, window)

		start := time.Now()
		restart()
		waitAdopted(t, b.lb, held, 2*time.Minute)
		r.adoption = time.Since(start)
		waitPolls(t, b.lb, 1, time.Minute) // the ledger holds a reading of every flow
		r.adoptionMods = b.lb.Metric("sdnlb_controller_flow_mods_total")
		for _, l := range slices.Concat(b.lb.LogLines(`"msg":"switch `), b.lb.LogLines(`"level":"WARN"`)) {
			t.Logf("%d connection flows, adoption: %s", flows, l)
		}
		r.measurePolls(t, b.sw, b.lb, window)
		r.measureMemory(t, b.sw, b.lb)

		for range rounds {
			for i, url := range []string{b.url, limited.url} {
				var w wrkResult
				c := measureCost(t, b.sw, b.lb, func() { w = runWrk(t, b.clients[0], url, duration) })
				r.paths[i].runs, r.paths[i].costs = append(r.paths[i].runs, w), append(r.paths[i].costs, c)
				t.Logf("%d connection flows, %s: %.0f req/s (%d requests), p50 %v, p99 %v, %d failures, %v",
					flows, scalePaths[i], w.reqPerSec, w.requests, w.p50, w.p99, w.failures, c)
				// Each run, and each window that follows, starts with no
				// connection flows of the run before, an empty connection
				// tracker and an empty datapath flow cache.
				time.Sleep(time.Duration(model.FinIdle(uint16(scaleFlowIdle/time.Second)))*time.Second + 2*time.Second)
				emptyCaches(b.sw)
			}
		}
		t.Logf("%d connection flows: adopted in %v, %s", flows, r.adoption.Round(time.Millisecond), r.pollLine())
		rows = append(rows, r)
	}
	t.Logf("live connection flows on %s, stats poll every %v (the default), measured over %v:\n%s",
		b.sw.Protocol, 2*time.Second, window, scaleTables(rows, rounds, duration))
}

// envFlowCounts is the comma-separated list of connection flow counts
// the environment variable name sets, each even (two per connection),
// or def.
func envFlowCounts(tb testing.TB, name string, def []int) []int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var counts []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n%2 != 0 {
			tb.Fatalf("%s: %q is not an even positive number", name, f)
		}
		counts = append(counts, n)
	}
	if !slices.IsSorted(counts) {
		tb.Fatalf("%s: %v is not in ascending order", name, counts)
	}
	return counts
}

// connTemplate is one connection's flows as ovs-ofctl add-flows takes
// them, with {client}, {port} and {shard} in place of the client's
// address and port and of the cookie's category, which carries the
// connection's shard.
type connTemplate struct{ forward, reply string }

// connection is the template's flows for a connection from client and
// port, a line each.
func (t *connTemplate) connection(client string, port int) string {
	shard := model.ConnShard(netip.MustParseAddr(client), uint16(port))
	category := func(cat model.Category) string {
		return fmt.Sprintf("%02x", byte(model.ConnCookie(cat, shard, 0, 0)>>model.CookieCatShift))
	}
	r := strings.NewReplacer("{client}", client, "{port}", strconv.Itoa(port))
	return strings.Replace(r.Replace(t.forward), "{shard}", category(model.CatConn), 1) + "\n" +
		strings.Replace(r.Replace(t.reply), "{shard}", category(model.CatConnReply), 1) + "\n"
}

// templateCookie finds the category byte of a dumped flow's cookie.
var templateCookie = regexp.MustCompile(`cookie=0x5d[0-9a-f]{2}`)

// connectionTemplates opens a connection through the VIP to each member
// and returns the flows the controller installed for each, with the
// counters and ages taken out, and closes the connections.
func connectionTemplates(tb testing.TB, b *lbBed) []connTemplate {
	tb.Helper()
	counters := regexp.MustCompile(`(duration|n_packets|n_bytes|idle_age|hard_age)=[^ ,]+,? ?`)
	client := b.clients[0].IP
	var templates []connTemplate
	seen := map[string]bool{}
	for i := 0; i < 10 && len(seen) < len(b.members); i++ {
		h := openHeld(tb, b, b.clients[0])
		if seen[h.member] {
			continue
		}
		seen[h.member] = true
		port := strconv.Itoa(h.conn.LocalAddr().(*net.TCPAddr).Port)
		// template is the one flow that matches the client's address and
		// port in the fields addrField and portField.
		template := func(addrField, portField string) string {
			filter := "tcp," + addrField + "=" + client + "," + portField + "=" + port
			flows := b.sw.DumpFlows(filter)
			if len(flows) != 1 {
				tb.Fatalf("flows of the connection to %s that match %s: %d, want 1:\n%s", h.member, filter, len(flows), strings.Join(flows, "\n"))
			}
			match, actions, _ := strings.Cut(flows[0], " actions=")
			match = counters.ReplaceAllString(match, "")
			match = withField(withField(match, addrField, client, "{client}"), portField, port, "{port}")
			match = templateCookie.ReplaceAllString(match, "cookie=0x5d{shard}")
			if !strings.Contains(match, "{client}") || !strings.Contains(match, "{port}") || !strings.Contains(match, "{shard}") {
				tb.Fatalf("the connection's flow does not match %s in its own words: %s", filter, flows[0])
			}
			return match + " actions=" + actions
		}
		templates = append(templates, connTemplate{forward: template("nw_src", "tp_src"), reply: template("nw_dst", "tp_dst")})
		h.conn.Close()
	}
	if len(templates) != len(b.members) {
		tb.Fatalf("connections reached %d of the %d members", len(templates), len(b.members))
	}
	return templates
}

// heldClient is the client address and port of held connection k.
func heldClient(sw *Switch, k int) (string, int) {
	return sw.Addr(byte(heldFirstClient + k/heldPortsPerClient)), 1024 + k%heldPortsPerClient
}

// addHeldConnections adds the flows of held connections from up to
// below to, each a copy of the template of its member, in turn.
func addHeldConnections(tb testing.TB, sw *Switch, templates []connTemplate, from, to int) {
	tb.Helper()
	if last := heldFirstClient + (to-1)/heldPortsPerClient; last > 250 {
		tb.Fatalf("%d held connections need client addresses up to .%d of the bed's /24", to, last)
	}
	var lines strings.Builder
	flush := func() {
		file := filepath.Join(tb.TempDir(), "flows")
		if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
			tb.Fatal(err)
		}
		// One bundle: flow-mods sent one by one slow down past 100,000
		// flows in Open vSwitch 3.1 (20,000 took 90 s, against 0.2 s in
		// a bundle).
		sw.Ofctl("add-flows", "--bundle", file)
		lines.Reset()
	}
	for k := from; k < to; k++ {
		lines.WriteString(templates[k%len(templates)].connection(heldClient(sw, k)))
		if (k-from+1)%(flowsPerAdd/2) == 0 {
			flush()
		}
	}
	if lines.Len() > 0 {
		flush()
	}
}

// withField replaces the value was of field name in the match of an
// ovs-ofctl flow with is.
func withField(match, name, was, is string) string {
	field := regexp.MustCompile(`\b` + name + `=` + regexp.QuoteMeta(was) + `(,|$)`)
	return field.ReplaceAllString(match, name+"="+is+"$1")
}

// waitAdopted waits until the controller counts at least n active
// connections.
func waitAdopted(tb testing.TB, lb *sdnlbProc, n int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var got float64
	for i := 0; i < 10_000 && time.Now().Before(deadline); i++ {
		if got = lb.Metric("sdnlb_vip_active_connections"); got >= float64(n) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("the controller counts %v active connections after %v, want %d", got, timeout, n)
}

// waitPolls waits until the controller has read n stats polls to their
// end.
func waitPolls(tb testing.TB, lb *sdnlbProc, n int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var got float64
	for i := 0; i < 10_000 && time.Now().Before(deadline); i++ {
		if got = lb.Metric("sdnlb_controller_stats_poll_seconds_count"); got >= float64(n) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("the controller read %v stats polls to their end in %v, want %d; its log but the API requests:\n%s",
		got, timeout, n, strings.Join(slices.DeleteFunc(lb.LogLines(""), func(l string) bool { return strings.Contains(l, `"msg":"request"`) }), "\n"))
}

// scaleRow is what the bench measured at one number of connection flows.
type scaleRow struct {
	flows        int
	adoption     time.Duration
	adoptionMods float64       // flow-mods the controller sent until its first poll ended
	switchAlone  time.Duration // the switch's CPU per second holding the flows, no controller connected

	polls, flowsRead  float64
	pollTime          time.Duration // mean, request to last part
	ctlCPU, switchCPU time.Duration // over the window
	window            time.Duration

	ctlRSS, ctlHeap, switchRSS int64

	paths [len(scalePaths)]pathRuns // new connections, by path
}

// pathRuns are the wrk runs of one path and what each cost.
type pathRuns struct {
	runs  []wrkResult
	costs []runCost
}

// scalePaths are the paths whose new connections the bench measures: a
// CONTROLLER pool's TCP connections, which the switch's tracker holds,
// and those of one whose VIP has a connection limit, which have flows of
// their own, like the held ones.
var scalePaths = [...]string{"tracked by the switch", "with flows of their own (a connection limit)"}

// withFlowsOfTheirOwn adds to b a VIP whose CONTROLLER connections have
// flows of their own: it has a connection limit, which no test reaches.
// Its members are b's hosts, on a port of their own, so that no member
// is shared with b's pool. The bed it returns is b with that VIP.
func withFlowsOfTheirOwn(tb testing.TB, b *lbBed) *lbBed {
	tb.Helper()
	const port = 8081
	l := *b
	l.vip = b.lb.MustCreateVIP("limited", b.sw.Addr(101), sdnlb.ProtocolTCP, vipPort, map[string]any{"connection_limit": 1_000_000})
	l.pool = b.lb.MustCreatePool("limited", l.vip, sdnlb.RoundRobin, sdnlb.DispatchController)
	l.mems = nil
	for _, h := range b.members {
		h.ServeHTTP(tb, port, h.Name)
		l.mems = append(l.mems, b.lb.MustCreateMember(l.pool, h.IP, port))
	}
	b.lb.WaitPoolMembers(l.pool.ID, len(b.members), 10*time.Second)
	l.url = "http://" + net.JoinHostPort(l.vip.Address, strconv.Itoa(vipPort)) + "/"
	return &l
}

// measurePolls reads what the stats polls of window cost.
func (r *scaleRow) measurePolls(tb testing.TB, sw *Switch, lb *sdnlbProc, window time.Duration) {
	tb.Helper()
	polls, sum, flows := lb.Metric("sdnlb_controller_stats_poll_seconds_count"),
		lb.Metric("sdnlb_controller_stats_poll_seconds_sum"), lb.Metric("sdnlb_controller_stats_poll_flows_total")
	ctl, swt := processCPU(tb, lb.PID()), processCPU(tb, sw.VswitchdPID())
	time.Sleep(window)
	r.ctlCPU, r.switchCPU = processCPU(tb, lb.PID())-ctl, processCPU(tb, sw.VswitchdPID())-swt
	r.window = window
	r.polls = lb.Metric("sdnlb_controller_stats_poll_seconds_count") - polls
	r.flowsRead = lb.Metric("sdnlb_controller_stats_poll_flows_total") - flows
	if r.polls > 0 {
		r.pollTime = time.Duration((lb.Metric("sdnlb_controller_stats_poll_seconds_sum") - sum) / r.polls * float64(time.Second))
	}
}

// measureMemory reads the controller's and the switch's memory.
func (r *scaleRow) measureMemory(tb testing.TB, sw *Switch, lb *sdnlbProc) {
	tb.Helper()
	var err error
	if r.ctlRSS, err = lb.RSS(); err != nil {
		tb.Fatal(err)
	}
	if r.switchRSS, err = testbed.ProcessRSS(sw.VswitchdPID()); err != nil {
		tb.Fatal(err)
	}
	r.ctlHeap = int64(lb.Metric("go_memstats_heap_inuse_bytes"))
}

// perPoll is CPU time d over the window per poll read, or false without
// one.
func (r *scaleRow) perPoll(d time.Duration) (time.Duration, bool) {
	if r.polls == 0 {
		return 0, false
	}
	return time.Duration(float64(d) / r.polls), true
}

func (r *scaleRow) pollLine() string {
	ctl, _ := r.perPoll(r.ctlCPU)
	swt, _ := r.perPoll(r.switchCPU)
	return fmt.Sprintf("%v polls read to their end in %v (%v flows read), each %v; CPU over the window: controller %v (%v a poll), "+
		"switch %v (%v a poll; %v a second holding the flows with no controller); resident: controller %.1f MiB (Go heap in use %.1f MiB), switch %.1f MiB",
		r.polls, r.window, r.flowsRead, r.pollTime.Round(time.Microsecond), r.ctlCPU, ctl, r.switchCPU, swt, r.switchAlone,
		mib(r.ctlRSS), mib(r.ctlHeap), mib(r.switchRSS))
}

func perSecond(d, over time.Duration) time.Duration {
	return time.Duration(float64(d) / over.Seconds())
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// scaleTables renders the rows as two markdown tables: the stats poll and
// memory, and new connections.
func scaleTables(rows []scaleRow, rounds int, duration time.Duration) string {
	var s strings.Builder
	dur := func(d time.Duration, ok bool) string {
		if !ok {
			return "—"
		}
		return d.Round(100 * time.Microsecond).String()
	}
	s.WriteString("| connection flows | adoption | flow-mods at adoption | polls read | poll, request to last part | controller CPU / poll | switch CPU / poll | switch CPU / s, no controller " +
		"| controller RSS | RSS / connection | switch RSS |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	empty := rows[0]
	for _, r := range rows {
		perConn := "—"
		if r.flows > 0 {
			perConn = fmt.Sprintf("%.0f B", float64(r.ctlRSS-empty.ctlRSS)/float64(r.flows/2))
		}
		fmt.Fprintf(&s, "| %d | %v | %v | %v | %s | %s | %s | %v | %.1f MiB | %s | %.1f MiB |\n", r.flows, r.adoption.Round(10*time.Millisecond),
			r.adoptionMods, r.polls, dur(r.pollTime, r.polls > 0), dur(r.perPoll(r.ctlCPU)), dur(r.perPoll(r.switchCPU)), r.switchAlone,
			mib(r.ctlRSS), perConn, mib(r.switchRSS))
	}
	for p, path := range scalePaths {
		fmt.Fprintf(&s, "\nCONTROLLER connections %s, %d runs of %v, wrk -c%d with a new connection per request:\n\n", path, rounds, duration, benchConnections)
		s.WriteString("| connection flows | req/s (median; runs) | vs empty | p50 | p99 | failed | packet-ins / connection | controller CPU / 1,000 connections | switch CPU / 1,000 requests |\n" +
			"|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, r := range rows {
			runs := r.paths[p]
			rates := make([]string, len(runs.runs))
			failed := 0
			for i, w := range runs.runs {
				rates[i] = fmt.Sprintf("%.0f", w.reqPerSec)
				failed += w.failures
			}
			med := medianRun(runs.runs)
			packetIns, controller, switchCPU := costColumns(runs.runs, runs.costs)
			fmt.Fprintf(&s, "| %d | **%.0f** (%s) | %s | %v | %v | %d | %s | %s | %s |\n", r.flows, med.reqPerSec, strings.Join(rates, ", "),
				ratio(med.reqPerSec, medianRate(empty.paths[p].runs)), med.p50, med.p99, failed, packetIns, controller, switchCPU)
		}
	}
	return s.String()
}
