package main

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// mustRunMonitored starts a node named id with a VIP, a pool and a member
// under a TCP monitor, and returns it once /metrics shows a probe, so
// that every kind of series is exported: the Go and process collectors,
// the API's, the controller's, the snapshot's, the health engine's and
// the cluster's.
func mustRunMonitored(tb testing.TB, id string) (*Main, map[string]*dto.MetricFamily) {
	tb.Helper()
	m := MustRunMain(tb, filepath.Join(tb.TempDir(), "sdnlb.db"), func(c *Config) { c.NodeID = id })
	call(tb, m, "POST", "/v1/vips", map[string]any{"id": "web", "address": "10.0.0.100", "protocol": "TCP", "port": 80}, 201, nil)
	call(tb, m, "POST", "/v1/pools", map[string]any{"id": "web", "vip_id": "web"}, 201, nil)
	// TEST-NET-1: the probes fail, which is all the series need.
	call(tb, m, "POST", "/v1/members", map[string]any{"id": "m1", "pool_id": "web", "address": "192.0.2.1", "port": 80}, 201, nil)
	call(tb, m, "POST", "/v1/monitors", map[string]any{"id": "tcp", "type": "TCP", "delay": 0.1, "timeout": 0.05, "max_retries": 1}, 201, nil)
	call(tb, m, "POST", "/v1/pools/web/monitors", map[string]any{"monitor_id": "tcp"}, 204, nil)

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		families := scrape(tb, m)
		if families["sdnlb_member_check_duration_seconds"] != nil {
			return m, families
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no probe in 10 s; exported: %d families", len(families))
		}
	}
}

// scrape parses m's /metrics.
func scrape(tb testing.TB, m *Main) map[string]*dto.MetricFamily {
	tb.Helper()
	resp, err := http.Get("http://" + m.APIAddr() + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		tb.Fatalf("parse /metrics: %v", err)
	}
	return families
}

// Every series a node exports carries its id as the node label, also on
// SQLite, so that a cluster's nodes can be summed or told apart.
func TestMetrics_NodeLabel(t *testing.T) {
	_, families := mustRunMonitored(t, "lb-1")
	for _, want := range []string{"go_goroutines", "process_start_time_seconds", "sdnlb_http_requests_total",
		"sdnlb_controller_switches", "sdnlb_member_up", "sdnlb_member_connections_total", "sdnlb_vip_active_connections",
		"sdnlb_member_health_up", "sdnlb_health_probes_total", "sdnlb_cluster_leader", "sdnlb_cluster_nodes"} {
		if families[want] == nil {
			t.Errorf("/metrics has no %s", want)
		}
	}
	for name, f := range families {
		for _, metric := range f.GetMetric() {
			nodes := 0
			for _, l := range metric.GetLabel() {
				if l.GetName() == "node" {
					nodes++
					if l.GetValue() != "lb-1" {
						t.Errorf("%s: node=%q, want lb-1", name, l.GetValue())
					}
				}
			}
			if nodes != 1 {
				t.Errorf("%s %v: %d node labels, want 1", name, metric.GetLabel(), nodes)
			}
		}
	}
}
