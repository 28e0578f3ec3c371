package dataplane

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// switchConfig is testnet.Config with its pool dispatched by the switch.
func switchConfig(fwd sdnlb.Forwarding, edit func(*sdnlb.Config)) *sdnlb.Config {
	return testnet.Config(func(c *sdnlb.Config) {
		c.Pools[0].Dispatch, c.Pools[0].Forwarding = sdnlb.DispatchSwitch, fwd
		if fwd == sdnlb.ForwardingDSR {
			for _, m := range c.Members {
				m.Port = 0
			}
		}
		if edit != nil {
			edit(c)
		}
	})
}

// learnMember has the dataplane see member i (10.0.0.i, MAC ending in i,
// on port i) answer the controller's ARP, and returns what it sends.
func (d *decision) learnMember(i int) []string {
	d.tb.Helper()
	return d.punt(model.MakeCookie(model.CatVIP, 1, 0), uint32(i),
		testnet.ARPFrame(d.tb, 2, testnet.MemberMAC(i), testnet.VIPMAC, fmt.Sprintf("10.0.0.%d", i), "10.0.0.100", testnet.VIPMAC))
}

// The flows around the tracker of a VIP whose TCP connections the
// controller dispatches: the tracker holds them as it holds the switch's,
// and its new connections go to the controller.
func TestDispatch_ControllerTracked(t *testing.T) {
	d := newSwitchDecision(t, &sdnlb.Config{})
	got := d.configure(testnet.Config(nil))
	assertSends(t, got, natTrackedFlows("actions=CONTROLLER:65535")...)
	if n := countPrefix(got, "group_mod"); n != 0 {
		t.Errorf("a group for a VIP the controller dispatches:\n%s", strings.Join(got, "\n"))
	}
	if n := countPrefix(got, "flow_mod cookie=0x5d02000001000000, priority=1001"); n != 0 {
		t.Errorf("a SYN punt for a VIP the tracker holds:\n%s", strings.Join(got, "\n"))
	}
}

// natTrackedFlows are the flows around the tracker of the test's NAT VIP,
// whose new connections go by newConn.
func natTrackedFlows(newConn string) []string {
	return []string{
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=301, ct_state=+new-inv+trk,ct_label=0,tcp,nw_dst=10.0.0.100,tp_dst=80 " + newConn,
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=251, ct_label=0,tcp,nw_dst=10.0.0.100,tp_dst=80 actions=drop",
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=201, ct_state=+new+trk,tcp,nw_dst=10.0.0.100,tp_dst=80 actions=" +
			"set_field:0x1->reg2,move:NXM_NX_CT_LABEL[0..31]->NXM_OF_IP_DST[],move:NXM_NX_CT_MARK[0..15]->NXM_OF_TCP_DST[]," +
			"ct(commit,table=2,zone=94,exec(set_field:0xa000064->ct_label,set_field:0x60050->ct_mark))",
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=211, ct_state=-new+trk,tcp,nw_dst=10.0.0.100,tp_dst=80,tcp_flags=+syn-ack actions=" +
			"set_field:0x1->reg2,move:NXM_NX_CT_LABEL[0..31]->NXM_OF_IP_DST[],move:NXM_NX_CT_MARK[0..15]->NXM_OF_TCP_DST[]," +
			"ct(commit,table=2,zone=94,exec(set_field:0xa000064->ct_label,set_field:0x60050->ct_mark))",
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=201, ct_state=-new+trk,tcp,nw_dst=10.0.0.100,tp_dst=80 actions=" +
			"set_field:0x1->reg2,move:NXM_NX_CT_LABEL[0..31]->NXM_OF_IP_DST[],move:NXM_NX_CT_MARK[0..15]->NXM_OF_TCP_DST[],ct(zone=94),goto_table:2",
		"flow_mod cookie=0x5d05000001000000, table=from-member, priority=201, ct_mark=0x60050,ct_label=0xa000064,tcp actions=" +
			"set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,move:NXM_NX_CT_MARK[0..15]->NXM_OF_TCP_SRC[],ct(zone=93),set_field:0xfffe->reg4,move:NXM_NX_REG4[0..15]->NXM_OF_IN_PORT[],goto_table:9",
		"flow_mod cookie=0x5d05000001000000, priority=501, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=ct(table=1,zone=93)",
		"flow_mod cookie=0x5d04000001000001, table=from-member, priority=50, ct_label=0,tcp,nw_src=10.0.0.1,tp_src=8080 actions=goto_table:9",
		"flow_mod cookie=0x5d04000001000001, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=ct(table=3,zone=94)",
	}
}

