package controller

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// teachMember makes member i (10.0.0.i, port i) known to the session the
// way the controller learns members: its ARP reply to the VIP.
func teachMember(tb testing.TB, sw *fakeSwitch, i int) {
	tb.Helper()
	sw.packetIn(uint32(i), testnet.ARPFrame(tb, 2, testnet.MemberMAC(i), testnet.VIPMAC, fmt.Sprintf("10.0.0.%d", i), "10.0.0.100", testnet.VIPMAC))
	r := sw.nextOf(ofp.TypeFlowMod)
	if line := testnet.FlowLine(tb, r.m.(*ofp.FlowMod)); !strings.Contains(line, "dl_dst="+testnet.MemberMAC(i)) {
		tb.Fatalf("learning member %d installed %s", i, line)
	}
}

// setup is what the controller sends for one new connection.
type setup struct {
	fwd, rev ofp.FlowMod
	out      *ofp.PacketOut
}

// nextSetup skips L2 learning and returns the next connection setup.
func nextSetup(tb testing.TB, sw *fakeSwitch) setup {
	tb.Helper()
	var s setup
	var mods []ofp.FlowMod
	for s.out == nil {
		r := sw.next()
		switch m := r.m.(type) {
		case *ofp.FlowMod:
			if cat, _, _, _ := model.CookieParts(m.Cookie); cat != model.CatL2 {
				mods = append(mods, *m)
			}
		case *ofp.PacketOut:
			s.out = m
		}
	}
	if len(mods) != 2 {
		tb.Fatalf("setup sent %d flow-mods before its packet-out, want 2: %q", len(mods), testnet.FlowLines(tb, mods))
	}
	s.fwd, s.rev = mods[0], mods[1]
	return s
}

// memberOf reads the member address a client → member flow rewrites to.
func memberOf(tb testing.TB, fm *ofp.FlowMod) string {
	tb.Helper()
	line := testnet.FlowLine(tb, fm)
	i := strings.Index(line, "->ip_dst")
	j := strings.LastIndex(line[:max(i, 0)], ":")
	if i < 0 || j < 0 {
		tb.Fatalf("no ip_dst rewrite in %s", line)
	}
	return line[j+1 : i]
}

func connected(tb testing.TB, cfg *sdnlb.Config, opts Options, members ...int) (*harness, *fakeSwitch) {
	tb.Helper()
	return connectedOn(tb, false, cfg, opts, members...)
}

// connected10 is connected for a switch that speaks only OpenFlow 1.0.
func connected10(tb testing.TB, cfg *sdnlb.Config, opts Options, members ...int) (*harness, *fakeSwitch) {
	tb.Helper()
	return connectedOn(tb, true, cfg, opts, members...)
}

func connectedOn(tb testing.TB, v10 bool, cfg *sdnlb.Config, opts Options, members ...int) (*harness, *fakeSwitch) {
	tb.Helper()
	h := startController(tb, cfg, opts)
	connect := h.connect
	if v10 {
		connect = func(tb testing.TB, dpid uint64) (*fakeSwitch, []received) { return h.connect10(tb, dpid) }
	}
	sw, _ := connect(tb, 1)
	for _, i := range members {
		teachMember(tb, sw, i)
	}
	return h, sw
}

