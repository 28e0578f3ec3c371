package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

var (
	errBadActions     = errors.New("malformed action list")
	errShortPacketOut = errors.New("short packet-out")
)

// clientPort is the switch port the clients sit behind; member i sits
// behind port memberPort0+i.
const (
	clientPort  uint32 = 1
	memberPort0 uint32 = 2
)

// pending is one setup in flight: seq is the setup number plus one (zero
// marks a free slot) and sent the send time in ns since the run started,
// or expired once it timed out, so that a late answer is told apart from
// one for no setup at all.
type pending struct {
	seq  uint64
	sent int64
}

const expired = -1

// inFlight reports whether setup n is in this slot and unanswered.
func (p *pending) inFlight(n uint64) bool { return p.seq == n+1 && p.sent != expired }

// busy reports whether any setup in this slot is unanswered.
func (p *pending) busy() bool { return p.seq != 0 && p.sent != expired }

// swStats are one switch's counters for the measured interval.
type swStats struct {
	setups     uint64 // completed before the end of the interval
	drained    uint64 // completed after it, while draining
	timeouts   uint64
	refused    uint64 // answered with a TCP RST
	badRewrite uint64 // packet-out without the expected NAT rewrite
	unmatched  uint64 // packet-out for no setup sent, or a second one
	late       uint64 // packet-out after its setup timed out
	flowAdds   uint64
	flowOthers uint64 // modifies and deletes
	perMember  []uint64
}

// setupOutcome tells the warm-up how its single setup ended.
type setupOutcome struct {
	rw  rewrite
	err error
}

// fakeSwitch plays one OpenFlow switch of the run's version. One reader
// goroutine handles every message from the controller; the run's driver
// goroutines send setups. Both hold mu while they touch the state or the
// writer.
type fakeSwitch struct {
	idx       int
	dpid      uint64
	run       *run
	conn      net.Conn
	r         *bufio.Reader
	rbuf      []byte
	base      uint32 // first client number (see clientBase)
	clientMAC net.HardwareAddr

	closed atomic.Bool // set by the run before it closes conn

	mu        sync.Mutex
	w         *bufio.Writer
	out       []byte
	encodeErr error // the first message the version could not carry

	barrier     chan struct{} // closed when the first barrier is answered
	vipKnown    chan struct{} // closed when the VIP's ARP reply arrived
	firstSetup  chan setupOutcome
	vipMAC      [6]byte
	recordFlows bool           // before measuring: decode every flow-mod
	warmFlows   []*ofp.FlowMod // flow-mods seen while recordFlows
	firstErr    *ofp.ErrorMsg  // first OFPT_ERROR received
	ofpErrors   uint64         // OFPT_ERROR received over the whole run
	syn         *synTemplate

	// table holds the controller's flows as the flow-mods seen while
	// recordFlows left them; it gives packet-ins their reason and cookie.
	// Past the warm-up it no longer changes: decoding every flow-mod
	// would cost the setup path its allocation-free handling.
	table          oftable.Table
	tableRejects   uint64 // flow-mods the table model refused
	firstReject    error
	notPunted      uint64 // packet-ins not sent: a flow took the frame elsewhere, or the table model could not read it
	firstNotPunted error

	ring        []pending
	mask        uint64
	next        uint64 // next setup number
	oldest      uint64 // no setup below it is in flight
	outstanding int
	measureFrom uint64 // setups from here on are measured
	measuring   bool
	stats       swStats
	hist        histogram
}

// dpidOf is the datapath id of the switch with index idx.
func dpidOf(idx int) uint64 { return 0x5db0_0000_0000_0000 | uint64(idx+1) }

