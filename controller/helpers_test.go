package controller

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

// waitFor bounds every wait of a test on the controller.
const waitFor = 5 * time.Second

// fakeSource is a ConfigSource whose configuration the test replaces.
type fakeSource struct {
	mu   sync.Mutex
	cfg  *sdnlb.Config
	subs []chan sdnlb.Event
}

func newFakeSource(cfg *sdnlb.Config) *fakeSource { return &fakeSource{cfg: cfg} }

func (f *fakeSource) LoadConfig(ctx context.Context) (*sdnlb.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cfg, nil
}

func (f *fakeSource) Subscribe() (<-chan sdnlb.Event, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan sdnlb.Event, 16)
	f.subs = append(f.subs, ch)
	return ch, func() {}
}

// set replaces the configuration and announces it.
func (f *fakeSource) set(cfg *sdnlb.Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cfg.Seq = f.cfg.Seq + 1
	f.cfg = cfg
	for _, ch := range f.subs {
		select {
		case ch <- sdnlb.Event{Seq: cfg.Seq, Kind: sdnlb.KindMember, Op: sdnlb.OpUpdate}:
		default: // a full feed wakes the controller anyway, and it loads this configuration
		}
	}
}

// setHealth changes a member's health status and announces it as the
// store does, with the status in the event.
func (f *fakeSource) setHealth(memberID string, status sdnlb.MemberStatus) {
	f.setHealthReport(memberID, status, nil)
}

// setHealthReport is setHealth with the report of the member's agent.
func (f *fakeSource) setHealthReport(memberID string, status sdnlb.MemberStatus, agent *sdnlb.AgentReport) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cfg := *f.cfg
	cfg.Seq++
	cfg.Members = slices.Clone(cfg.Members)
	for i, m := range cfg.Members {
		if m.ID == memberID {
			changed := *m
			changed.Health.Status, changed.Health.Agent = status, agent
			cfg.Members[i] = &changed
		}
	}
	f.cfg = &cfg
	for _, ch := range f.subs {
		select {
		case ch <- sdnlb.Event{Seq: cfg.Seq, Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: memberID, Status: status, Agent: agent}:
		default: // a full feed: the next reload catches up
		}
	}
}

// testConfig is one TCP VIP 10.0.0.100:80 with a round-robin pool of
// three members 10.0.0.1-3:8080, plus whatever edit changes.
func testConfig(edit func(*sdnlb.Config)) *sdnlb.Config {
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

// pipeListener hands the controller the server ends of net.Pipe pairs.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr("pipe") }

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

// harness runs a controller on a pipeListener, or on TCP at addr, until
// the test ends.
type harness struct {
	c     *Controller
	src   *fakeSource
	ln    *pipeListener
	addr  string
	log   *syncBuffer
	clock *testClock
	// groups: the switches connect saying they have select groups.
	groups bool
	// ports10: the ports of the next 1.0 switch's features reply.
	ports10 []ofp.Port
}

// testClock is real time plus an offset the test moves forward.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *testClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startController(tb testing.TB, cfg *sdnlb.Config, opts Options) *harness {
	tb.Helper()
	src := newFakeSource(cfg)
	h := startControllerOn(tb, src, opts)
	h.src = src
	return h
}

// startControllerOn runs a controller that follows src.
func startControllerOn(tb testing.TB, src sdnlb.ConfigSource, opts Options) *harness {
	tb.Helper()
	h := &harness{ln: newPipeListener()}
	h.serve(tb, src, opts, h.ln)
	return h
}

// startControllerTCP runs a controller on a TCP port of 127.0.0.1, at
// h.addr, for tests of what tells connections apart by their source
// address; h.dial does not reach it.
func startControllerTCP(tb testing.TB, cfg *sdnlb.Config, opts Options) *harness {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	h := &harness{addr: ln.Addr().String(), src: newFakeSource(cfg)}
	h.serve(tb, h.src, opts, ln)
	return h
}

