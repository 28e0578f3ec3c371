package controller

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

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

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return pipeAddr("pipe") }

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }

func (a pipeAddr) String() string { return string(a) }

// harness runs a controller on a pipeListener, or on TCP at addr, until
// the test ends.
type harness struct {
	c     *Controller
	src   *fakeSource
	ln    *pipeListener
	addr  string
	log   *testnet.SyncBuffer
	clock *testClock
	// groups: the switches connect saying they have select groups.
	groups bool
	// ports10: the ports of the next 1.0 switch's features reply.
	ports10 []ofp.Port
}

// testClock is real time plus an offset the test moves forward.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *testClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

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
	h.log, h.clock = &testnet.SyncBuffer{}, &testClock{}
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
		opts.L2 = model.L2Learn // the tests teach members through learned flows
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
		case <-time.After(testnet.WaitFor):
			tb.Errorf("Serve did not return after cancel")
		}
	})
}

// received is one message the controller sent to a fake switch.
type received struct {
	h ofp.Header
	m ofp.Message
	// nicira: the message is one of Nicira's 1.0 extensions (NXT_FLOW_MOD,
	// NXST_FLOW).
	nicira bool
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
	// nicira: a 1.0 switch that takes Nicira's extensions, as Open
	// vSwitch does; one without refuses them with BAD_VENDOR.
	nicira bool
}

// dial connects a fake switch that has said nothing yet.
func (h *harness) dial(tb testing.TB) *fakeSwitch {
	tb.Helper()
	server, client := net.Pipe()
	sw := newFakeSwitch(tb, client)
	select {
	case h.ln.conns <- server:
	case <-time.After(testnet.WaitFor):
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
			nicira := b[0] == ofp10.Version && (ofp10.Type(b[1]) == ofp10.TypeVendor ||
				ofp10.Type(b[1]) == ofp10.TypeStatsRequest && len(b) > 9 && b[8] == 0xff && b[9] == 0xff)
			sw.msgs <- received{hd, m, nicira}
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

// connect10 is connect for a switch that speaks only OpenFlow 1.0, and
// none of Nicira's extensions.
func (h *harness) connect10(tb testing.TB, dpid uint64, ports ...ofp.Port) (*fakeSwitch, []received) {
	tb.Helper()
	sw := h.dial(tb)
	sw.v10 = true
	h.ports10 = ports
	return sw, h.handshake(tb, sw, dpid)
}

// connectNicira10 is connect10 for a 1.0 switch that takes Nicira's
// extensions, as Open vSwitch does.
func (h *harness) connectNicira10(tb testing.TB, dpid uint64) (*fakeSwitch, []received) {
	tb.Helper()
	sw := h.dial(tb)
	sw.v10, sw.nicira = true, true
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
	if sw.refusesNicira(r) {
		return true
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

// refusesNicira answers r, a Nicira extension a 1.0 switch without them
// got (the controller's probe), with BAD_VENDOR, and reports whether it
// did.
func (sw *fakeSwitch) refusesNicira(r received) bool {
	if !r.nicira || sw.nicira {
		return false
	}
	sw.send(r.h.XID, ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadExperimenter})
	return true
}

func (sw *fakeSwitch) send(xid uint32, m ofp.Message) {
	sw.tb.Helper()
	if !sw.v10 {
		sw.sendRaw(ofp.Append(nil, xid, m))
		return
	}
	encode := ofp10.Append
	if sw.nicira {
		encode = ofp10.AppendNicira // its flow stats replies answer NXST_FLOW
	}
	b, err := encode(nil, xid, m)
	if err != nil {
		sw.tb.Fatalf("fake 1.0 switch cannot send %s: %v", m.Type(), err)
	}
	sw.sendRaw(b)
}

func (sw *fakeSwitch) sendRaw(b []byte) {
	sw.tb.Helper()
	sw.wmu.Lock()
	defer sw.wmu.Unlock()
	sw.conn.SetWriteDeadline(time.Now().Add(testnet.WaitFor))
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
	case <-time.After(testnet.WaitFor):
		sw.tb.Fatalf("no message from the controller within %v", testnet.WaitFor)
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
	case <-time.After(testnet.WaitFor):
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
