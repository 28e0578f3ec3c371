package controller

import (
	"context"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// The API asks which switch learned an address: the one that saw a packet
// from it last, within sdnlb.HostTTL, with the port as ovs-ofctl names it
// and as the switch names it.
func TestController_FindHost(t *testing.T) {
	ctx := context.Background()
	h := startController(t, testnet.Config(nil), Options{})
	sw1, _ := h.connect(t, 1)
	sw2, _ := h.connect(t, 2)
	sw1.send(0, &ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: testnet.ClientOF, Name: "c1-eth0"}})
	ask := testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.7", "00:00:00:00:00:00")
	learnOn := func(sw *fakeSwitch, port uint32) {
		t.Helper()
		sw.packetIn(port, ask)
		sw.nextOf(ofp.TypePacketOut) // the request flooded: the learner has it
	}
	find := func(address string) (*sdnlb.Host, error) {
		t.Helper()
		return h.c.FindHost(ctx, address)
	}

	learnOn(sw1, testnet.ClientOF)
	got, err := find(testnet.ClientIP)
	if err != nil {
		t.Fatal(err)
	}
	if got.Address != testnet.ClientIP || got.MAC != testnet.ClientMAC || got.DPID != "00:00:00:00:00:00:00:01" ||
		got.Port != "10" || got.PortName != "c1-eth0" || got.LastSeen.IsZero() {
		t.Errorf("found %+v", got)
	}

	// Seen since on the other switch's own port: that is where it is now.
	h.clock.advance(time.Second)
	learnOn(sw2, ofp.PortLocal)
	if got, err := find(testnet.ClientIP); err != nil || got.DPID != "00:00:00:00:00:00:00:02" || got.Port != "LOCAL" {
		t.Errorf("found %+v, %v; want it on switch 2 port LOCAL", got, err)
	}

	for _, address := range []string{"10.0.0.7", "not an address"} {
		if _, err := find(address); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
			t.Errorf("FindHost(%q): %v, want not found", address, err)
		}
	}
	h.clock.advance(sdnlb.HostTTL)
	if got, err := find(testnet.ClientIP); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
		t.Errorf("a host not seen for %v found: %+v, %v", sdnlb.HostTTL, got, err)
	}
}

// TestController_HostOutlivesSwitch: a learned host holds its address
// for sdnlb.HostTTL after its last packet, whether or not its switch
// stays connected: FindHost finds it once the switch is gone, the
// topology shows it again once the switch is back, and it goes at the
// TTL either way.
func TestController_HostOutlivesSwitch(t *testing.T) {
	ctx := context.Background()
	h := startController(t, testnet.Config(nil), Options{})
	sw, _ := h.connect(t, 1)
	sw.send(0, &ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: testnet.ClientOF, Name: "c1-eth0"}})
	sw.packetIn(testnet.ClientOF, testnet.ARPFrame(t, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.7", "00:00:00:00:00:00"))
	sw.syncReader()
	if _, err := h.c.FindHost(ctx, testnet.ClientIP); err != nil {
		t.Fatal(err)
	}

	sw.conn.Close()
	for deadline := time.Now().Add(testnet.WaitFor); h.c.switchConn(1) != nil || h.c.hosts.Held() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the switch's connection did not end, or kept its hosts in the caps")
		}
	}
	h.clock.advance(sdnlb.HostTTL - time.Minute)
	got, err := h.c.FindHost(ctx, testnet.ClientIP)
	if err != nil || got.MAC != testnet.ClientMAC || got.DPID != "00:00:00:00:00:00:00:01" || got.PortName != "c1-eth0" {
		t.Fatalf("with its switch gone: %+v, %v; want the host on switch 1 port c1-eth0", got, err)
	}

	h.connect(t, 1)
	top, err := h.c.Topology(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Hosts) != 1 || top.Hosts[0].Address != testnet.ClientIP || top.Hosts[0].Port != "10" {
		t.Fatalf("hosts %+v with the switch back, want %s on port 10", top.Hosts, testnet.ClientIP)
	}

	h.clock.advance(time.Minute + time.Second)
	if got, err := h.c.FindHost(ctx, testnet.ClientIP); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
		t.Errorf("a host not seen for over %v found: %+v, %v", sdnlb.HostTTL, got, err)
	}
	if top, _ := h.c.Topology(ctx); len(top.Hosts) != 0 {
		t.Errorf("a host not seen for over %v shown: %+v", sdnlb.HostTTL, top.Hosts)
	}
}
