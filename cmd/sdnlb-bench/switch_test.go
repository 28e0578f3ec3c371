package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// pipeSwitch is switch 5 of a 3-member IPv4 run speaking of, talking over
// net.Pipe.
func pipeSwitch(tb testing.TB, of dialect) (*fakeSwitch, net.Conn) {
	tb.Helper()
	return pipeSwitchIn(tb, of, ipv4)
}

// pipeSwitchIn is pipeSwitch in family f.
func pipeSwitchIn(tb testing.TB, of dialect, f testFamily) (*fakeSwitch, net.Conn) {
	tb.Helper()
	mine, peer := net.Pipe()
	tb.Cleanup(func() {
		mine.Close()
		peer.Close()
	})
	r := &run{of: of, t: f.target(3), timeout: time.Second}
	return newFakeSwitch(r, 5, mine, 1024), peer
}

// decodeAnswer decodes a message of the switch s with the codec of its
// version; the header's Type is the message's 1.3 type.
func decodeAnswer(tb testing.TB, s *fakeSwitch, msg []byte) (ofp.Header, ofp.Message) {
	tb.Helper()
	h, err := ofp.ParseHeader(msg)
	if err != nil {
		tb.Fatal(err)
	}
	var m ofp.Message
	if h.Version == ofp10.Version {
		_, m, err = ofp10.Decode(msg)
	} else {
		_, m, err = ofp.Decode(msg)
	}
	if err != nil {
		tb.Fatalf("the switch answered an undecodable message: %v", err)
	}
	if h.Version != s.run.of.version() {
		tb.Fatalf("the switch answered in version %#x, want %#x", h.Version, s.run.of.version())
	}
	h.Type = m.Type()
	return h, m
}

// exchange has s handle msg and returns what it answered, if anything.
func exchange(tb testing.TB, s *fakeSwitch, peer net.Conn, msg []byte) (ofp.Header, ofp.Message, error) {
	tb.Helper()
	wrote, handled := make(chan bool, 1), make(chan error, 1)
	go func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		err := s.handle(msg)
		wrote <- s.w.Buffered() > 0
		handled <- errors.Join(err, s.flush())
	}()
	// A write to a net.Pipe blocks until it is read: read only when the
	// switch has something to send, so no answer needs no timeout.
	if !<-wrote {
		return ofp.Header{}, nil, <-handled
	}
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, rerr := ofp.ReadMessage(bufio.NewReader(peer), nil)
	err := <-handled
	if rerr != nil {
		tb.Fatalf("read the answer: %v", rerr)
	}
	h, m := decodeAnswer(tb, s, answer)
	return h, m, err
}

// handleCase is one message a switch handles, and what it should answer.
type handleCase struct {
	name     string
	msg      []byte
	wantType ofp.Type // 0xff: no answer
	check    func(t *testing.T, s *fakeSwitch, h ofp.Header, m ofp.Message)
	wantErr  bool
}

func checkHandle(t *testing.T, of dialect, tests []handleCase) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, peer := pipeSwitch(t, of)
			h, m, err := exchange(t, s, peer, tt.msg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("handle: %v, want error: %t", err, tt.wantErr)
			}
			gotType := ofp.Type(0xff)
			if m != nil {
				gotType = h.Type
			}
			if gotType != tt.wantType {
				t.Fatalf("answer %v, want %v", gotType, tt.wantType)
			}
			if tt.check != nil {
				tt.check(t, s, h, m)
			}
		})
	}
}