// A VIP the controller dispatched moves to the switch's dispatch: the
// flows around the tracker stay as they are, and the group takes the new
// connections once a member is known.
func TestDispatch_NATFollowsMembers(t *testing.T) {
	d := newSwitchDecision(t, testnet.Config(nil))
	got := d.configure(switchConfig(sdnlb.ForwardingNAT, nil))
	if n := countPrefix(got, "flow_mod"); n != 0 {
		t.Errorf("moving to the switch's dispatch changed flows around the tracker:\n%s", strings.Join(got, "\n"))
	}
	if n := countPrefix(got, "packet_out in_port=CONTROLLER actions=FLOOD data=arp"); n != 3 {
		t.Errorf("%d ARP requests for the members, want 3:\n%s", n, strings.Join(got, "\n"))
	}
	if n := countPrefix(got, "group_mod"); n != 0 {
		t.Errorf("a group before any member is known:\n%s", strings.Join(got, "\n"))
	}

	// The first member the switch shows gets every bucket, its route and
	// the new connections.
	got = d.learnMember(1)
	assertSends(t, got,
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=301, ct_state=+new-inv+trk,ct_label=0,tcp,nw_dst=10.0.0.100,tp_dst=80 actions=group:1",
		"flow_mod cookie=0x5d06000001000001, table=to-member, priority=100, ip,reg2=0x1,nw_dst=10.0.0.1 actions=set_field:aa:00:00:00:00:01->eth_dst,goto_table:9",
	)
	if !slices.ContainsFunc(got, func(l string) bool {
		return strings.HasPrefix(l, "group_mod group_id=1,type=select,") && strings.Contains(l, "bucket=actions="+
			"ct(commit,table=1,zone=93,exec(set_field:0xa000001->ct_label,set_field:0x1f90->ct_mark))")
	}) {
		t.Errorf("no group added with buckets to member 1:\n%s", strings.Join(got, "\n"))
	}
	syn := testnet.SYN(t, 40000)
	if s := shares(d.bucketMembers(syn), 1); s[0] != model.GroupSlots {
		t.Errorf("%d buckets send new connections to member 1, want all", s[0])
	}

	// The second takes half, and member 1 keeps the slots it had.
	before := d.bucketMembers(syn)
	d.learnMember(2)
	after := d.bucketMembers(syn)
	if s := shares(after, 1, 2); s[0] != model.GroupSlots/2 || s[1] != model.GroupSlots/2 {
		t.Errorf("buckets to members 1 and 2: %v, want %d each", s, model.GroupSlots/2)
	}
	for i := range after {
		if after[i] == 1 && before[i] != 1 {
			t.Errorf("slot %d moved to member 1 from %d", i, before[i])
		}
	}

	// Member 1 fails: its buckets go, its route resets clients. Its rows
	// are modified, not deleted, so the switch keeps the connection count.
	got = d.configure(switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }))
	assertSends(t, got,
		"flow_mod cookie=0x5d06000001000001, table=to-member, priority=110, ct_state=+new+trk,ip,reg2=0x1,nw_dst=10.0.0.1 actions=CONTROLLER:65535",
		"flow_mod cookie=0x5d06000001000001, table=to-member, priority=100, ip,reg2=0x1,nw_dst=10.0.0.1 actions=CONTROLLER:65535",
	)
	for _, l := range got {
		if strings.Contains(l, "delete") && strings.Contains(l, "nw_dst=10.0.0.1") {
			t.Errorf("member 1's rows deleted, and their counters with them: %s", l)
		}
	}
	failed := d.bucketMembers(syn)
	if s := shares(failed, 1, 2); s[0] != 0 || s[1] != model.GroupSlots {
		t.Errorf("buckets to members 1 and 2: %v after member 1 failed, want all to member 2", s)
	}
	for i, m := range failed {
		if after[i] == 2 && m != 2 {
			t.Errorf("slot %d of member 2 moved to %d", i, m)
		}
	}

	// A client still sending to member 1 gets a reset from the VIP.
	ack := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.MemberMAC(1), Src: testnet.ClientIP, Dst: "10.0.0.1",
		Sport: 40000, Dport: 8080, ACK: true, Seq: 1000, AckNum: 5000})
	got = d.punt(model.MakeCookie(model.CatMemberRoute, 1, 1), testnet.ClientOF, ack)
	assertSends(t, got, "packet_out in_port=10 actions=IN_PORT data=tcp 02:00:00:00:01:00>"+testnet.ClientMAC+
		" 10.0.0.100:80>"+testnet.ClientIP+":40000 RST seq=5000 ack=0")

	// Member 1 is back (a health patch): its route sends to it again, and
	// what the datapath still sends up from the DOWN route, cached before
	// it revalidates, goes on to the member instead of being reset.
	got = d.patch([]model.HealthChange{{MemberID: "m1", Status: sdnlb.MemberUp, Since: d.now}})
	assertSends(t, got,
		"flow_mod cookie=0x5d06000001000001, table=to-member, priority=100, ip,reg2=0x1,nw_dst=10.0.0.1 actions=set_field:"+testnet.MemberMAC(1)+"->eth_dst,goto_table:9",
	)
	got = d.punt(model.MakeCookie(model.CatMemberRoute, 1, 1), testnet.ClientOF, ack)
	assertSent(t, got, "packet_out in_port=10 actions=set_field:"+testnet.MemberMAC(1)+"->eth_dst,output:1 data=<in>")
	if s := shares(d.bucketMembers(syn), 1, 2); s[0] != model.GroupSlots/2 || s[1] != model.GroupSlots/2 {
		t.Errorf("buckets to members 1 and 2: %v with member 1 back, want %d each", s, model.GroupSlots/2)
	}

	// No member ready: new connections go to the controller again.
	got = d.configure(switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) {
		for _, m := range c.Members {
			m.Health.Status = sdnlb.MemberDown
		}
	}))
	assertSends(t, got,
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=301, ct_state=+new-inv+trk,ct_label=0,tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
	)
	if r := d.process(testnet.ClientOF, testnet.SYN(t, 40001)); !slices.Equal(r.Ports, []uint32{ofp.PortController}) || len(r.Selected) != 0 {
		t.Errorf("with no member ready a new connection went through groups %v and\n  %s\nwant to the controller alone", r.Selected, outputs(r))
	}

	// Back to CONTROLLER dispatch: the group goes, the flows around the
	// tracker stay, and new connections go to the controller from it.
	got = d.configure(testnet.Config(nil))
	assertSends(t, got, "group_mod delete,group_id=1")
	for _, l := range got {
		if strings.Contains(l, "delete cookie=0x5d05") {
			t.Errorf("the flows around the tracker deleted: %s", l)
		}
	}
	if g := d.sw.GroupLines(); len(g) != 0 {
		t.Errorf("groups left: %v", g)
	}
	if r := d.process(testnet.ClientOF, testnet.SYN(t, 40002)); !slices.Equal(r.Ports, []uint32{ofp.PortController}) || len(r.Path) != 2 {
		t.Errorf("under CONTROLLER dispatch a new connection went along %d rows and\n  %s\nwant to the controller through the tracker", len(r.Path), outputs(r))
	}
}

