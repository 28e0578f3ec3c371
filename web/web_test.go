package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/web"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	for path, wants := range map[string][]string{
		"/": {"<title>sdnlb</title>", `<script src="series.js">`, `<script src="chart.js">`, `<script src="topology.js">`,
			`<script src="app.js">`, `id="cluster"`, `id="bgp"`, `id="topology-map"`, `id="filter"`, `class="by-node"`},
		"/app.js": {"/v1/events", "pool.lb_method", "pool.dispatch", "pool.forwarding", "/v1/switches", "askToken", "showFieldErrors",
			"/v1/stats?watch=true", "/v1/cluster", "/v1/bgp", "/v1/topology", "applyFilter", "IntersectionObserver", "const hostPort",
			"stats_recorded_at", "topology_recorded_at", "function renderByNode"},
		"/series.js":   {"class Track", "WINDOW_S = 900", "constructor(window = WINDOW_S)"},
		"/chart.js":    {"function drawChart"},
		"/topology.js": {"function drawTopology", "esc(h.address)", "top.omitted"},
		"/style.css":   {".vip", "svg.chart"},
	} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			for _, want := range wants {
				if !strings.Contains(string(body), want) {
					t.Errorf("body without %q", want)
				}
			}
		})
	}
}