// serve runs a controller that follows src on ln until the test ends.
func (h *harness) serve(tb testing.TB, src sdnlb.ConfigSource, opts Options, ln net.Listener) {
	tb.Helper()
	h.log, h.clock = &syncBuffer{}, &testClock{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(h.log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	if opts.StatsInterval == 0 {
		opts.StatsInterval = time.Hour // tests poll by hand
	}
	if opts.EchoInterval == 0 {
		opts.EchoInterval = time.Hour
	}
	if opts.L2 == "" {
		opts.L2 = L2Learn // the tests teach members through learned flows
	}
	h.c = New(src, opts)
	h.c.now = h.clock.now
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.c.Serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				tb.Errorf("Serve: %v", err)
			}
		case <-time.After(waitFor):
			tb.Errorf("Serve did not return after cancel")
		}
	})
}

// received is one message the controller sent to a fake switch.
type received struct {
	h ofp.Header
	m ofp.Message
}

// fakeSwitch is the switch end of a pipe: a reader goroutine decodes what
// the controller sends into msgs.
type fakeSwitch struct {
	tb     testing.TB
	conn   net.Conn
	msgs   chan received
	closed chan struct{}
	wmu    sync.Mutex
	// v10: the switch speaks OpenFlow 1.0 (set before it says anything).
	// Either way it sends and receives the ofp package's model; received
	// headers carry 1.3's type numbers.
	v10 bool
}

// dial connects a fake switch that has said nothing yet.
func (h *harness) dial(tb testing.TB) *fakeSwitch {
	tb.Helper()
	server, client := net.Pipe()
	sw := newFakeSwitch(tb, client)
	select {
	case h.ln.conns <- server:
	case <-time.After(waitFor):
		tb.Fatalf("controller did not accept")
	}
	return sw
}

// dialFrom connects a fake switch that has said nothing yet to h.addr
// from the loopback address source.
func (h *harness) dialFrom(tb testing.TB, source string) *fakeSwitch {
	tb.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
	conn, err := d.Dial("tcp", h.addr)
	if err != nil {
		tb.Fatal(err)
	}
	return newFakeSwitch(tb, conn)
}

// newFakeSwitch is a fake switch on the switch's end of client.
func newFakeSwitch(tb testing.TB, client net.Conn) *fakeSwitch {
	sw := &fakeSwitch{tb: tb, conn: client, msgs: make(chan received, 4096), closed: make(chan struct{})}
	go func() {
		defer close(sw.closed)
		br := bufio.NewReader(client)
		for {
			b, err := ofp.ReadMessage(br, nil)
			if err != nil {
				return
			}
			hd, m, err := decodeAnyVersion(b)
			if err != nil {
				tb.Errorf("controller sent an undecodable %s: %v", hd.Type, err)
				return
			}
			sw.msgs <- received{hd, m}
		}
	}()
	tb.Cleanup(func() { client.Close() })
	return sw
}

// decodeAnyVersion decodes an OpenFlow 1.0 or 1.3 message, by its header,
// and a HELLO_FAILED in any version (it reads the same in every one).
func decodeAnyVersion(b []byte) (ofp.Header, ofp.Message, error) {
	if b[0] != ofp10.Version && b[0] != ofp.Version && ofp.Type(b[1]) == ofp.TypeError {
		b = append([]byte{ofp.Version}, b[1:]...)
	}
	if b[0] != ofp10.Version || b[1] == byte(ofp10.TypeHello) {
		return ofp.Decode(b)
	}
	h, m, err := ofp10.Decode(b)
	return ofp.Header{Version: h.Version, Type: h.Type.Model(), Length: h.Length, XID: h.XID}, m, err
}

// connect10 is connect for a switch that speaks only OpenFlow 1.0.
func (h *harness) connect10(tb testing.TB, dpid uint64, ports ...ofp.Port) (*fakeSwitch, []received) {
	tb.Helper()
	sw := h.dial(tb)
	sw.v10 = true
	h.ports10 = ports
	return sw, h.handshake(tb, sw, dpid)
}

