package controller

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// echoMisses unanswered echo requests in a row mean the switch is dead.
const echoMisses = 3

// session is one switch connection. One reader goroutine reads, decodes and
// handles every message inline (packet-ins included: no channel hop) and
// owns the fields in the reader block; everything else is guarded as noted.
type session struct {
	c           *Controller
	conn        net.Conn
	br          *bufio.Reader
	log         *slog.Logger
	debug       bool
	remote      string
	connectedAt time.Time
	dpid        uint64 // set by the handshake, then read-only

	xid        atomic.Uint32
	unanswered atomic.Int32 // echo requests since the switch last spoke
	pollXID    atomic.Uint32

	wmu sync.Mutex // guards bw and enc
	bw  *bufio.Writer
	enc []byte

	cfgMu     sync.Mutex // guards installed
	installed *snapshot  // the configuration this switch has the flows of

	portsMu sync.Mutex
	ports   map[uint32]ofp.Port

	pendMu  sync.Mutex
	pending map[uint32]*flowsRequest

	heldMu sync.Mutex
	held   map[uint32][]heldSetup // setups waiting for a member's ARP reply, by member IP

	done      chan struct{}
	closeOnce sync.Once

	// Reader-owned.
	rbuf     []byte
	pin      ofp.PacketIn
	removed  ofp.FlowRemoved
	dec      *decoder
	flows    *connFlows
	po       ofp.PacketOut
	out      ofp.ActionOutput
	outActs  []ofp.Action // {&out}
	frame    []byte       // frames the controller makes (ARP, RST)
	macs     map[[6]byte]macEntry
	arps     map[uint32]arpEntry
	arpSent  map[uint32]time.Time
	active   map[uint64]int64        // connections this session counted, by vip<<32|member
	recent   *recentCache            // allocated at the first setup
	live     map[uint32]flowCounters // the last complete stats poll, by member
	poll     map[uint32]flowCounters // the poll being assembled
	pollFrom uint32                  // xid of the poll being assembled
	// OFPT_ERROR log rate limit
	errLoggedAt   int64
	errSuppressed int
}

type macEntry struct {
	port      uint32
	installed int64 // unix nanoseconds of the last L2 flow-mod
}

type arpEntry struct {
	mac  [6]byte
	port uint32
}

type flowCounters struct {
	packetsIn, bytesIn, packetsOut, bytesOut int64
}

// flowsRequest is one SwitchFlows call waiting for its multipart reply.
type flowsRequest struct {
	stats []ofp.FlowStats
	done  chan error // buffered 1
}

func newSession(c *Controller, conn net.Conn) *session {
	s := &session{
		c:           c,
		conn:        conn,
		br:          bufio.NewReaderSize(conn, 64<<10),
		bw:          bufio.NewWriterSize(conn, 64<<10),
		remote:      conn.RemoteAddr().String(),
		connectedAt: c.now(),
		installed:   emptySnapshot,
		ports:       map[uint32]ofp.Port{},
		pending:     map[uint32]*flowsRequest{},
		held:        map[uint32][]heldSetup{},
		done:        make(chan struct{}),
		rbuf:        make([]byte, 0, 4096),
		dec:         newDecoder(),
		flows:       newConnFlows(),
		frame:       make([]byte, 0, 128),
		macs:        map[[6]byte]macEntry{},
		arps:        map[uint32]arpEntry{},
		arpSent:     map[uint32]time.Time{},
		active:      map[uint64]int64{},
		live:        map[uint32]flowCounters{},
		poll:        map[uint32]flowCounters{},
	}
	s.outActs = []ofp.Action{&s.out}
	s.log = c.log.With("remote", s.remote)
	return s
}

func (s *session) close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.conn.Close()
	})
}

// closed reports whether the controller closed the session.
func (s *session) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *session) nextXID() uint32 { return s.xid.Add(1) }

// serveConn runs one switch connection to its end.
func (c *Controller) serveConn(ctx context.Context, conn net.Conn) {
	s := newSession(c, conn)
	defer s.close()
	stop := context.AfterFunc(ctx, s.close)
	defer stop()

	if err := s.handshake(); err != nil {
		if !errors.Is(err, errClosed) && !s.closed() {
			s.log.Warn("switch handshake failed", "err", err)
		}
		return
	}
	c.register(s)
	s.log.Info("switch connected", "since", s.connectedAt)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.close() // stops keepalive before wg.Wait
	err := s.sync(c.snap.Load())
	if err == nil {
		err = s.send(ofp.BarrierRequest{})
	}
	if err == nil {
		wg.Go(s.keepalive)
		err = s.readLoop()
	}
	c.unregister(s)
	s.settle()
	switch {
	case s.closed():
		s.log.Info("switch disconnected")
	case isMalformed(err):
		s.log.Warn("malformed OpenFlow from switch; closing its session", "err", err)
	default:
		s.log.Info("switch disconnected", "err", err)
	}
}