func newFakeSwitch(r *run, idx int, conn net.Conn, ringSize int) *fakeSwitch {
	return &fakeSwitch{
		idx:         idx,
		dpid:        dpidOf(idx),
		run:         r,
		conn:        conn,
		r:           bufio.NewReaderSize(conn, 256<<10),
		rbuf:        make([]byte, 0, 4096),
		base:        clientBase(idx),
		clientMAC:   net.HardwareAddr{0x02, 0x5d, 0xb0, 0xc1, byte(idx >> 8), byte(idx)},
		w:           bufio.NewWriterSize(conn, 256<<10),
		out:         make([]byte, 0, 4096),
		barrier:     make(chan struct{}),
		vipKnown:    make(chan struct{}),
		firstSetup:  make(chan setupOutcome, 1),
		recordFlows: true,
		ring:        make([]pending, ringSize),
		mask:        uint64(ringSize - 1),
		stats:       swStats{perMember: make([]uint64, len(r.t.members))},
	}
}

// readLoop handles the controller's messages until the connection ends.
// It returns nil when the run closed the switch.
func (s *fakeSwitch) readLoop() error {
	for {
		msg, err := ofp.ReadMessage(s.r, s.rbuf)
		if err != nil {
			if s.closed.Load() {
				return nil
			}
			return fmt.Errorf("switch %d: read: %w", s.idx, err)
		}
		s.rbuf = msg[:0]
		s.mu.Lock()
		err = s.handle(msg)
		if err == nil && s.r.Buffered() == 0 {
			err = s.flush()
		}
		s.mu.Unlock()
		if err != nil {
			return fmt.Errorf("switch %d: %w", s.idx, err)
		}
	}
}

func (s *fakeSwitch) close() {
	s.closed.Store(true)
	s.conn.Close()
}

// send encodes m into the write buffer; flush sends it. An error, in
// encoding as in writing, sticks and surfaces at flush.
func (s *fakeSwitch) send(xid uint32, m ofp.Message) {
	var err error
	if s.out, err = s.run.of.appendMsg(s.out[:0], xid, m); err != nil {
		if s.encodeErr == nil {
			s.encodeErr = fmt.Errorf("encode %s: %w", m.Type(), err)
		}
		return
	}
	s.w.Write(s.out) // a write error sticks in w
}

func (s *fakeSwitch) flush() error {
	if s.encodeErr != nil {
		return s.encodeErr
	}
	if s.w.Buffered() == 0 {
		return nil
	}
	s.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// writeTimeout bounds a write to a controller that stopped reading.
const writeTimeout = 5 * time.Second

// handle answers one message as a switch would, and tracks setups.
func (s *fakeSwitch) handle(msg []byte) error {
	h, err := ofp.ParseHeader(msg)
	if err != nil {
		return err
	}
	of := s.run.of
	if h.Version != of.version() && h.Type != ofp.TypeHello {
		return fmt.Errorf("controller sent version %#x, want OpenFlow %s", h.Version, of.name())
	}
	switch of.msgType(uint8(h.Type)) {
	case ofp.TypePacketOut:
		return s.handlePacketOut(msg)
	case ofp.TypeFlowMod:
		return s.handleFlowMod(msg)
	case ofp.TypeEchoRequest:
		s.send(h.XID, &ofp.EchoReply{Data: msg[ofp.HeaderLen:]})
	case ofp.TypeHello:
		// Read as 1.3 whatever the switch speaks: a controller offering
		// several versions lists them in a 1.3 version bitmap.
		_, m, err := ofp.Decode(msg)
		hello, ok := m.(*ofp.Hello)
		if err != nil || !ok {
			return fmt.Errorf("hello: %v", err)
		}
		if !hello.Supports(of.version()) {
			s.send(h.XID, &ofp.ErrorMsg{ErrType: ofp.ErrTypeHelloFailed, Code: ofp.HelloFailedIncompatible})
			return fmt.Errorf("controller does not offer OpenFlow %s (versions %v)", of.name(), hello.Versions)
		}
	case ofp.TypeFeaturesRequest:
		s.send(h.XID, of.featuresReply(ofp.FeaturesReply{
			DatapathID: s.dpid, NBuffers: 0, NTables: 254,
			Capabilities: ofp.CapFlowStats | ofp.CapPortStats,
		}, s.ports()))
	case ofp.TypeGetConfigRequest:
		s.send(h.XID, &ofp.GetConfigReply{MissSendLen: ofp.ControllerMaxLenNoBuffer})
	case ofp.TypeBarrierRequest:
		s.send(h.XID, &ofp.BarrierReply{})
		closeOnce(s.barrier)
	case ofp.TypeMultipartRequest:
		return s.handleMultipart(h, msg)
	case ofp.TypeRoleRequest:
		m, err := of.decode(msg)
		req, ok := m.(*ofp.RoleRequest)
		if err != nil || !ok {
			return fmt.Errorf("role request: %v", err)
		}
		s.send(h.XID, &ofp.RoleReply{Role: req.Role, GenerationID: req.GenerationID})
	case ofp.TypeError:
		m, err := of.decode(msg)
		e, ok := m.(*ofp.ErrorMsg)
		if err != nil || !ok {
			return fmt.Errorf("error message: %v", err)
		}
		s.ofpErrors++
		if s.firstErr == nil {
			s.firstErr = e
		}
	case ofp.TypeEchoReply, ofp.TypeSetConfig, ofp.TypeSetAsync, ofp.TypePortMod, ofp.TypeTableMod:
		// Accepted; nothing in them changes what the bench does.
	default:
		s.send(h.XID, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadType, Data: head(msg)})
	}
	return nil
}

