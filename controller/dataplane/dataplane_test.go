package dataplane

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// decision drives one switch's dataplane directly, as faucet tests its
// valve: a configuration and packets in, the messages the switch would be
// sent out, rendered as lines. No socket, no goroutine.
type decision struct {
	tb       testing.TB
	builder  *model.Builder
	snap     *model.Snapshot
	affinity *AffinityTable
	dp       *Switch
	xids     atomic.Uint32
	out      *Outbox
	now      time.Time
	log      *testnet.SyncBuffer // what the dataplane logged
	// sw is the switch: every flow-mod and group-mod the dataplane sends,
	// and the base flows, are applied to its tables, groups and connection
	// tracker, so a test asks it where a packet goes.
	sw *oftable.Table
	// hosts are where the test network's hosts sit, by MAC, for the
	// outputs to NORMAL (see process).
	hosts map[[6]byte]uint32
	// released is where the last packet-out that committed a connection in
	// the switch's tracker sent its packet.
	released oftable.Result
	// step, when set, is called after each message sent is applied to
	// the switch, with the message's line, so a test can ask the switch
	// between two messages.
	step func(line string)
}

func newDecision(tb testing.TB, cfg *sdnlb.Config) *decision {
	tb.Helper()
	return newDecisionL2(tb, cfg, model.L2Learn)
}

func newDecisionL2(tb testing.TB, cfg *sdnlb.Config, l2 model.L2Mode) *decision {
	tb.Helper()
	return newDecisionWith(tb, cfg, Config{L2: l2})
}

// newSwitchDecision is a switch with select groups and its own L2
// switching, as the in-switch dispatch has it.
func newSwitchDecision(tb testing.TB, cfg *sdnlb.Config) *decision {
	tb.Helper()
	return newDecisionWith(tb, cfg, Config{L2: model.L2Normal, Groups: true, Nicira: true})
}

func newDecisionWith(tb testing.TB, cfg *sdnlb.Config, dc Config) *decision {
	tb.Helper()
	d := &decision{tb: tb, affinity: NewAffinityTable(), now: time.Unix(1_700_000_000, 0), sw: oftable.New(),
		hosts: testHosts(tb), snap: model.EmptySnapshot}
	d.builder = model.NewBuilder(func() time.Time { return d.now })
	d.applyAll(model.BaseFlows(dc.L2, dc.OneTable))
	d.out = NewOutbox(&d.xids, nil)
	dc.IdleTimeout, dc.Affinity, dc.Ledger = model.FlowSeconds(30*time.Second), d.affinity, NewFlowLedger(false)
	d.log = &testnet.SyncBuffer{}
	dc.Metrics, dc.Log = NewMetrics(nil, nil), testnet.NewTestLogger(d.log)
	d.dp = New(dc)
	d.configure(cfg)
	return d
}

// configure makes cfg the configuration the switch has and the next
// packets are decided on, and returns what the switch is sent for it.
func (d *decision) configure(cfg *sdnlb.Config) []string {
	d.tb.Helper()
	snap, skipped := d.builder.Build(cfg)
	if len(skipped) > 0 {
		d.tb.Fatalf("configuration objects skipped: %v", skipped)
	}
	d.snap = snap
	d.dp.Configure(d.now, snap, d.out)
	return d.sent(nil)
}

func (d *decision) applyAll(mods []ofp.FlowMod) {
	d.tb.Helper()
	for i := range mods {
		d.apply(&mods[i])
	}
}

// apply has the switch's table take a flow-mod; flows it removes account
// as a switch would report them.
func (d *decision) apply(fm *ofp.FlowMod) {
	d.tb.Helper()
	if err := model.CheckFlow(fm); err != nil {
		d.tb.Fatalf("%s: %v", testnet.FlowLine(d.tb, fm), err)
	}
	removed, err := d.sw.Apply(fm)
	if err != nil {
		d.tb.Fatalf("the switch rejects %s: %v", testnet.FlowLine(d.tb, fm), err)
	}
	d.removed(removed)
}

// removed reports the flows a flow-mod or group-mod removed as a switch
// reports them: those with send_flow_rem.
func (d *decision) removed(flows []oftable.Flow) {
	for _, f := range flows {
		if f.Flags&ofp.FlagSendFlowRem != 0 {
			d.dp.FlowRemoved(d.now, d.snap, &ofp.FlowRemoved{Cookie: f.Cookie, Priority: f.Priority, Reason: ofp.RemovedDelete, Match: f.Match})
		}
	}
}

// holding is what the switch holds, as it would answer the requests of a
// connecting controller.
func (d *decision) holding() SwitchState {
	have := SwitchState{Groups: d.sw.Groups()}
	for _, f := range d.sw.Flows() {
		have.Flows = append(have.Flows, ofp.FlowStats{TableID: f.TableID, Priority: f.Priority, IdleTimeout: f.IdleTimeout,
			HardTimeout: f.HardTimeout, Flags: f.Flags, Cookie: f.Cookie, Match: f.Match, Instructions: f.Instructions})
	}
	return have
}

// forward is where the switch's table sends a frame arriving on inPort,
// as "output:PORTS PACKET" with the packet after the flow's rewrites, or
// "CONTROLLER" when the table only punts it.
func (d *decision) forward(inPort uint32, frame []byte) string {
	d.tb.Helper()
	p, err := oftable.ParseFrame(inPort, frame)
	if err != nil {
		d.tb.Fatal(err)
	}
	r := d.sw.Process(p)
	if slices.Equal(r.Ports, []uint32{ofp.PortController}) {
		return "CONTROLLER"
	}
	if len(r.Ports) == 0 {
		return "drop"
	}
	ports := make([]string, len(r.Ports))
	for i, port := range r.Ports {
		ports[i] = testnet.PortName(port)
	}
	return "output:" + strings.Join(ports, ",") + " " + r.Out.String()
}

// applyGroup has the switch's group table take a group-mod, refusing
// what Open vSwitch refuses (a group added twice, one modified before it
// is added); flows that a deleted group takes along account as removed.
func (d *decision) applyGroup(gm *ofp.GroupMod) {
	d.tb.Helper()
	if err := model.CheckGroup(gm); err != nil {
		d.tb.Fatal(err)
	}
	removed, err := d.sw.ApplyGroup(gm)
	if err != nil {
		d.tb.Fatalf("the switch rejects %s: %v", gm, err)
	}
	d.removed(removed)
}

func (d *decision) advance(dur time.Duration) { d.now = d.now.Add(dur) }

// answers returns the packet the switch's table makes of a request from
// inPort, and the one the controller answers it with when it reaches it.
func (d *decision) answers(inPort uint32, request []byte) (fromSwitch, fromController oftable.Packet) {
	d.tb.Helper()
	p, err := oftable.ParseFrame(inPort, request)
	if err != nil {
		d.tb.Fatal(err)
	}
	fromSwitch = d.sw.Process(p).Out
	d.dp.PacketIn(d.now, d.snap, &ofp.PacketIn{BufferID: ofp.NoBuffer, TotalLen: uint16(len(request)), Reason: ofp.ReasonNoMatch,
		Cookie: model.MakeCookie(model.CatBase, 0, 0), Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(inPort)}}, Data: request}, d.out)
	_, m, err := ofp.Decode(d.out.Buf)
	d.out.Reset()
	po, ok := m.(*ofp.PacketOut)
	if err != nil || !ok {
		d.tb.Fatalf("the controller sent %T, %v; want its answer", m, err)
	}
	if fromController, err = oftable.ParseFrame(inPort, po.Data); err != nil {
		d.tb.Fatal(err)
	}
	return fromSwitch, fromController
}

// packetIn hands the dataplane a table-miss packet-in from inPort and
// returns what it sends.
func (d *decision) packetIn(inPort uint32, frame []byte) []string {
	d.tb.Helper()
	return d.punt(model.MakeCookie(model.CatBase, 0, 0), inPort, frame)
}