func TestFakeSwitch_Handle(t *testing.T) {
	hello10 := ofp.Append(nil, 1, &ofp.Hello{Versions: []uint8{1}})
	hello10[0] = 1
	checkHandle(t, dialect13{}, []handleCase{
		{"HelloBitmap", ofp.Append(nil, 1, &ofp.Hello{Versions: []uint8{1, 4, 5}}), 0xff, nil, false},
		{"ErrHelloWithout13", hello10, ofp.TypeError, func(t *testing.T, _ *fakeSwitch, _ ofp.Header, m ofp.Message) {
			if e := m.(*ofp.ErrorMsg); e.ErrType != ofp.ErrTypeHelloFailed || e.Code != ofp.HelloFailedIncompatible {
				t.Errorf("error %v code %d, want HELLO_FAILED/INCOMPATIBLE", e.ErrType, e.Code)
			}
		}, true},
		{"Echo", ofp.Append(nil, 77, &ofp.EchoRequest{Data: []byte("ping")}), ofp.TypeEchoReply, func(t *testing.T, _ *fakeSwitch, h ofp.Header, m ofp.Message) {
			if h.XID != 77 || string(m.(*ofp.EchoReply).Data) != "ping" {
				t.Errorf("echo reply xid %d data %q, want 77 and the request's data", h.XID, m.(*ofp.EchoReply).Data)
			}
		}, false},
		{"Features", ofp.Append(nil, 3, &ofp.FeaturesRequest{}), ofp.TypeFeaturesReply, func(t *testing.T, s *fakeSwitch, h ofp.Header, m ofp.Message) {
			if f := m.(*ofp.FeaturesReply); h.XID != 3 || f.DatapathID != s.dpid || f.DatapathID&0xffff != 6 {
				t.Errorf("features xid %d dpid %#x, want 3 and the switch's dpid ending in 6", h.XID, f.DatapathID)
			}
		}, false},
		{"GetConfig", ofp.Append(nil, 4, &ofp.GetConfigRequest{}), ofp.TypeGetConfigReply, nil, false},
		{"SetConfig", ofp.Append(nil, 4, &ofp.SetConfig{MissSendLen: 0xffff}), 0xff, nil, false},
		{"Barrier", ofp.Append(nil, 9, &ofp.BarrierRequest{}), ofp.TypeBarrierReply, func(t *testing.T, s *fakeSwitch, h ofp.Header, _ ofp.Message) {
			select {
			case <-s.barrier:
			default:
				t.Error("the barrier is not marked as seen")
			}
		}, false},
		{"PortDesc", ofp.Append(nil, 5, &ofp.MultipartRequest{Body: ofp.PortDescRequest{}}), ofp.TypeMultipartReply, func(t *testing.T, _ *fakeSwitch, _ ofp.Header, m ofp.Message) {
			var got []uint32
			for _, p := range m.(*ofp.MultipartReply).Body.(ofp.PortDescReply).Ports {
				got = append(got, p.PortNo)
			}
			if want := []uint32{clientPort, memberPort0, memberPort0 + 1, memberPort0 + 2, ofp.PortLocal}; !reflect.DeepEqual(got, want) {
				t.Errorf("ports %v, want %v", got, want)
			}
		}, false},
		{"FlowStatsEmpty", ofp.Append(nil, 6, &ofp.MultipartRequest{Body: ofp.FlowStatsRequest{TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}}),
			ofp.TypeMultipartReply, func(t *testing.T, _ *fakeSwitch, _ ofp.Header, m ofp.Message) {
				if r := m.(*ofp.MultipartReply).Body.(ofp.FlowStatsReply); len(r.Stats) != 0 {
					t.Errorf("%d flow stats, want none", len(r.Stats))
				}
			}, false},
		{"Role", ofp.Append(nil, 8, &ofp.RoleRequest{Role: ofp.RoleMaster, GenerationID: 42}), ofp.TypeRoleReply, func(t *testing.T, _ *fakeSwitch, _ ofp.Header, m ofp.Message) {
			if r := m.(*ofp.RoleReply); r.Role != ofp.RoleMaster || r.GenerationID != 42 {
				t.Errorf("role reply %+v, want master generation 42", r)
			}
		}, false},
		{"ErrorCounted", ofp.Append(nil, 2, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadLen}), 0xff, func(t *testing.T, s *fakeSwitch, _ ofp.Header, _ ofp.Message) {
			if s.ofpErrors != 1 || s.firstErr == nil || s.firstErr.Code != ofp.BadRequestBadLen {
				t.Errorf("ofpErrors %d first %v, want 1 BAD_LEN", s.ofpErrors, s.firstErr)
			}
		}, false},
		{"UnknownTypeRejected", ofp.Append(nil, 10, &ofp.Experimenter{Experimenter: 0x2320}), ofp.TypeError, func(t *testing.T, _ *fakeSwitch, h ofp.Header, m ofp.Message) {
			if e := m.(*ofp.ErrorMsg); h.XID != 10 || e.ErrType != ofp.ErrTypeBadRequest || e.Code != ofp.BadRequestBadType {
				t.Errorf("xid %d error %v code %d, want 10 BAD_REQUEST/BAD_TYPE", h.XID, e.ErrType, e.Code)
			}
		}, false},
		{"FlowModApplied", ofp.Append(nil, 11, puntFlow(0x42, 0)), 0xff, func(t *testing.T, s *fakeSwitch, _ ofp.Header, _ ofp.Message) {
			if flows := s.table.Flows(); len(flows) != 1 || flows[0].Cookie != 0x42 || s.tableRejects != 0 {
				t.Errorf("table %q, %d rejects; want the flow 0x42 and none", s.table.Lines(), s.tableRejects)
			}
		}, false},
		// oftable does not model vlan_pcp: the switch goes on, counts the
		// flow-mod and keeps the table as it was.
		{"FlowModRefusedCounted", ofp.Append(nil, 12, puntFlow(0x43, 600, ofp.MatchVLANVID(5), ofp.MatchVLANPCP(3))),
			0xff, func(t *testing.T, s *fakeSwitch, _ ofp.Header, _ ofp.Message) {
				if s.tableRejects != 1 || s.firstReject == nil || !strings.Contains(s.firstReject.Error(), "vlan_pcp") || len(s.table.Flows()) != 0 {
					t.Errorf("%d rejects (first %v), table %q; want 1 about vlan_pcp and an empty table", s.tableRejects, s.firstReject, s.table.Lines())
				}
				if len(s.warmFlows) != 1 {
					t.Errorf("%d flow-mods recorded, want the refused one too", len(s.warmFlows))
				}
			}, false},
		{"ErrOtherVersion", func() []byte { b := ofp.Append(nil, 1, &ofp.EchoRequest{}); b[0] = 6; return b }(), 0xff, nil, true},
		{"ErrShortFlowMod", func() []byte { b := ofp.Append(nil, 1, &ofp.BarrierRequest{}); b[1] = byte(ofp.TypeFlowMod); return b }(), 0xff, nil, true},
	})
}