// head is what an OFPT_ERROR echoes of the failed request.
func head(msg []byte) []byte { return msg[:min(len(msg), 64)] }

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

func (s *fakeSwitch) handleMultipart(h ofp.Header, msg []byte) error {
	m, err := s.run.of.decode(msg)
	req, ok := m.(*ofp.MultipartRequest)
	if err != nil || !ok {
		s.send(h.XID, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadMultipart, Data: head(msg)})
		return nil
	}
	var body ofp.MultipartReplyBody
	switch r := req.Body.(type) {
	case ofp.PortDescRequest:
		body = ofp.PortDescReply{Ports: s.ports()}
	case ofp.FlowStatsRequest:
		stats, err := s.run.of.flowStats(r, &s.table)
		if err != nil {
			return err
		}
		s.sendFlowStats(h.XID, stats)
		return nil
	case ofp.AggregateStatsRequest:
		body = ofp.AggregateStatsReply{}
	case ofp.PortStatsRequest:
		body = ofp.PortStatsReply{}
	case ofp.DescRequest:
		body = ofp.DescReply{
			MfrDesc: "sdnlb", HWDesc: "sdnlb-bench fake switch", SWDesc: "sdnlb-bench",
			SerialNum: "none", DPDesc: fmt.Sprintf("bench switch %d", s.idx),
		}
	default:
		s.send(h.XID, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadMultipart, Data: head(msg)})
		return nil
	}
	s.send(h.XID, &ofp.MultipartReply{Body: body})
	return nil
}

// flowStatsPerReply keeps a flow stats reply within an OpenFlow message's
// 64 KiB: an entry is about 100 bytes and its actions.
const flowStatsPerReply = 64

// sendFlowStats answers a flow stats request with stats, over several
// replies flagged REPLY_MORE but the last when they are many.
func (s *fakeSwitch) sendFlowStats(xid uint32, stats []ofp.FlowStats) {
	for len(stats) > flowStatsPerReply {
		s.send(xid, &ofp.MultipartReply{Flags: ofp.MultipartReplyMore, Body: ofp.FlowStatsReply{Stats: stats[:flowStatsPerReply]}})
		stats = stats[flowStatsPerReply:]
	}
	s.send(xid, &ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: stats}})
}

