//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// Ports of the HTTP scenarios: the VIP listens on one port and the members
// on another, so every test also checks the port rewrite.
const (
	vipPort    = 80
	memberPort = 8080
)

// lbBed is a switch driven by its own sdnlb, with client hosts and member
// hosts that each run an HTTP server named srv1, srv2, ... behind one VIP.
type lbBed struct {
	sw      *Switch
	lb      *sdnlbProc
	clients []*Host
	members []*Host
	servers []*HTTPServer
	vip     *sdnlb.VIP
	pool    *sdnlb.Pool
	mems    []*sdnlb.Member
	url     string // of the VIP
}

// newLBBed builds a bed with an HTTP VIP in front of nMembers members of a
// pool with method, dispatched by the controller; sdnlbArgs go to the
// sdnlb command line.
func newLBBed(tb testing.TB, nClients, nMembers int, method sdnlb.LBMethod, vipExtra map[string]any, sdnlbArgs ...string) *lbBed {
	tb.Helper()
	return newDispatchBed(tb, nClients, nMembers, method, sdnlb.DispatchController, vipExtra, sdnlbArgs...)
}

// newDispatchBed is newLBBed with the pool's dispatch; a SWITCH bed waits
// until the switch's group has every member.
func newDispatchBed(tb testing.TB, nClients, nMembers int, method sdnlb.LBMethod, dispatch sdnlb.Dispatch, vipExtra map[string]any, sdnlbArgs ...string) *lbBed {
	tb.Helper()
	return newBedOn(tb, openFlow13, nClients, nMembers, method, dispatch, vipExtra, sdnlbArgs...)
}

// The OpenFlow versions a switch of a bed can speak, as Switch.Protocol
// names them.
const (
	openFlow13 = "OpenFlow13"
	openFlow10 = "OpenFlow10"
)

// forEachOpenFlow runs scenario once per OpenFlow version sdnlb speaks,
// each a subtest named by the version, on a bed whose switch speaks it.
func forEachOpenFlow(t *testing.T, scenario func(t *testing.T, protocol string)) {
	for _, p := range []string{openFlow13, openFlow10} {
		t.Run(p, func(t *testing.T) { scenario(t, p) })
	}
}

// newBedOn is newDispatchBed with a switch that speaks protocol. A 1.0
// switch has no select groups: its SWITCH pools are dispatched by the
// controller, and the bed waits for no buckets.
func newBedOn(tb testing.TB, protocol string, nClients, nMembers int, method sdnlb.LBMethod, dispatch sdnlb.Dispatch, vipExtra map[string]any, sdnlbArgs ...string) *lbBed {
	tb.Helper()
	b := &lbBed{sw: NewSwitch(tb)}
	b.sw.Protocol = protocol
	b.lb = startSDNLB(tb, sdnlbArgs...)
	for i := 0; i < nClients; i++ {
		b.clients = append(b.clients, b.sw.AddHost(tb, "c"+strconv.Itoa(i+1), b.sw.Addr(byte(1+i))))
	}
	for i := 0; i < nMembers; i++ {
		b.addMemberHost(tb)
	}
	b.lb.Connect(b.sw)
	dumpOnFailure(tb, b.sw, b.lb)
	b.vip = b.lb.MustCreateVIP("web", b.sw.Addr(100), sdnlb.ProtocolTCP, vipPort, vipExtra)
	b.pool = b.lb.MustCreatePool("web", b.vip, method, dispatch)
	for _, h := range b.members {
		b.mems = append(b.mems, b.lb.MustCreateMember(b.pool, h.IP, memberPort))
	}
	b.lb.WaitPoolMembers(b.pool.ID, nMembers, 10*time.Second)
	if dispatch == sdnlb.DispatchSwitch && protocol == openFlow13 {
		b.waitBuckets(tb, nMembers, 10*time.Second)
	}
	b.url = "http://" + net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort)) + "/"
	return b
}

// dumpOnFailure logs the switch's flow table and the controller's metrics
// if the test fails; the cleanup runs before sdnlb stops, so both are as
// the test left them.
func dumpOnFailure(tb testing.TB, sw *Switch, lb *sdnlbProc) {
	tb.Cleanup(func() {
		if !tb.Failed() {
			return
		}
		tb.Logf("flows on %s:\n%s", sw.Name, strings.Join(sw.DumpFlows(), "\n"))
		tb.Logf("what %s dropped or could not queue (coverage/show):\n%s", sw.Name, strings.Join(lostCounters(sw.Appctl("coverage/show")), "\n"))
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		_, data, err := lb.Do(ctx, http.MethodGet, "/metrics", nil)
		if err != nil {
			tb.Logf("GET /metrics: %v", err)
			return
		}
		var lines []string
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "sdnlb_controller_") {
				lines = append(lines, l)
			}
		}
		tb.Logf("controller metrics:\n%s", strings.Join(lines, "\n"))
	})
}

