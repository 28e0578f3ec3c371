// Package testnet holds the fixtures the controller's test suites share:
// the test network's addresses, frames a switch would send (ARP, TCP,
// neighbour discovery), a configuration, and renderings of flows as
// ovs-ofctl prints them.
package testnet

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// SYNACK is member i's answer to a client SYN from sport.
func SYNACK(tb testing.TB, i int, sport uint16) []byte {
	tb.Helper()
	return TCPFrame(tb, TCPSeg{SrcMAC: MemberMAC(i), DstMAC: ClientMAC, Src: fmt.Sprintf("10.0.0.%d", i), Dst: ClientIP,
		Sport: 8080, Dport: sport, SYN: true, ACK: true, Seq: 5000, AckNum: 1001})
}

// NDCopyLine is the base row that copies neighbour advertisements to all
// nodes to the controller.
const NDCopyLine = "cookie=0x5d07000000000000, priority=400, icmp6,dl_dst=33:33:00:00:00:01,icmp_type=136 actions=CONTROLLER:65535,goto_table:9"

// ARPAnswerLines are the rows with which the switch answers ARP requests
// for ip with mac, under the cookie of VIP vipNum; under L2Learn the
// request also goes up.
func ARPAnswerLines(vipNum uint32, mac, ip string, l2 model.L2Mode) []string {
	cookie := fmt.Sprintf("cookie=%#x", model.MakeCookie(model.CatARPAnswer, vipNum, 0))
	up := ""
	if l2 == model.L2Learn {
		up = "CONTROLLER:65535,"
	}
	return []string{
		cookie + ", priority=511, arp,arp_spa=" + ip + ",arp_tpa=" + ip + ",arp_op=1 actions=drop",
		cookie + ", priority=510, arp,arp_tpa=" + ip + ",arp_op=1 actions=" + up + ARPAnswer(mac, ip),
	}
}

// ARPAnswer is the rewrite that turns an ARP request for ip into the
// reply from mac, back out of the port it came in on.
func ARPAnswer(mac, ip string) string {
	return "move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:" + mac + "->eth_src,set_field:2->arp_op," +
		"move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:" + mac + "->arp_sha," +
		"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:" + ip + "->arp_spa,IN_PORT"
}

// FrameMessage makes b a message of version v and type t with a correct
// header.
func FrameMessage(v uint8, t byte, body []byte) []byte {
	b := make([]byte, ofp.HeaderLen, ofp.HeaderLen+len(body))
	b[0], b[1] = v, t
	binary.BigEndian.PutUint16(b[2:], uint16(min(ofp.HeaderLen+len(body), ofp.MaxMessageLen)))
	return append(b, body[:min(len(body), ofp.MaxMessageLen-ofp.HeaderLen)]...)
}

// WaitFor bounds every wait of a test on the controller.
const WaitFor = 5 * time.Second

// Config is one TCP VIP 10.0.0.100:80 with a round-robin pool of
// three members 10.0.0.1-3:8080, plus whatever edit changes.
func Config(edit func(*sdnlb.Config)) *sdnlb.Config {
	cfg := &sdnlb.Config{
		VIPs: []*sdnlb.VIP{{
			ID: "v1", Address: "10.0.0.100", Protocol: sdnlb.ProtocolTCP, Port: 80, PoolID: "p1",
			ConnectionLimit: -1, AdminStateUp: true, MAC: "02:00:00:00:01:00",
		}},
		Pools: []*sdnlb.Pool{{ID: "p1", VIPID: "v1", LBMethod: sdnlb.RoundRobin, Protocol: sdnlb.ProtocolTCP, AdminStateUp: true}},
	}
	for i := 1; i <= 3; i++ {
		cfg.Members = append(cfg.Members, &sdnlb.Member{
			ID: fmt.Sprintf("m%d", i), PoolID: "p1", Address: fmt.Sprintf("10.0.0.%d", i), Port: 8080,
			Weight: 1, AdminStateUp: true,
		})
	}
	if edit != nil {
		edit(cfg)
	}
	return cfg
}

