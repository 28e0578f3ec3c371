package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

// faults makes the fake controller misbehave on every setup whose number
// n (read back from the client port) has n%every == every-1.
type faults struct {
	drop      int // no answer at all
	refuse    int // a TCP RST instead of the NAT path
	badPort   int // packet-out to a port that is not the member's
	duplicate int // the packet-out twice
	sendError bool
	noReverse bool // no member→client flow
	// A flow-mod in the handshake the fake switch's table model refuses.
	unmodelled bool
	// A drop flow in the handshake that takes every SYN to the VIP.
	dropSYNs bool
}

func hit(every int, n uint64) bool { return every > 0 && n%uint64(every) == uint64(every-1) }

// lastDuplicate keeps duplicates away from the end of a 600-setup run,
// where one could arrive after the tool stopped counting.
const lastDuplicate = 580

func (f faults) duplicates(n uint64) bool { return hit(f.duplicate, n) && n <= lastDuplicate }

// fakeController is a minimal, scriptable stand-in for the sdnlb
// controller: handshake, ARP proxy for the VIP, members learned from ARP,
// round-robin NAT setups, and the faults above. Like sdnlb it offers
// OpenFlow 1.0 and 1.3 in its hello; it then speaks the switches'
// version, of. It lets the tests know exactly what the tool must count.
type fakeController struct {
	of     dialect
	t      target
	vipMAC [6]byte
	f      faults

	mu     sync.Mutex
	conns  []net.Conn
	encErr error // the first message it could not encode
	wg     sync.WaitGroup
}

func startFakeController(tb testing.TB, of dialect, t target, f faults) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	c := &fakeController{of: of, t: t, vipMAC: [6]byte{0x02, 0xaa, 0, 0, 0, 1}, f: f}
	c.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.conns = append(c.conns, conn)
			c.mu.Unlock()
			c.wg.Go(func() { c.serve(conn) })
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		c.mu.Lock()
		for _, conn := range c.conns {
			conn.Close()
		}
		c.mu.Unlock()
		c.wg.Wait()
		if c.encErr != nil {
			tb.Errorf("fake controller: %v", c.encErr)
		}
	})
	return ln.Addr().String()
}

type learnedHost struct {
	mac  [6]byte
	port uint32
}

func (c *fakeController) serve(conn net.Conn) {
	r, w := bufio.NewReader(conn), bufio.NewWriter(conn)
	var out []byte
	send := func(m ofp.Message) {
		var err error
		if out, err = c.of.appendMsg(out[:0], 1, m); err != nil {
			c.mu.Lock()
			c.encErr = cmp.Or(c.encErr, fmt.Errorf("encode %v: %w", m.Type(), err))
			c.mu.Unlock()
			return
		}
		w.Write(out)
	}
	w.Write(ofp.Append(nil, 0, &ofp.Hello{Versions: []uint8{ofp10.Version, ofp.Version}}))
	send(&ofp.FeaturesRequest{})
	if c.f.unmodelled {
		send(&ofp.FlowMod{Command: ofp.FlowAdd, Cookie: 0xbad, Priority: 600, BufferID: ofp.NoBuffer,
			OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchVLANVID(5), ofp.MatchVLANPCP(3)}}})
	}
	if c.f.dropSYNs {
		send(&ofp.FlowMod{Command: ofp.FlowAdd, Cookie: 0xd0, Priority: 900, BufferID: ofp.NoBuffer,
			OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{matchEthType(c.t.vip), ofp.MatchIPProto(6), matchIPDst(c.t.vip)}}})
	}
	send(&ofp.BarrierRequest{})
	if c.f.sendError {
		send(&ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadType})
	}
	if w.Flush() != nil {
		return
	}
	hosts := map[netip.Addr]learnedHost{}
	setups := 0
	var buf []byte
	for {
		msg, err := ofp.ReadMessage(r, buf)
		if err != nil {
			return
		}
		buf = msg[:0]
		if m, err := c.of.decode(msg); err == nil {
			if pin, ok := m.(*ofp.PacketIn); ok {
				port, _ := pin.Match.InPort()
				c.packetIn(send, hosts, &setups, port, pin.Data)
			}
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}

func (c *fakeController) packetIn(send func(ofp.Message), hosts map[netip.Addr]learnedHost, setups *int, port uint32, frame []byte) {
	if nb, ok := parseNeighbour(frame); ok {
		switch {
		case !nb.request:
			hosts[nb.about] = learnedHost{nb.mac, port}
		case nb.about == c.t.vip:
			hosts[nb.peer] = learnedHost{nb.mac, port}
			reply, _ := replyFrame(c.vipMAC, c.t.vip, nb)
			send(&ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: port,
				Actions: []ofp.Action{ofp.ActionOutput{Port: ofp.PortInPort}}, Data: reply})
		default:
			hosts[nb.peer] = learnedHost{nb.mac, port}
		}
		return
	}
	tcp, ok := parseTCP(frame)
	if !ok || tcp.dst != c.t.vip {
		return
	}
	n := uint64(tcp.sport - clientPortBase) // one client address per test switch
	switch {
	case hit(c.f.drop, n):
		return
	case hit(c.f.refuse, n):
		send(&ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: ofp.PortController,
			Actions: []ofp.Action{ofp.ActionOutput{Port: port}}, Data: rstFrame(c.vipMAC, tcp)})
		return
	}
	m := c.t.members[*setups%len(c.t.members)]
	*setups++
	h, ok := hosts[m.ip]
	if !ok {
		return // never told where the member is: the setup times out
	}
	m.mac, m.ofPort = h.mac, h.port
	fwd, rev := natFlows(tcp.src, tcp.sport, c.vipMAC, &c.t, &m)
	send(fwd)
	if !c.f.noReverse {
		send(rev)
	}
	actions := slices.Clone(fwd.Instructions[0].(ofp.InstructionApplyActions).Actions)
	if hit(c.f.badPort, n) {
		actions[len(actions)-1] = ofp.ActionOutput{Port: 99}
	}
	po := &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: port, Actions: actions, Data: frame}
	send(po)
	if c.f.duplicates(n) {
		send(po)
	}
}

