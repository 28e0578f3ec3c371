//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// Traffic as clients send it rather than as a fresh benchmark does: a
// client that comes back after a pause on the source ports it used before,
// and one client that reaches the same member by several paths. Each
// request gets reuseTimeout: a SYN refused once is retransmitted after a
// second and must then get through, where a stalled connection waits for
// the member's TIME_WAIT (a minute).
const (
	reuseTimeout = 5 * time.Second
	reusePorts   = 100   // source ports per round
	reuseBase    = 42000 // the first of them
	reuseWorkers = 10
)

// fromPorts sends one request from each of the client's ports reuseBase ..
// reuseBase+reusePorts-1 to url, reuseWorkers at a time, and returns the
// answers by body and the failures.
func fromPorts(c *Host, url string) (map[string]int, []error) {
	var mu sync.Mutex
	counts := map[string]int{}
	var errs []error
	ports := make(chan int)
	var wg sync.WaitGroup
	for range reuseWorkers {
		wg.Go(func() {
			for p := range ports {
				ctx, cancel := context.WithTimeout(context.Background(), reuseTimeout)
				body, err := c.HTTPGetFrom(ctx, p, url)
				cancel()
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("from port %d: %w", p, err))
				} else {
					counts[body]++
				}
				mu.Unlock()
			}
		})
	}
	for p := reuseBase; p < reuseBase+reusePorts; p++ {
		ports <- p
	}
	close(ports)
	wg.Wait()
	return counts, errs
}

// requireRound fails the test on any failed request of a round.
func requireRound(tb testing.TB, round string, counts map[string]int, errs []error) {
	tb.Helper()
	if len(errs) > 0 {
		tb.Errorf("%s: %d of %d requests failed, first: %v (answers: %v)", round, len(errs), reusePorts, errs[0], counts)
	}
}

// tcpCounter reads one TcpExt counter of h's namespace (TCPSynRetrans,
// PAWSEstab, ...) from /proc/net/netstat.
func tcpCounter(tb testing.TB, h *Host, name string) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := h.Exec(ctx, "cat", "/proc/net/netstat")
	if err != nil {
		tb.Fatalf("netstat of %s: %v", h.Name, err)
	}
	lines := strings.Split(string(out), "\n")
	for i := 0; i+1 < len(lines); i += 2 {
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		if len(names) == 0 || names[0] != "TcpExt:" || len(values) != len(names) {
			continue
		}
		for j, n := range names {
			if n == name {
				v, _ := strconv.Atoi(values[j])
				return v
			}
		}
	}
	tb.Fatalf("no TcpExt counter %s in %s's /proc/net/netstat", name, h.Name)
	return 0
}

