package ofp10

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

var (
	macHost  = [6]byte{0xf2, 0x0b, 0xa4, 0x7d, 0xf8, 0xea}
	macBcast = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	arpFrame = []byte{
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf2, 0x0b, 0xa4, 0x7d, 0xf8, 0xea, 0x08, 0x06,
		0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,
		0xf2, 0x0b, 0xa4, 0x7d, 0xf8, 0xea, 0x0a, 0x00, 0x00, 0x01,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x00, 0x00, 0x03,
	}
	vip = [4]byte{10, 0, 0, 100}
)

// 1.3 port feature bits (ofp_port_features) the vectors use.
const (
	feature10MBFD  uint32 = 1 << 1
	feature100MBFD uint32 = 1 << 3
	feature1GBFD   uint32 = 1 << 5
	feature10GBFD  uint32 = 1 << 6
	featureCopper  uint32 = 1 << 11
	featureFiber   uint32 = 1 << 12
	featureAutoneg uint32 = 1 << 13
)

type goldenCase struct {
	name   string // testdata/golden/NAME.hex and NAME.txt
	msg    ofp.Message
	nicira bool // encoded by AppendNicira
}

// append encodes tc.msg as the vector was encoded.
func (tc *goldenCase) append(b []byte, xid uint32) ([]byte, error) {
	if tc.nicira {
		return AppendNicira(b, xid, tc.msg)
	}
	return Append(b, xid, tc.msg)
}

// synPunt is the match of a CONTROLLER VIP's SYN punt, in the order Open
// vSwitch writes its fields.
func synPunt(flags, mask uint16) ofp.Match {
	return ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthDst([6]byte{2, 0, 0, 0, 1, 0}), ofp.MatchEthType(0x0800),
		ofp.MatchIPv4Dst(vip), ofp.MatchIPProto(6), ofp.MatchTCPDst(80), ofp.MatchTCPFlags(flags, mask)}}
}

// natMatch is a load-balanced connection's client->VIP flow match.
func natMatch() ofp.Match {
	return ofp.Match{OXMs: []ofp.OXM{
		ofp.MatchInPort(1), ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
		ofp.MatchIPv4Src([4]byte{10, 0, 0, 1}), ofp.MatchIPv4DstMasked([4]byte{10, 0, 0, 0}, [4]byte{255, 255, 255, 0}),
		ofp.MatchTCPSrc(40000), ofp.MatchTCPDst(80),
	}}
}

func natActions() []ofp.Instruction {
	return []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
		ofp.ActionSetField{Field: ofp.MatchEthDst([6]byte{2, 0, 0, 0, 0, 2})},
		ofp.ActionSetField{Field: ofp.MatchIPv4Dst([4]byte{10, 0, 0, 2})},
		ofp.ActionSetField{Field: ofp.MatchTCPDst(8080)},
		ofp.ActionOutput{Port: 3},
	}}}
}

func arpMatch() ofp.Match {
	return ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0806), ofp.MatchARPOp(1), ofp.MatchARPTPA(vip)}}
}

func toController() []ofp.Instruction {
	return []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
		ofp.ActionOutput{Port: ofp.PortController, MaxLen: ofp.ControllerMaxLenNoBuffer}}}}
}

var (
	port1 = ofp.Port{PortNo: 1, HWAddr: [6]byte{2, 0, 0, 0, 0, 1}, Name: "eth1", State: ofp.PortStateLive,
		Curr:       feature1GBFD | featureCopper | featureAutoneg,
		Advertised: feature1GBFD | featureCopper | featureAutoneg,
		Supported:  feature10MBFD | feature100MBFD | feature1GBFD | featureCopper | featureAutoneg,
		CurrSpeed:  1_000_000, MaxSpeed: 1_000_000}
	portLocal = ofp.Port{PortNo: ofp.PortLocal, HWAddr: [6]byte{2, 0, 0, 0, 0, 0xfe}, Name: "br0",
		Config: ofp.PortConfigDown, State: ofp.PortStateLinkDown}
	port2Blocked = ofp.Port{PortNo: 2, HWAddr: [6]byte{2, 0, 0, 0, 0, 2}, Name: "eth2",
		State: ofp.PortStateBlocked | ofp.PortStateLive,
		Curr:  feature10GBFD | featureFiber, Supported: feature10GBFD | featureFiber,
		CurrSpeed: 10_000_000, MaxSpeed: 10_000_000}
)