func TestSession_Handshake(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
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
			switch m.Body.(type) {
			case ofp.GroupFeaturesRequest, ofp.PortDescRequest, ofp.FlowStatsRequest:
			default:
				t.Errorf("multipart request %T, want group features, port desc or sdnlb's flows", m.Body)
			}
		case *ofp.FlowMod:
			mods = append(mods, *m)
		case *ofp.PacketOut:
			outs = append(outs, testnet.PacketOutLine(m))
			arp := testnet.LayerOf[*layers.ARP](t, testnet.ParseFrame(t, m.Data))
			if model.AddrFrom(arp.SourceProtAddress).String() != "10.0.0.100" || model.AddrFrom(arp.DstProtAddress).String() != "10.0.0.100" {
				t.Errorf("gratuitous ARP for %v→%v, want the VIP", arp.SourceProtAddress, arp.DstProtAddress)
			}
		}
	}
	wantTypes := "HELLO FEATURES_REQUEST MULTIPART_REQUEST SET_CONFIG MULTIPART_REQUEST MULTIPART_REQUEST" +
		strings.Repeat(" FLOW_MOD", 16) + " PACKET_OUT BARRIER_REQUEST"
	if s := strings.Join(types, " "); s != wantTypes {
		t.Errorf("handshake sent\n  %s\nwant\n  %s", s, wantTypes)
	}
	// The switch holds nothing of sdnlb's: it is only added to.
	testnet.AssertLines(t, testnet.FlowLines(t, mods), append(testnet.ARPAnswerLines(1, "02:00:00:00:01:00", "10.0.0.100", model.L2Learn),
		"cookie=0x5d01000000000000, priority=0 actions=goto_table:9",
		"cookie=0x5d08000000000000, priority=2000, dl_dst=01:80:c2:00:00:0e,dl_type=0x88cc actions=CONTROLLER:65535",
		"cookie=0x5d01000000000000, table=tracked, priority=0 actions=goto_table:9",
		"cookie=0x5d01000000000000, table=to-member, priority=0 actions=goto_table:9",
		"cookie=0x5d01000000000000, table=from-member, priority=0 actions=drop",
		"cookie=0x5d01000000000000, table=l2, priority=0 actions=CONTROLLER:65535",
		testnet.NDCopyLine,
		"cookie=0x5d02000001000000, priority=500, arp,arp_tpa=10.0.0.100 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=500, arp,dl_dst=02:00:00:00:01:00 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=501, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
		"cookie=0x5d04000001000001, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=CONTROLLER:65535",
		"cookie=0x5d04000001000002, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
		"cookie=0x5d04000001000003, priority=900, tcp,nw_src=10.0.0.3,tp_src=8080 actions=CONTROLLER:65535",
	))
	if len(outs) != 1 || outs[0] != "in_port=CONTROLLER actions=FLOOD" {
		t.Errorf("packet-outs %q, want one flooded gratuitous ARP", outs)
	}

	// Ports come from the port-desc reply.
	mp := got[4]
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
	deadline := time.Now().Add(testnet.WaitFor)
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
		h := startController(t, testnet.Config(nil), Options{})
		sw, _ := h.connect(t, 1)
		sw.send(77, ofp.EchoRequest{Data: []byte("ping")})
		r := sw.nextOf(ofp.TypeEchoReply)
		if r.h.XID != 77 || string(r.m.(*ofp.EchoReply).Data) != "ping" {
			t.Errorf("echo reply xid %d data %q, want 77 %q", r.h.XID, r.m.(*ofp.EchoReply).Data, "ping")
		}
	})
	t.Run("KeepsAnsweringSwitchAlive", func(t *testing.T) {
		h := startController(t, testnet.Config(nil), Options{EchoInterval: 10 * time.Millisecond})
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
		h := startController(t, testnet.Config(nil), Options{EchoInterval: 10 * time.Millisecond})
		sw, _ := h.connect(t, 1)
		sw.waitClosed()
		waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 0 })
		if !strings.Contains(h.log.String(), "missed echo replies") {
			t.Errorf("no log line for the dead switch in\n%s", h.log.String())
		}
	})
}

// header is an OpenFlow header of version, typ and length, xid 1.
func header(version uint8, typ ofp.Type, length uint16) []byte {
	b := []byte{version, byte(typ), 0, 0, 0, 0, 0, 1}
	binary.BigEndian.PutUint16(b[2:], length)
	return b
}

func TestSession_Malformed(t *testing.T) {
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
			h := startController(t, testnet.Config(nil), Options{})
			sw, _ := h.connect(t, 1)
			sw.sendRaw(tt.raw)
			sw.waitClosed()
			waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 0 })
			if !strings.Contains(h.log.String(), "malformed OpenFlow") {
				t.Errorf("no log line for the malformed message in\n%s", h.log.String())
			}
			// The process and the other sessions go on.
			h.connect(t, 2)
			waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 1 && sws[0].DPID == model.FormatDPID(2) })
		})
	}
	t.Run("UnknownTypeAnsweredNotClosed", func(t *testing.T) {
		h := startController(t, testnet.Config(nil), Options{})
		sw, _ := h.connect(t, 1)
		sw.sendRaw(header(ofp.Version, 99, 8))
		r := sw.nextOf(ofp.TypeError)
		if e := r.m.(*ofp.ErrorMsg); e.ErrType != ofp.ErrTypeBadRequest || e.Code != ofp.BadRequestBadType {
			t.Errorf("error %s/%d, want BAD_REQUEST/BAD_TYPE", e.ErrType, e.Code)
		}
		sw.send(5, ofp.EchoRequest{})
		sw.nextOf(ofp.TypeEchoReply)
	})
	// A reply is no request: the switch gets no error for one the codec
	// does not support, the request it answers fails at once, and the
	// session goes on, with one log line however many such replies come.
	t.Run("UnsupportedReplyNotAnswered", func(t *testing.T) {
		h := startController(t, testnet.Config(nil), Options{})
		sw, _ := h.connect(t, 1)
		for range 2 {
			failed := make(chan error, 1)
			go func() {
				_, err := h.c.SwitchFlows(context.Background(), model.FormatDPID(1))
				failed <- err
			}()
			req := sw.nextOf(ofp.TypeMultipartRequest)
			reply := append(header(ofp.Version, ofp.TypeMultipartReply, 16), 0, 12, 0, 0, 0, 0, 0, 0) // table features
			binary.BigEndian.PutUint32(reply[4:], req.h.XID)
			sw.sendRaw(reply)
			select {
			case err := <-failed:
				if sdnlb.ErrorCode(err) != sdnlb.EUNAVAILABLE {
					t.Errorf("the request answered by an unsupported reply: %v, want unavailable", err)
				}
			case <-time.After(testnet.WaitFor):
				t.Fatal("the request answered by an unsupported reply still waits")
			}
		}
		sw.send(5, ofp.EchoRequest{})
		for r := sw.next(); r.h.Type != ofp.TypeEchoReply; r = sw.next() {
			if r.h.Type == ofp.TypeError {
				t.Errorf("the controller answered a reply with an error")
			}
		}
		if n := strings.Count(h.log.String(), "unsupported OpenFlow message"); n != 1 {
			t.Errorf("%d lines for two unsupported replies within a minute, want 1:\n%s", n, h.log.String())
		}
	})
}

