package controller

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
	"github.com/sdnlb/sdnlb/internal/peerlog"
)

// echoMisses unanswered echo requests in a row mean the switch is dead.
const echoMisses = 3

// switchConn is the OpenFlow connection to one switch: the handshake, the
// reader, the writer, xids, keepalive and requests waiting for replies.
// What to send for the switch's configuration, packet-ins, flow-removed
// messages and flow stats is its dataplane's decision, reached only
// through decide. One reader goroutine reads, decodes and handles every
// message inline (no channel hop) and owns the fields in the reader block;
// what the handshake learns is set before the connection is registered and
// read-only after; everything else is guarded as noted.
type switchConn struct {
	c           *Controller
	conn        net.Conn
	br          *bufio.Reader
	log         *slog.Logger // the handshake adds the datapath id
	remote      string
	connectedAt time.Time
	// Set by the handshake.
	dpid     uint64
	wire     wire // the OpenFlow version the switch speaks
	features model.SwitchFeatures

	xids       atomic.Uint32
	unanswered atomic.Int32              // echo requests since the switch last spoke
	heard      atomic.Int64              // when the switch last spoke, unix nanoseconds
	poll       atomic.Pointer[statsPoll] // the latest connection flow stats request

	wmu sync.Mutex // guards bw and enc
	bw  *bufio.Writer
	enc []byte
	// peer writes the lines the switch can cause, under the
	// controller's limits, counted by this connection's remote address
	peer peerlog.Writer

	// dpMu guards the decision state, dp and out, and is held only by
	// decide. dp is made before the connection is registered and replaced
	// by a promotion, inside decide.
	dpMu sync.Mutex
	dp   *dataplane.Switch
	out  *dataplane.Outbox
	// master: the dataplane decides for this switch (MASTER, or no roles).
	// Set only inside decide, so no decision is half made when it changes;
	// atomic, so the stats poll can ask without waiting for a decision.
	master atomic.Bool

	// followRole owns role changes: roleWake tells it the assignment
	// changed; asked is the role last asked for, its own once the
	// connection is registered.
	roleWake chan struct{} // buffered 1
	asked    role

	ports   portTable
	pending pendingRequests

	done      chan struct{}
	closeOnce sync.Once

	// Rows other switches' decisions ask this one for (L2Fabric:
	// passReplies); sendDelivered sends them in turn with its own. Nil
	// under the other modes.
	delivered chan *ofp.FlowMod

	// Reader-owned.
	rbuf       []byte
	pin        ofp.PacketIn
	removed    ofp.FlowRemoved
	polled     ofp.FlowStatsPart // each part of the poll's reply in turn
	assembling *statsPoll        // the poll whose reply parts are arriving
}

// flowsRequest is one SwitchFlows call waiting for its multipart reply.
func newSwitchConn(c *Controller, conn net.Conn) *switchConn {
	s := &switchConn{
		c:           c,
		conn:        conn,
		br:          bufio.NewReaderSize(conn, 64<<10),
		bw:          bufio.NewWriterSize(conn, 64<<10),
		remote:      conn.RemoteAddr().String(),
		connectedAt: c.now(),
		done:        make(chan struct{}),
		roleWake:    make(chan struct{}, 1),
		rbuf:        make([]byte, 0, 4096),
		wire:        wire13{}, // until the handshake agrees on a version
	}
	s.log = c.log.With("remote", s.remote)
	s.peer = c.peerLog.To(s.log)
	s.out = dataplane.NewOutbox(&s.xids, c.metrics)
	if c.fabric != nil {
		s.delivered = make(chan *ofp.FlowMod, deliveredQueue)
	}
	return s
}

func (s *switchConn) close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.conn.Close()
	})
}