// rstFrame is the VIP's TCP RST answering the SYN t.
func rstFrame(vipMAC [6]byte, t tcpInfo) []byte {
	eth := &layers.Ethernet{SrcMAC: vipMAC[:], DstMAC: testClientMAC, EthernetType: ethType(t.dst)}
	ip := ipLayer(t.dst, t.src, layers.IPProtocolTCP, 64)
	tcp := &layers.TCP{SrcPort: layers.TCPPort(t.dport), DstPort: layers.TCPPort(t.sport), RST: true, ACK: true, Ack: 1}
	tcp.SetNetworkLayerForChecksum(ip)
	b, _ := serialize(eth, ip.(gopacket.SerializableLayer), tcp)
	return b
}

// mustConfig parses flags as the command line would.
func mustConfig(tb testing.TB, args ...string) *config {
	tb.Helper()
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		tb.Fatalf("parseFlags(%q): %v", args, err)
	}
	return cfg
}

func TestExecute_FakeController(t *testing.T) {
	tests := []struct {
		name string
		f    faults
	}{
		{"OK", faults{}},
		{"Drops", faults{drop: 10}},
		{"Refusals", faults{refuse: 7}},
		{"BadRewrites", faults{badPort: 5}},
		{"Duplicates", faults{duplicate: 4}},
		{"OFPError", faults{sendError: true}},
		{"TableReject", faults{unmodelled: true}},
		{"Everything", faults{drop: 13, refuse: 11, badPort: 9, duplicate: 6}},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode.name(), func(t *testing.T) {
				t.Parallel()
				testExecuteFakeController(t, mode, tt.f)
			})
		}
	}
}

