//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// A bridge under sdnlb with a SWITCH pool moved from OpenFlow 1.3 to 1.0
// and back: each time it reconnects holding the rows the other version
// installed. On 1.0 the 1.3 pipeline's rows (Nicira actions, tables
// beyond 0) cannot be read or deleted one by one, so the controller
// deletes every flow, once, and programs the switch afresh; back on 1.3
// the 1.0 rows read whole. Each time the switch connects, stays
// connected, and its clients' requests reach every member.
func TestOpenFlow_VersionFlips(t *testing.T) {
	b := newBedOn(t, openFlow13, 1, 3, sdnlb.RoundRobin, sdnlb.DispatchSwitch, nil)
	// The switch hashes each connection: a few may all miss one member,
	// so the requests go on until every member answered, boundedly.
	waitEveryMember(t, b, 10*time.Second)
	for _, protocol := range []string{openFlow10, openFlow13} {
		b.sw.Protocol = protocol
		b.sw.Vsctl("set", "bridge", b.sw.Name, "protocols="+protocol)
		connected := waitOpenFlow(t, b.lb, protocol, 20*time.Second)
		if protocol == openFlow13 {
			b.waitBuckets(t, len(b.members), 10*time.Second)
		}
		// The wiped switch shows the members again as they answer the
		// controller's ARP; until then it passes over the silent ones.
		waitEveryMember(t, b, 10*time.Second)
		if now := waitOpenFlow(t, b.lb, protocol, time.Second); !now.Equal(connected) {
			t.Errorf("on %s the switch reconnected at %v after connecting at %v", protocol, now, connected)
		}
		if protocol == openFlow10 {
			for _, l := range b.sw.DumpFlows("--no-stats") {
				if strings.Contains(l, "table=") { // table 0 goes unnamed
					t.Errorf("on 1.0 the bridge still holds a row outside table 0: %s", l)
				}
			}
		}
	}
	if lines := b.lb.LogLines("deleting every flow"); len(lines) != 1 {
		t.Errorf("%d log lines about deleting every flow, want 1 (on 1.0):\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// waitEveryMember sends requests from b's first client until every member
// has answered one, boundedly.
func waitEveryMember(tb testing.TB, b *lbBed, timeout time.Duration) {
	tb.Helper()
	seen := map[string]bool{}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && len(seen) < len(b.servers); {
		if body, err := get(b.clients[0], b.url, 5*time.Second); err == nil {
			seen[body] = true
		}
	}
	if len(seen) < len(b.servers) {
		tb.Fatalf("after %v only %v of %d members answered", timeout, seen, len(b.servers))
	}
}

// waitEndsShown waits until the switch's connection flows show the end of
// every connection but those of openFlows flows, so that they change no
// more: a TCP connection's flows get a closing connection's idle timeout
// once the controller has its client's FIN, a moment after the client
// closes.
func waitEndsShown(tb testing.TB, sw *Switch, openFlows int) {
	tb.Helper()
	var open []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		open = open[:0]
		for _, f := range sw.DumpFlows() {
			if strings.Contains(f, "priority=1000,") && !strings.Contains(f, "idle_timeout=10,") {
				open = append(open, f)
			}
		}
		if len(open) == openFlows {
			return
		}
	}
	tb.Fatalf("after 10s %d connection flows show no end, want %d:\n%s", len(open), openFlows, strings.Join(open, "\n"))
}

// waitOpenFlow waits until the controller's one switch is connected on
// protocol (as Switch.Protocol names it) and returns since when.
func waitOpenFlow(tb testing.TB, lb *sdnlbProc, protocol string, timeout time.Duration) time.Time {
	tb.Helper()
	want := map[string]string{openFlow10: "1.0", openFlow13: "1.3"}[protocol]
	var got []*sdnlb.Switch
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = lb.Switches(); len(got) == 1 && got[0].OpenFlow == want {
			return got[0].ConnectedAt
		}
	}
	tb.Fatalf("no switch connected on OpenFlow %s after %v: %+v", want, timeout, got)
	return time.Time{}
}

// sdnlb killed and started again on the same database, in front of a
// CONTROLLER pool: a connection held through the VIP survives (in the
// switch's tracker, on 1.3; by its flows, on 1.0), the new process adopts
// the switch's flows as they are, and new connections spread over every
// member again.
func TestRestart_KeepsControllerConnections(t *testing.T) {
	forEachOpenFlow(t, func(t *testing.T, protocol string) {
		b := newBedOn(t, protocol, 1, 3, sdnlb.RoundRobin, sdnlb.DispatchController, nil)
		held := openHeld(t, b, b.clients[0])
		requireAll(t, spread(t, b.clients, b.url, 6), b.serverNames())
		if !b.tracks() {
			waitEndsShown(t, b.sw, 2) // the held connection's pair alone stays open
		}
		before := flowState(b.sw)

		b.lb.Kill()
		b.lb = startSDNLB(t, "--db", b.lb.DB)
		b.lb.Connect(b.sw)
		held.again(t)
		if after := flowState(b.sw); !slices.Equal(before, after) {
			t.Errorf("the switch after the restart differs from before:\nbefore:\n%s\nafter:\n%s",
				strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
		requireAll(t, spread(t, b.clients, b.url, 6), b.serverNames())
	})
}

// One controller, two switches, one speaking OpenFlow 1.3 and one 1.0,
// each with its own client and members, both serving the same VIP of a
// SWITCH pool: the 1.3 switch dispatches it in its select group, the
// controller on the 1.0 switch, and the pool's stats say so. The
// switches are not linked: each client is served by the members of its
// own switch (the 1.3 switch's group holds the members it has shown; the
// controller passes over the others once they stay silent).
func TestOpenFlow10_BesideOpenFlow13(t *testing.T) {
	sw13 := NewSwitch(t)
	sw10 := sw13.AddBridge(t)
	sw10.Protocol = openFlow10
	lb := startSDNLB(t)
	dumpOnFailure(t, sw13, lb)
	dumpOnFailure(t, sw10, lb)
	c13 := sw13.AddHost(t, "c1", sw13.Addr(1))
	c10 := sw10.AddHost(t, "c2", sw13.Addr(2))
	var members []*Host
	names := map[*Switch][]string{}
	for i, sw := range []*Switch{sw13, sw13, sw10, sw10} {
		name := "srv" + strconv.Itoa(i+1)
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw13.Addr(byte(11+i)))
		h.ServeHTTP(t, memberPort, name)
		members = append(members, h)
		names[sw] = append(names[sw], name)
	}
	lb.Connect(sw13)
	sw10.SetController(lb.OpenFlowAddr)
	lb.WaitSwitches(2, 20*time.Second)

	var list struct{ Switches []sdnlb.Switch }
	lb.MustAPI("GET", "/v1/switches", nil, 200, &list)
	switches := list.Switches
	versions := map[string]bool{}
	for _, s := range switches {
		versions[s.OpenFlow] = s.SelectGroups
	}
	if groups, ok := versions["1.3"]; !ok || !groups {
		t.Errorf("switches %+v: want one speaking 1.3, with select groups", switches)
	}
	if groups, ok := versions["1.0"]; !ok || groups {
		t.Errorf("switches %+v: want one speaking 1.0, without select groups", switches)
	}

	vip := lb.MustCreateVIP("web", sw13.Addr(100), sdnlb.ProtocolTCP, vipPort, nil)
	pool := lb.MustCreatePool("web", vip, sdnlb.RoundRobin, sdnlb.DispatchSwitch)
	for _, h := range members {
		lb.MustCreateMember(pool, h.IP, memberPort)
	}
	lb.WaitPoolMembers(pool.ID, len(members), 10*time.Second)
	url := "http://" + vip.Address + ":" + strconv.Itoa(vipPort) + "/"

	// The first connections may wait for members the client's switch
	// has not shown (a SYN is held while the controller asks for them,
	// then retransmitted) until the controller passes over them.
	for _, c := range []*Host{c13, c10} {
		for i := range 4 {
			if _, err := get(c, url, 15*time.Second); err != nil {
				t.Fatalf("request %d from %s while the switches learn the members: %v", i, c.Name, err)
			}
		}
	}
	for c, sw := range map[*Host]*Switch{c13: sw13, c10: sw10} {
		counts := spread(t, []*Host{c}, url, 12)
		requireAll(t, counts, names[sw])
		for body := range counts {
			if !slices.Contains(names[sw], body) {
				t.Errorf("%s (switch speaking %s) answered by %s, a member of the other switch: %v", c.Name, sw.Protocol, body, counts)
			}
		}
		if !sameMAC(neighMAC(t, c, vip.Address), vip.MAC) {
			t.Errorf("%s resolved the VIP to %s, want %s", c.Name, neighMAC(t, c, vip.Address), vip.MAC)
		}
	}
	var stats sdnlb.PoolStats
	lb.MustAPI("GET", "/v1/pools/"+pool.ID+"/stats", nil, 200, &stats)
	var dpid10 string
	for _, s := range switches {
		if s.OpenFlow == "1.0" {
			dpid10 = s.DPID
		}
	}
	if !slices.Equal(stats.ControllerDispatchedOn, []string{dpid10}) {
		t.Errorf("pool dispatched by the controller on %v, want the 1.0 switch %s", stats.ControllerDispatchedOn, dpid10)
	}
}

// The numbers in the cookies are the objects' own, whatever order they
// were created in: VIPs and members created, one of each deleted in the
// middle and more created after (their random ids in no order of
// creation), then sdnlb restarted on the same database. The CONTROLLER
// connections held across the restart (with flows of their own: the VIP
// has a connection limit) keep their members, and the new process finds
// their flows under the cookies it gives them: it sends none of them
// again, only what the adoption reports it changes.
func TestRestart_KeepsCookies(t *testing.T) {
	b := newBedOn(t, openFlow13, 1, 3, sdnlb.RoundRobin, sdnlb.DispatchController, map[string]any{"connection_limit": 1000})
	var others []*sdnlb.VIP
	for i := range 3 {
		others = append(others, b.lb.MustCreateVIP("other"+strconv.Itoa(i), b.sw.Addr(byte(101+i)), sdnlb.ProtocolTCP, vipPort, nil))
	}
	b.lb.MustAPI(http.MethodDelete, "/v1/vips/"+others[1].ID, nil, http.StatusNoContent, nil)
	b.lb.MustCreateVIP("other3", b.sw.Addr(104), sdnlb.ProtocolTCP, vipPort, nil)
	b.lb.MustAPI(http.MethodDelete, "/v1/members/"+b.mems[1].ID, nil, http.StatusNoContent, nil)
	b.lb.MustCreateMember(b.pool, b.members[1].IP, memberPort)
	b.lb.MustCreateMember(b.pool, b.addMemberHost(t).IP, memberPort)
	b.lb.WaitPoolMembers(b.pool.ID, len(b.members), 10*time.Second)

	// Round robin: one held connection to each member.
	var held []*heldConn
	members := map[string]bool{}
	for range b.members {
		h := openHeld(t, b, b.clients[0])
		held = append(held, h)
		members[h.member] = true
	}
	if len(members) != len(b.members) {
		t.Fatalf("held connections to %d members, want %d", len(members), len(b.members))
	}
	before := cookieState(b.sw)
	// The connection flows are a second old at least when the new process
	// adopts them: one it sent again would be younger.
	time.Sleep(time.Second)

	b.lb.Kill()
	b.lb = startSDNLB(t, "--db", b.lb.DB)
	b.lb.Connect(b.sw)
	var adopted []string
	for i := 0; i < 200 && len(adopted) == 0; i++ {
		time.Sleep(25 * time.Millisecond)
		adopted = b.lb.LogLines(`"msg":"switch adopted"`)
	}
	if len(adopted) == 0 {
		t.Fatal("the switch is not adopted 5s after the restart")
	}
	t.Logf("adoption: %s", adopted[0])
	var adoption struct {
		Changes         float64 `json:"changes"`
		ConnectionsKept int     `json:"connections_kept"`
	}
	if err := json.Unmarshal([]byte(adopted[0]), &adoption); err != nil {
		t.Fatal(err)
	}
	if adoption.ConnectionsKept != len(held) {
		t.Errorf("adoption kept %d connections, want the %d held", adoption.ConnectionsKept, len(held))
	}
	for _, f := range b.sw.DumpFlows() {
		if strings.Contains(f, "priority=1000,") && strings.Contains(f, "duration=0.") {
			t.Errorf("a connection flow sent again: %s", f)
		}
	}
	for _, h := range held {
		h.again(t)
	}
	// The adoption's changes are the rows and groups the configuration
	// wants and the switch lacks, and the ARP probes for members no
	// connection flow showed: a connection flow sent again is none of
	// them, and would make the flow-mods outnumber the changes.
	if sent := b.lb.Metric("sdnlb_controller_flow_mods_total"); sent > adoption.Changes {
		t.Errorf("the new process sent %v flow-mods, the adoption's changes are %v: it sent connection flows again", sent, adoption.Changes)
	}
	if after := cookieState(b.sw); !slices.Equal(before, after) {
		t.Errorf("the switch's flows after the restart differ from before:\nbefore:\n%s\nafter:\n%s",
			strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}

// cookieState is the switch's flows with their cookies, without their
// counters and ages, sorted.
func cookieState(sw *Switch) []string {
	strip := regexp.MustCompile(`(duration|n_packets|n_bytes|idle_age|hard_age)=[^ ,]+,? ?`)
	var state []string
	for _, f := range sw.DumpFlows() {
		state = append(state, strip.ReplaceAllString(f, ""))
	}
	slices.Sort(state)
	return state
}

// A CONTROLLER TCP VIP on a 1.0 Open vSwitch: the switch takes Nicira's
// flow-mods, so the VIP has the SYN punt that matches TCP flags, and with a
// connection limit the FIN and reset punts; a restarted sdnlb reads them
// back whole (Nicira's flow stats) and adopts them without a flow-mod.
//
// Sequential connections each take at most three VIP packet-ins: the
// SYN's, the client's FIN's, and rarely one more. Open vSwitch caches the
// punts' "to the controller" in datapath flows that include the TCP
// flags, so the connection's other packets miss them and meet the
// connection's flows, which the controller installs before it sends the
// SYN on: no timing decides that. Only a SYN or FIN retransmitted (the
// client waits a second) or a packet that overtakes the flow-mods could
// add one, far from once per connection. The punts are the same with a
// connection limit, and a restarted process adopts them as they are.
func TestOpenFlow10_NiciraPunts(t *testing.T) {
	b := newBedOn(t, openFlow10, 1, 3, sdnlb.RoundRobin, sdnlb.DispatchController, nil)
	if _, err := get(b.clients[0], b.url, 10*time.Second); err != nil { // the members' addresses learned
		t.Fatal(err)
	}
	const conns = 50
	before := b.lb.Metric(`sdnlb_controller_packet_ins_total{kind="lb"}`)
	for i := range conns {
		if _, err := get(b.clients[0], b.url, 5*time.Second); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	punted := b.lb.Metric(`sdnlb_controller_packet_ins_total{kind="lb"}`) - before
	t.Logf("%d sequential connections: %v VIP packet-ins (%.2f each)", conns, punted, punted/conns)
	if punted > 3*conns {
		t.Errorf("%d sequential connections took %v VIP packet-ins, want at most 3 each", conns, punted)
	}

	// A limit the connections kept twice stay far below: until the killed
	// process's counts expire, the new one's add to them.
	b.lb.MustAPI(http.MethodPatch, "/v1/vips/"+b.vip.ID, map[string]any{"connection_limit": 1000}, http.StatusOK, nil)
	want := []string{"priority=1002,tcp,dl_dst=", "tcp_flags=+syn-ack actions=CONTROLLER:65535",
		"priority=1004,tcp,dl_dst=", "tcp_flags=+fin actions=CONTROLLER:65535", "tcp_flags=-fin+rst actions=CONTROLLER:65535"}
	var flows string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if flows = strings.Join(b.sw.DumpFlows(), "\n"); containsAll(flows, want) {
			break
		}
	}
	if !containsAll(flows, want) {
		t.Fatalf("the 1.0 bridge lacks the punts %q:\n%s", want, flows)
	}
	before2 := cookieState(b.sw)
	time.Sleep(time.Second) // a row the new process sent again would be younger than a second

	b.lb.Kill()
	b.lb = startSDNLB(t, "--db", b.lb.DB)
	b.lb.Connect(b.sw)
	var adopted []string
	for i := 0; i < 200 && len(adopted) == 0; i++ {
		time.Sleep(25 * time.Millisecond)
		adopted = b.lb.LogLines(`"msg":"switch adopted"`)
	}
	if len(adopted) == 0 {
		t.Fatal("the switch is not adopted 5s after the restart")
	}
	t.Logf("adoption: %s", adopted[0])
	if sent := b.lb.Metric("sdnlb_controller_flow_mods_total"); sent != 0 {
		t.Errorf("the new process sent %v flow-mods adopting a switch that holds every row", sent)
	}
	for _, f := range b.sw.DumpFlows() {
		if strings.Contains(f, "duration=0.") {
			t.Errorf("a row sent again: %s", f)
		}
	}
	if after := cookieState(b.sw); !slices.Equal(before2, after) {
		t.Errorf("the switch's flows after the restart differ from before:\nbefore:\n%s\nafter:\n%s",
			strings.Join(before2, "\n"), strings.Join(after, "\n"))
	}
	if _, err := get(b.clients[0], b.url, 5*time.Second); err != nil {
		t.Errorf("after the restart: %v", err)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
