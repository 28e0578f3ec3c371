//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sdnlb/sdnlb"
)

const (
	browserTimeout = 3 * time.Minute
	pageWait       = 20 * time.Second
)

// browser is a headless Chromium driven over the DevTools protocol.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu   sync.Mutex
	logs []string // console errors and uncaught exceptions of the page
}

// newBrowser starts headless Chromium (the Debian package "chromium",
// which scripts/test.sh installs). Missing, it fails the test: a browser
// test that skips would hide a broken dashboard. On failure a screenshot
// goes to a temp dir that outlives the test, and the page's errors to the
// log.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the dashboard test needs Chromium (apt-get install chromium; scripts/test.sh installs it): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root cannot use Chromium's sandbox
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	b := &browser{t: t}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(cancelBrowser)
	// The first Do starts the browser, which lives as long as its context:
	// that one has no timeout, the actions' context has.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, browserTimeout)
	t.Cleanup(cancelTimeout)
	b.ctx = ctx
	t.Cleanup(b.onFailure)
	return b
}

// listen keeps the page's console errors and uncaught exceptions.
func (b *browser) listen(ev any) {
	{
		var line string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			line = fmt.Sprintf("exception: %s at %s:%d", d.Text, d.URL, d.LineNumber+1)
			if d.Exception != nil {
				line += ": " + d.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			line = "console.error: " + strings.Join(args, " ")
		default:
			return
		}
		b.mu.Lock()
		b.logs = append(b.logs, line)
		b.mu.Unlock()
	}
}

