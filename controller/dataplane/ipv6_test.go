package dataplane

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// v6Config is testnet.Config with an IPv6 VIP and members.
func v6Config(edit func(*sdnlb.Config)) *sdnlb.Config {
	return testnet.Config(func(c *sdnlb.Config) {
		c.VIPs[0].Address = testnet.VIP6
		for i, m := range c.Members {
			m.Address = testnet.Member6(i + 1)
		}
		if edit != nil {
			edit(c)
		}
	})
}

// teach6 makes member i known as the controller learns IPv6 members: its
// advertisement to all nodes, which the switch copies up.
func (d *decision) teach6(members ...int) {
	d.tb.Helper()
	for _, i := range members {
		na := testnet.NDFrame(d.tb, testnet.MemberMAC(i), "33:33:00:00:00:01", testnet.Member6(i), "ff02::1", model.NDAdvertisement, testnet.Member6(i), testnet.MemberMAC(i))
		assertSent(d.tb, d.punt(model.MakeCookie(model.CatARPAnswer, 0, 0), uint32(i), na), l2Line(testnet.MemberMAC(i), i))
	}
}

// The switch answers a client's neighbour solicitation for an IPv6 VIP
// itself, multicast or unicast, as the controller answers one that reaches
// it; duplicate address detection of the VIP's address is dropped.
func TestDataplane_IPv6NeighbourDiscovery(t *testing.T) {
	const answer = "output:10 icmp6 2001:db8::100 > 2001:db8:1::5 type=136 code=0 nd_target=2001:db8::100 nd_sll=cc:00:00:00:00:01 nd_tll=02:00:00:00:01:00 nd_reserved=0x60000000 nd_options_type=2 in_port=10 dl_src=02:00:00:00:01:00 dl_dst=cc:00:00:00:00:01"
	d := newDecisionL2(t, v6Config(nil), model.L2Normal)
	unicast := testnet.NDFrame(t, testnet.ClientMAC, testnet.VIPMAC, testnet.Client6, testnet.VIP6, model.NDSolicitation, testnet.VIP6, testnet.ClientMAC)
	for name, frame := range map[string][]byte{"multicast": testnet.Solicitation(t), "unicast": unicast} {
		if got := d.forward(testnet.ClientOF, frame); got != answer {
			t.Errorf("%s solicitation went\n  %s\nwant\n  %s", name, got, answer)
		}
	}

	d.dp.PacketIn(d.now, d.snap, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction, Cookie: model.MakeCookie(model.CatBase, 0, 0),
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(testnet.ClientOF)}}, Data: testnet.Solicitation(t)}, d.out)
	sent := d.sent(nil)
	want := "packet_out in_port=10 actions=IN_PORT data=icmp6 02:00:00:00:01:00>cc:00:00:00:00:01 2001:db8::100>2001:db8:1::5 type=136 target=2001:db8::100"
	if len(sent) != 1 || sent[0] != want {
		t.Fatalf("the controller sent\n  %s\nwant\n  %s", strings.Join(sent, "\n  "), want)
	}

	dad := testnet.NDFrame(t, testnet.ClientMAC, "33:33:ff:00:01:00", "::", "ff02::1:ff00:100", model.NDSolicitation, testnet.VIP6, "")
	if got := d.forward(testnet.ClientOF, dad); got != "drop" {
		t.Errorf("duplicate address detection of the VIP's address went %s, want drop", got)
	}
}

// The switch's answer and the controller's are the same packet.
func TestDataplane_IPv6SwitchAnswersAsTheControllerDoes(t *testing.T) {
	d := newDecisionL2(t, v6Config(nil), model.L2Normal)
	fromSwitch, fromController := d.answers(testnet.ClientOF, testnet.Solicitation(t))
	// The switch's flow keeps the solicitation's nd_sll; the packet has no
	// such option any more, as the controller's has none.
	fromSwitch.NDSLL = [6]byte{}
	if fromSwitch != fromController {
		t.Errorf("answers differ\nswitch:     %v\ncontroller: %v", fromSwitch, fromController)
	}
}