// A group whose buckets the codec cannot read (another controller's,
// setting a wide tun_metadata) keeps no switch from connecting: the
// adoption deletes it, as any group the configuration does not want.
func TestSession_DeletesUnreadableGroup(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	sw := h.dial(t)
	sw.send(0, ofp.Hello{Versions: []uint8{1, 4}})
	var deleted []uint32
	for done := false; !done; {
		r := sw.next()
		switch m := r.m.(type) {
		case *ofp.FeaturesRequest:
			sw.send(r.h.XID, ofp.FeaturesReply{DatapathID: 1, NTables: 254})
		case *ofp.MultipartRequest:
			switch m.Body.(type) {
			case ofp.GroupFeaturesRequest:
				sw.send(r.h.XID, ofp.MultipartReply{Body: ofp.GroupFeaturesReply{Types: 1 << ofp.GroupTypeSelect}})
			case ofp.GroupDescRequest:
				sw.sendRaw(groupDescSettingTunMetadata(r.h.XID, 7))
			default:
				sw.answerEmpty(r)
			}
		case *ofp.GroupMod:
			if m.Command == ofp.GroupDelete {
				deleted = append(deleted, m.GroupID)
			}
		case *ofp.ErrorMsg:
			t.Errorf("the controller answered with an error %s/%d", m.ErrType, m.Code)
		case *ofp.BarrierRequest:
			sw.send(r.h.XID, ofp.BarrierReply{})
			done = true
		}
	}
	if len(deleted) != 1 || deleted[0] != 7 {
		t.Errorf("groups deleted: %v, want the unreadable group 7", deleted)
	}
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 1 })
}

// groupDescSettingTunMetadata is a group description reply of xid with
// one select group, id, whose bucket sets tun_metadata0 40 bytes wide.
func groupDescSettingTunMetadata(xid, id uint32) []byte {
	b := []byte{ofp.Version, byte(ofp.TypeMultipartReply), 0, 0, 0, 0, 0, 0, 0, byte(ofp.MultipartGroupDesc), 0, 0, 0, 0, 0, 0}
	b = append(b, 0, 72, byte(ofp.GroupTypeSelect), 0, 0, 0, 0, 0)                         // the group, its id below
	b = append(b, 0, 64, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0) // its bucket
	b = append(b, 0, 25, 0, 48, 0, 1, 40<<1, 40)                                           // set_field tun_metadata0
	b = append(b, make([]byte, 40)...)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	binary.BigEndian.PutUint32(b[4:], xid)
	binary.BigEndian.PutUint32(b[20:], id)
	return b
}

func TestSession_Reconnect(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	old, _ := h.connect(t, 1)
	// The controller reads in order: once it echoed, it has read the
	// barrier reply too, which read after the second connection's probe
	// of this one would say this one still answers.
	old.send(0, ofp.EchoRequest{})
	old.nextOf(ofp.TypeEchoReply)
	_, got := h.connect(t, 1)
	old.waitClosed()
	var mods []ofp.FlowMod
	for _, r := range got {
		if fm, ok := r.m.(*ofp.FlowMod); ok {
			mods = append(mods, *fm)
		}
	}
	if len(mods) != 16 { // this fake switch forgets its flows
		t.Errorf("reconnected switch got %d flow-mods, want 7 base flows + 6 VIP flows + 3 reply punts:\n%s", len(mods), strings.Join(testnet.FlowLines(t, mods), "\n"))
	}
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 1 })
}

func TestSession_ManySwitches(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	for i := range 20 {
		h.connect(t, uint64(i+1))
	}
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 20 })
}