// connect dials and completes the handshake as datapath dpid, returning
// what the controller sent up to and including the barrier request.
func (h *harness) connect(tb testing.TB, dpid uint64) (*fakeSwitch, []received) {
	tb.Helper()
	sw := h.dial(tb)
	return sw, h.handshake(tb, sw, dpid)
}

// handshake completes sw's handshake as datapath dpid, returning what the
// controller sent up to and including the barrier request.
func (h *harness) handshake(tb testing.TB, sw *fakeSwitch, dpid uint64) []received {
	tb.Helper()
	if sw.v10 {
		sw.sendRaw([]byte{ofp10.Version, byte(ofp10.TypeHello), 0, 8, 0, 0, 0, 0})
	} else {
		sw.send(0, ofp.Hello{Versions: []uint8{1, 4}})
	}
	var got []received
	for {
		r := sw.next()
		got = append(got, r)
		switch r.m.(type) {
		case *ofp.FeaturesRequest:
			if sw.v10 {
				sw.send(r.h.XID, ofp10.FeaturesReply{FeaturesReply: ofp.FeaturesReply{DatapathID: dpid, NTables: 1}, Ports: h.ports10})
				continue
			}
			sw.send(r.h.XID, ofp.FeaturesReply{DatapathID: dpid, NBuffers: 0, NTables: 254})
		case *ofp.MultipartRequest:
			switch r.m.(*ofp.MultipartRequest).Body.(type) {
			case ofp.GroupFeaturesRequest:
				var f ofp.GroupFeaturesReply
				if h.groups {
					f.Types = 1 << ofp.GroupTypeSelect
				}
				sw.send(r.h.XID, ofp.MultipartReply{Body: f})
			default:
				sw.answerEmpty(r) // holds none of sdnlb's flows and groups
			}
		case *ofp.BarrierRequest:
			sw.send(r.h.XID, ofp.BarrierReply{})
			return got
		}
	}
}

// answerEmpty answers a read of sdnlb's flows, the groups or their
// counters as a switch that holds none, and reports whether r was one.
func (sw *fakeSwitch) answerEmpty(r received) bool {
	sw.tb.Helper()
	req, ok := r.m.(*ofp.MultipartRequest)
	if !ok {
		return false
	}
	var reply ofp.MultipartReplyBody
	switch req.Body.(type) {
	case ofp.FlowStatsRequest:
		reply = ofp.FlowStatsReply{}
	case ofp.GroupDescRequest:
		reply = ofp.GroupDescReply{}
	default:
		return false
	}
	sw.send(r.h.XID, ofp.MultipartReply{Body: reply})
	return true
}

func (sw *fakeSwitch) send(xid uint32, m ofp.Message) {
	sw.tb.Helper()
	if !sw.v10 {
		sw.sendRaw(ofp.Append(nil, xid, m))
		return
	}
	b, err := ofp10.Append(nil, xid, m)
	if err != nil {
		sw.tb.Fatalf("fake 1.0 switch cannot send %s: %v", m.Type(), err)
	}
	sw.sendRaw(b)
}

func (sw *fakeSwitch) sendRaw(b []byte) {
	sw.tb.Helper()
	sw.wmu.Lock()
	defer sw.wmu.Unlock()
	sw.conn.SetWriteDeadline(time.Now().Add(waitFor))
	if _, err := sw.conn.Write(b); err != nil {
		sw.tb.Fatalf("fake switch write: %v", err)
	}
}

// next returns the next message from the controller.
func (sw *fakeSwitch) next() received {
	sw.tb.Helper()
	select {
	case r := <-sw.msgs:
		return r
	case <-time.After(waitFor):
		sw.tb.Fatalf("no message from the controller within %v", waitFor)
		return received{}
	}
}

// nextOf skips to the next message of type t.
func (sw *fakeSwitch) nextOf(t ofp.Type) received {
	sw.tb.Helper()
	for {
		if r := sw.next(); r.h.Type == t && !isLLDPOut(r) {
			return r
		}
	}
}

