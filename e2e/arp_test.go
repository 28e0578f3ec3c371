//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// arpPacketIns is the controller's count of the ARP packets it was sent.
const arpPacketIns = `sdnlb_controller_packet_ins_total{kind="arp"}`

// The switch answers ARP for its VIPs itself. While the controller runs,
// a client's requests for a SWITCH NAT and a SWITCH DSR VIP never reach
// it; once it is killed, a client with an empty cache still resolves both
// to their MACs and gets answers through them, and a cached entry is
// confirmed by a unicast request to the VIP's MAC.
func TestARP_AnsweredBySwitch(t *testing.T) {
	sw := NewSwitch(t)
	lb := startSDNLB(t)
	c := sw.AddHost(t, "c1", sw.Addr(1))
	var natMembers, dsrMembers []*Host
	natVIPAddr, dsrVIPAddr := sw.Addr(100), sw.Addr(101)
	for i := range 2 {
		h := sw.AddHost(t, "n"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		h.ServeHTTP(t, memberPort, "nat"+strconv.Itoa(i+1))
		natMembers = append(natMembers, h)
		h = sw.AddHost(t, "d"+strconv.Itoa(i+1), sw.Addr(byte(21+i)))
		h.HoldVIP(t, dsrVIPAddr)
		h.ServeHTTP(t, memberPort, "dsr"+strconv.Itoa(i+1))
		dsrMembers = append(dsrMembers, h)
	}
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	vips := map[sdnlb.Forwarding]*sdnlb.VIP{
		sdnlb.ForwardingNAT: lb.MustCreateVIP("nat", natVIPAddr, sdnlb.ProtocolTCP, vipPort, nil),
		sdnlb.ForwardingDSR: lb.MustCreateVIP("dsr", dsrVIPAddr, sdnlb.ProtocolTCP, memberPort, nil),
	}
	urls := map[sdnlb.Forwarding]string{}
	for fwd, members := range map[sdnlb.Forwarding][]*Host{sdnlb.ForwardingNAT: natMembers, sdnlb.ForwardingDSR: dsrMembers} {
		v := vips[fwd]
		var pool sdnlb.Pool
		lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"name": v.Name, "vip_id": v.ID, "lb_method": sdnlb.RoundRobin,
			"protocol": sdnlb.ProtocolTCP, "dispatch": sdnlb.DispatchSwitch, "forwarding": fwd}, http.StatusCreated, &pool)
		for _, h := range members {
			lb.MustCreateMember(&pool, h.IP, memberPort)
		}
		lb.WaitPoolMembers(pool.ID, len(members), 10*time.Second)
		urls[fwd] = "http://" + net.JoinHostPort(v.Address, strconv.Itoa(v.Port)) + "/"
	}
	(&lbBed{sw: sw}).waitBuckets(t, len(natMembers)+len(dsrMembers), 10*time.Second)
	getAll := func(stage string) {
		t.Helper()
		for fwd, url := range urls {
			if body, err := get(c, url, 5*time.Second); err != nil || !strings.HasPrefix(body, strings.ToLower(string(fwd))) {
				t.Fatalf("%s: GET %s = %q, %v; want an answer from a %s member", stage, url, body, err, fwd)
			}
		}
	}
	checkResolved := func(stage string) {
		t.Helper()
		for _, v := range vips {
			if got := neighMAC(t, c, v.Address); !sameMAC(got, v.MAC) {
				t.Errorf("%s: the client resolved VIP %s to %q, want its MAC %s", stage, v.Address, got, v.MAC)
			}
		}
	}
	getAll("before")

	// The switch reports the answer as the controller built it, which is
	// what adoption compares after a restart.
	dpid := lb.Switches()[0].DPID
	var dump struct {
		Flows []sdnlb.Flow `json:"flows"`
	}
	lb.MustAPI(http.MethodGet, "/v1/switches/"+dpid+"/flows", nil, http.StatusOK, &dump)
	for _, v := range vips {
		want := "move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:" + v.MAC + "->eth_src,set_field:2->arp_op," +
			"move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:" + v.MAC + "->arp_sha," +
			"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:" + v.Address + "->arp_spa,IN_PORT"
		found := false
		for _, f := range dump.Flows {
			if f.Match == "arp,arp_tpa="+v.Address+",arp_op=1" {
				found = true
				if f.Actions != want {
					t.Errorf("the switch shows the ARP answer for %s as\n  %s\nwant\n  %s", v.Address, f.Actions, want)
				}
			}
		}
		if !found {
			t.Errorf("the switch holds no ARP answer for %s", v.Address)
		}
	}

	// The controller runs, yet the requests of a client with an empty
	// cache never reach it.
	before := lb.Metric(arpPacketIns)
	flushNeighbours(t, c)
	getAll("with the controller")
	checkResolved("with the controller")
	if n := lb.Metric(arpPacketIns) - before; n != 0 {
		t.Errorf("the controller was sent %v ARP packets, want none: the switch answers", n)
	}

	lb.Kill()
	flushNeighbours(t, c)
	getAll("without the controller")
	checkResolved("without the controller")
	// A cached entry set to PROBE is confirmed by unicast requests to the
	// cached MAC only; it turns REACHABLE when one is answered, and
	// FAILED after three unanswered ones.
	for _, v := range vips {
		answered := arpAnswers(t, sw, v.Address)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := c.Exec(ctx, "ip", "neigh", "replace", v.Address, "lladdr", v.MAC, "dev", "eth0", "nud", "probe")
		cancel()
		if err != nil {
			t.Fatalf("set the client's entry for %s to PROBE: %v\n%s", v.Address, err, out)
		}
		if state := waitNeighState(t, c, v.Address, "REACHABLE", 5*time.Second); state != "REACHABLE" {
			t.Errorf("the unicast ARP request for %s went unanswered: entry %s", v.Address, state)
		}
		if n := arpAnswers(t, sw, v.Address); n <= answered {
			t.Errorf("the switch's ARP answer for %s counts %d packets, %d before the unicast request", v.Address, n, answered)
		}
	}
	getAll("after the unicast requests")
}