// portFeature10GbFD is OFPPF_10GB_FD, the same bit in 1.0 and 1.3; 1.0
// has no speed fields and gives a port's speed by such bits only.
const portFeature10GbFD = 1 << 6

// ports describes the client port, one port per member, the links of a
// topology run and LOCAL.
func (s *fakeSwitch) ports() []ofp.Port {
	up := func(no uint32, name string, mac [6]byte) ofp.Port {
		return ofp.Port{
			PortNo: no, HWAddr: mac, Name: name, State: ofp.PortStateLive,
			Curr: portFeature10GbFD, Supported: portFeature10GbFD,
			CurrSpeed: 10_000_000, MaxSpeed: 10_000_000,
		}
	}
	ps := []ofp.Port{up(clientPort, "client", [6]byte{0x02, 0x5d, 0xb0, 0xfe, byte(s.idx), 1})}
	for i, m := range s.run.t.members {
		ps = append(ps, up(m.ofPort, fmt.Sprintf("member%d", i+1), [6]byte{0x02, 0x5d, 0xb0, 0xfe, byte(s.idx), byte(2 + i)}))
	}
	if f := s.run.fabric; f != nil {
		for k := range f.wiring.linkPorts(s.idx) {
			ps = append(ps, up(linkPort0+uint32(k), fmt.Sprintf("link%d", k+1), [6]byte{0x02, 0x5d, 0xb1, byte(s.idx >> 8), byte(s.idx), byte(k)}))
		}
	}
	return append(ps, up(ofp.PortLocal, fmt.Sprintf("br%d", s.idx), [6]byte{0x02, 0x5d, 0xb0, 0xfe, byte(s.idx), 0}))
}

func (s *fakeSwitch) handleFlowMod(msg []byte) error {
	command, err := s.run.of.flowModCommand(msg)
	if err != nil {
		return err
	}
	if s.measuring {
		if command == ofp.FlowAdd {
			s.stats.flowAdds++
		} else {
			s.stats.flowOthers++
		}
	}
	if !s.recordFlows {
		return nil
	}
	m, err := s.run.of.decode(msg)
	fm, ok := m.(*ofp.FlowMod)
	if err != nil || !ok {
		return fmt.Errorf("flow-mod: %v", err)
	}
	s.warmFlows = append(s.warmFlows, fm)
	// A flow-mod the model refuses (a field or instruction it does not
	// model) leaves the table as it was; the run counts it, as the
	// packet-ins that follow may carry another reason or cookie than a
	// real switch would give them.
	if _, err := s.table.Apply(fm); err != nil {
		s.tableRejects++
		if s.firstReject == nil {
			s.firstReject = fmt.Errorf("flow-mod %s: %w", fm, err)
		}
	}
	return nil
}

// handlePacketOut completes setups, answers ARP and neighbour
// solicitations the controller sends to the hosts behind this switch,
// learns the VIP's MAC, and in a topology run sends LLDP out of a link
// port to the switch at its far end.
func (s *fakeSwitch) handlePacketOut(msg []byte) error {
	rw, frame, err := s.run.of.parsePacketOut(msg)
	if err != nil {
		return fmt.Errorf("packet-out: %w", err)
	}
	t := &s.run.t
	if tcp, ok := parseTCP(frame); ok {
		switch {
		case tcp.dst == t.vip && tcp.dport == t.vipPort:
			if n, ok := s.seq(tcp.src, tcp.sport); ok {
				s.complete(n, &rw, false)
			}
		case tcp.src == t.vip && tcp.sport == t.vipPort && tcp.flags&tcpFlagRST != 0:
			if n, ok := s.seq(tcp.dst, tcp.dport); ok {
				s.complete(n, &rw, true)
			}
		}
		return nil
	}
	if nb, ok := parseNeighbour(frame); ok {
		return s.handleNeighbour(nb)
	}
	if f := s.run.fabric; f != nil && rw.outputs == 1 && isLLDP(frame) {
		f.carry(s.idx, rw.outPort, frame)
	}
	return nil
}

