package dataplane

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
)

// restart is sdnlb starting again on the configuration cfg and the switch
// connecting with what it holds: a new dataplane adopts it. shift numbers
// the objects differently from the last process, as a process whose
// configuration changed over its life would have, and firstVIPs are
// numbered first, in that order. It returns what the switch is sent.
func (d *decision) restart(cfg *sdnlb.Config, shift int, firstVIPs ...string) []string {
	d.tb.Helper()
	return d.restartHolding(d.holding(), cfg, shift, firstVIPs...)
}

// restartHolding is restart with the switch showing have.
func (d *decision) restartHolding(have SwitchState, cfg *sdnlb.Config, shift int, firstVIPs ...string) []string {
	d.tb.Helper()
	d.builder = model.NewBuilder(time.Now)
	for i := range shift {
		d.builder.VIPs.Of(fmt.Sprintf("gone-vip-%d", i), 0)
		d.builder.Members.Of(fmt.Sprintf("gone-member-%d", i), 0)
	}
	for _, id := range firstVIPs {
		d.builder.VIPs.Of(id, 0)
	}
	snap, skipped := d.builder.Build(cfg)
	if len(skipped) > 0 {
		d.tb.Fatalf("configuration objects skipped: %v", skipped)
	}
	d.snap = snap
	dc := d.dp.Config
	dc.Affinity = NewAffinityTable()
	d.dp = New(dc)
	d.dp.Adopt(d.now, snap, have, d.out)
	return d.sent(nil)
}

func flowModLines(lines []string) []string {
	var mods []string
	for _, l := range lines {
		if strings.HasPrefix(l, "flow_mod") || strings.HasPrefix(l, "group_mod") {
			mods = append(mods, l)
		}
	}
	return mods
}

// A switch that holds what the configuration wants, connections included,
// is left as it is; the connection counts as active again and still goes
// where it went.
func TestAdopt_KeepsWhatIsWanted(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	d.teach(1, 2, 3)
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	ack := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 80, ACK: true, Seq: 1001, AckNum: 5001})
	before := d.forward(testnet.ClientOF, ack)

	got := d.restart(testnet.Config(nil), 0)
	if mods := flowModLines(got); len(mods) != 0 {
		t.Errorf("changes to a switch that holds what is wanted:\n%s", strings.Join(mods, "\n"))
	}
	if after := d.forward(testnet.ClientOF, ack); after != before {
		t.Errorf("the connection went %s, before the restart %s", after, before)
	}
	var active int64
	for _, m := range testnet.MembersByID(d.snap) {
		active += m.Cnt.Active.Load()
	}
	if active != 1 || d.snap.VIPByID["v1"].Cnt.Active.Load() != 1 {
		t.Errorf("%d active connections on the members after the restart, want 1", active)
	}
}

// The connections of a VIP of every protocol, TCP to another port than
// its members' and GRE by address, survive a restart as they are.
func TestAdopt_KeepsAnyProtocolConnections(t *testing.T) {
	d := newDecision(t, anyConfig(nil))
	d.teach(1, 2, 3)
	syn443 := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 443, SYN: true})
	gre := ipFrame(t, layers.IPProtocolGRE, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", 0)
	d.packetIn(testnet.ClientOF, syn443)
	d.packetIn(testnet.ClientOF, gre)
	tcpBefore, greBefore := d.forward(testnet.ClientOF, syn443), d.forward(testnet.ClientOF, gre)

	got := d.restart(anyConfig(nil), 2)
	for _, l := range flowModLines(got) {
		if !strings.HasPrefix(l, "flow_mod cookie=") {
			t.Errorf("a restart deleted %s", l)
		}
	}
	if after := d.forward(testnet.ClientOF, syn443); after != tcpBefore {
		t.Errorf("the TCP connection went %s, before the restart %s", after, tcpBefore)
	}
	if after := d.forward(testnet.ClientOF, gre); after != greBefore {
		t.Errorf("the GRE connection went %s, before the restart %s", after, greBefore)
	}
	if n := d.snap.VIPByID["v1"].Cnt.Active.Load(); n != 2 {
		t.Errorf("%d active connections on the VIP after the restart, want 2", n)
	}
}