// An IPv6 connection is set up as an IPv4 one: its flows match and
// rewrite the IPv6 addresses, and the switch sends its packets to the
// member and the member's replies back from the VIP.
func TestDataplane_IPv6Setup(t *testing.T) {
	d := newDecision(t, v6Config(nil))
	d.teach6(1, 2, 3)
	for i, member := range []int{1, 2, 3, 1} {
		sport := uint16(40000 + i)
		sent := d.packetIn(testnet.ClientOF, testnet.SYN6(t, sport))
		last := sent[len(sent)-1]
		if !strings.HasPrefix(last, "packet_out in_port=10 actions=set_field:"+testnet.MemberMAC(member)+"->eth_dst,set_field:"+testnet.Member6(member)+"->ipv6_dst,set_field:8080->tcp_dst") {
			t.Errorf("connection %d: sent\n  %s\nwant its first packet to member %d", i, strings.Join(sent, "\n  "), member)
		}
		got := d.forward(testnet.ClientOF, testnet.SYN6(t, sport))
		want := fmt.Sprintf("output:%d tcp6 [%s]:%d > [%s]:8080", member, testnet.Client6, sport, testnet.Member6(member))
		if !strings.HasPrefix(got, want) {
			t.Errorf("connection %d: the switch sends the client's packets\n  %s\nwant\n  %s...", i, got, want)
		}
		reply := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.MemberMAC(member), DstMAC: testnet.ClientMAC, Src: testnet.Member6(member), Dst: testnet.Client6,
			Sport: 8080, Dport: sport, SYN: true, ACK: true})
		got = d.forward(uint32(member), reply)
		want = fmt.Sprintf("output:10 tcp6 [%s]:80 > [%s]:%d", testnet.VIP6, testnet.Client6, sport)
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "dl_src="+testnet.VIPMAC) {
			t.Errorf("connection %d: the switch sends the member's replies\n  %s\nwant\n  %s... from the VIP's MAC", i, got, want)
		}
	}
}

// A member whose MAC is not known is asked for by a solicitation from the
// unspecified address, and its advertisement releases the held setup.
func TestDataplane_IPv6UnknownMemberSolicited(t *testing.T) {
	d := newDecision(t, v6Config(nil))
	frame := testnet.SYN6(t, 40000)
	assertSent(t, d.packetIn(testnet.ClientOF, frame), learnClient,
		"packet_out in_port=CONTROLLER actions=FLOOD data=icmp6 02:00:00:00:01:00>33:33:ff:00:00:01 ::>ff02::1:ff00:1 type=135 target=2001:db8::1")
	na := testnet.NDFrame(t, testnet.MemberMAC(1), "33:33:00:00:00:01", testnet.Member6(1), "ff02::1", model.NDAdvertisement, testnet.Member6(1), testnet.MemberMAC(1))
	sent := d.punt(model.MakeCookie(model.CatARPAnswer, 0, 0), 1, na)
	if len(sent) != 4 || sent[0] != l2Line(testnet.MemberMAC(1), 1) || !strings.Contains(sent[3], "->ipv6_dst") {
		t.Errorf("the member's advertisement sent\n  %s\nwant its L2 row, the connection's two flows and its first packet", strings.Join(sent, "\n  "))
	}
}