func (b *browser) onFailure() {
	if !b.t.Failed() {
		return
	}
	b.mu.Lock()
	if len(b.logs) > 0 {
		b.t.Logf("page errors:\n%s", strings.Join(b.logs, "\n"))
	}
	b.mu.Unlock()
	dir, err := os.MkdirTemp("", "sdnlb-dashboard-shots")
	if err != nil {
		b.t.Logf("screenshot dir: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	file := filepath.Join(dir, strings.ReplaceAll(b.t.Name(), "/", "_")+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot of the page: %s\npage text:\n%s", file, text)
}

// run runs chromedp actions and fails the test on error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the first element that matches the CSS
// selector, "" when there is none.
func (b *browser) text(sel string) string {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, q)))
	if err != nil {
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// poll calls done every 50 ms until it returns true or pageWait has
// passed, and says whether it did.
func (b *browser) poll(done func() bool) bool {
	b.t.Helper()
	deadline := time.Now().Add(pageWait)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if done() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// waitText waits until the element matching sel contains want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	var got string
	if !b.poll(func() bool { got = b.text(sel); return strings.Contains(got, want) }) {
		b.t.Fatalf("%s shows %q after %v, want it to contain %q", sel, got, pageWait, want)
	}
}

// evalJS evaluates a JavaScript expression in the page and decodes its
// value.
func evalJS[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitJS waits until the expression is true in the page.
func (b *browser) waitJS(what, js string) {
	b.t.Helper()
	if !b.poll(func() bool { return evalJS[bool](b, "!!("+js+")") }) {
		b.t.Fatalf("%s: still false after %v: %s", what, pageWait, js)
	}
}

// seriesSum is what the page's track of a pool or member holds: its new
// connections per second summed from a second on (gaps left out), and the
// connection count it has reached (-1 before its first sample).
type seriesSum struct {
	Sum  float64 `json:"sum"`
	Last float64 `json:"last"`
}

// series reads the track of a pool ("pools") or member ("members") in the
// page, from unix second from on.
func (b *browser) series(kind, id string, from int64) seriesSum {
	b.t.Helper()
	return evalJS[seriesSum](b, fmt.Sprintf(`((t, from) => {
		if (!t || !t.last) return { sum: 0, last: -1 };
		let sum = 0;
		const end = Math.floor(t.settled / 1000);
		for (let s = Math.max(from, end - WINDOW_S + 1); s <= end; s++) {
			const v = t.value(CONNS, s);
			if (!Number.isNaN(v)) sum += v;
		}
		return { sum, last: t.last.conns };
	})(tracks[%q].get(%q), %d)`, kind, id, from))
}

// waitCounter waits until the API counts at least atLeast connections for
// a pool or member (a switch's counters are read every 2 s) and the page's
// track has reached the same count, and returns it.
func (b *browser) waitCounter(kind, id string, atLeast uint64, api func() uint64) uint64 {
	b.t.Helper()
	var want uint64
	var got seriesSum
	if !b.poll(func() bool {
		want, got = api(), b.series(kind, id, 0)
		return want >= atLeast && got.Last == float64(want)
	}) {
		b.t.Fatalf("the page's %s %s reached %v connections after %v, the API says %d (want at least %d)", kind, id, got.Last, pageWait, want, atLeast)
	}
	return want
}

// waitSum waits until the page's track of a pool or member sums to want
// new connections from unix second from on: the seconds at the end count
// once the stream has covered them whole, a few seconds later.
func (b *browser) waitSum(what, kind, id string, from int64, want float64) {
	b.t.Helper()
	var got seriesSum
	if !b.poll(func() bool { got = b.series(kind, id, from); return math.Abs(got.Sum-want) < 0.5 }) {
		b.t.Fatalf("%s: the page's series of %s %s sums to %.2f new connections after %v, want %v", what, kind, id, got.Sum, pageWait, want)
	}
}

// getAll sends n requests from c to url one after another and returns how
// many were answered.
func getAll(c *Host, url string, n int) int {
	ok := 0
	for i := 0; i < n; i++ {
		if _, err := get(c, url, 5*time.Second); err == nil {
			ok++
		}
	}
	return ok
}

func memberTotal(lb *sdnlbProc, poolID, memberID string) uint64 {
	ps := lb.PoolStats(poolID)
	return ps.Members[memberIndex(ps, memberID)].TotalConnections
}

// TestDashboard drives the dashboard in a real browser: it says when no
// switch is connected and shows the cluster's leader, creates a VIP through
// the form (showing the API's field error next to the field first), lists
// it, charts the traffic that goes through it, and shows a member go DOWN
// when its server stops: in its row and as a mark on the charts, with the
// new connections going to the other member from then on.
func TestDashboard(t *testing.T) {
	sw := NewSwitch(t)
	lb := startSDNLB(t)
	m1 := sw.AddHost(t, "m1", sw.Addr(11))
	m2 := sw.AddHost(t, "m2", sw.Addr(12))
	srv1 := m1.ServeHTTP(t, memberPort, "srv1")
	m2.ServeHTTP(t, memberPort, "srv2")
	// Started last, the browser closes first: sdnlb's graceful shutdown
	// waits for the page's open event stream.
	b := newBrowser(t)

	b.run("open the dashboard", chromedp.Navigate("http://"+lb.APIAddr+"/dashboard/"),
		chromedp.WaitVisible(chromedp.CSS(`#vips`)))
	b.waitText("#switches", "no switch connected")
	b.waitText("#vips", "No VIP yet")

	// The cluster panel: on SQLite one node, which leads.
	var cluster sdnlb.Cluster
	lb.MustAPI(http.MethodGet, "/v1/cluster", nil, http.StatusOK, &cluster)
	if cluster.Leader == "" || cluster.Self != cluster.Leader {
		t.Fatalf("GET /v1/cluster: %+v, want the one node leading and answering", cluster)
	}
	b.waitText("#cluster h2", "leader "+cluster.Leader)
	b.waitText(fmt.Sprintf(`#cluster tr[data-id=%q]`, cluster.Leader), "leader")
	b.waitText(fmt.Sprintf(`#cluster tr[data-id=%q]`, cluster.Self), "(this node)")
	if !b.poll(func() bool { return evalJS[bool](b, `document.getElementById("bgp").hidden`) }) {
		t.Fatal("the BGP panel shows on a node that speaks no BGP")
	}

	// A VIP through the form; the API's error shows next to its field.
	vipAddr := sw.Addr(100)
	b.run("fill the VIP form",
		chromedp.Click(chromedp.CSS(`button[data-new="vip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#form-dialog[open]`)),
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="id"]`), "dash"),
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="name"]`), "dashboard"),
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="address"]`), "10.0.0"),
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="port"]`), "80"),
		chromedp.Click(chromedp.CSS(`#form-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`.field[data-field="address"] .err`)))
	if got := b.text(`.field[data-field="address"] .err`); !strings.Contains(got, "10.0.0") {
		t.Errorf("address error %q does not name the bad address", got)
	}
	b.run("fix the address",
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="address"]`), vipAddr),
		chromedp.Click(chromedp.CSS(`#form-submit`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#form-dialog[open]`)))
	b.waitText(`article.vip[data-id="dash"]`, vipAddr+":80")
	b.waitText(`article.vip[data-id="dash"] .name`, "dashboard")

	// Pool, members and monitor through the API; the page follows the feed.
	lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"id": "dash", "vip_id": "dash"}, http.StatusCreated, nil)
	for i, h := range []*Host{m1, m2} {
		lb.MustAPI(http.MethodPost, "/v1/members", map[string]any{
			"id": fmt.Sprintf("m%d", i+1), "pool_id": "dash", "address": h.IP, "port": memberPort,
		}, http.StatusCreated, nil)
	}
	b.waitText(`tr[data-id="m2"]`, m2.IP)
	// No switch has shown the members yet.
	b.waitText(`tr[data-id="m2"] .where`, "?")
	// In the configuration the VIP is ACTIVE; with no switch it carries nothing.
	b.waitText(`article.vip[data-id="dash"] h2`, "NO SWITCH")

	lb.Connect(sw)
	b.waitText("#switches", "1 switch connected")
	b.waitText(`article.vip[data-id="dash"] h2`, "ACTIVE")

	lb.MustAPI(http.MethodPost, "/v1/monitors", map[string]any{
		"id": "http", "type": "HTTP", "delay": 0.2, "timeout": 0.1, "max_retries": 2, "rise": 2, "url_path": "/health",
	}, http.StatusCreated, nil)
	if status, body := lb.API(http.MethodPost, "/v1/pools/dash/monitors", map[string]any{"monitor_id": "http"}); status/100 != 2 {
		t.Fatalf("attach the monitor: %d %s", status, body)
	}
	b.waitText(`tr[data-id="m1"] .status`, "UP")
	b.waitText(`tr[data-id="m2"] .status`, "UP")

	// Traffic through the VIP: the new connections per second the page
	// holds for the pool add up to the pool's connection count, and its
	// chart drew them.
	c1 := sw.AddHost(t, "c1", sw.Addr(1))
	url := "http://" + net.JoinHostPort(vipAddr, "80") + "/"
	for i := 0; i < 100; i++ {
		if _, err := get(c1, url, time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	spread(t, []*Host{c1}, url, 20)
	b.waitJS("the members are seen", `['m1', 'm2'].every((id) => document.querySelector('tr[data-id="' + id + '"] .where').textContent === "")`)
	total := b.waitCounter("pools", "dash", 20, func() uint64 { return lb.PoolStats("dash").TotalConnections })
	b.waitSum("the pool's traffic", "pools", "dash", 0, float64(total))
	const poolChart = `.pool[data-id="dash"] svg[data-kind="conns"]`
	b.waitJS("the pool's chart shows the traffic", `+document.querySelector('`+poolChart+`').dataset.peak > 0`)
	if n := evalJS[int](b, `document.querySelectorAll('`+poolChart+` path.line[d*="L"]').length`); n != 2 {
		t.Errorf("the pool's connections chart has %d lines with points, want one per member (2)", n)
	}

	// m1 fails: its row says DOWN, the charts mark it at the transition,
	// and the connections that follow are m2's alone.
	m2Before := b.waitCounter("members", "m2", 0, func() uint64 { return memberTotal(lb, "dash", "m2") })
	b.waitSum("m2 before the failure", "members", "m2", 0, float64(m2Before))
	stopped := time.Now()
	srv1.Stop()
	b.waitText(`tr[data-id="m1"] .status`, "DOWN")
	if got := b.text(`tr[data-id="m2"] .status`); got != "UP" {
		t.Errorf("m2 shows %q while only m1 stopped, want UP", got)
	}
	const downMark = poolChart + ` .mark.DOWN[data-member~="m1"]`
	b.waitJS("m1's DOWN marked on the pool's chart", `document.querySelector('`+downMark+`')`)
	markMS := evalJS[int64](b, `+document.querySelector('`+downMark+`').dataset.t`)
	if mark := time.UnixMilli(markMS); mark.Before(stopped.Add(-time.Second)) || mark.After(time.Now()) {
		t.Errorf("m1's DOWN is marked at %v, want between the server's stop (%v) and now", mark, stopped)
	}
	answered := getAll(c1, url, 20)
	if answered < 10 {
		t.Fatalf("%d of 20 requests answered with m1 down", answered)
	}
	m2After := b.waitCounter("members", "m2", m2Before+uint64(answered), func() uint64 { return memberTotal(lb, "dash", "m2") })
	b.waitSum("m2 with m1 down", "members", "m2", 0, float64(m2After))
	// The new connections are charted after the mark (a step is spread
	// over at most 2 s before the sample that shows it).
	markSec := markMS / 1000
	if got := b.series("members", "m2", markSec-2); got.Sum < float64(m2After-m2Before)-0.5 {
		t.Errorf("the page charts %.2f new connections for m2 from m1's DOWN on, m2 counted %d since", got.Sum, m2After-m2Before)
	}
	if got := b.series("members", "m1", markSec+1); got.Sum > 0.5 {
		t.Errorf("after its DOWN the page charts %.2f new connections for m1, want none", got.Sum)
	}

	// m1's own charts: its traffic before the failure, and the mark.
	b.run("open m1's charts", chromedp.Click(chromedp.CSS(`tr[data-id="m1"] button[title^="show this member"]`)))
	const m1Chart = `tr.member-charts[data-member="m1"] svg[data-kind="conns"]`
	b.waitJS("m1's chart shows its traffic and its DOWN",
		`+document.querySelector('`+m1Chart+`')?.dataset.peak > 0 && document.querySelector('`+m1Chart+` .mark.DOWN')`)
}

// TestDashboard_Series checks, in the browser, how the dashboard's tracks
// turn the stats stream's samples into the series its charts draw: rates
// from counter steps, a counter that falls by more than half as a reset
// (a gap), a smaller fall as a correction (no movement until the counter
// is back), a stream reconnect as a gap (never zeros), settling at rate 0
// only while the stream is up, a pool moving by its members' steps, and
// health transitions as marks.
func TestDashboard_Series(t *testing.T) {
	lb := startSDNLB(t)
	b := newBrowser(t)
	b.run("open the dashboard", chromedp.Navigate("http://"+lb.APIAddr+"/dashboard/"),
		chromedp.WaitVisible(chromedp.CSS(`#vips`)))

	// Samples one second apart from t0 (ms), on stream connection 1
	// unless said; each line of want is [second offset, series, value],
	// with null for a gap.
	const script = `(() => {
		const t0 = 1700000000000, s0 = t0 / 1000;
		const tr = new Track();
		const c = (conns, active, bytesIn, bytesOut) => ({ conns, active, bytesIn, bytesOut });
		tr.sample(t0, 1, c(100, 5, 1000, 2000));
		tr.sample(t0 + 1000, 1, c(110, 6, 1500, 2000));  // 10/s, 500 B/s in
		tr.sample(t0 + 2000, 1, c(120, 6, 2000, 2000));
		tr.sample(t0 + 3000, 1, c(3, 6, 2100, 2000));    // conns reset: a gap; bytes go on
		tr.sample(t0 + 4000, 1, c(8, 6, 2050, 2000));    // bytes in corrected down: no movement
		tr.sample(t0 + 5000, 1, c(13, 6, 2150, 2000));   // back above 2100 by 50
		tr.sample(t0 + 40000, 2, c(20, 1, 9000, 9000));  // reconnected 35 s later: a gap, then a level
		tr.sample(t0 + 41000, 2, c(24, 1, 9000, 9000));
		tr.settle(t0 + 46000, 2);                        // live: rate 0 until now - 3 s
		tr.settle(t0 + 60000, 3);                        // another connection is live: nothing
		const at = (track, k, d) => { const x = track.value(k, s0 + d); return Number.isNaN(x) ? null : Math.round(x * 100) / 100; };
		const v = (k, d) => at(tr, k, d);
		// A pool moves by its members' steps, whatever its own sums do.
		const pool = new Track();
		const zero = { conns: 0, bytesIn: 0, bytesOut: 0 };
		pool.sample(t0, 1, c(10, 0, 0, 0), zero);
		pool.sample(t0 + 1000, 1, c(5, 0, 0, 0), { ...zero, conns: 3 });
		pool.sample(t0 + 2000, 1, c(9, 0, 0, 0), { ...zero, conns: null });
		tr.observe("UP", t0 - 3600000, t0);              // UP for an hour: no mark
		tr.observe("DOWN", t0 + 1500, t0 + 2000);        // DOWN since t0 + 1.5 s
		tr.observe("DOWN", t0 + 1500, t0 + 3000);        // no change
		tr.observe("DRAINING", t0 + 1500, t0 + 4000);    // no new since: marked at the sample
		const fresh = new Track();
		fresh.observe("DOWN", t0 - 60000, t0);           // entered within the window: marked
		return {
			conns: [0, 1, 2, 3, 4, 5].map((d) => v(CONNS, d)),
			bytesIn: [0, 2, 3, 4].map((d) => v(BYTES_IN, d)),
			active: [0, 1, 20, 40].map((d) => v(ACTIVE, d)),
			gap: [5, 20, 39].map((d) => v(CONNS, d)),
			after: [40, 41, 42, 43].map((d) => v(CONNS, d)),
			pool: [0, 1].map((d) => at(pool, CONNS, d)),
			marks: tr.marks.map((m) => [m.t - t0, m.status]),
			freshMarks: fresh.marks.map((m) => [m.t - t0, m.status]),
		};
	})()`
	type result struct {
		Conns, BytesIn, Active, Gap, After, Pool []*float64
		Marks, FreshMarks                        [][2]any
	}
	got := evalJS[result](b, script)
	f := func(v float64) *float64 { return &v }
	check := func(name string, got, want []*float64) {
		t.Helper()
		show := func(vs []*float64) string {
			var s []string
			for _, v := range vs {
				if v == nil {
					s = append(s, "gap")
				} else {
					s = append(s, fmt.Sprint(*v))
				}
			}
			return strings.Join(s, " ")
		}
		if show(got) != show(want) {
			t.Errorf("%s: got %s, want %s", name, show(got), show(want))
		}
	}
	// Each second holds the rate over it: the samples at t0 and t0 + 1 s
	// give the second from t0.
	check("conns", got.Conns, []*float64{f(10), f(10), nil, f(5), f(5), nil})
	check("bytes in", got.BytesIn, []*float64{f(500), f(100), f(0), f(50)})
	check("active", got.Active, []*float64{f(5), f(6), nil, f(1)})
	// From the last sample of one connection to the first of the next the
	// series has no value at all.
	check("reconnect gap", got.Gap, []*float64{nil, nil, nil})
	// Then 4 connections in a second; settled at 0 up to 3 s before the
	// live connection's now (t0 + 43 s), and no further once another
	// connection is the live one.
	check("after reconnect", got.After, []*float64{f(4), f(0), f(0), nil})
	// A member's reset is a gap in its pool's series too.
	check("pool", got.Pool, []*float64{f(3), nil})
	if want := "[[1500 DOWN] [4000 DRAINING]]"; fmt.Sprint(got.Marks) != want {
		t.Errorf("marks %v, want %s", got.Marks, want)
	}
	if want := "[[-60000 DOWN]]"; fmt.Sprint(got.FreshMarks) != want {
		t.Errorf("marks of a status first seen %v, want %s", got.FreshMarks, want)
	}
}

// TestDashboard_NoLeader shows the cluster panel an answer of GET
// /v1/cluster in which no node holds the lease (the database unreachable
// from every node): it must say so, not show the last leader.
func TestDashboard_NoLeader(t *testing.T) {
	lb := startSDNLB(t)
	b := newBrowser(t)
	b.run("open the dashboard", chromedp.Navigate("http://"+lb.APIAddr+"/dashboard/"))
	b.waitText("#cluster h2", "leader ")
	got := evalJS[string](b, `(() => {
		state.cluster = { leader: "", nodes: [{ id: "a", api_addr: "10.0.0.1:8080", openflow_addr: "10.0.0.1:6653",
			role: "follower", last_seen: new Date().toISOString() }] };
		renderCluster();
		return document.querySelector("#cluster").innerText;
	})()`)
	if !strings.Contains(got, "no leader") || strings.Contains(got, "leader a") {
		t.Errorf("with no leader the cluster panel shows %q, want it to say no leader", got)
	}
}

// TestDashboard_Nodes checks what the page shows of a cluster's nodes: in
// the cluster panel when each last recorded its parts of the cluster's
// state (an age, "—" for never: on SQLite no node records a topology),
// and in a pool's view its share of each node while more than one node
// counts. One node answers here, with one node's counters at most, so the
// page is given the answers of two nodes as the API would bring them;
// node ids come from the network and are drawn as text, never as markup.
func TestDashboard_Nodes(t *testing.T) {
	lb := startSDNLB(t)
	lb.MustAPI(http.MethodPost, "/v1/vips", map[string]any{"id": "web", "address": "10.0.0.100", "port": 80}, http.StatusCreated, nil)
	lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"id": "web", "vip_id": "web"}, http.StatusCreated, nil)
	lb.MustAPI(http.MethodPost, "/v1/members", map[string]any{"id": "m1", "pool_id": "web", "address": "10.0.0.1", "port": 80}, http.StatusCreated, nil)
	b := newBrowser(t)
	b.run("open the dashboard", chromedp.Navigate("http://"+lb.APIAddr+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS(`#vips`)))

	var cluster sdnlb.Cluster
	lb.MustAPI(http.MethodGet, "/v1/cluster", nil, http.StatusOK, &cluster)
	self := fmt.Sprintf(`#cluster tr[data-id=%q]`, cluster.Self)
	b.waitText(self, "(this node)")
	if got := b.text(self + " td:nth-child(8)"); got != "—" {
		t.Errorf("on SQLite the node's topology recorded shows %q, want —", got)
	}
	if got := b.text(self + " td:nth-child(7)"); !regexp.MustCompile(`^(—|\d+s ago)$`).MatchString(got) {
		t.Errorf("the node's stats recorded shows %q, want an age or —", got)
	}

	const evil = `<b>x</b><img src=x onerror="window.pwned=1">`
	type recordedCells struct {
		Self, Evil []string
		Markup     int
	}
	cells := evalJS[recordedCells](b, fmt.Sprintf(`((self, evil) => {
		const iso = (ms) => new Date(ms).toISOString();
		const now = serverNow();
		state.cluster = { leader: self, self, nodes: [
			{ id: self, api_addr: "10.0.0.1:8080", openflow_addr: "10.0.0.1:6653", role: "leader", last_seen: iso(now - 1000),
				masters: ["00:00:00:00:00:00:00:01"], stats_recorded_at: iso(now - 2000), topology_recorded_at: iso(now - 65000) },
			{ id: evil, api_addr: "10.0.0.2:8080", openflow_addr: "10.0.0.2:6653", role: "follower", last_seen: iso(now - 1000),
				masters: [], stats_recorded_at: null, topology_recorded_at: null }] };
		renderCluster();
		const row = (id) => [...document.querySelector('#cluster tr[data-id="' + CSS.escape(id) + '"]').cells].map((c) => c.textContent);
		return { self: row(self), evil: row(evil), markup: document.querySelectorAll("#cluster b, #cluster img").length };
	})(%q, %q)`, cluster.Self, evil))
	if got := fmt.Sprint(cells.Self[5:]); got != "[1s ago 2s ago 65s ago]" {
		t.Errorf("a node that recorded 2 s and 65 s ago shows %s, want [1s ago 2s ago 65s ago]", got)
	}
	if len(cells.Evil) != 8 || cells.Evil[0] != evil || fmt.Sprint(cells.Evil[6:]) != "[— —]" || cells.Markup != 0 {
		t.Errorf("a node named %q that recorded nothing shows %q (%d elements from its name), want its name as text and — twice",
			evil, cells.Evil, cells.Markup)
	}

	// The pool's shares of two nodes, 2 s apart: this node took 10 new
	// connections (5 a second), the other 20.
	b.waitText("#stats-feed", "counters live")
	b.waitJS("the pool's stats", `state.stats.has("web") && document.querySelector('tr[data-id="m1"]')`)
	type shares struct {
		Shown, HiddenWithOne bool
		Rows                 [][]string
		Markup               int
		Hover                string
	}
	got := evalJS[shares](b, fmt.Sprintf(`((self, evil) => {
		const real = state.stats.get("web");
		const t0 = Math.floor(serverNow() / 1000) * 1000 - 2000;
		const share = (node, active, conns) => ({ node, active_connections: active, total_connections: conns,
			packets_in: 0, packets_out: 0, bytes_in: conns * 100, bytes_out: conns * 1000 });
		const event = (t, nodes) => {
			const ps = structuredClone(real);
			ps.updated_at = new Date(t).toISOString();
			ps.nodes = nodes;
			ps.members = ps.members.map((m) => ({ ...m, nodes }));
			return ps;
		};
		applyStats(event(t0, [share(self, 3, 100), share(evil, 4, 50)]), statsEpoch);
		applyStats(event(t0 + 2000, [share(self, 3, 110), share(evil, 4, 70)]), statsEpoch);
		const table = document.querySelector('.pool[data-id="web"] table.by-node');
		const result = { shown: !table.hidden, markup: table.querySelectorAll("b, img").length,
			rows: [...table.tBodies[0].rows].map((r) => [...r.cells].map((c) => c.textContent)),
			hover: document.querySelector('tr[data-id="m1"]').cells[6].firstChild.title };
		applyStats(event(t0 + 3000, [share(self, 7, 180)]), statsEpoch);
		result.hiddenWithOne = table.hidden;
		return result;
	})(%q, %q)`, cluster.Self, evil))
	want := [][]string{
		{cluster.Self + " (this node)", "3", "5", "500 B/s", "4.9 KiB/s", "110", "10.7 KiB", "107.4 KiB"},
		{evil, "4", "10", "1000 B/s", "9.8 KiB/s", "70", "6.8 KiB", "68.4 KiB"},
	}
	if !got.Shown || fmt.Sprintf("%q", got.Rows) != fmt.Sprintf("%q", want) || got.Markup != 0 {
		t.Errorf("the pool's shares of two nodes: shown %v, rows %q (%d elements from names), want rows %q",
			got.Shown, got.Rows, got.Markup, want)
	}
	if wantHover := "by node:\n" + cluster.Self + ": 3 active, 110 total\n" + evil + ": 4 active, 70 total"; got.Hover != wantHover {
		t.Errorf("a member's active connections say on hover %q, want %q", got.Hover, wantHover)
	}
	if !got.HiddenWithOne {
		t.Error("with one node counting, the pool still shows its shares by node")
	}
}

