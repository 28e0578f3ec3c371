package controller

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

func TestSession_Handshake(t *testing.T) {
	h := startController(t, testConfig(nil), Options{})
	sw, got := h.connect(t, 1)

	var types []string
	var mods []ofp.FlowMod
	var outs []string
	for _, r := range got {
		types = append(types, r.h.Type.String())
		switch m := r.m.(type) {
		case *ofp.Hello:
			if !m.Supports(ofp.Version) {
				t.Errorf("hello offers %v, not 1.3", m.Versions)
			}
		case *ofp.SetConfig:
			if m.MissSendLen != ofp.ControllerMaxLenNoBuffer {
				t.Errorf("miss_send_len = %#x, want the whole packet", m.MissSendLen)
			}
		case *ofp.MultipartRequest:
			if _, ok := m.Body.(ofp.PortDescRequest); !ok {
				t.Errorf("multipart request %T, want port desc", m.Body)
			}
		case *ofp.FlowMod:
			mods = append(mods, *m)
		case *ofp.PacketOut:
			outs = append(outs, packetOutLine(m))
			arp := layerOf[*layers.ARP](t, parseFrame(t, m.Data))
			if ipString([4]byte(arp.SourceProtAddress)) != "10.0.0.100" || ipString([4]byte(arp.DstProtAddress)) != "10.0.0.100" {
				t.Errorf("gratuitous ARP for %v→%v, want the VIP", arp.SourceProtAddress, arp.DstProtAddress)
			}
		}
	}
	wantTypes := "HELLO FEATURES_REQUEST SET_CONFIG MULTIPART_REQUEST FLOW_MOD FLOW_MOD FLOW_MOD FLOW_MOD FLOW_MOD FLOW_MOD FLOW_MOD FLOW_MOD PACKET_OUT BARRIER_REQUEST"
	if s := strings.Join(types, " "); s != wantTypes {
		t.Errorf("handshake sent\n  %s\nwant\n  %s", s, wantTypes)
	}
	// The purge comes before anything is installed.
	if len(mods) > 0 && mods[0].Command != ofp.FlowDelete {
		t.Errorf("first flow-mod is %v, want the delete of all sdnlb flows", flowLine(t, &mods[0]))
	}
	assertLines(t, flowLines(t, mods), []string{
		"delete cookie=0x5d00000000000000/0xff00000000000000",
		"cookie=0x5d01000000000000, priority=0 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=500, arp,arp_tpa=10.0.0.100,arp_op=1 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=500, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
		"cookie=0x5d04000001000001, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=CONTROLLER:65535",
		"cookie=0x5d04000001000002, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
		"cookie=0x5d04000001000003, priority=900, tcp,nw_src=10.0.0.3,tp_src=8080 actions=CONTROLLER:65535",
	})
	if len(outs) != 1 || outs[0] != "in_port=CONTROLLER actions=FLOOD" {
		t.Errorf("packet-outs %q, want one flooded gratuitous ARP", outs)
	}

	// Ports come from the port-desc reply.
	mp := got[3]
	sw.send(mp.h.XID, ofp.MultipartReply{Body: ofp.PortDescReply{Ports: []ofp.Port{
		{PortNo: 2, Name: "veth2", HWAddr: [6]byte{0xaa, 0, 0, 0, 0, 2}, State: ofp.PortStateLinkDown},
		{PortNo: 1, Name: "veth1", HWAddr: [6]byte{0xaa, 0, 0, 0, 0, 1}, State: ofp.PortStateLive},
	}}})
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool {
		return len(sws) == 1 && len(sws[0].Ports) == 2
	})
	sws, _ := h.c.Switches(context.Background())
	s := sws[0]
	if s.DPID != "00:00:00:00:00:00:00:01" || s.Address != "pipe" || s.ConnectedAt.IsZero() {
		t.Errorf("switch = %+v", s)
	}
	wantPorts := []sdnlb.SwitchPort{{No: 1, Name: "veth1", MAC: "aa:00:00:00:00:01", Up: true}, {No: 2, Name: "veth2", MAC: "aa:00:00:00:00:02", Up: false}}
	for i, p := range wantPorts {
		if s.Ports[i] != p {
			t.Errorf("port %d = %+v, want %+v", i, s.Ports[i], p)
		}
	}
	if !strings.Contains(h.log.String(), `msg="switch connected"`) || !strings.Contains(h.log.String(), "dpid=00:00:00:00:00:00:00:01") {
		t.Errorf("no Info line for the connected switch in\n%s", h.log.String())
	}
}

