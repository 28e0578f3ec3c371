package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// curl sends what Floodlight's load_balancer.py runs through os.popen:
// `curl -X METHOD [-d BODY] URL`, where -d labels the body
// application/x-www-form-urlencoded.
func curl(t *testing.T, m *Main, method, path, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://"+m.APIAddr()+"/quantum/v1.0"+path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", "curl/7.88.1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// Every load-balancer action of Floodlight's load_balancer.py, replayed as
// the script sends it (its statistics actions address Floodlight's
// statistics module, which sdnlb does not have).
func TestFloodlight_LoadBalancerPy(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	steps := []struct{ action, method, path, body string }{
		{"addVipPool (vip)", "POST", "/vips/", `{"id": "1", "name":"vip1", "protocol":"tcp","address":"10.0.0.100"}`},
		{"addVipPool (pool)", "POST", "/pools/", `{"id": "1", "name":"pool1", "protocol":"tcp", "lb_method":"RR","vip_id":"1"}`},
		{"addMemberToPool", "POST", "/members/", `{"id": "1", "address":"10.0.0.1", "pool_id":"1","weight":"1"}`},
		{"addMemberToPool", "POST", "/members/", `{"id": "2", "address":"10.0.0.2", "pool_id":"1","weight":"1"}`},
		{"addMonitorToPool", "POST", "/pools/1/health_monitors", `{"id": "1", "name":"monitor1","pool_id":"1"}`},
		{"updateMemberWeight", "POST", "/members/1/3", ""},
		{"setPriorityToMember", "POST", "/pools/1/members/2", ""},
		{"setMonitorsPeriod", "POST", "/health_monitors/monitors/10", ""},
		{"listVips", "GET", "/vips/", ""},
		{"listPools", "GET", "/pools/", ""},
		{"listMembers", "GET", "/members/", ""},
		{"listMonitors", "GET", "/health_monitors/", ""},
		{"disableMonitors", "POST", "/health_monitors/disable/", ""},
		{"enableMonitors", "POST", "/health_monitors/enable/", ""},
		{"listPoolStatistics", "GET", "/pools/1/stats", ""},
		{"deleteMember", "DELETE", "/members/2", ""},
		{"deleteMonitor", "DELETE", "/health_monitors/1", ""},
		{"deleteVipPool (vip)", "DELETE", "/vips/1", ""},
		{"deleteVipPool (pool)", "DELETE", "/pools/1", ""},
	}
	for _, st := range steps {
		status, body := curl(t, m, st.method, st.path, st.body)
		if status >= 300 {
			t.Errorf("%s: %s %s: status %d: %s", st.action, st.method, st.path, status, body)
		}
	}
}