// mustAppend10 encodes m as OpenFlow 1.0.
func mustAppend10(tb testing.TB, xid uint32, m ofp.Message) []byte {
	tb.Helper()
	b, err := ofp10.Append(nil, xid, m)
	if err != nil {
		tb.Fatalf("encode %T as 1.0: %v", m, err)
	}
	return b
}

// TestFakeSwitch_Handle10 is the handshake of a 1.0 switch with sdnlb's
// controller, which offers 1.0 and 1.3 in a 1.3 hello, then speaks 1.0.
func TestFakeSwitch_Handle10(t *testing.T) {
	portDesc := mustAppend10(t, 5, &ofp.MultipartRequest{Body: ofp.DescRequest{}})
	binary.BigEndian.PutUint16(portDesc[ofp.HeaderLen:], uint16(ofp.MultipartPortDesc)) // no such stats in 1.0
	role := ofp.Append(nil, 8, &ofp.RoleRequest{Role: ofp.RoleMaster})
	role[0] = ofp10.Version
	flowStats := func(r ofp.FlowStatsRequest) []byte {
		return mustAppend10(t, 6, &ofp.MultipartRequest{Body: r})
	}
	checkHandle(t, dialect10{}, []handleCase{
		{"HelloBitmap", ofp.Append(nil, 1, &ofp.Hello{Versions: []uint8{ofp10.Version, ofp.Version}}), 0xff, nil, false},
		{"Hello10", mustAppend10(t, 1, &ofp.Hello{}), 0xff, nil, false},
		{"ErrHelloWithout10", ofp.Append(nil, 1, &ofp.Hello{Versions: []uint8{ofp.Version}}), ofp.TypeError, func(t *testing.T, _ *fakeSwitch, _ ofp.Header, m ofp.Message) {
			if e := m.(*ofp.ErrorMsg); e.ErrType != ofp.ErrTypeHelloFailed || e.Code != ofp.HelloFailedIncompatible {
				t.Errorf("error %v code %d, want HELLO_FAILED/INCOMPATIBLE", e.ErrType, e.Code)
			}
		}, true},
		{"Echo", mustAppend10(t, 77, &ofp.EchoRequest{Data: []byte("ping")}), ofp.TypeEchoReply, func(t *testing.T, _ *fakeSwitch, h ofp.Header, m ofp.Message) {
			if h.XID != 77 || string(m.(*ofp.EchoReply).Data) != "ping" {
				t.Errorf("echo reply xid %d data %q, want 77 and the request's data", h.XID, m.(*ofp.EchoReply).Data)
			}
		}, false},
		// The port list is the one the 1.3 mode gives in its port-desc reply.
		{"Features", mustAppend10(t, 3, &ofp.FeaturesRequest{}), ofp.TypeFeaturesReply, func(t *testing.T, s *fakeSwitch, h ofp.Header, m ofp.Message) {
			f := m.(*ofp10.FeaturesReply)
			if h.XID != 3 || f.DatapathID != s.dpid {
				t.Errorf("features xid %d dpid %#x, want 3 and %#x", h.XID, f.DatapathID, s.dpid)
			}
			if want := s.ports(); !reflect.DeepEqual(f.Ports, want) {
				t.Errorf("ports\n%+v\nwant\n%+v", f.Ports, want)
			}
			if f.Actions != actions10 {
				t.Errorf("actions %#x, want %#x", f.Actions, actions10)
			}
		}, false},
		{"SetConfig", mustAppend10(t, 4, &ofp.SetConfig{MissSendLen: 0xffff}), 0xff, nil, false},
		{"Barrier", mustAppend10(t, 9, &ofp.BarrierRequest{}), ofp.TypeBarrierReply, func(t *testing.T, s *fakeSwitch, h ofp.Header, _ ofp.Message) {
			select {
			case <-s.barrier:
			default:
				t.Error("the barrier is not marked as seen")
			}
		}, false},
		{"FlowStatsEmptyTable", flowStats(ofp.FlowStatsRequest{TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}),
			ofp.TypeMultipartReply, func(t *testing.T, _ *fakeSwitch, _ ofp.Header, m ofp.Message) {
				if r := m.(*ofp.MultipartReply); len(r.Body.(ofp.FlowStatsReply).Stats) != 0 || r.Flags != 0 {
					t.Errorf("reply %+v, want one without flows", r)
				}
			}, false},
		{"ErrFlowStatsByMatch", flowStats(ofp.FlowStatsRequest{TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0806)}}}), 0xff, nil, true},
		{"PortStats", mustAppend10(t, 7, &ofp.MultipartRequest{Body: ofp.PortStatsRequest{PortNo: ofp.PortAny}}), ofp.TypeMultipartReply, nil, false},
		{"PortDescRejected", portDesc, ofp.TypeError, func(t *testing.T, _ *fakeSwitch, h ofp.Header, m ofp.Message) {
			if e := m.(*ofp.ErrorMsg); h.XID != 5 || e.ErrType != ofp.ErrTypeBadRequest || e.Code != ofp.BadRequestBadMultipart {
				t.Errorf("xid %d error %v code %d, want 5 BAD_REQUEST/BAD_STAT", h.XID, e.ErrType, e.Code)
			}
		}, false},
		{"RoleRejected", role, ofp.TypeError, func(t *testing.T, _ *fakeSwitch, h ofp.Header, m ofp.Message) {
			if e := m.(*ofp.ErrorMsg); h.XID != 8 || e.ErrType != ofp.ErrTypeBadRequest || e.Code != ofp.BadRequestBadType {
				t.Errorf("xid %d error %v code %d, want 8 BAD_REQUEST/BAD_TYPE", h.XID, e.ErrType, e.Code)
			}
		}, false},
		{"ErrorCounted", mustAppend10(t, 2, &ofp.ErrorMsg{ErrType: ofp.ErrTypeFlowModFailed, Code: ofp.FlowModFailedTableFull}), 0xff, func(t *testing.T, s *fakeSwitch, _ ofp.Header, _ ofp.Message) {
			if s.ofpErrors != 1 || s.firstErr == nil || s.firstErr.ErrType != ofp.ErrTypeFlowModFailed {
				t.Errorf("ofpErrors %d first %v, want 1 FLOW_MOD_FAILED", s.ofpErrors, s.firstErr)
			}
		}, false},
		{"FlowModApplied", mustAppend10(t, 11, puntFlow(0x42, 0)), 0xff, func(t *testing.T, s *fakeSwitch, _ ofp.Header, _ ofp.Message) {
			if flows := s.table.Flows(); len(flows) != 1 || flows[0].Cookie != 0x42 || s.tableRejects != 0 {
				t.Errorf("table %q, %d rejects; want the flow 0x42 and none", s.table.Lines(), s.tableRejects)
			}
		}, false},
		{"ErrOtherVersion", ofp.Append(nil, 1, &ofp.EchoRequest{}), 0xff, nil, true},
		{"ErrShortFlowMod", func() []byte {
			b := mustAppend10(t, 1, &ofp.BarrierRequest{})
			b[1] = byte(ofp10.TypeFlowMod)
			return b
		}(), 0xff, nil, true},
	})
}