func goldenCases() []goldenCase {
	return []goldenCase{
		// Sent by ovs-ofctl (controller to switch).
		{name: "hello", msg: &ofp.Hello{Versions: []uint8{Version}}},
		{name: "features_request", msg: &ofp.FeaturesRequest{}},
		{name: "echo_request", msg: &ofp.EchoRequest{}},
		{name: "barrier_request", msg: &ofp.BarrierRequest{}},
		{name: "set_config", msg: &ofp.SetConfig{Flags: ofp.ConfigFragDrop, MissSendLen: 128}},
		{name: "packet_out", msg: &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: ofp.PortController,
			Actions: []ofp.Action{ofp.ActionOutput{Port: 1}}, Data: arpFrame}},
		{name: "flow_mod_nat", msg: &ofp.FlowMod{Cookie: 0x100000002, IdleTimeout: 60, HardTimeout: 300,
			Priority: 1000, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Flags: ofp.FlagSendFlowRem, Match: natMatch(), Instructions: natActions()}},
		{name: "flow_mod_udp", msg: &ofp.FlowMod{IdleTimeout: 10, Priority: 900, BufferID: ofp.NoBuffer,
			OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthSrc([6]byte{2, 0, 0, 0, 0, 2}), ofp.MatchEthType(0x0800),
				ofp.MatchIPProto(17), ofp.MatchIPv4Src([4]byte{10, 0, 0, 2}), ofp.MatchUDPSrc(53)}},
			Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
				ofp.ActionSetField{Field: ofp.MatchEthSrc([6]byte{2, 0, 0, 0, 1, 0})},
				ofp.ActionSetField{Field: ofp.MatchIPv4Src(vip)},
				ofp.ActionSetField{Field: ofp.MatchUDPSrc(5353)},
				ofp.ActionOutput{Port: 1},
			}}}}},
		{name: "flow_mod_arp", msg: &ofp.FlowMod{Priority: 510, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny,
			OutGroup: ofp.GroupAny, Match: arpMatch(), Instructions: toController()}},
		{name: "flow_mod_ports", msg: &ofp.FlowMod{Priority: 5, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny,
			OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(ofp.PortLocal), ofp.MatchEthDst(macBcast),
				ofp.MatchEthType(0x0800), vlanUntagged, ofp.MatchIPProto(1), ofp.MatchICMPv4Type(8),
				ofp.MatchICMPv4Code(0)}},
			Instructions: []ofp.Instruction{ofp.InstructionApplyActions{Actions: []ofp.Action{
				ofp.ActionOutput{Port: ofp.PortInPort}, ofp.ActionOutput{Port: ofp.PortFlood},
				ofp.ActionOutput{Port: ofp.PortAll}, ofp.ActionOutput{Port: ofp.PortNormal},
				ofp.ActionOutput{Port: 0xfeff},
			}}}}},
		{name: "flow_mod_modify", msg: &ofp.FlowMod{Command: ofp.FlowModify, Priority: 32768,
			BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800),
				ofp.MatchIPv4DstMasked([4]byte{10, 0, 0, 0}, [4]byte{255, 0, 0, 0})}}}},
		{name: "flow_mod_delete", msg: &ofp.FlowMod{Command: ofp.FlowDelete, Priority: 32768,
			BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchIPv4Dst(vip)}}}},
		{name: "flow_mod_delete_strict", msg: &ofp.FlowMod{Command: ofp.FlowDeleteStrict, Priority: 510,
			BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0806), ofp.MatchARPTPA(vip)}}}},
		{name: "desc_request", msg: &ofp.MultipartRequest{Body: ofp.DescRequest{}}},
		{name: "flow_stats_request", msg: &ofp.MultipartRequest{Body: ofp.FlowStatsRequest{
			TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchTCPDst(80)}}}}},
		{name: "aggregate_stats_request", msg: &ofp.MultipartRequest{Body: ofp.AggregateStatsRequest{
			TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}}},
		{name: "port_stats_request", msg: &ofp.MultipartRequest{Body: ofp.PortStatsRequest{PortNo: ofp.PortAny}}},
		{name: "nx_flow_mod_syn_punt", nicira: true, msg: &ofp.FlowMod{Cookie: 0x200000001, Priority: 1001,
			BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: synPunt(ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK), Instructions: toController()}},
		{name: "nx_flow_mod_delete_strict_rst", nicira: true, msg: &ofp.FlowMod{Command: ofp.FlowDeleteStrict,
			Priority: 1004, BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
			Match: synPunt(ofp.TCPFlagRST, ofp.TCPFlagRST|ofp.TCPFlagFIN)}},
		{name: "nx_flow_mod_delete_cookie", nicira: true, msg: &ofp.FlowMod{Command: ofp.FlowDelete,
			Cookie: 0x200000000, CookieMask: 0xff00000000, Priority: 32768, BufferID: ofp.NoBuffer,
			OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}},
		{name: "nx_flow_stats_request_cookie", nicira: true, msg: &ofp.MultipartRequest{Body: ofp.FlowStatsRequest{
			TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Cookie: 0x200000000, CookieMask: 0xff00000000,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
				ofp.MatchTCPFlags(ofp.TCPFlagSYN, ofp.TCPFlagSYN)}}}}},
		{name: "nx_flow_stats_request_probe", nicira: true, msg: &ofp.MultipartRequest{Body: ofp.FlowStatsRequest{
			TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Cookie: ^uint64(0), CookieMask: ^uint64(0)}}},

		// Sent by a switch, built from the OpenFlow 1.0.0 spec.
		{name: "error", msg: &ofp.ErrorMsg{ErrType: ofp.ErrTypeFlowModFailed, Code: ofp.FlowModFailedOverlap,
			Data: []byte{0x01, 0x0e, 0x00, 0x48, 0x00, 0x00, 0x00, 0x06}}},
		{name: "echo_reply", msg: &ofp.EchoReply{Data: []byte("hoge")}},
		{name: "features_reply", msg: &FeaturesReply{
			FeaturesReply: ofp.FeaturesReply{DatapathID: 0x2a, NBuffers: 256, NTables: 254,
				Capabilities: ofp.CapFlowStats | ofp.CapTableStats | ofp.CapPortStats | ofp.CapQueueStats},
			Actions: 0xfff, Ports: []ofp.Port{port1, portLocal}}},
		{name: "packet_in", msg: &ofp.PacketIn{BufferID: ofp.NoBuffer, TotalLen: 42, Reason: ofp.ReasonNoMatch,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(1)}}, Data: arpFrame}},
		{name: "flow_removed", msg: &ofp.FlowRemoved{Cookie: 0x100000002, Priority: 1000,
			Reason: ofp.RemovedIdleTimeout, DurationSec: 61, DurationNsec: 5_000_000, IdleTimeout: 60,
			PacketCount: 10, ByteCount: 1234, Match: natMatch()}},
		{name: "port_status", msg: &ofp.PortStatus{Reason: ofp.PortReasonModify, Desc: port2Blocked}},
		{name: "desc_reply", msg: &ofp.MultipartReply{Body: ofp.DescReply{MfrDesc: "Open vSwitch",
			HWDesc: "None", SWDesc: "3.1.0", SerialNum: "None", DPDesc: "br0"}}},
		{name: "flow_stats_reply", msg: &ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
			{DurationSec: 5, DurationNsec: 10, Priority: 1000, IdleTimeout: 60, HardTimeout: 300,
				Cookie: 0x100000002, PacketCount: 3, ByteCount: 198, Match: natMatch(), Instructions: natActions()},
			{DurationSec: 7, Priority: 510, PacketCount: 1, ByteCount: 42, Match: arpMatch(),
				Instructions: toController()},
			{DurationSec: 9},
		}}}},
		{name: "aggregate_stats_reply", msg: &ofp.MultipartReply{Body: ofp.AggregateStatsReply{
			PacketCount: 13, ByteCount: 1432, FlowCount: 3}}},
		{name: "port_stats_reply", msg: &ofp.MultipartReply{Flags: ofp.MultipartReplyMore,
			Body: ofp.PortStatsReply{Stats: []ofp.PortStats{
				{PortNo: 1, RxPackets: 10, TxPackets: 12, RxBytes: 1000, TxBytes: 1200, RxDropped: 1},
				{PortNo: ofp.PortLocal, RxPackets: 2, TxPackets: 3, RxBytes: 200, TxBytes: 300, Collisions: 4},
			}}}},
		{name: "barrier_reply", msg: &ofp.BarrierReply{}},
		{name: "nx_flow_stats_reply", nicira: true, msg: &ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{
			{DurationSec: 5, DurationNsec: 10, Priority: 1001, Cookie: 0x200000001, PacketCount: 3, ByteCount: 222,
				Match: synPunt(ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK), Instructions: toController()},
			{DurationSec: 5, Priority: 1000, IdleTimeout: 60, HardTimeout: 300, Cookie: 0x100000002, PacketCount: 3,
				ByteCount: 198, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(1), ofp.MatchEthType(0x0800),
					ofp.MatchIPv4Src([4]byte{10, 0, 0, 1}), ofp.MatchIPv4Dst(vip), ofp.MatchIPProto(6),
					ofp.MatchTCPSrc(40000), ofp.MatchTCPDst(80)}},
				Instructions: natActions()},
		}}}},
	}
}

