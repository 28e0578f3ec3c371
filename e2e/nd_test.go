//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// ndAnswers returns how many solicitations the switch's neighbour
// discovery answer for vip has answered.
func ndAnswers(tb testing.TB, sw *Switch, vip string) int {
	tb.Helper()
	for _, f := range sw.DumpFlows() {
		if strings.Contains(f, "priority=510,icmp6,") && strings.Contains(f, "nd_target="+vip+" ") {
			if m := nPackets.FindStringSubmatch(f); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
		}
	}
	tb.Fatalf("the switch holds no neighbour discovery answer for %s:\n%s", vip, strings.Join(sw.DumpFlows(), "\n"))
	return 0
}

// The switch answers neighbour solicitations for its IPv6 VIPs itself, as
// it answers ARP: a client with an empty cache resolves a SWITCH NAT and a
// SWITCH DSR VIP to their MACs through the switch's rows while the
// controller runs and once it is killed, and a cached entry is confirmed
// by a unicast solicitation.
func TestND_AnsweredBySwitch(t *testing.T) {
	sw := NewSwitch(t)
	lb := startSDNLB(t)
	c := sw.AddHost(t, "c1", sw.Addr(1))
	natVIPAddr, dsrVIPAddr := sw.Addr6(100), sw.Addr6(101)
	members := map[sdnlb.Forwarding][]*Host{}
	for i := range 2 {
		h := sw.AddHost(t, "n"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		h.ServeHTTP(t, memberPort, "nat"+strconv.Itoa(i+1))
		members[sdnlb.ForwardingNAT] = append(members[sdnlb.ForwardingNAT], h)
		h = sw.AddHost(t, "d"+strconv.Itoa(i+1), sw.Addr(byte(21+i)))
		h.HoldVIP(t, dsrVIPAddr)
		h.ServeHTTP(t, memberPort, "dsr"+strconv.Itoa(i+1))
		members[sdnlb.ForwardingDSR] = append(members[sdnlb.ForwardingDSR], h)
	}
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	vips := map[sdnlb.Forwarding]*sdnlb.VIP{
		sdnlb.ForwardingNAT: lb.MustCreateVIP("nat", natVIPAddr, sdnlb.ProtocolTCP, vipPort, nil),
		sdnlb.ForwardingDSR: lb.MustCreateVIP("dsr", dsrVIPAddr, sdnlb.ProtocolTCP, memberPort, nil),
	}
	urls := map[sdnlb.Forwarding]string{}
	for fwd, hosts := range members {
		v := vips[fwd]
		var pool sdnlb.Pool
		lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"name": v.Name, "vip_id": v.ID, "lb_method": sdnlb.RoundRobin,
			"protocol": sdnlb.ProtocolTCP, "forwarding": fwd}, http.StatusCreated, &pool)
		if pool.Dispatch != sdnlb.DispatchSwitch {
			t.Fatalf("an IPv6 VIP's round-robin pool is dispatched by %s, want %s", pool.Dispatch, sdnlb.DispatchSwitch)
		}
		for _, h := range hosts {
			lb.MustCreateMember(&pool, h.IP6, memberPort)
		}
		lb.WaitPoolMembers(pool.ID, len(hosts), 10*time.Second)
		urls[fwd] = "http://" + net.JoinHostPort(v.Address, strconv.Itoa(v.Port)) + "/"
	}
	(&lbBed{sw: sw}).waitBuckets(t, 4, 10*time.Second)
	getAll := func(stage string) {
		t.Helper()
		for fwd, url := range urls {
			if body, err := get(c, url, 5*time.Second); err != nil || !strings.HasPrefix(body, strings.ToLower(string(fwd))) {
				t.Fatalf("%s: GET %s = %q, %v; want an answer from a %s member", stage, url, body, err, fwd)
			}
		}
	}
	resolved := func(stage string) {
		t.Helper()
		for _, v := range vips {
			if got := neighMAC(t, c, v.Address); !sameMAC(got, v.MAC) {
				t.Errorf("%s: the client resolved VIP %s to %q, want its MAC %s", stage, v.Address, got, v.MAC)
			}
		}
	}
	answered := func() int { return ndAnswers(t, sw, natVIPAddr) + ndAnswers(t, sw, dsrVIPAddr) }

	before := answered()
	flushNeighbours(t, c)
	getAll("with the controller")
	resolved("with the controller")
	if n := answered() - before; n < 2 {
		t.Errorf("the switch answered %d solicitations for the two VIPs, want both", n)
	}

	lb.Kill()
	flushNeighbours(t, c)
	getAll("without the controller")
	resolved("without the controller")
	for _, v := range vips {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := c.Exec(ctx, "ip", "neigh", "replace", v.Address, "lladdr", v.MAC, "dev", "eth0", "nud", "probe")
		cancel()
		if err != nil {
			t.Fatalf("set the client's entry for %s to PROBE: %v\n%s", v.Address, err, out)
		}
		if state := waitNeighState(t, c, v.Address, "REACHABLE", 5*time.Second); state != "REACHABLE" {
			t.Errorf("the unicast solicitation for %s went unanswered: entry %s", v.Address, state)
		}
	}
	getAll("after the unicast solicitations")
}
