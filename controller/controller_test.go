package controller

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

func TestController_ServeOnTCP(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := New(newFakeSource(testnet.Config(nil)), Options{Registerer: reg, StatsInterval: time.Hour, EchoInterval: time.Hour})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Serve(ctx, ln) }()
	deadline := time.Now().Add(testnet.WaitFor)
	for c.Addr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("controller never listened")
		}
		time.Sleep(time.Millisecond)
	}
	conn, err := net.Dial("tcp", c.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sw := &fakeSwitch{tb: t, conn: conn}
	br := bufio.NewReader(conn)
	benchHandshake(t, sw, br)
	waitSwitches(t, c, func(sws []*sdnlb.Switch) bool {
		return len(sws) == 1 && strings.HasPrefix(sws[0].Address, "127.0.0.1:")
	})
	if got := gauge(t, reg, "sdnlb_controller_switches"); got != 1 {
		t.Errorf("switches gauge %v, want 1", got)
	}

	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
	case <-time.After(testnet.WaitFor):
		t.Fatal("Serve did not return after cancel")
	}
	// Shutting down closes the switch sessions.
	conn.SetReadDeadline(time.Now().Add(testnet.WaitFor))
	for {
		if _, err := ofp.ReadMessage(br, nil); err != nil {
			break
		}
	}
}

func TestController_Metrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := startController(t, testnet.Config(func(c *sdnlb.Config) { c.VIPs[0].ConnectionLimit = 1 }), Options{Registerer: reg})
	sw, _ := h.connect(t, 1)
	teachMember(t, sw, 1)
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	nextSetup(t, sw)
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40001))
	sw.nextOf(ofp.TypePacketOut)
	tests := []struct {
		name, metric, label string
		want                float64
	}{
		{"Setups", "sdnlb_controller_setups_total", "", 1},
		{"LBPacketIns", "sdnlb_controller_packet_ins_total", "lb", 2},
		{"ARPPacketIns", "sdnlb_controller_packet_ins_total", "arp", 1},
		{"LimitRefusals", "sdnlb_controller_refusals_total", "limit", 1},
		{"NoMemberRefusals", "sdnlb_controller_refusals_total", "no_member", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := counter(t, reg, tt.metric, tt.label); got != tt.want {
				t.Errorf("%s{%s} = %v, want %v", tt.metric, tt.label, got, tt.want)
			}
		})
	}
	t.Run("SecondRegistrationIsLoggedNotFatal", func(t *testing.T) {
		log := &testnet.SyncBuffer{}
		New(newFakeSource(nil), Options{Registerer: reg, Logger: testnet.NewTestLogger(log)})
		if !strings.Contains(log.String(), "metrics not registered") {
			t.Errorf("no warning in %q", log.String())
		}
	})
}

// counter reads a counter, or the child with label value label.
func counter(tb testing.TB, reg *prometheus.Registry, name, label string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label) {
				return m.GetCounter().GetValue()
			}
		}
	}
	tb.Fatalf("no metric %s{%s}", name, label)
	return 0
}

func gauge(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	tb.Fatalf("no gauge %s", name)
	return 0
}

func TestController_ReloadFollowsFeed(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	sw, _ := h.connect(t, 1)
	h.src.set(testnet.Config(func(c *sdnlb.Config) {
		c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.102", Protocol: sdnlb.ProtocolICMP, PoolID: "p2", AdminStateUp: true})
		c.Pools = append(c.Pools, &sdnlb.Pool{ID: "p2", VIPID: "v2", LBMethod: sdnlb.LeastConnections, AdminStateUp: true})
		c.Members = append(c.Members, &sdnlb.Member{ID: "m9", PoolID: "p2", Address: "10.0.0.9", Weight: 1, AdminStateUp: true})
	}))
	// The new VIP is announced...
	po := sw.nextOf(ofp.TypePacketOut).m.(*ofp.PacketOut)
	if got := testnet.PacketOutLine(po); got != "in_port=CONTROLLER actions=FLOOD" {
		t.Errorf("announcement sent %s", got)
	}
	// ...and serves ICMP echo per client.
	teachMember(t, sw, 9)
	sw.packetIn(testnet.ClientOF, testnet.ICMPEcho(t))
	s := nextSetup(t, sw)
	testnet.AssertLines(t, testnet.FlowLines(t, []ofp.FlowMod{s.fwd, s.rev}), []string{
		"cookie=0x5d9e000002000004, priority=1000, idle_timeout=30, send_flow_rem, icmp,nw_src=10.0.1.5,nw_dst=10.0.0.102,icmp_type=8 actions=set_field:aa:00:00:00:00:09->eth_dst,set_field:10.0.0.9->ip_dst,output:9",
		// v2 has no MAC from the store: the controller derives the same one.
		"cookie=0x5d9f000002000004, priority=1000, idle_timeout=30, send_flow_rem, icmp,nw_src=10.0.0.9,nw_dst=10.0.1.5,icmp_type=0 actions=set_field:" + sdnlb.VIPMAC("v2") + "->eth_src,set_field:10.0.0.102->ip_src,output:10",
	})
}

// flakyListener fails its first Accepts the way a process out of file
// descriptors does, then hands over to a pipeListener.
type flakyListener struct {
	*pipeListener
	fails atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "accept", Err: syscall.EMFILE}
	}
	return l.pipeListener.Accept()
}

func TestController_AcceptErrorsRetried(t *testing.T) {
	h := &harness{src: newFakeSource(testnet.Config(nil)), ln: newPipeListener(), log: &testnet.SyncBuffer{}, clock: &testClock{}}
	h.c = New(h.src, Options{Logger: testnet.NewTestLogger(h.log), EchoInterval: time.Hour, StatsInterval: time.Hour})
	fl := &flakyListener{pipeListener: h.ln}
	fl.fails.Store(3)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- h.c.Serve(ctx, fl) }()
	h.connect(t, 1)
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 1 })
	cancel()
	if err := <-errc; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if n := strings.Count(h.log.String(), "accepting a switch failed"); n != 3 {
		t.Errorf("%d warnings for 3 failed accepts", n)
	}
}

// The VIP and member series follow the configuration: a deleted member's
// go with it. Flow-mods are counted as sent.
func TestMetrics_VIPsAndMembers(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, sw := connected(t, testnet.Config(nil), Options{Registerer: reg}, 1, 2, 3)
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	sw.nextOf(ofp.TypePacketOut)
	series := func(name string) map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName()+"="+l.GetValue())
				}
				got[strings.Join(labels, ",")] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
			}
		}
		return got
	}
	up := series("sdnlb_member_up")
	if len(up) != 3 || up["member=m1,pool=p1,vip=v1"] != 1 {
		t.Errorf("sdnlb_member_up %v, want 3 members up", up)
	}
	var conns float64
	for _, v := range series("sdnlb_member_connections_total") {
		conns += v
	}
	if conns != 1 {
		t.Errorf("connections %v, want 1", conns)
	}
	if n := counter(t, reg, "sdnlb_controller_flow_mods_total", ""); n < 2 {
		t.Errorf("flow_mods_total %v, want the connection's two at least", n)
	}

	h.src.set(testnet.Config(func(c *sdnlb.Config) { c.Members = c.Members[:2] }))
	waitFor := time.Now().Add(testnet.WaitFor)
	for len(series("sdnlb_member_up")) != 2 {
		if time.Now().After(waitFor) {
			t.Fatalf("series after member m3 was deleted: %v", series("sdnlb_member_up"))
		}
		time.Sleep(5 * time.Millisecond)
	}
}
