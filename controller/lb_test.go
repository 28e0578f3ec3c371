package controller

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

const (
	vipMAC    = "02:00:00:00:01:00"
	clientMAC = "cc:00:00:00:00:01"
	clientIP  = "10.0.1.5"
	clientOF  = 10
)

func memberMAC(i int) string { return fmt.Sprintf("aa:00:00:00:00:%02x", i) }

// teachMember makes member i (10.0.0.i, port i) known to the session the
// way the controller learns members: its ARP reply to the VIP.
func teachMember(tb testing.TB, sw *fakeSwitch, i int) {
	tb.Helper()
	sw.packetIn(uint32(i), arpFrame(tb, 2, memberMAC(i), vipMAC, fmt.Sprintf("10.0.0.%d", i), "10.0.0.100", vipMAC))
	r := sw.nextOf(ofp.TypeFlowMod)
	if line := flowLine(tb, r.m.(*ofp.FlowMod)); !strings.Contains(line, "dl_dst="+memberMAC(i)) {
		tb.Fatalf("learning member %d installed %s", i, line)
	}
}

func syn(tb testing.TB, sport uint16) []byte {
	tb.Helper()
	return tcpFrame(tb, tcpSeg{srcMAC: clientMAC, dstMAC: vipMAC, src: clientIP, dst: "10.0.0.100", sport: sport, dport: 80, syn: true, seq: 1000})
}

// setup is what the controller sends for one new connection.
type setup struct {
	fwd, rev ofp.FlowMod
	out      *ofp.PacketOut
}

// nextSetup skips L2 learning and returns the next connection setup.
func nextSetup(tb testing.TB, sw *fakeSwitch) setup {
	tb.Helper()
	var s setup
	var mods []ofp.FlowMod
	for s.out == nil {
		r := sw.next()
		switch m := r.m.(type) {
		case *ofp.FlowMod:
			if cat, _, _, _ := cookieParts(m.Cookie); cat != catL2 {
				mods = append(mods, *m)
			}
		case *ofp.PacketOut:
			s.out = m
		}
	}
	if len(mods) != 2 {
		tb.Fatalf("setup sent %d flow-mods before its packet-out, want 2: %q", len(mods), flowLines(tb, mods))
	}
	s.fwd, s.rev = mods[0], mods[1]
	return s
}

// memberOf reads the member address a client → member flow rewrites to.
func memberOf(tb testing.TB, fm *ofp.FlowMod) string {
	tb.Helper()
	line := flowLine(tb, fm)
	i := strings.Index(line, "->ip_dst")
	j := strings.LastIndex(line[:max(i, 0)], ":")
	if i < 0 || j < 0 {
		tb.Fatalf("no ip_dst rewrite in %s", line)
	}
	return line[j+1 : i]
}

func actionsLine(actions []ofp.Action) string {
	return ofp.FormatInstructions([]ofp.Instruction{ofp.InstructionApplyActions{Actions: actions}})
}

func connected(tb testing.TB, cfg *sdnlb.Config, opts Options, members ...int) (*harness, *fakeSwitch) {
	tb.Helper()
	h := startController(tb, cfg, opts)
	sw, _ := h.connect(tb, 1)
	for _, i := range members {
		teachMember(tb, sw, i)
	}
	return h, sw
}

func TestPacketIn_ARPForVIP(t *testing.T) {
	_, sw := connected(t, testConfig(nil), Options{})
	sw.packetIn(clientOF, arpFrame(t, 1, clientMAC, "ff:ff:ff:ff:ff:ff", clientIP, "10.0.0.100", "00:00:00:00:00:00"))
	r := sw.nextOf(ofp.TypePacketOut)
	po := r.m.(*ofp.PacketOut)
	if got := packetOutLine(po); got != "in_port=10 actions=IN_PORT" {
		t.Errorf("ARP reply sent %s, want out of the ingress port", got)
	}
	p := parseFrame(t, po.Data)
	eth := layerOf[*layers.Ethernet](t, p)
	arp := layerOf[*layers.ARP](t, p)
	got := fmt.Sprintf("%s>%s op=%d sha=%s spa=%s tha=%s tpa=%s", eth.SrcMAC, eth.DstMAC, arp.Operation,
		net.HardwareAddr(arp.SourceHwAddress), net.IP(arp.SourceProtAddress), net.HardwareAddr(arp.DstHwAddress), net.IP(arp.DstProtAddress))
	want := "02:00:00:00:01:00>cc:00:00:00:00:01 op=2 sha=02:00:00:00:01:00 spa=10.0.0.100 tha=cc:00:00:00:00:01 tpa=10.0.1.5"
	if got != want {
		t.Errorf("ARP reply\n got %s\nwant %s", got, want)
	}
}