// handshake says hello, learns the datapath id and resets the switch to
// sdnlb's base flows. The VIP flows follow in sync.
func (s *session) handshake() error {
	s.conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer s.conn.SetDeadline(time.Time{})
	if err := s.send(ofp.Hello{Versions: []uint8{ofp.Version}}); err != nil {
		return err
	}
	b, err := ofp.ReadMessage(s.br, s.rbuf)
	if err != nil {
		return fmt.Errorf("read hello: %w", err)
	}
	h, m, err := ofp.Decode(b)
	hello, ok := m.(*ofp.Hello)
	if err != nil || !ok {
		return fmt.Errorf("expected HELLO, got %s: %w", h.Type, malformed(err))
	}
	if !hello.Supports(ofp.Version) {
		s.log.Error("switch does not speak OpenFlow 1.3; refusing it", "versions", hello.Versions)
		s.send(&ofp.ErrorMsg{ErrType: ofp.ErrTypeHelloFailed, Code: ofp.HelloFailedIncompatible,
			Data: []byte("sdnlb speaks OpenFlow 1.3 only")})
		return errClosed
	}
	if err := s.send(ofp.FeaturesRequest{}); err != nil {
		return err
	}
	for {
		b, err := ofp.ReadMessage(s.br, s.rbuf)
		if err != nil {
			return fmt.Errorf("read features reply: %w", err)
		}
		s.rbuf = b
		h, m, err := ofp.Decode(b)
		if err != nil {
			return fmt.Errorf("during handshake: %w", malformed(err))
		}
		switch m := m.(type) {
		case *ofp.FeaturesReply:
			s.dpid = m.DatapathID
			s.log = s.log.With("dpid", formatDPID(s.dpid))
			s.debug = s.log.Enabled(context.Background(), slog.LevelDebug)
			msgs := []ofp.Message{
				ofp.SetConfig{Flags: ofp.ConfigFragNormal, MissSendLen: ofp.ControllerMaxLenNoBuffer},
				ofp.MultipartRequest{Body: ofp.PortDescRequest{}},
				deleteOurFlows(),
			}
			for _, fm := range baseFlows() {
				msgs = append(msgs, fm)
			}
			return s.send(msgs...)
		case *ofp.EchoRequest:
			s.sendXID(h.XID, ofp.EchoReply{Data: m.Data})
		case *ofp.ErrorMsg:
			s.log.Warn("switch error during handshake", "type", m.ErrType.String(), "code", m.Code)
		}
	}
}

// sync brings the switch from the configuration it has to snap. Calls from
// the reload loop and from the handshake may race; the older snapshot
// loses.
func (s *session) sync(snap *snapshot) error {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	if snap.gen <= s.installed.gen {
		return nil
	}
	mods, announce := reconcile(s.installed, snap)
	s.installed = snap
	if len(mods) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for i := range mods {
		s.writeLocked(s.nextXID(), &mods[i])
	}
	for _, v := range announce {
		// Gratuitous ARP: clients with a stale entry for the address learn
		// the VIP's MAC. (The reader's frame buffer is not ours to use.)
		garp := appendARP(nil, arpRequest, broadcastMAC, v.mac, v.ip, [6]byte{}, v.ip)
		s.writeLocked(s.nextXID(), &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: ofp.PortController,
			Actions: []ofp.Action{ofp.ActionOutput{Port: ofp.PortFlood}}, Data: garp})
	}
	s.log.Debug("switch synced to configuration", "gen", snap.gen, "flow_mods", len(mods), "announced", len(announce))
	return s.flushLocked()
}

// send writes messages with fresh xids and flushes.
func (s *session) send(msgs ...ofp.Message) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, m := range msgs {
		s.writeLocked(s.nextXID(), m)
	}
	return s.flushLocked()
}

func (s *session) sendXID(xid uint32, m ofp.Message) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.writeLocked(xid, m)
	return s.flushLocked()
}

// writeLocked buffers one message; errors surface at the flush, as
// bufio.Writer keeps them.
func (s *session) writeLocked(xid uint32, m ofp.Message) {
	s.enc = ofp.Append(s.enc[:0], xid, m)
	s.bw.Write(s.enc)
}

func (s *session) flushLocked() error {
	if s.bw.Buffered() == 0 {
		return nil
	}
	s.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := s.bw.Flush(); err != nil {
		s.close() // a switch that does not read is as good as gone
		return fmt.Errorf("write to switch: %w", err)
	}
	return nil
}

func (s *session) flush() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.flushLocked()
}

// keepalive sends echo requests and declares the switch dead after
// echoMisses of them go unanswered. Any message from the switch counts as
// an answer: a switch busy with packet-ins is alive. It also gives up on
// setups that waited too long for a member's ARP reply.
func (s *session) keepalive() {
	t := time.NewTicker(s.c.opts.EchoInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.expireHeld(s.c.now())
			if s.unanswered.Load() >= echoMisses {
				s.log.Warn("switch missed echo replies; closing its session", "missed", echoMisses)
				s.close()
				return
			}
			s.unanswered.Add(1)
			if s.send(ofp.EchoRequest{}) != nil {
				return
			}
		}
	}
}