// closed reports whether the controller closed the connection.
func (s *switchConn) closed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// serveConn runs one switch connection, which the guard admitted as a, to
// its end.
func (c *Controller) serveConn(ctx context.Context, a *admission) {
	defer c.guard.done(a)
	s := newSwitchConn(c, a.conn)
	defer s.close()
	stop := context.AfterFunc(ctx, s.close)
	defer stop()

	if !c.admitSwitch(a, s) {
		return
	}
	s.dp = dataplane.New(c.dataplaneConfig(s.dpid, s.log, s.features))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer s.close() // stops the reader and keepalive before wg.Wait
	read := make(chan error, 1)
	wg.Go(func() { read <- s.readLoop() })
	if !s.takeRole() {
		return
	}
	// Registered, the switch follows every configuration from now on; the
	// sync catches one that came between the adoption and here, and
	// followRole a role change.
	c.register(s)
	if s.master.Load() {
		s.sendLLDP()
	}
	wg.Go(s.followRole)
	if s.delivered != nil {
		wg.Go(s.sendDelivered)
	}
	s.log.Info("switch connected", "since", s.connectedAt)
	err := s.sync(c.snap.Load())
	if err == nil {
		err = s.send(ofp.BarrierRequest{})
	}
	if err == nil {
		wg.Go(s.keepalive)
		err = <-read
	}
	c.unregister(s)
	s.decide(func(dp *dataplane.Switch, _ *dataplane.Outbox) { s.retire(dp, c.snap.Load()) })
	s.pending.failAll(errClosed)
	s.logDisconnected(err)
}

// admitSwitch runs the handshake of s, which the guard admitted as a, and
// reports whether s goes on to serve the switch: not when the handshake
// failed, the guard gave a's place to a newer connection, or s claims the
// datapath id of a connected switch.
func (c *Controller) admitSwitch(a *admission, s *switchConn) bool {
	err := s.handshake()
	if c.guard.handshakeDone(a) {
		return false // the guard gave its place to a newer connection, and said so
	}
	if err != nil {
		if !errors.Is(err, errClosed) && !s.closed() {
			c.peerLog.Warn(c.now(), "handshake failed", hostOf(s.remote), "switch handshake failed", "remote", s.remote, "err", err)
		}
		return false
	}
	// A second connection with a connected switch's datapath id is the
	// switch reconnecting only if the first no longer answers: anyone
	// who reaches the port could claim the id and take the switch's flows.
	if old := c.switchConn(s.dpid); old != nil && old.alive(dpidProbeTimeout) {
		c.peerLog.Warn(c.now(), "duplicate datapath id", hostOf(s.remote), "connection refused: it claims the datapath id of a connected switch that still answers",
			"remote", s.remote, "dpid", model.FormatDPID(s.dpid), "connected_from", old.remote)
		return false
	}
	return true
}

// takeRole asks the switch for the controller's role (with Roles). A
// slave leaves the switch as it is; the switch's master asks for MASTER
// (before its first flow-mod) and adopts what the switch holds, as a
// promotion does. It reports false when the master cannot read what the
// switch holds.
func (s *switchConn) takeRole() bool {
	c := s.c
	r := c.role(s.dpid)
	if c.opts.Roles {
		s.asked = r
		if s.wire.roles() {
			s.send(r.ofp())
		}
	}
	if !r.master {
		return true
	}
	have, err := s.readState()
	if err != nil {
		if !s.closed() {
			c.peerLog.Warn(c.now(), "adoption failed", hostOf(s.remote), "cannot read the switch's state to adopt it; closing its connection", "remote", s.remote, "err", err)
		}
		return false
	}
	s.decide(func(dp *dataplane.Switch, out *dataplane.Outbox) {
		c.ledger(s.dpid).Begin(r.generation)
		dp.Adopt(c.now(), c.snap.Load(), have, out)
		s.master.Store(true)
	})
	return true
}

// logDisconnected says how the connection ended: closed by the controller,
// by malformed OpenFlow, or by the switch or the network (err).
func (s *switchConn) logDisconnected(err error) {
	switch {
	case s.closed():
		s.log.Info("switch disconnected")
	case isMalformed(err):
		s.log.Warn("malformed OpenFlow from switch; closing its connection", "err", err)
	default:
		s.log.Info("switch disconnected", "err", err)
	}
}

