package controller

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// syncReader waits until the controller has read everything sw sent
// before: the reader answers an echo only once it got there.
func (sw *fakeSwitch) syncReader() {
	sw.tb.Helper()
	const xid = 0x5e11c
	sw.send(xid, ofp.EchoRequest{})
	for {
		if r := sw.next(); r.h.Type == ofp.TypeEchoReply && r.h.XID == xid {
			return
		}
	}
}

// reportPorts has sw report ports 1 to n, up.
func (sw *fakeSwitch) reportPorts(n uint32) {
	for p := uint32(1); p <= n; p++ {
		sw.send(0, ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: p, HWAddr: [6]byte{2, 0, 0, 0, 0, byte(p)}}})
	}
}

// TestTopology_ForgedLLDP: LLDP frames forged through the packet-in path
// (naming ports no switch reported, arriving at ports no switch
// reported, or many real combinations) leave the topology within its
// caps, counted in the metric and logged once per cap and source.
func TestTopology_ForgedLLDP(t *testing.T) {
	var log testnet.SyncBuffer
	reg := prometheus.NewRegistry()
	h := startController(t, testnet.Config(nil), Options{MaxLinksPerSwitch: 4, MaxLinks: 6, Logger: testnet.NewTestLogger(&log), Registerer: reg})
	sw1, _ := h.connect(t, 1)
	sw2, _ := h.connect(t, 2)
	sw3, _ := h.connect(t, 3)
	for _, sw := range []*fakeSwitch{sw1, sw2, sw3} {
		sw.reportPorts(3)
		sw.syncReader()
	}

	// Ports nobody reported, at either end, and the LOCAL port.
	sw2.lldpIn(99, appendLLDP(nil, [6]byte{2}, 1, 1))
	sw2.lldpIn(1, appendLLDP(nil, [6]byte{2}, 1, 77))
	sw2.lldpIn(ofp.PortLocal, appendLLDP(nil, [6]byte{2}, 1, 1))
	rng := rand.New(rand.NewPCG(31, 4))
	for range 5000 {
		sw2.lldpIn(rng.Uint32N(1<<20)+4, appendLLDP(nil, [6]byte{2}, uint64(rng.IntN(3)+1), rng.Uint32N(1<<20)+4))
	}
	sw2.syncReader()
	if n := h.c.topo.size(); n != 0 {
		t.Fatalf("%d links from ports no switch reported", n)
	}

	// Every combination of real ports: 18 into s2, 18 into s1.
	for _, in := range []struct {
		sw       *fakeSwitch
		from     [2]uint64
		expected int
	}{{sw2, [2]uint64{1, 3}, 4}, {sw1, [2]uint64{2, 3}, 6}} {
		for _, src := range in.from {
			for p := uint32(1); p <= 3; p++ {
				for q := uint32(1); q <= 3; q++ {
					in.sw.lldpIn(q, appendLLDP(nil, [6]byte{2}, src, p))
				}
			}
		}
		in.sw.syncReader()
		if n := h.c.topo.size(); n != in.expected {
			t.Fatalf("%d links, want %d", n, in.expected)
		}
	}
	// 18 into s2, 4 taken; 18 into s1, 2 taken.
	assertCapped(t, h.c, reg, &log, itemLink, 14, 16, 6)

	// A link that goes frees its place.
	sw2.send(0, ofp.PortStatus{Reason: ofp.PortReasonModify, Desc: ofp.Port{PortNo: 1, State: ofp.PortStateLinkDown}})
	sw2.syncReader()
	if n := h.c.topo.size(); n >= 6 {
		t.Fatalf("%d links after a port with links went down", n)
	}
}

// refused reads sdnlb_topology_refused_total for item and cap.
func refused(tb testing.TB, reg *prometheus.Registry, item, cp string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "sdnlb_topology_refused_total" && len(m.GetLabel()) == 2 &&
				m.GetLabel()[0].GetValue() == cp && m.GetLabel()[1].GetValue() == item {
				return m.GetCounter().GetValue()
			}
		}
	}
	tb.Fatalf("no sdnlb_topology_refused_total{item=%q,cap=%q}", item, cp)
	return 0
}

// TestController_ForgedHosts: hosts sending ARP from ever new addresses,
// on two switches, leave the learners within their caps, counted in the
// metric and logged once per cap and source; the topology shows no more.
func TestController_ForgedHosts(t *testing.T) {
	var log testnet.SyncBuffer
	reg := prometheus.NewRegistry()
	switched := testnet.Config(func(cfg *sdnlb.Config) { cfg.Pools[0].Dispatch = sdnlb.DispatchSwitch })
	h := startController(t, switched, Options{MaxHostsPerSwitch: 50, MaxHosts: 80, Logger: testnet.NewTestLogger(&log), Registerer: reg})
	sw1, _ := h.connect(t, 1)
	sw2, _ := h.connect(t, 2)
	for i, sw := range []*fakeSwitch{sw1, sw2} {
		for n := range 1000 {
			ip := testnet.Addr4(uint32(10<<24 | (i+20)<<16 | n))
			mac := fmt.Sprintf("0a:%02x:00:00:%02x:%02x", i, n>>8, n&0xff)
			sw.packetIn(5, testnet.ARPFrame(t, 1, mac, "ff:ff:ff:ff:ff:ff", ip.String(), "10.0.0.7", "00:00:00:00:00:00"))
		}
		sw.syncReader()
	}
	if got := h.c.hosts.Held(); got != 80 {
		t.Fatalf("%d hosts held, want 80", got)
	}
	assertCapped(t, h.c, reg, &log, itemHost, 950, 970, 80)

	// A member the switches dispatch to gets in past the caps.
	sw1.packetIn(6, testnet.ARPFrame(t, 2, testnet.MemberMAC(1), testnet.ClientMAC, "10.0.0.1", testnet.ClientIP, testnet.ClientMAC))
	sw1.syncReader()
	if m, err := h.c.FindHost(context.Background(), "10.0.0.1"); err != nil || m.MAC != testnet.MemberMAC(1) {
		t.Fatalf("the member past the caps: %+v, %v", m, err)
	}
}

// assertCapped checks a topology whose caps refused perSwitch and total
// new items of a kind and that holds held of them: what c shows and
// stores for its cluster, the metrics, and the log, which said so once
// per cap and source (a switch's cap, the total), the rest withheld.
func assertCapped(tb testing.TB, c *Controller, reg *prometheus.Registry, log *testnet.SyncBuffer, item string, perSwitch, total, held float64) {
	tb.Helper()
	top, err := c.Topology(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	part, err := c.TopologyPart(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	shown, stored := len(top.Links), len(part.Links)
	if item == itemHost {
		shown, stored = len(top.Hosts), len(part.Hosts)
	}
	if float64(shown) != held || float64(stored) != held {
		tb.Fatalf("topology shows %d %ss, its stored part %d, want %v", shown, item, stored, held)
	}
	if got := refused(tb, reg, item, "switch"); got != perSwitch {
		tb.Errorf("per-switch refusals of %ss %v, want %v", item, got, perSwitch)
	}
	if got := refused(tb, reg, item, "total"); got != total {
		tb.Errorf("total refusals of %ss %v, want %v", item, got, total)
	}
	if got := gauge(tb, reg, "sdnlb_topology_"+item+"s"); got != held {
		tb.Errorf("sdnlb_topology_%ss %v, want %v", item, got, held)
	}
	if n := strings.Count(log.String(), "new "+item+"s are refused"); n != 2 {
		tb.Errorf("%d log lines of a full topology, want 2:\n%s", n, log.String())
	}
}
