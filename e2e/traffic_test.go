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
// reuseBase+n-1 to url, reuseWorkers at a time, and returns the answers by
// body and the failures.
func fromPorts(c *Host, url string, n int) (map[string]int, []error) {
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
	for p := reuseBase; p < reuseBase+n; p++ {
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
		tb.Errorf("%s: %d of %d requests failed, first: %v (answers: %v)", round, len(errs), len(errs)+total(counts), errs[0], counts)
	}
}

// total is the number of answers counted.
func total(counts map[string]int) int {
	var n int
	for _, c := range counts {
		n += c
	}
	return n
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

// forwardingBed is a switch whose member hosts serve a SWITCH NAT VIP (on
// natPort, the VIP on vipPort) and a SWITCH DSR VIP (on dsrPort, the VIP
// held on their loopback), each VIP with a pool of its own, and a client
// for each VIP.
type forwardingBed struct {
	sw    *Switch
	lb    *sdnlbProc
	hosts []*Host
	paths []*forwardingPath // SWITCH NAT, SWITCH DSR
}

// forwardingPath is one VIP of a forwardingBed.
type forwardingPath struct {
	name    string
	client  *Host
	addr    string // the VIP's address and port
	port    int    // the members' port in the pool (0 for DSR)
	pool    sdnlb.Pool
	members map[string]*sdnlb.Member // by server name
}

const (
	forwardingNATPort = 8080
	forwardingDSRPort = 8082
)

// newForwardingBed builds a forwardingBed of hosts member hosts, the first
// inPool of them members of both pools, and waits until the switch's
// groups have them.
func newForwardingBed(tb testing.TB, hosts, inPool int) *forwardingBed {
	tb.Helper()
	b := &forwardingBed{sw: NewSwitch(tb)}
	natVIP, dsrVIP := b.sw.Addr(100), b.sw.Addr(101)
	b.paths = []*forwardingPath{
		{name: "SWITCH NAT", client: b.sw.AddHost(tb, "c1", b.sw.Addr(1)),
			addr: net.JoinHostPort(natVIP, strconv.Itoa(vipPort)), port: forwardingNATPort},
		{name: "SWITCH DSR", client: b.sw.AddHost(tb, "c2", b.sw.Addr(2)),
			addr: net.JoinHostPort(dsrVIP, strconv.Itoa(forwardingDSRPort))},
	}
	for i := range hosts {
		h := b.sw.AddHost(tb, "m"+strconv.Itoa(i+1), b.sw.Addr(byte(11+i)))
		h.HoldVIP(tb, dsrVIP)
		h.ServeHTTP(tb, forwardingNATPort, "srv"+strconv.Itoa(i+1))
		h.ServeHTTP(tb, forwardingDSRPort, "srv"+strconv.Itoa(i+1))
		b.hosts = append(b.hosts, h)
	}
	b.lb = startSDNLB(tb)
	b.lb.Connect(b.sw)
	dumpOnFailure(tb, b.sw, b.lb)
	for _, p := range b.paths {
		var vip *sdnlb.VIP
		fwd := sdnlb.ForwardingNAT
		if p.port == 0 {
			vip, fwd = b.lb.MustCreateVIP("dsr", dsrVIP, sdnlb.ProtocolTCP, forwardingDSRPort, nil), sdnlb.ForwardingDSR
		} else {
			vip = b.lb.MustCreateVIP("nat", natVIP, sdnlb.ProtocolTCP, vipPort, nil)
		}
		b.lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"name": vip.Name, "vip_id": vip.ID, "lb_method": sdnlb.WeightedRoundRobin,
			"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "forwarding": fwd}, http.StatusCreated, &p.pool)
		p.members = map[string]*sdnlb.Member{}
		for i, h := range b.hosts[:inPool] {
			p.members["srv"+strconv.Itoa(i+1)] = b.lb.MustCreateMember(&p.pool, h.IP, p.port)
		}
		b.lb.WaitPoolMembers(p.pool.ID, inPool, 10*time.Second)
	}
	b.waitBuckets(tb, 2*inPool)
	return b
}

// waitBuckets waits until the switch's groups send to n members in all.
func (b *forwardingBed) waitBuckets(tb testing.TB, n int) {
	tb.Helper()
	(&lbBed{sw: b.sw}).waitBuckets(tb, n, 10*time.Second)
}

// A client comes back after a pause from the source ports it used before,
// to a SWITCH VIP of each forwarding. Every request gets through at the
// first SYN: the switch keeps each connection's member without having the
// tracker rewrite a client's port, and the tracker finds no packet out of
// its window.
func TestTraffic_PortReuseAfterPause(t *testing.T) {
	const pause = 6 * time.Second // between the tracker's first sweeps and the hosts' TIME_WAIT
	b := newForwardingBed(t, 3, 3)
	sw := b.sw

	for _, path := range b.paths {
		url := "http://" + path.addr + "/"
		t.Run(strings.ReplaceAll(path.name, " ", "_"), func(t *testing.T) {
			counts, errs := fromPorts(path.client, url, reusePorts)
			requireRound(t, "before the pause", counts, errs)
			time.Sleep(pause)
			seq, syns := seqCheckFailures(sw), tcpCounter(t, path.client, "TCPSynRetrans")
			counts, errs = fromPorts(path.client, url, reusePorts)
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
	switched := b.addSwitchedNATVIP(t)
	direct := "http://" + net.JoinHostPort(b.members[0].IP, strconv.Itoa(memberPort)) + "/"

	for _, round := range []struct{ name, url string }{
		{"directly to a member", direct},
		{"through the SWITCH NAT VIP", switched},
		{"through the CONTROLLER VIP", b.url},
		{"through the SWITCH NAT VIP again", switched},
		{"directly to a member again", direct},
	} {
		start, before := time.Now(), tcpCounter(t, c, "TCPSynRetrans")
		counts, errs := fromPorts(c, round.url, reusePorts)
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
func (k *keptConn) ask() (string, error) { return k.askWithin(reuseTimeout) }

// askWithin is ask with a deadline of d.
func (k *keptConn) askWithin(d time.Duration) (string, error) {
	if err := k.conn.SetDeadline(time.Now().Add(d)); err != nil {
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
	const held = 24 // connections per VIP
	b := newForwardingBed(t, 4, 3)
	conns := map[*forwardingPath][]*keptConn{}
	for _, p := range b.paths {
		for range held {
			conns[p] = append(conns[p], keepOpen(t, p.client, p.addr))
		}
	}
	gone := map[string]bool{} // members whose connections end with them

	check := func(step string) {
		t.Helper()
		for _, p := range b.paths {
			kept, lost := 0, 0
			for _, k := range conns[p] {
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

	for _, p := range b.paths {
		b.lb.MustAPI(http.MethodPatch, "/v1/members/"+p.members["srv1"].ID, map[string]any{"admin_state_up": false}, http.StatusOK, nil)
	}
	b.waitBuckets(t, 4)
	check("srv1 was drained")

	for _, p := range b.paths {
		p.members["srv4"] = b.lb.MustCreateMember(&p.pool, b.hosts[3].IP, p.port)
	}
	b.waitBuckets(t, 6)
	check("srv4 was added")

	for _, p := range b.paths {
		b.lb.MustAPI(http.MethodDelete, "/v1/members/"+p.members["srv2"].ID, nil, http.StatusNoContent, nil)
	}
	gone["srv2"] = true
	b.waitBuckets(t, 4)
	check("srv2 was deleted")

	bed := &lbBed{sw: b.sw}
	before := bed.buckets(t)
	for _, p := range b.paths {
		b.lb.MustAPI(http.MethodPatch, "/v1/members/"+p.members["srv3"].ID, map[string]any{"weight": 3}, http.StatusOK, nil)
	}
	for deadline := time.Now().Add(10 * time.Second); maps.Equal(bed.buckets(t), before); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the buckets did not follow srv3's new weight in 10s: %v", before)
		}
	}
	check("srv3's weight went from 1 to 3")
}
