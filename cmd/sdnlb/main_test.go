package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// MustRunMain starts the whole service on ":0" addresses over the database
// file db, with the settings each of configure changes, and closes it when
// the test ends.
func MustRunMain(tb testing.TB, db string, configure ...func(*Config)) *Main {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.APIAddr, cfg.OpenFlowAddr, cfg.DB = "127.0.0.1:0", "127.0.0.1:0", db
	for _, c := range configure {
		c(&cfg)
	}
	m := NewMain(cfg, nil)
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

// call sends a JSON request and decodes a JSON answer into out (when not nil).
func call(tb testing.TB, m *Main, method, path string, body any, wantStatus int, out any) {
	tb.Helper()
	var status int
	var data string
	if body != nil {
		b, _ := json.Marshal(body)
		status, data = send(tb, m, method, path, "application/json", string(b))
	} else {
		status, data = send(tb, m, method, path, "", "")
	}
	if status != wantStatus {
		tb.Fatalf("%s %s: status %d, want %d: %s", method, path, status, wantStatus, data)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(data), out); err != nil {
			tb.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

// send sends body ("" for none) as contentType and returns the status and
// the answer.
func send(tb testing.TB, m *Main, method, path, contentType, body string) (int, string) {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, "http://"+m.APIAddr()+path, rd)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

type object struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	Weight  int    `json:"weight"`
	Status  string `json:"status"`
}

// mustCreatePool creates a VIP on 10.0.0.100:port and a pool for it.
func mustCreatePool(tb testing.TB, m *Main, port int) (vip, pool object) {
	tb.Helper()
	call(tb, m, "POST", "/v1/vips", map[string]any{"name": "web", "address": "10.0.0.100", "protocol": "TCP", "port": port}, 201, &vip)
	call(tb, m, "POST", "/v1/pools", map[string]any{"name": "web", "vip_id": vip.ID, "lb_method": "ROUND_ROBIN"}, 201, &pool)
	return vip, pool
}

func TestMain_Persistence(t *testing.T) {
	db := filepath.Join(t.TempDir(), "sdnlb.db")
	m := MustRunMain(t, db)
	vip, pool := mustCreatePool(t, m, 80)
	var member object
	call(t, m, "POST", "/v1/members", map[string]any{"pool_id": pool.ID, "address": "10.0.0.1", "port": 80, "weight": 7}, 201, &member)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m = MustRunMain(t, db)
	var got object
	call(t, m, "GET", "/v1/vips/"+vip.ID, nil, 200, &got)
	if got.Address != "10.0.0.100" {
		t.Errorf("vip after restart: %+v", got)
	}
	call(t, m, "GET", "/v1/members/"+member.ID, nil, 200, &got)
	if got.Weight != 7 || got.Status != "NO_MONITOR" {
		t.Errorf("member after restart: %+v", got)
	}
}

func TestMain_ConcurrentWrites(t *testing.T) {
	// Up to 200 requests at once from one address: more than a client's
	// share of the connections.
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"), func(c *Config) { c.APIMaxConnsPerClient = c.APIMaxConns })
	_, pool := mustCreatePool(t, m, 80)
	const n = 200
	want := make(map[string]int, n) // address → weight its update set
	for i := range n {
		want[fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)] = i%256 + 1
	}
	var wg sync.WaitGroup
	for addr, weight := range want {
		wg.Go(func() {
			var mb object
			call(t, m, "POST", "/v1/members", map[string]any{"pool_id": pool.ID, "address": addr, "port": 80}, 201, &mb)
			call(t, m, "PATCH", "/v1/members/"+mb.ID, map[string]any{"weight": weight}, 200, nil)
		})
	}
	wg.Wait()
	var list struct {
		Members []object `json:"members"`
	}
	call(t, m, "GET", "/v1/members?limit=1000&pool_id="+pool.ID, nil, 200, &list)
	if len(list.Members) != n {
		t.Fatalf("%d members, want %d", len(list.Members), n)
	}
	for _, mb := range list.Members {
		if mb.Weight != want[mb.Address] {
			t.Errorf("member %s: weight %d, want %d", mb.Address, mb.Weight, want[mb.Address])
		}
	}
}

// The controller reads its first configuration in the background, so
// /readyz may answer 503 for a moment after Run; it must turn 200.
func TestMain_Readyz(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	call(t, m, "GET", "/healthz", nil, 200, nil)
	waitOK(t, "http://"+m.APIAddr()+"/readyz")
}

// waitOK waits, at most 10 s, until url answers 200. Some answers follow
// a moment after the event they depend on: /readyz once the controller
// has loaded its first configuration, a pool's stats once the
// controller's snapshot of the configuration holds the pool.
func waitOK(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: still %d after 10 s", url, resp.StatusCode)
		}
	}
}

// waitStatsMembers waits, at most 10 s, until the stats of pool list the
// members: the controller follows the store through the change feed, so
// what the API has just written reaches the stats a moment later.
func waitStatsMembers(t *testing.T, m *Main, pool string, members ...string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		status, data := send(t, m, "GET", "/v1/pools/"+pool+"/stats", "", "")
		var stats sdnlb.PoolStats
		if status == http.StatusOK && json.Unmarshal([]byte(data), &stats) == nil {
			listed := 0
			for _, ms := range stats.Members {
				if slices.Contains(members, ms.MemberID) {
					listed++
				}
			}
			if listed == len(members) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool %s stats after 10 s: %d %s, want members %v", pool, status, data, members)
		}
	}
}

// TestMain_DBUnreachable starts with a PostgreSQL URL nothing answers: it
// must fail at once, on one line that names the database and not its
// password.
func TestMain_DBUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"--db", "postgres://sdnlb:s3cret@" + addr + "/sdnlb", "--api-addr", "127.0.0.1:0", "--openflow-addr", "127.0.0.1:0"}
	start := time.Now()
	err = run(args, func(string) string { return "" }, io.Discard, io.Discard)
	if err == nil {
		t.Fatal("started")
	}
	msg := err.Error()
	want := "open db postgres://sdnlb:xxxxx@" + addr + "/sdnlb: failed to connect"
	if !strings.HasPrefix(msg, want) || strings.ContainsAny(msg, "\n\r") || strings.Contains(msg, "s3cret") {
		t.Fatalf("err = %q, want one line starting %q", msg, want)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("failed after %v", d)
	}
}

// TestMain_APIServerLimits checks that the service serves the API with the
// timeouts, the connection cap and the Host check.
func TestMain_APIServerLimits(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	if s := m.httpServer; s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 {
		t.Errorf("timeouts: header %v, read %v, write %v, idle %v", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout)
	}
	if _, ok := m.apiLn.(interface{ Accept() (net.Conn, error) }); !ok || fmt.Sprintf("%T", m.apiLn) == "*net.TCPListener" {
		t.Errorf("the API listener %T has no connection cap", m.apiLn)
	}
	req, _ := http.NewRequest("GET", "http://"+m.APIAddr()+"/v1/vips", nil)
	req.Host = "rebound.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host rebound.example: status %d, want 403", resp.StatusCode)
	}
}
