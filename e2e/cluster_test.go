//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/internal/pgtest"
)

// startPostgres starts a private PostgreSQL for the test (or uses the one
// SDNLB_TEST_POSTGRES names) and returns the URL of a fresh database.
func startPostgres(tb testing.TB) string {
	tb.Helper()
	env := os.Getenv("SDNLB_TEST_POSTGRES")
	if env == "skip" {
		tb.Skip("SDNLB_TEST_POSTGRES=skip: no PostgreSQL for the cluster tests")
	}
	pg, err := pgtest.Start(env)
	if err != nil {
		tb.Fatalf("PostgreSQL: %v (install the Debian postgresql package, as scripts/test.sh does)", err)
	}
	tb.Cleanup(pg.Stop)
	return pg.NewDatabase(tb)
}

// clusterLeader is the leader GET /v1/cluster names on p, "" when the
// request fails.
func clusterLeader(p *sdnlbProc) string {
	c, _ := clusterOf(p)
	return c.Leader
}

// clusterOf is GET /v1/cluster on p; ok is false when the request fails.
func clusterOf(p *sdnlbProc) (c sdnlb.Cluster, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	status, data, err := p.Do(ctx, http.MethodGet, "/v1/cluster", nil)
	return c, err == nil && status == http.StatusOK && json.Unmarshal(data, &c) == nil
}

