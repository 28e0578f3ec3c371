package controller

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

func TestCookie_RoundTrip(t *testing.T) {
	tests := []struct {
		name           string
		cat            category
		vip, member    uint32
		wantVIP, wantM uint32
	}{
		{"Zero", catBase, 0, 0, 0, 0},
		{"Connection", catConn, 7, 42, 7, 42},
		{"Reply", catConnReply, 1, 2, 1, 2},
		{"Largest", catConn, cookieNumberLimit - 1, cookieNumberLimit - 1, cookieNumberLimit - 1, cookieNumberLimit - 1},
		{"Truncated", catVIP, cookieNumberLimit + 3, cookieNumberLimit + 5, 3, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := makeCookie(tt.cat, tt.vip, tt.member)
			cat, v, m, ok := cookieParts(c)
			if !ok || cat != tt.cat || v != tt.wantVIP || m != tt.wantM {
				t.Errorf("cookieParts(%#x) = %v %d %d %v, want %v %d %d true", c, cat, v, m, ok, tt.cat, tt.wantVIP, tt.wantM)
			}
		})
	}
	t.Run("ForeignCookie", func(t *testing.T) {
		if _, _, _, ok := cookieParts(0x1234); ok {
			t.Error("a cookie without the app id was taken for ours")
		}
	})
}

func TestCookie_Masks(t *testing.T) {
	fwd := makeCookie(catConn, 3, 9)
	rev := makeCookie(catConnReply, 3, 9)
	tests := []struct {
		name    string
		del     ofp.FlowMod
		cookie  uint64
		matches bool
	}{
		{"MemberPurgeTakesForward", deleteMemberFlows(9), fwd, true},
		{"MemberPurgeTakesReply", deleteMemberFlows(9), rev, true},
		{"MemberPurgeSparesOtherMember", deleteMemberFlows(8), fwd, false},
		{"MemberPurgeSparesVIPFlows", deleteMemberFlows(0), makeCookie(catVIP, 3, 0), false},
		{"VIPPurgeTakesConnections", deleteVIPFlows(3)[2], rev, true},
		{"VIPPurgeSparesOtherVIP", deleteVIPFlows(4)[2], rev, false},
		{"VIPFlowsDeleteTakesPunts", deleteVIPFlows(3)[0], makeCookie(catVIP, 3, 0), true},
		{"VIPFlowsDeleteSparesConnections", deleteVIPFlows(3)[0], fwd, false},
		{"VIPFlowsDeleteTakesARPAnswer", deleteVIPFlows(3)[1], makeCookie(catARPAnswer, 3, 0), true},
		{"VIPFlowsDeleteSparesOtherVIPsARPAnswer", deleteVIPFlows(3)[1], makeCookie(catARPAnswer, 4, 0), false},
		{"MemberPurgeSparesReplyPunt", deleteMemberFlows(9), makeCookie(catMemberReply, 3, 9), false},
		{"ReplyPuntDeleteTakesItsMember", deleteMemberReplyFlow(9), makeCookie(catMemberReply, 3, 9), true},
		{"ReplyPuntDeleteSparesOtherMember", deleteMemberReplyFlow(8), makeCookie(catMemberReply, 3, 9), false},
		{"ReplyPuntDeleteSparesConnections", deleteMemberReplyFlow(9), rev, false},
		{"VIPPurgeSparesReplyPunt", deleteVIPFlows(3)[2], makeCookie(catMemberReply, 3, 9), false},
		{"DispatchPurgeTakesItsVIP", deleteByCookie(makeCookie(catDispatch, 3, 0), maskApp|maskCategory|maskVIP), makeCookie(catDispatch, 3, 0), true},
		{"DispatchPurgeSparesPunts", deleteByCookie(makeCookie(catDispatch, 3, 0), maskApp|maskCategory|maskVIP), makeCookie(catVIP, 3, 0), false},
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
		assertLines(t, flowLines(t, baseFlows(L2Normal, false)), []string{
			"cookie=0x5d01000000000000, priority=0 actions=goto_table:9",
			"cookie=0x5d08000000000000, priority=2000, dl_dst=01:80:c2:00:00:0e,dl_type=0x88cc actions=CONTROLLER:65535",
			"cookie=0x5d01000000000000, table=tracked, priority=0 actions=goto_table:9",
			"cookie=0x5d01000000000000, table=to-member, priority=0 actions=goto_table:9",
			"cookie=0x5d01000000000000, table=from-member, priority=0 actions=drop",
			"cookie=0x5d01000000000000, table=l2, priority=0 actions=NORMAL",
			ndCopyLine,
		})
	})
	t.Run("L2Learn", func(t *testing.T) {
		assertLines(t, flowLines(t, baseFlows(L2Learn, false)), []string{
			"cookie=0x5d01000000000000, priority=0 actions=goto_table:9",
			"cookie=0x5d08000000000000, priority=2000, dl_dst=01:80:c2:00:00:0e,dl_type=0x88cc actions=CONTROLLER:65535",
			"cookie=0x5d01000000000000, table=tracked, priority=0 actions=goto_table:9",
			"cookie=0x5d01000000000000, table=to-member, priority=0 actions=goto_table:9",
			"cookie=0x5d01000000000000, table=from-member, priority=0 actions=drop",
			"cookie=0x5d01000000000000, table=l2, priority=0 actions=CONTROLLER:65535",
			ndCopyLine,
		})
	})
}