// A SWITCH DSR pool: the switch tracks each connection in the VIP zone
// with its member's address as the label, so that a tracked connection
// keeps its member when the buckets change; the members' replies, from the
// VIP's address, pass the VIP zone too.
func TestDispatch_DSR(t *testing.T) {
	d := newSwitchDecision(t, testnet.Config(nil))
	assertSends(t, d.configure(switchConfig(sdnlb.ForwardingDSR, nil)),
		"flow_mod cookie=0x5d05000001000000, priority=501, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=ct(table=1,zone=93)",
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=301, ct_state=+new-inv+trk,ct_label=0,tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=251, ct_label=0,tcp,nw_dst=10.0.0.100,tp_dst=80 actions=drop",
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=201, ct_state=+trk,tcp,nw_dst=10.0.0.100,tp_dst=80 actions="+
			"move:NXM_NX_CT_LABEL[0..31]->NXM_NX_REG0[],set_field:0x1->reg2,goto_table:2",
		"flow_mod cookie=0x5d05000001000000, priority=902, tcp,nw_src=10.0.0.100,tp_src=80 actions=ct(zone=93),goto_table:9",
	)
	got := d.learnMember(2)
	assertSends(t, got,
		"flow_mod cookie=0x5d05000001000000, table=tracked, priority=301, ct_state=+new-inv+trk,ct_label=0,tcp,nw_dst=10.0.0.100,tp_dst=80 actions=group:1",
		"flow_mod cookie=0x5d06000001000002, table=to-member, priority=110, ct_state=+new+trk,ip,reg0=0xa000002,reg2=0x1 actions=set_field:aa:00:00:00:00:02->eth_dst,goto_table:9",
		"flow_mod cookie=0x5d06000001000002, table=to-member, priority=100, ip,reg0=0xa000002,reg2=0x1 actions=set_field:aa:00:00:00:00:02->eth_dst,goto_table:9",
	)
	if !slices.ContainsFunc(got, func(l string) bool {
		return strings.HasPrefix(l, "group_mod group_id=1,type=select,") &&
			strings.Contains(l, "bucket=actions=ct(commit,table=1,zone=93,exec(set_field:0xa000002->ct_label)),")
	}) {
		t.Errorf("no group added with buckets to member 2:\n%s", strings.Join(got, "\n"))
	}
	syn := testnet.SYN(t, 50000)
	if s := shares(d.bucketMembers(syn), 2); s[0] != model.GroupSlots {
		t.Errorf("%d buckets send new connections to member 2, want all", s[0])
	}
	c := conn{t, ipv4, true, 40000}
	d.connect(c)

	// A member that moves to another MAC takes its route along; the
	// buckets name its address alone.
	groups := d.sw.GroupLines()
	got = d.punt(model.MakeCookie(model.CatVIP, 1, 0), 7, testnet.ARPFrame(t, 2, testnet.MemberMAC(0x22), testnet.VIPMAC, "10.0.0.2", "10.0.0.100", testnet.VIPMAC))
	assertSends(t, got,
		"flow_mod cookie=0x5d06000001000002, table=to-member, priority=100, ip,reg0=0xa000002,reg2=0x1 actions=set_field:aa:00:00:00:00:22->eth_dst,goto_table:9",
	)
	if n := countPrefix(got, "group_mod"); n != 0 || !slices.Equal(d.sw.GroupLines(), groups) {
		t.Errorf("a member's new MAC changed the group:\n%s", strings.Join(got, "\n"))
	}
	// The established connection and the new ones follow it.
	d.hosts[[6]byte(testnet.MustMAC(t, testnet.MemberMAC(0x22)))] = 7
	assertOutput(t, d.process(testnet.ClientOF, c.fromClient(false, true)), 7, testnet.ClientOF, c.toMember(0x22, false, true))
	if s := shares(d.bucketMembers(syn), 7); s[0] != model.GroupSlots {
		t.Errorf("%d buckets send new connections to member 2's new port, want all", s[0])
	}
}