func TestPacketIn_ARPOtherIsLearnedAndFlooded(t *testing.T) {
	_, sw := connected(t, testConfig(nil), Options{})
	frame := arpFrame(t, 1, clientMAC, "ff:ff:ff:ff:ff:ff", clientIP, "10.0.0.7", "00:00:00:00:00:00")
	sw.packetIn(clientOF, frame)
	fm := sw.nextOf(ofp.TypeFlowMod).m.(*ofp.FlowMod)
	assertLines(t, flowLines(t, []ofp.FlowMod{*fm}), []string{
		"cookie=0x5d03000000000000, priority=100, idle_timeout=300, dl_dst=cc:00:00:00:00:01 actions=output:10",
	})
	po := sw.nextOf(ofp.TypePacketOut).m.(*ofp.PacketOut)
	if got := packetOutLine(po); got != "in_port=10 actions=FLOOD" || string(po.Data) != string(frame) {
		t.Errorf("unknown destination sent %s, want the frame flooded", got)
	}
	// The answer goes straight to the learned port, and a move replaces the flow.
	reply := arpFrame(t, 2, memberMAC(7), clientMAC, "10.0.0.7", clientIP, clientMAC)
	sw.packetIn(7, reply)
	sw.nextOf(ofp.TypeFlowMod)
	if got := packetOutLine(sw.nextOf(ofp.TypePacketOut).m.(*ofp.PacketOut)); got != "in_port=7 actions=output:10" {
		t.Errorf("known destination sent %s, want output:10", got)
	}
	sw.packetIn(11, frame)
	fm = sw.nextOf(ofp.TypeFlowMod).m.(*ofp.FlowMod)
	if line := flowLine(t, fm); !strings.Contains(line, "dl_dst=cc:00:00:00:00:01 actions=output:11") {
		t.Errorf("after a move: %s", line)
	}
}

func TestPacketIn_IdledL2FlowReinstalled(t *testing.T) {
	h, sw := connected(t, testConfig(nil), Options{})
	sw.packetIn(clientOF, arpFrame(t, 1, clientMAC, "ff:ff:ff:ff:ff:ff", clientIP, "10.0.0.7", "00:00:00:00:00:00"))
	sw.nextOf(ofp.TypePacketOut)
	toClient := arpFrame(t, 2, memberMAC(7), clientMAC, "10.0.0.7", clientIP, clientMAC)

	// Right after learning, a packet-in for the client is a packet that
	// overtook the flow: forwarded, no second flow-mod for the client.
	sw.packetIn(7, toClient)
	sw.nextOf(ofp.TypeFlowMod) // learning 7's MAC
	if r := sw.next(); r.h.Type != ofp.TypePacketOut {
		t.Fatalf("got %s, want the packet-out only", r.h.Type)
	}
	// Much later the client's flow has idled out: put it back.
	h.clock.advance(time.Duration(l2IdleTimeout) * time.Second)
	sw.packetIn(7, toClient)
	fm := sw.nextOf(ofp.TypeFlowMod).m.(*ofp.FlowMod)
	if line := flowLine(t, fm); !strings.Contains(line, "dl_dst=cc:00:00:00:00:01 actions=output:10") {
		t.Errorf("reinstalled %s", line)
	}
	if got := packetOutLine(sw.nextOf(ofp.TypePacketOut).m.(*ofp.PacketOut)); got != "in_port=7 actions=output:10" {
		t.Errorf("forwarded %s", got)
	}
}

func TestPacketIn_SYNRoundRobin(t *testing.T) {
	_, sw := connected(t, testConfig(nil), Options{}, 1, 2, 3)
	var got []string
	for i := range 6 {
		frame := syn(t, uint16(40000+i))
		sw.packetIn(clientOF, frame)
		s := nextSetup(t, sw)
		got = append(got, memberOf(t, &s.fwd))
		if i == 0 {
			assertLines(t, flowLines(t, []ofp.FlowMod{s.fwd, s.rev}), []string{
				"cookie=0x5d10000001000001, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:01->eth_dst,set_field:10.0.0.1->ip_dst,set_field:8080->tcp_dst,output:1",
				"cookie=0x5d11000001000001, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.0.1,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,output:10",
			})
		}
		// The first packet leaves with the very rewrite of its flow.
		if po, fwd := actionsLine(s.out.Actions), ofp.FormatInstructions(s.fwd.Instructions); po != fwd {
			t.Errorf("packet-out actions %s, flow actions %s", po, fwd)
		}
		if s.out.InPort != clientOF || s.out.BufferID != ofp.NoBuffer || string(s.out.Data) != string(frame) {
			t.Errorf("packet-out in_port %d buffer %#x, data equal %v", s.out.InPort, s.out.BufferID, string(s.out.Data) == string(frame))
		}
	}
	if want := "10.0.0.1 10.0.0.2 10.0.0.3 10.0.0.1 10.0.0.2 10.0.0.3"; strings.Join(got, " ") != want {
		t.Errorf("members %v, want %s", got, want)
	}
}