// isLLDPOut reports whether r is one of discovery's LLDP packet-outs,
// which the controller sends on its own schedule: nextOf passes them
// over, lldpOut waits for them.
func isLLDPOut(r received) bool {
	po, ok := r.m.(*ofp.PacketOut)
	if !ok {
		return false
	}
	_, _, lldp := parseLLDP(po.Data)
	return lldp
}

// quiet reports whether the controller sends nothing for a while.
func (sw *fakeSwitch) quiet(d time.Duration) (received, bool) {
	select {
	case r := <-sw.msgs:
		return r, false
	case <-time.After(d):
		return received{}, true
	}
}

// waitClosed waits until the controller closes the connection.
func (sw *fakeSwitch) waitClosed() {
	sw.tb.Helper()
	select {
	case <-sw.closed:
	case <-time.After(waitFor):
		sw.tb.Fatalf("controller did not close the session")
	}
}

// packetIn sends a frame as a packet-in from port inPort.
func (sw *fakeSwitch) packetIn(inPort uint32, frame []byte) {
	sw.tb.Helper()
	sw.send(0, &ofp.PacketIn{
		BufferID: ofp.NoBuffer, TotalLen: uint16(len(frame)), Reason: ofp.ReasonAction,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(inPort)}}, Data: frame,
	})
}

// flowLine renders a flow-mod as ovs-ofctl prints a flow, after a trip
// over the wire so the line shows what a switch would decode.
func flowLine(tb testing.TB, fm *ofp.FlowMod) string {
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
			fmt.Fprintf(&b, " table=%s", tableName(w.TableID))
		}
		return b.String()
	case ofp.FlowDeleteStrict:
		fmt.Fprintf(&b, "delete_strict table=%s, priority=%d, %s", tableName(w.TableID), w.Priority, w.Match.String())
		return b.String()
	case ofp.FlowAdd:
	default:
		fmt.Fprintf(&b, "command=%d ", w.Command)
	}
	fmt.Fprintf(&b, "cookie=%#x", w.Cookie)
	if w.TableID != 0 {
		fmt.Fprintf(&b, ", table=%s", tableName(w.TableID))
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

func flowLines(tb testing.TB, mods []ofp.FlowMod) []string {
	tb.Helper()
	lines := make([]string, len(mods))
	for i := range mods {
		lines[i] = flowLine(tb, &mods[i])
	}
	sort.Strings(lines)
	return lines
}

func assertLines(tb testing.TB, got, want []string) {
	tb.Helper()
	sort.Strings(want)
	if !slices.Equal(got, want) {
		tb.Errorf("flows differ\ngot:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// packetOutLine renders a packet-out's ports and actions.
func packetOutLine(po *ofp.PacketOut) string {
	return fmt.Sprintf("in_port=%s actions=%s", portName(po.InPort), ofp.FormatInstructions(
		[]ofp.Instruction{ofp.InstructionApplyActions{Actions: po.Actions}}))
}

func portName(p uint32) string {
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

func mustMAC(tb testing.TB, s string) net.HardwareAddr {
	tb.Helper()
	m, err := net.ParseMAC(s)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func serialize(tb testing.TB, ls ...gopacket.SerializableLayer) []byte {
	tb.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		tb.Fatal(err)
	}
	return slices.Clone(buf.Bytes())
}

func arpFrame(tb testing.TB, op uint16, srcMAC, dstMAC string, spa, tpa string, tha string) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: mustMAC(tb, srcMAC), DstMAC: mustMAC(tb, dstMAC), EthernetType: layers.EthernetTypeARP}
	arp := &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: op, SourceHwAddress: mustMAC(tb, srcMAC), SourceProtAddress: net.ParseIP(spa).To4(),
		DstHwAddress: mustMAC(tb, tha), DstProtAddress: net.ParseIP(tpa).To4(),
	}
	return serialize(tb, eth, arp)
}

// tcpSeg describes a TCP segment from a client.
type tcpSeg struct {
	srcMAC, dstMAC string
	src, dst       string
	sport, dport   uint16
	syn, ack, rst  bool
	seq, ackNum    uint32
}

// tcpFrame is the segment s, over IPv4 or IPv6 as its addresses are.
func tcpFrame(tb testing.TB, s tcpSeg) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: mustMAC(tb, s.srcMAC), DstMAC: mustMAC(tb, s.dstMAC), EthernetType: layers.EthernetTypeIPv4}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(s.sport), DstPort: layers.TCPPort(s.dport), SYN: s.syn, ACK: s.ack, RST: s.rst,
		Seq: s.seq, Ack: s.ackNum, Window: 1024}
	if src := netip.MustParseAddr(s.src); src.Is6() {
		eth.EthernetType = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP, SrcIP: src.AsSlice(), DstIP: net.ParseIP(s.dst)}
		_ = tcp.SetNetworkLayerForChecksum(ip)
		return serialize(tb, eth, ip, tcp)
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.ParseIP(s.src).To4(), DstIP: net.ParseIP(s.dst).To4()}
	_ = tcp.SetNetworkLayerForChecksum(ip)
	return serialize(tb, eth, ip, tcp)
}

