package oftable_test

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// Addresses of the flows and packets the tests use.
var (
	vip       = [4]byte{10, 0, 0, 100}
	client    = [4]byte{10, 0, 1, 5}
	member    = [4]byte{10, 0, 0, 2}
	vipMAC    = [6]byte{0x02, 0, 0, 0, 0, 0x64}
	clientMAC = [6]byte{0x02, 0, 0, 0, 1, 5}
	memberMAC = [6]byte{0x02, 0, 0, 0, 0, 2}

	vip6    = netip.MustParseAddr("2001:db8::64").As16()
	client6 = netip.MustParseAddr("2001:db8:1::5").As16()
	member6 = netip.MustParseAddr("2001:db8::2").As16()
)

const (
	clientPort = 10
	memberPort = 3
)

// add is an OFPFC_ADD with the given actions as apply-actions (none:
// drop), as the controller builds them.
func add(cookie uint64, prio uint16, match []ofp.OXM, actions ...ofp.Action) *ofp.FlowMod {
	fm := &ofp.FlowMod{
		Cookie: cookie, Command: ofp.FlowAdd, Priority: prio, BufferID: ofp.NoBuffer,
		OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Match: ofp.Match{OXMs: match},
	}
	if len(actions) > 0 {
		fm.Instructions = []ofp.Instruction{ofp.InstructionApplyActions{Actions: actions}}
	}
	return fm
}

// del is an OFPFC_DELETE (or DELETE_STRICT) in every table.
func del(strict bool, cookie, mask uint64, prio uint16, match ...ofp.OXM) *ofp.FlowMod {
	cmd := ofp.FlowDelete
	if strict {
		cmd = ofp.FlowDeleteStrict
	}
	return &ofp.FlowMod{
		Cookie: cookie, CookieMask: mask, TableID: ofp.TableAll, Command: cmd, Priority: prio,
		BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny, Match: ofp.Match{OXMs: match},
	}
}

// modify is an OFPFC_MODIFY (or MODIFY_STRICT) to the given actions.
func modify(strict bool, cookie, mask uint64, prio uint16, match []ofp.OXM, actions ...ofp.Action) *ofp.FlowMod {
	fm := add(cookie, prio, match, actions...)
	fm.CookieMask, fm.Command = mask, ofp.FlowModify
	if strict {
		fm.Command = ofp.FlowModifyStrict
	}
	return fm
}

// goTo adds a goto_table to fm.
func goTo(fm *ofp.FlowMod, table uint8) *ofp.FlowMod {
	fm.Instructions = append(fm.Instructions, ofp.InstructionGotoTable{TableID: table})
	return fm
}

// inTable puts fm in table.
func inTable(fm *ofp.FlowMod, table uint8) *ofp.FlowMod {
	fm.TableID = table
	return fm
}

// ct is a ct action: flags (ofp.CTCommit, ...), zone, the recirculation
// table (ofp.CTRecircNone: none) and the actions inside it.
func ct(flags, zone uint16, table uint8, exec ...ofp.Action) ofp.ActionCT {
	return ofp.ActionCT{Flags: flags, Zone: zone, Table: table, Actions: exec}
}

func set(o ofp.OXM) ofp.Action { return ofp.ActionSetField{Field: o} }

// state matches ct_state: the bits of want set, those of unwanted clear.
func state(want, unwanted uint32) ofp.OXM { return ofp.MatchCTState(want, want|unwanted) }

func oxms(o ...ofp.OXM) []ofp.OXM { return o }

func tcpTo(dst [4]byte, port uint16) []ofp.OXM {
	return oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6), ofp.MatchIPv4Dst(dst), ofp.MatchTCPDst(port))
}

func out(port uint32) ofp.Action { return ofp.ActionOutput{Port: port} }

var toController = ofp.ActionOutput{Port: ofp.PortController, MaxLen: ofp.ControllerMaxLenNoBuffer}

// mustApply applies every flow-mod and fails the test on an error.
func mustApply(tb testing.TB, t *oftable.Table, fms ...*ofp.FlowMod) {
	tb.Helper()
	for _, fm := range fms {
		if _, err := t.Apply(fm); err != nil {
			tb.Fatalf("apply %v: %v", fm, err)
		}
	}
}

// tcpPacket is a TCP segment src:sport > dst:dport arriving on inPort.
func tcpPacket(inPort uint32, srcMAC, dstMAC [6]byte, src [4]byte, sport uint16, dst [4]byte, dport uint16) oftable.Packet {
	return oftable.Packet{
		InPort: inPort, EthSrc: srcMAC, EthDst: dstMAC, EthType: 0x0800, IPProto: 6,
		IPv4Src: src, IPv4Dst: dst, L4Src: sport, L4Dst: dport,
	}
}

// full renders every field of p, for failures that String, which shows
// the headers a test usually cares about, would hide.
func full(p oftable.Packet) string {
	type fields oftable.Packet
	return fmt.Sprintf("%+v", fields(p))
}

// segment is a TCP segment with flags.
func segment(inPort uint32, srcMAC, dstMAC [6]byte, src [4]byte, sport uint16, dst [4]byte, dport uint16, flags uint16) oftable.Packet {
	p := tcpPacket(inPort, srcMAC, dstMAC, src, sport, dst, dport)
	p.TCPFlags = flags
	return p
}

// tuple is a TCP connection's tuple.
func tuple(src [4]byte, sport uint16, dst [4]byte, dport uint16) oftable.Tuple {
	return oftable.Tuple{Proto: 6, Src: netip.AddrFrom4(src), Dst: netip.AddrFrom4(dst), SrcPort: sport, DstPort: dport}
}

// pathStep is a flow on a packet's path, by table and priority.
type pathStep struct {
	table    uint8
	priority uint16
}

// assertPath checks the flows a packet matched, in order.
func assertPath(tb testing.TB, r oftable.Result, want []pathStep) {
	tb.Helper()
	var got []pathStep
	for _, f := range r.Path {
		got = append(got, pathStep{f.TableID, f.Priority})
	}
	if !slices.Equal(got, want) {
		tb.Errorf("path (table, priority) %v, want %v", got, want)
	}
}