func TestPacketIn_LatePacketsOfNewConnection(t *testing.T) {
	ack := tcpFrame(t, tcpSeg{srcMAC: clientMAC, dstMAC: vipMAC, src: clientIP, dst: "10.0.0.100", sport: 40000, dport: 80, ack: true, seq: 1001, ackNum: 5})
	tests := []struct {
		name    string
		before  func(h *harness)
		frame   []byte
		forward bool // else reset
	}{
		{"RetransmittedSYN", nil, syn(t, 40000), true},
		// The ACK overtook the switch's cache revalidation and was punted.
		{"ACKRightAfterSetup", nil, ack, true},
		{"ACKLongAfter", func(h *harness) { h.clock.advance(time.Duration(recentWindow) + time.Second) }, ack, false},
		{"ACKAfterMemberDown", func(h *harness) {
			h.src.set(testConfig(func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }))
			waitSnapshot(t, h.c, func(s *snapshot) bool { return s.members["m1"].status == sdnlb.MemberDown })
		}, ack, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, sw := connected(t, testConfig(nil), Options{}, 1, 2, 3)
			sw.packetIn(clientOF, syn(t, 40000))
			first := nextSetup(t, sw)
			if tt.before != nil {
				tt.before(h)
			}
			sw.packetIn(clientOF, tt.frame)
			var po *ofp.PacketOut
			for po == nil {
				r := sw.next()
				switch m := r.m.(type) {
				case *ofp.FlowMod:
					if m.Command == ofp.FlowAdd {
						t.Fatalf("a late packet set up flows: %s", flowLine(t, m))
					}
				case *ofp.PacketOut:
					po = m
				}
			}
			if tt.forward {
				if got, want := actionsLine(po.Actions), ofp.FormatInstructions(first.fwd.Instructions); got != want || string(po.Data) != string(tt.frame) {
					t.Errorf("late packet went %s, first %s", got, want)
				}
			} else {
				assertRST(t, po, 40000, "RST seq=5 ack=0")
			}
		})
	}
}

// synACK is member i's answer to a client SYN from sport.
func synACK(tb testing.TB, i int, sport uint16) []byte {
	tb.Helper()
	return tcpFrame(tb, tcpSeg{srcMAC: memberMAC(i), dstMAC: clientMAC, src: fmt.Sprintf("10.0.0.%d", i), dst: clientIP,
		sport: 8080, dport: sport, syn: true, ack: true, seq: 5000, ackNum: 1001})
}

// A member's reply that reaches the controller (through its reply punt,
// or a datapath cache entry of an older flow) gets the reverse NAT when
// its connection was just set up, and is switched by MAC otherwise.
func TestPacketIn_MemberReply(t *testing.T) {
	tests := []struct {
		name   string
		before func(h *harness)
		frame  func(tb testing.TB) []byte
		nat    bool // else forwarded by L2, unchanged
	}{
		{"RightAfterSetup", nil, func(tb testing.TB) []byte { return synACK(tb, 1, 40000) }, true},
		// Also: the punt takes replies whether or not the client's L2 flow
		// lives, so, unlike a table miss, it does not reinstall that flow.
		{"LongAfterSetup", func(h *harness) { h.clock.advance(time.Duration(recentWindow) + time.Second) },
			func(tb testing.TB) []byte { return synACK(tb, 1, 40000) }, false},
		// A retransmit of a connection purged at DOWN.
		{"MemberDown", func(h *harness) {
			h.src.set(testConfig(func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }))
			waitSnapshot(t, h.c, func(s *snapshot) bool { return s.members["m1"].status == sdnlb.MemberDown })
		}, func(tb testing.TB) []byte { return synACK(tb, 1, 40000) }, false},
		{"OtherClientPort", nil, func(tb testing.TB) []byte { return synACK(tb, 1, 40001) }, false},
		{"OtherMember", nil, func(tb testing.TB) []byte { return synACK(tb, 2, 40000) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, sw := connected(t, testConfig(nil), Options{}, 1, 2, 3)
			sw.packetIn(clientOF, syn(t, 40000))
			first := nextSetup(t, sw)
			if tt.before != nil {
				tt.before(h)
			}
			frame := tt.frame(t)
			inPort := uint32(frame[11]) // member i's MAC ends in i and it sits on port i
			sw.punt(makeCookie(catMemberReply, 1, inPort), inPort, frame)
			po := nextPacketOutNoFlows(t, sw)
			want := fmt.Sprintf("in_port=%d actions=output:%d", inPort, clientOF)
			if tt.nat {
				want = fmt.Sprintf("in_port=%d actions=%s", inPort, ofp.FormatInstructions(first.rev.Instructions))
			}
			if got := packetOutLine(po); got != want || string(po.Data) != string(frame) {
				t.Errorf("reply sent %s (data equal %v), want %s", got, string(po.Data) == string(frame), want)
			}
		})
	}
	t.Run("ICMPEchoReply", func(t *testing.T) {
		_, sw := connected(t, testConfig(func(c *sdnlb.Config) {
			c.VIPs[0].Protocol, c.VIPs[0].Port, c.VIPs[0].Address = sdnlb.ProtocolICMP, 0, "10.0.0.102"
		}), Options{}, 1)
		sw.packetIn(clientOF, icmpEcho(t))
		first := nextSetup(t, sw)
		eth := &layers.Ethernet{SrcMAC: mustMAC(t, memberMAC(1)), DstMAC: mustMAC(t, clientMAC), EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP("10.0.0.1").To4(), DstIP: net.ParseIP(clientIP).To4()}
		icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoReply, 0), Id: 1, Seq: 1}
		sw.packetIn(1, serialize(t, eth, ip, icmp, gopacket.Payload("ping")))
		po := nextPacketOutNoFlows(t, sw)
		if got, want := packetOutLine(po), "in_port=1 actions="+ofp.FormatInstructions(first.rev.Instructions); got != want {
			t.Errorf("echo reply sent %s, want %s", got, want)
		}
	})
	t.Run("ClientBehindMemberPort", func(t *testing.T) {
		_, sw := connected(t, testConfig(nil), Options{}, 1, 2, 3)
		sw.packetIn(1, syn(t, 40000)) // the client moved to member 1's port
		nextSetup(t, sw)
		sw.packetIn(1, synACK(t, 1, 40000))
		po := nextPacketOutNoFlows(t, sw)
		if got, want := packetOutLine(po), "in_port=1 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,IN_PORT"; got != want {
			t.Errorf("reply sent %s, want %s", got, want)
		}
	})
}