// The configuration's numbers are every process's: a restarted process,
// whatever it numbered before, finds the connections under the cookies it
// would give them and sends the switch nothing.
func TestAdopt_ConfigurationNumbers(t *testing.T) {
	numbered := func(c *sdnlb.Config) {
		c.VIPs[0].Num = 5
		for i, m := range c.Members {
			m.Num = uint32(9 - i)
		}
	}
	d := newDecision(t, testnet.Config(numbered))
	d.teach(1, 2, 3)
	for sport := uint16(40000); sport < 40006; sport++ {
		d.packetIn(testnet.ClientOF, testnet.SYN(t, sport))
	}
	got := d.restart(testnet.Config(numbered), 3)
	if mods := flowModLines(got); len(mods) != 0 {
		t.Errorf("changes to a switch that holds what is wanted under the same numbers:\n%s", strings.Join(mods, "\n"))
	}
	conns := 0
	for _, f := range d.sw.Flows() {
		if cat, vipNum, memberNum, _ := model.CookieParts(f.Cookie); cat == model.CatConn {
			conns++
			if vipNum != 5 || memberNum < 7 || memberNum > 9 {
				t.Errorf("connection flow under VIP %d member %d, want VIP 5 and a member of 7-9: %s", vipNum, memberNum, f)
			}
		}
	}
	if conns != 6 {
		t.Errorf("%d connection flows after the restart, want 6", conns)
	}
}

// A switch holding the flows of a process that numbered the objects
// otherwise (a configuration without numbers) has the cookies rewritten
// in place, and nothing deleted.
func TestAdopt_RenumbersInPlace(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	d.teach(1, 2, 3)
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	got := d.restart(testnet.Config(nil), 3)
	for _, l := range flowModLines(got) {
		if strings.Contains(l, "delete") {
			t.Errorf("renumbering deleted a flow: %s", l)
		}
	}
	for _, f := range d.sw.Flows() {
		cat, vipNum, memberNum, _ := model.CookieParts(f.Cookie)
		if cat == model.CatConn && (vipNum != 4 || memberNum < 4) {
			t.Errorf("connection flow kept its old cookie: %s", f)
		}
	}
}

// What the configuration no longer wants goes: a DOWN member's
// connection and a deleted VIP's flows.
func TestAdopt_RemovesWhatIsStale(t *testing.T) {
	d := newDecision(t, testnet.Config(func(c *sdnlb.Config) {
		c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.101", Protocol: sdnlb.ProtocolUDP, Port: 53,
			ConnectionLimit: -1, AdminStateUp: true, MAC: "02:00:00:00:02:00"})
	}))
	d.teach(1, 2, 3)
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	var victim string
	for id, m := range testnet.MembersByID(d.snap) {
		if m.Cnt.Active.Load() == 1 {
			victim = id
		}
	}
	d.restart(testnet.Config(func(c *sdnlb.Config) {
		for _, m := range c.Members {
			if m.ID == victim {
				m.Health.Status = sdnlb.MemberDown
			}
		}
	}), 0)
	for _, l := range d.sw.Lines() {
		if strings.Contains(l, "10.0.0.101") || strings.Contains(l, "priority=1000") {
			t.Errorf("stale flow left: %s", l)
		}
	}
}

// A SWITCH pool's group keeps its id and its slots, and the switch keeps
// its flows, whatever number the new process gives the VIP: the members
// are known from the switch's own routes and buckets. Established
// connections keep their members, and new ones go where they went.
func TestAdopt_SwitchDispatch(t *testing.T) {
	for _, fwd := range sdnlb.Forwardings {
		t.Run(string(fwd), func(t *testing.T) {
			d := newSwitchDecision(t, switchConfig(fwd, nil))
			d.learnMember(3)
			d.learnMember(1)
			d.learnMember(2)
			at := map[conn]int{}
			for sport := uint16(40000); sport < 40010; sport++ {
				c := conn{t, ipv4, fwd == sdnlb.ForwardingDSR, sport}
				at[c] = d.connect(c)
			}
			syn := testnet.SYN(t, 50000)
			bucketsBefore := d.bucketMembers(syn)
			groupsBefore := d.sw.GroupLines()
			flowsBefore := len(d.sw.Flows())
			got := d.restart(switchConfig(fwd, nil), 2)
			if g := d.sw.GroupLines(); len(g) != 1 || !strings.HasPrefix(g[0], "group_id=1,") || !slices.Equal(g, groupsBefore) {
				t.Errorf("groups after the restart:\n%v\nwant group 1 with its buckets:\n%v", g, groupsBefore)
			}
			for _, l := range flowModLines(got) {
				if strings.HasPrefix(l, "group_mod") || strings.Contains(l, "delete") {
					t.Errorf("adoption sent %s", l)
				}
			}
			if n := len(d.sw.Flows()); n != flowsBefore {
				t.Errorf("%d flows after the restart, %d before", n, flowsBefore)
			}
			for _, l := range got {
				if strings.Contains(l, "op=1") && !strings.Contains(l, "tpa=10.0.0.100") {
					t.Errorf("asked for a member the switch's state names: %s", l)
				}
			}
			for c, m := range at {
				d.assertKept(c, m)
			}
			if after := d.bucketMembers(syn); !slices.Equal(after, bucketsBefore) {
				t.Errorf("buckets send new connections to members\n  %v\nbefore the restart\n  %v", after, bucketsBefore)
			}
		})
	}
}