func TestGolden_Decode(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			wire := mustGolden(t, tc.name)
			h, m, err := Decode(wire)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if h.Version != Version || int(h.Length) != len(wire) {
				t.Errorf("header = %+v, want version 1 length %d", h, len(wire))
			}
			if !reflect.DeepEqual(m, tc.msg) {
				t.Errorf("Decode:\n got %#v\nwant %#v", m, tc.msg)
			}
		})
	}
}

func TestGolden_Append(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			wire := mustGolden(t, tc.name)
			xid := uint32(wire[4])<<24 | uint32(wire[5])<<16 | uint32(wire[6])<<8 | uint32(wire[7])
			prefix := []byte{0xaa, 0xbb} // Append must keep what is already in b
			got, err := tc.append(prefix, xid)
			if err != nil {
				t.Fatalf("Append: %v", err)
			}
			if !bytes.Equal(got[:2], prefix) || !bytes.Equal(got[2:], wire) {
				t.Errorf("Append:\n got %s\nwant %s", hex.EncodeToString(got[2:]), hex.EncodeToString(wire))
			}
		})
	}
}

// TestGolden_OVSText checks the decoded model against what Open vSwitch's
// own 1.0 decoder printed for each vector (NAME.txt, `ovs-ofctl ofp-print`;
// TestOVS_PrintsGolden re-runs it): the xid, every match rendered as
// ovs-ofctl renders it, and each port's number, name and speeds.
func TestGolden_OVSText(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			text := ovsText(t, tc.name)
			wire := mustGolden(t, tc.name)
			h, m, err := Decode(wire)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if h.XID != 0 {
				want = append(want, "xid=0x"+strings.TrimLeft(hex.EncodeToString(wire[4:8]), "0"))
			}
			for _, match := range matches(m) {
				want = append(want, match.String())
			}
			for _, p := range ports(m) {
				want = append(want, fmt.Sprintf("%s(%s): addr:", ofp.FormatPort(p.PortNo), p.Name),
					fmt.Sprintf("speed: %d Mbps now, %d Mbps max", p.CurrSpeed/1000, p.MaxSpeed/1000))
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("ovs-ofctl printed\n%s\nwithout %q", text, w)
				}
			}
		})
	}
}

// ports lists the port descriptions a message carries.
func ports(m ofp.Message) []ofp.Port {
	switch m := m.(type) {
	case *FeaturesReply:
		return m.Ports
	case *ofp.PortStatus:
		return []ofp.Port{m.Desc}
	}
	return nil
}

// matches lists the matches a message carries.
func matches(m ofp.Message) []ofp.Match {
	switch m := m.(type) {
	case *ofp.FlowMod:
		return []ofp.Match{m.Match}
	case *ofp.FlowRemoved:
		return []ofp.Match{m.Match}
	case *ofp.MultipartRequest:
		switch r := m.Body.(type) {
		case ofp.FlowStatsRequest:
			return []ofp.Match{r.Match}
		case ofp.AggregateStatsRequest:
			return []ofp.Match{r.Match}
		}
	case *ofp.MultipartReply:
		if r, ok := m.Body.(ofp.FlowStatsReply); ok {
			var out []ofp.Match
			for _, s := range r.Stats {
				out = append(out, s.Match)
			}
			return out
		}
	}
	return nil
}