// nextPacketOutNoFlows returns the next packet-out and fails on any flow
// added before it: a packet the controller forwards must leave nothing in
// the switch that could shadow a later connection's flows.
func nextPacketOutNoFlows(tb testing.TB, sw *fakeSwitch) *ofp.PacketOut {
	tb.Helper()
	for {
		switch m := sw.next().m.(type) {
		case *ofp.FlowMod:
			if m.Command == ofp.FlowAdd {
				tb.Fatalf("flow added before the packet-out: %s", flowLine(tb, m))
			}
		case *ofp.PacketOut:
			return m
		}
	}
}

func TestPacketIn_NonSYNWithoutFlowGetsRST(t *testing.T) {
	tests := []struct {
		name    string
		seg     tcpSeg
		wantRST string // flags seq ack
	}{
		{"ACK", tcpSeg{ack: true, seq: 5, ackNum: 7777}, "RST seq=7777 ack=0"},
		{"FINWithoutACK", tcpSeg{seq: 5}, "RST+ACK seq=0 ack=5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, sw := connected(t, testConfig(nil), Options{}, 1)
			seg := tt.seg
			seg.srcMAC, seg.dstMAC, seg.src, seg.dst, seg.sport, seg.dport = clientMAC, vipMAC, clientIP, "10.0.0.100", 40000, 80
			sw.packetIn(clientOF, tcpFrame(t, seg))
			po := sw.nextOf(ofp.TypePacketOut).m.(*ofp.PacketOut)
			assertRST(t, po, 40000, tt.wantRST)
		})
	}
	t.Run("RSTIsNotAnswered", func(t *testing.T) {
		_, sw := connected(t, testConfig(nil), Options{}, 1)
		sw.packetIn(clientOF, tcpFrame(t, tcpSeg{srcMAC: clientMAC, dstMAC: vipMAC, src: clientIP, dst: "10.0.0.100", sport: 1, dport: 80, rst: true}))
		sw.nextOf(ofp.TypeFlowMod) // learning the client
		if r, quiet := sw.quiet(50 * time.Millisecond); !quiet {
			t.Errorf("answered a RST with %s", r.h.Type)
		}
	})
}

// assertRST checks a packet-out is a reset from the VIP to the client's
// port, described by want as "FLAGS seq=N ack=N".
func assertRST(tb testing.TB, po *ofp.PacketOut, clientPort uint16, want string) {
	tb.Helper()
	if got := packetOutLine(po); got != "in_port=10 actions=IN_PORT" {
		tb.Errorf("RST sent %s", got)
	}
	p := parseFrame(tb, po.Data)
	ip := layerOf[*layers.IPv4](tb, p)
	tcp := layerOf[*layers.TCP](tb, p)
	flags := "RST"
	if tcp.ACK {
		flags += "+ACK"
	}
	got := fmt.Sprintf("%s:%d>%s:%d %s seq=%d ack=%d", ip.SrcIP, uint16(tcp.SrcPort), ip.DstIP, uint16(tcp.DstPort), flags, tcp.Seq, tcp.Ack)
	if want = fmt.Sprintf("10.0.0.100:80>10.0.1.5:%d %s", clientPort, want); !tcp.RST || got != want {
		tb.Errorf("reset\n got %s\nwant %s", got, want)
	}
}

func TestPacketIn_UnknownMemberMACIsARPedFor(t *testing.T) {
	_, sw := connected(t, testConfig(nil), Options{})
	frame := syn(t, 40000)
	sw.packetIn(clientOF, frame)
	r := sw.next()
	for r.h.Type == ofp.TypeFlowMod { // client learning
		r = sw.next()
	}
	po, ok := r.m.(*ofp.PacketOut)
	if !ok {
		t.Fatalf("got %s, want the ARP request packet-out", r.h.Type)
	}
	if got := packetOutLine(po); got != "in_port=CONTROLLER actions=FLOOD" {
		t.Errorf("ARP request sent %s", got)
	}
	arp := layerOf[*layers.ARP](t, parseFrame(t, po.Data))
	if got := fmt.Sprintf("op=%d sha=%s spa=%s tpa=%s", arp.Operation, net.HardwareAddr(arp.SourceHwAddress), net.IP(arp.SourceProtAddress), net.IP(arp.DstProtAddress)); got != "op=1 sha=02:00:00:00:01:00 spa=10.0.0.100 tpa=10.0.0.1" {
		t.Errorf("ARP request %s", got)
	}
	if r, quiet := sw.quiet(50 * time.Millisecond); !quiet {
		t.Fatalf("sent %s before the member answered", r.h.Type)
	}
	sw.packetIn(1, arpFrame(t, 2, memberMAC(1), vipMAC, "10.0.0.1", "10.0.0.100", vipMAC))
	s := nextSetup(t, sw)
	if line := flowLine(t, &s.fwd); !strings.Contains(line, "set_field:aa:00:00:00:00:01->eth_dst") || !strings.HasSuffix(line, "output:1") {
		t.Errorf("held setup installed %s", line)
	}
	if string(s.out.Data) != string(frame) {
		t.Errorf("held packet was not released")
	}
}