// flushNeighbours empties h's ARP cache.
func flushNeighbours(tb testing.TB, h *Host) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := h.Exec(ctx, "ip", "neigh", "flush", "all"); err != nil {
		tb.Fatalf("flush %s's neighbours: %v\n%s", h.Name, err, out)
	}
}

// neighState returns the state of h's neighbour entry for ip (REACHABLE,
// STALE, PROBE, FAILED...), "" when there is none.
func neighState(tb testing.TB, h *Host, ip string) string {
	tb.Helper()
	fields := neighEntry(tb, h, ip)
	if len(fields) == 0 {
		return ""
	}
	return fields[len(fields)-1]
}

// waitNeighState waits until h's entry for ip is in state want, or
// FAILED, and returns the last state seen.
func waitNeighState(tb testing.TB, h *Host, ip, want string, timeout time.Duration) string {
	tb.Helper()
	start := time.Now()
	var state string
	for i := 0; i < 100 && time.Since(start) < timeout; i++ {
		if state = neighState(tb, h, ip); state == want || state == "FAILED" {
			return state
		}
		time.Sleep(50 * time.Millisecond)
	}
	return state
}

var nPackets = regexp.MustCompile(`n_packets=([0-9]+)`)

// arpAnswers returns how many requests the switch's ARP answer for vip
// has answered.
func arpAnswers(tb testing.TB, sw *Switch, vip string) int {
	tb.Helper()
	for _, f := range sw.DumpFlows() {
		if strings.Contains(f, "priority=510,arp,arp_tpa="+vip+",") {
			if m := nPackets.FindStringSubmatch(f); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
		}
	}
	tb.Fatalf("the switch holds no ARP answer for %s:\n%s", vip, strings.Join(sw.DumpFlows(), "\n"))
	return 0
}
