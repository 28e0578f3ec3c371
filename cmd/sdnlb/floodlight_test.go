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

// mustCurl runs curl and fails the test unless it answers 200.
func mustCurl(t *testing.T, m *Main, method, path, body string) string {
	t.Helper()
	status, out := curl(t, m, method, path, body)
	if status != http.StatusOK {
		t.Fatalf("%s %s %s: status %d: %s", method, path, body, status, out)
	}
	return strings.TrimSuffix(out, "\n")
}

// A VIP posted without a protocol and a pool without lb_method, as a curl
// line may leave them out, show as Floodlight shows them: protocol "0"
// (every protocol) and "Invalid Method"; /v1 shows ANY and the method the
// pool balances by, ROUND_ROBIN.
func TestFloodlight_WhatCurlLeavesOut(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	if out := mustCurl(t, m, "POST", "/vips/", `{"id":"1","name":"vip1","address":"10.0.0.100","port":"80"}`); out !=
		`{"name":"vip1","id":"1","address":"10.0.0.100","protocol":"0","port":"80"}` {
		t.Errorf("VIP without protocol: %s", out)
	}
	if out := mustCurl(t, m, "POST", "/pools/", `{"id":"1","name":"pool1","vip_id":"1"}`); out !=
		`{"id":"1","name":"pool1","vipId":"1","lbMethod":"Invalid Method"}` {
		t.Errorf("pool without lb_method: %s", out)
	}
	mustCurl(t, m, "POST", "/members/", `{"id":"1","address":"10.0.0.1","port":"80","pool_id":"1"}`)
	if out := mustCurl(t, m, "GET", "/pools/1/", ""); out !=
		`[{"id":"1","name":"pool1","vipId":"1","lbMethod":"Invalid Method","poolMembers":"1"}]` {
		t.Errorf("pool read back: %s", out)
	}
	var vip struct {
		Protocol string `json:"protocol"`
		PoolID   string `json:"pool_id"`
	}
	call(t, m, "GET", "/v1/vips/1", nil, http.StatusOK, &vip)
	var pool struct {
		LBMethod string `json:"lb_method"`
		Protocol string `json:"protocol"`
	}
	call(t, m, "GET", "/v1/pools/1", nil, http.StatusOK, &pool)
	if vip.Protocol != "ANY" || vip.PoolID != "1" || pool.LBMethod != "ROUND_ROBIN" || pool.Protocol != "ANY" {
		t.Errorf("/v1 shows VIP %+v, pool %+v; want ANY with pool 1, ROUND_ROBIN ANY", vip, pool)
	}
	// Another VIP on the address could never be reached: refused.
	if status, out := curl(t, m, "POST", "/vips/", `{"id":"2","protocol":"tcp","address":"10.0.0.100","port":"443"}`); status != http.StatusConflict {
		t.Errorf("a TCP VIP on the address of a VIP of every protocol: %d %s", status, out)
	}
}

// A setup script edited and run again replaces what it posts, as
// Floodlight's resources, maps by id, do; /v1 keeps 409 for a POST of an
// id that exists.
func TestFloodlight_SetupScriptRunAgain(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	script := func(vipPort, method, weight2 string) {
		t.Helper()
		mustCurl(t, m, "POST", "/vips/", `{"id": "1", "name":"vip1", "protocol":"tcp","address":"10.0.0.100","port":"`+vipPort+`"}`)
		mustCurl(t, m, "POST", "/pools/", `{"id": "1", "name":"pool1", "protocol":"tcp", "lb_method":"`+method+`","vip_id":"1"}`)
		mustCurl(t, m, "POST", "/members/", `{"id": "1", "address":"10.0.0.1", "pool_id":"1","weight":"1"}`)
		mustCurl(t, m, "POST", "/members/", `{"id": "2", "address":"10.0.0.2", "pool_id":"1","weight":"`+weight2+`"}`)
		mustCurl(t, m, "POST", "/pools/1/health_monitors", `{"id": "1", "name":"monitor1","pool_id":"1"}`)
	}
	script("80", "RR", "1")
	script("8080", "WRR", "5")
	if out := mustCurl(t, m, "GET", "/vips/1", ""); out != `[{"name":"vip1","id":"1","address":"10.0.0.100","protocol":"6","port":"8080"}]` {
		t.Errorf("VIP after the second run: %s", out)
	}
	if out := mustCurl(t, m, "GET", "/pools/1", ""); out !=
		`[{"id":"1","name":"pool1","vipId":"1","lbMethod":"Weighted Round-Robin","poolMembers":"1","poolMembers":"2"}]` {
		t.Errorf("pool after the second run: %s", out)
	}
	var member struct{ Weight int }
	call(t, m, "GET", "/v1/members/2", nil, http.StatusOK, &member)
	if member.Weight != 5 {
		t.Errorf("member 2 weighs %d after the second run, want 5", member.Weight)
	}
	call(t, m, "POST", "/v1/vips", map[string]any{"id": "1", "address": "10.0.0.101", "protocol": "TCP", "port": 80}, http.StatusConflict, nil)
}