// SyncBuffer collects log output from many goroutines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// FlowLine renders a flow-mod as ovs-ofctl prints a flow, after a trip
// over the wire so the line shows what a switch would decode.
func FlowLine(tb testing.TB, fm *ofp.FlowMod) string {
	tb.Helper()
	_, m, err := ofp.Decode(ofp.Append(nil, 1, fm))
	if err != nil {
		tb.Fatalf("flow-mod does not decode: %v", err)
	}
	w := m.(*ofp.FlowMod)
	var b strings.Builder
	switch w.Command {
	case ofp.FlowDelete:
		fmt.Fprintf(&b, "delete cookie=%#x/%#x", w.Cookie, w.CookieMask)
		if w.TableID != ofp.TableAll {
			fmt.Fprintf(&b, " table=%s", model.TableName(w.TableID))
		}
		return b.String()
	case ofp.FlowDeleteStrict:
		b.WriteString("delete_strict ")
		if w.CookieMask != 0 {
			fmt.Fprintf(&b, "cookie=%#x/%#x ", w.Cookie, w.CookieMask)
		}
		fmt.Fprintf(&b, "table=%s, priority=%d, %s", model.TableName(w.TableID), w.Priority, w.Match.String())
		return b.String()
	case ofp.FlowAdd:
	default:
		fmt.Fprintf(&b, "command=%d ", w.Command)
	}
	fmt.Fprintf(&b, "cookie=%#x", w.Cookie)
	if w.TableID != 0 {
		fmt.Fprintf(&b, ", table=%s", model.TableName(w.TableID))
	}
	fmt.Fprintf(&b, ", priority=%d", w.Priority)
	if w.IdleTimeout != 0 {
		fmt.Fprintf(&b, ", idle_timeout=%d", w.IdleTimeout)
	}
	if w.HardTimeout != 0 {
		fmt.Fprintf(&b, ", hard_timeout=%d", w.HardTimeout)
	}
	if w.Flags&ofp.FlagSendFlowRem != 0 {
		b.WriteString(", send_flow_rem")
	}
	if w.BufferID != ofp.NoBuffer {
		fmt.Fprintf(&b, ", buffer_id=%#x", w.BufferID)
	}
	if s := w.Match.String(); s != "" {
		b.WriteString(", " + s)
	}
	b.WriteString(" actions=" + ofp.FormatInstructions(w.Instructions))
	return b.String()
}

func FlowLines(tb testing.TB, mods []ofp.FlowMod) []string {
	tb.Helper()
	lines := make([]string, len(mods))
	for i := range mods {
		lines[i] = FlowLine(tb, &mods[i])
	}
	sort.Strings(lines)
	return lines
}

func AssertLines(tb testing.TB, got, want []string) {
	tb.Helper()
	sort.Strings(want)
	if !slices.Equal(got, want) {
		tb.Errorf("flows differ\ngot:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// PacketOutLine renders a packet-out's ports and actions.
func PacketOutLine(po *ofp.PacketOut) string {
	return fmt.Sprintf("in_port=%s actions=%s", PortName(po.InPort), ofp.FormatInstructions(
		[]ofp.Instruction{ofp.InstructionApplyActions{Actions: po.Actions}}))
}

func PortName(p uint32) string {
	switch p {
	case ofp.PortController:
		return "CONTROLLER"
	case ofp.PortLocal:
		return "LOCAL"
	case ofp.PortNormal:
		return "NORMAL"
	}
	return fmt.Sprint(p)
}

// Frames.

func MustMAC(tb testing.TB, s string) net.HardwareAddr {
	tb.Helper()
	m, err := net.ParseMAC(s)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func Serialize(tb testing.TB, ls ...gopacket.SerializableLayer) []byte {
	tb.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		tb.Fatal(err)
	}
	return slices.Clone(buf.Bytes())
}

func ARPFrame(tb testing.TB, op uint16, srcMAC, dstMAC string, spa, tpa string, tha string) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: MustMAC(tb, srcMAC), DstMAC: MustMAC(tb, dstMAC), EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: op, SourceHwAddress: MustMAC(tb, srcMAC), SourceProtAddress: net.ParseIP(spa).To4(),
		DstHwAddress: MustMAC(tb, tha), DstProtAddress: net.ParseIP(tpa).To4(),
	}
	return Serialize(tb, eth, arp)
}

// TCPSeg describes a TCP segment from a client.
type TCPSeg struct {
	SrcMAC, DstMAC     string
	Src, Dst           string
	Sport, Dport       uint16
	SYN, ACK, RST, FIN bool
	Seq, AckNum        uint32
}

// TCPFrame is the segment s, over IPv4 or IPv6 as its addresses are.
func TCPFrame(tb testing.TB, s TCPSeg) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: MustMAC(tb, s.SrcMAC), DstMAC: MustMAC(tb, s.DstMAC), EthernetType: layers.EthernetTypeIPv4}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(s.Sport), DstPort: layers.TCPPort(s.Dport), SYN: s.SYN, ACK: s.ACK, RST: s.RST, FIN: s.FIN,
		Seq: s.Seq, Ack: s.AckNum, Window: 1024}
	if src := netip.MustParseAddr(s.Src); src.Is6() {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP, SrcIP: src.AsSlice(), DstIP: net.ParseIP(s.Dst)}
		_ = tcp.SetNetworkLayerForChecksum(ip)
		return Serialize(tb, eth, ip, tcp)
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(s.Src).To4(), DstIP: net.ParseIP(s.Dst).To4()}
	_ = tcp.SetNetworkLayerForChecksum(ip)
	return Serialize(tb, eth, ip, tcp)
}