// TestDashboard_ClusterNodes opens the dashboard on node b of two on
// PostgreSQL whose one bridge a masters. The cluster panel shows when each
// node last recorded its parts, and after traffic through the VIP the pool
// shows its share of each node as b's GET /v1/pools/{id}/stats has them:
// a's with the connections its bridge counted.
func TestDashboard_ClusterNodes(t *testing.T) {
	b, nodeA, nodeB, _, _ := newClusterBed(t)
	b.vip = nodeA.MustCreateVIP("web", b.sw.Addr(100), sdnlb.ProtocolTCP, vipPort, nil)
	b.pool = nodeA.MustCreatePool("web", b.vip, sdnlb.RoundRobin, sdnlb.DispatchSwitch)
	for _, h := range b.members {
		b.mems = append(b.mems, nodeA.MustCreateMember(b.pool, h.IP, memberPort))
	}
	nodeA.WaitPoolMembers(b.pool.ID, len(b.members), 10*time.Second)
	b.waitBuckets(t, len(b.members), 10*time.Second)
	b.url = "http://" + net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort)) + "/"
	const perClient = 10
	spread(t, b.clients, b.url, perClient)
	// Started last, the browser closes first (see TestDashboard).
	br := newBrowser(t)
	br.run("open the dashboard on b", chromedp.Navigate("http://"+nodeB.APIAddr+"/dashboard/"),
		chromedp.WaitVisible(chromedp.CSS(`#vips`)))

	// When each node last recorded its parts: an age where b's API has a
	// time, "—" where it has none.
	var cells, want []string
	if !br.poll(func() bool {
		c, ok := clusterOf(nodeB)
		if !ok || len(c.Nodes) != 2 {
			return false
		}
		want = nil
		for _, n := range c.Nodes {
			for _, at := range []*time.Time{n.StatsRecordedAt, n.TopologyRecordedAt} {
				want = append(want, map[bool]string{true: "—", false: "an age"}[at == nil])
			}
		}
		cells = evalJS[[]string](br, `["a", "b"].flatMap((id) => [7, 8].map((i) =>
			(document.querySelector('#cluster tr[data-id="' + id + '"] td:nth-child(' + i + ')') || {}).textContent))
			.map((t) => /^\d+s ago$/.test(t) ? "an age" : t)`)
		return fmt.Sprint(cells) == fmt.Sprint(want)
	}) {
		t.Fatalf("the nodes' stats and topology recorded show %q, want %q as b's GET /v1/cluster has them", cells, want)
	}

	// A node's share as the page shows it and as b's API has it: the node
	// and its total connections.
	type share struct{ Node, Total string }
	var page, api []share
	if !br.poll(func() bool {
		api = nil
		for _, n := range nodeB.PoolStats(b.pool.ID).Nodes {
			api = append(api, share{n.Node, fmt.Sprint(n.TotalConnections)})
		}
		page = evalJS[[]share](br, fmt.Sprintf(`[...document.querySelectorAll('.pool[data-id=%q] table.by-node:not([hidden]) tbody tr')]
			.map((r) => ({ node: r.dataset.node, total: r.cells[5].textContent }))`, b.pool.ID))
		return len(api) == 2 && api[0].Node == "a" && api[0].Total != "0" && fmt.Sprint(page) == fmt.Sprint(api)
	}) {
		t.Fatalf("the pool's shares by node: the page shows %v, b's API %v; want a's and b's, a counting the traffic", page, api)
	}
	t.Logf("after %d requests the page on b shows the shares %v", perClient*len(b.clients), page)
}