// TestFakeSwitch_FlowMods10 has a 1.0 switch take the controller's
// flow-mods into its table model, a strict delete (how a 1.0 controller
// removes a flow of a cookie) included, and list them in flow stats.
func TestFakeSwitch_FlowMods10(t *testing.T) {
	s, peer := pipeSwitch(t, dialect10{})
	tg := &s.run.t
	fwd, rev := natFlows(s.clientIP(), clientPortBase, [6]byte{2, 0xaa, 0, 0, 0, 1}, tg, &tg.members[1])
	fwd.Cookie, rev.Cookie = 0x51, 0x52
	del := *fwd
	del.Command, del.Instructions = ofp.FlowDeleteStrict, nil
	for i, fm := range []*ofp.FlowMod{puntFlow(0x42, 0), fwd, rev, &del} {
		fm.OutPort, fm.OutGroup, fm.BufferID = ofp.PortAny, ofp.GroupAny, ofp.NoBuffer
		if _, m, err := exchange(t, s, peer, mustAppend10(t, uint32(i), fm)); err != nil || m != nil {
			t.Fatalf("flow-mod %d: answered %v, %v; want nothing", i, m, err)
		}
	}
	if s.tableRejects != 0 || len(s.warmFlows) != 4 {
		t.Fatalf("%d rejects (first %v), %d flow-mods recorded; want none and 4", s.tableRejects, s.firstReject, len(s.warmFlows))
	}
	_, m, err := exchange(t, s, peer, mustAppend10(t, 6, &ofp.MultipartRequest{
		Body: ofp.FlowStatsRequest{TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range m.(*ofp.MultipartReply).Body.(ofp.FlowStatsReply).Stats {
		got = append(got, oftable.Flow{Cookie: st.Cookie, Priority: st.Priority, Match: st.Match, Instructions: st.Instructions}.String())
	}
	slices.Sort(got) // as Lines sorts
	if want := s.table.Lines(); len(want) != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("flow stats\n%q\nwant the table without the deleted flow\n%q", got, want)
	}
	if slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "cookie=0x51") }) {
		t.Errorf("the strictly deleted flow 0x51 is still listed: %q", got)
	}
}