// handshake agrees on an OpenFlow version (negotiate) and learns what the
// switch is: its datapath id, its ports, and what its pipeline can do;
// it has the switch send the whole of each packet-in. What the switch
// holds of sdnlb's is read later, by readState, as a promotion reads it.
func (s *switchConn) handshake() error {
	s.conn.SetDeadline(time.Now().Add(handshakeTimeout))
	defer s.conn.SetDeadline(time.Time{})
	if err := s.exchangeHellos(); err != nil {
		return err
	}
	if err := s.send(ofp.FeaturesRequest{}); err != nil {
		return err
	}
	return s.readFeatures()
}

// exchangeHellos sends sdnlb's HELLO, reads the switch's and agrees on the
// version both speak (negotiate), which the connection's wire speaks from
// then on. A switch that speaks none sdnlb does is refused (errClosed).
func (s *switchConn) exchangeHellos() error {
	if err := s.send(ofp.Hello{Versions: offeredVersions}); err != nil {
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
	w, err := negotiate(h.Version, hello, len(b) == ofp.HeaderLen, &s.xids)
	if err != nil {
		s.refuseVersion(h.Version, err)
		return errClosed
	}
	s.wire, s.out.Enc = w, w
	return nil
}

// readFeatures reads the switch's answers to the features request until
// it knows what the switch's pipeline can do: on 1.3, whether it has
// select groups, which a group features request asks; on 1.0, whether it
// takes Nicira's flow-mods and flow reads, which a Nicira flow read asks
// (probeNicira). Echoes are answered meanwhile.
func (s *switchConn) readFeatures() error {
	var featuresXID uint32 // of the group features request, or the 1.0 probe
	var features10 *ofp10.FeaturesReply
	for {
		b, err := ofp.ReadMessage(s.br, s.rbuf)
		if err != nil {
			return fmt.Errorf("read handshake reply: %w", err)
		}
		s.rbuf = b
		h, _ := ofp.ParseHeader(b)
		m, err := s.wire.decode(b)
		if features10 != nil && h.XID == featuresXID && (err != nil || m.Type() == ofp.TypeError) {
			// The probe refused, whatever the error says (a 1.0 switch
			// may answer a vendor it does not know with a vendor error).
			return s.configureSwitch10(features10, false)
		}
		if err != nil {
			return fmt.Errorf("during handshake: %w", malformed(err))
		}
		switch m := m.(type) {
		case *ofp10.FeaturesReply:
			s.identify(m.DatapathID)
			features10, featuresXID = m, s.xids.Add(1)
			if err := s.probeNicira(featuresXID); err != nil {
				return err
			}
		case *ofp.FeaturesReply:
			s.identify(m.DatapathID)
			featuresXID = s.xids.Add(1)
			if err := s.sendXID(featuresXID, ofp.MultipartRequest{Body: ofp.GroupFeaturesRequest{}}); err != nil {
				return err
			}
		case *ofp.MultipartReply:
			if features10 != nil && h.XID == featuresXID {
				if m.Flags&ofp.MultipartReplyMore == 0 {
					return s.configureSwitch10(features10, true)
				}
				continue
			}
			if body, ok := m.Body.(ofp.GroupFeaturesReply); ok && h.XID == featuresXID {
				groups := body.Types&(1<<ofp.GroupTypeSelect) != 0
				return s.configureSwitch(model.SwitchFeatures{Groups: groups, Nicira: groups})
			}
		case *ofp.EchoRequest:
			s.sendXID(h.XID, ofp.EchoReply{Data: m.Data})
		case *ofp.ErrorMsg:
			if featuresXID != 0 && h.XID == featuresXID {
				return s.configureSwitch(model.SwitchFeatures{}) // no group support at all
			}
			s.peer.Warn(s.c.now(), "handshake error", hostOf(s.remote), "switch error during handshake", "type", m.ErrType.String(), "code", m.Code)
		}
	}
}

// probeNicira asks a 1.0 switch, with request xid, for the flows of a
// cookie no flow has (Open vSwitch reserves all ones) in a Nicira flow
// read: Open vSwitch answers with no flows, from its cookie index, a
// switch without Nicira's extensions with an error. The wire speaks
// Nicira from the probe on, until the switch says no.
func (s *switchConn) probeNicira(xid uint32) error {
	s.wire.(*wire10).nicira.Store(true)
	return s.sendXID(xid, ofp.MultipartRequest{Body: ofp.FlowStatsRequest{TableID: ofp.TableAll,
		OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Cookie: ^uint64(0), CookieMask: ^uint64(0)}})
}

// configureSwitch10 ends the handshake of a 1.0 switch, whose features
// reply lists its ports: its pipeline is one table, which the fabric
// cannot work with; nicira says whether it answered the Nicira probe.
func (s *switchConn) configureSwitch10(m *ofp10.FeaturesReply, nicira bool) error {
	s.wire.(*wire10).nicira.Store(nicira)
	if s.c.fabric != nil {
		return errors.New("the switch speaks OpenFlow 1.0, and --l2 fabric needs 1.3 (several tables and metadata)")
	}
	s.ports.set(m.Ports...)
	return s.configureSwitch(model.SwitchFeatures{OneTable: true, Nicira: nicira})
}

// refuseVersion answers a HELLO of version v that offered no version
// sdnlb speaks with HELLO_FAILED, saying which it does, in the lower of
// the two versions (HELLO_FAILED reads the same in every version).
func (s *switchConn) refuseVersion(v uint8, err error) {
	s.c.peerLog.Warn(s.c.now(), "no common version", hostOf(s.remote), "switch refused: it speaks no OpenFlow version sdnlb does", "remote", s.remote, "err", err)
	msg := ofp.Append(nil, s.xids.Add(1), &ofp.ErrorMsg{ErrType: ofp.ErrTypeHelloFailed, Code: ofp.HelloFailedIncompatible,
		Data: []byte(err.Error())})
	msg[0] = min(v, ofp.Version)
	s.wmu.Lock()
	s.bw.Write(msg)
	s.flushLocked()
	s.wmu.Unlock()
}

func (s *switchConn) identify(dpid uint64) {
	s.dpid = dpid
	s.log = s.log.With("dpid", model.FormatDPID(dpid), "openflow", versionName(s.wire.version()))
}

// configureSwitch ends the handshake: it records what the switch's
// pipeline can do, has it send whole packets to the controller and, on
// 1.3, asks for its ports, whose description the reader takes (a 1.0
// features reply lists them).
func (s *switchConn) configureSwitch(f model.SwitchFeatures) error {
	s.features = f
	if !f.Groups {
		s.log.Warn("switch has no select groups; its SWITCH pools are dispatched by the controller")
	}
	msgs := []ofp.Message{ofp.SetConfig{Flags: ofp.ConfigFragNormal, MissSendLen: ofp.ControllerMaxLenNoBuffer}}
	if s.wire.version() == ofp.Version {
		msgs = append(msgs, ofp.MultipartRequest{Body: ofp.PortDescRequest{}})
	}
	return s.send(msgs...)
}

// sync brings the switch from the configuration it has to snap. Calls from
// the reload loop and from the handshake may race; the older snapshot
// loses.
func (s *switchConn) sync(snap *model.Snapshot) error {
	s.decide(func(dp *dataplane.Switch, out *dataplane.Outbox) {
		if s.master.Load() {
			dp.Configure(s.c.now(), snap, out)
		}
	})
	return s.flush()
}

// decide runs f on the switch's dataplane and buffers, unflushed, what f
// decided to send. It is the only way to the dataplane: the reader, a
// configuration sync and a role change take turns under dpMu, so
// decisions reach the switch in the order they were made (a sync's purge
// always follows the setups decided before it) and a promotion never
// replaces the dataplane under a decision.
func (s *switchConn) decide(f func(dp *dataplane.Switch, out *dataplane.Outbox)) {
	s.dpMu.Lock()
	f(s.dp, s.out)
	s.tellFabric(s.out)
	s.write(s.out)
	s.dpMu.Unlock()
}

// tellFabric hands the fabric, which spans switches, the hosts a decision
// saw and the rows it asks other switches for.
func (s *switchConn) tellFabric(out *dataplane.Outbox) {
	if f := s.c.fabric; f != nil {
		for _, h := range out.Hosts {
			if h.Seed {
				f.seed(h.MAC, h.At)
			} else if f.learn(h.MAC, h.IP, h.At, h.Settled) {
				s.log.Debug("learned host", "mac", model.MACString(h.MAC), "port", h.At.Port, "settled", h.Settled)
			}
		}
		for _, t := range out.Transit {
			fm := t.FM
			f.deliver(t.DPID, &fm)
		}
	}
}

// send writes messages with fresh xids and flushes.
func (s *switchConn) send(msgs ...ofp.Message) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for _, m := range msgs {
		s.writeLocked(s.xids.Add(1), m)
	}
	return s.flushLocked()
}