func testExecuteFakeController(t *testing.T, mode mode, f faults) {
	const count = 600
	of := mode.of
	// The window holds every dropped setup at once, so the run
	// waits for one timeout only; the timeout is long enough for a
	// loaded machine under -race.
	cfg := mustConfig(t, append(mode.args(), "-switches", "1", "-window", "64", "-count", strconv.Itoa(count),
		"-warmup", "0", "-timeout", "2s", "-duration", "20s")...)
	addr := startFakeController(t, of, newTarget(cfg.vip, cfg.firstMember, cfg.members), f)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := execute(ctx, cfg, addr, false, nil)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}

	// Setup 0 is the warm-up; the measured ones are 1..count. The
	// fake picks members round robin over the setups it completes.
	var want Errors
	perMember := make([]uint64, cfg.members)
	completed := 1 // the warm-up took the first member
	for n := uint64(1); n <= count; n++ {
		switch {
		case hit(f.drop, n):
			want.Timeouts++
		case hit(f.refuse, n):
			want.Refused++
		case hit(f.badPort, n):
			want.BadRewrite++
			completed++
		default:
			perMember[completed%cfg.members]++
			completed++
		}
		if f.duplicates(n) && !hit(f.drop, n) && !hit(f.refuse, n) {
			want.Unmatched++
		}
	}
	if f.sendError {
		want.OFPErrors = 1
	}
	if f.unmodelled {
		want.TableRejects = 1
	}
	want.Total = want.OFPErrors + want.Timeouts + want.Refused + want.BadRewrite + want.Unmatched + want.TableRejects + want.NotPunted
	wantSetups := uint64(count) - want.Timeouts - want.Refused - want.BadRewrite

	got := res.Errors
	got.FirstOFP, got.FirstTableReject = "", ""
	if got != want {
		t.Errorf("errors = %+v, want %+v", got, want)
	}
	if f.sendError && res.Errors.FirstOFP == "" {
		t.Error("the OFPT_ERROR received is not described")
	}
	if f.unmodelled && !strings.Contains(res.Errors.FirstTableReject, "vlan_pcp") {
		t.Errorf("first table reject %q, want it to name vlan_pcp", res.Errors.FirstTableReject)
	}
	if res.Setups != wantSetups || res.Drained != 0 {
		t.Errorf("setups = %d (+%d drained), want %d", res.Setups, res.Drained, wantSetups)
	}
	for i, s := range res.PerMember {
		if s.Setups != perMember[i] {
			t.Errorf("member %s got %d setups, want %d", s.Member, s.Setups, perMember[i])
		}
	}
	if res.Latency.Samples != wantSetups {
		t.Errorf("latency samples = %d, want %d", res.Latency.Samples, wantSetups)
	}
	if res.FlowAdds != 2*(wantSetups+want.BadRewrite) {
		t.Errorf("flow adds = %d, want 2 per answered setup: %d", res.FlowAdds, 2*(wantSetups+want.BadRewrite))
	}
	first := netip.AddrPortFrom(mode.family.firstMember, 80).String()
	if len(res.Checks) != 1 || res.Checks[0].Member != first || res.Checks[0].OutPort != memberPort0 {
		t.Errorf("warm-up checks = %+v, want setup 0 on member %s out port %d", res.Checks, first, memberPort0)
	}
	var table strings.Builder
	js, err := json.Marshal(res)
	if err == nil {
		err = writeTable(&table, res)
	}
	fam := mode.family.name
	if err != nil || !strings.Contains(table.String(), "OpenFlow "+of.name()+", "+fam+",") ||
		!strings.Contains(string(js), `"openflow":"`+of.name()+`"`) || !strings.Contains(string(js), `"family":"`+fam+`"`) {
		t.Errorf("the report (%v) does not name OpenFlow %s and %s:\n%s\n%s", err, of.name(), fam, table.String(), js)
	}
}

func TestExecute_WarmupFails(t *testing.T) {
	tests := []struct {
		name    string
		f       faults
		wantErr string
	}{
		{"NoReverseFlow", faults{noReverse: true}, "no member→client flow-mod"},
		{"Refused", faults{refuse: 1}, "refused the setup"},
		{"NoAnswer", faults{drop: 1}, "no packet-out for the first setup"},
		{"SYNNotPunted", faults{dropSYNs: true}, "do not send it to the controller"},
	}
	for _, tt := range tests {
		for _, mode := range modes {
			t.Run(tt.name+"/"+mode.name(), func(t *testing.T) {
				of := mode.of
				cfg := mustConfig(t, append(mode.args(), "-switches", "3", "-timeout", "300ms")...)
				addr := startFakeController(t, of, newTarget(cfg.vip, cfg.firstMember, cfg.members), tt.f)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				res, err := execute(ctx, cfg, addr, false, nil)
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("execute = %+v, %v; want an error about %q", res, err, tt.wantErr)
				}
			})
		}
	}
}