// A pool that knows IPv6 clients by their /64 keeps a client whose
// address changes within it (privacy addresses) on its persistent member;
// by the whole address, the next address is another client.
func TestDataplane_IPv6ClientPrefix(t *testing.T) {
	for _, tc := range []struct {
		prefix int
		member int // of the second address's connection
	}{{64, 1}, {128, 2}} {
		t.Run(fmt.Sprint(tc.prefix), func(t *testing.T) {
			d := newDecision(t, v6Config(func(c *sdnlb.Config) {
				c.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
				c.Pools[0].ClientIPv6Prefix = tc.prefix
			}))
			d.teach6(1, 2, 3)
			for i, src := range []string{testnet.Client6, "2001:db8:1::7:8"} {
				SYN := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: src, Dst: testnet.VIP6, Sport: 40000, Dport: 80, SYN: true})
				want := 1
				if i == 1 {
					want = tc.member
				}
				sent := d.packetIn(testnet.ClientOF, SYN)
				if last := sent[len(sent)-1]; !strings.Contains(last, "set_field:"+testnet.Member6(want)+"->ipv6_dst") {
					t.Errorf("%s went\n  %s\nwant member %d", src, last, want)
				}
			}
		})
	}
}

// A member route names its address however the route matches it: the
// destination (NAT), a register (IPv4 DSR) or the connection's label
// (IPv6 DSR); adoption learns members from it.
func TestRoutedAddress(t *testing.T) {
	for _, k := range []model.RouteKey{
		{Group: 1, IP: testnet.Addr4(0x0a000001)},
		{Group: 1, IP: testnet.Addr4(0x0a000001), DSR: true},
		{Group: 1, IP: netip.MustParseAddr(testnet.Member6(1))},
		{Group: 1, IP: netip.MustParseAddr(testnet.Member6(1)), DSR: true},
	} {
		mods := model.RouteFlows(k, model.MemberRoute{Cookie: model.MakeCookie(model.CatMemberRoute, 1, 1), VIP: model.DispatchSpec{Key: model.VIPKey{IP: k.IP, Proto: ofp.IPProtoTCP, Port: 80}}})
		route := mods[len(mods)-1]
		if got, ok := model.RoutedAddress(&route.Match); !ok || got != k.IP {
			t.Errorf("%+v: the route names %v, %v; want %v", k, got, ok, k.IP)
		}
	}
}