func TestPacketIn_HeldSetupExpires(t *testing.T) {
	h, sw := connected(t, testConfig(func(c *sdnlb.Config) {
		c.VIPs[0].ConnectionLimit = 1
		c.Members = c.Members[:1]
	}), Options{})
	sw.packetIn(clientOF, syn(t, 40000))
	sw.nextOf(ofp.TypePacketOut) // the ARP request for the member
	if st, _ := h.c.PoolStats(context.Background(), "p1"); st.Members[0].ActiveConnections != 0 {
		t.Errorf("a held setup counts as active on its member")
	}
	h.clock.advance(heldTimeout + time.Second)
	sw.packetIn(1, arpFrame(t, 2, memberMAC(1), vipMAC, "10.0.0.1", "10.0.0.100", vipMAC))
	sw.nextOf(ofp.TypeFlowMod) // learning the member's MAC
	if r, quiet := sw.quiet(50 * time.Millisecond); !quiet {
		t.Fatalf("an expired setup was installed: %s", r.h.Type)
	}
	// Its slot under the connection limit is free again.
	sw.packetIn(clientOF, syn(t, 40001))
	nextSetup(t, sw)
}

func TestPacketIn_Refusals(t *testing.T) {
	allDown := func(c *sdnlb.Config) {
		for _, m := range c.Members {
			m.Health.Status = sdnlb.MemberDown
		}
	}
	tests := []struct {
		name string
		edit func(*sdnlb.Config)
		// setups before the refusal
		before int
	}{
		{"ConnectionLimit", func(c *sdnlb.Config) { c.VIPs[0].ConnectionLimit = 2 }, 2},
		{"NoMemberInRotation", allDown, 0},
		{"AllDraining", func(c *sdnlb.Config) {
			for _, m := range c.Members {
				m.Weight = 0
			}
		}, 0},
		{"PoolAdminDown", func(c *sdnlb.Config) { c.Pools[0].AdminStateUp = false }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, sw := connected(t, testConfig(tt.edit), Options{}, 1, 2, 3)
			for i := range tt.before {
				sw.packetIn(clientOF, syn(t, uint16(40000+i)))
				nextSetup(t, sw)
			}
			sw.packetIn(clientOF, syn(t, 41000))
			po := sw.nextOf(ofp.TypePacketOut).m.(*ofp.PacketOut)
			assertRST(t, po, 41000, "RST+ACK seq=0 ack=1001")
			st, err := h.c.PoolStats(context.Background(), "p1")
			if err != nil {
				t.Fatal(err)
			}
			if st.RefusedConnections != 1 || st.ActiveConnections != uint64(tt.before) {
				t.Errorf("refused %d active %d, want 1 and %d", st.RefusedConnections, st.ActiveConnections, tt.before)
			}
		})
	}
	t.Run("LimitFreedByFlowRemoved", func(t *testing.T) {
		h, sw := connected(t, testConfig(func(c *sdnlb.Config) { c.VIPs[0].ConnectionLimit = 1 }), Options{}, 1, 2, 3)
		sw.packetIn(clientOF, syn(t, 40000))
		s := nextSetup(t, sw)
		sw.send(0, ofp.FlowRemoved{Cookie: s.fwd.Cookie, Priority: s.fwd.Priority, Reason: ofp.RemovedIdleTimeout, Match: s.fwd.Match})
		waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.ActiveConnections == 0 })
		sw.packetIn(clientOF, syn(t, 40001))
		nextSetup(t, sw)
	})
	t.Run("LimitFreedWhenMemberDeleted", func(t *testing.T) {
		limit1 := func(c *sdnlb.Config) { c.VIPs[0].ConnectionLimit = 1 }
		h, sw := connected(t, testConfig(limit1), Options{}, 1, 2, 3)
		sw.packetIn(clientOF, syn(t, 40000))
		s := nextSetup(t, sw)
		h.src.set(testConfig(func(c *sdnlb.Config) {
			limit1(c)
			c.Members = c.Members[1:]
		}))
		sw.nextOf(ofp.TypeFlowMod) // the purge of m1's connections
		sw.nextOf(ofp.TypeFlowMod) // and of its reply punt
		sw.send(0, ofp.FlowRemoved{Cookie: s.fwd.Cookie, Reason: ofp.RemovedDelete, Match: s.fwd.Match})
		sw.packetIn(clientOF, syn(t, 40001))
		next := nextSetup(t, sw)
		if got := memberOf(t, &next.fwd); got == "10.0.0.1" {
			t.Errorf("new connection went to the deleted member")
		}
	})
	t.Run("UDPDroppedSilently", func(t *testing.T) {
		cfg := testConfig(func(c *sdnlb.Config) {
			c.VIPs[0].Protocol, c.VIPs[0].Port = sdnlb.ProtocolUDP, 53
			allDown(c)
		})
		h, sw := connected(t, cfg, Options{}, 1)
		sw.packetIn(clientOF, udpFrame(t, clientMAC, vipMAC, clientIP, "10.0.0.100", 5000, 53))
		sw.nextOf(ofp.TypeFlowMod) // learning the client
		if r, quiet := sw.quiet(50 * time.Millisecond); !quiet {
			t.Errorf("refused UDP got %s, want nothing", r.h.Type)
		}
		if st, _ := h.c.PoolStats(context.Background(), "p1"); st.RefusedConnections != 1 {
			t.Errorf("refused %d, want 1", st.RefusedConnections)
		}
	})
}