// A 1.0 flow stats reply holds 64 flows; more go in several replies
// flagged REPLY_MORE but the last.
func TestFakeSwitch_FlowStats10Split(t *testing.T) {
	s, peer := pipeSwitch(t, dialect10{})
	const n = 2*flowStatsPerReply + 5
	for i := range n {
		ip := [4]byte{10, 0, byte(i >> 8), byte(i)}
		if _, err := s.table.Apply(puntFlow(uint64(i), 100, ofp.MatchEthType(0x0800), ofp.MatchIPv4Dst(ip))); err != nil {
			t.Fatal(err)
		}
	}
	handled := make(chan error, 1)
	go func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		err := s.handle(mustAppend10(t, 6, &ofp.MultipartRequest{
			Body: ofp.FlowStatsRequest{TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}}))
		handled <- errors.Join(err, s.flush())
	}()
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(peer)
	var sizes []int
	cookies := map[uint64]bool{}
	for more := true; more; {
		msg, err := ofp.ReadMessage(r, nil)
		if err != nil {
			t.Fatalf("after %d replies: %v", len(sizes), err)
		}
		_, m := decodeAnswer(t, s, msg)
		reply := m.(*ofp.MultipartReply)
		stats := reply.Body.(ofp.FlowStatsReply).Stats
		sizes = append(sizes, len(stats))
		for _, st := range stats {
			cookies[st.Cookie] = true
		}
		more = reply.Flags&ofp.MultipartReplyMore != 0
	}
	if err := <-handled; err != nil {
		t.Fatal(err)
	}
	if want := []int{flowStatsPerReply, flowStatsPerReply, 5}; !slices.Equal(sizes, want) || len(cookies) != n {
		t.Errorf("replies of %v flows, %d distinct; want %v and all %d", sizes, len(cookies), want, n)
	}
}