// An ICMP error about a reply a tracked VIP sent, which the tracker
// relates to its connection, goes on to the connection's member: for NAT
// with the quoted reply from the member's address and port, and valid
// checksums; for DSR as it came. One about a connection with flows of its
// own goes by its forward flow, which the controller asks the switch
// for.
func TestDataplane_ICMPErrorToMember(t *testing.T) {
	for _, tc := range []struct {
		name, vip, client, router, member string
		dsr                               bool
		dispatch                          sdnlb.Dispatch
	}{
		{"IPv6/NAT", testnet.VIP6, testnet.Client6, "2001:db8:1::1", testnet.Member6(1), false, sdnlb.DispatchSwitch},
		{"IPv6/DSR", testnet.VIP6, testnet.Client6, "2001:db8:1::1", testnet.Member6(1), true, sdnlb.DispatchSwitch},
		{"IPv4/NAT", "10.0.0.100", testnet.ClientIP, "10.0.1.1", "10.0.0.1", false, sdnlb.DispatchSwitch},
		{"IPv6/NAT/CONTROLLER", testnet.VIP6, testnet.Client6, "2001:db8:1::1", testnet.Member6(1), false, sdnlb.DispatchController},
		{"IPv4/DSR/CONTROLLER", "10.0.0.100", testnet.ClientIP, "10.0.1.1", "10.0.0.1", true, sdnlb.DispatchController},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newSwitchDecision(t, testnet.Config(func(c *sdnlb.Config) {
				c.VIPs[0].Address = tc.vip
				c.Pools[0].Dispatch = tc.dispatch
				if tc.dispatch == sdnlb.DispatchController { // persistence: its connections have flows, the tracker knows nothing of them
					c.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
				}
				if tc.dsr {
					c.Pools[0].Forwarding = sdnlb.ForwardingDSR
				}
				for i, m := range c.Members {
					if netip.MustParseAddr(tc.member).Is6() {
						m.Address = testnet.Member6(i + 1) // testnet.Config's are IPv4
					}
				}
			}))
			// Member 1 answers the controller's question for its MAC.
			var answer []byte
			if netip.MustParseAddr(tc.vip).Is6() {
				answer = testnet.NDFrame(t, testnet.MemberMAC(1), "33:33:00:00:00:01", testnet.Member6(1), "ff02::1", model.NDAdvertisement, testnet.Member6(1), testnet.MemberMAC(1))
			} else {
				answer = testnet.ARPFrame(t, 2, testnet.MemberMAC(1), testnet.VIPMAC, "10.0.0.1", tc.vip, testnet.VIPMAC)
			}
			d.punt(model.MakeCookie(model.CatARPAnswer, 0, 0), 1, answer)
			rows := map[uint16]bool{}
			for _, fm := range d.sw.Flows() {
				if _, ok := fm.Match.Get(ofp.OXMICMPv6Type); ok || model.MatchedProto(&fm.Match) == ofp.IPProtoICMP {
					rows[fm.Priority] = true
				}
			}
			if !rows[model.PrioICMPError] || !rows[model.PrioTrackedError] {
				t.Fatalf("the switch has ICMP rows at %v, want the errors into the tracker and back", rows)
			}
			member := netip.MustParseAddr(tc.member)
			frame := testnet.TooBigFrame(t, tc.router, tc.vip, tc.client)
			metadata := []ofp.OXM{ofp.MatchInPort(testnet.ClientOF), ofp.MatchCTLabel(model.AddressLabel(member)), ofp.MatchCTMark(8080, 0xffffffff)}
			if tc.dispatch == sdnlb.DispatchController {
				// The connection the error is about; the tracker knows nothing of it.
				d.packetIn(testnet.ClientOF, testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: tc.client, Dst: tc.vip, Sport: 40000, Dport: 80, SYN: true}))
				metadata = metadata[:1]
			}
			d.dp.PacketIn(d.now, d.snap, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction, TableID: model.TableTracked,
				Cookie: model.MakeCookie(model.CatVIP, 1, 0), Match: ofp.Match{OXMs: metadata}, Data: frame}, d.out)
			if tc.dispatch == sdnlb.DispatchController {
				d.answerFlowsRequest()
			}
			_, m, err := ofp.Decode(d.out.Buf)
			d.out.Reset()
			po, ok := m.(*ofp.PacketOut)
			if err != nil || !ok {
				t.Fatalf("the controller sent %T, %v; want the error on to the member", m, err)
			}
			if out := testnet.PacketOutLine(po); out != "in_port=10 actions=output:1" {
				t.Errorf("the error went %s, want to member 1's port", out)
			}
			p := testnet.ParseFrame(t, po.Data)
			if eth := testnet.LayerOf[*layers.Ethernet](t, p); eth.DstMAC.String() != testnet.MemberMAC(1) {
				t.Errorf("the error goes to MAC %s, want member 1's", eth.DstMAC)
			}
			wantDst, wantQuoted, wantPort := member, member, uint16(8080)
			if tc.dsr {
				wantDst, wantQuoted, wantPort = netip.MustParseAddr(tc.vip), netip.MustParseAddr(tc.vip), 80
			}
			var dst, quotedSrc netip.Addr
			var quotedPort uint16
			var valid bool
			if member.Is6() {
				ip := testnet.LayerOf[*layers.IPv6](t, p)
				dst = model.AddrFrom(ip.DstIP)
				msg := po.Data[14+40 : 14+40+int(ip.Length)]
				valid = checksum(msg, pseudoHeaderSum(model.AddrFrom(ip.SrcIP), dst, ofp.IPProtoICMPv6, len(msg))) == 0
				quotedSrc, quotedPort = model.AddrFrom(msg[8+8:8+24]), binary.BigEndian.Uint16(msg[8+40:])
			} else {
				ip := testnet.LayerOf[*layers.IPv4](t, p)
				dst = model.AddrFrom(ip.DstIP)
				msg := po.Data[14+20 : 14+int(ip.Length)]
				valid = checksum(msg, 0) == 0 && checksum(po.Data[14:34], 0) == 0 && checksum(msg[8:28], 0) == 0
				quotedSrc, quotedPort = model.AddrFrom(msg[8+12:8+16]), binary.BigEndian.Uint16(msg[8+20:])
			}
			if dst != wantDst || quotedSrc != wantQuoted || quotedPort != wantPort || !valid {
				t.Errorf("the error goes to %v quoting a reply from [%v]:%d, checksums valid %t; want %v, [%v]:%d, true",
					dst, quotedSrc, quotedPort, valid, wantDst, wantQuoted, wantPort)
			}
		})
	}
}