func TestExecute_Duration(t *testing.T) {
	cfg := mustConfig(t, "-switches", "2", "-window", "8", "-duration", "300ms", "-warmup", "100ms", "-timeout", "3s")
	addr := startFakeController(t, dialect13{}, newTarget(cfg.vip, cfg.firstMember, cfg.members), faults{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := execute(ctx, cfg, addr, false, nil)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if res.Errors.Total != 0 {
		t.Errorf("errors = %+v, want none", res.Errors)
	}
	if res.DurationSeconds < 0.3 || res.DurationSeconds > 2 {
		t.Errorf("measured for %.3f s, want 0.3 s and a little", res.DurationSeconds)
	}
	// At the end at most a window per switch is in flight; those complete
	// while draining and are not counted in the rate.
	done := res.Setups + res.Drained
	if res.Setups == 0 || res.Drained > uint64(cfg.switches*cfg.window) {
		t.Errorf("setups = %d, drained = %d; want some, and at most %d drained", res.Setups, res.Drained, cfg.switches*cfg.window)
	}
	if got := float64(res.Setups) / res.DurationSeconds; got != res.SetupsPerSecond {
		t.Errorf("setups/s = %g, want %g", res.SetupsPerSecond, got)
	}
	var sum uint64
	for _, s := range res.PerMember {
		sum += s.Setups
	}
	// The warm-up load drained before measuring: every flow-mod counted
	// belongs to a measured setup.
	if sum != done || res.Latency.Samples != done || res.FlowAdds != 2*done {
		t.Errorf("per-member sum %d, latency samples %d, flow adds %d; want %d, %d, %d", sum, res.Latency.Samples, res.FlowAdds, done, done, 2*done)
	}
}

func TestExecute_LatencyMode(t *testing.T) {
	cfg := mustConfig(t, "-switches", "2", "-rate", "4000", "-duration", "250ms", "-warmup", "50ms", "-timeout", "3s")
	addr := startFakeController(t, dialect13{}, newTarget(cfg.vip, cfg.firstMember, cfg.members), faults{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := execute(ctx, cfg, addr, false, nil)
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	// Pacing never runs ahead of the schedule: at most rate × duration
	// setups, plus one burst per switch.
	limit := uint64(cfg.rate*res.DurationSeconds) + 2*maxBurst
	if res.Setups == 0 || res.Setups+res.Drained > limit {
		t.Errorf("setups = %d + %d drained, want 1..%d", res.Setups, res.Drained, limit)
	}
	if res.Errors.Total != 0 {
		t.Errorf("errors = %+v, want none", res.Errors)
	}
	if res.Mode != "latency" || res.Window != 0 || res.Rate != 4000 {
		t.Errorf("mode %q window %d rate %g, want latency, 0, 4000", res.Mode, res.Window, res.Rate)
	}
	if res.Latency.Samples != res.Setups+res.Drained || res.Latency.P50 <= 0 || res.Latency.P50 > res.Latency.Max {
		t.Errorf("latency = %+v for %d setups", res.Latency, res.Setups+res.Drained)
	}
}

// TestBenchmark_Embedded runs the tool against the real controller in
// this process, as `go run ./cmd/sdnlb-bench` does by default, in every
// version and family.
func TestBenchmark_Embedded(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name(), func(t *testing.T) {
			// IPv6: a few hundred setups.
			cfg := mustConfig(t, append(mode.args(), "-switches", "2", "-duration", "1s", "-warmup", "100ms", "-window", "32", "-timeout", "3s", "-count", "400")...)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res, err := benchmark(ctx, cfg, io.Discard)
			if err != nil {
				t.Fatalf("benchmark: %v", err)
			}
			if res.Setups == 0 {
				t.Error("no setup completed")
			}
			if res.Errors.Total != 0 {
				t.Errorf("errors = %+v, want none", res.Errors)
			}
			if res.Family != mode.family.name {
				t.Errorf("family %q, want %q", res.Family, mode.family.name)
			}
			var sum uint64
			for _, s := range res.PerMember {
				sum += s.Setups
			}
			if sum != res.Setups+res.Drained {
				t.Errorf("per-member setups sum to %d, want %d", sum, res.Setups+res.Drained)
			}
			if res.FlowAddsPerSetup < 2 {
				t.Errorf("%.2f flow adds per setup, want the pair of NAT flows for each", res.FlowAddsPerSetup)
			}
			if res.AllocsPerSetup == nil || res.BytesPerSetup == nil {
				t.Error("no allocation figures for the embedded controller")
			}
			// Each switch's warm-up setup was checked flow by flow: the
			// client→VIP flow rewrites to a member's IP and port and outputs to
			// the port that member announced itself on.
			want := map[string]uint32{}
			ip, field, vipField := mode.family.firstMember, "ip", "ip"
			if ip.Is6() {
				field, vipField = "ipv6", "ipv6"
			}
			for i := range 3 {
				want[netip.AddrPortFrom(ip, 80).String()] = memberPort0 + uint32(i)
				ip = ip.Next()
			}
			if len(res.Checks) != 2 {
				t.Fatalf("%d warm-up checks, want 2", len(res.Checks))
			}
			vip := mode.family.vip.Addr().String()
			for _, c := range res.Checks {
				port, ok := want[c.Member]
				if !ok || c.OutPort != port {
					t.Errorf("switch %d: NAT to %s out port %d, want one of the members on its port %v", c.Switch, c.Member, c.OutPort, want)
					continue
				}
				// The flows as the controller sent them, read independently of
				// the tool's own check.
				member := netip.MustParseAddrPort(c.Member).Addr().String()
				client := clientIP(mode.family.vip.Addr(), clientBase(c.Switch)).String()
				src, dst := "nw_src=", "nw_dst="
				if mode.family.vip.Addr().Is6() {
					src, dst = "ipv6_src=", "ipv6_dst="
				}
				wantFwd := []string{src + client, dst + vip, "tp_dst=80", "set_field:" + member + "->" + field + "_dst", "output:" + strconv.Itoa(int(port))}
				wantRev := []string{src + member, dst + client, "set_field:" + vip + "->" + vipField + "_src", "output:" + strconv.Itoa(int(clientPort))}
				if len(c.Flows) != 2 {
					t.Fatalf("switch %d: flows %q, want the forward and reverse NAT flow", c.Switch, c.Flows)
				}
				for i, parts := range [][]string{wantFwd, wantRev} {
					for _, p := range parts {
						if !strings.Contains(c.Flows[i], p) {
							t.Errorf("switch %d: flow %q lacks %q", c.Switch, c.Flows[i], p)
						}
					}
				}
			}
		})
	}
}

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
	}{
		{"Defaults", nil, false},
		{"Remote", []string{"-controller", "127.0.0.1:6653"}, false},
		{"Latency", []string{"-rate", "1000"}, false},
		{"ErrBothModes", []string{"-embedded", "-controller", "127.0.0.1:6653"}, true},
		{"ErrNoController", []string{"-embedded=false"}, true},
		{"ErrTooManySwitches", []string{"-switches", "1025"}, true},
		{"ErrNoSwitch", []string{"-switches", "0"}, true},
		{"ErrWindow", []string{"-window", "0"}, true},
		{"ErrInFlight", []string{"-switches", "1024", "-window", "512"}, true},
		{"ManySwitchesInLatencyMode", []string{"-switches", "1024", "-window", "512", "-rate", "1000"}, false},
		{"ErrLongDuration", []string{"-duration", "1h"}, true},
		{"ErrZeroDuration", []string{"-duration", "0s"}, true},
		{"ErrNegativeRate", []string{"-rate", "-5"}, true},
		{"ErrCount", []string{"-count", "1000000000"}, true},
		{"ErrTimeout", []string{"-timeout", "0s"}, true},
		{"ErrVIPIsMember", []string{"-vip", "10.99.0.2:80"}, true},
		{"ErrVIPNoPort", []string{"-vip", "10.99.0.100"}, true},
		{"ErrMembers", []string{"-members", "0"}, true},
		{"ErrArgs", []string{"extra"}, true},
		{"Ring", []string{"-topology", "ring", "-switches", "4"}, false},
		{"LeafSpine", []string{"-topology", "leaf-spine", "-spines", "63"}, false},
		{"ErrTopology", []string{"-topology", "mesh"}, true},
		{"ErrRingOf3", []string{"-topology", "ring", "-switches", "3"}, true},
		{"ErrAllSpines", []string{"-topology", "leaf-spine", "-switches", "4", "-spines", "4"}, true},
		{"ErrNoSpine", []string{"-topology", "leaf-spine", "-spines", "0"}, true},
		{"OpenFlow10", []string{"-openflow", "1.0"}, false},
		{"OpenFlow13", []string{"-openflow", "1.3"}, false},
		{"ErrOpenFlow", []string{"-openflow", "1.1"}, true},
		{"IPv6", ipv6.args, false},
		{"ErrIPv6VIPIPv4Member", []string{"-vip", "[2001:db8:99::100]:80"}, true},
		{"ErrIPv4VIPIPv6Member", []string{"-first-member", "2001:db8:99::1"}, true},
		{"ErrIPv6OpenFlow10", append([]string{"-openflow", "1.0"}, ipv6.args...), true},
		{"ErrIPv6VIPIsMember", []string{"-vip", "[2001:db8:99::2]:80", "-first-member", "2001:db8:99::1"}, true},
		{"ErrMappedVIP", []string{"-vip", "[::ffff:10.99.0.100]:80"}, true},
		{"ErrZonedVIP", []string{"-vip", "[fe80::1%eth0]:80", "-first-member", "fe80::2"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseFlags(tt.args, io.Discard)
			if (err != nil) != tt.wantErr {
				t.Errorf("parseFlags(%q) = %v, want error: %t", tt.args, err, tt.wantErr)
			}
		})
	}
	if of := mustConfig(t).of; of.name() != "1.3" {
		t.Errorf("the switches speak OpenFlow %s by default, want 1.3", of.name())
	}
}