// TestDashboard_LongErrorAndCascade checks the page at 1,280 px with a
// member whose check error is longer than the screen is wide: the page does
// not scroll sideways, and the error is cut with its whole text on hover.
// Then the cascade deletes: each confirm says what goes with the object.
func TestDashboard_LongErrorAndCascade(t *testing.T) {
	lb := startSDNLB(t)
	b := newBrowser(t)
	// A monitor that never probes (admin down): the pools count as
	// monitored, and no health event replaces the check errors set below.
	lb.MustAPI(http.MethodPost, "/v1/monitors", map[string]any{"id": "http", "type": "HTTP", "admin_state_up": false}, http.StatusCreated, nil)
	for i, id := range []string{"web", "api"} {
		lb.MustAPI(http.MethodPost, "/v1/vips", map[string]any{"id": id, "address": fmt.Sprintf("10.0.0.%d", 100+i), "port": 80}, http.StatusCreated, nil)
		lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"id": id, "vip_id": id}, http.StatusCreated, nil)
		lb.MustAPI(http.MethodPost, "/v1/pools/"+id+"/monitors", map[string]any{"monitor_id": "http"}, http.StatusNoContent, nil)
	}
	for i, id := range []string{"srv1", "srv2", "srv3"} {
		lb.MustAPI(http.MethodPost, "/v1/members", map[string]any{"id": id, "pool_id": "web", "address": fmt.Sprintf("10.0.0.%d", 1+i), "port": 80}, http.StatusCreated, nil)
	}
	lb.MustAPI(http.MethodPost, "/v1/members", map[string]any{"id": "api1", "pool_id": "api", "address": "10.0.0.9", "port": 80}, http.StatusCreated, nil)

	b.run("open the dashboard at 1,280 px", chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate("http://"+lb.APIAddr+"/dashboard/"))
	b.waitText(`tr[data-id="srv3"]`, "10.0.0.3")
	longError := "GET /health: status 404, expected 200 (probed from 192.0.2.2 on eth0, through a gateway: " +
		strings.Repeat("10.0.0.1-is-on-none-of-eth0's-subnets/", 20) + ")"
	// As a probe through the wrong route would leave it.
	evalJS[bool](b, fmt.Sprintf(`(() => {
		const m = state.members.get("web").find((m) => m.id === "srv2");
		m.health = { ...m.health, last_check: new Date().toISOString(), last_latency_ms: 1.5, last_error: %q };
		render();
		return true;
	})()`, longError))
	b.waitText(`tr[data-id="srv2"]`, "status 404")
	if w := evalJS[[]int](b, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`); w[0] > w[1] {
		t.Errorf("the page is %d px wide in a %d px window: it scrolls sideways", w[0], w[1])
	}
	if hover := evalJS[string](b, `document.querySelector('tr[data-id="srv2"] .check').title`); !strings.Contains(hover, longError) {
		t.Errorf("hovering the check shows %q, want the whole error", hover)
	}

	// Every confirm is answered yes and kept.
	evalJS[bool](b, `window.confirms = []; window.confirm = (m) => { confirms.push(m); return true; }; true`)
	confirmed := func(what, click, gone string) string {
		t.Helper()
		b.run(what, chromedp.Click(chromedp.CSS(click)), chromedp.WaitNotPresent(chromedp.CSS(gone)))
		confirms := evalJS[[]string](b, `confirms.splice(0)`)
		return confirms[len(confirms)-1]
	}
	if got := confirmed("delete the monitor", `#monitors tr[data-id="http"] button[title="delete the monitor"]`, `#monitors tr[data-id="http"]`); got != "Delete monitor http and take it off pools api and web?" {
		t.Errorf("the monitor's cascade asks %q", got)
	}
	if got := confirmed("delete pool web", `.pool[data-id="web"] button[title="delete the pool"]`, `.pool[data-id="web"]`); got != "Delete pool web, its 3 members and their stats?" {
		t.Errorf("the pool's cascade asks %q", got)
	}
	if got := confirmed("delete VIP api", `article.vip[data-id="api"] button[title="delete the VIP"]`, `article.vip[data-id="api"]`); got != "Delete VIP api, its pool api, its 1 member and their stats?" {
		t.Errorf("the VIP's cascade asks %q", got)
	}
	var members struct {
		Members []sdnlb.Member `json:"members"`
	}
	lb.MustAPI(http.MethodGet, "/v1/members", nil, http.StatusOK, &members)
	if len(members.Members) != 0 {
		t.Errorf("members left after the cascades: %+v", members.Members)
	}
}