// waitSwitches polls Switches until ok accepts the list.
func waitSwitches(tb testing.TB, c *Controller, ok func([]*sdnlb.Switch) bool) {
	tb.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		sws, err := c.Switches(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		if ok(sws) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("switches never became as expected: %+v", sws)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSession_Echo(t *testing.T) {
	t.Run("AnswersSwitch", func(t *testing.T) {
		h := startController(t, testConfig(nil), Options{})
		sw, _ := h.connect(t, 1)
		sw.send(77, ofp.EchoRequest{Data: []byte("ping")})
		r := sw.nextOf(ofp.TypeEchoReply)
		if r.h.XID != 77 || string(r.m.(*ofp.EchoReply).Data) != "ping" {
			t.Errorf("echo reply xid %d data %q, want 77 %q", r.h.XID, r.m.(*ofp.EchoReply).Data, "ping")
		}
	})
	t.Run("KeepsAnsweringSwitchAlive", func(t *testing.T) {
		h := startController(t, testConfig(nil), Options{EchoInterval: 10 * time.Millisecond})
		sw, _ := h.connect(t, 1)
		for range 8 { // well past three intervals
			r := sw.nextOf(ofp.TypeEchoRequest)
			sw.send(r.h.XID, ofp.EchoReply{})
		}
		if sws, _ := h.c.Switches(context.Background()); len(sws) != 1 {
			t.Errorf("an answering switch was dropped")
		}
	})
	t.Run("DeadPeerClosed", func(t *testing.T) {
		h := startController(t, testConfig(nil), Options{EchoInterval: 10 * time.Millisecond})
		sw, _ := h.connect(t, 1)
		sw.waitClosed()
		waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 0 })
		if !strings.Contains(h.log.String(), "missed echo replies") {
			t.Errorf("no log line for the dead switch in\n%s", h.log.String())
		}
	})
}

func TestSession_VersionMismatch(t *testing.T) {
	h := startController(t, testConfig(nil), Options{})
	sw := h.dial(t)
	// An OpenFlow 1.0 hello: version 1 header, no bitmap.
	sw.sendRaw([]byte{1, byte(ofp.TypeHello), 0, 8, 0, 0, 0, 9})
	sw.nextOf(ofp.TypeHello)
	r := sw.nextOf(ofp.TypeError)
	e := r.m.(*ofp.ErrorMsg)
	if e.ErrType != ofp.ErrTypeHelloFailed || e.Code != ofp.HelloFailedIncompatible {
		t.Errorf("error %s/%d, want HELLO_FAILED/INCOMPATIBLE", e.ErrType, e.Code)
	}
	sw.waitClosed()
	log := h.log.String()
	if !strings.Contains(log, "level=ERROR") || !strings.Contains(log, "remote=pipe") {
		t.Errorf("no Error line naming the switch address in\n%s", log)
	}
}