// question is the controller's question for target's MAC in target's
// family: an ARP request from the VIP's address, a neighbour solicitation
// from :: to target's solicited-node group.
func question(tb testing.TB, mac [6]byte, asker, target netip.Addr) []byte {
	tb.Helper()
	var frame []byte
	var err error
	if target.Is4() {
		frame, err = arpFrame(1, broadcastMAC, mac[:], asker, zeroMAC, target)
	} else {
		group := solicitedNode(target)
		frame, err = ndFrame(layers.CreateICMPv6TypeCode(ndSolicitation, 0), multicastMAC(group), mac, asker, group, target, 0)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return frame
}

func TestFakeSwitch_AnswersForItsHosts(t *testing.T) {
	controllerMAC := [6]byte{0x02, 0xcc, 0, 0, 0, 1}
	for _, mode := range modes {
		f := mode.family
		vip, member2 := f.vip.Addr(), f.firstMember.Next()
		asker, answered := vip, vip // ARP: the asker; ND: all nodes, for a question from ::
		if vip.Is6() {
			asker, answered = netip.IPv6Unspecified(), allNodes
		}
		tests := []struct {
			name     string
			asker    netip.Addr
			target   netip.Addr
			wantPort uint32 // 0: no answer
			wantMAC  [6]byte
		}{
			{"Member", asker, member2, memberPort0 + 1, [6]byte{0x02, 0x5d, 0xb0, member2.As16()[13], 0, 2}},
			{"Client", asker, clientIP(vip, clientBase(5)+3), clientPort, [6]byte{0x02, 0x5d, 0xb0, 0xc1, 0, 5}},
			{"FromMemberItself", member2, member2, 0, [6]byte{}},
			{"OtherSwitchsClient", asker, clientIP(vip, clientBase(6)), 0, [6]byte{}},
			{"Stranger", asker, f.addr([4]byte{192, 0, 2, 1}), 0, [6]byte{}},
		}
		for _, tt := range tests {
			t.Run(tt.name+"/"+mode.name(), func(t *testing.T) {
				of := mode.of
				s, peer := pipeSwitchIn(t, of, f)
				po, err := of.appendMsg(nil, 1, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: ofp.PortController,
					Actions: []ofp.Action{ofp.ActionOutput{Port: ofp.PortFlood}}, Data: question(t, controllerMAC, tt.asker, tt.target)})
				if err != nil {
					t.Fatal(err)
				}
				_, m, err := exchange(t, s, peer, po)
				if err != nil {
					t.Fatalf("handle: %v", err)
				}
				if tt.wantPort == 0 {
					if m != nil {
						t.Fatalf("answered %T, want no answer", m)
					}
					return
				}
				pin, ok := m.(*ofp.PacketIn)
				if !ok {
					t.Fatalf("answered %T, want a packet-in", m)
				}
				port, _ := pin.Match.InPort()
				got, ok := parseNeighbour(pin.Data)
				want := neighbour{about: tt.target, mac: tt.wantMAC, peer: answered}
				if port != tt.wantPort || !ok || got != want {
					t.Errorf("packet-in from port %d with %+v, want port %d with %+v", port, got, tt.wantPort, want)
				}
			})
		}
	}
}