// Two SWITCH VIPs that the new process numbers the other way round (the
// last process numbered them as they were created, the new one in id
// order) keep their groups: no group is rewritten for the other VIP while
// its flows still send to it, and no flow changes what it does.
func TestAdopt_SwappedVIPNumbers(t *testing.T) {
	cfg := func() *sdnlb.Config {
		return switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) {
			c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.101", Protocol: sdnlb.ProtocolTCP, Port: 81,
				PoolID: "p2", ConnectionLimit: -1, AdminStateUp: true, MAC: "02:00:00:00:02:00"})
			c.Pools = append(c.Pools, &sdnlb.Pool{ID: "p2", VIPID: "v2", LBMethod: sdnlb.RoundRobin, Protocol: sdnlb.ProtocolTCP,
				Dispatch: sdnlb.DispatchSwitch, Forwarding: sdnlb.ForwardingDSR, AdminStateUp: true})
			for i := 1; i <= 3; i++ {
				c.Members = append(c.Members, &sdnlb.Member{ID: fmt.Sprintf("d%d", i), PoolID: "p2",
					Address: fmt.Sprintf("10.0.0.%d", i), Weight: 1, AdminStateUp: true})
			}
		})
	}
	d := newSwitchDecision(t, cfg())
	for i := 1; i <= 3; i++ {
		d.learnMember(i)
	}
	if n := len(d.sw.Groups()); n != 2 {
		t.Fatalf("%d groups before the restart, want 2", n)
	}
	withoutCookies := func() []string {
		var lines []string
		for _, l := range d.sw.Lines() {
			lines = append(lines, regexp.MustCompile(`cookie=0x[0-9a-f]+, `).ReplaceAllString(l, ""))
		}
		slices.Sort(lines)
		return lines
	}
	flowsBefore, groupsBefore := withoutCookies(), d.sw.GroupLines()
	// Where each VIP's buckets send new connections: v1 (NAT) to its
	// members' addresses and port, v2 (DSR) to their MACs alone.
	toV1 := testnet.SYN(t, 40000)
	toV2 := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: "02:00:00:00:02:00", Src: testnet.ClientIP, Dst: "10.0.0.101",
		Sport: 40000, Dport: 81, SYN: true})
	v1Before, v2Before := d.bucketMembers(toV1), d.bucketMembers(toV2)
	for _, b := range [][]int{v1Before, v2Before} {
		if slices.Contains(b, 0) {
			t.Fatalf("before the restart a bucket sends new connections to no member: %v", b)
		}
	}
	if d.snap.VIPByID["v1"].Num != 1 {
		t.Fatalf("v1 is numbered %d before the restart, want 1", d.snap.VIPByID["v1"].Num)
	}

	got := d.restart(cfg(), 0, "v2", "v1")
	if d.snap.VIPByID["v1"].Num != 2 {
		t.Fatalf("v1 is numbered %d after the restart, want 2", d.snap.VIPByID["v1"].Num)
	}
	for _, l := range flowModLines(got) {
		if strings.HasPrefix(l, "group_mod") || strings.Contains(l, "delete") {
			t.Errorf("adoption sent %s", l)
		}
	}
	testnet.AssertLines(t, d.sw.GroupLines(), groupsBefore)
	testnet.AssertLines(t, withoutCookies(), flowsBefore)
	if v1, v2 := d.bucketMembers(toV1), d.bucketMembers(toV2); !slices.Equal(v1, v1Before) || !slices.Equal(v2, v2Before) {
		t.Errorf("after the restart the buckets send new connections to members\n  v1 %v\n  v2 %v\nbefore\n  v1 %v\n  v2 %v", v1, v2, v1Before, v2Before)
	}
}

