package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Check is what the warm-up setup of one switch showed: the member the
// controller picked and that both NAT flows and the packet-out agree.
type Check struct {
	Switch  int      `json:"switch"`
	DPID    string   `json:"dpid"`
	Member  string   `json:"member"`   // ip:port the client→VIP flow rewrites to
	OutPort uint32   `json:"out_port"` // the switch port that flow outputs to
	Flows   []string `json:"flows"`    // client→VIP and member→client, as ovs-ofctl shows them
}

// warmUp waits for the controller to set the switch up, lets it learn
// the members and the client, resolves the VIP's MAC with ARP (IPv6:
// neighbour discovery) as a client would, then makes one setup and checks the flows it installed.
func (s *fakeSwitch) warmUp(ctx context.Context) (Check, error) {
	deadline := time.NewTimer(warmupTimeout)
	defer deadline.Stop()
	var i int
	err := s.handshaken(ctx, deadline.C)
	if err == nil {
		err = s.announce(ctx, deadline.C)
	}
	if err == nil {
		i, err = s.firstSetupMember(ctx)
	}
	// The flow-mods precede the packet-out on the wire, but give a
	// controller that sends them after it a moment.
	var flows []string
	for try := 0; err == nil; try++ {
		s.mu.Lock()
		flows, err = s.checkFlows(i)
		s.mu.Unlock()
		if err == nil || try == 50 {
			break
		}
		if serr := sleepCtx(ctx, 10*time.Millisecond); serr != nil {
			return Check{}, serr
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return Check{}, context.Cause(ctx)
		}
		return Check{}, fmt.Errorf("switch %d warm-up: %w", s.idx, err)
	}
	m := &s.run.t.members[i]
	return Check{
		Switch: s.idx, DPID: fmt.Sprintf("%016x", s.dpid),
		Member: netip.AddrPortFrom(m.ip, m.port).String(), OutPort: m.ofPort, Flows: flows,
	}, nil
}

// handshaken waits for the first barrier: the controller sends it once it
// has installed its flows.
func (s *fakeSwitch) handshaken(ctx context.Context, deadline <-chan time.Time) error {
	select {
	case <-s.barrier:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-deadline:
		return fmt.Errorf("the controller sent no barrier request (handshake incomplete) within %v", warmupTimeout)
	}
}

// announce sends a gratuitous ARP (IPv6: an unsolicited neighbour
// advertisement) from every member, then asks for the VIP's MAC from the
// client until the switch's flows or the controller answer (a remote
// controller may still be loading the VIP).
func (s *fakeSwitch) announce(ctx context.Context, deadline <-chan time.Time) error {
	t := &s.run.t
	retry := time.NewTicker(200 * time.Millisecond)
	defer retry.Stop()
	for first := true; ; first = false {
		s.mu.Lock()
		var err error
		if first {
			for i := range t.members {
				m := &t.members[i]
				frame, ferr := announceFrame(m.mac, m.ip)
				if ferr == nil {
					ferr = s.sendFrame(m.ofPort, frame)
				}
				err = errors.Join(err, ferr)
			}
		}
		err = errors.Join(err, s.askVIP())
		err = errors.Join(err, s.flush())
		s.mu.Unlock()
		if err != nil {
			return err
		}
		select {
		case <-s.vipKnown:
			return nil
		case <-retry.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("no answer to the client's question for the VIP %v's MAC within %v", t.vip, warmupTimeout)
		}
	}
}

// firstSetupMember sends setup 0 and returns the member its packet-out
// rewrites to.
func (s *fakeSwitch) firstSetupMember(ctx context.Context) (int, error) {
	t := &s.run.t
	s.mu.Lock()
	frame, err := synFrame(s.clientMAC, net.HardwareAddr(s.vipMAC[:]), s.clientIP(), t.vip, clientPortBase, t.vipPort)
	var pin *ofp.PacketIn
	if err == nil {
		pin, err = s.packetIn(clientPort, frame)
	}
	var msg []byte
	if err == nil {
		msg, err = s.run.of.appendMsg(nil, 0, pin)
	}
	if err == nil {
		s.syn = newSYNTemplate(msg, len(frame))
		s.sendSeq(s.run.now())
		err = s.flush()
	}
	s.mu.Unlock()
	if err != nil {
		return 0, err
	}
	var out setupOutcome
	select {
	case out = <-s.firstSetup:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(s.run.timeout):
		return 0, fmt.Errorf("no packet-out for the first setup within %v", s.run.timeout)
	}
	if out.err != nil {
		return 0, out.err
	}
	i := t.checkRewrite(&out.rw)
	if i < 0 {
		return 0, fmt.Errorf("the packet-out does not carry the NAT rewrite to a member: %s", describe(&out.rw))
	}
	return i, nil
}