func waitStats(tb testing.TB, c *Controller, pool string, ok func(*sdnlb.PoolStats) bool) *sdnlb.PoolStats {
	tb.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		st, err := c.PoolStats(context.Background(), pool)
		if err != nil {
			tb.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pool stats never became as expected: %+v", st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestPacketIn_SourceIPPersistence(t *testing.T) {
	cfg := testConfig(func(c *sdnlb.Config) {
		c.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
	})
	_, sw := connected(t, cfg, Options{}, 1, 2, 3)
	var got []string
	for i := range 4 {
		sw.packetIn(clientOF, syn(t, uint16(40000+i)))
		s := nextSetup(t, sw)
		got = append(got, memberOf(t, &s.fwd))
	}
	if want := "10.0.0.1 10.0.0.1 10.0.0.1 10.0.0.1"; strings.Join(got, " ") != want {
		t.Errorf("one client went to %v, want one member", got)
	}
}

func TestPacketIn_SourceIPPersistenceEnds(t *testing.T) {
	persistent := func(c *sdnlb.Config) {
		c.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
	}
	tests := []struct {
		name  string
		after func(h *harness, sw *fakeSwitch)
	}{
		{"TimedOut", func(h *harness, sw *fakeSwitch) { h.clock.advance(61 * time.Second) }},
		{"MemberDown", func(h *harness, sw *fakeSwitch) {
			h.src.set(testConfig(func(c *sdnlb.Config) {
				persistent(c)
				c.Members[0].Health.Status = sdnlb.MemberDown
			}))
			sw.nextOf(ofp.TypeFlowMod) // the purge of m1's connections
			sw.nextOf(ofp.TypeFlowMod) // and of its reply punt
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, sw := connected(t, testConfig(persistent), Options{}, 1, 2, 3)
			sw.packetIn(clientOF, syn(t, 40000))
			nextSetup(t, sw)
			tt.after(h, sw)
			sw.packetIn(clientOF, syn(t, 40001))
			s := nextSetup(t, sw)
			if got := memberOf(t, &s.fwd); got != "10.0.0.2" {
				t.Errorf("after the binding ended the client went to %s, want the scheduler's next, 10.0.0.2", got)
			}
		})
	}
}

func TestPacketIn_OtherTrafficToVIPAddressDropped(t *testing.T) {
	_, sw := connected(t, testConfig(nil), Options{}, 1)
	sw.packetIn(clientOF, tcpFrame(t, tcpSeg{srcMAC: clientMAC, dstMAC: vipMAC, src: clientIP, dst: "10.0.0.100", sport: 1, dport: 22, syn: true}))
	sw.nextOf(ofp.TypeFlowMod) // learning the client
	if r, quiet := sw.quiet(50 * time.Millisecond); !quiet {
		t.Errorf("SYN to an unserved port got %s, want nothing", r.h.Type)
	}
}

func TestReconcile_LiveConfiguration(t *testing.T) {
	tests := []struct {
		name string
		edit func(*sdnlb.Config)
		want []string
	}{
		{"MemberDown", func(c *sdnlb.Config) { c.Members[1].Health.Status = sdnlb.MemberDown }, []string{
			"delete cookie=0x5d10000000000002/0xfffe000000ffffff",
			"delete cookie=0x5d04000000000002/0xffff000000ffffff",
		}},
		{"MemberDeleted", func(c *sdnlb.Config) { c.Members = c.Members[:2] }, []string{
			"delete cookie=0x5d10000000000003/0xfffe000000ffffff",
			"delete cookie=0x5d04000000000003/0xffff000000ffffff",
		}},
		{"MemberMoved", func(c *sdnlb.Config) { c.Members[2].Address, c.Members[2].Port = "10.0.0.33", 0 }, []string{
			"delete cookie=0x5d10000000000003/0xfffe000000ffffff",
			"delete cookie=0x5d04000000000003/0xffff000000ffffff",
			"cookie=0x5d04000001000003, priority=900, tcp,nw_src=10.0.0.33,tp_src=80 actions=CONTROLLER:65535",
		}},
		{"MemberAdded", func(c *sdnlb.Config) {
			c.Members = append(c.Members, &sdnlb.Member{ID: "m4", PoolID: "p1", Address: "10.0.0.4", Port: 8080, Weight: 1, AdminStateUp: true})
		}, []string{
			"cookie=0x5d04000001000004, priority=900, tcp,nw_src=10.0.0.4,tp_src=8080 actions=CONTROLLER:65535",
		}},
		{"MemberDrainingKeepsFlows", func(c *sdnlb.Config) { c.Members[0].AdminStateUp = false }, nil},
		{"VIPDisabled", func(c *sdnlb.Config) { c.VIPs[0].AdminStateUp = false }, []string{
			"delete cookie=0x5d02000001000000/0xffffffffff000000",
			"delete cookie=0x5d10000001000000/0xfffeffffff000000",
			"delete cookie=0x5d04000000000001/0xffff000000ffffff",
			"delete cookie=0x5d04000000000002/0xffff000000ffffff",
			"delete cookie=0x5d04000000000003/0xffff000000ffffff",
		}},
		{"VIPAdded", func(c *sdnlb.Config) {
			c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.101", Protocol: sdnlb.ProtocolUDP, Port: 53, AdminStateUp: true, MAC: "02:00:00:00:02:00"})
		}, []string{
			"cookie=0x5d02000002000000, priority=500, arp,arp_tpa=10.0.0.101,arp_op=1 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=500, udp,nw_dst=10.0.0.101,tp_dst=53 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=499, ip,nw_dst=10.0.0.101 actions=drop",
		}},
		{"VIPPortChanged", func(c *sdnlb.Config) { c.VIPs[0].Port = 8000 }, []string{
			"delete cookie=0x5d02000001000000/0xffffffffff000000",
			"delete cookie=0x5d10000001000000/0xfffeffffff000000",
			"cookie=0x5d02000001000000, priority=500, arp,arp_tpa=10.0.0.100,arp_op=1 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=500, tcp,nw_dst=10.0.0.100,tp_dst=8000 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, sw := connected(t, testConfig(nil), Options{})
			h.src.set(testConfig(tt.edit))
			var mods []ofp.FlowMod
			for {
				r, quiet := sw.quiet(100 * time.Millisecond)
				if quiet {
					break
				}
				if fm, ok := r.m.(*ofp.FlowMod); ok {
					mods = append(mods, *fm)
				}
			}
			assertLines(t, flowLines(t, mods), tt.want)
		})
	}
	t.Run("DownMemberLeavesRotation", func(t *testing.T) {
		h, sw := connected(t, testConfig(nil), Options{}, 1, 2, 3)
		h.src.set(testConfig(func(c *sdnlb.Config) { c.Members[1].Health.Status = sdnlb.MemberDown }))
		sw.nextOf(ofp.TypeFlowMod) // the purge of m2's connections
		sw.nextOf(ofp.TypeFlowMod) // and of its reply punt
		var got []string
		for i := range 4 {
			sw.packetIn(clientOF, syn(t, uint16(40000+i)))
			s := nextSetup(t, sw)
			got = append(got, memberOf(t, &s.fwd))
		}
		if want := "10.0.0.1 10.0.0.3 10.0.0.1 10.0.0.3"; strings.Join(got, " ") != want {
			t.Errorf("members %v, want %s", got, want)
		}
	})
}

func TestAccounting_FlowRemovedAndPolls(t *testing.T) {
	h, sw := connected(t, testConfig(nil), Options{}, 1, 2, 3)
	sw.packetIn(clientOF, syn(t, 40000))
	s := nextSetup(t, sw)
	st := waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.TotalConnections == 1 })
	if st.ActiveConnections != 1 || st.Members[0].ActiveConnections != 1 || st.Members[0].Status != sdnlb.MemberNoMonitor {
		t.Errorf("after a setup: %+v", st)
	}

	// A poll in two parts reports the live flows.
	h.c.sessionList()[0].pollStats()
	req := sw.nextOf(ofp.TypeMultipartRequest)
	fsr := req.m.(*ofp.MultipartRequest).Body.(ofp.FlowStatsRequest)
	if fsr.Cookie != makeCookie(catConn, 0, 0) || fsr.CookieMask != maskApp|maskConnCats {
		t.Errorf("poll asks for cookie %#x/%#x, want the connection flows", fsr.Cookie, fsr.CookieMask)
	}
	sw.send(req.h.XID, ofp.MultipartReply{Flags: ofp.MultipartReplyMore, Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
		{Cookie: s.fwd.Cookie, PacketCount: 3, ByteCount: 300, Match: s.fwd.Match},
	}}})
	sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
		{Cookie: s.rev.Cookie, PacketCount: 2, ByteCount: 200, Match: s.rev.Match},
	}}})
	st = waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.BytesOut == 200 })
	if st.BytesIn != 300 || st.PacketsIn != 3 || st.PacketsOut != 2 {
		t.Errorf("after the poll: %+v", st)
	}

	// The flows end: their final counters replace the live ones at the next poll.
	sw.send(0, ofp.FlowRemoved{Cookie: s.fwd.Cookie, Reason: ofp.RemovedIdleTimeout, PacketCount: 4, ByteCount: 400, Match: s.fwd.Match})
	sw.send(0, ofp.FlowRemoved{Cookie: s.rev.Cookie, Reason: ofp.RemovedIdleTimeout, PacketCount: 3, ByteCount: 330, Match: s.rev.Match})
	h.c.sessionList()[0].pollStats()
	req = sw.nextOf(ofp.TypeMultipartRequest)
	sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{}})
	st = waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.BytesIn == 400 && st.BytesOut == 330 })
	want := sdnlb.MemberStats{MemberID: "m1", Address: "10.0.0.1", Port: 8080, Status: sdnlb.MemberNoMonitor,
		TotalConnections: 1, PacketsIn: 4, PacketsOut: 3, BytesIn: 400, BytesOut: 330}
	if st.ActiveConnections != 0 || st.Members[0] != want {
		t.Errorf("after flow-removed:\n got %+v\nwant %+v", st.Members[0], want)
	}

	t.Run("UnknownPool", func(t *testing.T) {
		if _, err := h.c.PoolStats(context.Background(), "nope"); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
			t.Errorf("err %v, want not_found", err)
		}
	})
}