// ndFrame is a neighbour solicitation (typ 135) or advertisement (136)
// about target, with a link-layer address option for ll unless ll is "".
func ndFrame(tb testing.TB, srcMAC, dstMAC, src, dst string, typ uint8, target, ll string) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: mustMAC(tb, srcMAC), DstMAC: mustMAC(tb, dstMAC), EthernetType: layers.EthernetTypeIPv6}
	ip := &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: layers.IPProtocolICMPv6, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dst)}
	icmp := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
	_ = icmp.SetNetworkLayerForChecksum(ip)
	var opts layers.ICMPv6Options
	if ll != "" {
		opt := layers.ICMPv6OptSourceAddress
		if typ == ndAdvertisement {
			opt = layers.ICMPv6OptTargetAddress
		}
		opts = append(opts, layers.ICMPv6Option{Type: opt, Data: mustMAC(tb, ll)})
	}
	if typ == ndSolicitation {
		return serialize(tb, eth, ip, icmp, &layers.ICMPv6NeighborSolicitation{TargetAddress: net.ParseIP(target), Options: opts})
	}
	return serialize(tb, eth, ip, icmp, &layers.ICMPv6NeighborAdvertisement{Flags: ndFlagOverride, TargetAddress: net.ParseIP(target), Options: opts})
}

func udpFrame(tb testing.TB, srcMAC, dstMAC, src, dst string, sport, dport uint16) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: mustMAC(tb, srcMAC), DstMAC: mustMAC(tb, dstMAC), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dst).To4()}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	return serialize(tb, eth, ip, udp, gopacket.Payload("hello"))
}

// parseFrame decodes a frame the controller sent, for assertions.
func parseFrame(tb testing.TB, data []byte) gopacket.Packet {
	tb.Helper()
	p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
	if el := p.ErrorLayer(); el != nil {
		tb.Fatalf("controller sent a bad frame: %v", el.Error())
	}
	return p
}

func layerOf[T gopacket.Layer](tb testing.TB, p gopacket.Packet) T {
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

func newTestLogger(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func icmpEcho(tb testing.TB) []byte {
	tb.Helper()
	eth := &layers.Ethernet{SrcMAC: mustMAC(tb, clientMAC), DstMAC: mustMAC(tb, vipMAC), EthernetType: layers.EthernetTypeIPv4}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: net.ParseIP(clientIP).To4(), DstIP: net.ParseIP("10.0.0.102").To4()}
	icmp := &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0), Id: 1, Seq: 1}
	return serialize(tb, eth, ip, icmp, gopacket.Payload("ping"))
}

// membersByID returns every member of s, by id.
func membersByID(s *snapshot) map[string]*memberState {
	out := map[string]*memberState{}
	for _, p := range s.pools {
		for _, m := range p.members {
			out[m.id] = m
		}
	}
	return out
}

// memberByID returns s's member id, nil when there is none.
func memberByID(s *snapshot, id string) *memberState { return membersByID(s)[id] }

// addr4 is the IPv4 address u, as tests number them.
func addr4(u uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], u)
	return netip.AddrFrom4(b)
}