// ndCopyLine is the base row that copies neighbour advertisements to all
// nodes to the controller.
const ndCopyLine = "cookie=0x5d07000000000000, priority=400, icmp6,dl_dst=33:33:00:00:00:01,icmp_type=136 actions=CONTROLLER:65535,goto_table:9"

func TestFlows_VIP(t *testing.T) {
	tests := []struct {
		name string
		vip  vipState
		want []string
	}{
		{"TCP", vipState{num: 1, ip: netip.AddrFrom4([4]byte{10, 0, 0, 100}), mac: [6]byte{2, 0, 0, 0, 1, 0}, proto: protoTCP, port: 80}, append(arpAnswerLines(1, "02:00:00:00:01:00", "10.0.0.100", L2Normal),
			"cookie=0x5d02000001000000, priority=500, arp,arp_tpa=10.0.0.100 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=500, arp,dl_dst=02:00:00:00:01:00 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=501, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
		)},
		{"UDP", vipState{num: 2, ip: netip.AddrFrom4([4]byte{10, 0, 0, 53}), mac: [6]byte{2, 0, 0, 0, 2, 0}, proto: protoUDP, port: 53}, append(arpAnswerLines(2, "02:00:00:00:02:00", "10.0.0.53", L2Normal),
			"cookie=0x5d02000002000000, priority=500, arp,arp_tpa=10.0.0.53 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=500, arp,dl_dst=02:00:00:00:02:00 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=501, udp,nw_dst=10.0.0.53,tp_dst=53 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=499, ip,nw_dst=10.0.0.53 actions=drop",
		)},
		{"ICMPEchoOnly", vipState{num: 3, ip: netip.AddrFrom4([4]byte{10, 0, 0, 1}), mac: [6]byte{2, 0, 0, 0, 3, 0}, proto: protoICMP}, append(arpAnswerLines(3, "02:00:00:00:03:00", "10.0.0.1", L2Normal),
			"cookie=0x5d02000003000000, priority=500, arp,arp_tpa=10.0.0.1 actions=CONTROLLER:65535",
			"cookie=0x5d02000003000000, priority=500, arp,dl_dst=02:00:00:00:03:00 actions=CONTROLLER:65535",
			"cookie=0x5d02000003000000, priority=500, icmp,nw_dst=10.0.0.1,icmp_type=8 actions=CONTROLLER:65535",
			"cookie=0x5d02000003000000, priority=499, ip,nw_dst=10.0.0.1 actions=drop",
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertLines(t, flowLines(t, vipFlows(&tt.vip, &tt.vip, L2Normal, switchFeatures{})), tt.want)
		})
	}
	// VIPs sharing an address answer with the MAC of the one the snapshot
	// picked, under its cookie.
	t.Run("AnsweredByAnother", func(t *testing.T) {
		answerer := vipState{num: 1, ip: netip.AddrFrom4([4]byte{10, 0, 0, 100}), mac: [6]byte{2, 0, 0, 0, 1, 0}, proto: protoTCP, port: 80}
		v := vipState{num: 2, ip: answerer.ip, mac: [6]byte{2, 0, 0, 0, 2, 0}, proto: protoUDP, port: 53}
		var answers []string
		for _, l := range flowLines(t, vipFlows(&v, &answerer, L2Normal, switchFeatures{})) {
			if strings.Contains(l, "arp_op=1") {
				answers = append(answers, l)
			}
		}
		assertLines(t, answers, arpAnswerLines(1, "02:00:00:00:01:00", "10.0.0.100", L2Normal))
	})
	// Under L2Learn the controller learns where the asker lives from its
	// request, which the switch sends up before answering it.
	t.Run("L2LearnSendsTheRequestUp", func(t *testing.T) {
		v := vipState{num: 1, ip: netip.AddrFrom4([4]byte{10, 0, 0, 100}), mac: [6]byte{2, 0, 0, 0, 1, 0}, proto: protoTCP, port: 80}
		assertLines(t, flowLines(t, arpAnswerFlows(&v, L2Learn)), arpAnswerLines(1, "02:00:00:00:01:00", "10.0.0.100", L2Learn))
	})
}