// punt hands the dataplane a packet-in of the flow with cookie.
func (d *decision) punt(cookie uint64, inPort uint32, frame []byte) []string {
	d.tb.Helper()
	d.dp.ExpireHeld(d.now)
	d.dp.PacketIn(d.now, d.snap, &ofp.PacketIn{
		BufferID: ofp.NoBuffer, TotalLen: uint16(len(frame)), Reason: ofp.ReasonAction, Cookie: cookie,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(inPort)}}, Data: frame,
	}, d.out)
	return d.sent(frame)
}

// sent renders and empties the outbox: a flow-mod as ovs-ofctl prints a
// flow, a packet-out as its ports and actions and the frame it carries
// ("<in>" for the packet-in's own frame).
func (d *decision) sent(in []byte) []string {
	d.tb.Helper()
	if d.out.Unsent != nil {
		d.tb.Fatalf("the decision built a message it could not send: %v", d.out.Unsent)
	}
	var lines []string
	for b := d.out.Buf; len(b) > 0; {
		h, err := ofp.ParseHeader(b)
		if err != nil || int(h.Length) > len(b) {
			d.tb.Fatalf("outbox holds a broken message: %v", err)
		}
		_, m, err := ofp.Decode(b[:h.Length])
		if err != nil {
			d.tb.Fatalf("outbox holds an undecodable %s: %v", h.Type, err)
		}
		b = b[h.Length:]
		switch m := m.(type) {
		case *ofp.FlowMod:
			d.apply(m)
			lines = append(lines, "flow_mod "+testnet.FlowLine(d.tb, m))
		case *ofp.GroupMod:
			d.applyGroup(m)
			lines = append(lines, "group_mod "+m.String())
		case *ofp.PacketOut:
			data := "<in>"
			if string(m.Data) != string(in) {
				data = describeFrame(d.tb, m.Data)
			}
			if commits(m.Actions) {
				d.released = d.bridge(d.sw.PacketOut(packet(d.tb, m.InPort, m.Data), m.Actions))
			}
			lines = append(lines, "packet_out "+testnet.PacketOutLine(m)+" data="+data)
		default:
			lines = append(lines, h.Type.String())
		}
		if d.step != nil {
			d.step(lines[len(lines)-1])
		}
	}
	d.out.Reset()
	return lines
}

// teach makes member i (10.0.0.i, MAC ending in i, on port i) known the
// way the controller learns members: its ARP reply to the VIP.
func (d *decision) teach(members ...int) {
	d.tb.Helper()
	for _, i := range members {
		got := d.packetIn(uint32(i), testnet.ARPFrame(d.tb, 2, testnet.MemberMAC(i), testnet.VIPMAC, fmt.Sprintf("10.0.0.%d", i), "10.0.0.100", testnet.VIPMAC))
		assertSent(d.tb, got, l2Line(testnet.MemberMAC(i), i))
	}
}

// describeFrame renders a frame the controller made.
func describeFrame(tb testing.TB, data []byte) string {
	tb.Helper()
	p := testnet.ParseFrame(tb, data)
	eth := testnet.LayerOf[*layers.Ethernet](tb, p)
	switch eth.EthernetType {
	case layers.EthernetTypeARP:
		a := testnet.LayerOf[*layers.ARP](tb, p)
		return fmt.Sprintf("arp %s>%s op=%d sha=%s spa=%s tha=%s tpa=%s", eth.SrcMAC, eth.DstMAC, a.Operation,
			net.HardwareAddr(a.SourceHwAddress), net.IP(a.SourceProtAddress), net.HardwareAddr(a.DstHwAddress), net.IP(a.DstProtAddress))
	case layers.EthernetTypeIPv6:
		ip := testnet.LayerOf[*layers.IPv6](tb, p)
		if ip.NextHeader == layers.IPProtocolICMPv6 {
			icmp := testnet.LayerOf[*layers.ICMPv6](tb, p)
			var target net.IP
			switch icmp.TypeCode.Type() {
			case model.NDSolicitation:
				target = testnet.LayerOf[*layers.ICMPv6NeighborSolicitation](tb, p).TargetAddress
			case model.NDAdvertisement:
				target = testnet.LayerOf[*layers.ICMPv6NeighborAdvertisement](tb, p).TargetAddress
			}
			return fmt.Sprintf("icmp6 %s>%s %s>%s type=%d target=%s", eth.SrcMAC, eth.DstMAC, ip.SrcIP, ip.DstIP, icmp.TypeCode.Type(), target)
		}
		tcp := testnet.LayerOf[*layers.TCP](tb, p)
		return fmt.Sprintf("tcp %s>%s [%s]:%d>[%s]:%d RST=%t seq=%d ack=%d", eth.SrcMAC, eth.DstMAC,
			ip.SrcIP, uint16(tcp.SrcPort), ip.DstIP, uint16(tcp.DstPort), tcp.RST, tcp.Seq, tcp.Ack)
	case layers.EthernetTypeIPv4:
		ip := testnet.LayerOf[*layers.IPv4](tb, p)
		tcp := testnet.LayerOf[*layers.TCP](tb, p)
		flags := "RST"
		if !tcp.RST {
			flags = "no-RST"
		}
		if tcp.ACK {
			flags += "+ACK"
		}
		return fmt.Sprintf("tcp %s>%s %s:%d>%s:%d %s seq=%d ack=%d", eth.SrcMAC, eth.DstMAC,
			ip.SrcIP, uint16(tcp.SrcPort), ip.DstIP, uint16(tcp.DstPort), flags, tcp.Seq, tcp.Ack)
	}
	return fmt.Sprintf("% x", data)
}