func (s *switchConn) sendXID(xid uint32, m ofp.Message) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.writeLocked(xid, m)
	return s.flushLocked()
}

// writeLocked buffers one message; write errors surface at the flush, as
// bufio.Writer keeps them.
func (s *switchConn) writeLocked(xid uint32, m ofp.Message) {
	enc, err := s.wire.Append(s.enc[:0], xid, m)
	s.enc = enc
	if err != nil {
		s.peer.Warn(s.c.now(), "unsendable", s.remote, "message the switch's OpenFlow version cannot express not sent", "type", m.Type().String(), "err", err)
		return
	}
	s.bw.Write(s.enc)
}

// write buffers what the dataplane decided, unflushed: the read loop
// flushes once its input is drained.
func (s *switchConn) write(out *dataplane.Outbox) {
	if out.Unsent != nil {
		s.peer.Warn(s.c.now(), "not sent", s.remote, "message not sent", "err", out.Unsent)
		out.Unsent = nil
	}
	if !out.Empty() {
		s.wmu.Lock()
		s.bw.Write(out.Buf)
		s.wmu.Unlock()
	}
	out.Reset() // the fabric's part too, which tellFabric has handed on
}

func (s *switchConn) flushLocked() error {
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

func (s *switchConn) flush() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.flushLocked()
}

