package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The shipped Grafana dashboard queries only series that a running sdnlb
// with a monitored member exports.
func TestGrafanaDashboard_NamesExportedSeries(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	call(t, m, "POST", "/v1/vips", map[string]any{"id": "web", "address": "10.0.0.100", "protocol": "TCP", "port": 80}, 201, nil)
	call(t, m, "POST", "/v1/pools", map[string]any{"id": "web", "vip_id": "web"}, 201, nil)
	// TEST-NET-1: the probes fail, which is all the series need.
	call(t, m, "POST", "/v1/members", map[string]any{"id": "m1", "pool_id": "web", "address": "192.0.2.1", "port": 80}, 201, nil)
	call(t, m, "POST", "/v1/monitors", map[string]any{"id": "tcp", "type": "TCP", "delay": 0.1, "timeout": 0.05, "max_retries": 1}, 201, nil)
	call(t, m, "POST", "/v1/pools/web/monitors", map[string]any{"monitor_id": "tcp"}, 204, nil)

	exported := map[string]bool{}
	for deadline := time.Now().Add(10 * time.Second); !exported["sdnlb_member_check_duration_seconds"]; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no probe in 10 s; exported: %v", exported)
		}
		resp, err := http.Get("http://" + m.APIAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
				exported[strings.Fields(name)[0]] = true
			}
		}
	}

	data, err := os.ReadFile("../../deploy/grafana/sdnlb.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	series := regexp.MustCompile(`sdnlb_[a-z_]+`)
	queries := 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			queries++
			for _, name := range series.FindAllString(target.Expr, -1) {
				if !exported[name] {
					t.Errorf("panel %q queries %s, which sdnlb does not export", p.Title, name)
				}
			}
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
}