func assertSent(tb testing.TB, got []string, want ...string) {
	tb.Helper()
	if !slices.Equal(got, want) {
		tb.Errorf("sent\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Lines of what the dataplane sends.

func l2Line(mac string, port int) string {
	return fmt.Sprintf("flow_mod cookie=0x5d03000000000000, table=l2, priority=100, idle_timeout=300, dl_dst=%s actions=output:%d", mac, port)
}

// natActions are the client → member rewrite to member i on port i.
func natActions(i int) string {
	return fmt.Sprintf("set_field:%s->eth_dst,set_field:10.0.0.%d->ip_dst,set_field:8080->tcp_dst,output:%d", testnet.MemberMAC(i), i, i)
}

const reverseNAT = "set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src"

// setupLines are the flow pair and the released first packet of a
// connection from the client's sport to member i.
func setupLines(i int, sport uint16) []string {
	return []string{
		fmt.Sprintf("flow_mod cookie=%s, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=%d,tp_dst=80 actions=%s", connCookie(model.CatConn, sport, i), sport, natActions(i)),
		fmt.Sprintf("flow_mod cookie=%s, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.0.%d,nw_dst=10.0.1.5,tp_src=8080,tp_dst=%d actions=%s,output:10", connCookie(model.CatConnReply, sport, i), i, sport, reverseNAT),
		fmt.Sprintf("packet_out in_port=10 actions=%s data=<in>", natActions(i)),
	}
}

// clientFlowMatch is the match of the client → member flow of the
// client's connection from sport to the VIP, as a switch reports it.
func clientFlowMatch(sport uint16) ofp.Match {
	return ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(ofp.EthTypeIPv4), ofp.MatchIPProto(ofp.IPProtoTCP),
		ofp.MatchIPv4Src(netip.MustParseAddr(testnet.ClientIP).As4()), ofp.MatchIPv4Dst(netip.MustParseAddr("10.0.0.100").As4()),
		ofp.MatchTCPSrc(sport), ofp.MatchTCPDst(80)}}
}

// rstLine is the reset of the client's sport, flags and numbers as
// "FLAGS seq=N ack=N".
func rstLine(sport uint16, flags string) string {
	return fmt.Sprintf("packet_out in_port=10 actions=IN_PORT data=tcp 02:00:00:00:01:00>cc:00:00:00:00:01 10.0.0.100:80>10.0.1.5:%d %s", sport, flags)
}

var learnClient = l2Line(testnet.ClientMAC, testnet.ClientOF)

// The reply the switch, or the controller, gives a client's ARP request
// for the VIP.
const (
	arpReplyLine  = "packet_out in_port=10 actions=IN_PORT data=arp 02:00:00:00:01:00>cc:00:00:00:00:01 op=2 sha=02:00:00:00:01:00 spa=10.0.0.100 tha=cc:00:00:00:00:01 tpa=10.0.1.5"
	arpReplyFrame = "arp op=2 10.0.0.100 (02:00:00:00:01:00) > 10.0.1.5 (cc:00:00:00:00:01) in_port=10 dl_src=02:00:00:00:01:00 dl_dst=cc:00:00:00:00:01"
)

func TestDataplane_ARP(t *testing.T) {
	request := testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00")
	// The switch answers without the controller, broadcast requests and
	// the unicast ones a client checks a cached entry with alike.
	t.Run("ForVIPAnsweredBySwitch", func(t *testing.T) {
		d := newDecisionL2(t, testnet.Config(nil), model.L2Normal)
		unicast := testnet.ARPFrame(t, 1, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", testnet.VIPMAC)
		for _, frame := range [][]byte{request, unicast} {
			if got := d.forward(testnet.ClientOF, frame); got != "output:10 "+arpReplyFrame {
				t.Errorf("went\n  %s\nwant\n  output:10 %s", got, arpReplyFrame)
			}
		}
	})
	// Under L2Learn the switch answers too, and sends the request up for
	// the controller to learn where the client is; it does not answer again.
	t.Run("ForVIPAnsweredBySwitchAndLearnedFrom", func(t *testing.T) {
		d := newDecision(t, testnet.Config(nil))
		if got := d.forward(testnet.ClientOF, request); got != "output:CONTROLLER,10 "+arpReplyFrame {
			t.Errorf("went\n  %s\nwant\n  output:CONTROLLER,10 %s", got, arpReplyFrame)
		}
		assertSent(t, d.punt(model.MakeCookie(model.CatARPAnswer, 1, 0), testnet.ClientOF, request), learnClient)
	})
	// A request that reaches the controller (before the switch had the
	// answer, or from a switch that refused it) gets the same answer.
	t.Run("ForVIPReachingTheControllerAnswered", func(t *testing.T) {
		d := newDecision(t, testnet.Config(nil))
		assertSent(t, d.packetIn(testnet.ClientOF, request), learnClient, arpReplyLine)
	})
	// The switch's answer and the controller's are the same frame, also
	// for a request whose frame and ARP senders differ.
	t.Run("SwitchAnswersAsTheControllerDoes", func(t *testing.T) {
		d := newDecisionL2(t, testnet.Config(nil), model.L2Normal)
		proxied := testnet.Serialize(t,
			&layers.Ethernet{SrcMAC: testnet.MustMAC(t, "cc:00:00:00:00:02"), DstMAC: testnet.MustMAC(t, "ff:ff:ff:ff:ff:ff"), EthernetType: layers.EthernetTypeARP},
			&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
				Operation: model.ARPRequest, SourceHwAddress: testnet.MustMAC(t, testnet.ClientMAC), SourceProtAddress: net.ParseIP(testnet.ClientIP).To4(),
				DstHwAddress: make([]byte, 6), DstProtAddress: net.ParseIP("10.0.0.100").To4()})
		fromSwitch, fromController := d.answers(testnet.ClientOF, proxied)
		if fromSwitch != fromController {
			t.Errorf("answers differ\nswitch:     %v\ncontroller: %v", fromSwitch, fromController)
		}
	})
	t.Run("AnnouncementOfVIPAddressDropped", func(t *testing.T) {
		d := newDecisionL2(t, testnet.Config(nil), model.L2Normal)
		announce := testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", "10.0.0.100", "10.0.0.100", "00:00:00:00:00:00")
		if got := d.forward(testnet.ClientOF, announce); got != "drop" {
			t.Errorf("a host announcing the VIP's address went %s, want drop", got)
		}
	})
	// VIPs sharing an address answer with the lowest id's MAC, also once
	// that VIP is gone.
	t.Run("SharedAddressAnsweredByLowestID", func(t *testing.T) {
		withV0 := func(c *sdnlb.Config) {
			c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v0", Address: "10.0.0.100", Protocol: sdnlb.ProtocolUDP, Port: 53,
				ConnectionLimit: -1, AdminStateUp: true, MAC: "02:00:00:00:00:99"})
		}
		d := newDecisionL2(t, testnet.Config(nil), model.L2Normal)
		d.configure(testnet.Config(withV0))
		want := "output:10 " + strings.ReplaceAll(arpReplyFrame, testnet.VIPMAC, "02:00:00:00:00:99")
		if got := d.forward(testnet.ClientOF, request); got != want {
			t.Errorf("with v0 added went\n  %s\nwant\n  %s", got, want)
		}
		d.configure(testnet.Config(nil))
		if got := d.forward(testnet.ClientOF, request); got != "output:10 "+arpReplyFrame {
			t.Errorf("with v0 gone went\n  %s\nwant\n  output:10 %s", got, arpReplyFrame)
		}
	})
	t.Run("OtherLearnedAndFlooded", func(t *testing.T) {
		d := newDecision(t, testnet.Config(nil))
		request := testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.7", "00:00:00:00:00:00")
		assertSent(t, d.packetIn(testnet.ClientOF, request), learnClient, "packet_out in_port=10 actions=FLOOD data=<in>")
		// The answer goes straight to the learned port...
		reply := testnet.ARPFrame(t, 2, testnet.MemberMAC(7), testnet.ClientMAC, "10.0.0.7", testnet.ClientIP, testnet.ClientMAC)
		assertSent(t, d.packetIn(7, reply), l2Line(testnet.MemberMAC(7), 7), "packet_out in_port=7 actions=output:10 data=<in>")
		// ...and a move replaces the flow.
		assertSent(t, d.packetIn(11, request), l2Line(testnet.ClientMAC, 11), "packet_out in_port=11 actions=FLOOD data=<in>")
	})
	t.Run("ClaimingVIPAddressIgnored", func(t *testing.T) {
		d := newDecision(t, testnet.Config(nil))
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 2, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", "10.0.0.100", testnet.ClientIP, "00:00:00:00:00:00")), learnClient)
	})
	t.Run("FromVIPMACIgnored", func(t *testing.T) {
		d := newDecision(t, testnet.Config(nil))
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 1, testnet.VIPMAC, "ff:ff:ff:ff:ff:ff", "10.0.0.9", testnet.ClientIP, "00:00:00:00:00:00")))
	})
}

func TestDataplane_IdledL2FlowReinstalled(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	d.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.7", "00:00:00:00:00:00"))
	toClient := testnet.ARPFrame(t, 2, testnet.MemberMAC(7), testnet.ClientMAC, "10.0.0.7", testnet.ClientIP, testnet.ClientMAC)
	// Right after learning, a packet-in for the client is a packet that
	// overtook the flow: forwarded, no second flow-mod for the client.
	assertSent(t, d.packetIn(7, toClient), l2Line(testnet.MemberMAC(7), 7), "packet_out in_port=7 actions=output:10 data=<in>")
	// Much later the client's flow has idled out: put it back.
	d.advance(time.Duration(model.L2IdleTimeout) * time.Second)
	assertSent(t, d.packetIn(7, toClient), learnClient, "packet_out in_port=7 actions=output:10 data=<in>")
	// A member's reply punt says nothing about the client's flow.
	d.advance(time.Duration(model.L2IdleTimeout) * time.Second)
	assertSent(t, d.punt(model.MakeCookie(model.CatMemberReply, 1, 7), 7, toClient), "packet_out in_port=7 actions=output:10 data=<in>")
}