// alive reports whether the switch speaks within timeout of an echo
// request.
func (s *switchConn) alive(timeout time.Duration) bool {
	asked := time.Now().UnixNano()
	if s.send(ofp.EchoRequest{}) != nil {
		return false
	}
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && !s.closed(); {
		if s.heard.Load() >= asked {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// keepalive sends echo requests and declares the switch dead after
// echoMisses of them go unanswered. Any message from the switch counts as
// an answer: a switch busy with packet-ins is alive.
func (s *switchConn) keepalive() {
	t := time.NewTicker(s.c.opts.EchoInterval)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			if s.unanswered.Load() >= echoMisses {
				s.log.Warn("switch missed echo replies; closing its connection", "missed", echoMisses)
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

// statsPoll is a poll of the counters of sdnlb's flows: its requests,
// their xids, and when they were sent, for the time the whole reply
// takes.
type statsPoll struct {
	dataplane.Poll
	xids []uint32
	sent time.Time
	// unread counts the requests whose last reply part has not come;
	// only the read loop changes it.
	unread int
}

// answers says whether xid is that of one of the poll's requests.
func (p *statsPoll) answers(xid uint32) bool {
	return p != nil && slices.Contains(p.xids, xid)
}

// pollStats asks the switch for the counters of sdnlb's flows, as its
// dataplane plans the poll; the dataplane turns the reply into the
// members' live counters.
func (s *switchConn) pollStats() {
	var p statsPoll
	s.decide(func(dp *dataplane.Switch, _ *dataplane.Outbox) { p.Poll = dp.NextPoll() })
	for range p.Requests {
		p.xids = append(p.xids, s.xids.Add(1))
	}
	p.sent, p.unread = time.Now(), len(p.Requests)
	s.poll.Store(&p)
	for i, r := range p.Requests {
		s.sendXID(p.xids[i], ofp.MultipartRequest{Body: r})
	}
	s.send(ofp.MultipartRequest{Body: ofp.PortStatsRequest{PortNo: ofp.PortAny}})
}

// readLoop handles messages until the connection fails. Replies are
// batched: the writer is flushed only when no more input is buffered.
func (s *switchConn) readLoop() error {
	for {
		if s.br.Buffered() == 0 {
			if err := s.flush(); err != nil {
				return err
			}
		}
		// Check the version before trusting the length: a peer speaking
		// something else would otherwise hold the connection waiting for up
		// to 64 KiB that never come.
		if hd, err := s.br.Peek(1); err != nil {
			return err
		} else if hd[0] != s.wire.version() {
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
		s.heard.Store(time.Now().UnixNano())
		if err := s.receive(b); err != nil {
			s.flush() // the OpenFlow error that answers it, if any
			return err
		}
	}
}

// receive handles one message from the switch as one decision.
func (s *switchConn) receive(b []byte) (err error) {
	s.decide(func(dp *dataplane.Switch, out *dataplane.Outbox) { err = s.handle(dp, out, b) })
	return err
}

// handle dispatches one message. Only a message that cannot be parsed ends
// the connection; one of a type the codec does not know is answered with an
// OpenFlow error.
func (s *switchConn) handle(dp *dataplane.Switch, out *dataplane.Outbox, b []byte) error {
	h, err := ofp.ParseHeader(b) // the same in every version but for the type
	if err != nil {
		return malformed(err)
	}
	kind := s.wire.kind(b)
	now := s.c.now()
	dp.ExpireHeld(now)
	if !s.master.Load() && (kind == ofp.TypePacketIn || kind == ofp.TypeFlowRemoved) {
		return nil // a slave's: switches send none by default, and it answers none
	}
	switch kind {
	case ofp.TypePacketIn:
		if err := s.wire.decodeInto(b, &s.pin); err != nil {
			return s.decodeFailed(out, h, b, err)
		}
		// By the frame: a 1.0 packet-in carries no cookie, and the LLDP
		// row is the only one that sends LLDP up.
		if isLLDP(s.pin.Data) {
			s.lldpIn(now, &s.pin)
			return nil
		}
		dp.PacketIn(now, dp.Installed, &s.pin, out)
		return nil
	case ofp.TypeFlowRemoved:
		if err := s.wire.decodeInto(b, &s.removed); err != nil {
			return s.decodeFailed(out, h, b, err)
		}
		dp.FlowRemoved(now, dp.Installed, &s.removed)
		return nil
	case ofp.TypeMultipartReply:
		if p := s.poll.Load(); p.answers(h.XID) {
			return s.pollPart(dp, out, h, b, p)
		}
	}
	return s.handleControl(dp, out, h, b, now)
}

// pollPart reads one part of the reply to a request of stats poll p into
// the storage every part reuses, without the flows' actions, which the
// counters need not: a poll of many flows decodes without allocating.
// After the last part of the last reply the poll ends.
func (s *switchConn) pollPart(dp *dataplane.Switch, out *dataplane.Outbox, h ofp.Header, b []byte, p *statsPoll) error {
	if err := s.wire.decodeInto(b, &s.polled); err != nil {
		return s.decodeFailed(out, h, b, err)
	}
	s.wire.answered(h.XID, &s.polled) // a poll stands in for no delete
	if !s.master.Load() {
		return nil // demoted since: the new master counts from what it reads
	}
	s.pathCounters(s.polled.Stats)
	if p != s.assembling {
		dp.BeginPoll()
		s.assembling = p
	}
	dp.PollPart(s.c.now(), dp.Installed, s.polled.Stats, out)
	s.c.metrics.StatsPollPart(len(s.polled.Stats))
	if s.polled.Flags&ofp.MultipartReplyMore == 0 {
		if p.unread--; p.unread == 0 {
			dp.EndPoll(dp.Installed, &p.Poll)
			s.assembling = nil
			s.c.metrics.StatsPolled(time.Since(p.sent))
		}
	}
	return nil
}

// handleControl handles every other message: echoes, errors, replies to
// the controller's requests, role and port changes.
func (s *switchConn) handleControl(dp *dataplane.Switch, out *dataplane.Outbox, h ofp.Header, b []byte, now time.Time) error {
	m, err := s.wire.decode(b)
	if err != nil {
		return s.decodeFailed(out, h, b, err)
	}
	for _, fm := range s.wire.answered(h.XID, m) {
		out.Send(&fm)
	}
	switch m := m.(type) {
	case *ofp.EchoRequest:
		out.Reply(h.XID, ofp.EchoReply{Data: m.Data})
	case *ofp.ErrorMsg:
		s.handleError(now, h.XID, m)
	case *ofp.RoleReply:
		s.log.Debug("switch role", "role", m.Role, "generation", m.GenerationID)
	case *ofp.Experimenter:
		s.handleExperimenter(m)
	case *ofp.MultipartReply:
		s.handleMultipart(dp, out, h.XID, m)
	case *ofp.PortStatus:
		s.handlePortStatus(m)
	case *ofp.EchoReply, *ofp.BarrierReply, *ofp.Hello:
	default:
		s.log.Debug("ignoring message", "type", h.Type.String())
	}
	return nil
}

// handleError logs an error the switch reported, fails the request it
// answers, and reads the role assignment again when the switch says this
// controller's role is stale or a slave's.
func (s *switchConn) handleError(now time.Time, xid uint32, m *ofp.ErrorMsg) {
	s.logSwitchError(now, xid, m)
	s.pending.finish(xid, m)
	if (m.ErrType == ofp.ErrTypeRoleRequestFailed && m.Code == ofp.RoleRequestFailedStale) ||
		(m.ErrType == ofp.ErrTypeBadRequest && m.Code == ofp.BadRequestIsSlave) {
		s.c.staleRole()
	}
}

// handleExperimenter reads the role assignment again when another
// controller took MASTER (ONF role status): the switch may have a new
// master. Other experimenter messages are ignored.
func (s *switchConn) handleExperimenter(m *ofp.Experimenter) {
	if st, ok, err := ofp.RoleStatusOf(m); ok && err == nil {
		s.peer.Info(s.c.now(), "role status", s.remote, "switch changed this controller's role", "role", st.Role, "reason", st.Reason, "generation", st.GenerationID)
		s.c.staleRole()
	} else {
		s.log.Debug("ignoring experimenter message", "experimenter", m.Experimenter, "exp_type", m.ExpType)
	}
}

// handlePortStatus follows a port that was added, changed or deleted: the
// switch's ports, the links on a port that went down or away, and, as
// master, a discovery probe on a port that is there.
func (s *switchConn) handlePortStatus(m *ofp.PortStatus) {
	if m.Reason == ofp.PortReasonDelete {
		s.ports.delete(m.Desc.PortNo)
	} else {
		s.ports.set(m.Desc)
	}
	if m.Reason == ofp.PortReasonDelete || !portUp(m.Desc) {
		s.c.topo.portDown(model.PortRef{DPID: s.dpid, Port: m.Desc.PortNo})
	}
	if s.master.Load() && m.Reason != ofp.PortReasonDelete {
		s.sendLLDPOn([]ofp.Port{m.Desc})
	}
	s.c.portsChanged()
}

func (s *switchConn) handleMultipart(dp *dataplane.Switch, out *dataplane.Outbox, xid uint32, m *ofp.MultipartReply) {
	last := m.Flags&ofp.MultipartReplyMore == 0
	switch body := m.Body.(type) {
	case ofp.PortDescReply:
		s.ports.set(body.Ports...)
	case ofp.PortStatsReply:
		s.c.topo.portCounters(s.c.now(), s.dpid, body.Stats, s.ports.speed)
	case ofp.GroupDescReply:
		s.pending.gather(xid, body)
		if last {
			s.pending.finish(xid, nil)
		}
	case ofp.FlowStatsReply:
		if dp.ICMPFlowsAnswer(xid, body.Stats, out) {
			return
		}
		s.pending.gather(xid, body)
		if last {
			s.pending.finish(xid, nil)
		}
	}
}

// deliveredQueue bounds the rows waiting for a switch on behalf of the
// others: past it, rows are dropped, and what they would have let
// through goes the slow way, through the controller.
const deliveredQueue = 4096

// deliver queues a row another switch's decision asks this switch for,
// without waiting.
func (s *switchConn) deliver(fm *ofp.FlowMod) {
	select {
	case s.delivered <- fm:
	default:
	}
}

// sendDelivered sends the rows other switches' decisions asked for, a
// burst at a time, through decide, so that they take their turn with
// this switch's own decisions, until the connection closes.
func (s *switchConn) sendDelivered() {
	for {
		select {
		case <-s.done:
			return
		case fm := <-s.delivered:
			s.decide(func(_ *dataplane.Switch, out *dataplane.Outbox) {
				for {
					if s.master.Load() {
						out.Send(fm)
					}
					select {
					case fm = <-s.delivered:
						continue
					default:
					}
					return
				}
			})
			s.flush()
		}
	}
}

// pathCounters hands the topology what the fabric's path rows sent.
func (s *switchConn) pathCounters(stats []ofp.FlowStats) {
	if s.c.fabric == nil {
		return
	}
	now := s.c.now()
	for i := range stats {
		st := &stats[i]
		if st.TableID != model.TableFabric || st.Priority != model.PrioPath {
			continue
		}
		if dst, ok := st.Match.Get(ofp.OXMMetadata); ok {
			s.c.topo.pathCounters(now, s.dpid, dst.Uint(), st.ByteCount)
		}
	}
}

// request sends m and returns the request that its reply completes.
func (s *switchConn) request(m ofp.Message) (xid uint32, r *flowsRequest, err error) {
	xid = s.xids.Add(1)
	r = s.pending.add(xid)
	return xid, r, s.sendXID(xid, m)
}

// logSwitchError logs OFPT_ERRORs, one line a minute per error type: a
// switch whose table is full rejects every setup, and one line per
// rejection would bury the log. The metric counts every one.
func (s *switchConn) logSwitchError(now time.Time, xid uint32, m *ofp.ErrorMsg) {
	s.c.metrics.SwitchError(m.ErrType)
	var failed string
	if len(m.Data) >= ofp.HeaderLen {
		failed = s.wire.kind(m.Data).String()
	}
	s.peer.Warn(now, "switch error "+m.ErrType.String(), s.remote, "switch reported an error", "type", m.ErrType.String(), "code", m.Code,
		"xid", xid, "request", failed)
}

// decodeFailed handles a message that did not decode: an unsupported one
// is logged and the connection carries on, anything else malformed ends
// it. A request or an asynchronous message is answered with an OpenFlow
// error; a reply is not, as the switch expects no answer to it, but the
// request it answers fails.
func (s *switchConn) decodeFailed(out *dataplane.Outbox, h ofp.Header, b []byte, err error) error {
	kind := s.wire.kind(b)
	if isReply(kind) {
		s.wire.answered(h.XID, nil)
		s.pending.finish(h.XID, err)
	} else if e := ofp.ErrorFor(err, b); e != nil {
		out.Reply(h.XID, e)
	}
	if !errors.Is(err, ofp.ErrUnsupported) {
		return malformed(err)
	}
	s.peer.Warn(s.c.now(), "unsupported", s.remote, "unsupported OpenFlow message from switch", "type", kind.String(), "err", err)
	return nil
}

// isReply reports whether messages of type t answer the controller's: an
// error or a reply.
func isReply(t ofp.Type) bool {
	switch t {
	case ofp.TypeError, ofp.TypeEchoReply, ofp.TypeFeaturesReply, ofp.TypeGetConfigReply, ofp.TypeMultipartReply,
		ofp.TypeBarrierReply, ofp.TypeQueueGetConfigReply, ofp.TypeRoleReply, ofp.TypeGetAsyncReply:
		return true
	}
	return false
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