// answerFlowsRequest answers the one flow-stats request in the outbox as
// the switch would, with the flows it holds whose match has every field
// the request's has, and hands the answer to the dataplane.
func (d *decision) answerFlowsRequest() {
	d.tb.Helper()
	h, m, err := ofp.Decode(d.out.Buf)
	d.out.Reset()
	req, ok := m.(*ofp.MultipartRequest)
	if err != nil || !ok {
		d.tb.Fatalf("the controller sent %T, %v; want a request for the connection's flow", m, err)
	}
	fs, ok := req.Body.(ofp.FlowStatsRequest)
	if !ok {
		d.tb.Fatalf("the controller asked for %T, want flows", req.Body)
	}
	var stats []ofp.FlowStats
	for _, f := range d.sw.Flows() {
		if f.TableID != fs.TableID || f.Cookie&fs.CookieMask != fs.Cookie&fs.CookieMask {
			continue
		}
		if !slices.ContainsFunc(fs.Match.OXMs, func(o ofp.OXM) bool { return !slices.Contains(f.Match.OXMs, o) }) {
			stats = append(stats, ofp.FlowStats{TableID: f.TableID, Priority: f.Priority, Cookie: f.Cookie, Match: f.Match,
				Instructions: f.Instructions})
		}
	}
	if len(stats) == 0 {
		d.tb.Fatalf("no flow answers the request for %v", fs.Match)
	}
	if !d.dp.ICMPFlowsAnswer(h.XID, stats, d.out) {
		d.tb.Fatalf("the dataplane took no answer to request %d", h.XID)
	}
}

// An IPv6 SWITCH VIP's connections are carried by the switch alone, as
// IPv4 ones: NAT moves the member's whole address from the tracker's
// label into ipv6_dst and gives the replies the VIP's back; DSR rewrites
// the MAC alone. A drained member keeps its connections and gets no new
// one.
func TestDispatch_IPv6Connection(t *testing.T) {
	for _, fwd := range sdnlb.Forwardings {
		t.Run(string(fwd), func(t *testing.T) {
			v6 := func(c *sdnlb.Config) {
				c.VIPs[0].Address = testnet.VIP6
				for i, m := range c.Members {
					m.Address = ipv6.member(i + 1)
				}
			}
			d := newSwitchDecision(t, switchConfig(fwd, v6))
			d.learnMembers(ipv6, 3)
			dsr := fwd == sdnlb.ForwardingDSR
			at := map[conn]int{}
			reached := map[int]bool{}
			for sport := uint16(40000); sport < 40030; sport++ {
				c := conn{t, ipv6, dsr, sport}
				at[c] = d.connect(c)
				reached[at[c]] = true
			}
			if len(reached) != 3 {
				t.Errorf("30 connections reached members %v, want all 3", reached)
			}

			d.configure(switchConfig(fwd, func(c *sdnlb.Config) { v6(c); c.Members[0].Weight = 0 }))
			for c, m := range at {
				d.assertKept(c, m)
			}
			for i, m := range d.bucketMembers(conn{t, ipv6, dsr, 50000}.fromClient(true, false)) {
				if m != 2 && m != 3 {
					t.Fatalf("bucket %d sends new connections to member %d, want 2 or 3", i, m)
				}
			}
		})
	}
}