func TestDataplane_RoundRobin(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	d.teach(1, 2, 3)
	first := testnet.SYN(t, 40000)
	assertSent(t, d.packetIn(testnet.ClientOF, first), append([]string{learnClient}, setupLines(1, 40000)...)...)
	for i, member := range []int{2, 3, 1, 2} {
		sport := uint16(40001 + i)
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, sport)), setupLines(member, sport)...)
	}
	if n := testnet.MemberByID(d.snap, "m1").Cnt.Active.Load(); n != 2 {
		t.Errorf("member m1 has %d active connections, want 2", n)
	}
}

func TestDataplane_LatePacketsOfNewConnection(t *testing.T) {
	ack := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 80, ACK: true, Seq: 1001, AckNum: 5})
	forwarded := "packet_out in_port=10 actions=" + natActions(1) + " data=<in>"
	tests := []struct {
		name   string
		before func(d *decision)
		frame  []byte
		want   string
	}{
		{"RetransmittedSYN", nil, testnet.SYN(t, 40000), forwarded},
		// The ACK overtook the switch's cache revalidation and was punted.
		{"ACKRightAfterSetup", nil, ack, forwarded},
		{"ACKLongAfter", func(d *decision) { d.advance(time.Duration(model.RecentWindow) + time.Second) }, ack, rstLine(40000, "RST seq=5 ack=0")},
		{"ACKAfterMemberDown", func(d *decision) {
			d.configure(testnet.Config(func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }))
		}, ack, rstLine(40000, "RST seq=5 ack=0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := afterSetup(t, tt.before)
			assertSent(t, d.packetIn(testnet.ClientOF, tt.frame), tt.want)
		})
	}
}

// afterSetup is a dataplane that set up one connection, from the client's
// port 40000 to member 1, and then went through before (if not nil).
func afterSetup(tb testing.TB, before func(d *decision)) *decision {
	tb.Helper()
	d := newDecision(tb, testnet.Config(nil))
	d.teach(1, 2, 3)
	d.packetIn(testnet.ClientOF, testnet.SYN(tb, 40000))
	if before != nil {
		before(d)
	}
	return d
}

// A member's reply that reaches the controller (through its reply punt,
// or a datapath cache entry of an older flow) gets the reverse NAT when
// its connection was just set up, and is switched by MAC otherwise, with
// no flow that could shadow a later connection's.
func TestDataplane_MemberReply(t *testing.T) {
	tests := []struct {
		name   string
		before func(d *decision)
		member int
		sport  uint16
		nat    bool // else forwarded by L2, unchanged
	}{
		{"RightAfterSetup", nil, 1, 40000, true},
		{"LongAfterSetup", func(d *decision) { d.advance(time.Duration(model.RecentWindow) + time.Second) }, 1, 40000, false},
		// A retransmit of a connection purged at DOWN.
		{"MemberDown", func(d *decision) {
			d.configure(testnet.Config(func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }))
		}, 1, 40000, false},
		{"OtherClientPort", nil, 1, 40001, false},
		{"OtherMember", nil, 2, 40000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := afterSetup(t, tt.before)
			want := fmt.Sprintf("packet_out in_port=%d actions=output:10 data=<in>", tt.member)
			if tt.nat {
				want = fmt.Sprintf("packet_out in_port=%d actions=%s,output:10 data=<in>", tt.member, reverseNAT)
			}
			got := d.punt(model.MakeCookie(model.CatMemberReply, 1, uint32(tt.member)), uint32(tt.member), testnet.SYNACK(t, tt.member, tt.sport))
			assertSent(t, got, want)
		})
	}
	t.Run("ICMPEchoReply", func(t *testing.T) {
		d := newDecision(t, testnet.Config(func(c *sdnlb.Config) {
			c.VIPs[0].Protocol, c.VIPs[0].Port, c.VIPs[0].Address = sdnlb.ProtocolICMP, 0, "10.0.0.102"
		}))
		d.teach(1)
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.ICMPEcho(t)),
			learnClient,
			"flow_mod cookie=0x5d9e000001000001, priority=1000, idle_timeout=30, send_flow_rem, icmp,nw_src=10.0.1.5,nw_dst=10.0.0.102,icmp_type=8 actions=set_field:aa:00:00:00:00:01->eth_dst,set_field:10.0.0.1->ip_dst,output:1",
			"flow_mod cookie=0x5d9f000001000001, priority=1000, idle_timeout=30, send_flow_rem, icmp,nw_src=10.0.0.1,nw_dst=10.0.1.5,icmp_type=0 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.102->ip_src,output:10",
			"packet_out in_port=10 actions=set_field:aa:00:00:00:00:01->eth_dst,set_field:10.0.0.1->ip_dst,output:1 data=<in>")
		eth := &layers.Ethernet{SrcMAC: testnet.MustMAC(t, testnet.MemberMAC(1)), DstMAC: testnet.MustMAC(t, testnet.ClientMAC), EthernetType: layers.EthernetTypeIPv4}
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP("10.0.0.1").To4(), DstIP: net.ParseIP(testnet.ClientIP).To4()}
		icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoReply, 0), Id: 1, Seq: 1}
		assertSent(t, d.packetIn(1, testnet.Serialize(t, eth, ip, icmp, gopacket.Payload("ping"))),
			"packet_out in_port=1 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.102->ip_src,output:10 data=<in>")
	})
	t.Run("ClientBehindMemberPort", func(t *testing.T) {
		d := newDecision(t, testnet.Config(nil))
		d.teach(1, 2, 3)
		// The client moved to member 1's port: both flows match in_port
		// and send back out of it.
		assertSent(t, d.packetIn(1, testnet.SYN(t, 40000)),
			l2Line(testnet.ClientMAC, 1),
			"flow_mod cookie=0x5dee000001000001, priority=1000, idle_timeout=30, send_flow_rem, tcp,in_port=1,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions="+strings.Replace(natActions(1), "output:1", "IN_PORT", 1),
			"flow_mod cookie=0x5def000001000001, priority=1000, idle_timeout=30, send_flow_rem, tcp,in_port=1,nw_src=10.0.0.1,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions="+reverseNAT+",IN_PORT",
			"packet_out in_port=1 actions="+strings.Replace(natActions(1), "output:1", "IN_PORT", 1)+" data=<in>")
		assertSent(t, d.packetIn(1, testnet.SYNACK(t, 1, 40000)), "packet_out in_port=1 actions="+reverseNAT+",IN_PORT data=<in>")
	})
}

func TestDataplane_PacketWithoutFlowReset(t *testing.T) {
	tests := []struct {
		name string
		seg  testnet.TCPSeg
		want string
	}{
		{"ACK", testnet.TCPSeg{ACK: true, Seq: 5, AckNum: 7777}, rstLine(40000, "RST seq=7777 ack=0")},
		{"FINWithoutACK", testnet.TCPSeg{Seq: 5}, rstLine(40000, "RST+ACK seq=0 ack=5")},
		{"RSTIsNotAnswered", testnet.TCPSeg{RST: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecision(t, testnet.Config(nil))
			d.teach(1)
			seg := tt.seg
			seg.SrcMAC, seg.DstMAC, seg.Src, seg.Dst, seg.Sport, seg.Dport = testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", 40000, 80
			want := []string{learnClient}
			if tt.want != "" {
				want = append(want, tt.want)
			}
			assertSent(t, d.packetIn(testnet.ClientOF, testnet.TCPFrame(t, seg)), want...)
		})
	}
}

func TestDataplane_UnknownMemberMACIsARPedFor(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	frame := testnet.SYN(t, 40000)
	assertSent(t, d.packetIn(testnet.ClientOF, frame), learnClient,
		"packet_out in_port=CONTROLLER actions=FLOOD data=arp 02:00:00:00:01:00>ff:ff:ff:ff:ff:ff op=1 sha=02:00:00:00:01:00 spa=0.0.0.0 tha=00:00:00:00:00:00 tpa=10.0.0.1")
	// The member's answer releases the held setup, first packet included.
	setup := setupLines(1, 40000)
	setup[2] = strings.Replace(setup[2], "<in>", describeFrame(t, frame), 1)
	got := d.packetIn(1, testnet.ARPFrame(t, 2, testnet.MemberMAC(1), testnet.VIPMAC, "10.0.0.1", "10.0.0.100", testnet.VIPMAC))
	assertSent(t, got, append([]string{l2Line(testnet.MemberMAC(1), 1)}, setup...)...)
	if n := testnet.MemberByID(d.snap, "m1").Cnt.Active.Load(); n != 1 {
		t.Errorf("member m1 has %d active connections, want 1", n)
	}
}

