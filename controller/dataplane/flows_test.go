package dataplane

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

func TestCookie_RoundTrip(t *testing.T) {
	tests := []struct {
		name           string
		cat            model.Category
		vip, member    uint32
		wantVIP, wantM uint32
	}{
		{"Zero", model.CatBase, 0, 0, 0, 0},
		{"Connection", model.CatConn, 7, 42, 7, 42},
		{"Reply", model.CatConnReply, 1, 2, 1, 2},
		{"Largest", model.CatConn, model.CookieNumberLimit - 1, model.CookieNumberLimit - 1, model.CookieNumberLimit - 1, model.CookieNumberLimit - 1},
		{"Truncated", model.CatVIP, model.CookieNumberLimit + 3, model.CookieNumberLimit + 5, 3, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := model.MakeCookie(tt.cat, tt.vip, tt.member)
			cat, v, m, ok := model.CookieParts(c)
			if !ok || cat != tt.cat || v != tt.wantVIP || m != tt.wantM {
				t.Errorf("cookieParts(%#x) = %v %d %d %v, want %v %d %d true", c, cat, v, m, ok, tt.cat, tt.wantVIP, tt.wantM)
			}
		})
	}
	t.Run("ForeignCookie", func(t *testing.T) {
		if _, _, _, ok := model.CookieParts(0x1234); ok {
			t.Error("a cookie without the app id was taken for ours")
		}
	})
}

// A connection flow's cookie carries its shard, which CookieParts leaves
// out; the categories of flows installed before shards read as
// connections.
func TestCookie_ConnectionShards(t *testing.T) {
	for shard := range uint8(model.ConnShards) {
		for _, cat := range []model.Category{model.CatConn, model.CatConnReply} {
			c := model.ConnCookie(cat, shard, 3, 9)
			if got, v, m, ok := model.CookieParts(c); !ok || got != cat || v != 3 || m != 9 || model.ShardOf(c) != shard {
				t.Fatalf("ConnCookie(%v, %d, 3, 9) = %#x reads %v %d %d %v, shard %d", cat, shard, c, got, v, m, ok, model.ShardOf(c))
			}
		}
	}
	for old, want := range map[uint64]model.Category{0x5d10000003000009: model.CatConn, 0x5d11000003000009: model.CatConnReply} {
		if cat, v, m, _ := model.CookieParts(old); cat != want || v != 3 || m != 9 || model.ShardOf(old) != 0 {
			t.Errorf("CookieParts(%#x) = %v %d %d, want %v 3 9, shard 0", old, cat, v, m, want)
		}
	}
	// A client's ports spread over every shard, evenly enough.
	var per [model.ConnShards]int
	client := netip.MustParseAddr("10.0.1.5")
	for port := range 64 * 256 {
		per[model.ConnShard(client, uint16(port))]++
	}
	for shard, n := range per {
		if n < 128 || n > 512 {
			t.Errorf("shard %d holds %d of %d ports, want about 256", shard, n, 64*256)
		}
	}
}

// A poll's requests select exactly their scope: the rest, or the
// connection shards congruent to one shard.
func TestCookie_PollSelections(t *testing.T) {
	rest, restMask := model.NotConnCookie()
	selects := func(cookie, sel, mask uint64) bool { return cookie&mask == sel&mask }
	for _, c := range []uint64{model.MakeCookie(model.CatVIP, 3, 0), model.MakeCookie(model.CatMemberRoute, 3, 9), model.MakeCookie(model.CatTransit, 3, 9)} {
		if !selects(c, rest, restMask) {
			t.Errorf("the rest's request misses %#x", c)
		}
	}
	for shard := range uint8(model.ConnShards) {
		c := model.ConnCookie(model.CatConnReply, shard, 3, 9)
		if selects(c, rest, restMask) {
			t.Errorf("the rest's request reads connection flow %#x", c)
		}
		for _, n := range []uint8{1, 2, 16, model.ConnShards} {
			for s := range n {
				sel, mask := model.ShardCookie(s, n)
				if got := selects(c, sel, mask); got != (shard%n == s) {
					t.Errorf("shard %d of %d selects shard %d's flow: %v", s, n, shard, got)
				}
				if selects(model.MakeCookie(model.CatVIP, 3, 0), sel, mask) {
					t.Errorf("shard %d of %d selects a VIP's punt", s, n)
				}
			}
		}
	}
}