// OFPT_ERRORs are logged once a minute per error type, the next line
// counting what was withheld.
func TestSession_SwitchErrorsRateLimited(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	sw, _ := h.connect(t, 1)
	failed := ofp.Append(nil, 42, ofp.BarrierRequest{})
	tableFull := &ofp.ErrorMsg{ErrType: ofp.ErrTypeFlowModFailed, Code: ofp.FlowModFailedTableFull, Data: failed}
	for range 5 {
		sw.send(42, tableFull)
	}
	sw.send(43, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadMatch, Code: ofp.BadMatchBadField})
	sw.send(0, ofp.EchoRequest{})
	sw.nextOf(ofp.TypeEchoReply) // the six were handled
	h.clock.advance(time.Minute)
	sw.send(44, tableFull)
	sw.send(0, ofp.EchoRequest{})
	sw.nextOf(ofp.TypeEchoReply) // everything before it was handled
	log := h.log.String()
	if n := strings.Count(log, "switch reported an error"); n != 3 {
		t.Errorf("%d error lines for 7 errors of 2 types over a minute, want 3:\n%s", n, log)
	}
	for _, want := range []string{"type=FLOW_MOD_FAILED code=1 xid=42 request=BARRIER_REQUEST", "type=BAD_MATCH code=6 xid=43",
		"xid=44 request=BARRIER_REQUEST withheld_since_last=4"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// Connection setups go out the same in both versions, 1.0's in its own
// encoding.
func TestSession_SetsUpConnections(t *testing.T) {
	t.Run("OpenFlow13", func(t *testing.T) {
		_, sw := connected(t, testnet.Config(nil), Options{}, 1, 2, 3)
		setsUpConnections(t, sw)
	})
	t.Run("OpenFlow10", func(t *testing.T) {
		_, sw := connected10(t, testnet.Config(nil), Options{}, 1, 2, 3)
		setsUpConnections(t, sw)
	})
}

func setsUpConnections(t *testing.T, sw *fakeSwitch) {
	var got []string
	for i := range 6 {
		frame := testnet.SYN(t, uint16(40000+i))
		sw.packetIn(testnet.ClientOF, frame)
		s := nextSetup(t, sw)
		got = append(got, memberOf(t, &s.fwd))
		if i == 0 {
			testnet.AssertLines(t, testnet.FlowLines(t, []ofp.FlowMod{s.fwd, s.rev}), []string{
				"cookie=0x5dee000001000001, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.1.5,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 actions=set_field:aa:00:00:00:00:01->eth_dst,set_field:10.0.0.1->ip_dst,set_field:8080->tcp_dst,output:1",
				"cookie=0x5def000001000001, priority=1000, idle_timeout=30, send_flow_rem, tcp,nw_src=10.0.0.1,nw_dst=10.0.1.5,tp_src=8080,tp_dst=40000 actions=set_field:02:00:00:00:01:00->eth_src,set_field:10.0.0.100->ip_src,set_field:80->tcp_src,output:10",
			})
		}
		// The first packet leaves with the very rewrite of its flow.
		if po, fwd := testnet.ActionsLine(s.out.Actions), ofp.FormatInstructions(s.fwd.Instructions); po != fwd {
			t.Errorf("packet-out actions %s, flow actions %s", po, fwd)
		}
		if s.out.InPort != testnet.ClientOF || s.out.BufferID != ofp.NoBuffer || string(s.out.Data) != string(frame) {
			t.Errorf("packet-out in_port %d buffer %#x, data equal %v", s.out.InPort, s.out.BufferID, string(s.out.Data) == string(frame))
		}
	}
	if want := "10.0.0.1 10.0.0.2 10.0.0.3 10.0.0.1 10.0.0.2 10.0.0.3"; strings.Join(got, " ") != want {
		t.Errorf("members %v, want %s", got, want)
	}
}

func TestSession_FollowsConfiguration(t *testing.T) {
	tests := []struct {
		name string
		edit func(*sdnlb.Config)
		want []string
	}{
		{"MemberDown", func(c *sdnlb.Config) { c.Members[1].Health.Status = sdnlb.MemberDown }, []string{
			"delete cookie=0x5d80000000000002/0xff80000000ffffff",
			"delete cookie=0x5d04000000000002/0xffff000000ffffff",
		}},
		{"MemberDeleted", func(c *sdnlb.Config) { c.Members = c.Members[:2] }, []string{
			"delete cookie=0x5d80000000000003/0xff80000000ffffff",
			"delete cookie=0x5d04000000000003/0xffff000000ffffff",
		}},
		{"MemberMoved", func(c *sdnlb.Config) { c.Members[2].Address, c.Members[2].Port = "10.0.0.33", 0 }, []string{
			"delete cookie=0x5d80000000000003/0xff80000000ffffff",
			"delete cookie=0x5d04000000000003/0xffff000000ffffff",
			"cookie=0x5d04000001000003, priority=900, tcp,nw_src=10.0.0.33,tp_src=80 actions=CONTROLLER:65535",
		}},
		{"MemberAdded", func(c *sdnlb.Config) {
			c.Members = append(c.Members, &sdnlb.Member{ID: "m4", PoolID: "p1", Address: "10.0.0.4", Port: 8080, Weight: 1, AdminStateUp: true})
		}, []string{
			"cookie=0x5d04000001000004, priority=900, tcp,nw_src=10.0.0.4,tp_src=8080 actions=CONTROLLER:65535",
		}},
		{"MemberDrainingKeepsFlows", func(c *sdnlb.Config) { c.Members[0].AdminStateUp = false }, nil},
		{"VIPDisabled", func(c *sdnlb.Config) { c.VIPs[0].AdminStateUp = false }, []string{
			"delete cookie=0x5d02000001000000/0xffffffffff000000",
			"delete cookie=0x5d07000001000000/0xffffffffff000000",
			"delete cookie=0x5d80000001000000/0xff80ffffff000000",
			"delete cookie=0x5d04000000000001/0xffff000000ffffff",
			"delete cookie=0x5d04000000000002/0xffff000000ffffff",
			"delete cookie=0x5d04000000000003/0xffff000000ffffff",
		}},
		{"VIPAdded", func(c *sdnlb.Config) {
			c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.101", Protocol: sdnlb.ProtocolUDP, Port: 53, AdminStateUp: true, MAC: "02:00:00:00:02:00"})
		}, append(testnet.ARPAnswerLines(2, "02:00:00:00:02:00", "10.0.0.101", model.L2Learn),
			"cookie=0x5d02000002000000, priority=500, arp,arp_tpa=10.0.0.101 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=500, arp,dl_dst=02:00:00:00:02:00 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=501, udp,nw_dst=10.0.0.101,tp_dst=53 actions=CONTROLLER:65535",
			"cookie=0x5d02000002000000, priority=499, ip,nw_dst=10.0.0.101 actions=drop",
		)},
		{"VIPPortChanged", func(c *sdnlb.Config) { c.VIPs[0].Port = 8000 }, append(testnet.ARPAnswerLines(1, "02:00:00:00:01:00", "10.0.0.100", model.L2Learn),
			"delete cookie=0x5d02000001000000/0xffffffffff000000",
			"delete cookie=0x5d07000001000000/0xffffffffff000000",
			"delete cookie=0x5d80000001000000/0xff80ffffff000000",
			"cookie=0x5d02000001000000, priority=500, arp,arp_tpa=10.0.0.100 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=500, arp,dl_dst=02:00:00:00:01:00 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=501, tcp,nw_dst=10.0.0.100,tp_dst=8000 actions=CONTROLLER:65535",
			"cookie=0x5d02000001000000, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, sw := connected(t, testnet.Config(nil), Options{})
			h.src.set(testnet.Config(tt.edit))
			var mods []ofp.FlowMod
			for {
				r, quiet := sw.quiet(100 * time.Millisecond)
				if quiet {
					break
				}
				if fm, ok := r.m.(*ofp.FlowMod); ok {
					mods = append(mods, *fm)
				}
			}
			testnet.AssertLines(t, testnet.FlowLines(t, mods), tt.want)
		})
	}
}

func TestSession_Accounting(t *testing.T) {
	h, sw := connected(t, testnet.Config(nil), Options{}, 1, 2, 3)
	sw.packetIn(testnet.ClientOF, testnet.SYN(t, 40000))
	s := nextSetup(t, sw)
	st := waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.TotalConnections == 1 })
	if st.ActiveConnections != 1 || st.Members[0].ActiveConnections != 1 || st.Members[0].Status != sdnlb.MemberNoMonitor {
		t.Errorf("after a setup: %+v", st)
	}

	// A poll in two parts adds what the flows counted.
	h.c.switchConns()[0].pollStats()
	req := sw.nextOf(ofp.TypeMultipartRequest)
	fsr := req.m.(*ofp.MultipartRequest).Body.(ofp.FlowStatsRequest)
	if fsr.Cookie != model.AppID<<model.CookieAppShift || fsr.CookieMask != model.MaskApp {
		t.Errorf("poll asks for cookie %#x/%#x, want every sdnlb flow", fsr.Cookie, fsr.CookieMask)
	}
	sw.send(req.h.XID, ofp.MultipartReply{Flags: ofp.MultipartReplyMore, Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
		{Cookie: s.fwd.Cookie, PacketCount: 3, ByteCount: 300, Match: s.fwd.Match},
	}}})
	sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
		{Cookie: s.rev.Cookie, PacketCount: 2, ByteCount: 200, Match: s.rev.Match},
	}}})
	st = waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.BytesOut == 200 })
	if st.BytesIn != 300 || st.PacketsIn != 3 || st.PacketsOut != 2 {
		t.Errorf("after the poll: %+v", st)
	}

	// The flows end: their flow-removed adds what they counted since the
	// poll, and the next poll, which no longer finds them, takes nothing back.
	sw.send(0, ofp.FlowRemoved{Cookie: s.fwd.Cookie, Reason: ofp.RemovedIdleTimeout, PacketCount: 4, ByteCount: 400, Match: s.fwd.Match})
	sw.send(0, ofp.FlowRemoved{Cookie: s.rev.Cookie, Reason: ofp.RemovedIdleTimeout, PacketCount: 3, ByteCount: 330, Match: s.rev.Match})
	h.c.switchConns()[0].pollStats()
	req = sw.nextOf(ofp.TypeMultipartRequest)
	sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{}})
	st = waitStats(t, h.c, "p1", func(st *sdnlb.PoolStats) bool { return st.BytesIn == 400 && st.BytesOut == 330 })
	want := sdnlb.MemberStats{MemberID: "m1", Address: "10.0.0.1", Port: 8080, Status: sdnlb.MemberNoMonitor,
		TotalConnections: 1, PacketsIn: 4, PacketsOut: 3, BytesIn: 400, BytesOut: 330, EffectiveWeight: 1, SlowStart: 1,
		Nodes: []sdnlb.NodeStats{{TotalConnections: 1, PacketsIn: 4, PacketsOut: 3, BytesIn: 400, BytesOut: 330}}}
	got := st.Members[0]
	if loc := got.Location; loc == nil || *loc != (sdnlb.MemberLocation{DPID: "00:00:00:00:00:00:00:01", Port: "1"}) {
		t.Errorf("member located at %+v, want switch 1's port 1, where it answered", loc)
	}
	got.Location = nil
	if st.ActiveConnections != 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("after flow-removed:\n got %+v\nwant %+v", got, want)
	}

	t.Run("UnknownPool", func(t *testing.T) {
		if _, err := h.c.PoolStats(context.Background(), "nope"); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
			t.Errorf("err %v, want not_found", err)
		}
	})
}