// A member that did not answer ARP for longer than a setup waits is
// passed over while another can take the connection, and asked for
// again; one not asked yet is waited for, so a rotation stays exact.
func TestDataplane_SilentMemberIsPassedOver(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	d.teach(2)
	d.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00"))
	// Round robin's turn is m1's, not known yet: held, and asked for.
	assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 39999)),
		"packet_out in_port=CONTROLLER actions=FLOOD data=arp 02:00:00:00:01:00>ff:ff:ff:ff:ff:ff op=1 sha=02:00:00:00:01:00 spa=0.0.0.0 tha=00:00:00:00:00:00 tpa=10.0.0.1")
	// m1 never answers. m2 takes its own turn; m3, asked for the first
	// time, is waited for.
	d.advance(heldTimeout + time.Second)
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001))
	assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40002)),
		"packet_out in_port=CONTROLLER actions=FLOOD data=arp 02:00:00:00:01:00>ff:ff:ff:ff:ff:ff op=1 sha=02:00:00:00:01:00 spa=0.0.0.0 tha=00:00:00:00:00:00 tpa=10.0.0.3")
	// m1's turn again: it has been asked for longer than a setup waits,
	// so m2, the next the switch has shown, takes it.
	got := d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	assertSent(t, got, append([]string{
		"packet_out in_port=CONTROLLER actions=FLOOD data=arp 02:00:00:00:01:00>ff:ff:ff:ff:ff:ff op=1 sha=02:00:00:00:01:00 spa=0.0.0.0 tha=00:00:00:00:00:00 tpa=10.0.0.1"},
		setupLines(2, 40000)...)...)
	if n := testnet.MemberByID(d.snap, "m2").Cnt.Active.Load(); n != 2 {
		t.Errorf("member m2 has %d active connections, want 2", n)
	}
}

func TestDataplane_HeldSetupExpires(t *testing.T) {
	d := newDecision(t, testnet.Config(func(c *sdnlb.Config) {
		c.VIPs[0].ConnectionLimit = 1
		c.Members = c.Members[:1]
	}))
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000)) // held, waiting for the member's ARP reply
	if n := testnet.MemberByID(d.snap, "m1").Cnt.Active.Load(); n != 0 {
		t.Errorf("a held setup counts as active on its member")
	}
	d.advance(heldTimeout + time.Second)
	assertSent(t, d.packetIn(1, testnet.ARPFrame(t, 2, testnet.MemberMAC(1), testnet.VIPMAC, "10.0.0.1", "10.0.0.100", testnet.VIPMAC)), l2Line(testnet.MemberMAC(1), 1))
	// Its slot under the connection limit is free again.
	assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001)), setupLines(1, 40001)...)
}

func TestDataplane_Refusals(t *testing.T) {
	allDown := func(c *sdnlb.Config) {
		for _, m := range c.Members {
			m.Health.Status = sdnlb.MemberDown
		}
	}
	tests := []struct {
		name   string
		edit   func(*sdnlb.Config)
		before int // setups before the refusal
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
			d := newDecision(t, testnet.Config(tt.edit))
			d.teach(1, 2, 3)
			d.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00"))
			for i := range tt.before {
				d.packetIn(testnet.ClientOF, testnet.SYN(t, uint16(40000+i)))
			}
			assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 41000)), rstLine(41000, "RST+ACK seq=0 ack=1001"))
			v := d.snap.VIPByID["v1"]
			if refused, active := v.Cnt.Refused.Load(), v.Cnt.Active.Load(); refused != 1 || active != int64(tt.before) {
				t.Errorf("refused %d active %d, want 1 and %d", refused, active, tt.before)
			}
		})
	}
	limit1 := func(c *sdnlb.Config) { c.VIPs[0].ConnectionLimit = 1 }
	t.Run("LimitFreedByFlowRemoved", func(t *testing.T) {
		d := newDecision(t, testnet.Config(limit1))
		d.teach(1, 2, 3)
		d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
		d.dp.FlowRemoved(d.now, d.snap, &ofp.FlowRemoved{Cookie: model.MakeCookie(model.CatConn, 1, 1), Match: clientFlowMatch(40000),
			Reason: ofp.RemovedIdleTimeout})
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001)), setupLines(2, 40001)...)
	})
	t.Run("LimitFreedWhenMemberDeleted", func(t *testing.T) {
		d := newDecision(t, testnet.Config(limit1))
		d.teach(1, 2, 3)
		d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
		d.configure(testnet.Config(func(c *sdnlb.Config) {
			limit1(c)
			c.Members = c.Members[1:]
		}))
		d.dp.FlowRemoved(d.now, d.snap, &ofp.FlowRemoved{Cookie: model.MakeCookie(model.CatConn, 1, 1), Match: clientFlowMatch(40000),
			Reason: ofp.RemovedDelete})
		// The scheduler's second turn: the second of m2, m3.
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001)), setupLines(3, 40001)...)
	})
	t.Run("UDPDroppedSilently", func(t *testing.T) {
		d := newDecision(t, testnet.Config(func(c *sdnlb.Config) {
			c.VIPs[0].Protocol, c.VIPs[0].Port = sdnlb.ProtocolUDP, 53
			allDown(c)
		}))
		d.teach(1)
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.UDPFrame(t, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", 5000, 53)), learnClient)
		if n := d.snap.VIPByID["v1"].Cnt.Refused.Load(); n != 1 {
			t.Errorf("refused %d, want 1", n)
		}
	})
}

func TestDataplane_SourceIPPersistence(t *testing.T) {
	persistent := func(c *sdnlb.Config) {
		c.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
	}
	t.Run("OneClientOneMember", func(t *testing.T) {
		d := newDecision(t, testnet.Config(persistent))
		d.teach(1, 2, 3)
		d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
		for i := range 3 {
			sport := uint16(40001 + i)
			assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, sport)), setupLines(1, sport)...)
		}
	})
	t.Run("ExtendedByConnectionEnd", func(t *testing.T) {
		d := newDecision(t, testnet.Config(persistent))
		d.teach(1, 2, 3)
		d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
		d.advance(50 * time.Second)
		d.dp.FlowRemoved(d.now, d.snap, &ofp.FlowRemoved{Cookie: model.MakeCookie(model.CatConn, 1, 1),
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchIPv4Src([4]byte{10, 0, 1, 5})}}})
		d.advance(50 * time.Second)
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001)), setupLines(1, 40001)...)
	})
	// The next connection takes the scheduler's second turn: 10.0.0.2, or
	// with m1 down the second of m2, m3.
	tests := []struct {
		name   string
		after  func(d *decision)
		member int
	}{
		{"TimedOut", func(d *decision) { d.advance(61 * time.Second) }, 2},
		{"MemberDown", func(d *decision) {
			d.configure(testnet.Config(func(c *sdnlb.Config) {
				persistent(c)
				c.Members[0].Health.Status = sdnlb.MemberDown
			}))
		}, 3},
	}
	for _, tt := range tests {
		t.Run("Ends/"+tt.name, func(t *testing.T) {
			d := newDecision(t, testnet.Config(persistent))
			d.teach(1, 2, 3)
			d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
			tt.after(d)
			assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001)), setupLines(tt.member, 40001)...)
		})
	}
}

func TestDataplane_OtherTrafficToVIPAddressIgnored(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	d.teach(1)
	frame := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 1, Dport: 22, SYN: true})
	assertSent(t, d.packetIn(testnet.ClientOF, frame), learnClient)
}