func TestCookie_Masks(t *testing.T) {
	fwd := model.ConnCookie(model.CatConn, 17, 3, 9)
	rev := model.ConnCookie(model.CatConnReply, 17, 3, 9)
	tests := []struct {
		name    string
		del     ofp.FlowMod
		cookie  uint64
		matches bool
	}{
		{"MemberPurgeTakesForward", model.DeleteMemberFlows(9), fwd, true},
		{"MemberPurgeTakesReply", model.DeleteMemberFlows(9), rev, true},
		{"MemberPurgeSparesOtherMember", model.DeleteMemberFlows(8), fwd, false},
		{"MemberPurgeSparesVIPFlows", model.DeleteMemberFlows(0), model.MakeCookie(model.CatVIP, 3, 0), false},
		{"VIPPurgeTakesConnections", model.DeleteVIPFlows(3)[2], rev, true},
		{"VIPPurgeSparesOtherVIP", model.DeleteVIPFlows(4)[2], rev, false},
		{"VIPFlowsDeleteTakesPunts", model.DeleteVIPFlows(3)[0], model.MakeCookie(model.CatVIP, 3, 0), true},
		{"VIPFlowsDeleteSparesConnections", model.DeleteVIPFlows(3)[0], fwd, false},
		{"VIPFlowsDeleteTakesARPAnswer", model.DeleteVIPFlows(3)[1], model.MakeCookie(model.CatARPAnswer, 3, 0), true},
		{"VIPFlowsDeleteSparesOtherVIPsARPAnswer", model.DeleteVIPFlows(3)[1], model.MakeCookie(model.CatARPAnswer, 4, 0), false},
		{"MemberPurgeSparesReplyPunt", model.DeleteMemberFlows(9), model.MakeCookie(model.CatMemberReply, 3, 9), false},
		{"ReplyPuntDeleteTakesItsMember", model.DeleteMemberReplyFlow(9), model.MakeCookie(model.CatMemberReply, 3, 9), true},
		{"ReplyPuntDeleteSparesOtherMember", model.DeleteMemberReplyFlow(8), model.MakeCookie(model.CatMemberReply, 3, 9), false},
		{"ReplyPuntDeleteSparesConnections", model.DeleteMemberReplyFlow(9), rev, false},
		{"VIPPurgeSparesReplyPunt", model.DeleteVIPFlows(3)[2], model.MakeCookie(model.CatMemberReply, 3, 9), false},
		{"DispatchPurgeTakesItsVIP", model.DeleteByCookie(model.MakeCookie(model.CatDispatch, 3, 0), model.MaskApp|model.MaskCategory|model.MaskVIP), model.MakeCookie(model.CatDispatch, 3, 0), true},
		{"DispatchPurgeSparesPunts", model.DeleteByCookie(model.MakeCookie(model.CatDispatch, 3, 0), model.MaskApp|model.MaskCategory|model.MaskVIP), model.MakeCookie(model.CatVIP, 3, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cookie&tt.del.CookieMask == tt.del.Cookie&tt.del.CookieMask
			if got != tt.matches {
				t.Errorf("delete %#x/%#x on cookie %#x: matches=%v, want %v", tt.del.Cookie, tt.del.CookieMask, tt.cookie, got, tt.matches)
			}
		})
	}
}

func TestFlows_Base(t *testing.T) {
	t.Run("L2Normal", func(t *testing.T) {
		testnet.AssertLines(t, testnet.FlowLines(t, model.BaseFlows(model.L2Normal, false)), []string{
			"cookie=0x5d01000000000000, priority=0 actions=goto_table:9",
			"cookie=0x5d08000000000000, priority=2000, dl_dst=01:80:c2:00:00:0e,dl_type=0x88cc actions=CONTROLLER:65535",
			"cookie=0x5d01000000000000, table=tracked, priority=0 actions=goto_table:9",
			"cookie=0x5d01000000000000, table=to-member, priority=0 actions=goto_table:9",
			"cookie=0x5d01000000000000, table=from-member, priority=0 actions=drop",
			"cookie=0x5d01000000000000, table=l2, priority=0 actions=NORMAL",
			testnet.NDCopyLine,
		})
	})
	t.Run("L2Learn", func(t *testing.T) {
		testnet.AssertLines(t, testnet.FlowLines(t, model.BaseFlows(model.L2Learn, false)), []string{
			"cookie=0x5d01000000000000, priority=0 actions=goto_table:9",
			"cookie=0x5d08000000000000, priority=2000, dl_dst=01:80:c2:00:00:0e,dl_type=0x88cc actions=CONTROLLER:65535",
			"cookie=0x5d01000000000000, table=tracked, priority=0 actions=goto_table:9",
			"cookie=0x5d01000000000000, table=to-member, priority=0 actions=goto_table:9",
			"cookie=0x5d01000000000000, table=from-member, priority=0 actions=drop",
			"cookie=0x5d01000000000000, table=l2, priority=0 actions=CONTROLLER:65535",
			testnet.NDCopyLine,
		})
	})
}