// NDFrame is a neighbour solicitation (typ 135) or advertisement (136)
// about target, with a link-layer address option for ll unless ll is "".
func NDFrame(tb testing.TB, srcMAC, dstMAC, src, dst string, typ uint8, target, ll string) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: MustMAC(tb, srcMAC), DstMAC: MustMAC(tb, dstMAC), EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
	_ = icmp.SetNetworkLayerForChecksum(ip)
	var opts layers.ICMPv6Options
	if ll != "" {
		opt := layers.ICMPv6OptSourceAddress
		if typ == model.NDAdvertisement {
			opt = layers.ICMPv6OptTargetAddress
		}
		opts = append(opts, layers.ICMPv6Option{Type: opt, Data: MustMAC(tb, ll)})
	}
	if typ == model.NDSolicitation {
		return Serialize(tb, eth, ip, icmp, &layers.ICMPv6NeighborSolicitation{TargetAddress: net.ParseIP(target), Options: opts})
	}
	return Serialize(tb, eth, ip, icmp, &layers.ICMPv6NeighborAdvertisement{Flags: model.NDFlagOverride, TargetAddress: net.ParseIP(target), Options: opts})
}

func UDPFrame(tb testing.TB, srcMAC, dstMAC, src, dst string, sport, dport uint16) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: MustMAC(tb, srcMAC), DstMAC: MustMAC(tb, dstMAC), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	return Serialize(tb, eth, ip, udp, gopacket.Payload("hello"))
}

// ParseFrame decodes a frame the controller sent, for assertions.
func ParseFrame(tb testing.TB, data []byte) gopacket.Packet {
	tb.Helper()
	p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
	if el := p.ErrorLayer(); el != nil {
		tb.Fatalf("controller sent a bad frame: %v", el.Error())
	}
	return p
}

func LayerOf[T gopacket.Layer](tb testing.TB, p gopacket.Packet) T {
	tb.Helper()
	for _, l := range p.Layers() {
		if t, ok := l.(T); ok {
			return t
		}
	}
	var zero T
	tb.Fatalf("no %T in %v", zero, p)
	return zero
}

func NewTestLogger(w *SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func ICMPEcho(tb testing.TB) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: MustMAC(tb, ClientMAC), DstMAC: MustMAC(tb, VIPMAC), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP(ClientIP).To4(), DstIP: net.ParseIP("10.0.0.102").To4()}
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 1, Seq: 1}
	return Serialize(tb, eth, ip, icmp, gopacket.Payload("ping"))
}

// MembersByID returns every member of s, by id.
func MembersByID(s *model.Snapshot) map[string]*model.Member {
	out := map[string]*model.Member{}
	for _, p := range s.Pools {
		for _, m := range p.Members {
			out[m.ID] = m
		}
	}
	return out
}

// MemberByID returns s's member id, nil when there is none.
func MemberByID(s *model.Snapshot, id string) *model.Member { return MembersByID(s)[id] }

// Addr4 is the IPv4 address u, as tests number them.
func Addr4(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}

// The IPv6 twins of the test configuration's addresses.
const (
	VIP6    = "2001:db8::100"
	Client6 = "2001:db8:1::5"
)