// A member back UP gets its route before the buckets send to it: a new
// connection in between would meet the row that resets it.
func TestDispatch_RouteBeforeBuckets(t *testing.T) {
	down := func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }
	d := newSwitchDecision(t, switchConfig(sdnlb.ForwardingNAT, down))
	d.learnMember(1)
	d.learnMember(2)
	// Asked after each message, no bucket sends a new connection to the
	// controller, which would reset it.
	syn := testnet.SYN(t, 40000)
	d.step = func(line string) {
		t.Helper()
		if i := slices.Index(d.bucketMembers(syn), 0); i >= 0 {
			t.Errorf("after %s bucket %d sends new connections to no member", line, i)
		}
	}
	got := d.configure(switchConfig(sdnlb.ForwardingNAT, nil))
	d.step = nil
	if s := shares(d.bucketMembers(syn), 1, 2); s[0] != model.GroupSlots/2 || s[1] != model.GroupSlots/2 {
		t.Errorf("buckets to members 1 and 2: %v, want %d each", s, model.GroupSlots/2)
	}
	route := slices.IndexFunc(got, func(l string) bool {
		return strings.Contains(l, "table=to-member, priority=100, ip,reg2=0x1,nw_dst=10.0.0.1 actions=set_field:aa:00:00:00:00:01->eth_dst")
	})
	group := slices.IndexFunc(got, func(l string) bool { return strings.HasPrefix(l, "group_mod") })
	if route < 0 || group < 0 || route > group {
		t.Errorf("member 1's route at %d, the group-mod at %d; want the route first:\n%s", route, group, strings.Join(got, "\n"))
	}
}

