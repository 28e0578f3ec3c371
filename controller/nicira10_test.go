package controller

import (
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

// limited is the test configuration with a connection limit on the VIP,
// whose connections' FINs and resets the controller then gets too.
func limited() *sdnlb.Config {
	return testnet.Config(func(c *sdnlb.Config) { c.VIPs[0].ConnectionLimit = 5 })
}

// puntLines are the controller punts of limited's VIP.
var puntLines = []string{
	"cookie=0x5d02000001000000, priority=1002, tcp,dl_dst=02:00:00:00:01:00,nw_dst=10.0.0.100,tp_dst=80,tcp_flags=+syn-ack actions=CONTROLLER:65535",
	"cookie=0x5d02000001000000, priority=1004, tcp,dl_dst=02:00:00:00:01:00,nw_dst=10.0.0.100,tp_dst=80,tcp_flags=+fin actions=CONTROLLER:65535",
	"cookie=0x5d02000001000000, priority=1004, tcp,dl_dst=02:00:00:00:01:00,nw_dst=10.0.0.100,tp_dst=80,tcp_flags=-fin+rst actions=CONTROLLER:65535",
}

// A 1.0 switch that answers the Nicira probe (Open vSwitch) gets the
// controller punts, which match TCP flags, as NXT_FLOW_MOD, and every
// other row as a plain 1.0 flow-mod; its flows are read with NXST_FLOW,
// by cookie.
func TestOpenFlow10Nicira_Handshake(t *testing.T) {
	h := startController(t, limited(), Options{})
	_, got := h.connectNicira10(t, 1)
	var nicira []string
	var reads int
	for _, r := range got {
		switch m := r.m.(type) {
		case *ofp.FlowMod:
			if r.nicira {
				nicira = append(nicira, testnet.FlowLine(t, m))
			} else if _, err := ofp10.Append(nil, 1, m); err != nil {
				t.Errorf("a plain flow-mod 1.0 cannot express: %v", err)
			}
		case *ofp.MultipartRequest:
			fsr, ok := m.Body.(ofp.FlowStatsRequest)
			if !ok || !r.nicira || fsr.CookieMask == 0 {
				t.Errorf("read %+v (Nicira: %v), want an NXST_FLOW by cookie", m.Body, r.nicira)
			}
			reads++
		}
	}
	testnet.AssertLines(t, nicira, puntLines)
	if reads != 2 { // the probe and adoption's read
		t.Errorf("%d flow reads, want the probe and adoption's", reads)
	}
}

// A VIP whose connections a 1.3 switch's tracker would hold has flows of
// its own on 1.0, which has no tracker: it gets the punts too.
func TestOpenFlow10Nicira_TrackedVIPPunts(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	_, got := h.connectNicira10(t, 1)
	var nicira []string
	for _, r := range got {
		if fm, ok := r.m.(*ofp.FlowMod); ok && r.nicira {
			nicira = append(nicira, testnet.FlowLine(t, fm))
		}
	}
	testnet.AssertLines(t, nicira, puntLines)
}

// The punts are read back whole from NXST_FLOW, so a reconnecting 1.0
// Open vSwitch that holds every row gets no flow-mod.
func TestOpenFlow10Nicira_AdoptsPunts(t *testing.T) {
	h := startController(t, limited(), Options{})
	_, got := h.connectNicira10(t, 1)
	var held []ofp.FlowStats
	for _, r := range got {
		if fm, ok := r.m.(*ofp.FlowMod); ok {
			held = append(held, ofp.FlowStats{Cookie: fm.Cookie, Priority: fm.Priority, IdleTimeout: fm.IdleTimeout,
				Match: fm.Match, Instructions: fm.Instructions})
		}
	}
	h2 := startController(t, limited(), Options{})
	sw := h2.dial(t)
	sw.v10, sw.nicira = true, true
	sw.sendRaw([]byte{1, 0, 0, 8, 0, 0, 0, 0})
	var mods []string
	for {
		r := sw.next()
		switch m := r.m.(type) {
		case *ofp.FeaturesRequest:
			sw.send(r.h.XID, ofp10.FeaturesReply{FeaturesReply: ofp.FeaturesReply{DatapathID: 1, NTables: 1}})
		case *ofp.MultipartRequest:
			var stats []ofp.FlowStats
			if fsr := m.Body.(ofp.FlowStatsRequest); fsr.Cookie != ^uint64(0) { // not the probe
				stats = held
			}
			sw.send(r.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: stats}})
		case *ofp.FlowMod:
			mods = append(mods, testnet.FlowLine(t, m))
		}
		if r.h.Type == ofp.TypeBarrierRequest {
			break
		}
	}
	if len(mods) != 0 {
		t.Errorf("reconnecting with every flow, the switch got\n  %s", strings.Join(mods, "\n  "))
	}
}

// On a 1.0 Open vSwitch a delete by cookie is one NXT_FLOW_MOD that
// selects the cookie, not a read and deletes one by one.
func TestOpenFlow10Nicira_DeletesByCookie(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	sw, _ := h.connectNicira10(t, 1)
	for _, i := range []int{1, 2} {
		teachMember(t, sw, i)
	}
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	nextSetup(t, sw)
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40001))
	s := nextSetup(t, sw)
	h.src.set(testnet.Config(func(c *sdnlb.Config) { c.Members[1].Health.Status = sdnlb.MemberDown }))
	for {
		r := sw.next()
		if r.h.Type == ofp.TypeMultipartRequest || r.h.Type == ofp.TypeBarrierRequest {
			t.Fatalf("the delete by cookie became a %s", r.h.Type)
		}
		fm, ok := r.m.(*ofp.FlowMod)
		if !ok || fm.Command != ofp.FlowDelete || fm.CookieMask == 0 {
			continue
		}
		if !r.nicira || fm.Cookie&fm.CookieMask != s.fwd.Cookie&fm.CookieMask {
			t.Errorf("delete %s (Nicira: %v), want an NXT_FLOW_MOD of the DOWN member's cookie %#x", testnet.FlowLine(t, fm), r.nicira, s.fwd.Cookie)
		}
		break
	}
	if n := h.c.switchConns()[0].wire.(*wire10).pending.Load(); n != 0 {
		t.Errorf("%d requests stand in for deletes by cookie", n)
	}
}
