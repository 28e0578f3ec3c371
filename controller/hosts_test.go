package controller

import (
	"context"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
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

func TestL2Learner_Hosts(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	mac := [6]byte{0xaa, 0, 0, 0, 0, 1}
	l := dataplane.NewL2Learner(model.TableL2)
	if !l.LearnHost(now, testnet.Addr4(1), mac, 3, false) {
		t.Error("a new host did not change the table")
	}
	if _, ok := l.SeenHost(now.Add(sdnlb.HostTTL), testnet.Addr4(1)); !ok {
		t.Errorf("a host seen %v ago is not known", sdnlb.HostTTL)
	}
	if _, ok := l.SeenHost(now.Add(sdnlb.HostTTL+time.Nanosecond), testnet.Addr4(1)); ok {
		t.Errorf("a host seen over %v ago is known", sdnlb.HostTTL)
	}
	if _, ok := l.Host(testnet.Addr4(1)); !ok {
		t.Error("the data path lost a host that was not seen for a while")
	}
	// A packet from it again: no change, but seen now.
	later := now.Add(time.Hour)
	if l.LearnHost(later, testnet.Addr4(1), mac, 3, false) {
		t.Error("seeing a host again changed the table")
	}
	if _, ok := l.SeenHost(later, testnet.Addr4(1)); !ok {
		t.Error("a host seen again is not known")
	}
	// A host only the switch's flows named was never seen.
	l.SeedHost(testnet.Addr4(2), mac, 0)
	if _, ok := l.SeenHost(later, testnet.Addr4(2)); ok {
		t.Error("a host the switch's flows named counts as seen")
	}
}