// TestFakeSwitch_ARPReplyFollowsTable checks that the switch's answers
// to the controller's ARP carry what its table gives them, and that an
// answer a flow takes elsewhere is counted instead of sent.
func TestFakeSwitch_ARPReplyFollowsTable(t *testing.T) {
	controllerMAC := [6]byte{0x02, 0xcc, 0, 0, 0, 1}
	tests := []struct {
		name          string
		flows         []*ofp.FlowMod
		wantReason    uint8
		wantCookie    uint64
		wantNotPunted bool
	}{
		{"NoFlow", nil, ofp.ReasonNoMatch, noFlowCookie, false},
		{"TableMiss", []*ofp.FlowMod{puntFlow(0x77, 0)}, ofp.ReasonNoMatch, 0x77, false},
		{"ARPPunt", []*ofp.FlowMod{puntFlow(0x77, 0), puntFlow(0x78, 500, ofp.MatchEthType(0x0806), ofp.MatchARPOp(2))},
			ofp.ReasonAction, 0x78, false},
		{"TakenByL2Flow", []*ofp.FlowMod{puntFlow(0x77, 0), flowTo(0x79, 100, []uint32{clientPort}, ofp.MatchEthDst(controllerMAC))},
			0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, peer := pipeSwitch(t, dialect13{})
			for _, fm := range tt.flows {
				if _, err := s.table.Apply(fm); err != nil {
					t.Fatal(err)
				}
			}
			req := question(t, controllerMAC, ipv4.vip.Addr(), ipv4.firstMember.Next())
			po := ofp.Append(nil, 1, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: ofp.PortController,
				Actions: []ofp.Action{ofp.ActionOutput{Port: ofp.PortFlood}}, Data: req})
			_, m, err := exchange(t, s, peer, po)
			if err != nil {
				t.Fatalf("handle: %v", err)
			}
			if tt.wantNotPunted {
				if m != nil || s.notPunted != 1 || !errors.Is(s.firstNotPunted, errNotPunted) {
					t.Errorf("answered %T, %d not punted (first %v); want no answer and 1", m, s.notPunted, s.firstNotPunted)
				}
				return
			}
			pin, ok := m.(*ofp.PacketIn)
			if !ok || pin.Reason != tt.wantReason || pin.Cookie != tt.wantCookie || s.notPunted != 0 {
				t.Fatalf("answered %+v, %d not punted; want a packet-in with reason %d cookie %#x", m, s.notPunted, tt.wantReason, tt.wantCookie)
			}
		})
	}
}