func TestDataplane_DownMemberLeavesRotation(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	d.teach(1, 2, 3)
	d.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00"))
	d.configure(testnet.Config(func(c *sdnlb.Config) { c.Members[1].Health.Status = sdnlb.MemberDown }))
	for i, member := range []int{1, 3, 1, 3} {
		sport := uint16(40000 + i)
		assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, sport)), setupLines(member, sport)...)
	}
}

func TestDataplane_Accounting(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	d.teach(1, 2, 3)
	d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	m1 := testnet.MemberByID(d.snap, "m1").Cnt
	match := clientFlowMatch(40000)
	fwd := func(packets, bytes uint64) ofp.FlowStats {
		return ofp.FlowStats{Cookie: model.MakeCookie(model.CatConn, 1, 1), Match: match, PacketCount: packets, ByteCount: bytes, DurationSec: 1}
	}
	rev := func(packets, bytes uint64) ofp.FlowStats {
		return ofp.FlowStats{Cookie: model.MakeCookie(model.CatConnReply, 1, 1), Match: match, PacketCount: packets, ByteCount: bytes, DurationSec: 1}
	}
	removed := func(st ofp.FlowStats) *ofp.FlowRemoved {
		return &ofp.FlowRemoved{Cookie: st.Cookie, Match: st.Match, PacketCount: st.PacketCount, ByteCount: st.ByteCount, DurationSec: 2}
	}
	poll := func(dp *Switch, parts ...[]ofp.FlowStats) {
		dp.BeginPoll()
		for _, part := range parts {
			dp.PollPart(d.now, d.snap, part, d.out)
		}
		endPoll(dp, d.snap, everyFlow)
	}
	type counts struct{ active, total, packetsIn, bytesIn, packetsOut, bytesOut int64 }
	var last counts
	check := func(stage string, want counts) {
		t.Helper()
		got := counts{m1.Active.Load(), int64(m1.Total.Load()), int64(m1.PacketsIn.Load()), int64(m1.BytesIn.Load()),
			int64(m1.PacketsOut.Load()), int64(m1.BytesOut.Load())}
		if got != want {
			t.Errorf("%s: %+v, want %+v", stage, got, want)
		}
		if got.total < last.total || got.packetsIn < last.packetsIn || got.bytesIn < last.bytesIn ||
			got.packetsOut < last.packetsOut || got.bytesOut < last.bytesOut {
			t.Errorf("%s: counters went back from %+v to %+v", stage, last, got)
		}
		last = got
	}
	check("after a setup", counts{active: 1, total: 1})

	// A poll in two parts adds what the flows counted; the next adds only
	// what they counted since.
	poll(d.dp, []ofp.FlowStats{fwd(3, 300)}, []ofp.FlowStats{rev(2, 200)})
	check("after a poll", counts{1, 1, 3, 300, 2, 200})
	poll(d.dp, []ofp.FlowStats{fwd(3, 300), rev(3, 250)})
	check("after a second poll", counts{1, 1, 3, 300, 3, 250})

	// The flows end: their flow-removed adds what they counted since, and
	// a poll that no longer finds them takes nothing back.
	d.dp.FlowRemoved(d.now, d.snap, removed(fwd(4, 400)))
	d.dp.FlowRemoved(d.now, d.snap, removed(rev(3, 330)))
	poll(d.dp, nil)
	check("after flow-removed and an empty poll", counts{0, 1, 4, 400, 3, 330})

	// A flow the switch reports for a connection this dataplane did not
	// count (a previous connection's) releases nothing.
	d.dp.FlowRemoved(d.now, d.snap, &ofp.FlowRemoved{Cookie: model.MakeCookie(model.CatConn, 1, 1)})
	check("after a stranger's flow-removed", counts{0, 1, 4, 400, 3, 330})

	// A flow gone from a poll (a route deleted) keeps what it counted; one
	// with the same match that counts less is another flow, counted anew.
	poll(d.dp, []ofp.FlowStats{fwd(10, 1000)})
	check("a new flow", counts{0, 1, 14, 1400, 3, 330})
	poll(d.dp, nil)
	check("the flow gone", counts{0, 1, 14, 1400, 3, 330})
	poll(d.dp, []ofp.FlowStats{fwd(2, 200)})
	check("a flow again, from 0", counts{0, 1, 16, 1600, 3, 330})
	// An add that replaces a flow restarts its age and keeps its counters:
	// the same flow.
	replaced := fwd(4, 400)
	replaced.DurationSec = 0
	poll(d.dp, []ofp.FlowStats{replaced})
	check("a flow replaced by an add", counts{0, 1, 18, 1800, 3, 330})

	// The switch reconnects: its next dataplane keeps its ledger, so the
	// flows it adopts count only what they counted since.
	next := New(d.dp.Config)
	poll(next, []ofp.FlowStats{fwd(5, 500)})
	check("after a reconnect", counts{0, 1, 19, 1900, 3, 330})

	t.Run("SettledWhenTheSwitchGoes", func(t *testing.T) {
		d.packetIn(testnet.ClientOF, testnet.SYN(t, 40001)) // m2
		poll(d.dp, []ofp.FlowStats{{Cookie: model.MakeCookie(model.CatConn, 1, 2), PacketCount: 1, ByteCount: 60}})
		d.dp.Settle(d.snap)
		m2 := testnet.MemberByID(d.snap, "m2").Cnt
		if m2.Active.Load() != 0 || m2.BytesIn.Load() != 60 || d.snap.VIPByID["v1"].Cnt.Active.Load() != 0 {
			t.Errorf("a gone switch: member active %d bytes %d (want 0, 60: what was counted stays), VIP active %d",
				m2.Active.Load(), m2.BytesIn.Load(), d.snap.VIPByID["v1"].Cnt.Active.Load())
		}
	})
}

func TestDataplane_LearnedTablesBounded(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	for i := range MaxLearned + 100 {
		mac := [6]byte{0xaa, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)}
		d.dp.learnMAC(d.now, mac, 1, d.out)
		d.dp.learnHost(&packetIn{now: d.now, snap: d.snap, inPort: 1}, testnet.Addr4(0x0a000000+uint32(i)), mac, d.out)
		d.out.Reset()
	}
	if l := &d.dp.Learner; len(l.macs) != MaxLearned || len(l.hosts) != MaxLearned {
		t.Errorf("tables hold %d MACs and %d addresses, want at most %d", len(l.macs), len(l.hosts), MaxLearned)
	}
	// A known MAC still moves when the table is full.
	moved := [6]byte{0xaa, 0, 0, 0, 0, 7}
	d.dp.learnMAC(d.now, moved, 2, d.out)
	if d.dp.Learner.macs[moved].port != 2 {
		t.Errorf("a full table stopped tracking a move")
	}
	// Hosts not seen within HostTTL make room for a new one; a host seen
	// since stays.
	d.advance(sdnlb.HostTTL)
	d.dp.learnHost(&packetIn{now: d.now, snap: d.snap, inPort: 1}, testnet.Addr4(0x0a000000), [6]byte{0xaa}, d.out)
	d.advance(hostSweep)
	d.dp.learnHost(&packetIn{now: d.now, snap: d.snap, inPort: 1}, testnet.Addr4(0x0b000000), [6]byte{0xbb}, d.out)
	d.out.Reset()
	_, stayed := d.dp.Learner.Host(testnet.Addr4(0x0a000000))
	_, added := d.dp.Learner.Host(testnet.Addr4(0x0b000000))
	if l := &d.dp.Learner; len(l.hosts) != 2 || !stayed || !added {
		t.Errorf("after %v the table holds %d addresses (the one seen since: %v, the new one: %v), want those 2",
			sdnlb.HostTTL+hostSweep, len(l.hosts), stayed, added)
	}
}