// The stats poll's metrics: the flows its replies carry, and the poll
// timed once its reply is read to the end. The reply to a poll that a
// newer one overtook counts for neither.
func TestSession_StatsPollMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, sw := connected(t, testnet.Config(nil), Options{Registerer: reg})
	s := h.c.switchConns()[0]
	poll := func() uint32 {
		s.pollStats()
		for {
			if r := sw.nextOf(ofp.TypeMultipartRequest); asksFlows(r) {
				return r.h.XID
			}
		}
	}
	polled := func() [2]float64 {
		return [2]float64{counter(t, reg, "sdnlb_controller_stats_poll_flows_total", ""),
			histogramCount(t, reg, "sdnlb_controller_stats_poll_seconds")}
	}
	flows := func(n int) ofp.FlowStatsReply {
		return ofp.FlowStatsReply{Stats: make([]ofp.FlowStats, n)}
	}
	for i := range 2 {
		overtaken, latest := poll(), poll()
		sw.send(overtaken, ofp.MultipartReply{Body: flows(2)})
		sw.send(latest, ofp.MultipartReply{Flags: ofp.MultipartReplyMore, Body: flows(2)})
		waitFor(t, polled, func(got [2]float64) bool { return got == [2]float64{float64(2 + 3*i), float64(i)} })
		sw.send(latest, ofp.MultipartReply{Body: flows(1)})
		waitFor(t, polled, func(got [2]float64) bool { return got == [2]float64{float64(3 + 3*i), float64(1 + i)} })
	}
}