// The switch's answer to ARP for a VIP is adopted like any flow: a
// restart leaves it as it is, and one given by a VIP deleted meanwhile is
// replaced in place by the answer of the VIP that answers for the address
// now.
func TestAdopt_ARPAnswer(t *testing.T) {
	request := testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00")
	t.Run("Kept", func(t *testing.T) {
		d := newDecisionL2(t, testnet.Config(nil), model.L2Normal)
		if mods := flowModLines(d.restart(testnet.Config(nil), 0)); len(mods) != 0 {
			t.Errorf("changes to a switch that holds what is wanted:\n%s", strings.Join(mods, "\n"))
		}
		if got := d.forward(testnet.ClientOF, request); got != "output:10 "+arpReplyFrame {
			t.Errorf("after the restart ARP for the VIP went\n  %s\nwant\n  output:10 %s", got, arpReplyFrame)
		}
	})
	t.Run("AnsweringVIPGone", func(t *testing.T) {
		d := newDecisionL2(t, testnet.Config(func(c *sdnlb.Config) {
			c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v0", Address: "10.0.0.100", Protocol: sdnlb.ProtocolUDP, Port: 53,
				ConnectionLimit: -1, AdminStateUp: true, MAC: "02:00:00:00:00:99"})
		}), model.L2Normal)
		for _, l := range flowModLines(d.restart(testnet.Config(nil), 0)) {
			if strings.Contains(l, "priority=51") && !strings.HasPrefix(l, "flow_mod cookie=") {
				t.Errorf("adoption deleted the ARP answer instead of replacing it: %s", l)
			}
		}
		if got := d.forward(testnet.ClientOF, request); got != "output:10 "+arpReplyFrame {
			t.Errorf("after the restart ARP for the VIP went\n  %s\nwant\n  output:10 %s", got, arpReplyFrame)
		}
	})
}

// A SOURCE_IP pool the switch dispatches keeps its slots across a
// restart that numbers the objects otherwise: every client keeps its
// member, and no slot row is rewritten to another member.
func TestAdopt_ByClientSlots(t *testing.T) {
	cfg := func() *sdnlb.Config {
		return switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) { c.Pools[0].LBMethod = sdnlb.SourceIP })
	}
	d := newSwitchDecision(t, cfg())
	d.learnMember(3)
	d.learnMember(1)
	d.learnMember(2)
	memberOf := func(i int) uint32 {
		syn := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: fmt.Sprintf("10.2.0.%d", i+1),
			Dst: "10.0.0.100", Sport: 40000, Dport: 80, SYN: true})
		return portOf(d.process(testnet.ClientOF, syn))
	}
	before := make([]uint32, 100)
	for i := range before {
		before[i] = memberOf(i)
	}
	got := d.restart(cfg(), 2)
	for _, l := range flowModLines(got) {
		if strings.Contains(l, "delete") {
			t.Errorf("adoption sent %s", l)
		}
	}
	for i, m := range before {
		if after := memberOf(i); after != m {
			t.Errorf("client %d went to member %d before the restart, to %d after", i, m, after)
		}
	}
}

