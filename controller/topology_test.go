package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

func TestTopology(t *testing.T) {
	a1, a2 := model.PortRef{DPID: 1, Port: 1}, model.PortRef{DPID: 1, Port: 2}
	b1, b2 := model.PortRef{DPID: 2, Port: 1}, model.PortRef{DPID: 2, Port: 2}
	now := time.Unix(1000, 0)
	state := func(src, dst model.PortRef, both bool) linkState { return linkState{link: link{src, dst}, both: both} }
	assertAt := func(tb testing.TB, top *topology, at time.Time, want ...linkState) {
		tb.Helper()
		if got := top.links(at); !slices.Equal(got, want) {
			tb.Fatalf("links = %v, want %v", got, want)
		}
	}
	assert := func(tb testing.TB, top *topology, want ...linkState) { tb.Helper(); assertAt(tb, top, now, want...) }

	t.Run("DirectionsPaired", func(t *testing.T) {
		top := newTopology(DefaultLinkCapacity, testLinkCaps)
		top.discovered(now, a1, b1)
		assert(t, top, state(a1, b1, false))
		top.discovered(now, b1, a1)
		assert(t, top, state(a1, b1, true), state(b1, a1, true))
	})
	t.Run("Expire", func(t *testing.T) {
		top := newTopology(DefaultLinkCapacity, testLinkCaps)
		top.discovered(now, a1, b1)
		top.discovered(now.Add(2*lldpInterval), b1, a1)
		assertAt(t, top, now.Add(linkTimeout), state(a1, b1, true), state(b1, a1, true))
		// Three rounds without a1's frame: gone, at once and not only
		// once expired; b1's came later and stays, unpaired.
		late := now.Add(linkTimeout + time.Millisecond)
		assertAt(t, top, late, state(b1, a1, false))
		top.expire(late)
		if len(top.seen) != 1 {
			t.Fatalf("expire kept %v", top.seen)
		}
		top.discovered(late, a1, b1)
		assertAt(t, top, late, state(a1, b1, true), state(b1, a1, true))
	})
	t.Run("PortDownRemovesAtOnce", func(t *testing.T) {
		top := newTopology(DefaultLinkCapacity, testLinkCaps)
		top.discovered(now, a1, b1)
		top.discovered(now, b1, a1)
		top.discovered(now, a2, b2)
		top.portDown(b1)
		assert(t, top, state(a2, b2, false))
	})
	t.Run("SwitchGone", func(t *testing.T) {
		top := newTopology(DefaultLinkCapacity, testLinkCaps)
		top.discovered(now, a1, b1)
		top.discovered(now, b2, a2)
		top.discovered(now, model.PortRef{DPID: 3, Port: 1}, model.PortRef{DPID: 4, Port: 1})
		top.switchGone(2)
		assert(t, top, state(model.PortRef{DPID: 3, Port: 1}, model.PortRef{DPID: 4, Port: 1}, false))
	})
}

// TestTopology_TwoSwitches: the LLDP frames the controller sends out of
// one switch, coming in at another, are the link between them, and the
// hosts of the other ports are the topology's edge.
func TestTopology_TwoSwitches(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	sw1, _ := h.connect(t, 1)
	sw2, _ := h.connect(t, 2)
	sw1.send(0, ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: 3, Name: "s1-eth3", HWAddr: [6]byte{2, 0, 0, 0, 1, 3}}})
	sw2.send(0, ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: 4, Name: "s2-eth4", HWAddr: [6]byte{2, 0, 0, 0, 2, 4}}})
	sw2.send(0, ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: 5, Name: "s2-eth5"}})

	sw2.lldpIn(4, sw1.lldpOut(3))
	end := func(dpid string, port uint32) sdnlb.LinkEnd { return sdnlb.LinkEnd{DPID: dpid, Port: port} }
	s1, s2 := "00:00:00:00:00:00:00:01", "00:00:00:00:00:00:00:02"
	waitTopology(t, h.c, func(top *sdnlb.Topology) bool {
		return len(top.Links) == 1 && *top.Links[0] == sdnlb.Link{Src: end(s1, 3), Dst: end(s2, 4), CapacityBPS: DefaultLinkCapacity}
	})
	sw1.lldpIn(3, sw2.lldpOut(4))
	// A host on s2's port 5 is at the edge; the one that shows on the
	// link's port is not (it is across the link). The switch's reader
	// takes them in order, so the second seen means the first was.
	sw2.packetIn(4, testnet.ARPFrame(t, 1, "02:00:00:00:00:44", "ff:ff:ff:ff:ff:ff", "10.0.9.4", "10.0.9.1", "00:00:00:00:00:00"))
	sw2.packetIn(5, testnet.ARPFrame(t, 1, "02:00:00:00:00:55", "ff:ff:ff:ff:ff:ff", "10.0.9.5", "10.0.9.1", "00:00:00:00:00:00"))
	top := waitTopology(t, h.c, func(top *sdnlb.Topology) bool { return len(top.Links) == 2 && len(top.Hosts) > 0 })
	if want := (sdnlb.Link{Src: end(s2, 4), Dst: end(s1, 3), Bidirectional: true, CapacityBPS: DefaultLinkCapacity}); *top.Links[1] != want || !top.Links[0].Bidirectional {
		t.Fatalf("links %+v %+v, want both directions paired", *top.Links[0], *top.Links[1])
	}
	if len(top.Hosts) != 1 || top.Hosts[0].Address != "10.0.9.5" || top.Hosts[0].DPID != s2 || top.Hosts[0].Port != "5" {
		t.Fatalf("hosts %+v, want 10.0.9.5 on s2 port 5 alone", top.Hosts)
	}
	if len(top.Switches) != 2 || top.Switches[1].DPID != s2 || len(top.Switches[1].Ports) != 2 {
		t.Fatalf("switches %+v", top.Switches)
	}

	// The link's port on s2 goes down: both directions go at once.
	sw2.send(0, ofp.PortStatus{Reason: ofp.PortReasonModify, Desc: ofp.Port{PortNo: 4, Name: "s2-eth4", State: ofp.PortStateLinkDown}})
	waitTopology(t, h.c, func(top *sdnlb.Topology) bool { return len(top.Links) == 0 })
}