// lostCounters are the lines of Open vSwitch's coverage counters that
// count packets or messages it dropped or could not queue (a packet-in
// the controller's queue had no room for: rconn_overflow), with a
// total above 0.
func lostCounters(coverage string) []string {
	var lines []string
	for _, l := range strings.Split(coverage, "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(l), " ")
		if (strings.Contains(name, "drop") || strings.Contains(name, "overflow") || strings.Contains(name, "discard")) &&
			!strings.HasSuffix(l, "total: 0") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}

// addMemberHost adds the next member host and starts its server; it does
// not touch the API.
func (b *lbBed) addMemberHost(tb testing.TB) *Host {
	tb.Helper()
	n := len(b.members) + 1
	h := b.sw.AddHost(tb, "m"+strconv.Itoa(n), b.sw.Addr(byte(10+n)))
	b.members = append(b.members, h)
	b.servers = append(b.servers, h.ServeHTTP(tb, memberPort, "srv"+strconv.Itoa(n)))
	return h
}

func (b *lbBed) serverNames() []string {
	names := make([]string, len(b.servers))
	for i, s := range b.servers {
		names[i] = s.Name
	}
	return names
}

// get fetches url from h over a new connection within timeout.
func get(h *Host, url string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return h.HTTPGet(ctx, url)
}

// spread sends perClient requests from each client, the clients in
// parallel, and counts the answers by body; every request must succeed.
func spread(tb testing.TB, clients []*Host, url string, perClient int) map[string]int {
	tb.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	var errs []error
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			for i := 0; i < perClient; i++ {
				body, err := get(c, url, 5*time.Second)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("request %d from %s: %w", i, c.Name, err))
				} else {
					counts[body]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		tb.Fatalf("%d of %d requests failed, first: %v (answers: %v)", len(errs), perClient*len(clients), errs[0], counts)
	}
	return counts
}