// A stats poll reads its reply into storage the connection keeps: once
// that has grown, a poll allocates a few times a poll, not a flow.
func TestSession_StatsPollAllocatesNothingPerFlow(t *testing.T) {
	const conns = 1000 // 2,000 flows in 8 parts
	p := newPolledSwitch(t, conns)
	p.poll(t)
	if allocs := testing.AllocsPerRun(5, func() { p.poll(t) }); allocs > 2*conns/20 {
		t.Errorf("a poll of %d flows allocated %.0f times", 2*conns, allocs)
	}
}

// histogramCount is how many observations the histogram name holds.
func histogramCount(tb testing.TB, reg *prometheus.Registry, name string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return float64(mf.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
	tb.Fatalf("no histogram %s", name)
	return 0
}

func TestSwitchFlows(t *testing.T) {
	h, sw := connected(t, testnet.Config(nil), Options{})
	t.Run("OK", func(t *testing.T) {
		type result struct {
			flows []*sdnlb.Flow
			err   error
		}
		done := make(chan result, 1)
		go func() {
			f, err := h.c.SwitchFlows(context.Background(), "00:00:00:00:00:00:00:01")
			done <- result{f, err}
		}()
		req := sw.nextOf(ofp.TypeMultipartRequest)
		fsr := req.m.(*ofp.MultipartRequest).Body.(ofp.FlowStatsRequest)
		if fsr.Cookie != model.AppID<<model.CookieAppShift || fsr.CookieMask != model.MaskApp {
			t.Errorf("flows request for cookie %#x/%#x, want every sdnlb flow", fsr.Cookie, fsr.CookieMask)
		}
		v := &model.VIP{Num: 1, IP: netip.AddrFrom4([4]byte{10, 0, 0, 100}), Proto: ofp.IPProtoTCP, Port: 80}
		vf := model.VIPFlows(v, v, model.L2Normal, model.SwitchFeatures{})
		drop, service := vf[len(vf)-1], vf[len(vf)-2]
		sw.send(req.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
			{Cookie: drop.Cookie, Priority: drop.Priority, Match: drop.Match, Instructions: drop.Instructions, DurationSec: 3, DurationNsec: 5e8},
			{Cookie: service.Cookie, Priority: service.Priority, Match: service.Match, Instructions: service.Instructions, PacketCount: 7, ByteCount: 420},
		}}})
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		var lines []string
		for _, f := range r.flows {
			lines = append(lines, fmt.Sprintf("%s %d %s %s %d %d %.1f", f.Cookie, f.Priority, f.Match, f.Actions, f.Packets, f.Bytes, f.DurationSeconds))
		}
		want := []string{
			"0x5d02000001000000 501 tcp,nw_dst=10.0.0.100,tp_dst=80 CONTROLLER:65535 7 420 0.0",
			"0x5d02000001000000 499 ip,nw_dst=10.0.0.100 drop 0 0 3.5",
		}
		if strings.Join(lines, "\n") != strings.Join(want, "\n") {
			t.Errorf("flows\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		for _, dpid := range []string{"00:00:00:00:00:00:00:02", "zz"} {
			if _, err := h.c.SwitchFlows(context.Background(), dpid); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
				t.Errorf("%s: err %v, want not_found", dpid, err)
			}
		}
	})
	t.Run("ErrUnavailableOnTimeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if _, err := h.c.SwitchFlows(ctx, "1"); sdnlb.ErrorCode(err) != sdnlb.EUNAVAILABLE {
			t.Errorf("err %v, want unavailable", err)
		}
	})
}

