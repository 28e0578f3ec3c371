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

// answerBed is a client and a SWITCH NAT and a SWITCH DSR VIP of one
// family, two members each, for the tests of the switch's answers to
// ARP and neighbour solicitations.
type answerBed struct {
	sw   *Switch
	lb   *sdnlbProc
	c    *Host
	vips map[sdnlb.Forwarding]*sdnlb.VIP
	urls map[sdnlb.Forwarding]string
}

func newAnswerBed(t *testing.T, f family) *answerBed {
	t.Helper()
	b := &answerBed{sw: NewSwitch(t), vips: map[sdnlb.Forwarding]*sdnlb.VIP{}, urls: map[sdnlb.Forwarding]string{}}
	b.lb = startSDNLB(t)
	b.c = b.sw.AddHost(t, "c1", b.sw.Addr(1))
	members := map[sdnlb.Forwarding][]*Host{}
	natVIPAddr, dsrVIPAddr := f.addr(b.sw, 100), f.addr(b.sw, 101)
	for i := range 2 {
		h := b.sw.AddHost(t, "n"+strconv.Itoa(i+1), b.sw.Addr(byte(11+i)))
		h.ServeHTTP(t, memberPort, "nat"+strconv.Itoa(i+1))
		members[sdnlb.ForwardingNAT] = append(members[sdnlb.ForwardingNAT], h)
		h = b.sw.AddHost(t, "d"+strconv.Itoa(i+1), b.sw.Addr(byte(21+i)))
		h.HoldVIP(t, dsrVIPAddr)
		h.ServeHTTP(t, memberPort, "dsr"+strconv.Itoa(i+1))
		members[sdnlb.ForwardingDSR] = append(members[sdnlb.ForwardingDSR], h)
	}
	b.lb.Connect(b.sw)
	dumpOnFailure(t, b.sw, b.lb)
	b.vips[sdnlb.ForwardingNAT] = b.lb.MustCreateVIP("nat", natVIPAddr, sdnlb.ProtocolTCP, vipPort, nil)
	b.vips[sdnlb.ForwardingDSR] = b.lb.MustCreateVIP("dsr", dsrVIPAddr, sdnlb.ProtocolTCP, memberPort, nil)
	for fwd, hosts := range members {
		v := b.vips[fwd]
		var pool sdnlb.Pool
		b.lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"name": v.Name, "vip_id": v.ID, "lb_method": sdnlb.RoundRobin,
			"protocol": sdnlb.ProtocolTCP, "forwarding": fwd}, http.StatusCreated, &pool)
		if pool.Dispatch != sdnlb.DispatchSwitch {
			t.Fatalf("a round-robin pool of %s is dispatched by %s, want %s", f.name, pool.Dispatch, sdnlb.DispatchSwitch)
		}
		for _, h := range hosts {
			b.lb.MustCreateMember(&pool, f.hostIP(h), memberPort)
		}
		b.lb.WaitPoolMembers(pool.ID, len(hosts), 10*time.Second)
		b.urls[fwd] = "http://" + net.JoinHostPort(v.Address, strconv.Itoa(v.Port)) + "/"
	}
	(&lbBed{sw: b.sw}).waitBuckets(t, len(members[sdnlb.ForwardingNAT])+len(members[sdnlb.ForwardingDSR]), 10*time.Second)
	return b
}

// getAll requires an answer through each VIP from one of its members.
func (b *answerBed) getAll(t *testing.T, stage string) {
	t.Helper()
	for fwd, url := range b.urls {
		if body, err := get(b.c, url, 5*time.Second); err != nil || !strings.HasPrefix(body, strings.ToLower(string(fwd))) {
			t.Fatalf("%s: GET %s = %q, %v; want an answer from a %s member", stage, url, body, err, fwd)
		}
	}
}

// resolved requires that the client resolved each VIP to its MAC.
func (b *answerBed) resolved(t *testing.T, stage string) {
	t.Helper()
	for _, v := range b.vips {
		if got := neighMAC(t, b.c, v.Address); !sameMAC(got, v.MAC) {
			t.Errorf("%s: the client resolved VIP %s to %q, want its MAC %s", stage, v.Address, got, v.MAC)
		}
	}
}

// probeCached sets the client's entry for each VIP to PROBE, which is
// confirmed by unicast requests (solicitations) to the cached MAC only:
// it turns REACHABLE when one is answered, FAILED after three unanswered
// ones. It requires REACHABLE, and the switch's answer row (answers counts
// what it took) to have answered.
func (b *answerBed) probeCached(t *testing.T, answers func(testing.TB, *Switch, string) int) {
	t.Helper()
	for _, v := range b.vips {
		answered := answers(t, b.sw, v.Address)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := b.c.Exec(ctx, "ip", "neigh", "replace", v.Address, "lladdr", v.MAC, "dev", "eth0", "nud", "probe")
		cancel()
		if err != nil {
			t.Fatalf("set the client's entry for %s to PROBE: %v\n%s", v.Address, err, out)
		}
		if state := waitNeighState(t, b.c, v.Address, "REACHABLE", 5*time.Second); state != "REACHABLE" {
			t.Errorf("the unicast request for %s went unanswered: entry %s", v.Address, state)
		}
		if n := answers(t, b.sw, v.Address); n <= answered {
			t.Errorf("the switch's answer for %s counts %d packets, %d before the unicast request", v.Address, n, answered)
		}
	}
}

// The switch answers ARP for its VIPs itself. While the controller runs,
// a client's requests for a SWITCH NAT and a SWITCH DSR VIP never reach
// it; once it is killed, a client with an empty cache still resolves both
// to their MACs and gets answers through them, and a cached entry is
// confirmed by a unicast request to the VIP's MAC.
func TestARP_AnsweredBySwitch(t *testing.T) {
	b := newAnswerBed(t, families[0])
	lb := b.lb
	b.getAll(t, "before")

	// The switch reports the answer as the controller built it, which is
	// what adoption compares after a restart.
	dpid := lb.Switches()[0].DPID
	var dump struct {
		Flows []sdnlb.Flow `json:"flows"`
	}
	lb.MustAPI(http.MethodGet, "/v1/switches/"+dpid+"/flows", nil, http.StatusOK, &dump)
	for _, v := range b.vips {
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
	flushNeighbours(t, b.c)
	b.getAll(t, "with the controller")
	b.resolved(t, "with the controller")
	if n := lb.Metric(arpPacketIns) - before; n != 0 {
		t.Errorf("the controller was sent %v ARP packets, want none: the switch answers", n)
	}

	lb.Kill()
	flushNeighbours(t, b.c)
	b.getAll(t, "without the controller")
	b.resolved(t, "without the controller")
	b.probeCached(t, arpAnswers)
	b.getAll(t, "after the unicast requests")
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