func Member6(i int) string { return fmt.Sprintf("2001:db8::%d", i) }

func SYN6(tb testing.TB, sport uint16) []byte {
	tb.Helper()
	return TCPFrame(tb, TCPSeg{SrcMAC: ClientMAC, DstMAC: VIPMAC, Src: Client6, Dst: VIP6, Sport: sport, Dport: 80, SYN: true, Seq: 1000})
}

// Solicitation is the client's neighbour solicitation for the VIP, to its
// solicited-node group.
func Solicitation(tb testing.TB) []byte {
	tb.Helper()
	return NDFrame(tb, ClientMAC, "33:33:ff:00:01:00", Client6, "ff02::1:ff00:100", model.NDSolicitation, VIP6, ClientMAC)
}

// TooBigFrame is an ICMP error from a router to vip saying that the reply
// vip:80 → client:40000 was too big: IPv6 packet too big or IPv4
// fragmentation needed, by the family of vip.
func TooBigFrame(tb testing.TB, router, vip, client string) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: MustMAC(tb, ClientMAC), DstMAC: MustMAC(tb, VIPMAC)}
	quoted := &layers.TCP{SrcPort: 80, DstPort: 40000, ACK: true, Seq: 7, Window: 1024}
	payload := gopacket.Payload(make([]byte, 64))
	if netip.MustParseAddr(vip).Is6() {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP(router), DstIP: net.ParseIP(vip)}
		icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(model.ICMPv6PacketTooBig, 0)}
		_ = icmp.SetNetworkLayerForChecksum(ip)
		inner := &layers.IPv6{Version: 6, HopLimit: 63, NextHeader: layers.IPProtocolTCP, SrcIP: net.ParseIP(vip), DstIP: net.ParseIP(client)}
		_ = quoted.SetNetworkLayerForChecksum(inner)
		return Serialize(tb, eth, ip, icmp, gopacket.Payload([]byte{0, 0, 5, 0}), inner, quoted, payload)
	}
	eth.EthernetType = layers.EthernetTypeIPv4
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP(router).To4(), DstIP: net.ParseIP(vip).To4()}
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(model.ICMPUnreachable, model.ICMPFragmentationNeeded), Seq: 1000}
	inner := &layers.IPv4{Version: 4, IHL: 5, TTL: 63, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(vip).To4(), DstIP: net.ParseIP(client).To4()}
	_ = quoted.SetNetworkLayerForChecksum(inner)
	return Serialize(tb, eth, ip, icmp, inner, quoted, payload)
}

const (
	VIPMAC    = "02:00:00:00:01:00"
	ClientMAC = "cc:00:00:00:00:01"
	ClientIP  = "10.0.1.5"
	ClientOF  = 10
)

func MemberMAC(i int) string { return fmt.Sprintf("aa:00:00:00:00:%02x", i) }

func SYN(tb testing.TB, sport uint16) []byte {
	tb.Helper()
	return TCPFrame(tb, TCPSeg{SrcMAC: ClientMAC, DstMAC: VIPMAC, Src: ClientIP, Dst: "10.0.0.100", Sport: sport, Dport: 80, SYN: true, Seq: 1000})
}

func ActionsLine(actions []ofp.Action) string {
	return ofp.FormatInstructions([]ofp.Instruction{ofp.InstructionApplyActions{Actions: actions}})
}

// FlowModLines renders the flow-mods among the encoded messages in b as
// ovs-ofctl prints flows, each behind "flow_mod "; other messages by type.
func FlowModLines(tb testing.TB, b []byte) []string {
	tb.Helper()
	var lines []string
	for len(b) > 0 {
		h, err := ofp.ParseHeader(b)
		if err != nil || int(h.Length) > len(b) {
			tb.Fatalf("broken message: %v", err)
		}
		_, m, err := ofp.Decode(b[:h.Length])
		if err != nil {
			tb.Fatalf("undecodable %s: %v", h.Type, err)
		}
		b = b[h.Length:]
		if fm, ok := m.(*ofp.FlowMod); ok {
			lines = append(lines, "flow_mod "+FlowLine(tb, fm))
		} else {
			lines = append(lines, h.Type.String())
		}
	}
	return lines
}