// A topology run has 64 switches unless told otherwise.
func TestParseFlags_TopologySwitches(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int
	}{
		{nil, 16},
		{[]string{"-topology", "ring"}, 64},
		{[]string{"-topology", "ring", "-switches", "8"}, 8},
	} {
		if cfg := mustConfig(t, tt.args...); cfg.switches != tt.want {
			t.Errorf("parseFlags(%q): %d switches, want %d", tt.args, cfg.switches, tt.want)
		}
	}
}

// TestBenchmark_EmbeddedTopology runs a ring of 4 switches against the
// real controller in this process: it discovers every link, keeps them
// through the load, and the memory figures are filled in.
func TestBenchmark_EmbeddedTopology(t *testing.T) {
	cfg := mustConfig(t, "-topology", "ring", "-switches", "4", "-duration", "300ms", "-warmup", "0", "-window", "8", "-timeout", "3s")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := benchmark(ctx, cfg, io.Discard)
	if err != nil {
		t.Fatalf("benchmark: %v", err)
	}
	if res.Setups == 0 || res.Errors.Total != 0 {
		t.Errorf("%d setups, errors %+v; want some and none", res.Setups, res.Errors)
	}
	top := res.Topology
	if top == nil {
		t.Fatal("no topology figures")
	}
	if top.Kind != topoRing || top.Links != 12 || top.LinksAfterLoad != 12 || top.DiscoverySeconds <= 0 || top.LLDPCarried < 12 {
		t.Errorf("topology %+v, want all 12 links of a ring of 4 discovered and kept, carried by LLDP", top)
	}
	for _, m := range []Memory{top.MemoryDiscovered, top.MemoryAfterLoad} {
		if m.RSSBytes == 0 || m.HeapBytes == 0 || m.Of == "" {
			t.Errorf("memory %+v, want the process' RSS and heap", m)
		}
	}
	var out strings.Builder
	if err := writeTable(&out, res); err != nil || !strings.Contains(out.String(), "all 12 links (both directions) shown") {
		t.Errorf("the table (%v) does not report the discovery:\n%s", err, out.String())
	}
}

func TestRingSize(t *testing.T) {
	tests := []struct {
		name          string
		window        int
		ratePerSwitch float64
		timeout       time.Duration
		switches      int
		want          int
	}{
		{"Minimum", 64, 0, time.Second, 16, 1024},
		{"TwiceTheWindow", 1000, 0, time.Second, 16, 2048},
		{"RateTimesTimeout", 0, 10000, time.Second, 2, 32768},
		{"CappedOverAllSwitches", 0, 1e6, 30 * time.Second, 1024, 4096},
		{"CappedButAtLeastTheMinimum", 0, 1e6, 30 * time.Second, 8192, 1024},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ringSize(tt.window, tt.ratePerSwitch, tt.timeout, tt.switches); got != tt.want {
				t.Errorf("ringSize = %d, want %d", got, tt.want)
			}
		})
	}
}