// seqCheckFailures is how many packets the switch's connection tracker
// found out of its window since it started.
func seqCheckFailures(sw *Switch) int {
	m := regexp.MustCompile(`conntrack_tcp_seq_chk_failed\s+\S+\s+\S+\s+\S+\s+total: (\d+)`).FindStringSubmatch(sw.Appctl("coverage/show"))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// rewrittenPorts lists the tracker's connections whose reply direction is
// addressed to another port than the original came from: connections whose
// source port the tracker changed.
func rewrittenPorts(sw *Switch) []string {
	entry := regexp.MustCompile(`orig=\(src=[^,]+,dst=[^,]+,sport=(\d+),dport=\d+\),reply=\(src=[^,]+,dst=[^,]+,sport=\d+,dport=(\d+)\)`)
	var out []string
	for _, l := range strings.Split(sw.Appctl("dpctl/dump-conntrack"), "\n") {
		if m := entry.FindStringSubmatch(l); m != nil && m[1] != m[2] {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// A client comes back after a pause from the source ports it used before,
// to a SWITCH VIP of each forwarding. Every request gets through at the
// first SYN: the switch keeps each connection's member without having the
// tracker rewrite a client's port, and the tracker finds no packet out of
// its window.
func TestTraffic_PortReuseAfterPause(t *testing.T) {
	const (
		pause   = 6 * time.Second // between the tracker's first sweeps and the hosts' TIME_WAIT
		natPort = 8080
		dsrPort = 8082
	)
	sw := NewSwitch(t)
	natClient := sw.AddHost(t, "c1", sw.Addr(1))
	dsrClient := sw.AddHost(t, "c2", sw.Addr(2))
	natVIP, dsrVIP := sw.Addr(100), sw.Addr(101)
	var members []*Host
	for i := range 3 {
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		holdVIP(t, h, dsrVIP)
		h.ServeHTTP(t, natPort, "srv"+strconv.Itoa(i+1))
		h.ServeHTTP(t, dsrPort, "srv"+strconv.Itoa(i+1))
		members = append(members, h)
	}
	lb := startSDNLB(t)
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	for _, p := range []struct {
		vip  *sdnlb.VIP
		fwd  sdnlb.Forwarding
		port int
	}{
		{lb.MustCreateVIP("nat", natVIP, sdnlb.ProtocolTCP, vipPort, nil), sdnlb.ForwardingNAT, natPort},
		{lb.MustCreateVIP("dsr", dsrVIP, sdnlb.ProtocolTCP, dsrPort, nil), sdnlb.ForwardingDSR, 0},
	} {
		var pool sdnlb.Pool
		lb.MustAPI("POST", "/v1/pools", map[string]any{"name": p.vip.Name, "vip_id": p.vip.ID, "lb_method": sdnlb.RoundRobin,
			"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "forwarding": p.fwd}, 201, &pool)
		for _, h := range members {
			lb.MustCreateMember(&pool, h.IP, p.port)
		}
		lb.WaitPoolMembers(pool.ID, len(members), 10*time.Second)
	}
	(&lbBed{sw: sw}).waitBuckets(t, 2*len(members), 10*time.Second)

	for _, path := range []struct {
		name   string
		client *Host
		url    string
	}{
		{"SWITCH NAT", natClient, "http://" + net.JoinHostPort(natVIP, strconv.Itoa(vipPort)) + "/"},
		{"SWITCH DSR", dsrClient, "http://" + net.JoinHostPort(dsrVIP, strconv.Itoa(dsrPort)) + "/"},
	} {
		t.Run(strings.ReplaceAll(path.name, " ", "_"), func(t *testing.T) {
			counts, errs := fromPorts(path.client, path.url)
			requireRound(t, "before the pause", counts, errs)
			time.Sleep(pause)
			seq, syns := seqCheckFailures(sw), tcpCounter(t, path.client, "TCPSynRetrans")
			counts, errs = fromPorts(path.client, path.url)
			requireRound(t, "after the pause, from the same ports", counts, errs)
			if len(counts) < 2 {
				t.Errorf("after the pause every answer came from %v, want the pool's members", counts)
			}
			if n := tcpCounter(t, path.client, "TCPSynRetrans") - syns; n != 0 {
				t.Errorf("the client retransmitted %d SYNs after the pause, want none: a member refused connections", n)
			}
			if n := seqCheckFailures(sw) - seq; n != 0 {
				t.Errorf("the switch's tracker found %d packets out of window after the pause, want none", n)
			}
			if r := rewrittenPorts(sw); len(r) > 0 {
				t.Errorf("the tracker rewrote %d clients' ports, first: %s", len(r), r[0])
			}
		})
	}
}

// One client reaches the same member address and port by several paths,
// from the same source ports within the member's TIME_WAIT: directly,
// through a SWITCH NAT VIP, through a CONTROLLER VIP over the same members,
// through the SWITCH NAT VIP and directly again. The member then sees one client address and
// port from two client sockets; a SYN it refuses for that (PAWS) is
// answered, the client's reset ends the member's TIME_WAIT and its next
// SYN gets through, so no connection stalls. The switch sends each reply to
// the VIP its connection came through, also while the flows of the
// CONTROLLER VIP's earlier connection on the same ports still live.
func TestTraffic_OneClientSeveralPaths(t *testing.T) {
	b := newLBBed(t, 1, 2, sdnlb.RoundRobin, nil) // a CONTROLLER VIP on memberPort
	c := b.clients[0]
	sw := b.lb.MustCreateVIP("switched", b.sw.Addr(101), sdnlb.ProtocolTCP, vipPort, nil)
	var pool sdnlb.Pool
	b.lb.MustAPI("POST", "/v1/pools", map[string]any{"name": "switched", "vip_id": sw.ID, "lb_method": sdnlb.RoundRobin,
		"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "forwarding": sdnlb.ForwardingNAT}, 201, &pool)
	for _, h := range b.members {
		b.lb.MustCreateMember(&pool, h.IP, memberPort)
	}
	b.lb.WaitPoolMembers(pool.ID, len(b.members), 10*time.Second)
	b.waitBuckets(t, len(b.members), 10*time.Second)
	switched := "http://" + net.JoinHostPort(sw.Address, strconv.Itoa(vipPort)) + "/"
	direct := "http://" + net.JoinHostPort(b.members[0].IP, strconv.Itoa(memberPort)) + "/"

	for _, round := range []struct{ name, url string }{
		{"directly to a member", direct},
		{"through the SWITCH NAT VIP", switched},
		{"through the CONTROLLER VIP", b.url},
		{"through the SWITCH NAT VIP again", switched},
		{"directly to a member again", direct},
	} {
		start, before := time.Now(), tcpCounter(t, c, "TCPSynRetrans")
		counts, errs := fromPorts(c, round.url)
		requireRound(t, round.name, counts, errs)
		// Retransmitted SYNs are the members' refusals, answered at once.
		t.Logf("%s: %v, %d SYNs retransmitted, answers %v", round.name, time.Since(start).Round(time.Millisecond),
			tcpCounter(t, c, "TCPSynRetrans")-before, counts)
	}
}

// keptConn is a client's HTTP connection to a VIP, kept open across
// requests, and the member that answered its first one.
type keptConn struct {
	conn   net.Conn
	r      *bufio.Reader
	member string
}

// keepOpen opens a connection from c to addr and asks once.
func keepOpen(tb testing.TB, c *Host, addr string) *keptConn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), reuseTimeout)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", addr)
	if err != nil {
		tb.Fatalf("connect to %s from %s: %v", addr, c.Name, err)
	}
	k := &keptConn{conn: conn, r: bufio.NewReader(conn)}
	tb.Cleanup(func() { conn.Close() })
	if k.member, err = k.ask(); err != nil {
		tb.Fatalf("first request on a kept connection to %s: %v", addr, err)
	}
	return k
}

// ask sends one request on the connection and returns the answer's body.
func (k *keptConn) ask() (string, error) {
	if err := k.conn.SetDeadline(time.Now().Add(reuseTimeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(k.conn, "GET / HTTP/1.1\r\nHost: vip\r\n\r\n"); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// Connections established through a SWITCH VIP of either forwarding keep
// their member while the pool changes under them: a member drained, one
// added, one deleted (its own connections end with it), a weight changed.
func TestTraffic_MembershipChangesKeepConnections(t *testing.T) {
	const (
		held    = 24 // connections per VIP
		natPort = 8080
		dsrPort = 8082
	)
	sw := NewSwitch(t)
	natClient := sw.AddHost(t, "c1", sw.Addr(1))
	dsrClient := sw.AddHost(t, "c2", sw.Addr(2))
	natVIP, dsrVIP := sw.Addr(100), sw.Addr(101)
	var hosts []*Host
	for i := range 4 {
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		holdVIP(t, h, dsrVIP)
		h.ServeHTTP(t, natPort, "srv"+strconv.Itoa(i+1))
		h.ServeHTTP(t, dsrPort, "srv"+strconv.Itoa(i+1))
		hosts = append(hosts, h)
	}
	lb := startSDNLB(t)
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	type path struct {
		name    string
		client  *Host
		addr    string
		pool    sdnlb.Pool
		port    int
		members map[string]*sdnlb.Member // by server name
		conns   []*keptConn
	}
	paths := []*path{
		{name: "SWITCH NAT", client: natClient, addr: net.JoinHostPort(natVIP, strconv.Itoa(vipPort)), port: natPort},
		{name: "SWITCH DSR", client: dsrClient, addr: net.JoinHostPort(dsrVIP, strconv.Itoa(dsrPort))},
	}
	for _, p := range paths {
		var vip *sdnlb.VIP
		fwd := sdnlb.ForwardingNAT
		if p.port == 0 {
			vip, fwd = lb.MustCreateVIP("dsr", dsrVIP, sdnlb.ProtocolTCP, dsrPort, nil), sdnlb.ForwardingDSR
		} else {
			vip = lb.MustCreateVIP("nat", natVIP, sdnlb.ProtocolTCP, vipPort, nil)
		}
		lb.MustAPI("POST", "/v1/pools", map[string]any{"name": vip.Name, "vip_id": vip.ID, "lb_method": sdnlb.RoundRobin,
			"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "forwarding": fwd}, 201, &p.pool)
		p.members = map[string]*sdnlb.Member{}
		for i, h := range hosts[:3] {
			p.members["srv"+strconv.Itoa(i+1)] = lb.MustCreateMember(&p.pool, h.IP, p.port)
		}
		lb.WaitPoolMembers(p.pool.ID, 3, 10*time.Second)
	}
	bed := &lbBed{sw: sw}
	bed.waitBuckets(t, 6, 10*time.Second)
	for _, p := range paths {
		for range held {
			p.conns = append(p.conns, keepOpen(t, p.client, p.addr))
		}
	}
	gone := map[string]bool{} // members whose connections end with them

	check := func(step string) {
		t.Helper()
		for _, p := range paths {
			kept, lost := 0, 0
			for _, k := range p.conns {
				if gone[k.member] {
					continue
				}
				if body, err := k.ask(); err != nil || body != k.member {
					lost++
					if lost == 1 {
						t.Errorf("%s, after %s: a connection to %s answered %q, %v", p.name, step, k.member, body, err)
					}
					continue
				}
				kept++
			}
			if lost > 0 {
				t.Errorf("%s, after %s: %d connections lost their member, %d kept it", p.name, step, lost, kept)
			}
		}
	}
	check("nothing")

	for _, p := range paths {
		lb.MustAPI(http.MethodPatch, "/v1/members/"+p.members["srv1"].ID, map[string]any{"admin_state_up": false}, http.StatusOK, nil)
	}
	bed.waitBuckets(t, 4, 10*time.Second)
	check("srv1 was drained")

	for _, p := range paths {
		p.members["srv4"] = lb.MustCreateMember(&p.pool, hosts[3].IP, p.port)
	}
	bed.waitBuckets(t, 6, 10*time.Second)
	check("srv4 was added")

	for _, p := range paths {
		lb.MustAPI(http.MethodDelete, "/v1/members/"+p.members["srv2"].ID, nil, http.StatusNoContent, nil)
	}
	gone["srv2"] = true
	bed.waitBuckets(t, 4, 10*time.Second)
	check("srv2 was deleted")

	before := bed.buckets(t)
	for _, p := range paths {
		lb.MustAPI(http.MethodPatch, "/v1/members/"+p.members["srv3"].ID, map[string]any{"weight": 3}, http.StatusOK, nil)
	}
	for deadline := time.Now().Add(10 * time.Second); maps.Equal(bed.buckets(t), before); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the buckets did not follow srv3's new weight in 10s: %v", before)
		}
	}
	check("srv3's weight went from 1 to 3")
}
