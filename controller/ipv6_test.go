package controller

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// The IPv6 twins of the test configuration's addresses.
const (
	vip6    = "2001:db8::100"
	client6 = "2001:db8:1::5"
)

func member6(i int) string { return fmt.Sprintf("2001:db8::%d", i) }

// v6Config is testConfig with an IPv6 VIP and members.
func v6Config(edit func(*sdnlb.Config)) *sdnlb.Config {
	return testConfig(func(c *sdnlb.Config) {
		c.VIPs[0].Address = vip6
		for i, m := range c.Members {
			m.Address = member6(i + 1)
		}
		if edit != nil {
			edit(c)
		}
	})
}

func syn6(tb testing.TB, sport uint16) []byte {
	tb.Helper()
	return tcpFrame(tb, tcpSeg{srcMAC: clientMAC, dstMAC: vipMAC, src: client6, dst: vip6, sport: sport, dport: 80, syn: true, seq: 1000})
}

// solicitation is the client's neighbour solicitation for the VIP, to its
// solicited-node group.
func solicitation(tb testing.TB) []byte {
	tb.Helper()
	return ndFrame(tb, clientMAC, "33:33:ff:00:01:00", client6, "ff02::1:ff00:100", ndSolicitation, vip6, clientMAC)
}

// teach6 makes member i known as the controller learns IPv6 members: its
// advertisement to all nodes, which the switch copies up.
func (d *decision) teach6(members ...int) {
	d.tb.Helper()
	for _, i := range members {
		na := ndFrame(d.tb, memberMAC(i), "33:33:00:00:00:01", member6(i), "ff02::1", ndAdvertisement, member6(i), memberMAC(i))
		assertSent(d.tb, d.punt(makeCookie(catARPAnswer, 0, 0), uint32(i), na), l2Line(memberMAC(i), i))
	}
}

// The switch answers a client's neighbour solicitation for an IPv6 VIP
// itself, multicast or unicast, as the controller answers one that reaches
// it; duplicate address detection of the VIP's address is dropped.
func TestDataplane_IPv6NeighbourDiscovery(t *testing.T) {
	const answer = "output:10 icmp6 2001:db8::100 > 2001:db8:1::5 type=136 code=0 nd_target=2001:db8::100 nd_sll=cc:00:00:00:00:01 nd_tll=02:00:00:00:01:00 nd_reserved=0x60000000 nd_options_type=2 in_port=10 dl_src=02:00:00:00:01:00 dl_dst=cc:00:00:00:00:01"
	d := newDecisionL2(t, v6Config(nil), L2Normal)
	unicast := ndFrame(t, clientMAC, vipMAC, client6, vip6, ndSolicitation, vip6, clientMAC)
	for name, frame := range map[string][]byte{"multicast": solicitation(t), "unicast": unicast} {
		if got := d.forward(clientOF, frame); got != answer {
			t.Errorf("%s solicitation went\n  %s\nwant\n  %s", name, got, answer)
		}
	}

	d.dp.packetIn(d.now, d.snap, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction, Cookie: makeCookie(catBase, 0, 0),
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(clientOF)}}, Data: solicitation(t)}, d.out)
	sent := d.sent(nil)
	want := "packet_out in_port=10 actions=IN_PORT data=icmp6 02:00:00:00:01:00>cc:00:00:00:00:01 2001:db8::100>2001:db8:1::5 type=136 target=2001:db8::100"
	if len(sent) != 1 || sent[0] != want {
		t.Fatalf("the controller sent\n  %s\nwant\n  %s", strings.Join(sent, "\n  "), want)
	}

	dad := ndFrame(t, clientMAC, "33:33:ff:00:01:00", "::", "ff02::1:ff00:100", ndSolicitation, vip6, "")
	if got := d.forward(clientOF, dad); got != "drop" {
		t.Errorf("duplicate address detection of the VIP's address went %s, want drop", got)
	}
}