// A VIP of every protocol is dispatched by the switch on its address
// alone: with NAT every IP protocol goes through the connection tracker,
// TCP and UDP to the member's port and back from the port the client asked
// for, the rest by address alone; with DSR its group rewrites the MAC of
// whatever comes.
func TestDispatch_AnyProtocolVIP(t *testing.T) {
	toAny := func(c *sdnlb.Config) { c.VIPs[0].Protocol, c.Pools[0].Protocol = sdnlb.ProtocolAny, sdnlb.ProtocolAny }
	t.Run("NAT", func(t *testing.T) {
		d := newSwitchDecision(t, testnet.Config(nil))
		got := d.configure(switchConfig(sdnlb.ForwardingNAT, toAny))
		const (
			toMember = "set_field:0x1->reg2,move:NXM_NX_CT_LABEL[0..31]->NXM_OF_IP_DST[],"
			fromVIP  = "set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,"
		)
		assertSends(t, got,
			"flow_mod cookie=0x5d05000001000000, priority=500, ip,nw_dst=10.0.0.100 actions=ct(table=1,zone=93)",
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=300, ct_state=+new-inv+trk,ct_label=0,ip,nw_dst=10.0.0.100 actions=CONTROLLER:65535",
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=250, ct_label=0,ip,nw_dst=10.0.0.100 actions=drop",
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=201, ct_state=-new+trk,tcp,nw_dst=10.0.0.100 actions="+
				toMember+"move:NXM_NX_CT_MARK[0..15]->NXM_OF_TCP_DST[],ct(zone=94),goto_table:2",
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=201, ct_state=-new+trk,udp,nw_dst=10.0.0.100 actions="+
				toMember+"move:NXM_NX_CT_MARK[0..15]->NXM_OF_UDP_DST[],ct(zone=94),goto_table:2",
			// The first packet keeps the port the client asked for, for the replies.
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=201, ct_state=+new+trk,tcp,nw_dst=10.0.0.100 actions="+
				"move:NXM_OF_TCP_DST[]->NXM_NX_REG1[0..15],"+toMember+"move:NXM_NX_CT_MARK[0..15]->NXM_OF_TCP_DST[],"+
				"ct(commit,table=2,zone=94,exec(set_field:0xa000064->ct_label,set_field:0->ct_mark,move:NXM_NX_REG1[0..15]->NXM_NX_CT_MARK[0..15]))",
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=200, ct_state=+new+trk,ip,nw_dst=10.0.0.100 actions="+
				toMember+"ct(commit,table=2,zone=94,exec(set_field:0xa000064->ct_label,set_field:0->ct_mark))",
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=200, ct_state=-new+trk,ip,nw_dst=10.0.0.100 actions="+
				toMember+"ct(zone=94),goto_table:2",
			"flow_mod cookie=0x5d05000001000000, table=from-member, priority=201, ct_mark=0/0xffff0000,ct_label=0xa000064,tcp actions="+
				fromVIP+"move:NXM_NX_CT_MARK[0..15]->NXM_OF_TCP_SRC[],ct(zone=93),set_field:0xfffe->reg4,move:NXM_NX_REG4[0..15]->NXM_OF_IN_PORT[],goto_table:9",
			"flow_mod cookie=0x5d05000001000000, table=from-member, priority=201, ct_mark=0/0xffff0000,ct_label=0xa000064,udp actions="+
				fromVIP+"move:NXM_NX_CT_MARK[0..15]->NXM_OF_UDP_SRC[],ct(zone=93),set_field:0xfffe->reg4,move:NXM_NX_REG4[0..15]->NXM_OF_IN_PORT[],goto_table:9",
			"flow_mod cookie=0x5d05000001000000, table=from-member, priority=200, ct_mark=0/0xffff0000,ct_label=0xa000064,ip actions="+
				fromVIP+"ct(zone=93),set_field:0xfffe->reg4,move:NXM_NX_REG4[0..15]->NXM_OF_IN_PORT[],goto_table:9",
			"flow_mod cookie=0x5d04000001000001, priority=900, ip,nw_src=10.0.0.1 actions=ct(table=3,zone=94)",
		)
		got = d.learnMember(1)
		assertSends(t, got,
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=300, ct_state=+new-inv+trk,ct_label=0,ip,nw_dst=10.0.0.100 actions=group:1",
		)
		if !slices.ContainsFunc(got, func(l string) bool {
			return strings.HasPrefix(l, "group_mod group_id=1,type=select,") &&
				strings.Contains(l, "bucket=actions=ct(commit,table=1,zone=93,exec(set_field:0xa000001->ct_label,set_field:0x1f90->ct_mark)),")
		}) {
			t.Errorf("no group added with buckets to member 1:\n%s", strings.Join(got, "\n"))
		}
		assertCarriesAnyProtocol(t, d, false)
	})
	t.Run("DSR", func(t *testing.T) {
		d := newSwitchDecision(t, testnet.Config(nil))
		assertSends(t, d.configure(switchConfig(sdnlb.ForwardingDSR, toAny)),
			"flow_mod cookie=0x5d05000001000000, priority=500, ip,nw_dst=10.0.0.100 actions=ct(table=1,zone=93)",
			"flow_mod cookie=0x5d05000001000000, priority=901, ip,nw_src=10.0.0.100 actions=ct(zone=93),goto_table:9",
		)
		assertSends(t, d.learnMember(2),
			"flow_mod cookie=0x5d05000001000000, table=tracked, priority=300, ct_state=+new-inv+trk,ct_label=0,ip,nw_dst=10.0.0.100 actions=group:1",
		)
		assertCarriesAnyProtocol(t, d, true)
	})
}