func TestSwitchFlows(t *testing.T) {
	h, sw := connected(t, testConfig(nil), Options{})
	t.Run("OK", func(t *testing.T) {
		type result struct {
			flows []*sdnlb.Flow
			err   error
		}
		done := make(chan result, 1)
		go func() {
			f, err := h.c.SwitchFlows(context.Background(), "00:00:00:00:00:00:00:01")
			done <- result{f, err}
		}()
		req := sw.nextOf(ofp.TypeMultipartRequest)
		fsr := req.m.(*ofp.MultipartRequest).Body.(ofp.FlowStatsRequest)
		if fsr.Cookie != appID<<cookieAppShift || fsr.CookieMask != maskApp {
			t.Errorf("flows request for cookie %#x/%#x, want every sdnlb flow", fsr.Cookie, fsr.CookieMask)
		}
		vf := vipFlows(&vipState{num: 1, ip: [4]byte{10, 0, 0, 100}, proto: protoTCP, port: 80})
		sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
			{Cookie: vf[2].Cookie, Priority: vf[2].Priority, Match: vf[2].Match, Instructions: vf[2].Instructions, DurationSec: 3, DurationNsec: 5e8},
			{Cookie: vf[1].Cookie, Priority: vf[1].Priority, Match: vf[1].Match, Instructions: vf[1].Instructions, PacketCount: 7, ByteCount: 420},
		}}})
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		var lines []string
		for _, f := range r.flows {
			lines = append(lines, fmt.Sprintf("%s %d %s %s %d %d %.1f", f.Cookie, f.Priority, f.Match, f.Actions, f.Packets, f.Bytes, f.DurationSeconds))
		}
		want := []string{
			"0x5d02000001000000 500 tcp,nw_dst=10.0.0.100,tp_dst=80 CONTROLLER:65535 7 420 0.0",
			"0x5d02000001000000 499 ip,nw_dst=10.0.0.100 drop 0 0 3.5",
		}
		if strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("flows\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, dpid := range []string{"00:00:00:00:00:00:00:02", "zz"} {
			if _, err := h.c.SwitchFlows(context.Background(), dpid); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
				t.Errorf("%s: err %v, want not_found", dpid, err)
			}
		}
	})
	t.Run("ErrUnavailableOnTimeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if _, err := h.c.SwitchFlows(ctx, "1"); sdnlb.ErrorCode(err) != sdnlb.EUNAVAILABLE {
			t.Errorf("err %v, want unavailable", err)
		}
	})
}