func TestSession_Malformed(t *testing.T) {
	header := func(version uint8, typ ofp.Type, length uint16) []byte {
		b := []byte{version, byte(typ), 0, 0, 0, 0, 0, 1}
		binary.BigEndian.PutUint16(b[2:], length)
		return b
	}
	tests := []struct {
		name string
		raw  []byte
	}{
		{"LengthBelowHeader", header(ofp.Version, ofp.TypeEchoRequest, 4)},
		{"TruncatedPacketIn", append(header(ofp.Version, ofp.TypePacketIn, 12), 0, 0, 0, 0)},
		{"BadVersion", header(2, ofp.TypeEchoRequest, 8)},
		{"PacketInMatchOverrun", append(header(ofp.Version, ofp.TypePacketIn, 8+16+8),
			0xff, 0xff, 0xff, 0xff, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // buffer, total_len, reason, table, cookie
			0, 1, 0, 200, 0, 0, 0, 0)}, // OXM match claiming 200 bytes
		{"Garbage", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startController(t, testConfig(nil), Options{})
			sw, _ := h.connect(t, 1)
			sw.sendRaw(tt.raw)
			sw.waitClosed()
			waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 0 })
			if !strings.Contains(h.log.String(), "malformed OpenFlow") {
				t.Errorf("no log line for the malformed message in\n%s", h.log.String())
			}
			// The process and the other sessions go on.
			h.connect(t, 2)
			waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 1 && sws[0].DPID == formatDPID(2) })
		})
	}
	t.Run("UnknownTypeAnsweredNotClosed", func(t *testing.T) {
		h := startController(t, testConfig(nil), Options{})
		sw, _ := h.connect(t, 1)
		sw.sendRaw(header(ofp.Version, 99, 8))
		r := sw.nextOf(ofp.TypeError)
		if e := r.m.(*ofp.ErrorMsg); e.ErrType != ofp.ErrTypeBadRequest || e.Code != ofp.BadRequestBadType {
			t.Errorf("error %s/%d, want BAD_REQUEST/BAD_TYPE", e.ErrType, e.Code)
		}
		sw.send(5, ofp.EchoRequest{})
		sw.nextOf(ofp.TypeEchoReply)
	})
}

func TestSession_Reconnect(t *testing.T) {
	h := startController(t, testConfig(nil), Options{})
	old, _ := h.connect(t, 1)
	_, got := h.connect(t, 1)
	old.waitClosed()
	var mods []ofp.FlowMod
	for _, r := range got {
		if fm, ok := r.m.(*ofp.FlowMod); ok {
			mods = append(mods, *fm)
		}
	}
	if len(mods) != 8 {
		t.Errorf("reconnected switch got %d flow-mods, want purge + table miss + 3 VIP flows + 3 reply punts:\n%s", len(mods), strings.Join(flowLines(t, mods), "\n"))
	}
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 1 })
}

func TestSession_ManySwitches(t *testing.T) {
	h := startController(t, testConfig(nil), Options{})
	for i := range 20 {
		h.connect(t, uint64(i+1))
	}
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 20 })
}

func TestSession_SwitchErrorsRateLimited(t *testing.T) {
	h := startController(t, testConfig(nil), Options{})
	sw, _ := h.connect(t, 1)
	failed := ofp.Append(nil, 42, ofp.BarrierRequest{})
	for range 5 {
		sw.send(42, &ofp.ErrorMsg{ErrType: ofp.ErrTypeFlowModFailed, Code: ofp.FlowModFailedTableFull, Data: failed})
	}
	sw.send(0, ofp.EchoRequest{})
	sw.nextOf(ofp.TypeEchoReply) // the five were handled
	h.clock.advance(2 * time.Second)
	sw.send(43, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadMatch, Code: ofp.BadMatchBadField})
	sw.send(0, ofp.EchoRequest{})
	sw.nextOf(ofp.TypeEchoReply) // everything before it was handled
	log := h.log.String()
	if n := strings.Count(log, "switch reported an error"); n != 2 {
		t.Errorf("%d error lines for 6 errors over 2 s, want 2:\n%s", n, log)
	}
	for _, want := range []string{"type=FLOW_MOD_FAILED code=1 xid=42 request=BARRIER_REQUEST", "type=BAD_MATCH code=6 xid=43 request=\"\" suppressed_since_last=4"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}