// lldpOut returns the next LLDP frame the controller sends out of port.
func (sw *fakeSwitch) lldpOut(port uint32) []byte {
	sw.tb.Helper()
	for {
		r := sw.next()
		if !isLLDPOut(r) {
			continue
		}
		if po := r.m.(*ofp.PacketOut); len(po.Actions) == 1 && po.Actions[0].(ofp.ActionOutput).Port == port {
			return po.Data
		}
	}
}

// lldpIn sends an LLDP frame as the LLDP row punts it (with its cookie,
// which 1.0 has none of).
func (sw *fakeSwitch) lldpIn(inPort uint32, frame []byte) {
	sw.tb.Helper()
	pin := &ofp.PacketIn{BufferID: ofp.NoBuffer, TotalLen: uint16(len(frame)), Reason: ofp.ReasonAction, Cookie: model.MakeCookie(model.CatLLDP, 0, 0),
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(inPort)}}, Data: frame}
	if sw.v10 {
		pin.Cookie = 0
	}
	sw.send(0, pin)
}

func waitTopology(tb testing.TB, c *Controller, ok func(*sdnlb.Topology) bool) *sdnlb.Topology {
	tb.Helper()
	deadline := time.Now().Add(testnet.WaitFor)
	for {
		top, err := c.Topology(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		if ok(top) {
			return top
		}
		if time.Now().After(deadline) {
			tb.Fatalf("topology never became as expected: %+v", top)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A link's load is what its source port sent over the last interval,
// against the port's speed or the default capacity; the paths toward a
// switch weigh it without what they send there themselves.
func TestTopology_LinkLoad(t *testing.T) {
	top := newTopology(1000, testLinkCaps)
	t0 := time.Unix(1_700_000_000, 0)
	speed := func(port uint32) uint64 {
		if port == 2 {
			return 4000
		}
		return 0
	}
	read := func(at time.Time, tx1, tx2 uint64) {
		top.portCounters(at, 1, []ofp.PortStats{{PortNo: 1, TxBytes: tx1}, {PortNo: 2, TxBytes: tx2}}, speed)
	}
	read(t0, 100, 100)
	read(t0.Add(2*time.Second), 100+200, 100+250) // 800 and 1000 bits/s
	l1, l2 := link{src: model.PortRef{DPID: 1, Port: 1}, dst: model.PortRef{DPID: 2, Port: 1}}, link{src: model.PortRef{DPID: 1, Port: 2}, dst: model.PortRef{DPID: 3, Port: 1}}
	if got := top.loadWithout(l1, 2, false); got != 0.8 {
		t.Errorf("port 1 at 800 of 1000 (the default) bits/s: utilisation %v", got)
	}
	if got := top.loadWithout(l2, 3, false); got != 0.25 {
		t.Errorf("port 2 at 1000 of its 4000 bits/s: utilisation %v", got)
	}
	// Switch 1's path row toward 2 sent 75 bytes a second of it.
	top.pathCounters(t0, 1, 2, 0)
	top.pathCounters(t0.Add(2*time.Second), 1, 2, 150)
	if got := top.loadWithout(l1, 2, true); got != 0.2 {
		t.Errorf("port 1 without the 600 bits/s toward 2: utilisation %v, want 0.2", got)
	}
	if got := top.loadWithout(l1, 3, true); got != 0.8 {
		t.Errorf("port 1 weighed for 3: utilisation %v, want all of it", got)
	}
	// A counter that went back (the switch restarted) is a fresh start.
	read(t0.Add(4*time.Second), 10, 10)
	if got := top.loadWithout(l1, 2, false); got != 0 {
		t.Errorf("after a reset: utilisation %v", got)
	}
}

// testLinkCaps leaves the tests of the topology room for every link.
var testLinkCaps = linkCaps{perSwitch: DefaultMaxLinksPerSwitch, total: DefaultMaxLinks}