// A VIP that gives up an address (deleted, disabled, moved) announces the
// host the controller last saw there, from the host's port, so that
// clients that cached the VIP's MAC for the address reach the host at
// once rather than when their entry goes stale.
func TestDataplane_ReleasedAddressAnnouncesItsHost(t *testing.T) {
	hostAt100 := testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", "10.0.0.100", "10.0.0.1", "00:00:00:00:00:00")
	announced := "packet_out in_port=10 actions=FLOOD data=arp cc:00:00:00:00:01>ff:ff:ff:ff:ff:ff op=1 " +
		"sha=cc:00:00:00:00:01 spa=10.0.0.100 tha=00:00:00:00:00:00 tpa=10.0.0.100"
	deleted := func(c *sdnlb.Config) { c.VIPs, c.Pools[0].VIPID = nil, "" }
	announces := func(t *testing.T, got []string, want bool) {
		t.Helper()
		if slices.Contains(got, announced) != want {
			t.Errorf("sent\n  %s\nwant the host announced: %v", strings.Join(got, "\n  "), want)
		}
	}
	for _, tt := range []struct {
		name string
		edit func(*sdnlb.Config)
	}{
		{"Deleted", deleted},
		{"Disabled", func(c *sdnlb.Config) { c.VIPs[0].AdminStateUp = false }},
		{"Moved", func(c *sdnlb.Config) { c.VIPs[0].Address = "10.0.0.101" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDecision(t, testnet.Config(nil))
			// The host's ARP claims the VIP's address: remembered, and
			// sent nowhere.
			assertSent(t, d.packetIn(testnet.ClientOF, hostAt100), learnClient)
			announces(t, d.configure(testnet.Config(tt.edit)), true)
		})
	}
	t.Run("HostSeenBeforeTheVIP", func(t *testing.T) {
		d := newDecision(t, testnet.Config(deleted))
		assertSent(t, d.packetIn(testnet.ClientOF, hostAt100), learnClient, "packet_out in_port=10 actions=FLOOD data=<in>")
		d.configure(testnet.Config(nil))
		announces(t, d.configure(testnet.Config(deleted)), true)
	})
	t.Run("HostNotSeenWithinTTL", func(t *testing.T) {
		d := newDecision(t, testnet.Config(nil))
		d.packetIn(testnet.ClientOF, hostAt100)
		d.advance(sdnlb.HostTTL + time.Second)
		announces(t, d.configure(testnet.Config(deleted)), false)
	})
	t.Run("AddressStillAVIPs", func(t *testing.T) {
		withV2 := func(c *sdnlb.Config) {
			c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.100", Protocol: sdnlb.ProtocolUDP, Port: 53,
				ConnectionLimit: -1, AdminStateUp: true, MAC: "02:00:00:00:02:00"})
		}
		d := newDecision(t, testnet.Config(withV2))
		d.packetIn(testnet.ClientOF, hostAt100)
		announces(t, d.configure(testnet.Config(func(c *sdnlb.Config) { deleted(c); withV2(c) })), false)
	})
}

// Any host on the data plane can send ARP claiming a VIP's address, from
// a new MAC each time: the claims are remembered as ever, and logged once
// a minute per address.
func TestL2_VIPClaimsBoundedLog(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	for i := range 1000 {
		mac := fmt.Sprintf("cc:00:00:00:%02x:%02x", i>>8, i&0xff)
		d.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 1, mac, "ff:ff:ff:ff:ff:ff", "10.0.0.100", "10.0.0.1", "00:00:00:00:00:00"))
	}
	if n := strings.Count(d.log.String(), "claims a VIP's address"); n != 1 {
		t.Errorf("%d log lines for 1,000 claims of one VIP's address, want 1", n)
	}
}

// Once a connection is set up the switch carries it by itself: its table,
// fed every flow-mod the controller sent, rewrites the client's packets
// to the member and the member's replies back to the VIP, leaves the
// member's other traffic alone, and punts what it cannot decide.
func TestDataplane_SwitchCarriesConnection(t *testing.T) {
	d := newDecision(t, testnet.Config(nil))
	arpForVIP := testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00")
	if got := d.forward(testnet.ClientOF, arpForVIP); got != "output:CONTROLLER,10 "+arpReplyFrame {
		t.Errorf("ARP for the VIP went %s", got)
	}
	d.punt(model.MakeCookie(model.CatARPAnswer, 1, 0), testnet.ClientOF, arpForVIP)
	d.teach(1, 2, 3)
	first := testnet.SYN(t, 40000)
	if got := d.forward(testnet.ClientOF, first); got != "CONTROLLER" {
		t.Fatalf("a new connection went %s", got)
	}
	d.packetIn(testnet.ClientOF, first)

	ack := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 80, ACK: true, Seq: 1001, AckNum: 5001})
	tests := []struct {
		name   string
		inPort uint32
		frame  []byte
		want   string
	}{
		{"ClientToMember", testnet.ClientOF, ack,
			"output:1 tcp 10.0.1.5:40000 > 10.0.0.1:8080 in_port=10 dl_src=cc:00:00:00:00:01 dl_dst=aa:00:00:00:00:01"},
		{"MemberReplyFromVIP", 1, testnet.SYNACK(t, 1, 40000),
			"output:10 tcp 10.0.0.100:80 > 10.0.1.5:40000 in_port=1 dl_src=02:00:00:00:01:00 dl_dst=cc:00:00:00:00:01"},
		{"OtherClientPortPunted", testnet.ClientOF, testnet.SYN(t, 40001), "CONTROLLER"},
		{"MemberReplyWithoutConnectionPunted", 1, testnet.SYNACK(t, 1, 40001), "CONTROLLER"},
		{"MemberOtherServiceSwitchedByMAC", 1,
			testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.MemberMAC(1), DstMAC: testnet.ClientMAC, Src: "10.0.0.1", Dst: testnet.ClientIP, Sport: 22, Dport: 50000, ACK: true}),
			"output:10 tcp 10.0.0.1:22 > 10.0.1.5:50000 in_port=1 dl_src=aa:00:00:00:00:01 dl_dst=cc:00:00:00:00:01"},
		{"OtherPortOfVIPDropped", testnet.ClientOF,
			testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 1, Dport: 22, SYN: true}), "drop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := d.forward(tt.inPort, tt.frame); got != tt.want {
				t.Errorf("went\n  %s\nwant\n  %s", got, tt.want)
			}
		})
	}

	t.Run("MemberDownEndsIt", func(t *testing.T) {
		d.configure(testnet.Config(func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }))
		if got := d.forward(testnet.ClientOF, ack); got != "CONTROLLER" {
			t.Errorf("after the purge the client's packet went %s", got)
		}
		assertSent(t, d.packetIn(testnet.ClientOF, ack), rstLine(40000, "RST seq=5001 ack=0"))
		if n := testnet.MemberByID(d.snap, "m1").Cnt.Active.Load(); n != 0 {
			t.Errorf("the purged connection still counts as active (%d)", n)
		}
	})
}

// Under L2Normal the switch's own MAC learning carries what is not for a
// VIP, with or without the controller; the controller installs no L2
// flow and hands what it must forward to NORMAL.
func TestDataplane_L2Normal(t *testing.T) {
	d := newDecisionL2(t, testnet.Config(nil), model.L2Normal)
	direct := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.MemberMAC(1), Src: testnet.ClientIP, Dst: "10.0.0.1", Sport: 40000, Dport: 8080, SYN: true})
	if got := d.forward(testnet.ClientOF, direct); !strings.HasPrefix(got, "output:NORMAL ") {
		t.Errorf("traffic not for a VIP went %s, want NORMAL", got)
	}
	// The member's answer to the controller's ARP request is punted and
	// learned without an L2 flow.
	reply := testnet.ARPFrame(t, 2, testnet.MemberMAC(1), testnet.VIPMAC, "10.0.0.1", "10.0.0.100", testnet.VIPMAC)
	if got := d.forward(1, reply); got != "CONTROLLER" {
		t.Errorf("a member's ARP reply to the VIP went %s", got)
	}
	assertSent(t, d.packetIn(1, reply))
	assertSent(t, d.packetIn(testnet.ClientOF, testnet.SYN(t, 40000)), setupLines(1, 40000)...)
	// A punted member reply of no recent setup goes on by NORMAL.
	d.advance(time.Duration(model.RecentWindow) + time.Second)
	assertSent(t, d.punt(model.MakeCookie(model.CatMemberReply, 1, 1), 1, testnet.SYNACK(t, 1, 40000)), "packet_out in_port=1 actions=NORMAL data=<in>")
}