func waitStats(tb testing.TB, c *Controller, pool string, ok func(*sdnlb.PoolStats) bool) *sdnlb.PoolStats {
	tb.Helper()
	deadline := time.Now().Add(testnet.WaitFor)
	for {
		st, err := c.PoolStats(context.Background(), pool)
		if err != nil {
			tb.Fatal(err)
		}
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pool stats never became as expected: %+v", st)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The handshake learns whether a switch has select groups, and the switch
// list says so.
func TestSession_SelectGroups(t *testing.T) {
	for _, groups := range []bool{false, true} {
		t.Run(fmt.Sprint(groups), func(t *testing.T) {
			h := startController(t, testnet.Config(nil), Options{})
			h.groups = groups
			h.connect(t, 1)
			waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 1 && sws[0].SelectGroups == groups })
		})
	}
}

// A connection that claims the datapath id of a connected switch that
// still answers is refused, and the switch keeps its session; one that
// claims the id of a switch gone silent replaces it (TestSession_Reconnect).
func TestSession_DuplicateDPIDKeepsLiveSwitch(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	real, _ := h.connect(t, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the real switch answers echo requests
		for {
			select {
			case r := <-real.msgs:
				if r.h.Type == ofp.TypeEchoRequest {
					real.send(r.h.XID, ofp.EchoReply{})
				}
			case <-stop:
				return
			}
		}
	}()
	impostor := h.dial(t)
	impostor.send(0, ofp.Hello{Versions: []uint8{ofp.Version}})
	for done := false; !done; {
		select {
		case r := <-impostor.msgs:
			switch m := r.m.(type) {
			case *ofp.FeaturesRequest:
				impostor.send(r.h.XID, ofp.FeaturesReply{DatapathID: 1})
			case *ofp.MultipartRequest:
				if _, ok := m.Body.(ofp.GroupFeaturesRequest); ok {
					impostor.send(r.h.XID, ofp.MultipartReply{Body: ofp.GroupFeaturesReply{}})
				}
				impostor.answerEmpty(r)
			case *ofp.FlowMod:
				t.Fatalf("the impostor got a flow-mod: %s", testnet.FlowLine(t, m))
			}
		case <-impostor.closed:
			done = true
		case <-time.After(testnet.WaitFor):
			t.Fatal("the impostor's connection stays open")
		}
	}
	select {
	case <-real.closed:
		t.Fatal("the real switch lost its session")
	default:
	}
	if c := h.c.switchConn(1); c == nil || c.closed() {
		t.Fatal("datapath 1 has no live session")
	}
	if !strings.Contains(h.log.String(), "claims the datapath id of a connected switch") {
		t.Errorf("no log line for the refusal in\n%s", h.log.String())
	}
}