// readLoop handles messages until the connection fails. Replies are
// batched: the writer is flushed only when no more input is buffered.
func (s *session) readLoop() error {
	for {
		if s.br.Buffered() == 0 {
			if err := s.flush(); err != nil {
				return err
			}
		}
		// Check the version before trusting the length: a peer speaking
		// something else would otherwise hold the session waiting for up
		// to 64 KiB that never come.
		if hd, err := s.br.Peek(1); err != nil {
			return err
		} else if hd[0] != ofp.Version {
			return malformed(ofp.ErrBadVersion)
		}
		b, err := ofp.ReadMessage(s.br, s.rbuf)
		if err != nil {
			if errors.Is(err, ofp.ErrBadLength) {
				return malformed(err)
			}
			return err
		}
		s.rbuf = b
		s.unanswered.Store(0)
		if err := s.handle(b); err != nil {
			return err
		}
	}
}

// handle dispatches one message. Only a message that cannot be parsed ends
// the session; one of a type the codec does not know is answered with an
// OpenFlow error.
func (s *session) handle(b []byte) error {
	h, err := ofp.ParseHeader(b)
	if err != nil {
		return malformed(err)
	}
	switch h.Type {
	case ofp.TypePacketIn:
		if _, err := ofp.DecodeInto(b, &s.pin); err != nil {
			return s.decodeFailed(b, err)
		}
		s.handlePacketIn()
		return nil
	case ofp.TypeFlowRemoved:
		if _, err := ofp.DecodeInto(b, &s.removed); err != nil {
			return s.decodeFailed(b, err)
		}
		s.handleFlowRemoved()
		return nil
	}
	_, m, err := ofp.Decode(b)
	if err != nil {
		return s.decodeFailed(b, err)
	}
	switch m := m.(type) {
	case *ofp.EchoRequest:
		s.wmu.Lock()
		s.writeLocked(h.XID, ofp.EchoReply{Data: m.Data})
		s.wmu.Unlock()
	case *ofp.ErrorMsg:
		s.logSwitchError(h.XID, m)
		s.finishRequest(h.XID, nil, m)
	case *ofp.MultipartReply:
		s.handleMultipart(h.XID, m)
	case *ofp.PortStatus:
		s.portsMu.Lock()
		if m.Reason == ofp.PortReasonDelete {
			delete(s.ports, m.Desc.PortNo)
		} else {
			s.ports[m.Desc.PortNo] = m.Desc
		}
		s.portsMu.Unlock()
	case *ofp.EchoReply, *ofp.BarrierReply, *ofp.Hello:
	default:
		if s.debug {
			s.log.Debug("ignoring message", "type", h.Type.String())
		}
	}
	return nil
}

// logSwitchError logs OFPT_ERRORs, at most one a second: a switch whose
// table is full rejects every setup, and one line per rejection would
// bury the log.
func (s *session) logSwitchError(xid uint32, m *ofp.ErrorMsg) {
	now := s.c.now().UnixNano()
	if now-s.errLoggedAt < int64(time.Second) {
		s.errSuppressed++
		return
	}
	var failed string
	if h, err := ofp.ParseHeader(m.Data); err == nil {
		failed = h.Type.String()
	}
	s.log.Warn("switch reported an error", "type", m.ErrType.String(), "code", m.Code, "xid", xid,
		"request", failed, "suppressed_since_last", s.errSuppressed)
	s.errLoggedAt, s.errSuppressed = now, 0
}

// decodeFailed answers an unsupported message with an OpenFlow error and
// carries on; anything else malformed ends the session.
func (s *session) decodeFailed(b []byte, err error) error {
	if e := ofp.ErrorFor(err, b); e != nil {
		h, _ := ofp.ParseHeader(b)
		s.sendXID(h.XID, e)
	}
	if errors.Is(err, ofp.ErrUnsupported) {
		s.log.Warn("unsupported OpenFlow message from switch", "err", err)
		return nil
	}
	return malformed(err)
}

// malformedError marks errors that mean the switch sent bad OpenFlow.
type malformedError struct{ err error }

func (e malformedError) Error() string { return "malformed OpenFlow: " + e.err.Error() }
func (e malformedError) Unwrap() error { return e.err }

func malformed(err error) error {
	if err == nil {
		return malformedError{errors.New("unexpected message")}
	}
	return malformedError{err}
}

func isMalformed(err error) bool {
	var m malformedError
	return errors.As(err, &m)
}

// formatDPID writes a datapath id as Floodlight does: 8 colon-separated
// hex bytes.
func formatDPID(dpid uint64) string {
	const hex = "0123456789abcdef"
	var b [23]byte
	for i := range 8 {
		v := byte(dpid >> (56 - 8*i))
		if i > 0 {
			b[3*i-1] = ':'
		}
		b[3*i], b[3*i+1] = hex[v>>4], hex[v&0xf]
	}
	return string(b[:])
}

// parseDPID reads formatDPID's form, or plain hex, as a datapath id.
func parseDPID(s string) (uint64, bool) {
	var v uint64
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c == ':':
			continue
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		digits++
		if digits > 16 {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, digits > 0
}