// assertCarriesAnyProtocol asks d's switch, which dispatches a VIP of
// every protocol to its one ready member, where TCP to another port than
// the VIP's, UDP, ICMP echo and GRE go: the client's packet to the
// member, as the member must get it, and the member's answer to the
// client, as the client must get it. Under NAT the member is member 1,
// serving TCP and UDP on port 8080, and its answers come back from the
// VIP and the port the client asked for; under DSR member 2, which gets
// the packet as it came but for the MAC and answers from the VIP.
func assertCarriesAnyProtocol(t *testing.T, d *decision, dsr bool) {
	t.Helper()
	const vip = "10.0.0.100"
	m, member, memberPort := 1, "10.0.0.1", uint16(8080)
	if dsr {
		m, member = 2, vip
	}
	mac := testnet.MemberMAC(m)
	tcp := func(srcMAC, dstMAC, src, dst string, sport, dport uint16, ack bool) []byte {
		return testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: srcMAC, DstMAC: dstMAC, Src: src, Dst: dst, Sport: sport, Dport: dport, SYN: true, ACK: ack})
	}
	udp := func(srcMAC, dstMAC, src, dst string, sport, dport uint16) []byte {
		return testnet.UDPFrame(t, srcMAC, dstMAC, src, dst, sport, dport)
	}
	icmp := func(srcMAC, dstMAC, src, dst string, typ uint8) []byte {
		return ipFrame(t, layers.IPProtocolICMPv4, srcMAC, dstMAC, src, dst, typ)
	}
	gre := func(srcMAC, dstMAC, src, dst string) []byte {
		return ipFrame(t, layers.IPProtocolGRE, srcMAC, dstMAC, src, dst, 0)
	}
	tcpPort, udpPort := memberPort, memberPort
	if dsr {
		tcpPort, udpPort = 443, 53
	}
	const (
		echoRequest = layers.ICMPv4TypeEchoRequest
		echoReply   = layers.ICMPv4TypeEchoReply
	)
	for _, tc := range []struct {
		name                              string
		toVIP, atMember, answer, atClient []byte
	}{
		{"TCP",
			tcp(testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, vip, 40000, 443, false),
			tcp(testnet.ClientMAC, mac, testnet.ClientIP, member, 40000, tcpPort, false),
			tcp(mac, testnet.ClientMAC, member, testnet.ClientIP, tcpPort, 40000, true),
			tcp(testnet.VIPMAC, testnet.ClientMAC, vip, testnet.ClientIP, 443, 40000, true)},
		{"UDP",
			udp(testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, vip, 40001, 53),
			udp(testnet.ClientMAC, mac, testnet.ClientIP, member, 40001, udpPort),
			udp(mac, testnet.ClientMAC, member, testnet.ClientIP, udpPort, 40001),
			udp(testnet.VIPMAC, testnet.ClientMAC, vip, testnet.ClientIP, 53, 40001)},
		{"ICMP",
			icmp(testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, vip, echoRequest),
			icmp(testnet.ClientMAC, mac, testnet.ClientIP, member, echoRequest),
			icmp(mac, testnet.ClientMAC, member, testnet.ClientIP, echoReply),
			icmp(testnet.VIPMAC, testnet.ClientMAC, vip, testnet.ClientIP, echoReply)},
		{"GRE",
			gre(testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, vip),
			gre(testnet.ClientMAC, mac, testnet.ClientIP, member),
			gre(mac, testnet.ClientMAC, member, testnet.ClientIP),
			gre(testnet.VIPMAC, testnet.ClientMAC, vip, testnet.ClientIP)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			atClient := tc.atClient
			if dsr { // the member's answer, from the VIP, goes as it came
				atClient = tc.answer
			}
			assertOutput(t, d.process(testnet.ClientOF, tc.toVIP), uint32(m), testnet.ClientOF, tc.atMember)
			from := uint32(ofp.PortLocal) // a NAT reply goes on as if from the switch's own port
			if dsr {
				from = uint32(m)
			}
			assertOutput(t, d.process(uint32(m), tc.answer), testnet.ClientOF, from, atClient)
		})
	}
}