func TestFlows_VIP(t *testing.T) {
	tests := []struct {
		name string
		vip  model.VIP
		want []string
	}{
		{"TCP", model.VIP{Num: 1, IP: netip.AddrFrom4([4]byte{10, 0, 0, 100}), MAC: [6]byte{2, 0, 0, 0, 1, 0}, Proto: ofp.IPProtoTCP, Port: 80}, append(testnet.ARPAnswerLines(1, "02:00:00:00:01:00", "10.0.0.100", model.L2Normal),
			"cookie=0x5d02000001000000, priority=500, arp,arp_tpa=10.0.0.100 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=500, arp,dl_dst=02:00:00:00:01:00 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=501, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
		)},
		{"UDP", model.VIP{Num: 2, IP: netip.AddrFrom4([4]byte{10, 0, 0, 53}), MAC: [6]byte{2, 0, 0, 0, 2, 0}, Proto: ofp.IPProtoUDP, Port: 53}, append(testnet.ARPAnswerLines(2, "02:00:00:00:02:00", "10.0.0.53", model.L2Normal),
			"cookie=0x5d02000002000000, priority=500, arp,arp_tpa=10.0.0.53 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=500, arp,dl_dst=02:00:00:00:02:00 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=501, udp,nw_dst=10.0.0.53,tp_dst=53 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=499, ip,nw_dst=10.0.0.53 actions=drop",
		)},
		{"ICMPEchoOnly", model.VIP{Num: 3, IP: netip.AddrFrom4([4]byte{10, 0, 0, 1}), MAC: [6]byte{2, 0, 0, 0, 3, 0}, Proto: ofp.IPProtoICMP}, append(testnet.ARPAnswerLines(3, "02:00:00:00:03:00", "10.0.0.1", model.L2Normal),
			"cookie=0x5d02000003000000, priority=500, arp,arp_tpa=10.0.0.1 actions=CONTROLLER:65535",
			"cookie=0x5d02000003000000, priority=500, arp,dl_dst=02:00:00:00:03:00 actions=CONTROLLER:65535",
			"cookie=0x5d02000003000000, priority=500, icmp,nw_dst=10.0.0.1,icmp_type=8 actions=CONTROLLER:65535",
			"cookie=0x5d02000003000000, priority=499, ip,nw_dst=10.0.0.1 actions=drop",
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testnet.AssertLines(t, testnet.FlowLines(t, model.VIPFlows(&tt.vip, &tt.vip, model.L2Normal, model.SwitchFeatures{})), tt.want)
		})
	}
	// VIPs sharing an address answer with the MAC of the one the snapshot
	// picked, under its cookie.
	t.Run("AnsweredByAnother", func(t *testing.T) {
		answerer := model.VIP{Num: 1, IP: netip.AddrFrom4([4]byte{10, 0, 0, 100}), MAC: [6]byte{2, 0, 0, 0, 1, 0}, Proto: ofp.IPProtoTCP, Port: 80}
		v := model.VIP{Num: 2, IP: answerer.IP, MAC: [6]byte{2, 0, 0, 0, 2, 0}, Proto: ofp.IPProtoUDP, Port: 53}
		var answers []string
		for _, l := range testnet.FlowLines(t, model.VIPFlows(&v, &answerer, model.L2Normal, model.SwitchFeatures{})) {
			if strings.Contains(l, "arp_op=1") {
				answers = append(answers, l)
			}
		}
		testnet.AssertLines(t, answers, testnet.ARPAnswerLines(1, "02:00:00:00:01:00", "10.0.0.100", model.L2Normal))
	})
	// Under L2Learn the controller learns where the asker lives from its
	// request, which the switch sends up before answering it.
	t.Run("L2LearnSendsTheRequestUp", func(t *testing.T) {
		v := model.VIP{Num: 1, IP: netip.AddrFrom4([4]byte{10, 0, 0, 100}), MAC: [6]byte{2, 0, 0, 0, 1, 0}, Proto: ofp.IPProtoTCP, Port: 80}
		testnet.AssertLines(t, testnet.FlowLines(t, model.ARPAnswerFlows(&v, model.L2Learn)), testnet.ARPAnswerLines(1, "02:00:00:00:01:00", "10.0.0.100", model.L2Learn))
	})
}