// The switch's answer and the controller's are the same packet.
func TestDataplane_IPv6SwitchAnswersAsTheControllerDoes(t *testing.T) {
	d := newDecisionL2(t, v6Config(nil), L2Normal)
	fromSwitch, fromController := d.answers(clientOF, solicitation(t))
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
		sent := d.packetIn(clientOF, syn6(t, sport))
		last := sent[len(sent)-1]
		if !strings.HasPrefix(last, "packet_out in_port=10 actions=set_field:"+memberMAC(member)+"->eth_dst,set_field:"+member6(member)+"->ipv6_dst,set_field:8080->tcp_dst") {
			t.Errorf("connection %d: sent\n  %s\nwant its first packet to member %d", i, strings.Join(sent, "\n  "), member)
		}
		got := d.forward(clientOF, syn6(t, sport))
		want := fmt.Sprintf("output:%d tcp6 [%s]:%d > [%s]:8080", member, client6, sport, member6(member))
		if !strings.HasPrefix(got, want) {
			t.Errorf("connection %d: the switch sends the client's packets\n  %s\nwant\n  %s...", i, got, want)
		}
		reply := tcpFrame(t, tcpSeg{srcMAC: memberMAC(member), dstMAC: clientMAC, src: member6(member), dst: client6,
			sport: 8080, dport: sport, syn: true, ack: true})
		got = d.forward(uint32(member), reply)
		want = fmt.Sprintf("output:10 tcp6 [%s]:80 > [%s]:%d", vip6, client6, sport)
		if !strings.HasPrefix(got, want) || !strings.Contains(got, "dl_src="+vipMAC) {
			t.Errorf("connection %d: the switch sends the member's replies\n  %s\nwant\n  %s... from the VIP's MAC", i, got, want)
		}
	}
}

// A member whose MAC is not known is asked for by a solicitation from the
// unspecified address, and its advertisement releases the held setup.
func TestDataplane_IPv6UnknownMemberSolicited(t *testing.T) {
	d := newDecision(t, v6Config(nil))
	frame := syn6(t, 40000)
	assertSent(t, d.packetIn(clientOF, frame), learnClient,
		"packet_out in_port=CONTROLLER actions=FLOOD data=icmp6 02:00:00:00:01:00>33:33:ff:00:00:01 ::>ff02::1:ff00:1 type=135 target=2001:db8::1")
	na := ndFrame(t, memberMAC(1), "33:33:00:00:00:01", member6(1), "ff02::1", ndAdvertisement, member6(1), memberMAC(1))
	sent := d.punt(makeCookie(catARPAnswer, 0, 0), 1, na)
	if len(sent) != 4 || sent[0] != l2Line(memberMAC(1), 1) || !strings.Contains(sent[3], "->ipv6_dst") {
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
			for i, src := range []string{client6, "2001:db8:1::7:8"} {
				syn := tcpFrame(t, tcpSeg{srcMAC: clientMAC, dstMAC: vipMAC, src: src, dst: vip6, sport: 40000, dport: 80, syn: true})
				want := 1
				if i == 1 {
					want = tc.member
				}
				sent := d.packetIn(clientOF, syn)
				if last := sent[len(sent)-1]; !strings.Contains(last, "set_field:"+member6(want)+"->ipv6_dst") {
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
	for _, k := range []routeKey{
		{group: 1, ip: addr4(0x0a000001)},
		{group: 1, ip: addr4(0x0a000001), dsr: true},
		{group: 1, ip: netip.MustParseAddr(member6(1))},
		{group: 1, ip: netip.MustParseAddr(member6(1)), dsr: true},
	} {
		mods := routeFlows(k, memberRoute{cookie: makeCookie(catMemberRoute, 1, 1), vip: dispatchSpec{key: vipKey{ip: k.ip, proto: protoTCP, port: 80}}})
		route := mods[len(mods)-1]
		if got, ok := routedAddress(&route.Match); !ok || got != k.ip {
			t.Errorf("%+v: the route names %v, %v; want %v", k, got, ok, k.ip)
		}
	}
}

// tooBigFrame is an ICMP error from a router to vip saying that the reply
// vip:80 → client:40000 was too big: IPv6 packet too big or IPv4
// fragmentation needed, by the family of vip.
func tooBigFrame(tb testing.TB, router, vip, client string) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: mustMAC(tb, clientMAC), DstMAC: mustMAC(tb, vipMAC)}
	quoted := &layers.TCP{SrcPort: 80, DstPort: 40000, ACK: true, Seq: 7, Window: 1024}
	payload := gopacket.Payload(make([]byte, 64))
	if netip.MustParseAddr(vip).Is6() {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP(router), DstIP: net.ParseIP(vip)}
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(icmpv6PacketTooBig, 0)}
		_ = icmp.SetNetworkLayerForChecksum(ip)
		inner := &layers.IPv6{Version: 6, HopLimit: 63, NextHeader: layers.IPProtocolTCP, SrcIP: net.ParseIP(vip), DstIP: net.ParseIP(client)}
		_ = quoted.SetNetworkLayerForChecksum(inner)
		return serialize(tb, eth, ip, icmp, gopacket.Payload([]byte{0, 0, 5, 0}), inner, quoted, payload)
	}
	eth.EthernetType = layers.EthernetTypeIPv4
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP(router).To4(), DstIP: net.ParseIP(vip).To4()}
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(icmpUnreachable, icmpFragmentationNeeded), Seq: 1000}
	inner := &layers.IPv4{Version: 4, IHL: 5, TTL: 63, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(vip).To4(), DstIP: net.ParseIP(client).To4()}
	_ = quoted.SetNetworkLayerForChecksum(inner)
	return serialize(tb, eth, ip, icmp, inner, quoted, payload)
}