// arpAnswerLines are the rows with which the switch answers ARP requests
// for ip with mac, under the cookie of VIP vipNum; under L2Learn the
// request also goes up.
func arpAnswerLines(vipNum uint32, mac, ip string, l2 L2Mode) []string {
	cookie := fmt.Sprintf("cookie=%#x", makeCookie(catARPAnswer, vipNum, 0))
	up := ""
	if l2 == L2Learn {
		up = "CONTROLLER:65535,"
	}
	return []string{
		cookie + ", priority=511, arp,arp_spa=" + ip + ",arp_tpa=" + ip + ",arp_op=1 actions=drop",
		cookie + ", priority=510, arp,arp_tpa=" + ip + ",arp_op=1 actions=" + up + arpAnswer(mac, ip),
	}
}

// arpAnswer is the rewrite that turns an ARP request for ip into the
// reply from mac, back out of the port it came in on.
func arpAnswer(mac, ip string) string {
	return "move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:" + mac + "->eth_src,set_field:2->arp_op," +
		"move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:" + mac + "->arp_sha," +
		"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:" + ip + "->arp_spa,IN_PORT"
}

func TestFlows_MemberReply(t *testing.T) {
	owner := replyOwner{vipNum: 1, memberNum: 7}
	tests := []struct {
		name string
		m    replyMatch
		want string
	}{
		{"TCP", replyMatch{ip: netip.AddrFrom4([4]byte{10, 0, 0, 2}), port: 8080, proto: protoTCP},
			"cookie=0x5d04000001000007, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535"},
		{"UDP", replyMatch{ip: netip.AddrFrom4([4]byte{10, 0, 0, 3}), port: 53, proto: protoUDP},
			"cookie=0x5d04000001000007, priority=900, udp,nw_src=10.0.0.3,tp_src=53 actions=CONTROLLER:65535"},
		{"ICMPEchoRepliesOnly", replyMatch{ip: netip.AddrFrom4([4]byte{10, 0, 0, 4}), proto: protoICMP},
			"cookie=0x5d04000001000007, priority=900, icmp,nw_src=10.0.0.4,icmp_type=0 actions=CONTROLLER:65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mods := memberReplyFlows(tt.m, owner, false)
			assertLines(t, flowLines(t, mods), []string{tt.want})
			if fm := mods[0]; fm.Priority <= prioVIPPunt || fm.Priority >= prioConnection {
				t.Errorf("priority %d, want between the VIP punts (%d) and the connections (%d)", fm.Priority, prioVIPPunt, prioConnection)
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
	m := replyMatch{ip: netip.AddrFrom4([4]byte{10, 0, 0, 2}), port: 8080, proto: protoTCP}
	tracker := "cookie=0x5d04000001000007, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=ct(table=3,zone=94)"
	direct := "cookie=0x5d04000001000007, priority=898, tcp,nw_dst=10.0.0.2,tp_dst=8080 actions=ct(commit,zone=94,exec(set_field:0->ct_label)),goto_table:9"
	tests := []struct {
		name   string
		owner  replyOwner
		groups bool
		want   []string
	}{
		{"Tracked", replyOwner{vipNum: 1, memberNum: 7, tracked: true}, true, []string{
			"cookie=0x5d04000001000007, table=from-member, priority=50, ct_label=0,tcp,nw_src=10.0.0.2,tp_src=8080 actions=goto_table:9",
			direct, tracker,
		}},
		{"SharedWithController", replyOwner{vipNum: 1, memberNum: 7, tracked: true, shared: true}, true, []string{
			"cookie=0x5d04000001000007, table=from-member, priority=50, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
			direct, tracker,
		}},
		{"SwitchWithoutGroups", replyOwner{vipNum: 1, memberNum: 7, tracked: true, shared: true}, false, []string{
			"cookie=0x5d04000001000007, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertLines(t, flowLines(t, memberReplyFlows(m, tt.owner, tt.groups)), tt.want)
		})
	}
}

func TestFlows_Deletes(t *testing.T) {
	mods := append(deleteVIPFlows(5), deleteMemberFlows(6), deleteMemberReplyFlow(6))
	assertLines(t, flowLines(t, mods), []string{
		"delete cookie=0x5d02000005000000/0xffffffffff000000",
		"delete cookie=0x5d07000005000000/0xffffffffff000000",
		"delete cookie=0x5d10000005000000/0xfffeffffff000000",
		"delete cookie=0x5d10000000000006/0xfffe000000ffffff",
		"delete cookie=0x5d04000000000006/0xffff000000ffffff",
	})
}

func TestFlows_L2(t *testing.T) {
	fm := l2Flow(tableL2, [6]byte{0xaa, 0, 0, 0, 0, 1}, ofp.PortLocal)
	assertLines(t, flowLines(t, []ofp.FlowMod{fm}), []string{
		"cookie=0x5d03000000000000, table=l2, priority=100, idle_timeout=300, dl_dst=aa:00:00:00:00:01 actions=LOCAL",
	})
}

func TestFlows_Connection(t *testing.T) {
	base := connection{
		clientIP: netip.AddrFrom4([4]byte{10, 0, 1, 5}), vipIP: netip.AddrFrom4([4]byte{10, 0, 0, 100}), memberIP: netip.AddrFrom4([4]byte{10, 0, 0, 2}),
		clientPort: 40000, vipPort: 80, memberPort: 8080,
		clientOFPort: 4, memberOFPort: 2,
		vipMAC: [6]byte{2, 0, 0, 0, 1, 0}, memberMAC: [6]byte{0xaa, 0, 0, 0, 0, 2},
		vipNum: 1, memberNum: 2, idleTimeout: 30,
	}
	tests := []struct {
		name string
		edit func(*connection)
		want []string
	}{
		{"TCP", func(c *connection) { c.proto = protoTCP }, []string{
			"cookie=0x5d10000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->tcp_dst,output:2",
			"cookie=0x5d11000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.0.2,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,output:4",
		}},
		{"UDPWithHardTimeout", func(c *connection) { c.proto, c.hardTimeout = protoUDP, 600 }, []string{
			"cookie=0x5d10000001000002, priority=1000, idle_timeout=30, hard_timeout=600, send_flow_rem, udp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->udp_dst,output:2",
			"cookie=0x5d11000001000002, priority=1000, idle_timeout=30, hard_timeout=600, send_flow_rem, udp,nw_src=10.0.0.2,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->udp_src,output:4",
		}},
		{"ICMPPerClient", func(c *connection) { c.proto = protoICMP }, []string{
			"cookie=0x5d10000001000002, priority=1000, idle_timeout=30, send_flow_rem, icmp,nw_src=10.0.1.5,nw_dst=10.0.0.100,icmp_type=8 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,output:2",
			"cookie=0x5d11000001000002, priority=1000, idle_timeout=30, send_flow_rem, icmp,nw_src=10.0.0.2,nw_dst=10.0.1.5,icmp_type=0 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,output:4",
		}},
		{"MemberBehindClientPort", func(c *connection) { c.proto, c.memberOFPort = protoTCP, 4 }, []string{
			"cookie=0x5d10000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,in_port=4,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->tcp_dst,IN_PORT",
			"cookie=0x5d11000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,in_port=4,nw_src=10.0.0.2,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,IN_PORT",
		}},
		// A member a SWITCH NAT pool shares: the connection is committed in
		// the member zone under its VIP, and its replies are taken behind
		// the tracker, only when the tracker names this VIP.
		{"MemberSharedWithTracker", func(c *connection) { c.proto, c.memberZone = protoTCP, true }, []string{
			"cookie=0x5d10000001000002, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->tcp_dst,ct(commit,zone=94,exec(set_field:0xa000064->ct_label,set_field:0x60050->ct_mark)),output:2",
			"cookie=0x5d11000001000002, table=from-member, priority=300, idle_timeout=30, send_flow_rem, ct_mark=0x60050,ct_label=0xa000064,tcp,nw_src=10.0.0.2,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,output:4",
		}},
		{"MemberSharedWithTrackerBehindClientPort", func(c *connection) { c.proto, c.memberZone, c.memberOFPort = protoICMP, true, 4 }, []string{
			"cookie=0x5d10000001000002, priority=1000, idle_timeout=30, send_flow_rem, icmp,in_port=4,nw_src=10.0.1.5,nw_dst=10.0.0.100,icmp_type=8 actions=set_field:aa:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,ct(commit,zone=94,exec(set_field:0xa000064->ct_label,set_field:0x10050->ct_mark)),IN_PORT",
			"cookie=0x5d11000001000002, table=from-member, priority=300, idle_timeout=30, send_flow_rem, ct_mark=0x10050,ct_label=0xa000064,icmp,in_port=4,nw_src=10.0.0.2,nw_dst=10.0.1.5,icmp_type=0 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,IN_PORT",
		}},
	}
	f := newConnFlows() // reused across cases, as a session does
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.edit(&c)
			assertLines(t, flowLines(t, f.fill(&c)), tt.want)
		})
	}
}