func TestFlows_MemberReply(t *testing.T) {
	owner := model.ReplyOwner{VIPNum: 1, MemberNum: 7}
	tests := []struct {
		name string
		m    model.ReplyMatch
		want string
	}{
		{"TCP", model.ReplyMatch{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 8080, Proto: ofp.IPProtoTCP},
			"cookie=0x5d04000001000007, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535"},
		{"UDP", model.ReplyMatch{IP: netip.AddrFrom4([4]byte{10, 0, 0, 3}), Port: 53, Proto: ofp.IPProtoUDP},
			"cookie=0x5d04000001000007, priority=900, udp,nw_src=10.0.0.3,tp_src=53 actions=CONTROLLER:65535"},
		{"ICMPEchoRepliesOnly", model.ReplyMatch{IP: netip.AddrFrom4([4]byte{10, 0, 0, 4}), Proto: ofp.IPProtoICMP},
			"cookie=0x5d04000001000007, priority=900, icmp,nw_src=10.0.0.4,icmp_type=0 actions=CONTROLLER:65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mods := model.MemberReplyFlows(tt.m, owner, false)
			testnet.AssertLines(t, testnet.FlowLines(t, mods), []string{tt.want})
			if fm := mods[0]; fm.Priority <= model.PrioVIPPunt || fm.Priority >= model.PrioConnection {
				t.Errorf("priority %d, want between the VIP punts (%d) and the connections (%d)", fm.Priority, model.PrioVIPPunt, model.PrioConnection)
			}
		})
	}
}

// A member of a SWITCH NAT pool has its replies looked up in the
// tracker's member zone; what the tracker does not know goes on as it is
// (a client that reached the member directly), or to the controller when
// a CONTROLLER pool shares the member's address and port. Clients' packets
// to the member pass the member zone too, which ends a closed connection
// through a VIP that a new direct one reuses the ports of.
func TestFlows_TrackedMemberReply(t *testing.T) {
	m := model.ReplyMatch{IP: netip.AddrFrom4([4]byte{10, 0, 0, 2}), Port: 8080, Proto: ofp.IPProtoTCP}
	tracker := "cookie=0x5d04000001000007, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=ct(table=3,zone=94)"
	direct := "cookie=0x5d04000001000007, priority=898, tcp,nw_dst=10.0.0.2,tp_dst=8080 actions=ct(commit,zone=94,exec(set_field:0->ct_label)),goto_table:9"
	tests := []struct {
		name   string
		owner  model.ReplyOwner
		groups bool
		want   []string
	}{
		{"Tracked", model.ReplyOwner{VIPNum: 1, MemberNum: 7, Tracked: true}, true, []string{
			"cookie=0x5d04000001000007, table=from-member, priority=50, ct_label=0,tcp,nw_src=10.0.0.2,tp_src=8080 actions=goto_table:9",
			direct, tracker,
		}},
		{"SharedWithController", model.ReplyOwner{VIPNum: 1, MemberNum: 7, Tracked: true, Shared: true}, true, []string{
			"cookie=0x5d04000001000007, table=from-member, priority=50, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
			direct, tracker,
		}},
		{"SwitchWithoutGroups", model.ReplyOwner{VIPNum: 1, MemberNum: 7, Tracked: true, Shared: true}, false, []string{
			"cookie=0x5d04000001000007, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testnet.AssertLines(t, testnet.FlowLines(t, model.MemberReplyFlows(m, tt.owner, tt.groups)), tt.want)
		})
	}
}

func TestFlows_Deletes(t *testing.T) {
	mods := append(model.DeleteVIPFlows(5), model.DeleteMemberFlows(6), model.DeleteMemberReplyFlow(6))
	testnet.AssertLines(t, testnet.FlowLines(t, mods), []string{
		"delete cookie=0x5d02000005000000/0xffffffffff000000",
		"delete cookie=0x5d07000005000000/0xffffffffff000000",
		"delete cookie=0x5d80000005000000/0xff80ffffff000000",
		"delete cookie=0x5d80000000000006/0xff80000000ffffff",
		"delete cookie=0x5d04000000000006/0xffff000000ffffff",
	})
}

func TestFlows_L2(t *testing.T) {
	fm := model.L2Flow(model.TableL2, [6]byte{0xaa, 0, 0, 0, 0, 1}, ofp.PortLocal)
	testnet.AssertLines(t, testnet.FlowLines(t, []ofp.FlowMod{fm}), []string{
		"cookie=0x5d03000000000000, table=l2, priority=100, idle_timeout=300, dl_dst=aa:00:00:00:00:01 actions=LOCAL",
	})
}