// checkFlows finds the pair of NAT flows for setup 0 among the flow-mods
// seen, checks them against member i and returns them rendered.
func (s *fakeSwitch) checkFlows(i int) ([]string, error) {
	t := &s.run.t
	m := &t.members[i]
	client, vip, to := netip.AddrPortFrom(s.clientIP(), clientPortBase), netip.AddrPortFrom(t.vip, t.vipPort), netip.AddrPortFrom(m.ip, m.port)
	fwd := s.findFlow(client, vip)
	if fwd == nil {
		return nil, fmt.Errorf("no client→VIP flow-mod for the first setup (%v→%v)", client, vip)
	}
	rw := rewriteOf(fwd.Instructions)
	if got := t.checkRewrite(&rw); got != i {
		return nil, fmt.Errorf("client→VIP flow: want the rewrite to %v out port %d as in the packet-out, got %s", to, m.ofPort, describe(&rw))
	}
	rev := s.findFlow(to, client)
	if rev == nil {
		return nil, fmt.Errorf("no member→client flow-mod for the first setup (%v→%v)", to, client)
	}
	rw = rewriteOf(rev.Instructions)
	portOK := rw.set(oxmTCPSrc) && rw.tcpSrc == t.vipPort || !rw.set(oxmTCPSrc) && m.port == t.vipPort
	if !rw.set(oxmIPSrc(t.vip)) || rw.ipSrc != t.vip || !rw.set(oxmEthSrc) || rw.ethSrc != s.vipMAC ||
		!portOK || rw.outputs != 1 || rw.outPort != clientPort {
		return nil, fmt.Errorf("member→client flow: want the rewrite back to the VIP %v (MAC %v) out port %d, got %s",
			vip, net.HardwareAddr(s.vipMAC[:]), clientPort, describe(&rw))
	}
	return []string{fwd.String(), rev.String()}, nil
}

// findFlow returns the last flow added for the TCP connection src→dst.
func (s *fakeSwitch) findFlow(src, dst netip.AddrPort) *ofp.FlowMod {
	var found *ofp.FlowMod
	for _, fm := range s.warmFlows {
		if fm.Command == ofp.FlowAdd && matchIs(&fm.Match, src, dst) {
			found = fm
		}
	}
	return found
}

// matchIs reports whether m matches exactly the TCP connection src→dst,
// in their family: eth_type, ip_proto, the addresses and the ports.
func matchIs(m *ofp.Match, src, dst netip.AddrPort) bool {
	get := func(f ofp.OXMField) (ofp.OXM, bool) {
		o, ok := m.Get(f)
		return o, ok && !o.HasMask
	}
	addr := func(f uint16) netip.Addr {
		o, ok := get(ofp.OXMField(f))
		if !ok {
			return netip.Addr{}
		}
		a, _ := netip.AddrFromSlice(o.Value())
		return a
	}
	et, ok1 := get(ofp.OXMEthType)
	pr, ok2 := get(ofp.OXMIPProto)
	ts, ok3 := get(ofp.OXMTCPSrc)
	td, ok4 := get(ofp.OXMTCPDst)
	wantType := uint64(ofp.EthTypeIPv4)
	if src.Addr().Is6() {
		wantType = uint64(ofp.EthTypeIPv6)
	}
	return ok1 && ok2 && ok3 && ok4 && et.Uint() == wantType && pr.Uint() == uint64(ofp.IPProtoTCP) &&
		addr(oxmIPSrc(src.Addr())) == src.Addr() && addr(oxmIPDst(dst.Addr())) == dst.Addr() &&
		uint16(ts.Uint()) == src.Port() && uint16(td.Uint()) == dst.Port()
}

// rewriteOf reads the apply-actions of a flow as rewrite.
func rewriteOf(is []ofp.Instruction) rewrite {
	var rw rewrite
	for _, in := range is {
		apply, ok := in.(ofp.InstructionApplyActions)
		if !ok {
			continue
		}
		for _, a := range apply.Actions {
			switch a := a.(type) {
			case ofp.ActionOutput:
				rw.outPort = a.Port
				rw.outputs++
			case ofp.ActionSetField:
				o := a.Field
				v := o.Value()
				oxm := append([]byte{0x80, 0x00, byte(o.Field) << 1, byte(len(v))}, v...)
				if o.Class == ofp.OXMClassBasic && !o.HasMask {
					readSetField(oxm, &rw)
				}
			}
		}
	}
	return rw
}

// describe renders a rewrite for error messages.
func describe(rw *rewrite) string {
	s := ""
	if rw.set(oxmEthSrc) {
		s += fmt.Sprintf("eth_src=%v,", net.HardwareAddr(rw.ethSrc[:]))
	}
	if rw.set(oxmEthDst) {
		s += fmt.Sprintf("eth_dst=%v,", net.HardwareAddr(rw.ethDst[:]))
	}
	if rw.set(oxmIPv4Src) || rw.set(oxmIPv6Src) {
		s += fmt.Sprintf("%s_src=%v,", ipField(rw.ipSrc), rw.ipSrc)
	}
	if rw.set(oxmIPv4Dst) || rw.set(oxmIPv6Dst) {
		s += fmt.Sprintf("%s_dst=%v,", ipField(rw.ipDst), rw.ipDst)
	}
	if rw.set(oxmTCPSrc) {
		s += fmt.Sprintf("tcp_src=%d,", rw.tcpSrc)
	}
	if rw.set(oxmTCPDst) {
		s += fmt.Sprintf("tcp_dst=%d,", rw.tcpDst)
	}
	switch {
	case rw.outputs == 1:
		s += fmt.Sprintf("output:%d", rw.outPort)
	case rw.outputs > 1:
		s += fmt.Sprintf("%d outputs, the last to %d", rw.outputs, rw.outPort)
	}
	if s == "" {
		return "no rewrite"
	}
	return s
}

// ipField is how set-fields name a's family: ip (as ovs-ofctl writes
// ipv4) or ipv6.
func ipField(a netip.Addr) string {
	if a.Is4() {
		return "ip"
	}
	return "ipv6"
}