// addrPattern matches addr as a whole address inside ovs-ofctl output, so
// 10.77.0.10 does not match 10.77.0.100.
func addrPattern(addr string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[^0-9.])` + regexp.QuoteMeta(addr) + `([^0-9.]|$)`)
}

// flowsMentioning returns the switch's flows that name addr.
func flowsMentioning(sw *Switch, addr string) []string {
	re := addrPattern(addr)
	var out []string
	for _, f := range sw.DumpFlows() {
		if re.MatchString(f) {
			out = append(out, f)
		}
	}
	return out
}

// waitNoFlows waits until no flow names addr and returns how long it took.
func waitNoFlows(tb testing.TB, sw *Switch, addr string, timeout time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	var left []string
	for i := 0; i < 200 && time.Since(start) < timeout; i++ {
		if left = flowsMentioning(sw, addr); len(left) == 0 {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tb.Fatalf("after %v, %d flows still mention %s:\n%s", timeout, len(left), addr, strings.Join(left, "\n"))
	return 0
}

// neighEntry returns the fields of h's neighbour entry for ip, as
// "ip neigh show" prints them; none when there is no entry.
func neighEntry(tb testing.TB, h *Host, ip string) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := h.Exec(ctx, "ip", "neigh", "show", ip)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Fields(string(out))
}

// neighMAC returns the MAC that h's neighbour table holds for ip, "" when
// none.
func neighMAC(tb testing.TB, h *Host, ip string) string {
	tb.Helper()
	fields := neighEntry(tb, h, ip)
	if i := slices.Index(fields, "lladdr"); i >= 0 && i+1 < len(fields) {
		return fields[i+1]
	}
	return ""
}

func sameMAC(a, b string) bool {
	ma, errA := net.ParseMAC(a)
	mb, errB := net.ParseMAC(b)
	return errA == nil && errB == nil && ma.String() == mb.String()
}

// TestVIP_ARP checks that the controller answers ARP for a VIP with the
// VIP's own MAC, the one the API shows.
func TestVIP_ARP(t *testing.T) { forEachOpenFlow(t, testVIPARP) }

func testVIPARP(t *testing.T, protocol string) {
	b := newBedOn(t, protocol, 1, 1, sdnlb.RoundRobin, sdnlb.DispatchController, nil)
	c := b.clients[0]
	if b.vip.MAC == "" {
		t.Fatalf("API shows no MAC for VIP %s", b.vip.ID)
	}
	if got := neighMAC(t, c, b.vip.Address); got != "" {
		t.Fatalf("client knows a MAC for the VIP before asking: %s", got)
	}
	if body, err := get(c, b.url, 5*time.Second); err != nil || body != "srv1" {
		t.Fatalf("GET %s = %q, %v; want srv1", b.url, body, err)
	}
	got := neighMAC(t, c, b.vip.Address)
	if !sameMAC(got, b.vip.MAC) {
		t.Errorf("client resolved VIP %s to %q, want the VIP MAC %s", b.vip.Address, got, b.vip.MAC)
	}
	for _, h := range b.members {
		if sameMAC(got, h.MAC.String()) {
			t.Errorf("VIP resolved to member %s's MAC", h.Name)
		}
	}
}

// TestLB_RoundRobin checks that 30 new connections from two clients are
// spread evenly over three members.
func TestLB_RoundRobin(t *testing.T) { forEachOpenFlow(t, testRoundRobin) }

func testRoundRobin(t *testing.T, protocol string) {
	b := newBedOn(t, protocol, 2, 3, sdnlb.RoundRobin, sdnlb.DispatchController, nil)
	counts := spread(t, b.clients, b.url, 15)
	for _, s := range b.servers {
		if counts[s.Name] != 10 {
			t.Errorf("answers by member: %v, want 10 from each of %v", counts, b.serverNames())
			break
		}
		if s.Hits() != 10 {
			t.Errorf("server %s counted %d hits, want 10", s.Name, s.Hits())
		}
	}
	if len(counts) != len(b.servers) {
		t.Errorf("answers from unexpected servers: %v", counts)
	}
}

// icmpOutEchoReps reads how many echo replies h has sent, ICMPv4 and
// ICMPv6 together.
func icmpOutEchoReps(tb testing.TB, h *Host) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := h.Exec(ctx, "cat", "/proc/net/snmp", "/proc/net/snmp6")
	if err != nil {
		tb.Fatal(err)
	}
	// /proc/net/snmp has two "Icmp:" lines, the field names then the
	// values; /proc/net/snmp6 a line per field.
	var rows [][]string
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Icmp:"):
			rows = append(rows, f)
		case len(f) == 2 && f[0] == "Icmp6OutEchoReplies":
			v, err := strconv.Atoi(f[1])
			if err != nil {
				tb.Fatal(err)
			}
			n += v
		}
	}
	if len(rows) != 2 {
		tb.Fatalf("no Icmp rows in /proc/net/snmp of %s", h.Name)
	}
	i := slices.Index(rows[0], "OutEchoReps")
	if i < 0 || i >= len(rows[1]) {
		tb.Fatalf("no OutEchoReps in /proc/net/snmp of %s", h.Name)
	}
	v, err := strconv.Atoi(rows[1][i])
	if err != nil {
		tb.Fatal(err)
	}
	return n + v
}

// TestVIP_ICMPAndUDP checks an ICMP VIP (ping is answered by a member) and
// a UDP VIP (the reply names a member), in both families.
func TestVIP_ICMPAndUDP(t *testing.T) {
	sw := NewSwitch(t)
	lb := startSDNLB(t)
	c := sw.AddHost(t, "c1", sw.Addr(1))
	var members []*Host
	for i := 1; i <= 2; i++ {
		members = append(members, sw.AddHost(t, "m"+strconv.Itoa(i), sw.Addr(byte(10+i))))
	}
	lb.Connect(sw)

	for fi, f := range families {
		t.Run(f.name+"/ICMP", func(t *testing.T) {
			vip := lb.MustCreateVIP("ping"+f.name, f.addr(sw, byte(101+10*fi)), sdnlb.ProtocolICMP, 0, nil)
			pool := lb.MustCreatePool("ping"+f.name, vip, sdnlb.RoundRobin, sdnlb.DispatchController)
			before := 0
			for _, h := range members {
				lb.MustCreateMember(pool, f.hostIP(h), 0)
				before += icmpOutEchoReps(t, h)
			}
			lb.WaitPoolMembers(pool.ID, len(members), 5*time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			out, err := c.Exec(ctx, "ping", "-c", "3", "-i", "0.2", "-W", "2", vip.Address)
			if err != nil {
				t.Fatalf("ping %s: %v\n%s", vip.Address, err, out)
			}
			after := 0
			for _, h := range members {
				after += icmpOutEchoReps(t, h)
			}
			if after-before < 3 {
				t.Errorf("members sent %d echo replies, want at least 3 (ping output:\n%s)", after-before, out)
			}
			if !strings.Contains(string(out), "from "+vip.Address) {
				t.Errorf("replies do not come from the VIP address:\n%s", out)
			}
		})

		t.Run(f.name+"/UDP", func(t *testing.T) {
			const port = 5353
			vip := lb.MustCreateVIP("dns"+f.name, f.addr(sw, byte(102+10*fi)), sdnlb.ProtocolUDP, port, nil)
			pool := lb.MustCreatePool("dns"+f.name, vip, sdnlb.RoundRobin, sdnlb.DispatchController)
			var names []string
			for i, h := range members {
				name := f.name + "-udp" + strconv.Itoa(i+1)
				h.ServeUDP(t, port+fi, name)
				names = append(names, name)
				lb.MustCreateMember(pool, f.hostIP(h), port+fi)
			}
			// One datagram each, never sent again: the first must not
			// reach the controller before the pool's members do, or it
			// finds a VIP with no member and is dropped.
			lb.WaitPoolMembers(pool.ID, len(members), 5*time.Second)
			addr := net.JoinHostPort(vip.Address, strconv.Itoa(port))
			seen := map[string]int{}
			for i := 0; i < 4; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				reply, err := c.UDPRequest(ctx, addr, []byte("hello"), 2*time.Second)
				cancel()
				if err != nil {
					t.Fatalf("UDP request %d to %s: %v", i, addr, err)
				}
				if !slices.Contains(names, string(reply)) {
					t.Fatalf("UDP reply %q names no member of %v", reply, names)
				}
				seen[string(reply)]++
			}
			// Each request comes from a new source port: a new flow, spread.
			if len(seen) != len(names) {
				t.Errorf("UDP replies by member %v, want both of %v", seen, names)
			}
		})
	}
}

// TestL2_Learning checks that with sdnlb in control, hosts (and the root
// namespace, where health probes come from) reach each other by their own
// addresses.
func TestL2_Learning(t *testing.T) {
	b := newLBBed(t, 2, 1, sdnlb.RoundRobin, nil)
	a, c := b.clients[0], b.clients[1]
	srv := c.ServeHTTP(t, 8081, "direct")

	t.Run("Ping", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for _, dst := range []*Host{c, b.members[0]} {
			if out, err := a.Exec(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "2", dst.IP); err != nil {
				t.Errorf("ping %s from %s: %v\n%s", dst.IP, a.Name, err, out)
			}
		}
	})
	t.Run("HTTPDirect", func(t *testing.T) {
		for _, tt := range []struct {
			from *Host
			addr string
			want string
		}{
			{a, srv.Addr, "direct"},
			{a, b.servers[0].Addr, "srv1"},
			{c, b.servers[0].Addr, "srv1"},
		} {
			if body, err := get(tt.from, "http://"+tt.addr+"/", 5*time.Second); err != nil || body != tt.want {
				t.Errorf("GET %s from %s = %q, %v; want %q", tt.addr, tt.from.Name, body, err, tt.want)
			}
		}
	})
	t.Run("FromRootNamespace", func(t *testing.T) {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + b.servers[0].Addr + "/health")
		if err != nil {
			t.Fatalf("root namespace (%s) to member %s: %v", b.sw.LocalIP, b.servers[0].Addr, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status %d, want 200", resp.StatusCode)
		}
	})
	t.Run("VIPStillBalances", func(t *testing.T) {
		if body, err := get(a, b.url, 5*time.Second); err != nil || body != "srv1" {
			t.Errorf("GET %s = %q, %v; want srv1", b.url, body, err)
		}
	})
}

// TestLB_MemberAddedAtRuntime checks that a member added while traffic
// flows takes its share of the next round.
func TestLB_MemberAddedAtRuntime(t *testing.T) {
	b := newLBBed(t, 1, 2, sdnlb.RoundRobin, nil)
	c := b.clients[0]
	if counts := spread(t, b.clients, b.url, 6); counts["srv1"] != 3 || counts["srv2"] != 3 {
		t.Fatalf("before the add: answers %v, want 3 from srv1 and srv2", counts)
	}
	h := b.addMemberHost(t)
	added := time.Now()
	b.mems = append(b.mems, b.lb.MustCreateMember(b.pool, h.IP, memberPort))

	// The configuration reaches the controller asynchronously: wait for the
	// first answer from srv3, boundedly.
	var seen []string
	for i := 0; i < 30 && time.Since(added) < 10*time.Second; i++ {
		body, err := get(c, b.url, 5*time.Second)
		if err != nil {
			t.Fatalf("request %d after the add: %v", i, err)
		}
		seen = append(seen, body)
		if body == "srv3" {
			break
		}
	}
	if seen[len(seen)-1] != "srv3" {
		t.Fatalf("srv3 never answered after its add; answers: %v", seen)
	}
	t.Logf("new member answered after %v (%d requests)", time.Since(added).Round(time.Millisecond), len(seen))
	counts := spread(t, b.clients, b.url, 6)
	for _, name := range b.serverNames() {
		if counts[name] != 2 {
			t.Errorf("after the add: answers %v, want 2 from each of %v", counts, b.serverNames())
			break
		}
	}
}

// TestVIP_Delete checks that a deleted VIP stops answering and leaves no
// flow behind.
func TestVIP_Delete(t *testing.T) {
	b := newLBBed(t, 1, 2, sdnlb.RoundRobin, nil)
	c := b.clients[0]
	spread(t, b.clients, b.url, 4)
	if len(flowsMentioning(b.sw, b.vip.Address)) == 0 {
		t.Fatalf("no flow mentions VIP %s while it serves", b.vip.Address)
	}
	if len(apiFlowsMentioning(t, b.lb, b.vip.Address)) == 0 {
		t.Errorf("the API lists no flow of VIP %s while it serves", b.vip.Address)
	}

	b.lb.MustAPI(http.MethodDelete, "/v1/vips/"+b.vip.ID+"?cascade=true", nil, http.StatusNoContent, nil)
	took := waitNoFlows(t, b.sw, b.vip.Address, 5*time.Second)
	t.Logf("VIP flows gone %v after the delete", took.Round(time.Millisecond))
	if left := apiFlowsMentioning(t, b.lb, b.vip.Address); len(left) > 0 {
		t.Errorf("the API still lists %d flows of the deleted VIP, first: %s", len(left), left[0])
	}

	start := time.Now()
	body, err := get(c, b.url, 2*time.Second)
	if err == nil {
		t.Fatalf("deleted VIP still answers: %q", body)
	}
	t.Logf("request to the deleted VIP failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if status, _ := b.lb.API(http.MethodGet, "/v1/vips/"+b.vip.ID, nil); status != http.StatusNotFound {
		t.Errorf("GET deleted VIP: status %d, want 404", status)
	}
	// Members were real hosts, not the VIP: they still answer directly.
	if body, err := get(c, "http://"+b.servers[0].Addr+"/", 5*time.Second); err != nil || body != "srv1" {
		t.Errorf("member after VIP delete = %q, %v; want srv1", body, err)
	}
}

// apiFlowsMentioning returns the flows GET /v1/switches/{dpid}/flows lists
// for the one connected switch whose match or actions name addr.
func apiFlowsMentioning(tb testing.TB, lb *sdnlbProc, addr string) []string {
	tb.Helper()
	switches := lb.Switches()
	if len(switches) != 1 {
		tb.Fatalf("%d switches connected, want 1", len(switches))
	}
	var list struct {
		Flows []*sdnlb.Flow `json:"flows"`
	}
	lb.MustAPI(http.MethodGet, "/v1/switches/"+switches[0].DPID+"/flows", nil, http.StatusOK, &list)
	re := addrPattern(addr)
	var out []string
	for _, f := range list.Flows {
		if line := f.Match + " " + f.Actions; re.MatchString(line) {
			out = append(out, line)
		}
	}
	return out
}

// waitServes sends requests until one succeeds, boundedly, and returns the
// time it took.
func waitServes(tb testing.TB, h *Host, url string, timeout time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	var err error
	for i := 0; i < 100 && time.Since(start) < timeout; i++ {
		if _, err = get(h, url, time.Second); err == nil {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("GET %s from %s failed for %v: %v", url, h.Name, timeout, err)
	return 0
}

// TestSwitch_Reconnect checks that the VIP serves again after the switch
// lost its controller and came back, both when it kept its flows (the
// controller unreachable) and when it lost them (as after a switch
// restart, or del-controller, which flushes them).
func TestSwitch_Reconnect(t *testing.T) { forEachOpenFlow(t, testSwitchReconnect) }

func testSwitchReconnect(t *testing.T, protocol string) {
	b := newBedOn(t, protocol, 1, 3, sdnlb.RoundRobin, sdnlb.DispatchController, nil)
	c := b.clients[0]
	spread(t, b.clients, b.url, 3)

	for _, tt := range []struct {
		name      string
		dropFlows bool
	}{
		{"FlowsKept", false},
		{"FlowsLost", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dropFlows {
				b.sw.DelController()
			} else {
				b.sw.Disconnect()
			}
			b.lb.WaitSwitches(0, 20*time.Second)
			if kept := len(b.sw.DumpFlows()) > 0; kept != !tt.dropFlows {
				t.Fatalf("flows kept: %v, want %v", kept, !tt.dropFlows)
			}
			b.sw.SetController(b.lb.OpenFlowAddr)
			b.lb.WaitSwitches(1, 20*time.Second)
			took := waitServes(t, c, b.url, 10*time.Second)
			t.Logf("VIP served %v after the switch reconnected", took.Round(time.Millisecond))
			counts := spread(t, b.clients, b.url, 6)
			for _, name := range b.serverNames() {
				if counts[name] != 2 {
					t.Errorf("after reconnect: answers %v, want 2 from each of %v", counts, b.serverNames())
					break
				}
			}
		})
	}
}

// TestVIP_ConnectionLimit checks that connections beyond a VIP's limit are
// refused at once, that a slot frees as soon as a connection closes (not
// when its flows idle out), also for a client that reuses its port, and
// that the pool stats count it all.
func TestVIP_ConnectionLimit(t *testing.T) {
	const limit = 3
	b := newLBBed(t, 1, 2, sdnlb.RoundRobin, map[string]any{"connection_limit": limit})
	c := b.clients[0]
	addr := net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort))
	dial := func() (net.Conn, time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		conn, err := c.DialContext(ctx, "tcp", addr)
		return conn, time.Since(start), err
	}

	// holdOpen opens a connection and makes one keep-alive request on it:
	// the server then keeps it open however long it idles.
	holdOpen := func() (net.Conn, error) {
		conn, _, err := dial()
		if err != nil {
			return nil, err
		}
		if err := keepAliveGet(conn, addr); err != nil {
			conn.Close()
			return nil, err
		}
		return conn, nil
	}

	var held []net.Conn
	defer func() {
		for _, conn := range held {
			conn.Close()
		}
	}()
	for i := 0; i < limit; i++ {
		conn, err := holdOpen()
		if err != nil {
			t.Fatalf("connection %d of %d: %v", i+1, limit, err)
		}
		held = append(held, conn)
	}
	st := b.lb.PoolStats(b.pool.ID)
	if st.ActiveConnections != limit || st.TotalConnections != limit {
		t.Errorf("stats with %d held: active %d total %d, want %d and %d", limit, st.ActiveConnections, st.TotalConnections, limit, limit)
	}

	conn, took, err := dial()
	if err == nil {
		conn.Close()
		t.Fatalf("connection %d over a limit of %d was accepted", limit+1, limit)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) || took > time.Second {
		t.Errorf("connection over the limit: %v after %v, want connection refused within 1s", err, took)
	}
	t.Logf("connection over the limit refused after %v", took.Round(time.Microsecond))
	if st := b.lb.PoolStats(b.pool.ID); st.RefusedConnections < 1 {
		t.Errorf("stats after a refusal: refused %d, want at least 1", st.RefusedConnections)
	}

	// A slot frees when a connection closes. The connections still held
	// make a request now and then, so that they stay open.
	held[0].Close()
	held = held[1:]
	start := time.Now()
	var reopened net.Conn
	for i := 0; i < 60 && time.Since(start) < 15*time.Second; i++ {
		for j, conn := range held {
			if err := keepAliveGet(conn, addr); err != nil {
				t.Fatalf("held connection %d: %v", j, err)
			}
		}
		if reopened, err = holdOpen(); err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no slot freed %v after a connection ended: %v", time.Since(start), err)
	}
	held = append(held, reopened)
	t.Logf("slot free again %v after a connection ended", time.Since(start).Round(time.Millisecond))
	if st := b.lb.PoolStats(b.pool.ID); st.TotalConnections != limit+1 || st.ActiveConnections != limit {
		t.Errorf("stats after reuse: active %d total %d, want %d and %d", st.ActiveConnections, st.TotalConnections, limit, limit+1)
	}

	// With every slot free again, sequential requests far past the limit,
	// each closed before the next begins, are all answered: from new
	// ports, and from one port the client reuses.
	for _, conn := range held {
		conn.Close()
	}
	held = nil
	refused := b.lb.PoolStats(b.pool.ID).RefusedConnections
	const sequential = 4 * limit
	var reused time.Time
	for i := range sequential {
		var err error
		if i%2 == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err = c.HTTPGet(ctx, b.url)
			cancel()
		} else {
			// Linux lets a socket take the address of one of its own in
			// TIME_WAIT (the client closed first) only a second after
			// that one's last timestamp (tcp_tw_reuse); sooner, connect
			// fails with EADDRNOTAVAIL.
			time.Sleep(time.Until(reused.Add(1100 * time.Millisecond)))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err = c.HTTPGetFrom(ctx, 40999, b.url)
			cancel()
			reused = time.Now()
		}
		if err != nil {
			t.Errorf("sequential request %d of %d under a limit of %d: %v", i+1, sequential, limit, err)
		}
	}
	if st := b.lb.PoolStats(b.pool.ID); st.RefusedConnections != refused {
		t.Errorf("%d of %d sequential connections refused under a limit of %d", st.RefusedConnections-refused, sequential, limit)
	}
}

// TestVIP_ClosedConnectionsStopCounting: under the controller's dispatch
// a connection counts as active while it is open, not while its flows
// remain: after a burst of short connections and one that closes before
// its answer comes (a FIN, then a reset), beside two held open, the pool's active connections come back to
// the two well within the flows' idle timeout, and to none once those
// close.
func TestVIP_ClosedConnectionsStopCounting(t *testing.T) {
	const idle = 60 * time.Second
	b := newLBBed(t, 1, 2, sdnlb.LeastConnections, nil, "--flow-idle-timeout", idle.String())
	c := b.clients[0]
	addr := net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort))
	var held []net.Conn
	defer func() {
		for _, conn := range held {
			conn.Close()
		}
	}()
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		conn, err := c.DialContext(ctx, "tcp", addr)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
		if err := keepAliveGet(conn, addr); err != nil {
			t.Fatal(err)
		}
	}
	const short = 60
	counts := spread(t, b.clients, b.url, short)
	t.Logf("answers %v", counts)
	// One more gives up on its request: it closes as soon as it has sent
	// it, and its kernel answers the response with a reset. A FIN and a
	// reset, one end.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	abandoned, err := c.DialContext(ctx, "tcp", addr)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fmt.Fprintf(abandoned, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
		t.Fatal(err)
	}
	abandoned.Close()
	activeBecomes := func(want uint64) time.Duration {
		start := time.Now()
		for time.Since(start) < idle/3 {
			for _, conn := range held { // keep the held ones open and busy
				if err := keepAliveGet(conn, addr); err != nil {
					t.Fatalf("held connection: %v", err)
				}
			}
			if st := b.lb.PoolStats(b.pool.ID); st.ActiveConnections == want {
				return time.Since(start)
			}
			time.Sleep(250 * time.Millisecond)
		}
		st := b.lb.PoolStats(b.pool.ID)
		t.Fatalf("active connections %d after %v of a flow idle timeout of %v, want %d (total %d)",
			st.ActiveConnections, idle/3, idle, want, st.TotalConnections)
		return 0
	}
	t.Logf("active back to the 2 held %v after %d short connections", activeBecomes(2).Round(time.Millisecond), short)
	if st := b.lb.PoolStats(b.pool.ID); st.TotalConnections != short+3 {
		t.Errorf("total connections %d, want %d", st.TotalConnections, short+3)
	}
	for _, conn := range held {
		conn.Close()
	}
	held = nil
	t.Logf("active 0 %v after the held ones closed", activeBecomes(0).Round(time.Millisecond))
}

// TestConnection_IdleFlowsAge: a connection with flows of its own (its
// VIP has a connection limit) ends once idle for --flow-idle-timeout, on
// either OpenFlow version. While it makes requests its flows outlive the
// timeout; once it is quiet the controller's polls delete them, and the
// pool counts it no more.
func TestConnection_IdleFlowsAge(t *testing.T) {
	const idle = 3 * time.Second
	forEachOpenFlow(t, func(t *testing.T, protocol string) {
		b := newBedOn(t, protocol, 1, 2, sdnlb.RoundRobin, sdnlb.DispatchController, map[string]any{"connection_limit": 100},
			"--flow-idle-timeout", idle.String())
		h := openHeld(t, b, b.clients[0])
		defer h.conn.Close()
		port := strconv.Itoa(h.conn.LocalAddr().(*net.TCPAddr).Port)
		client := b.clients[0].IP
		flows := func() []string {
			return append(b.sw.DumpFlows("tcp,nw_src="+client+",tp_src="+port), b.sw.DumpFlows("tcp,nw_dst="+client+",tp_dst="+port)...)
		}
		for end := time.Now().Add(2 * idle); time.Now().Before(end); time.Sleep(idle / 6) {
			h.again(t)
		}
		if got := flows(); len(got) != 2 {
			t.Fatalf("after %v of requests, the connection has %d flows, want its 2:\n%s", 2*idle, len(got), strings.Join(got, "\n"))
		}
		waitActive(t, b, 1)
		start := time.Now()
		for got := flows(); len(got) > 0; got = flows() {
			if time.Since(start) > 30*time.Second {
				t.Fatalf("the connection's flows remain %v after its last request, with an idle timeout of %v:\n%s",
					time.Since(start), idle, strings.Join(got, "\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("the connection's flows went %v after its last request", time.Since(start).Round(100*time.Millisecond))
		waitActive(t, b, 0)
	})
}

// A connection limit holds whatever dispatch the pool had: a VIP that
// gains one moves its SWITCH pool to the controller, which keeps the
// limit, and the pool says so; asking the switch to dispatch it again is
// refused with the setting named.
func TestVIP_ConnectionLimitMovesSwitchPool(t *testing.T) {
	const limit = 2
	b := newDispatchBed(t, 1, 2, sdnlb.RoundRobin, sdnlb.DispatchSwitch, nil)
	b.lb.MustAPI(http.MethodPatch, "/v1/vips/"+b.vip.ID, map[string]any{"connection_limit": limit}, http.StatusOK, nil)
	var p sdnlb.Pool
	b.lb.MustAPI(http.MethodGet, "/v1/pools/"+b.pool.ID, nil, http.StatusOK, &p)
	if p.Dispatch != sdnlb.DispatchController {
		t.Errorf("the pool of a VIP with a connection limit reads dispatch %s, want %s", p.Dispatch, sdnlb.DispatchController)
	}
	status, body, err := b.lb.Do(context.Background(), http.MethodPatch, "/v1/pools/"+b.pool.ID, map[string]any{"dispatch": sdnlb.DispatchSwitch})
	if err != nil || status != http.StatusBadRequest || !strings.Contains(string(body), "connection_limit") {
		t.Errorf("dispatch SWITCH for a limited VIP's pool: %d %s %v, want 400 naming connection_limit", status, body, err)
	}

	// The write answers before the switch has the controller's rows: until
	// its group goes, the switch still dispatches new connections itself.
	t.Logf("the switch's group gone %v after the limit was set", b.waitBuckets(t, 0, 5*time.Second).Round(time.Millisecond))

	addr := net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort))
	var held []net.Conn
	defer func() {
		for _, conn := range held {
			conn.Close()
		}
	}()
	refused := 0
	for i := 0; i < 10; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		conn, err := b.clients[0].DialContext(ctx, "tcp", addr)
		cancel()
		if err == nil {
			err = keepAliveGet(conn, addr)
			held = append(held, conn)
		}
		if err != nil {
			refused++
		}
	}
	if answered := 10 - refused; answered != limit {
		t.Errorf("%d of 10 connections held open were answered under a limit of %d", answered, limit)
	}
}

// keepAliveGet sends one HTTP/1.1 request on conn and reads the answer,
// leaving the connection open.
func keepAliveGet(conn net.Conn, host string) error {
	if err := conn.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return err
	}
	_, err = readAll(resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	if err != nil {
		return err
	}
	return conn.SetDeadline(time.Time{})
}

// switchDispatches reports whether the bed's switch dispatches its pool
// itself: a SWITCH pool on a switch with select groups (not 1.0).
func (b *lbBed) switchDispatches() bool {
	return b.pool.Dispatch == sdnlb.DispatchSwitch && b.sw.Protocol != openFlow10
}

// tracks reports whether the bed's switch holds its pool's connections in
// its tracker: a TCP pool on a switch with select groups (not 1.0), which
// the switch dispatches, or the controller without a connection limit,
// session persistence or member capacity, which count by a connection's
// own flows.
func (b *lbBed) tracks() bool {
	if b.sw.Protocol == openFlow10 || b.vip.Protocol != sdnlb.ProtocolTCP {
		return false
	}
	return b.switchDispatches() || b.vip.ConnectionLimit <= 0 && b.vip.SessionPersistence == nil &&
		!slices.ContainsFunc(b.mems, func(m *sdnlb.Member) bool { return m.Capacity > 0 })
}