// A switch moved from OpenFlow 1.3 to 1.0 holds the 1.3 pipeline, in
// tables a 1.0 flow-mod cannot address: every flow is deleted first, and
// the switch ends up holding what a 1.0 Open vSwitch (Nicira matches)
// gets from scratch.
func TestAdopt_PipelineOfAnotherVersion(t *testing.T) {
	d := newSwitchDecision(t, testnet.Config(nil))
	have := d.holding()
	dc := d.dp.Config
	dc.OneTable, dc.Groups = true, false
	d.dp = New(dc)
	d.dp.Adopt(d.now, d.snap, have, d.out)
	if got := d.sent(nil); len(got) == 0 || got[0] != "flow_mod delete cookie=0x0/0x0" {
		t.Errorf("the switch got\n  %s\nwant a delete of every flow first", strings.Join(got, "\n  "))
	}
	fresh := newDecisionWith(t, testnet.Config(nil), Config{L2: model.L2Normal, OneTable: true, Nicira: true})
	if got, want := d.sw.Lines(), fresh.sw.Lines(); !slices.Equal(got, want) {
		t.Errorf("the switch holds\n  %s\nwant what a 1.0 switch gets\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// persistentConfig is testnet.Config with SOURCE_IP persistence on the
// VIP, then edit.
func persistentConfig(edit func(*sdnlb.Config)) *sdnlb.Config {
	return testnet.Config(func(c *sdnlb.Config) {
		c.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
		if edit != nil {
			edit(c)
		}
	})
}

// connectFrom opens a TCP connection from client address src and port
// sport to the VIP (10.0.0.100:80, or testnet.VIP6 from an IPv6 client),
// which the controller dispatches, and returns the member the switch then
// sends it to: testnet's member i, on port i.
func (d *decision) connectFrom(src string, sport uint16) uint32 {
	d.tb.Helper()
	vip := "10.0.0.100"
	if netip.MustParseAddr(src).Is6() {
		vip = testnet.VIP6
	}
	syn := testnet.TCPFrame(d.tb, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: src, Dst: vip, Sport: sport, Dport: 80, SYN: true})
	d.packetIn(testnet.ClientOF, syn)
	return portOf(d.process(testnet.ClientOF, syn))
}

// A node that adopts a switch binds the clients of a VIP with SOURCE_IP
// persistence to the members their connections on the switch go to, with
// a table of its own (another node's, or a restarted process's): each
// client's next connection reaches its member, whichever client comes
// first. An IPv6 client is known by the pool's prefix: another address in
// the /64 is the same client.
func TestAdopt_PersistenceBindings(t *testing.T) {
	t.Run("IPv4", func(t *testing.T) {
		d := newDecision(t, persistentConfig(nil))
		d.teach(1, 2, 3)
		clients := []string{"10.2.0.1", "10.2.0.2", "10.2.0.3"}
		before := map[string]uint32{}
		for _, c := range clients {
			before[c] = d.connectFrom(c, 40000)
		}
		d.restart(persistentConfig(nil), 0)
		// The other way round: a scheduler starting afresh would give the
		// first client the last one's member.
		for i := len(clients) - 1; i >= 0; i-- {
			c := clients[i]
			if m := d.connectFrom(c, 40001); m != before[c] {
				t.Errorf("after the adoption %s reached member %d, before it %d", c, m, before[c])
			}
		}
	})
	t.Run("IPv6Prefix", func(t *testing.T) {
		cfg := func() *sdnlb.Config {
			return v6Config(func(c *sdnlb.Config) {
				c.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
				c.Pools[0].ClientIPv6Prefix = 64
			})
		}
		d := newDecision(t, cfg())
		d.teach6(1, 2, 3)
		d.connectFrom("2001:db8:2::1", 40000) // the scheduler's first turn
		before := d.connectFrom(testnet.Client6, 40000)
		d.restart(cfg(), 0)
		if m := d.connectFrom("2001:db8:1::7:8", 40001); m != before {
			t.Errorf("after the adoption another address of the client's /64 reached member %d, the client before it %d", m, before)
		}
	})
}

// A client whose member changed has connections to both on the switch:
// the adopted binding names the member of its newest connection, the last
// its master bound it to, and on a tie (flows the same age) the member of
// the smaller id. It runs the VIP's timeout from the adoption.
func TestAdopt_PersistenceNewestConnection(t *testing.T) {
	const client = "10.2.0.1"
	for _, tc := range []struct {
		name             string
		firstAge, second time.Duration // of the first connection's flows and the second's
		want             string        // the member bound
	}{
		{"SecondNewer", 20 * time.Second, 5 * time.Second, "second"},
		{"FirstNewer", 5 * time.Second, 20 * time.Second, "first"},
		{"SameAge", 5 * time.Second, 5 * time.Second, "smaller id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDecision(t, persistentConfig(nil))
			d.teach(1, 2, 3)
			first := d.connectFrom(client, 40000)
			// The first member drains: the client's next connection goes to
			// another, and the first keeps its connection.
			d.configure(persistentConfig(func(c *sdnlb.Config) { c.Members[first-1].Weight = 0 }))
			second := d.connectFrom(client, 40001)
			if second == first || second == 0 {
				t.Fatalf("the client's second connection reached member %d, the first %d", second, first)
			}
			have := d.holding()
			for i := range have.Flows {
				f := &have.Flows[i]
				if cat, _, member, _ := model.CookieParts(f.Cookie); cat == model.CatConn {
					age := tc.firstAge
					if member == testnet.MemberByID(d.snap, fmt.Sprintf("m%d", second)).Num {
						age = tc.second
					}
					f.DurationSec = uint32(age / time.Second)
				}
			}
			want := map[string]uint32{"second": second, "first": first, "smaller id": min(first, second)}[tc.want]
			d.restartHolding(have, persistentConfig(nil), 0)
			v := d.snap.VIPByID["v1"]
			got, ok := d.dp.Affinity.get(v.Num, netip.MustParseAddr(client), d.now)
			if !ok || got != testnet.MemberByID(d.snap, fmt.Sprintf("m%d", want)).Num {
				t.Fatalf("after the adoption the client is bound to member number %d (%v), want m%d", got, ok, want)
			}
			if _, ok := d.dp.Affinity.get(v.Num, netip.MustParseAddr(client), d.now.Add(v.Persist)); !ok {
				t.Errorf("the binding ends before the VIP's timeout from the adoption")
			}
			if _, ok := d.dp.Affinity.get(v.Num, netip.MustParseAddr(client), d.now.Add(v.Persist+time.Second)); ok {
				t.Errorf("the binding outlasts the VIP's timeout from the adoption")
			}
		})
	}
}
