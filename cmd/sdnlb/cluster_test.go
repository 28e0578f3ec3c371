package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// runNode starts a node named id over the database db; stop closes it
// (also when the test ends, if not yet).
func runNode(tb testing.TB, db, id string) (m *Main, stop func()) {
	tb.Helper()
	cfg := DefaultConfig()
	cfg.APIAddr, cfg.OpenFlowAddr, cfg.DB, cfg.NodeID = "127.0.0.1:0", "127.0.0.1:0", db, id
	m = NewMain(cfg, nil)
	if err := m.Run(context.Background()); err != nil {
		m.Close()
		tb.Fatal(err)
	}
	closed := false
	stop = func() {
		if !closed {
			closed = true
			m.Close()
		}
	}
	tb.Cleanup(stop)
	return m, stop
}

// waitLeader waits, at most 3 s, until m leads (or follows) and returns
// how long that took.
func waitLeader(tb testing.TB, m *Main, leader bool) time.Duration {
	tb.Helper()
	start := time.Now()
	timeout := time.After(3 * time.Second)
	for {
		s, changed := m.Elector.State()
		if s.Leader == leader {
			return time.Since(start)
		}
		select {
		case <-changed:
		case <-timeout:
			tb.Fatalf("node %s: leader=%v after 3s, want %v", m.Config.NodeID, s.Leader, leader)
		}
	}
}

// metric sums the samples of a metric family in m's /metrics.
func metric(tb testing.TB, m *Main, name string) (sum float64, found bool) {
	tb.Helper()
	resp, err := http.Get("http://" + m.APIAddr() + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			tb.Fatalf("%s: %v", line, err)
		}
		sum, found = sum+v, true
	}
	return sum, found
}

func TestMain_Cluster(t *testing.T) {
	// Two nodes on one database: on SQLite the lease works across
	// processes too, though the change feed does not.
	db := filepath.Join(t.TempDir(), "sdnlb.db")
	a, stopA := runNode(t, db, "a")
	waitLeader(t, a, true)
	b, _ := runNode(t, db, "b")
	waitLeader(t, b, false)

	t.Run("API", func(t *testing.T) {
		var c sdnlb.Cluster
		call(t, b, "GET", "/v1/cluster", nil, 200, &c)
		if c.Leader != "a" || c.Self != "b" || len(c.Nodes) != 2 {
			t.Fatalf("cluster: %+v", c)
		}
		for i, want := range []struct {
			node *Main
			role sdnlb.NodeRole
		}{{a, sdnlb.RoleLeader}, {b, sdnlb.RoleFollower}} {
			n := c.Nodes[i]
			if n.ID != want.node.Config.NodeID || n.Role != want.role || n.APIAddr != want.node.APIAddr() ||
				n.OpenFlowAddr != want.node.OpenFlowAddr() || time.Since(n.LastSeen) > 5*time.Second {
				t.Errorf("node %d: %+v", i, n)
			}
		}
	})
	t.Run("Metrics", func(t *testing.T) {
		for _, c := range []struct {
			node   *Main
			leader float64
		}{{a, 1}, {b, 0}} {
			if v, ok := metric(t, c.node, "sdnlb_cluster_leader"); !ok || v != c.leader {
				t.Errorf("%s: sdnlb_cluster_leader %v (%v), want %v", c.node.Config.NodeID, v, ok, c.leader)
			}
			if v, _ := metric(t, c.node, "sdnlb_cluster_nodes"); v != 2 {
				t.Errorf("%s: sdnlb_cluster_nodes %v, want 2", c.node.Config.NodeID, v)
			}
		}
	})

	// Monitors probe only on the leader. The member is a documentation
	// address: every probe fails, and counts.
	_, pool := mustCreatePool(t, a, 80)
	call(t, a, "POST", "/v1/monitors", map[string]any{"id": "tcp", "type": "TCP", "delay": 0.1, "timeout": 0.05, "max_retries": 1}, 201, nil)
	call(t, a, "POST", "/v1/pools/"+pool.ID+"/monitors", map[string]any{"monitor_id": "tcp"}, 204, nil)
	call(t, a, "POST", "/v1/members", map[string]any{"pool_id": pool.ID, "address": "192.0.2.10", "port": 80}, 201, nil)
	probes := func(m *Main) float64 { v, _ := metric(t, m, "sdnlb_health_probes_total"); return v }
	deadline := time.Now().Add(3 * time.Second)
	for probes(a) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := probes(a); n < 3 {
		t.Fatalf("the leader ran %v probes in 3s", n)
	}
	if n := probes(b); n != 0 {
		t.Fatalf("the follower ran %v probes", n)
	}

	// The leader goes: the follower takes over, and the monitors with it.
	stopA()
	took := waitLeader(t, b, true)
	t.Logf("takeover after a clean stop: %v", took)
	if took > 2*time.Second {
		t.Errorf("takeover took %v, want under 2s", took)
	}
	deadline = time.Now().Add(3 * time.Second)
	for probes(b) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := probes(b); n < 3 {
		t.Fatalf("the new leader ran %v probes in 3s", n)
	}
	var c sdnlb.Cluster
	call(t, b, "GET", "/v1/cluster", nil, 200, &c)
	if c.Leader != "b" {
		t.Fatalf("cluster after takeover: %+v", c)
	}
}

func TestConfig_NodeID(t *testing.T) {
	t.Run("Default", func(t *testing.T) {
		m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
		_, port, _ := net.SplitHostPort(m.APIAddr())
		if id := m.Elector.Node().ID; !strings.HasSuffix(id, ":"+port) || len(id) <= len(port)+1 {
			t.Fatalf("default node id %q, want host:%s", id, port)
		}
		waitLeader(t, m, true) // one node on SQLite leads
	})
	t.Run("ErrInUse", func(t *testing.T) {
		// A second process given a live node's id does not start; the
		// first keeps leading.
		db := filepath.Join(t.TempDir(), "sdnlb.db")
		a, _ := runNode(t, db, "a")
		waitLeader(t, a, true)
		cfg := DefaultConfig()
		cfg.APIAddr, cfg.OpenFlowAddr, cfg.DB, cfg.NodeID = "127.0.0.1:0", "127.0.0.1:0", db, "a"
		second := NewMain(cfg, nil)
		err := second.Run(context.Background())
		second.Close()
		if err == nil || !strings.Contains(err.Error(), `node id "a" is in use`) || !strings.Contains(err.Error(), a.APIAddr()) {
			t.Fatalf("second node a: %v, want it refused naming the first", err)
		}
		if !a.Elector.IsLeader() {
			t.Fatal("the first node a stopped leading")
		}
	})
	t.Run("Restart", func(t *testing.T) {
		// A node restarted under its id waits out its previous process's
		// row, then leads again.
		db := filepath.Join(t.TempDir(), "sdnlb.db")
		a, stopA := runNode(t, db, "a")
		waitLeader(t, a, true)
		stopA()
		again, _ := runNode(t, db, "a")
		waitLeader(t, again, true)
	})
	t.Run("ErrControlCharacter", func(t *testing.T) {
		_, err := LoadConfig([]string{"--node-id", "a\nb"}, func(string) string { return "" }, nil)
		if err == nil || !strings.Contains(err.Error(), "--node-id") {
			t.Fatalf("err = %v, want one naming --node-id", err)
		}
	})
}