func TestFlows_Connection(t *testing.T) {
	base := model.Connection{
		ClientIP: netip.AddrFrom4([4]byte{10, 0, 1, 5}), VIPIP: netip.AddrFrom4([4]byte{10, 0, 0, 100}), MemberIP: netip.AddrFrom4([4]byte{10, 0, 0, 2}),
		ClientPort: 40000, VIPPort: 80, MemberPort: 8080,
		ClientOFPort: 4, MemberOFPort: 2,
		VIPMAC: [6]byte{2, 0, 0, 0, 1, 0}, MemberMAC: [6]byte{0xaa, 0, 0, 0, 0, 2},
		VIPNum: 1, MemberNum: 2, IdleTimeout: 30,
	}
	tests := []struct {
		name string
		edit func(*model.Connection)
		want []string
	}{
		{"TCP", func(c *model.Connection) { c.Proto = ofp.IPProtoTCP }, []string{
			"cookie=0x5dee000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->tcp_dst,output:2",
			"cookie=0x5def000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.0.2,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,output:4",
		}},
		{"UDPWithHardTimeout", func(c *model.Connection) { c.Proto, c.HardTimeout = ofp.IPProtoUDP, 600 }, []string{
			"cookie=0x5dee000001000002, priority=1000, idle_timeout=30, hard_timeout=600, send_flow_rem, udp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->udp_dst,output:2",
			"cookie=0x5def000001000002, priority=1000, idle_timeout=30, hard_timeout=600, send_flow_rem, udp,nw_src=10.0.0.2,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->udp_src,output:4",
		}},
		{"ICMPPerClient", func(c *model.Connection) { c.Proto = ofp.IPProtoICMP }, []string{
			"cookie=0x5dee000001000002, priority=1000, idle_timeout=30, send_flow_rem, icmp,nw_src=10.0.1.5,nw_dst=10.0.0.100,icmp_type=8 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,output:2",
			"cookie=0x5def000001000002, priority=1000, idle_timeout=30, send_flow_rem, icmp,nw_src=10.0.0.2,nw_dst=10.0.1.5,icmp_type=0 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,output:4",
		}},
		{"MemberBehindClientPort", func(c *model.Connection) { c.Proto, c.MemberOFPort = ofp.IPProtoTCP, 4 }, []string{
			"cookie=0x5dee000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,in_port=4,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->tcp_dst,IN_PORT",
			"cookie=0x5def000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,in_port=4,nw_src=10.0.0.2,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,IN_PORT",
		}},
		// A member a SWITCH NAT pool shares: the connection is committed in
		// the member zone under its VIP, and its replies are taken behind
		// the tracker, only when the tracker names this VIP.
		{"MemberSharedWithTracker", func(c *model.Connection) { c.Proto, c.MemberZone = ofp.IPProtoTCP, true }, []string{
			"cookie=0x5dee000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->tcp_dst,ct(commit,zone=94,exec(set_field:0xa000064->ct_label,set_field:0x60050->ct_mark)),output:2",
			"cookie=0x5def000001000002, table=from-member, priority=300, idle_timeout=30, send_flow_rem, ct_mark=0x60050,ct_label=0xa000064,tcp,nw_src=10.0.0.2,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,output:4",
		}},
		{"MemberSharedWithTrackerBehindClientPort", func(c *model.Connection) { c.Proto, c.MemberZone, c.MemberOFPort = ofp.IPProtoICMP, true, 4 }, []string{
			"cookie=0x5dee000001000002, priority=1000, idle_timeout=30, send_flow_rem, icmp,in_port=4,nw_src=10.0.1.5,nw_dst=10.0.0.100,icmp_type=8 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,ct(commit,zone=94,exec(set_field:0xa000064->ct_label,set_field:0x10050->ct_mark)),IN_PORT",
			"cookie=0x5def000001000002, table=from-member, priority=300, idle_timeout=30, send_flow_rem, ct_mark=0x10050,ct_label=0xa000064,icmp,in_port=4,nw_src=10.0.0.2,nw_dst=10.0.1.5,icmp_type=0 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,IN_PORT",
		}},
	}
	f := model.NewConnFlows() // reused across cases, as a session does
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			testnet.AssertLines(t, testnet.FlowLines(t, f.Fill(&c)), tt.want)
		})
	}
}
