//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestDashboard_Scale loads the dashboard with 100 VIPs of 10 members each
// in headless Chromium and logs what the page measured of itself with
// performance.now(): the time to its first render, the cost of applying
// one stats event and of drawing the charts on screen, and the heap. It
// asserts only what the page does, never how fast: member lists start
// collapsed, charts are drawn only on screen, and the filter finds one
// member among the thousand. docs/BENCHMARKS.md has the figures.
func TestDashboard_Scale(t *testing.T) {
	const nVIPs, perPool = 100, 10
	lb := startSDNLB(t)

	created := time.Now()
	parallel(t, nVIPs, func(i int) {
		lb.MustAPI(http.MethodPost, "/v1/vips", map[string]any{"id": fmt.Sprintf("v%03d", i), "name": fmt.Sprintf("web-%03d", i),
			"address": fmt.Sprintf("10.200.0.%d", i+1), "port": 80}, http.StatusCreated, nil)
	})
	parallel(t, nVIPs, func(i int) {
		lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"id": fmt.Sprintf("p%03d", i), "vip_id": fmt.Sprintf("v%03d", i)},
			http.StatusCreated, nil)
	})
	parallel(t, nVIPs*perPool, func(i int) {
		lb.MustAPI(http.MethodPost, "/v1/members", map[string]any{"id": fmt.Sprintf("m%03d-%d", i/perPool, i%perPool),
			"pool_id": fmt.Sprintf("p%03d", i/perPool), "address": fmt.Sprintf("10.201.%d.%d", i/perPool, 10+i%perPool),
			"port": 8080}, http.StatusCreated, nil)
	})
	t.Logf("%d VIPs, pools and %d members created through the API in %v", nVIPs, nVIPs*perPool, time.Since(created).Round(time.Millisecond))

	b := newBrowser(t)
	b.run("open the dashboard", chromedp.Navigate("http://"+lb.APIAddr+"/dashboard/"))
	b.waitJS("every pool shows counters", `sdnlbPerf.firstRender > 0 && sdnlbPerf.allStats !== null`)
	if n := evalJS[int](b, `document.querySelectorAll("article.vip").length`); n != nVIPs {
		t.Fatalf("%d VIP cards, want %d", n, nVIPs)
	}
	if n := evalJS[int](b, `document.querySelectorAll(".pool tbody tr").length`); n != 0 {
		t.Errorf("%d member rows built with %d members, want the lists collapsed", n, nVIPs*perPool)
	}
	// Wait for a round of drawing: the charts on screen, not the others.
	b.waitJS("charts drawn", `sdnlbPerf.drawMs.length > 1`)
	drawn := evalJS[int](b, `document.querySelectorAll("svg.chart[data-points]").length`)
	if drawn == 0 || drawn >= 3*nVIPs {
		t.Errorf("%d charts drawn of %d, want those on screen", drawn, 3*nVIPs)
	}
	type figures struct {
		FirstRender, AllStats float64
		Stats, Draw, Render   []float64
		Events, Nodes         int
		Heap                  float64
	}
	const read = `({ firstRender: sdnlbPerf.firstRender, allStats: sdnlbPerf.allStats, stats: sdnlbPerf.statsMs,
		draw: sdnlbPerf.drawMs, render: sdnlbPerf.renderMs, events: sdnlbPerf.statsEvents,
		nodes: document.getElementsByTagName("*").length, heap: performance.memory ? performance.memory.usedJSHeapSize : 0 })`
	load := evalJS[figures](b, read)

	// Five pools opened, then a member of each of ten pools drained: each
	// drain is one stats event for its pool and one configuration reload.
	for i := 0; i < 5; i++ {
		b.run("open a member list", chromedp.Click(chromedp.CSS(fmt.Sprintf(`.pool[data-id="p%03d"] .toggle`, i))))
	}
	b.waitJS("five member lists", fmt.Sprintf(`document.querySelectorAll(".pool tbody tr").length === %d`, 5*perPool))
	for i := 0; i < 10; i++ {
		lb.MustAPI(http.MethodPatch, fmt.Sprintf("/v1/members/m%03d-0", i), map[string]any{"weight": 0}, http.StatusOK, nil)
		time.Sleep(300 * time.Millisecond)
	}
	b.waitText(`tr[data-id="m000-0"] .status`, "DRAINING")
	b.waitJS("ten more stats events", fmt.Sprintf(`sdnlbPerf.statsEvents >= %d`, load.Events+10))
	live := evalJS[figures](b, read)

	// The filter finds one member of the thousand.
	b.run("filter", chromedp.SendKeys(chromedp.CSS(`#filter`), "10.201.55.17"))
	b.waitJS("one VIP shown", `[...document.querySelectorAll("article.vip")].filter((e) => !e.hidden).length === 1`)
	if rows := evalJS[[]string](b, `[...document.querySelectorAll("article.vip:not([hidden]) tbody tr")].map((r) => r.dataset.id)`); !slices.Equal(rows, []string{"m055-7"}) {
		t.Errorf("the filter 10.201.55.17 shows the rows %v, want m055-7 alone", rows)
	}

	t.Logf("page with %d VIPs and %d members (%d elements, JS heap %.1f MiB):\n"+
		"  first render painted %.0f ms after navigation (its script %.0f ms), every pool's counters in the page at %.0f ms\n"+
		"  one stats event (all pools at once, collapsed): %s\n"+
		"  one stats event (pool with its list open, a member drained): %s\n"+
		"  configuration render after a change: %s\n"+
		"  one round of drawing the %d charts on screen: %s",
		nVIPs, nVIPs*perPool, live.Nodes, live.Heap/(1<<20), load.FirstRender, load.Render[0], load.AllStats,
		summary(load.Stats), summary(live.Stats[len(load.Stats):]), summary(live.Render[len(load.Render):]), drawn, summary(live.Draw))
}

// parallel runs f(0..n-1) on four goroutines.
func parallel(t *testing.T, n int, f func(i int)) {
	t.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 4; w++ {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

// summary gives the median, 90th percentile and maximum of ms figures.
func summary(ms []float64) string {
	if len(ms) == 0 {
		return "none"
	}
	s := slices.Sorted(slices.Values(ms))
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return strings.TrimSpace(fmt.Sprintf("median %.2f ms, p90 %.2f ms, max %.2f ms (%d)", at(0.5), at(0.9), s[len(s)-1], len(s)))
}