// An ICMP error about a reply a SWITCH VIP sent, which the tracker relates
// to its connection, goes on to the connection's member: for NAT with the
// quoted reply from the member's address and port, and valid checksums;
// for DSR as it came.
func TestDataplane_ICMPErrorToMember(t *testing.T) {
	for _, tc := range []struct {
		name, vip, client, router, member string
		dsr                               bool
		dispatch                          sdnlb.Dispatch
	}{
		{"IPv6/NAT", vip6, client6, "2001:db8:1::1", member6(1), false, sdnlb.DispatchSwitch},
		{"IPv6/DSR", vip6, client6, "2001:db8:1::1", member6(1), true, sdnlb.DispatchSwitch},
		{"IPv4/NAT", "10.0.0.100", clientIP, "10.0.1.1", "10.0.0.1", false, sdnlb.DispatchSwitch},
		{"IPv6/NAT/CONTROLLER", vip6, client6, "2001:db8:1::1", member6(1), false, sdnlb.DispatchController},
		{"IPv4/DSR/CONTROLLER", "10.0.0.100", clientIP, "10.0.1.1", "10.0.0.1", true, sdnlb.DispatchController},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newSwitchDecision(t, testConfig(func(c *sdnlb.Config) {
				c.VIPs[0].Address = tc.vip
				c.Pools[0].Dispatch = tc.dispatch
				if tc.dsr {
					c.Pools[0].Forwarding = sdnlb.ForwardingDSR
				}
				for i, m := range c.Members {
					if netip.MustParseAddr(tc.member).Is6() {
						m.Address = member6(i + 1) // testConfig's are IPv4
					}
				}
			}))
			// Member 1 answers the controller's question for its MAC.
			var answer []byte
			if netip.MustParseAddr(tc.vip).Is6() {
				answer = ndFrame(t, memberMAC(1), "33:33:00:00:00:01", member6(1), "ff02::1", ndAdvertisement, member6(1), memberMAC(1))
			} else {
				answer = arpFrame(t, 2, memberMAC(1), vipMAC, "10.0.0.1", tc.vip, vipMAC)
			}
			d.punt(makeCookie(catARPAnswer, 0, 0), 1, answer)
			rows := map[uint16]bool{}
			for _, fm := range d.flows {
				if _, ok := fm.Match.Get(ofp.OXMICMPv6Type); ok || matchedProto(&fm.Match) == protoICMP {
					rows[fm.Priority] = true
				}
			}
			if !rows[prioICMPError] || !rows[prioTrackedError] {
				t.Fatalf("the switch has ICMP rows at %v, want the errors into the tracker and back", rows)
			}
			member := netip.MustParseAddr(tc.member)
			frame := tooBigFrame(t, tc.router, tc.vip, tc.client)
			metadata := []ofp.OXM{ofp.MatchInPort(clientOF), ofp.MatchCTLabel(addressLabel(member)), ofp.MatchCTMark(8080, 0xffffffff)}
			if tc.dispatch == sdnlb.DispatchController {
				// The connection the error is about; the tracker knows nothing of it.
				d.packetIn(clientOF, tcpFrame(t, tcpSeg{srcMAC: clientMAC, dstMAC: vipMAC, src: tc.client, dst: tc.vip, sport: 40000, dport: 80, syn: true}))
				metadata = metadata[:1]
			}
			d.dp.packetIn(d.now, d.snap, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction, TableID: tableTracked,
				Cookie: makeCookie(catVIP, 1, 0), Match: ofp.Match{OXMs: metadata}, Data: frame}, d.out)
			if tc.dispatch == sdnlb.DispatchController {
				d.answerFlowsRequest()
			}
			_, m, err := ofp.Decode(d.out.buf)
			d.out.reset()
			po, ok := m.(*ofp.PacketOut)
			if err != nil || !ok {
				t.Fatalf("the controller sent %T, %v; want the error on to the member", m, err)
			}
			if out := packetOutLine(po); out != "in_port=10 actions=output:1" {
				t.Errorf("the error went %s, want to member 1's port", out)
			}
			p := parseFrame(t, po.Data)
			if eth := layerOf[*layers.Ethernet](t, p); eth.DstMAC.String() != memberMAC(1) {
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
				ip := layerOf[*layers.IPv6](t, p)
				dst = addrFrom(ip.DstIP)
				msg := po.Data[14+40 : 14+40+int(ip.Length)]
				valid = checksum(msg, pseudoHeaderSum(addrFrom(ip.SrcIP), dst, protoICMPv6, len(msg))) == 0
				quotedSrc, quotedPort = addrFrom(msg[8+8:8+24]), binary.BigEndian.Uint16(msg[8+40:])
			} else {
				ip := layerOf[*layers.IPv4](t, p)
				dst = addrFrom(ip.DstIP)
				msg := po.Data[14+20 : 14+int(ip.Length)]
				valid = checksum(msg, 0) == 0 && checksum(po.Data[14:34], 0) == 0 && checksum(msg[8:28], 0) == 0
				quotedSrc, quotedPort = addrFrom(msg[8+12:8+16]), binary.BigEndian.Uint16(msg[8+20:])
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
	h, m, err := ofp.Decode(d.out.buf)
	d.out.reset()
	req, ok := m.(*ofp.MultipartRequest)
	if err != nil || !ok {
		d.tb.Fatalf("the controller sent %T, %v; want a request for the connection's flow", m, err)
	}
	fs, ok := req.Body.(ofp.FlowStatsRequest)
	if !ok {
		d.tb.Fatalf("the controller asked for %T, want flows", req.Body)
	}
	var stats []ofp.FlowStats
	for _, f := range d.flows {
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
	if !d.dp.icmpFlowsAnswer(h.XID, stats, d.out) {
		d.tb.Fatalf("the dataplane took no answer to request %d", h.XID)
	}
}
