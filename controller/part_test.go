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

// TestController_TopologyPart: a node's part has the links it discovered
// without their loads, and the loads of the link ports on the switches it
// masters: the other node masters s2, reads s2's counters and has the
// load of s2's port.
func TestController_TopologyPart(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{Roles: true})
	sw1, _ := h.connect(t, 1)
	sw2, _ := h.connect(t, 2)
	// The ports of the link, as the switches report them.
	sw1.send(0, ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: 3}})
	sw2.send(0, ofp.PortStatus{Reason: ofp.PortReasonAdd, Desc: ofp.Port{PortNo: 4}})
	h.c.SetMasters(Masters{Node: "self", Switches: []sdnlb.SwitchMaster{
		{DPID: model.FormatDPID(1), Node: "self", Generation: 7}, {DPID: model.FormatDPID(2), Node: "other", Generation: 7},
	}})
	sw1.answerState()

	s1, s2 := model.FormatDPID(1), model.FormatDPID(2)
	// The frame the other node sent out of s2's port 4 arrives at s1's
	// port 3, whose master this node is (once promoted: a slave's
	// packet-ins are not read).
	frame := appendLLDP(nil, [6]byte{2, 0, 0, 0, 2, 4}, 2, 4)
	var part *sdnlb.TopologyPart
	for deadline := time.Now().Add(testnet.WaitFor); ; time.Sleep(5 * time.Millisecond) {
		sw1.lldpIn(3, frame)
		var err error
		if part, err = h.c.TopologyPart(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(part.Links) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the link into s1 was not discovered")
		}
	}
	if want := (sdnlb.Link{Src: sdnlb.LinkEnd{DPID: s2, Port: 4}, Dst: sdnlb.LinkEnd{DPID: s1, Port: 3}}); len(part.Links) != 1 || *part.Links[0] != want {
		t.Fatalf("links %+v, want %+v alone, without its load", part.Links, want)
	}
	want := []sdnlb.PortLoad{{Port: sdnlb.LinkEnd{DPID: s1, Port: 3}, CapacityBPS: DefaultLinkCapacity}}
	if !slices.Equal(part.Loads, want) {
		t.Fatalf("loads %+v, want %+v: s1's port only", part.Loads, want)
	}
	if len(part.Switches) != 2 {
		t.Fatalf("switches %+v, want both", part.Switches)
	}
}