// waitLeader waits until p says leader leads and returns how long it took.
func waitLeader(tb testing.TB, p *sdnlbProc, leader string, timeout time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	got := ""
	for i := 0; i < 2000 && time.Since(start) < timeout; i++ {
		if got = clusterLeader(p); got == leader {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatalf("leader is %q after %v, want %q", got, timeout, leader)
	return 0
}

// roles is the OpenFlow role Open vSwitch shows for each controller
// target of the bridge.
func roles(sw *Switch) map[string]string {
	out := map[string]string{}
	ids := strings.Fields(strings.NewReplacer("[", "", "]", "", ",", " ").Replace(sw.Vsctl("get", "bridge", sw.Name, "controller")))
	if len(ids) == 0 {
		return out
	}
	args := append([]string{"--format=csv", "--data=bare", "--no-headings", "--columns=target,role", "list", "controller"}, ids...)
	for _, rec := range strings.Split(sw.Vsctl(args...), "\n") {
		target, role, ok := strings.Cut(strings.TrimSpace(rec), ",")
		if ok {
			out[strings.Trim(target, `"`)] = role
		}
	}
	return out
}

// waitMaster waits until OVS shows target as the one master (the others
// slave, or no role while disconnected); OVS refreshes the column every
// few seconds.
func waitMaster(tb testing.TB, sw *Switch, target string, timeout time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	var got map[string]string
	for i := 0; i < 1000 && time.Since(start) < timeout; i++ {
		got = roles(sw)
		masters := 0
		for _, r := range got {
			if r == "master" {
				masters++
			}
		}
		if got[target] == "master" && masters == 1 {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("controller roles after %v: %v, want %s the one master", timeout, got, target)
	return 0
}

// setControllers points the bridge at the controller target alone, in
// secure fail mode.
func setControllers(sw *Switch, target string) {
	sw.Vsctl("--", "--id=@c", "create", "controller", `target="`+target+`"`, "max_backoff=1000", "connection_mode=out-of-band",
		"--", "set", "bridge", sw.Name, "controller=@c", "fail_mode=secure", "protocols="+sw.Protocol)
}

// addController points the bridge at target too.
func addController(sw *Switch, target string) {
	sw.Vsctl("--", "--id=@c", "create", "controller", `target="`+target+`"`, "max_backoff=1000", "connection_mode=out-of-band",
		"--", "add", "bridge", sw.Name, "controller", "@c")
}

// newClusterBed starts a private PostgreSQL, nodes a (the leader) and b
// on it, two clients and three member hosts, and points the bridge at a,
// which the leader then assigns the bridge to, and at b; it returns once
// OVS shows a MASTER and b SLAVE.
func newClusterBed(t *testing.T) (b *lbBed, nodeA, nodeB *sdnlbProc, targetA, targetB string) {
	t.Helper()
	dsn := startPostgres(t)
	b = &lbBed{sw: NewSwitch(t)}
	nodeA = startSDNLB(t, "--db", dsn, "--node-id", "a")
	waitLeader(t, nodeA, "a", 5*time.Second)
	nodeB = startSDNLB(t, "--db", dsn, "--node-id", "b")
	b.lb = nodeA
	for i := 0; i < 2; i++ {
		b.clients = append(b.clients, b.sw.AddHost(t, "c"+strconv.Itoa(i+1), b.sw.Addr(byte(1+i))))
	}
	for i := 0; i < 3; i++ {
		b.addMemberHost(t)
	}
	targetA, targetB = "tcp:"+nodeA.OpenFlowAddr, "tcp:"+nodeB.OpenFlowAddr
	setControllers(b.sw, targetA)
	nodeA.WaitSwitches(1, 20*time.Second)
	dumpOnFailure(t, b.sw, nodeB)
	took := waitMaster(t, b.sw, targetA, 15*time.Second)
	// A switch keeps its master while that node lives: b, added, is SLAVE.
	addController(b.sw, targetB)
	nodeB.WaitSwitches(1, 20*time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for r := roles(b.sw); r[targetB] != "slave" || r[targetA] != "master"; r = roles(b.sw) {
		if time.Now().After(deadline) {
			t.Fatalf("roles %v, want a MASTER and b SLAVE", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("OVS shows a MASTER after %v, and b SLAVE", took)
	return b, nodeA, nodeB, targetA, targetB
}

// TestCluster_PausedLeader pauses the leader (SIGSTOP) for longer than the
// lease: the other node takes over, and the paused one, resumed, finds
// itself a follower without acting as leader again: no split brain.
func TestCluster_PausedLeader(t *testing.T) {
	b, nodeA, nodeB, targetA, targetB := newClusterBed(t)
	paused := time.Now()
	nodeA.Pause()
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			nodeA.Resume()
		}
	}
	t.Cleanup(resume)
	t.Logf("b leads %v after a was paused", waitLeader(t, nodeB, "b", 5*time.Second))
	time.Sleep(3*time.Second - time.Since(paused)) // paused twice the lease
	resume()
	resumedAt := time.Now()

	// a, resumed, steps down and follows b.
	t.Logf("a names b the leader %v after it resumed", waitLeader(t, nodeA, "b", 5*time.Second))
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 500 && len(nodeA.LogLines("the lease was not renewed in time")) == 0 && len(nodeA.LogLines("another node holds the lease")) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("a did not log stepping down after it resumed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// a took the lease once, before the pause, and never again.
	if n := len(nodeA.LogLines("took the lease")); n != 1 {
		t.Errorf("a logged taking the lease %d times, want once", n)
	}
	// b stays the one MASTER.
	waitMaster(t, b.sw, targetB, 15*time.Second)
	time.Sleep(time.Second)
	if r := roles(b.sw); r[targetB] != "master" || r[targetA] == "master" {
		t.Fatalf("roles %v a while after a resumed, want b the one master", r)
	}
	if l := clusterLeader(nodeB); l != "b" {
		t.Fatalf("b says the leader is %q", l)
	}
	t.Logf("a resumed %v ago; b is still the one leader and MASTER", time.Since(resumedAt))
}

// ackedWriter creates monitors on the nodes in turn and remembers each one
// a node acknowledged with 201: a write that got a 2xx must survive the
// death of any node.
type ackedWriter struct {
	nodes []*sdnlbProc

	mu       sync.Mutex
	acked    []string
	attempts int
}

// run writes until ctx ends, at most maxWrites times.
func (w *ackedWriter) run(ctx context.Context, maxWrites int) {
	for i := 0; i < maxWrites && ctx.Err() == nil; i++ {
		id := "w" + strconv.Itoa(i)
		body := map[string]any{"id": id, "type": sdnlb.MonitorTCP, "delay": 5, "timeout": 2}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		status, _, err := w.nodes[i%len(w.nodes)].Do(rctx, http.MethodPost, "/v1/monitors", body)
		cancel()
		w.mu.Lock()
		w.attempts++
		if err == nil && status == http.StatusCreated {
			w.acked = append(w.acked, id)
		}
		w.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// missing lists the acknowledged monitors p cannot read.
func (w *ackedWriter) missing(tb testing.TB, p *sdnlbProc) []string {
	tb.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	var lost []string
	for _, id := range w.acked {
		if status, _ := p.API(http.MethodGet, "/v1/monitors/"+id, nil); status != http.StatusOK {
			lost = append(lost, id)
		}
	}
	return lost
}

// firstAnswer sends requests over new connections from c to url, each
// bounded by timeout, until one is answered or give-up passes, and returns
// when that was.
func firstAnswer(c *Host, url string, timeout time.Duration, giveUp time.Time) (time.Time, error) {
	var err error
	for i := 0; i < 100 && time.Now().Before(giveUp); i++ {
		if _, err = get(c, url, timeout); err == nil {
			return time.Now(), nil
		}
	}
	return time.Time{}, err
}

// TestCluster_Takeover runs two sdnlb nodes on one PostgreSQL, both
// controllers of one bridge: one is MASTER, writes on either are read on
// the other, and when the leader is killed under load the other takes
// over within 2 s while a SWITCH VIP keeps answering, a CONTROLLER VIP
// answers again within 3 s and no acknowledged write is lost; the killed
// node, restarted, rejoins as a follower.
func TestCluster_Takeover(t *testing.T) {
	b, nodeA, nodeB, targetA, targetB := newClusterBed(t)

	// A write on one node is read on the other within 1 s.
	b.vip = nodeA.MustCreateVIP("web", b.sw.Addr(100), sdnlb.ProtocolTCP, vipPort, nil)
	start := time.Now()
	for i := 0; ; i++ {
		if status, _ := nodeB.API(http.MethodGet, "/v1/vips/"+b.vip.ID, nil); status == http.StatusOK {
			break
		}
		if i >= 100 || time.Since(start) > time.Second {
			t.Fatalf("the VIP written on a is not read on b after %v", time.Since(start))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("a write on a was read on b after %v", time.Since(start))

	b.pool = nodeB.MustCreatePool("web", b.vip, sdnlb.RoundRobin, sdnlb.DispatchSwitch)
	for _, h := range b.members {
		b.mems = append(b.mems, nodeB.MustCreateMember(b.pool, h.IP, memberPort))
	}
	// A second VIP whose connections the controller dispatches, to the
	// same hosts on another port.
	ctlVIP := nodeA.MustCreateVIP("ctl", b.sw.Addr(101), sdnlb.ProtocolTCP, vipPort, nil)
	ctlPool := nodeA.MustCreatePool("ctl", ctlVIP, sdnlb.RoundRobin, sdnlb.DispatchController)
	for i, h := range b.members {
		h.ServeHTTP(t, memberPort+1, b.servers[i].Name)
		nodeA.MustCreateMember(ctlPool, h.IP, memberPort+1)
	}
	nodeA.WaitPoolMembers(b.pool.ID, len(b.members), 10*time.Second)
	nodeA.WaitPoolMembers(ctlPool.ID, len(b.members), 10*time.Second)
	b.waitBuckets(t, len(b.members), 10*time.Second)
	b.url = "http://" + net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort)) + "/"
	ctlURL := "http://" + net.JoinHostPort(ctlVIP.Address, strconv.Itoa(vipPort)) + "/"
	spread(t, b.clients, b.url, 5) // every client knows the VIPs' MACs
	spread(t, b.clients, ctlURL, 5)

	// Load: every client fetches the SWITCH VIP over new connections
	// without pause, and a writer creates objects on both nodes in turn.
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	ctx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range b.clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := get(c, b.url, 2*time.Second); err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
				} else {
					ok.Add(1)
				}
			}
		})
	}
	writer := &ackedWriter{nodes: []*sdnlbProc{nodeA, nodeB}}
	wg.Go(func() { writer.run(ctx, 5000) })
	defer func() { stopLoad(); wg.Wait() }()
	time.Sleep(time.Second)

	before := ok.Load()
	killed := time.Now()
	nodeA.Kill()
	leaderAfter := waitLeader(t, nodeB, "b", 5*time.Second)
	t.Logf("takeover: b leads %v after a was killed", leaderAfter)
	// A new connection to the CONTROLLER VIP needs a MASTER's decision.
	answered, err := firstAnswer(b.clients[0], ctlURL, 300*time.Millisecond, killed.Add(10*time.Second))
	if err != nil {
		t.Fatalf("the CONTROLLER VIP did not answer within 10s of the kill: %v", err)
	}
	t.Logf("takeover: the CONTROLLER VIP answers a new connection %v after a was killed", answered.Sub(killed))
	// b's own log says when it asked for MASTER; OVS's role column lags.
	masterAfter := waitMaster(t, b.sw, targetB, 15*time.Second) + leaderAfter
	t.Logf("takeover: OVS shows b MASTER %v after a was killed (OVS refreshes the column every few seconds)", masterAfter)
	// When b had MASTER and had adopted the switch, by its own log.
	lines := nodeB.LogLines("switch taken over as MASTER")
	if len(lines) == 0 {
		t.Fatal("b did not log taking the switch over")
	}
	var rec struct {
		Time time.Time `json:"time"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatalf("b's log line %q: %v", lines[len(lines)-1], err)
	}
	// How long it took is measured (docs/BENCHMARKS.md, "Cluster takeover"),
	// not asserted.
	t.Logf("takeover: b MASTER of the switch, its flows and groups adopted, %v after a was killed", rec.Time.Sub(killed))

	// The killed node, restarted under its id and OpenFlow address,
	// rejoins as a follower and the switch's SLAVE, while the load runs.
	restarted := startSDNLB(t, "--db", nodeA.DB, "--node-id", "a", "--openflow-addr", nodeA.OpenFlowAddr)
	t.Logf("the restarted a names b the leader after %v", waitLeader(t, restarted, "b", 5*time.Second))
	restarted.WaitSwitches(1, 20*time.Second)
	deadline := time.Now().Add(15 * time.Second)
	for r := roles(b.sw); r[targetA] != "slave" || r[targetB] != "master"; r = roles(b.sw) {
		if time.Now().After(deadline) {
			t.Fatalf("roles %v after a restarted, want a SLAVE and b MASTER", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(restarted.LogLines("took the lease")); n != 0 {
		t.Errorf("the restarted a took the lease %d times", n)
	}
	if _, err := firstAnswer(b.clients[1], ctlURL, time.Second, time.Now().Add(5*time.Second)); err != nil {
		t.Errorf("the CONTROLLER VIP after a rejoined: %v", err)
	}

	stopLoad()
	wg.Wait()
	t.Logf("load: %d requests answered (%d since the kill), %d failed, over %v", ok.Load(), ok.Load()-before, failed.Load(), time.Since(killed))
	if failed.Load() > 0 {
		t.Fatalf("the SWITCH VIP stopped answering: %d requests failed, first: %v", failed.Load(), firstErr.Load())
	}
	if ok.Load() == before {
		t.Fatal("no request was answered after the kill")
	}
	// No acknowledged write is lost, as either node reads it.
	t.Logf("writes: %d of %d acknowledged", len(writer.acked), writer.attempts)
	for _, p := range []*sdnlbProc{nodeB, restarted} {
		if lost := writer.missing(t, p); len(lost) > 0 {
			t.Fatalf("%d acknowledged writes are missing: %v", len(lost), lost)
		}
	}
	// The new leader adopted the switch rather than wiping it: the group
	// still spreads over every member.
	if got := b.buckets(t); len(got) != len(b.members) {
		t.Fatalf("after the takeover the group spreads over %v", got)
	}
}

// mastersOf is, by node, the switches GET /v1/cluster on p says it
// masters.
func mastersOf(p *sdnlbProc) map[string][]string {
	c, _ := clusterOf(p)
	out := map[string][]string{}
	for _, n := range c.Nodes {
		out[n.ID] = n.Masters
	}
	return out
}

// waitMastered waits until GET /v1/cluster on p says each node of want
// masters that many switches, and returns what it says.
func waitMastered(tb testing.TB, p *sdnlbProc, want map[string]int, timeout time.Duration) map[string][]string {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var got map[string][]string
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		got = mastersOf(p)
		same := true
		for id, n := range want {
			same = same && len(got[id]) == n
		}
		if same {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("after %v the nodes master %v, want counts %v", timeout, got, want)
	return nil
}

// waitOVSMasters waits until OVS shows every bridge with exactly one
// master, want[target] of them mastered by each target; OVS refreshes the
// role column every few seconds.
func waitOVSMasters(tb testing.TB, bridges []*Switch, want map[string]int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var shown []map[string]string
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		shown = shown[:0]
		got := map[string]int{}
		one := true
		for _, sw := range bridges {
			r := roles(sw)
			shown = append(shown, r)
			masters := 0
			for target, role := range r {
				if role == "master" {
					masters++
					got[target]++
				}
			}
			one = one && masters == 1
		}
		if one && maps.Equal(got, want) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("after %v OVS shows the roles %v, want one master a bridge, %v of them by target", timeout, shown, want)
}

// takenOver is, for each switch of dpids, when p logged taking it over
// as MASTER after since; a switch it did not is missing.
func takenOver(tb testing.TB, p *sdnlbProc, dpids []string, since time.Time) map[string]time.Time {
	tb.Helper()
	out := map[string]time.Time{}
	for _, line := range p.LogLines("switch taken over as MASTER") {
		var rec struct {
			Time time.Time `json:"time"`
			DPID string    `json:"dpid"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			tb.Fatalf("log line %q: %v", line, err)
		}
		if rec.Time.After(since) && slices.Contains(dpids, rec.DPID) {
			if _, seen := out[rec.DPID]; !seen {
				out[rec.DPID] = rec.Time
			}
		}
	}
	return out
}

// waitTakenOver waits until p logged taking over every switch of dpids
// after since, and returns how long after since the last one was.
func waitTakenOver(tb testing.TB, p *sdnlbProc, dpids []string, since time.Time, timeout time.Duration) time.Duration {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if got := takenOver(tb, p, dpids, since); len(got) == len(dpids) {
			var last time.Duration
			for _, at := range got {
				last = max(last, at.Sub(since))
			}
			return last
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("after %v the node took over %v of the switches %v", timeout, takenOver(tb, p, dpids, since), dpids)
	return 0
}

// TestCluster_SwitchMasters runs two nodes on one PostgreSQL as the
// controllers of four bridges of one Open vSwitch, each bridge with a
// client and a SWITCH VIP over two members: each node is the MASTER of two
// bridges. Under load, the leader is killed (the other must take the lease
// before it can give itself the switches), then restarted (the switches
// spread again), then killed again as a follower (the leader gives itself
// its switches at once): each time the other node masters every bridge,
// and no request to any VIP fails. The takeover times are logged.
func TestCluster_SwitchMasters(t *testing.T) {
	const nBridges = 4
	dsn := startPostgres(t)
	nodeA := startSDNLB(t, "--db", dsn, "--node-id", "a")
	waitLeader(t, nodeA, "a", 5*time.Second)
	nodeB := startSDNLB(t, "--db", dsn, "--node-id", "b")
	targetA, targetB := "tcp:"+nodeA.OpenFlowAddr, "tcp:"+nodeB.OpenFlowAddr

	first := NewSwitch(t)
	bridges := []*Switch{first}
	for len(bridges) < nBridges {
		bridges = append(bridges, first.AddBridge(t))
	}
	var (
		dpids   []string
		clients []*Host
		urls    []string
	)
	for i, sw := range bridges {
		// The bridges are apart, on one subnet: each takes its own host
		// numbers.
		n := byte(20 * i)
		clients = append(clients, sw.AddHost(t, "c", sw.Addr(n+1)))
		vip := nodeA.MustCreateVIP("web"+strconv.Itoa(i), sw.Addr(n+10), sdnlb.ProtocolTCP, vipPort, nil)
		pool := nodeA.MustCreatePool("web"+strconv.Itoa(i), vip, sdnlb.RoundRobin, sdnlb.DispatchSwitch)
		for j := byte(1); j <= 2; j++ {
			h := sw.AddHost(t, "m"+strconv.Itoa(int(j)), sw.Addr(n+1+j))
			h.ServeHTTP(t, memberPort, "srv"+strconv.Itoa(i)+strconv.Itoa(int(j)))
			nodeA.MustCreateMember(pool, h.IP, memberPort)
		}
		urls = append(urls, "http://"+net.JoinHostPort(vip.Address, strconv.Itoa(vipPort))+"/")
		setControllers(sw, targetA)
		addController(sw, targetB)
		dpids = append(dpids, dpidOf(t, sw))
		dumpOnFailure(t, sw, nodeB)
	}
	nodeA.WaitSwitches(nBridges, 20*time.Second)
	nodeB.WaitSwitches(nBridges, 20*time.Second)
	waitMastered(t, nodeB, map[string]int{"a": 2, "b": 2}, 10*time.Second)
	waitOVSMasters(t, bridges, map[string]int{targetA: 2, targetB: 2}, 15*time.Second)
	for i, c := range clients {
		t.Logf("the VIP of bridge %d answers after %v", i, waitServes(t, c, urls[i], 10*time.Second))
	}

	// Load: each client fetches its bridge's VIP over new connections, a
	// bounded number of times, until the test ends.
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	ctx, stopLoad := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			for n := 0; n < 20000 && ctx.Err() == nil; n++ {
				if _, err := get(c, urls[i], 2*time.Second); err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, fmt.Errorf("bridge %d: %w", i, err))
					}
				} else {
					ok.Add(1)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	defer func() { stopLoad(); wg.Wait() }()
	time.Sleep(time.Second)

	// kill kills node a (process p) and checks that b masters every
	// bridge, logging how long after the kill it had taken the last of a's.
	kill := func(p *sdnlbProc, why string) {
		t.Helper()
		theirs := mastersOf(nodeB)["a"]
		if len(theirs) != 2 {
			t.Fatalf("before the kill a masters %v, want two bridges", theirs)
		}
		before := ok.Load()
		killed := time.Now()
		p.Kill()
		took := waitTakenOver(t, nodeB, theirs, killed, 10*time.Second)
		t.Logf("%s: b MASTER of a's %d bridges, their flows and groups adopted, %v after the kill", why, len(theirs), took)
		waitMastered(t, nodeB, map[string]int{"b": nBridges}, 5*time.Second)
		waitOVSMasters(t, bridges, map[string]int{targetB: nBridges}, 15*time.Second)
		for i := 0; i < 100 && ok.Load() == before; i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if ok.Load() == before {
			t.Fatalf("%s: no request answered after the kill", why)
		}
	}

	kill(nodeA, "the leader killed")

	// a, restarted under its id and OpenFlow address, takes two bridges
	// back: the counts differ by more than one.
	restarted := startSDNLB(t, "--db", dsn, "--node-id", "a", "--openflow-addr", nodeA.OpenFlowAddr)
	restarted.WaitSwitches(nBridges, 20*time.Second)
	waitMastered(t, nodeB, map[string]int{"a": 2, "b": 2}, 10*time.Second)
	waitOVSMasters(t, bridges, map[string]int{targetA: 2, targetB: 2}, 15*time.Second)
	if n := len(restarted.LogLines("took the lease")); n != 0 {
		t.Errorf("the restarted a took the lease %d times", n)
	}

	kill(restarted, "a follower killed")

	stopLoad()
	wg.Wait()
	t.Logf("load: %d requests answered, %d failed", ok.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Fatalf("a SWITCH VIP stopped answering: %d requests failed, first: %v", failed.Load(), firstErr.Load())
	}
}

// topologyOf is GET /v1/topology's hosts on p, as "address dpid port",
// sorted, and its links without what they carry.
func topologyOf(tb testing.TB, p *sdnlbProc) (hosts []string, links []sdnlb.Link) {
	tb.Helper()
	var top sdnlb.Topology
	p.MustAPI(http.MethodGet, "/v1/topology", nil, http.StatusOK, &top)
	for _, h := range top.Hosts {
		hosts = append(hosts, h.Address+" "+h.DPID+" "+h.Port)
	}
	slices.Sort(hosts)
	for _, l := range top.Links {
		links = append(links, sdnlb.Link{Src: l.Src, Dst: l.Dst, Bidirectional: l.Bidirectional})
	}
	return hosts, links
}

// waitTopology waits, a bounded number of times, until GET /v1/topology
// on p shows exactly the hosts and links wanted.
func waitTopology(tb testing.TB, p *sdnlbProc, hosts []string, links []sdnlb.Link, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	var gotHosts []string
	var gotLinks []sdnlb.Link
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if gotHosts, gotLinks = topologyOf(tb, p); slices.Equal(gotHosts, hosts) && slices.Equal(gotLinks, links) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("after %v GET /v1/topology shows hosts %q and links %+v,\nwant hosts %q and links %+v", timeout, gotHosts, gotLinks, hosts, links)
}

// TestCluster_Topology runs two nodes on one PostgreSQL as the controllers
// of four bridges linked in a chain by patch ports, a host on each,
// learning L2 through the controller. Each node masters two bridges, so
// it discovers only the links into them and learns only their hosts; yet
// GET /v1/topology on either shows every link both ways and every host,
// and keeps showing them for longer than a link counts without its LLDP
// frame. Killed, a node's part lapses and the other, master of every
// bridge, shows everything itself.
func TestCluster_Topology(t *testing.T) {
	const nBridges = 4
	dsn := startPostgres(t)
	nodeA := startSDNLB(t, "--db", dsn, "--node-id", "a", "--l2", "learn")
	waitLeader(t, nodeA, "a", 5*time.Second)
	nodeB := startSDNLB(t, "--db", dsn, "--node-id", "b", "--l2", "learn")
	targetA, targetB := "tcp:"+nodeA.OpenFlowAddr, "tcp:"+nodeB.OpenFlowAddr

	first := NewSwitch(t)
	bridges := []*Switch{first}
	for len(bridges) < nBridges {
		bridges = append(bridges, first.AddBridge(t))
	}
	var (
		hosts     []*Host
		wantHosts []string
		wantLinks []sdnlb.Link
	)
	for i, sw := range bridges {
		h := sw.AddHost(t, "h", first.Addr(byte(1+i)))
		hosts = append(hosts, h)
		wantHosts = append(wantHosts, h.IP+" "+dpidOf(t, sw)+" "+strconv.Itoa(h.OFPort))
	}
	slices.Sort(wantHosts)
	for i := 0; i+1 < nBridges; i++ {
		x, y := bridges[i], bridges[i+1]
		px, py := x.Name+"-"+strconv.Itoa(i), y.Name+"-"+strconv.Itoa(i)
		ex := sdnlb.LinkEnd{DPID: dpidOf(t, x), Port: uint32(x.AddPatch(t, px, py))}
		ey := sdnlb.LinkEnd{DPID: dpidOf(t, y), Port: uint32(y.AddPatch(t, py, px))}
		wantLinks = append(wantLinks, sdnlb.Link{Src: ex, Dst: ey, Bidirectional: true}, sdnlb.Link{Src: ey, Dst: ex, Bidirectional: true})
	}
	// In the API's order: by source, then destination.
	slices.SortFunc(wantLinks, func(a, b sdnlb.Link) int {
		return cmp.Or(cmp.Compare(a.Src.DPID, b.Src.DPID), cmp.Compare(a.Src.Port, b.Src.Port),
			cmp.Compare(a.Dst.DPID, b.Dst.DPID), cmp.Compare(a.Dst.Port, b.Dst.Port))
	})
	for _, sw := range bridges {
		setControllers(sw, targetA)
		addController(sw, targetB)
		dumpOnFailure(t, sw, nodeB)
	}
	nodeA.WaitSwitches(nBridges, 20*time.Second)
	nodeB.WaitSwitches(nBridges, 20*time.Second)
	waitMastered(t, nodeB, map[string]int{"a": 2, "b": 2}, 10*time.Second)
	waitOVSMasters(t, bridges, map[string]int{targetA: 2, targetB: 2}, 15*time.Second)

	// showHosts has each host reach the next across the chain: its ARP
	// broadcast, sent with an empty cache, shows it to its own bridge's
	// master.
	showHosts := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for i, h := range hosts {
			to := hosts[(i+1)%len(hosts)]
			if out, err := h.Exec(ctx, "sh", "-c", "ip neigh flush dev eth0 && ping -c 1 -W 5 "+to.IP); err != nil {
				t.Fatalf("%s cannot reach %s: %v\n%s", h.Name, to.Name, err, out)
			}
		}
	}
	showHosts()
	nodes := map[string]*sdnlbProc{"a": nodeA, "b": nodeB}
	for _, p := range nodes {
		waitTopology(t, p, wantHosts, wantLinks, 20*time.Second)
	}
	// Longer than a link counts without its frame, past anything a node
	// found while it mastered every bridge: what each shows is the parts
	// merged.
	for i := 0; i < 25; i++ {
		for id, p := range nodes {
			if gotHosts, gotLinks := topologyOf(t, p); !slices.Equal(gotHosts, wantHosts) || !slices.Equal(gotLinks, wantLinks) {
				t.Fatalf("GET /v1/topology on %s, poll %d: hosts %q, links %+v,\nwant hosts %q and links %+v",
					id, i, gotHosts, gotLinks, wantHosts, wantLinks)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}

	// a killed: b masters every bridge; once a's part lapsed (3 s after
	// its last record), and the hosts showed themselves to b, b shows
	// everything by itself.
	killed := time.Now()
	nodeA.Kill()
	waitMastered(t, nodeB, map[string]int{"b": nBridges}, 10*time.Second)
	time.Sleep(time.Until(killed.Add(4 * time.Second)))
	showHosts()
	waitTopology(t, nodeB, wantHosts, wantLinks, 20*time.Second)
}