func TestTCPRST_Checksums(t *testing.T) {
	tests := []struct {
		name string
		r    tcpRST
	}{
		{"RSTACK", tcpRST{src: [4]byte{10, 0, 0, 100}, dst: [4]byte{10, 0, 1, 5}, sport: 80, dport: 40000, ack: 1001, withACK: true}},
		{"RST", tcpRST{src: [4]byte{192, 168, 255, 1}, dst: [4]byte{172, 16, 0, 9}, sport: 443, dport: 65535, seq: 0xfffffff0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.r.ethSrc, tt.r.ethDst = [6]byte{2, 0, 0, 0, 1, 0}, [6]byte{0xcc, 0, 0, 0, 0, 1}
			got := appendTCPRST(nil, tt.r)
			eth := &layers.Ethernet{SrcMAC: tt.r.ethSrc[:], DstMAC: tt.r.ethDst[:], EthernetType: layers.EthernetTypeIPv4}
			ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolTCP, SrcIP: tt.r.src[:], DstIP: tt.r.dst[:]}
			tcp := &layers.TCP{SrcPort: layers.TCPPort(tt.r.sport), DstPort: layers.TCPPort(tt.r.dport), Seq: tt.r.seq, Ack: tt.r.ack, RST: true, ACK: tt.r.withACK, DataOffset: 5}
			tcp.SetNetworkLayerForChecksum(ip)
			buf := gopacket.NewSerializeBuffer()
			if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, eth, ip, tcp); err != nil {
				t.Fatal(err)
			}
			if want := buf.Bytes(); string(got) != string(want) {
				t.Errorf("reset\n got % x\nwant % x", got, want)
			}
		})
	}
}

// waitSnapshot waits until the controller's snapshot satisfies ok.
func waitSnapshot(tb testing.TB, c *Controller, ok func(*snapshot) bool) {
	tb.Helper()
	deadline := time.Now().Add(waitFor)
	for !ok(c.snap.Load()) {
		if time.Now().After(deadline) {
			tb.Fatal("the snapshot never became as expected")
		}
		time.Sleep(time.Millisecond)
	}
}