// A switch without select groups gets the controller's dispatch for a
// SWITCH pool: punts, and member replies to the controller.
func TestDispatch_SwitchWithoutGroups(t *testing.T) {
	d := newDecisionL2(t, testnet.Config(nil), model.L2Normal)
	got := d.configure(switchConfig(sdnlb.ForwardingNAT, nil))
	got = append(got, d.learnMember(1)...)
	for _, l := range got {
		if strings.Contains(l, "ct(") || strings.HasPrefix(l, "group_mod") {
			t.Errorf("sent %s to a switch without groups", l)
		}
	}
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// connFlowMods counts the flow-mods of connection flows in lines, to
// member when it is not 0.
func connFlowMods(lines []string, member uint32) int {
	n := 0
	for _, l := range lines {
		hex, ok := strings.CutPrefix(l, "flow_mod cookie=0x")
		if !ok {
			continue
		}
		cookie, err := strconv.ParseUint(hex[:16], 16, 64)
		if err != nil {
			continue
		}
		if cat, _, m, _ := model.CookieParts(cookie); (cat == model.CatConn || cat == model.CatConnReply) && (member == 0 || m == member) {
			n++
		}
	}
	return n
}

// connCookie is the cookie of the flow of cat of the test client's
// connection from sport to member of VIP 1.
func connCookie(cat model.Category, sport uint16, member int) string {
	return fmt.Sprintf("%#x", model.ConnCookie(cat, model.ConnShard(netip.MustParseAddr(testnet.ClientIP), sport), 1, uint32(member)))
}

// assertSends checks that got has every line of want, in any order.
func assertSends(tb testing.TB, got []string, want ...string) {
	tb.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			tb.Errorf("not sent: %s\nsent:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
}

// A DSR pool the controller dispatches gets one flow per connection,
// which only rewrites the destination MAC; the member answers from the
// VIP's address, past every flow.
func TestDataplane_DSRConnection(t *testing.T) {
	cfg := testnet.Config(func(c *sdnlb.Config) {
		c.Pools[0].Dispatch, c.Pools[0].Forwarding = sdnlb.DispatchController, sdnlb.ForwardingDSR
		for _, m := range c.Members {
			m.Port = 0
		}
	})
	d := newDecision(t, cfg)
	d.teach(1, 2, 3)
	first := testnet.SYN(t, 40000)
	got := d.packetIn(testnet.ClientOF, first)
	if n := connFlowMods(got, 0); n != 1 {
		t.Errorf("%d flow-mods for a DSR connection, want the forward flow only:\n%s", n, strings.Join(got, "\n"))
	}
	ack := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 80, ACK: true, Seq: 1001, AckNum: 5001})
	if got, want := d.forward(testnet.ClientOF, ack),
		"output:1 tcp 10.0.1.5:40000 > 10.0.0.100:80 in_port=10 dl_src=cc:00:00:00:00:01 dl_dst=aa:00:00:00:00:01"; got != want {
		t.Errorf("went\n  %s\nwant\n  %s", got, want)
	}
	fromVIP := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.MemberMAC(1), DstMAC: testnet.ClientMAC, Src: "10.0.0.100", Dst: testnet.ClientIP, Sport: 80, Dport: 40000, SYN: true, ACK: true})
	if got := d.forward(1, fromVIP); !strings.HasPrefix(got, "output:10 ") {
		t.Errorf("the member's reply went %s, want the client's port", got)
	}
	if len(d.snap.ReplyPunts) != 0 {
		t.Errorf("DSR members got reply punts: %v", d.snap.ReplyPunts)
	}
}

// A SWITCH member's counters come from its route rows (client → member:
// new connections, closing ones and the rest) and, for NAT, its reply row
// for the VIP (member → client; a DSR member's replies pass no row of its
// own). Its active connections are those opened less those closed.
func TestDispatch_StatsFromSwitchCounters(t *testing.T) {
	for _, fwd := range []sdnlb.Forwarding{sdnlb.ForwardingNAT, sdnlb.ForwardingDSR} {
		t.Run(string(fwd), func(t *testing.T) {
			d := newSwitchDecision(t, switchConfig(fwd, nil))
			d.learnMember(1)
			route := model.MakeCookie(model.CatMemberRoute, 1, 1)
			poll := func(opened, fins, resets, in, out uint64) {
				d.dp.BeginPoll()
				d.dp.PollPart(d.now, d.snap, []ofp.FlowStats{
					{Cookie: route, TableID: model.TableToMember, Priority: model.PrioMemberNew, PacketCount: opened, ByteCount: 74 * opened},
					{Cookie: route, TableID: model.TableToMember, Priority: model.PrioMemberFIN, PacketCount: fins, ByteCount: 66 * fins},
					{Cookie: route, TableID: model.TableToMember, Priority: model.PrioMemberRST, PacketCount: resets, ByteCount: 54 * resets},
					{Cookie: route, TableID: model.TableToMember, Priority: model.PrioMemberRoute, PacketCount: in, ByteCount: 100 * in},
					// The member address's reply flow counts what other
					// pools sharing the address send too: not counted.
					{Cookie: model.MakeCookie(model.CatMemberReply, 1, 1), Priority: model.PrioMemberReply, PacketCount: 2 * out, ByteCount: 2000 * out},
					{Cookie: model.MakeCookie(model.CatVIP, 1, 0), Priority: model.PrioVIPPunt, PacketCount: 99, ByteCount: 9900},
				}, d.out)
				if fwd == sdnlb.ForwardingNAT {
					d.dp.PollPart(d.now, d.snap, []ofp.FlowStats{
						{Cookie: route, TableID: model.TableFromMember, Priority: model.PrioFromMemberOwn, PacketCount: out, ByteCount: 1000 * out},
					}, d.out)
				}
				endPoll(d.dp, d.snap, everyFlow)
			}
			poll(5, 1, 0, 40, 30)
			poll(7, 2, 1, 60, 45)
			m := testnet.MemberByID(d.snap, "m1").Cnt
			got := [6]uint64{m.Total.Load(), m.ActiveConns(), m.PacketsIn.Load(), m.BytesIn.Load(), m.PacketsOut.Load(), m.BytesOut.Load()}
			want := [6]uint64{7, 4, 7 + 2 + 1 + 60, 7*74 + 2*66 + 54 + 6000, 45, 45000}
			if fwd == sdnlb.ForwardingDSR {
				want[4], want[5] = 0, 0
			}
			if got != want {
				t.Errorf("member 1 counters (total, active, packets in, bytes in, packets out, bytes out) %v, want %v", got, want)
			}
		})
	}
}