// seq is the number of the setup from client ip and port, if they are one
// of this switch's.
func (s *fakeSwitch) seq(ip netip.Addr, port uint16) (uint64, bool) {
	v, ok := clientNum(ip)
	if !ok {
		return 0, false
	}
	return clientSeq(s.base, v, port)
}

// arrive handles frame coming in on link port as a switch does: its flows
// punt the controller's LLDP (a CONTROLLER action in table 0: reason
// OFPR_ACTION, the flow's cookie); a frame they would not punt is counted.
func (s *fakeSwitch) arrive(port uint32, frame []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pin, err := s.packetIn(port, frame)
	if err != nil { // errNotPunted, or a frame the table model cannot read: no packet-in either way
		s.countNotPunted(err)
		return
	}
	s.send(0, pin)
	if s.flush() != nil {
		s.conn.Close() // the reader reports it
	}
}

// handleNeighbour learns the VIP's MAC from the answer to the client's
// question, and answers ARP and neighbour solicitations for the hosts
// behind this switch.
func (s *fakeSwitch) handleNeighbour(nb neighbour) error {
	t := &s.run.t
	if !nb.request {
		if nb.about == t.vip && nb.peer == s.clientIP() {
			s.vipMAC = nb.mac
			closeOnce(s.vipKnown)
		}
		return nil
	}
	if nb.peer == nb.about {
		return nil // gratuitous, e.g. a member's own announcement flooded back
	}
	if i := t.memberIndex(nb.about); i >= 0 {
		m := &t.members[i]
		return s.reply(m.ofPort, m.mac, m.ip, nb)
	}
	if v, ok := clientNum(nb.about); ok && nb.about.Is4() == t.vip.Is4() {
		if _, ok := clientSeq(s.base, v, clientPortBase); ok {
			return s.reply(clientPort, [6]byte(s.clientMAC), nb.about, nb)
		}
	}
	return nil
}

// clientIP is the address of the switch's first client, the one that
// asks for the VIP's MAC.
func (s *fakeSwitch) clientIP() netip.Addr { return s.run.t.client(s.base) }

// askVIP asks for the VIP's MAC as the client does. A switch whose flows
// answer for the VIP sends the answer straight back, and the question
// also goes to the controller if the flows send it there.
func (s *fakeSwitch) askVIP() error {
	frame, err := askFrame([6]byte(s.clientMAC), s.clientIP(), s.run.t.vip)
	if err != nil {
		return err
	}
	reply, answered := answer(&s.table, clientPort, frame)
	if answered {
		if err := s.handleNeighbour(reply); err != nil {
			return err
		}
	}
	pin, err := s.packetIn(clientPort, frame)
	switch {
	case answered && errors.Is(err, errNotPunted):
		return nil
	case err != nil:
		return err
	}
	s.send(0, pin)
	return nil
}

// reply answers the controller's question req for ip, a host behind port
// with MAC mac. An answer the switch's flows would not send to the
// controller is not sent and is counted: a real switch would not send it.
func (s *fakeSwitch) reply(port uint32, mac [6]byte, ip netip.Addr, req neighbour) error {
	frame, err := replyFrame(mac, ip, req)
	if err == nil {
		err = s.sendFrame(port, frame)
	}
	if errors.Is(err, errNotPunted) {
		s.countNotPunted(err)
		return nil
	}
	return err
}

// countNotPunted counts a frame for the controller that the switch's flows
// keep from it.
func (s *fakeSwitch) countNotPunted(err error) {
	s.notPunted++
	if s.firstNotPunted == nil {
		s.firstNotPunted = err
	}
}

// sendFrame sends frame, arriving on port, as a packet-in, or returns an
// error wrapping errNotPunted if the switch's flows keep it from the
// controller.
func (s *fakeSwitch) sendFrame(port uint32, frame []byte) error {
	pin, err := s.packetIn(port, frame)
	if err != nil {
		return err
	}
	s.send(0, pin)
	return nil
}