// A VIP on port 0 serves every port of its address, each connection to
// its members on the port the client asked for; a VIP on the port itself
// takes precedence.
func TestDataplane_EveryPortVIP(t *testing.T) {
	cfg := testnet.Config(func(c *sdnlb.Config) {
		c.VIPs[0].Port = 0
		for _, m := range c.Members {
			m.Port = 0
		}
	})
	d := newDecision(t, cfg)
	d.teach(1, 2, 3)
	for _, port := range []uint16{80, 8443} {
		frame := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000 + port, Dport: port, SYN: true, Seq: 1000})
		if got := d.forward(testnet.ClientOF, frame); got != "CONTROLLER" {
			t.Fatalf("port %d: the first packet went %s", port, got)
		}
		d.packetIn(testnet.ClientOF, frame)
		if got := d.forward(testnet.ClientOF, frame); !strings.HasPrefix(got, "output:") || !strings.Contains(got, fmt.Sprintf(":%d in_port", port)) {
			t.Errorf("port %d: the connection goes %s, want a member on the same port", port, got)
		}
	}
}

// A connection to a VIP on every port whose member's MAC is not known yet
// waits for the member's ARP reply like any other, and is then set up.
func TestDataplane_EveryPortVIPHeldSetup(t *testing.T) {
	d := newDecision(t, testnet.Config(func(c *sdnlb.Config) {
		c.VIPs[0].Port = 0
		c.Members = c.Members[:1]
	}))
	frame := testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 8443, SYN: true, Seq: 1000})
	d.packetIn(testnet.ClientOF, frame) // held, waiting for the member's ARP reply
	d.packetIn(1, testnet.ARPFrame(t, 2, testnet.MemberMAC(1), testnet.VIPMAC, "10.0.0.1", "10.0.0.100", testnet.VIPMAC))
	if got := d.forward(testnet.ClientOF, frame); !strings.HasPrefix(got, "output:1 tcp 10.0.1.5:40000 > 10.0.0.1:8080 ") {
		t.Errorf("after the member answered, the connection goes %s, want member 1", got)
	}
	if n := testnet.MemberByID(d.snap, "m1").Cnt.Active.Load(); n != 1 {
		t.Errorf("member m1 has %d active connections, want 1", n)
	}
}

// anyConfig is testnet.Config with its VIP and pool of every IP protocol.
func anyConfig(edit func(*sdnlb.Config)) *sdnlb.Config {
	return testnet.Config(func(c *sdnlb.Config) {
		c.VIPs[0].Protocol, c.Pools[0].Protocol = sdnlb.ProtocolAny, sdnlb.ProtocolAny
		if edit != nil {
			edit(c)
		}
	})
}

// ipFrame is an IPv4 packet of proto between two hosts, with payload
// after the IP header (an ICMP echo of id 1 for ICMP).
func ipFrame(tb testing.TB, proto layers.IPProtocol, srcMAC, dstMAC, src, dst string, icmpType uint8) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: testnet.MustMAC(tb, srcMAC), DstMAC: testnet.MustMAC(tb, dstMAC), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	if proto == layers.IPProtocolICMPv4 {
		icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(icmpType, 0), Id: 1, Seq: 1}
		return testnet.Serialize(tb, eth, ip, icmp, gopacket.Payload("ping"))
	}
	return testnet.Serialize(tb, eth, ip, gopacket.Payload("payload of another protocol"))
}

// A VIP of every protocol (Floodlight's protocol 0) takes TCP and UDP on
// every port, ICMP echo and any other IP protocol to its address, each
// connection to a member, and the member's answers come back from the
// VIP.
func TestDataplane_AnyProtocolVIP(t *testing.T) {
	d := newDecision(t, anyConfig(nil))
	d.teach(1, 2, 3)
	for _, tc := range []struct {
		name          string
		toVIP, answer []byte
		viaMember     string // what the client's packet becomes
		back          string // what the member's answer becomes
	}{
		{"TCP",
			testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 40000, Dport: 443, SYN: true}),
			testnet.TCPFrame(t, testnet.TCPSeg{SrcMAC: testnet.MemberMAC(1), DstMAC: testnet.ClientMAC, Src: "10.0.0.1", Dst: testnet.ClientIP, Sport: 8080, Dport: 40000, SYN: true, ACK: true}),
			"output:1 tcp 10.0.1.5:40000 > 10.0.0.1:8080 ", "output:10 tcp 10.0.0.100:443 > 10.0.1.5:40000 "},
		{"UDP",
			testnet.UDPFrame(t, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", 40001, 53),
			testnet.UDPFrame(t, testnet.MemberMAC(2), testnet.ClientMAC, "10.0.0.2", testnet.ClientIP, 8080, 40001),
			"output:2 udp 10.0.1.5:40001 > 10.0.0.2:8080 ", "output:10 udp 10.0.0.100:53 > 10.0.1.5:40001 "},
		{"ICMP",
			ipFrame(t, layers.IPProtocolICMPv4, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", layers.ICMPv4TypeEchoRequest),
			ipFrame(t, layers.IPProtocolICMPv4, testnet.MemberMAC(3), testnet.ClientMAC, "10.0.0.3", testnet.ClientIP, layers.ICMPv4TypeEchoReply),
			"output:3 icmp 10.0.1.5 > 10.0.0.3 type=8", "output:10 icmp 10.0.0.100 > 10.0.1.5 type=0"},
		{"GRE",
			ipFrame(t, layers.IPProtocolGRE, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", 0),
			ipFrame(t, layers.IPProtocolGRE, testnet.MemberMAC(1), testnet.ClientMAC, "10.0.0.1", testnet.ClientIP, 0),
			"output:1 ip proto=47 10.0.1.5 > 10.0.0.1 ", "output:10 ip proto=47 10.0.0.100 > 10.0.1.5 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.forward(testnet.ClientOF, tc.toVIP); got != "CONTROLLER" {
				t.Fatalf("the first packet went %s, want CONTROLLER", got)
			}
			d.packetIn(testnet.ClientOF, tc.toVIP)
			if got := d.forward(testnet.ClientOF, tc.toVIP); !strings.HasPrefix(got, tc.viaMember) {
				t.Errorf("the connection goes %s, want %s…", got, tc.viaMember)
			}
			inPort := uint32(tc.answer[11]) // the member's number ends its MAC
			if got := d.forward(inPort, tc.answer); !strings.HasPrefix(got, tc.back) {
				t.Errorf("the member's answer goes %s, want %s…", got, tc.back)
			}
		})
	}

	t.Run("OtherICMPIgnored", func(t *testing.T) {
		unreachable := ipFrame(t, layers.IPProtocolICMPv4, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", layers.ICMPv4TypeDestinationUnreachable)
		assertSent(t, d.packetIn(testnet.ClientOF, unreachable))
	})
	// A VIP changed to one protocol drops the connections of the others.
	t.Run("NarrowedToTCP", func(t *testing.T) {
		d.configure(testnet.Config(func(c *sdnlb.Config) { c.VIPs[0].Port = 0 }))
		gre := ipFrame(t, layers.IPProtocolGRE, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.100", 0)
		if got := d.forward(testnet.ClientOF, gre); got != "drop" {
			t.Errorf("GRE to a TCP VIP goes %s, want drop", got)
		}
	})
}

// commits reports whether a packet-out's actions commit its packet in the
// switch's tracker (a tracked connection's first packet), which the test
// switch then runs: what the tracker keeps decides where the
// connection's next packets go.
func commits(actions []ofp.Action) bool {
	return slices.ContainsFunc(actions, func(a ofp.Action) bool {
		ct, ok := a.(ofp.ActionCT)
		return ok && ct.Flags&ofp.CTCommit != 0
	})
}