// A VIP on one port and a VIP on every port of the same address overlap in
// the switch, where the choice between overlapping rows of equal priority
// is undefined: the row of the VIP on the port must outrank the other, in
// each table where they overlap.
func TestDispatch_PortVIPBeforeEveryPortVIP(t *testing.T) {
	for _, fwd := range []sdnlb.Forwarding{sdnlb.ForwardingNAT, sdnlb.ForwardingDSR} {
		t.Run(string(fwd), func(t *testing.T) {
			cfg := switchConfig(fwd, func(c *sdnlb.Config) {
				c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.100", Protocol: sdnlb.ProtocolTCP, PoolID: "p2",
					ConnectionLimit: -1, AdminStateUp: true, MAC: c.VIPs[0].MAC})
				c.Pools = append(c.Pools, &sdnlb.Pool{ID: "p2", VIPID: "v2", LBMethod: sdnlb.RoundRobin, Protocol: sdnlb.ProtocolTCP,
					AdminStateUp: true, Dispatch: sdnlb.DispatchSwitch, Forwarding: fwd})
				c.Members[0].PoolID, c.Members[0].Port = "p2", 0
			})
			d := newSwitchDecision(t, cfg)
			d.learnMember(1)
			d.learnMember(2)
			// The highest priority of each VIP's rows for its service, by
			// table (ICMP errors to the address are the same for both).
			top := map[[2]uint32]uint16{}
			for _, fm := range d.sw.Flows() {
				cat, vip, _, _ := model.CookieParts(fm.Cookie)
				if ethType, ok := fm.Match.Get(ofp.OXMEthType); ok && ethType.Uint() == uint64(ofp.EthTypeIPv4) && (cat == model.CatVIP || cat == model.CatDispatch) &&
					model.MatchedProto(&fm.Match) != ofp.IPProtoICMP {
					k := [2]uint32{uint32(fm.TableID), vip}
					top[k] = max(top[k], fm.Priority)
				}
			}
			for _, table := range []uint32{uint32(model.TableClassify), uint32(model.TableTracked)} {
				onPort, everyPort := top[[2]uint32{table, 1}], top[[2]uint32{table, 2}]
				if onPort <= everyPort {
					t.Errorf("table %d: the VIP on port 80 tops at priority %d, the VIP on every port at %d", table, onPort, everyPort)
				}
			}
			// Where the switch sends them: port 80 to the first VIP's
			// members (2 and 3), another port to the second's (1). The
			// model breaks ties between overlapping rows of one priority
			// its own way, so the priorities above are what rules out a
			// tie.
			dsr := fwd == sdnlb.ForwardingDSR
			for i, m := range d.bucketMembers(conn{t, ipv4, dsr, 40000}.fromClient(true, false)) {
				if m != 2 && m != 3 {
					t.Fatalf("bucket %d sends a new connection to port 80 to member %d, want 2 or 3", i, m)
				}
			}
			toOther := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100",
				Sport: 40000, Dport: 443, SYN: true})
			if s := shares(d.bucketMembers(toOther), 1); s[0] != model.GroupSlots {
				t.Errorf("%d buckets send a new connection to port 443 to member 1, want all", s[0])
			}
		})
	}
}