// packetIn wraps frame as the switch's table would punt it, or returns an
// error wrapping errNotPunted if the table sends it elsewhere.
func (s *fakeSwitch) packetIn(port uint32, frame []byte) (*ofp.PacketIn, error) {
	f, err := punt(&s.table, port, frame)
	if err != nil {
		return nil, err
	}
	reason, cookie := s.run.of.puntedBy(f)
	return &ofp.PacketIn{
		BufferID: ofp.NoBuffer, TotalLen: uint16(len(frame)), Reason: reason, Cookie: cookie,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(port)}}, Data: frame,
	}, nil
}

// complete resolves setup n on its packet-out (or RST when refused).
func (s *fakeSwitch) complete(n uint64, rw *rewrite, refused bool) {
	slot := &s.ring[n&s.mask]
	if !slot.inFlight(n) {
		late := slot.seq == n+1
		if late {
			slot.seq = 0
		}
		switch {
		case !s.measuring || n < s.measureFrom:
		case late:
			s.stats.late++ // already counted as a timeout
		default:
			s.stats.unmatched++
		}
		return
	}
	now := s.run.now()
	slot.seq = 0
	s.outstanding--
	if n == 0 {
		var err error
		if refused {
			err = errors.New("the controller refused the setup with a TCP RST")
		}
		s.firstSetup <- setupOutcome{rw: *rw, err: err}
	}
	measured := s.measuring && n >= s.measureFrom
	if measured {
		switch member := s.run.t.checkRewrite(rw); {
		case refused:
			s.stats.refused++
		case member < 0:
			s.stats.badRewrite++
		default:
			s.stats.perMember[member]++
			if end := s.run.stopAt.Load(); end != 0 && now > end {
				s.stats.drained++
			} else {
				s.stats.setups++
			}
			s.hist.record(time.Duration(now - slot.sent))
		}
		s.run.resolved(1)
	}
	if s.run.window > 0 {
		s.sendSetup(now)
	}
}

// sendSetup sends the next setup if the run still sends; the caller flushes.
func (s *fakeSwitch) sendSetup(now int64) bool {
	if !s.run.sending.Load() || s.next >= maxSetupsPerSW || !s.run.takeBudget() {
		return false
	}
	s.sendSeq(now)
	return true
}

// sendSeq sends setup s.next unconditionally.
func (s *fakeSwitch) sendSeq(now int64) {
	n := s.next
	s.next++
	slot := &s.ring[n&s.mask]
	if slot.busy() { // a whole ring later and still unanswered
		s.expire(slot)
	}
	slot.seq, slot.sent = n+1, now
	s.outstanding++
	s.syn.set(clientAddr(s.base, n))
	s.w.Write(s.syn.msg)
}

// expire counts the setup in slot as timed out.
func (s *fakeSwitch) expire(slot *pending) {
	n := slot.seq - 1
	slot.sent = expired
	s.outstanding--
	if n == 0 {
		s.firstSetup <- setupOutcome{err: fmt.Errorf("no packet-out for the setup within %v", s.run.timeout)}
	}
	if s.measuring && n >= s.measureFrom {
		s.stats.timeouts++
		s.run.resolved(1)
	}
}

// sweep expires the setups older than the timeout; in throughput mode each
// is replaced so the window stays full.
func (s *fakeSwitch) sweep(now int64) {
	limit := now - int64(s.run.timeout)
	for s.oldest < s.next {
		slot := &s.ring[s.oldest&s.mask]
		if !slot.inFlight(s.oldest) {
			s.oldest++
			continue
		}
		if slot.sent > limit {
			break
		}
		s.expire(slot)
		s.oldest++
	}
	if s.run.window > 0 {
		for s.outstanding < s.run.window && s.sendSetup(now) {
		}
	}
}