// Sessions beyond the cap are closed at once; the ones admitted go on.
func TestSession_SessionCap(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{MaxSwitches: 2})
	h.connect(t, 1)
	h.connect(t, 2)
	third := h.dial(t)
	third.waitClosed()
	waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == 2 })
	if !strings.Contains(h.log.String(), "too many switch sessions") {
		t.Errorf("no log line for the refusal in\n%s", h.log.String())
	}
}

// Connections from one source that never say hello fill the handshake
// cap, or with a switch connected the session cap: a switch from another
// source still connects, in the place of the flooder's oldest handshake.
func TestController_HandshakeFloodFromOneSource(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      Options
		connected int // switches connected from 127.0.0.3 before the flood
		flood     int // connections from 127.0.0.1
	}{
		{"HandshakeCap", Options{MaxHandshakes: 4}, 0, 4},
		{"SessionCap", Options{MaxSwitches: 3}, 1, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := startControllerTCP(t, testnet.Config(nil), tt.opts)
			for i := range tt.connected {
				h.handshake(t, h.dialFrom(t, "127.0.0.3"), uint64(10+i))
			}
			var flood []*fakeSwitch
			for range tt.flood {
				sw := h.dialFrom(t, "127.0.0.1")
				sw.nextOf(ofp.TypeHello) // admitted, in its handshake
				flood = append(flood, sw)
			}
			h.handshake(t, h.dialFrom(t, "127.0.0.2"), 1)
			flood[0].waitClosed()
			for i, sw := range flood[1:] {
				select {
				case <-sw.closed:
					t.Errorf("flood connection %d closed; only the oldest makes room", i+1)
				default:
				}
			}
			waitSwitches(t, h.c, func(sws []*sdnlb.Switch) bool { return len(sws) == tt.connected+1 })
			if !strings.Contains(h.log.String(), "switch handshake dropped for a newer connection") {
				t.Errorf("no log line for the drop in\n%s", h.log.String())
			}
		})
	}
}

// Only addresses in the allow-list may connect.
func TestController_AllowList(t *testing.T) {
	for _, tt := range []struct {
		allow string
		ok    bool
	}{{"127.0.0.0/8", true}, {"10.0.0.0/8", false}} {
		t.Run(tt.allow, func(t *testing.T) {
			c := New(newFakeSource(testnet.Config(nil)), Options{Allow: []netip.Prefix{netip.MustParsePrefix(tt.allow)}})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- c.Serve(ctx, ln) }()
			defer func() { cancel(); <-served }()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetReadDeadline(time.Now().Add(testnet.WaitFor))
			_, err = ofp.ReadMessage(bufio.NewReader(conn), nil) // the controller's HELLO, or EOF
			if got := err == nil; got != tt.ok {
				t.Errorf("allow %s: hello read err %v, want admitted=%v", tt.allow, err, tt.ok)
			}
		})
	}
}

// Any TCP peer can send OFPT_ERRORs during the handshake, and a switch
// messages of unknown types after it: each kind writes one log line a
// minute, whatever the flood.
func TestSession_PeerFloodsBoundedLog(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{})
	sw := h.dial(t)
	sw.send(0, ofp.Hello{})
	for i := range 5000 {
		sw.send(uint32(i), &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadType})
	}
	sw.send(9999, ofp.EchoRequest{})
	sw.nextOf(ofp.TypeEchoReply) // every error before it was read
	if n := strings.Count(h.log.String(), "switch error during handshake"); n != 1 {
		t.Errorf("%d log lines for 5,000 errors during a handshake, want 1", n)
	}

	sw2, _ := h.connect(t, 2)
	for range 2000 { // each answered with an error, which the fake switch buffers
		sw2.sendRaw(header(ofp.Version, 99, 8))
	}
	sw2.send(9999, ofp.EchoRequest{})
	sw2.nextOf(ofp.TypeEchoReply)
	if n := strings.Count(h.log.String(), "unsupported OpenFlow message"); n != 1 {
		t.Errorf("%d log lines for 2,000 messages of an unknown type, want 1", n)
	}
}