// TestDashboard_Topology shows two bridges joined by a pair of patch ports
// in the dashboard's topology view at 1,280 px: both switches, the link
// with both its directions, and each bridge's host hanging off it; then
// one patch port goes, and the link goes from the view. Names that come
// from the network are drawn as text, never as markup.
func TestDashboard_Topology(t *testing.T) {
	tb := newTwoBridges(t)
	// Started last, the browser closes first (see TestDashboard).
	b := newBrowser(t)
	b.run("open the dashboard at 1,280 px", chromedp.EmulateViewport(1280, 900),
		chromedp.Navigate("http://"+tb.lb.APIAddr+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS(`#topology`)))

	q := func(sel string) string { return fmt.Sprintf("document.querySelector(%q)", "#topology-map "+sel) }
	b.waitJS("both switches in the view", q(fmt.Sprintf("g.switch[data-dpid=%q]", tb.d1))+" && "+q(fmt.Sprintf("g.switch[data-dpid=%q]", tb.d2)))
	// A link's ends in the view's order: the smaller "dpid/port" first.
	a, z := fmt.Sprintf("%s/%d", tb.d1, tb.port1), fmt.Sprintf("%s/%d", tb.d2, tb.port2)
	if z < a {
		a, z = z, a
	}
	b.waitJS("the link, both ways", q(fmt.Sprintf(`g.link[data-a=%q][data-b=%q][data-both="true"]`, a, z)))

	tb.showHosts(t)
	for _, h := range []struct{ ip, dpid string }{{tb.h1.IP, tb.d1}, {tb.h2.IP, tb.d2}} {
		b.waitJS("host "+h.ip+" at its own bridge", q(fmt.Sprintf("g.host[data-address=%q][data-dpid=%q]", h.ip, h.dpid)))
	}
	b.waitText("#topology-summary", "2 switches · 1 link · 2 hosts")
	if n := evalJS[int](b, `document.querySelectorAll("#topology-map g.link").length`); n != 1 {
		t.Errorf("%d links drawn, want the one, its two directions paired", n)
	}
	if w := evalJS[[]int](b, `[document.documentElement.scrollWidth, document.documentElement.clientWidth]`); w[0] > w[1] {
		t.Errorf("the page is %d px wide in a %d px window: it scrolls sideways", w[0], w[1])
	}

	tb.s2.Vsctl("del-port", tb.s2.Name, tb.p2)
	b.waitJS("the link gone from the view", `!document.querySelector("#topology-map g.link")`)
	b.waitText("#topology-summary", "2 switches · 0 links")

	// A host's address and port name as a switch might report them.
	type drawn struct {
		Elements             int
		Address, Text, Title string
	}
	const evil = `<img src=x onerror="window.pwned=1">`
	got := evalJS[drawn](b, fmt.Sprintf(`(() => {
		const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
		drawTopology(svg, { switches: [{ dpid: "00:01", ports: [] }], links: [],
			hosts: [{ address: %[1]q, mac: "02:00:00:00:00:01", dpid: "00:01", port: "1", port_name: %[1]q, last_seen: "" }] });
		const host = svg.querySelector("g.host");
		return { elements: svg.querySelectorAll("img").length, address: host.dataset.address,
			text: host.querySelector("text").textContent, title: host.querySelector("title").textContent };
	})()`, evil))
	if got.Elements != 0 || got.Address != evil || got.Text != evil || !strings.Contains(got.Title, evil+" (1)") {
		t.Errorf("a host named %q is drawn as %+v, want its name as text everywhere", evil, got)
	}
}