func TestFakeSwitch_SetupAccounting(t *testing.T) {
	type step struct {
		op string // "send" k setups, "answer"/"refuse"/"misroute" setup n, "sweep" at n seconds
		n  uint64
	}
	tests := []struct {
		name            string
		window          int
		steps           []step
		want            swStats // perMember left out
		wantOutstanding int
		wantNext        uint64
	}{
		{"InTime", 0, []step{{"send", 3}, {"answer", 1}, {"answer", 3}, {"answer", 2}},
			swStats{setups: 3}, 0, 4},
		{"LateAfterTimeout", 0, []step{{"send", 2}, {"answer", 2}, {"sweep", 2}, {"answer", 1}},
			swStats{setups: 1, timeouts: 1, late: 1}, 0, 3},
		{"Duplicate", 0, []step{{"send", 1}, {"answer", 1}, {"answer", 1}},
			swStats{setups: 1, unmatched: 1}, 0, 2},
		{"NeverSent", 0, []step{{"send", 1}, {"answer", 7}},
			swStats{unmatched: 1}, 1, 2},
		{"SweepKeepsYoungOnes", 0, []step{{"send", 2}, {"sweep", 0}},
			swStats{}, 2, 3},
		// Setup 1025 takes setup 1's slot and times it out; an answer to 1
		// after that cannot be told from a stray one.
		{"RingWrap", 0, []step{{"send", 1025}, {"answer", 1}, {"answer", 1025}},
			swStats{timeouts: 1, unmatched: 1, setups: 1}, 1023, 1026},
		{"Refused", 0, []step{{"send", 1}, {"refuse", 1}},
			swStats{refused: 1}, 0, 2},
		{"BadRewrite", 0, []step{{"send", 1}, {"misroute", 1}},
			swStats{badRewrite: 1}, 0, 2},
		{"WindowRefilled", 2, []step{{"sweep", 0}, {"answer", 1}, {"refuse", 2}},
			swStats{setups: 1, refused: 1}, 2, 5},
		{"WindowReplacesTimeouts", 2, []step{{"sweep", 0}, {"sweep", 2}, {"answer", 3}},
			swStats{timeouts: 2, setups: 1}, 2, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := pipeSwitch(t, dialect13{})
			s.run.window = tt.window
			s.run.sending.Store(true)
			s.run.budget.Store(1 << 40)
			s.syn = mustSYNTemplate(t, ipv4, s.idx)
			s.next, s.oldest = 1, 1 // setup 0 is the warm-up's
			s.measuring, s.measureFrom = true, 1
			m := &s.run.t.members[0]
			good := rewrite{ipDst: m.ip, ethDst: m.mac, outPort: m.ofPort, outputs: 1, has: 1<<oxmIPv4Dst | 1<<oxmEthDst}
			bad := good
			bad.outPort = clientPort
			for _, st := range tt.steps {
				switch st.op {
				case "send":
					for range st.n {
						s.sendSeq(0)
					}
				case "answer":
					s.complete(st.n, &good, false)
				case "refuse":
					s.complete(st.n, &rewrite{}, true)
				case "misroute":
					s.complete(st.n, &bad, false)
				case "sweep":
					s.sweep(int64(st.n) * int64(time.Second))
				}
			}
			got := s.stats
			got.perMember = nil
			if !reflect.DeepEqual(got, tt.want) || s.outstanding != tt.wantOutstanding || s.next != tt.wantNext {
				t.Errorf("stats %+v, %d in flight, next %d; want %+v, %d, %d", got, s.outstanding, s.next, tt.want, tt.wantOutstanding, tt.wantNext)
			}
			if s.hist.n != tt.want.setups {
				t.Errorf("%d latency samples, want one per completed setup: %d", s.hist.n, tt.want.setups)
			}
		})
	}
}

// BenchmarkFakeSwitch_HandlePacketOut is the fake switch's per-setup
// work on the controller's answer: parse, check the rewrite, account.
func BenchmarkFakeSwitch_HandlePacketOut(b *testing.B) {
	s, _ := pipeSwitch(b, dialect13{})
	s.measuring, s.measureFrom = true, 1
	t := &s.run.t
	frame, err := synFrame(testClientMAC, testVIPMAC, s.clientIP(), t.vip, clientPortBase+1, t.vipPort)
	if err != nil {
		b.Fatal(err)
	}
	msg := ofp.Append(nil, 1, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: clientPort,
		Actions: natActions(&t.members[1]), Data: frame})
	b.ReportAllocs()
	for range b.N {
		s.ring[1&s.mask] = pending{seq: 2} // setup 1 in flight
		s.outstanding++
		if err := s.handlePacketOut(msg); err != nil {
			b.Fatal(err)
		}
	}
	if s.stats.setups != uint64(b.N) {
		b.Fatalf("%d setups completed, want %d", s.stats.setups, b.N)
	}
}
