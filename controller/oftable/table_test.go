package oftable_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

func TestTable_Apply(t *testing.T) {
	net24 := ofp.MatchIPv4DstMasked([4]byte{10, 0, 0, 0}, [4]byte{255, 255, 255, 0})
	ipTo := func(dst [4]byte) []ofp.OXM { return oxms(ofp.MatchEthType(0x0800), ofp.MatchIPv4Dst(dst)) }
	// base is installed before each case's flow-mods.
	base := []*ofp.FlowMod{
		add(0x1, 0, nil, toController),
		add(0x2_0001, 500, tcpTo(vip, 80), toController),
		add(0x2_0001, 499, ipTo(vip)),
		add(0x3_0002, 100, oxms(ofp.MatchEthDst(memberMAC)), out(memberPort)),
	}
	baseLines := []string{
		"cookie=0x1, priority=0 actions=CONTROLLER:65535",
		"cookie=0x20001, priority=500, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
		"cookie=0x20001, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
		"cookie=0x30002, priority=100, dl_dst=02:00:00:00:00:02 actions=output:3",
	}
	without := func(drop ...int) []string {
		var lines []string
		for i, l := range baseLines {
			if !slices.Contains(drop, i) {
				lines = append(lines, l)
			}
		}
		return lines
	}
	tests := []struct {
		name        string
		mods        []*ofp.FlowMod
		want        []string // every line of the table afterwards
		wantRemoved []string // what the last flow-mod removed
	}{
		{"AddNew", []*ofp.FlowMod{add(0x5, 100, oxms(ofp.MatchEthDst(clientMAC)), out(clientPort))},
			append(without(), "cookie=0x5, priority=100, dl_dst=02:00:00:00:01:05 actions=output:10"), nil},
		{"AddReplacesIdenticalMatchAndPriority", []*ofp.FlowMod{func() *ofp.FlowMod {
			fm := add(0x9, 100, oxms(ofp.MatchEthDst(memberMAC)), out(7))
			fm.IdleTimeout, fm.Flags = 300, ofp.FlagSendFlowRem
			return fm
		}()}, append(without(3), "cookie=0x9, priority=100, idle_timeout=300, send_flow_rem, dl_dst=02:00:00:00:00:02 actions=output:7"), nil},
		{"AddReplacesWhateverTheFieldOrder", []*ofp.FlowMod{
			add(0x7, 500, oxms(ofp.MatchTCPDst(80), ofp.MatchIPv4Dst(vip), ofp.MatchIPProto(6), ofp.MatchEthType(0x0800))),
		}, append(without(1), "cookie=0x7, priority=500, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=drop"), nil},
		{"AddSameMatchOtherPriorityKeepsBoth", []*ofp.FlowMod{add(0x8, 101, oxms(ofp.MatchEthDst(memberMAC)), out(4))},
			append(without(), "cookie=0x8, priority=101, dl_dst=02:00:00:00:00:02 actions=output:4"), nil},
		{"AddToOtherTable", []*ofp.FlowMod{func() *ofp.FlowMod {
			fm := add(0x8, 100, oxms(ofp.MatchEthDst(memberMAC)), out(4))
			fm.TableID, fm.HardTimeout = 3, 30
			return fm
		}()}, append(without(), "cookie=0x8, table=3, priority=100, hard_timeout=30, dl_dst=02:00:00:00:00:02 actions=output:4"), nil},
		{"AddDropsOneShotFlags", []*ofp.FlowMod{func() *ofp.FlowMod {
			fm := add(0x8, 1, nil)
			fm.Flags = ofp.FlagCheckOverlap | ofp.FlagResetCounts | ofp.FlagNoPktCounts
			return fm
		}()}, append(without(), "cookie=0x8, priority=1, no_packet_counts actions=drop"), nil},
		{"ModifyNonStrictMoreSpecific", []*ofp.FlowMod{modify(false, 0, 0, 0, oxms(ofp.MatchEthType(0x0800)), out(9))},
			[]string{
				baseLines[0], baseLines[3],
				"cookie=0x20001, priority=500, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=output:9",
				"cookie=0x20001, priority=499, ip,nw_dst=10.0.0.100 actions=output:9",
			}, nil},
		{"ModifyStrictKeepsCookieAndTimeouts", []*ofp.FlowMod{modify(true, 0xff, 0, 499, ipTo(vip), out(9))},
			append(without(2), "cookie=0x20001, priority=499, ip,nw_dst=10.0.0.100 actions=output:9"), nil},
		{"ModifyStrictOtherPriorityNoop", []*ofp.FlowMod{modify(true, 0, 0, 498, ipTo(vip), out(9))}, without(), nil},
		{"ModifyNeverAdds", []*ofp.FlowMod{modify(false, 0, 0, 0, oxms(ofp.MatchEthDst(clientMAC)), out(9))}, without(), nil},
		{"ModifyCookieMask", []*ofp.FlowMod{modify(false, 0x3_0000, 0xf_0000, 0, nil)},
			append(without(3), "cookie=0x30002, priority=100, dl_dst=02:00:00:00:00:02 actions=drop"), nil},
		{"DeleteAll", []*ofp.FlowMod{del(false, 0, 0, 0)}, nil, baseLines},
		{"DeleteCookieMask", []*ofp.FlowMod{del(false, 0x2_0000, 0xf_0000, 0)}, without(1, 2), baseLines[1:3]},
		{"DeleteCookieMaskNoneMatch", []*ofp.FlowMod{del(false, 0x4_0000, 0xf_0000, 0)}, without(), nil},
		{"DeleteCookieIgnoredWithoutMask", []*ofp.FlowMod{del(false, 0x4_0000, 0, 0, ofp.MatchEthDst(memberMAC))},
			without(3), baseLines[3:]},
		{"DeleteNonStrictSelectsMoreSpecific", []*ofp.FlowMod{
			add(0x6, 300, ipTo([4]byte{10, 0, 1, 1}), out(1)),
			add(0x6, 300, oxms(ofp.MatchEthType(0x0800), net24), out(2)),
			del(false, 0, 0, 0, ofp.MatchEthType(0x0800), net24),
		}, append(without(1, 2), "cookie=0x6, priority=300, ip,nw_dst=10.0.1.1 actions=output:1"),
			append(slices.Clone(baseLines[1:3]), "cookie=0x6, priority=300, ip,nw_dst=10.0.0.0/24 actions=output:2")},
		{"DeleteNonStrictLessSpecificFlowKept", []*ofp.FlowMod{del(false, 0, 0, 0, tcpTo(vip, 80)...)}, without(1), baseLines[1:2]},
		{"DeleteStrictExactOnly", []*ofp.FlowMod{del(true, 0, 0, 499, ipTo(vip)...)}, without(2), baseLines[2:3]},
		{"DeleteStrictPriorityMustMatch", []*ofp.FlowMod{del(true, 0, 0, 500, ipTo(vip)...)}, without(), nil},
		{"DeleteStrictCookieMask", []*ofp.FlowMod{del(true, 0x9, ^uint64(0), 499, ipTo(vip)...)}, without(), nil},
		{"DeleteOutPort", []*ofp.FlowMod{func() *ofp.FlowMod {
			fm := del(false, 0, 0, 0)
			fm.OutPort = ofp.PortController
			return fm
		}()}, without(0, 1), baseLines[0:2]},
		{"DeleteOutGroupNoFlowSendsTo", []*ofp.FlowMod{func() *ofp.FlowMod {
			fm := del(false, 0, 0, 0)
			fm.OutGroup = 1
			return fm
		}()}, without(), nil},
		{"DeleteOtherTable", []*ofp.FlowMod{func() *ofp.FlowMod {
			fm := del(false, 0, 0, 0)
			fm.TableID = 1
			return fm
		}()}, without(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := oftable.New()
			mustApply(t, tbl, base...)
			var removed []oftable.Flow
			for _, fm := range tt.mods {
				var err error
				if removed, err = tbl.Apply(fm); err != nil {
					t.Fatalf("apply %v: %v", fm, err)
				}
			}
			assertLines(t, "table", tbl.Lines(), tt.want)
			var got []string
			for _, f := range removed {
				got = append(got, f.String())
			}
			assertLines(t, "removed", got, tt.wantRemoved)
		})
	}
}

// assertLines compares two sets of flow lines.
func assertLines(tb testing.TB, what string, got, want []string) {
	tb.Helper()
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		tb.Errorf("%s:\n got  %s\n want %s", what, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func TestTable_Apply_Errors(t *testing.T) {
	withInstructions := func(is ...ofp.Instruction) *ofp.FlowMod {
		fm := add(1, 1, nil)
		fm.Instructions = is
		return fm
	}
	tests := []struct {
		name     string
		fm       *ofp.FlowMod
		wantType ofp.ErrorType
		wantCode uint16
		wantText string
	}{
		{"ErrUnmodelledField", add(1, 1, oxms(ofp.MatchVLANVID(5), ofp.MatchVLANPCP(3))),
			ofp.ErrTypeBadMatch, ofp.BadMatchBadField, "vlan_pcp=3"},
		{"ErrExperimenterField", add(1, 1, oxms(func() ofp.OXM {
			o, err := ofp.NewOXM(ofp.OXMClassNXM1, 16, []byte{0, 0, 0, 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}())), ofp.ErrTypeBadMatch, ofp.BadMatchBadField, "oxm(0x0001:16)"},
		{"ErrNoEthType", add(1, 1, oxms(ofp.MatchIPv4Dst(vip))),
			ofp.ErrTypeBadMatch, 9, "ip_dst=10.0.0.100 needs eth_type=0x0800"},
		{"ErrNoIPProto", add(1, 1, oxms(ofp.MatchEthType(0x0800), ofp.MatchTCPDst(80))),
			ofp.ErrTypeBadMatch, 9, "tcp_dst=80 needs ip_proto=6"},
		{"ErrWrongIPProto", add(1, 1, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(17), ofp.MatchTCPDst(80))),
			ofp.ErrTypeBadMatch, 9, "tcp_dst=80 needs ip_proto=6"},
		{"ErrARPOnIPv4", add(1, 1, oxms(ofp.MatchEthType(0x0800), ofp.MatchARPTPA(vip))),
			ofp.ErrTypeBadMatch, 9, "arp_tpa=10.0.0.100 needs eth_type=0x0806"},
		{"ErrIPv6OnIPv4", add(1, 1, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPv6Dst(vip6))),
			ofp.ErrTypeBadMatch, 9, "ipv6_dst=2001:db8::64 needs eth_type=0x86dd"},
		{"ErrPortsWithoutIP", add(1, 1, oxms(ofp.MatchIPProto(6), ofp.MatchTCPDst(80))),
			ofp.ErrTypeBadMatch, 9, "ip_proto=6 needs eth_type=0x0800 or 0x86dd"},
		{"ErrNDTargetWithoutType", add(1, 1, oxms(ofp.MatchEthType(0x86dd), ofp.MatchIPProto(58), ofp.MatchIPv6NDTarget(vip6))),
			ofp.ErrTypeBadMatch, 9, "nd_target=2001:db8::64 needs icmpv6_type=135 or 136"},
		{"ErrNDTLLOfSolicitation", add(1, 1, oxms(ofp.MatchEthType(0x86dd), ofp.MatchIPProto(58), ofp.MatchICMPv6Type(135),
			ofp.MatchIPv6NDTLL(vipMAC))), ofp.ErrTypeBadMatch, 9, "nd_tll=02:00:00:00:00:64 needs icmpv6_type=136"},
		// OVS 3.1 refuses this flow too (ovs-ofctl: OFPBAC_MATCH_INCONSISTENT).
		{"ErrSetNDTLLOfSolicitation", add(1, 1, oxms(ofp.MatchEthType(0x86dd), ofp.MatchIPProto(58), ofp.MatchICMPv6Type(135)),
			ofp.ActionSetField{Field: ofp.MatchIPv6NDTLL(vipMAC)}), ofp.ErrTypeBadAction, 10, "nd_tll=02:00:00:00:00:64 needs icmpv6_type=136"},
		// OVS 3.1 refuses this flow too (ovs-ofctl: OFPBAC_MATCH_INCONSISTENT).
		{"ErrFinTimeoutWithoutTCP", add(1, 1, oxms(ofp.MatchEthType(0x0800)), ofp.ActionFinTimeout{IdleTimeout: 10}),
			ofp.ErrTypeBadAction, 10, "fin_timeout(idle_timeout=10) on a flow that does not match TCP"},
		{"ErrDuplicateField", add(1, 1, oxms(ofp.MatchEthDst(clientMAC), ofp.MatchEthDst(memberMAC))),
			ofp.ErrTypeBadMatch, 10, "eth_dst=02:00:00:00:00:02 appears twice"},
		{"ErrValueOutsideMask", add(1, 1, oxms(ofp.MatchEthType(0x0800), func() ofp.OXM {
			o, err := ofp.NewOXM(ofp.OXMClassBasic, ofp.OXMIPv4Dst, []byte{10, 0, 0, 1}, []byte{255, 255, 255, 0})
			if err != nil {
				t.Fatal(err)
			}
			return o
		}())), ofp.ErrTypeBadMatch, 5, "outside its mask"},
		{"ErrGotoTableBackwards", func() *ofp.FlowMod {
			fm := withInstructions(ofp.InstructionGotoTable{TableID: 1})
			fm.TableID = 1
			return fm
		}(), ofp.ErrTypeBadInstruction, 2, "goto_table:1 does not lead past table 1"},
		{"ErrWriteActions", withInstructions(ofp.InstructionWriteActions{Actions: []ofp.Action{out(1)}}),
			ofp.ErrTypeBadInstruction, 1, "write_actions(output:1)"},
		{"ErrGroupActionNoSuchGroup", add(1, 1, nil, ofp.ActionGroup{GroupID: 4}),
			ofp.ErrTypeBadAction, 9, "group:4: no such group"},
		{"ErrSetFieldUnmodelled", add(1, 1, nil, ofp.ActionSetField{Field: ofp.MatchVLANVID(5)}),
			ofp.ErrTypeBadAction, 13, "set_field of vlan_vid"},
		{"ErrSetFieldWithoutPrereqInMatch", add(1, 1, oxms(ofp.MatchEthType(0x0800)), ofp.ActionSetField{Field: ofp.MatchTCPDst(8080)}),
			ofp.ErrTypeBadAction, 10, "set_field of tcp_dst=8080 needs ip_proto=6 in the match"},
		{"ErrSetFieldMasked", add(1, 1, oxms(ofp.MatchEthType(0x0800)), ofp.ActionSetField{Field: ofp.MatchIPv4DstMasked(vip, [4]byte{255, 0, 0, 0})}),
			ofp.ErrTypeBadAction, 15, "has a mask"},
		{"ErrMoveWithoutPrereqInMatch", add(1, 1, oxms(ofp.MatchEthType(0x0800)), move(48, ofp.NXMARPSHA, ofp.NXMARPTHA)),
			ofp.ErrTypeBadAction, 10, "move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[] needs eth_type=0x0806 in the match"},
		{"ErrOutputAny", add(1, 1, nil, out(ofp.PortAny)), ofp.ErrTypeBadAction, ofp.BadActionBadOutPort, "output to port ANY"},
		{"ErrAddTableAll", func() *ofp.FlowMod { fm := add(1, 1, nil); fm.TableID = ofp.TableAll; return fm }(),
			ofp.ErrTypeFlowModFailed, ofp.FlowModFailedBadTableID, "table ALL"},
		{"ErrBadCommand", func() *ofp.FlowMod { fm := add(1, 1, nil); fm.Command = 9; return fm }(),
			ofp.ErrTypeFlowModFailed, ofp.FlowModFailedBadCommand, "command 9"},
		{"ErrModifyUnmodelledAction", modify(false, 0, 0, 0, nil, ofp.ActionPopVLAN{}),
			ofp.ErrTypeBadAction, ofp.BadActionBadType, "pop_vlan"},
		{"ErrModifySetFieldInconsistentWithAFlow", modify(false, 0, 0, 0, nil, ofp.ActionSetField{Field: ofp.MatchIPv4Dst(member)}),
			ofp.ErrTypeBadAction, 10, "needs eth_type=0x0800"},
		{"ErrCheckOverlap", func() *ofp.FlowMod {
			fm := add(1, 500, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPv4DstMasked(vip, [4]byte{255, 255, 0, 0})))
			fm.Flags = ofp.FlagCheckOverlap
			return fm
		}(), ofp.ErrTypeFlowModFailed, ofp.FlowModFailedOverlap, "overlaps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := oftable.New()
			mustApply(t, tbl, add(0x1, 0, nil, toController), add(0x2, 500, tcpTo(vip, 80), toController))
			before := tbl.Lines()
			_, err := tbl.Apply(tt.fm)
			var msg *ofp.ErrorMsg
			if !errors.As(err, &msg) || msg.ErrType != tt.wantType || msg.Code != tt.wantCode {
				t.Fatalf("Apply = %v, want %v code %d", err, tt.wantType, tt.wantCode)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Apply = %q, want it to say %q", err, tt.wantText)
			}
			assertLines(t, "table after a rejected flow-mod", tbl.Lines(), before)
		})
	}
}

func TestTable_Apply_CheckOverlapDisjoint(t *testing.T) {
	tbl := oftable.New()
	mustApply(t, tbl, add(1, 500, tcpTo(vip, 80), toController))
	tests := []struct {
		name string
		fm   *ofp.FlowMod
	}{
		{"OtherPort", add(2, 500, tcpTo(vip, 443))},
		{"OtherPriority", add(3, 501, tcpTo(vip, 80))},
		{"OtherSubnet", add(4, 500, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPv4DstMasked([4]byte{10, 1, 0, 0}, [4]byte{255, 255, 0, 0})))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fm.Flags = ofp.FlagCheckOverlap
			if _, err := tbl.Apply(tt.fm); err != nil {
				t.Fatalf("Apply: %v", err)
			}
		})
	}
}

// The controller builds flow-mods into storage it reuses, with pointers
// to its own action structs: the table must keep what was applied.
func TestTable_Apply_CopiesFlowMod(t *testing.T) {
	var (
		set   = ofp.ActionSetField{Field: ofp.MatchIPv4Dst(member)}
		outTo = ofp.ActionOutput{Port: memberPort}
		acts  = [2]ofp.Action{&set, &outTo}
		apply = ofp.InstructionApplyActions{Actions: acts[:]}
		match = tcpTo(vip, 80)
	)
	fm := &ofp.FlowMod{Cookie: 1, Priority: 1000, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
		Match: ofp.Match{OXMs: match}, Instructions: []ofp.Instruction{&apply}}
	tbl := oftable.New()
	mustApply(t, tbl, fm)
	want := tbl.Lines()

	set.Field = ofp.MatchIPv4Dst([4]byte{192, 0, 2, 1})
	outTo.Port = 99
	acts[1] = ofp.ActionOutput{Port: 98}
	apply.Actions = nil
	match[2] = ofp.MatchIPv4Dst([4]byte{192, 0, 2, 2})
	fm.Cookie = 7

	assertLines(t, "table after the flow-mod's storage was reused", tbl.Lines(), want)
	if want[0] != "cookie=0x1, priority=1000, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=set_field:10.0.0.2->ip_dst,output:3" {
		t.Errorf("line %q", want[0])
	}
}

func TestTable_Process(t *testing.T) {
	cport, mport := uint16(40000), uint16(8080)
	fwdMatch := oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
		ofp.MatchIPv4Src(client), ofp.MatchIPv4Dst(vip), ofp.MatchTCPSrc(cport), ofp.MatchTCPDst(80))
	revMatch := oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
		ofp.MatchIPv4Src(member), ofp.MatchIPv4Dst(client), ofp.MatchTCPSrc(mport), ofp.MatchTCPDst(cport))
	hairpinClient := [4]byte{10, 0, 0, 7}
	hairpinMatch := append(oxms(ofp.MatchInPort(memberPort)), fwdMatch...)
	hairpinMatch[3] = ofp.MatchIPv4Src(hairpinClient)
	flows := []*ofp.FlowMod{
		add(0x1, 0, nil, toController),
		add(0x2, 500, oxms(ofp.MatchEthType(0x0806), ofp.MatchARPOp(1), ofp.MatchARPTPA(vip)), toController),
		add(0x3, 500, tcpTo(vip, 80), toController),
		add(0x4, 499, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPv4Dst(vip))),
		add(0x5, 100, oxms(ofp.MatchEthDst(clientMAC)), out(clientPort)),
		add(0x6, 300, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(1),
			ofp.MatchIPv4SrcMasked([4]byte{10, 0, 1, 0}, [4]byte{255, 255, 255, 0}), ofp.MatchICMPv4Type(8)), out(ofp.PortFlood)),
		add(0x7, 1000, fwdMatch,
			ofp.ActionSetField{Field: ofp.MatchEthDst(memberMAC)}, ofp.ActionSetField{Field: ofp.MatchIPv4Dst(member)},
			ofp.ActionSetField{Field: ofp.MatchTCPDst(mport)}, out(memberPort)),
		add(0x8, 1000, revMatch,
			ofp.ActionSetField{Field: ofp.MatchEthSrc(vipMAC)}, ofp.ActionSetField{Field: ofp.MatchIPv4Src(vip)},
			ofp.ActionSetField{Field: ofp.MatchTCPSrc(80)}, out(clientPort)),
		add(0x9, 1000, hairpinMatch, ofp.ActionSetField{Field: ofp.MatchIPv4Dst(member)}, out(ofp.PortInPort)),
		add(0xa, 200, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(17), ofp.MatchUDPDst(53)),
			ofp.ActionSetField{Field: ofp.MatchUDPDst(5353)}, out(4), out(ofp.PortController)),
	}
	tbl := oftable.New()
	mustApply(t, tbl, flows...)

	syn := tcpPacket(clientPort, clientMAC, vipMAC, client, cport, vip, 80)
	natted := syn
	natted.EthDst, natted.IPv4Dst, natted.L4Dst = memberMAC, member, mport
	reply := tcpPacket(memberPort, memberMAC, clientMAC, member, mport, client, cport)
	unnatted := reply
	unnatted.EthSrc, unnatted.IPv4Src, unnatted.L4Src = vipMAC, vip, 80
	newConn := syn
	newConn.L4Src = 40001
	hairpin := tcpPacket(memberPort, memberMAC, vipMAC, hairpinClient, cport, vip, 80)
	hairpinOut := hairpin
	hairpinOut.IPv4Dst = member
	arp := func(op uint16, tpa [4]byte, dst [6]byte) oftable.Packet {
		return oftable.Packet{InPort: clientPort, EthSrc: clientMAC, EthDst: dst, EthType: 0x0806,
			ARPOp: op, ARPSPA: client, ARPTPA: tpa}
	}
	udp := oftable.Packet{InPort: clientPort, EthSrc: clientMAC, EthDst: vipMAC, EthType: 0x0800, IPProto: 17,
		IPv4Src: client, IPv4Dst: [4]byte{10, 0, 0, 53}, L4Src: 5000, L4Dst: 53}
	udpOut := udp
	udpOut.L4Dst = 5353
	ping := oftable.Packet{InPort: clientPort, EthSrc: clientMAC, EthDst: memberMAC, EthType: 0x0800, IPProto: 1,
		IPv4Src: client, IPv4Dst: member, ICMPType: 8}
	pingOther := ping
	pingOther.IPv4Src = [4]byte{10, 0, 2, 5}

	tests := []struct {
		name       string
		in         oftable.Packet
		wantCookie uint64 // 0: a table miss
		wantOut    oftable.Packet
		wantPorts  []uint32
	}{
		{"ConnectionForwardNAT", syn, 0x7, natted, []uint32{memberPort}},
		{"ConnectionReverseNAT", reply, 0x8, unnatted, []uint32{clientPort}},
		{"NewConnectionPunted", newConn, 0x3, newConn, []uint32{ofp.PortController}},
		{"OtherServiceToVIPDropped", func() oftable.Packet { p := newConn; p.L4Dst = 22; return p }(), 0x4, func() oftable.Packet { p := newConn; p.L4Dst = 22; return p }(), nil},
		{"InPortOutputResolved", hairpin, 0x9, hairpinOut, []uint32{memberPort}},
		{"ARPRequestForVIP", arp(1, vip, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), 0x2, arp(1, vip, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), []uint32{ofp.PortController}},
		{"ARPReplyToVIPIsL2", arp(2, client, clientMAC), 0x5, arp(2, client, clientMAC), []uint32{clientPort}},
		{"ARPRequestForOtherMisses", arp(1, member, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), 0x1, arp(1, member, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), []uint32{ofp.PortController}},
		{"UDPRewriteAndTwoOutputs", udp, 0xa, udpOut, []uint32{4, ofp.PortController}},
		{"MaskedSourceICMP", ping, 0x6, ping, []uint32{ofp.PortFlood}},
		{"MaskedSourceOutside", pingOther, 0x1, pingOther, []uint32{ofp.PortController}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tbl.Process(tt.in)
			if r.Flow == nil || r.Flow.Cookie != tt.wantCookie {
				t.Fatalf("%v matched %v, want the flow with cookie %#x", tt.in, r.Flow, tt.wantCookie)
			}
			if r.Out != tt.wantOut || !slices.Equal(r.Ports, tt.wantPorts) {
				t.Errorf("%v:\n got  %v to %v\n want %v to %v", tt.in, r.Out, r.Ports, tt.wantOut, tt.wantPorts)
			}
		})
	}

	t.Run("MissWithoutTableMissFlowDrops", func(t *testing.T) {
		tbl := oftable.New()
		mustApply(t, tbl, flows[1:]...)
		p := arp(1, member, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
		r := tbl.Process(p)
		if r.Flow != nil || r.Ports != nil || r.Out != p {
			t.Errorf("Process = %+v, want a miss that drops", r)
		}
		if _, ok := tbl.Lookup(p); ok {
			t.Error("Lookup found a flow")
		}
	})
	t.Run("OnlyTable0", func(t *testing.T) {
		tbl := oftable.New()
		fm := add(1, 1, nil, out(1))
		fm.TableID = 1
		mustApply(t, tbl, fm)
		if r := tbl.Process(syn); r.Flow != nil {
			t.Errorf("Process matched %v in table 1", r.Flow)
		}
	})
}

// An ARP responder, as OVN and sdnlb build it, turns a request for the
// VIP into the reply from the VIP's MAC and sends it back where it came
// from, broadcast or unicast.
func TestTable_Process_ARPResponder(t *testing.T) {
	tbl := oftable.New()
	mustApply(t, tbl, add(0x2, 510, oxms(ofp.MatchEthType(0x0806), ofp.MatchARPOp(1), ofp.MatchARPTPA(vip)),
		move(48, ofp.NXMEthSrc, ofp.NXMEthDst), ofp.ActionSetField{Field: ofp.MatchEthSrc(vipMAC)},
		ofp.ActionSetField{Field: ofp.MatchARPOp(2)},
		move(48, ofp.NXMARPSHA, ofp.NXMARPTHA), ofp.ActionSetField{Field: ofp.MatchARPSHA(vipMAC)},
		move(32, ofp.NXMARPSPA, ofp.NXMARPTPA), ofp.ActionSetField{Field: ofp.MatchARPSPA(vip)},
		out(ofp.PortInPort)))
	reply := oftable.Packet{InPort: clientPort, EthSrc: vipMAC, EthDst: clientMAC, EthType: 0x0806,
		ARPOp: 2, ARPSHA: vipMAC, ARPSPA: vip, ARPTHA: clientMAC, ARPTPA: client}
	for _, dst := range [][6]byte{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, vipMAC} {
		request := oftable.Packet{InPort: clientPort, EthSrc: clientMAC, EthDst: dst, EthType: 0x0806,
			ARPOp: 1, ARPSHA: clientMAC, ARPSPA: client, ARPTPA: vip}
		r := tbl.Process(request)
		if r.Out != reply || !slices.Equal(r.Ports, []uint32{clientPort}) {
			t.Errorf("%v:\n got  %v to %v\n want %v to %v", request, r.Out, r.Ports, reply, []uint32{clientPort})
		}
	}
}

// ndResponder answers a neighbour solicitation for vip6 with the solicited
// advertisement from vipMAC in two flows, as the ofp golden vectors
// flow_mod_nd_responder and flow_mod_nd_responder_tll do: the first turns
// the solicitation into the advertisement and goes to table 1, where the
// second, which matches the advertisement, may set nd_tll.
func ndResponder() []*ofp.FlowMod {
	match := func(icmpv6Type uint8) []ofp.OXM {
		return oxms(ofp.MatchEthType(0x86dd), ofp.MatchIPProto(58), ofp.MatchICMPv6Type(icmpv6Type), ofp.MatchIPv6NDTarget(vip6))
	}
	turn := add(0x3, 520, match(135),
		move(48, ofp.NXMEthSrc, ofp.NXMEthDst), ofp.ActionSetField{Field: ofp.MatchEthSrc(vipMAC)},
		move(128, ofp.NXMIPv6Src, ofp.NXMIPv6Dst), ofp.ActionSetField{Field: ofp.MatchIPv6Src(vip6)},
		ofp.ActionSetField{Field: ofp.MatchNDOptionsType(ofp.NDOptionTargetLL)},
		ofp.ActionSetField{Field: ofp.MatchNDReserved(ofp.NDFlagSolicited | ofp.NDFlagOverride)},
		ofp.ActionSetField{Field: ofp.MatchICMPv6Type(136)})
	turn.Instructions = append(turn.Instructions, ofp.InstructionGotoTable{TableID: 1})
	answer := add(0x3, 520, match(136), ofp.ActionSetField{Field: ofp.MatchIPv6NDTLL(vipMAC)}, out(ofp.PortInPort))
	answer.TableID = 1
	return []*ofp.FlowMod{turn, answer}
}

func TestTable_Process_NDResponder(t *testing.T) {
	tbl := oftable.New()
	mustApply(t, tbl, ndResponder()...)
	solicited := netip.MustParseAddr("ff02::1:ff00:64").As16()
	for _, dst := range []struct {
		mac [6]byte
		ip  [16]byte
	}{{[6]byte{0x33, 0x33, 0xff, 0, 0, 0x64}, solicited}, {vipMAC, vip6}} {
		ns := oftable.Packet{InPort: clientPort, EthSrc: clientMAC, EthDst: dst.mac, EthType: 0x86dd, IPProto: 58,
			IPv6Src: client6, IPv6Dst: dst.ip, ICMPType: 135, NDTarget: vip6, NDSLL: clientMAC, NDOptionsType: 1}
		// The option the solicitation carried, now the target's with the
		// VIP's MAC; nd_sll keeps what the solicitation said, as in OVS's
		// flow, but the packet has no source link-layer option any more.
		na := oftable.Packet{InPort: clientPort, EthSrc: vipMAC, EthDst: clientMAC, EthType: 0x86dd, IPProto: 58,
			IPv6Src: vip6, IPv6Dst: client6, ICMPType: 136, NDTarget: vip6, NDSLL: clientMAC, NDTLL: vipMAC,
			NDOptionsType: 2, NDReserved: 0x60000000}
		r := tbl.Process(ns)
		if r.Out != na || !slices.Equal(r.Ports, []uint32{clientPort}) {
			t.Errorf("%v:\n got  %v to %v\n want %v to %v", ns, r.Out, r.Ports, na, []uint32{clientPort})
		}
	}
	other := oftable.Packet{InPort: clientPort, EthType: 0x86dd, IPProto: 58, ICMPType: 135, NDTarget: member6}
	if r := tbl.Process(other); r.Flow != nil {
		t.Errorf("a solicitation for another address matched %v", r.Flow)
	}
}

// A switch skips a set-field whose prerequisites the packet no longer
// meets: nd_sll after the solicitation became an advertisement.
func TestApplyActions_SkipsSetFieldWhosePrereqsAreGone(t *testing.T) {
	ns := oftable.Packet{EthType: 0x86dd, IPProto: 58, ICMPType: 135, NDTarget: vip6, NDSLL: clientMAC}
	got, _ := oftable.ApplyActions([]ofp.Action{ofp.ActionSetField{Field: ofp.MatchICMPv6Type(136)},
		ofp.ActionSetField{Field: ofp.MatchIPv6NDSLL(vipMAC)}}, ns)
	if want := (oftable.Packet{EthType: 0x86dd, IPProto: 58, ICMPType: 136, NDTarget: vip6, NDSLL: clientMAC}); got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

// An IPv6 VIP's connection NATed to a member, both ways, the client
// matched by its /64.
func TestTable_Process_IPv6NAT(t *testing.T) {
	tbl := oftable.New()
	mask64 := [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	mustApply(t, tbl,
		add(0x4, 1000, oxms(ofp.MatchEthType(0x86dd), ofp.MatchIPv6SrcMasked(client6, mask64), ofp.MatchIPv6Dst(vip6),
			ofp.MatchIPProto(6), ofp.MatchTCPDst(80)),
			ofp.ActionSetField{Field: ofp.MatchEthDst(memberMAC)}, ofp.ActionSetField{Field: ofp.MatchIPv6Dst(member6)},
			ofp.ActionSetField{Field: ofp.MatchTCPDst(8080)}, out(memberPort)),
		add(0x4, 1000, oxms(ofp.MatchEthType(0x86dd), ofp.MatchIPv6Src(member6), ofp.MatchIPProto(6), ofp.MatchTCPSrc(8080)),
			move(128, ofp.NXMIPv6Dst, ofp.NXMIPv6Src), ofp.ActionSetField{Field: ofp.MatchIPv6Src(vip6)},
			ofp.ActionSetField{Field: ofp.MatchTCPSrc(80)}, out(clientPort)))
	syn := oftable.Packet{InPort: clientPort, EthSrc: clientMAC, EthDst: vipMAC, EthType: 0x86dd, IPProto: 6,
		IPv6Src: client6, IPv6Dst: vip6, L4Src: 40000, L4Dst: 80}
	want := syn
	want.EthDst, want.IPv6Dst, want.L4Dst = memberMAC, member6, 8080
	if r := tbl.Process(syn); r.Out != want || !slices.Equal(r.Ports, []uint32{memberPort}) {
		t.Errorf("forward:\n got  %v to %v\n want %v", r.Out, r.Ports, want)
	}
	outsider := syn
	outsider.IPv6Src = netip.MustParseAddr("2001:db8:2::5").As16()
	if r := tbl.Process(outsider); r.Flow != nil {
		t.Errorf("a client outside the /64 matched %v", r.Flow)
	}
	// The reply's source becomes the VIP; moving ipv6_dst into ipv6_src
	// first shows moves of 128 bits run.
	reply := oftable.Packet{InPort: memberPort, EthSrc: memberMAC, EthDst: vipMAC, EthType: 0x86dd, IPProto: 6,
		IPv6Src: member6, IPv6Dst: client6, L4Src: 8080, L4Dst: 40000}
	want = reply
	want.IPv6Src, want.L4Src = vip6, 80
	if r := tbl.Process(reply); r.Out != want || !slices.Equal(r.Ports, []uint32{clientPort}) {
		t.Errorf("reply:\n got  %v to %v\n want %v", r.Out, r.Ports, want)
	}
	udp := syn
	udp.IPProto = 17
	if r := tbl.Process(udp); r.Flow != nil {
		t.Errorf("UDP matched the TCP flow %v", r.Flow)
	}
}

// Overlapping flows of equal priority: OpenFlow leaves the choice open,
// the model picks the first in Flows order whatever the order of adds.
func TestTable_Lookup_PriorityTie(t *testing.T) {
	byMAC := add(0xb, 100, oxms(ofp.MatchEthDst(vipMAC)), out(1))
	byIP := add(0xa, 100, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPv4Dst(vip)), out(2))
	higher := add(0xc, 101, oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6)), out(3))
	p := tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 80)
	tests := []struct {
		name       string
		mods       []*ofp.FlowMod
		wantCookie uint64
	}{
		{"FirstAddedFirst", []*ofp.FlowMod{byIP, byMAC}, 0xa},
		{"FirstAddedSecond", []*ofp.FlowMod{byMAC, byIP}, 0xa},
		{"HigherPriorityWins", []*ofp.FlowMod{byMAC, higher, byIP}, 0xc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := oftable.New()
			mustApply(t, tbl, tt.mods...)
			f, ok := tbl.Lookup(p)
			if !ok || f.Cookie != tt.wantCookie {
				t.Fatalf("Lookup = %v, %t; want cookie %#x", f, ok, tt.wantCookie)
			}
			if first := tbl.Flows()[0]; first.Cookie != tt.wantCookie {
				t.Errorf("Flows()[0] = %v, want the flow Lookup picked", first)
			}
		})
	}
}

func TestTable_Flows_Order(t *testing.T) {
	tbl := oftable.New()
	inTable2 := add(0x1, 900, nil)
	inTable2.TableID = 2
	mustApply(t, tbl,
		add(0x3, 100, oxms(ofp.MatchEthDst(clientMAC)), out(clientPort)),
		inTable2,
		add(0x2, 100, oxms(ofp.MatchEthDst(memberMAC)), out(memberPort)),
		add(0x4, 500, tcpTo(vip, 80), toController),
	)
	var got []uint64
	for _, f := range tbl.Flows() {
		got = append(got, f.Cookie)
	}
	if want := []uint64{0x4, 0x2, 0x3, 0x1}; !slices.Equal(got, want) {
		t.Errorf("Flows cookies %#x, want %#x (table, priority descending, line)", got, want)
	}
}

// A goto_table carries the packet, as its flows rewrote it, to a later
// table; a miss there drops it.
func TestTable_Process_Pipeline(t *testing.T) {
	tbl := oftable.New()
	mustApply(t, tbl,
		goTo(add(0x1, 0, nil), 9),
		goTo(add(0x2, 500, tcpTo(vip, 80), ofp.ActionSetField{Field: ofp.MatchEthDst(memberMAC)}), 9),
		inTable(add(0x3, 100, oxms(ofp.MatchEthDst(memberMAC)), out(memberPort)), 9),
		inTable(add(0x4, 0, nil, out(ofp.PortNormal)), 9),
	)
	tests := []struct {
		name  string
		p     oftable.Packet
		path  []uint64 // cookies
		ports []uint32
	}{
		{"RewrittenThenSwitched", tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 80), []uint64{0x2, 0x3}, []uint32{memberPort}},
		{"MissThenNormal", tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 81), []uint64{0x1, 0x4}, []uint32{ofp.PortNormal}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tbl.Process(tt.p)
			var path []uint64
			for _, f := range r.Path {
				path = append(path, f.Cookie)
			}
			if !slices.Equal(path, tt.path) || !slices.Equal(r.Ports, tt.ports) || r.Flow.Cookie != tt.path[len(tt.path)-1] {
				t.Errorf("path %#x ports %v, want %#x %v", path, r.Ports, tt.path, tt.ports)
			}
		})
	}
}

// Registers written in one table are matched in the next; TCP flags and
// the tracker's fields (all zero: no ct ran) are matched as OVS does.
func TestTable_Process_NiciraFields(t *testing.T) {
	tcp := oxms(ofp.MatchEthType(0x0800), ofp.MatchIPProto(6))
	reg := func(n uint8, v uint32) ofp.OXM { return ofp.MatchReg(n, v, 0xffffffff) }
	untracked := ofp.MatchCTState(0, ofp.CTStateTrk)
	tbl := oftable.New()
	mustApply(t, tbl,
		goTo(add(1, 10, append(slices.Clone(tcp), ofp.MatchTCPFlags(ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK)),
			ofp.ActionSetField{Field: reg(1, 1)}, ofp.ActionRegMove{NBits: 16, Src: ofp.NXMTCPSrc, Dst: ofp.NXMReg(2), DstOfs: 16}), 1),
		goTo(add(1, 5, tcp, ofp.ActionSetField{Field: reg(1, 2)}), 1),
		inTable(add(2, 30, oxms(reg(1, 1), ofp.MatchReg(2, 40000<<16, 0xffff0000), untracked, ofp.MatchCTLabel([16]byte{}),
			ofp.MatchCTMark(0, 0xffffffff), ofp.MatchCTZone(0)), out(1)), 1),
		inTable(add(2, 20, oxms(reg(1, 2)), out(2)), 1),
		inTable(add(2, 10, oxms(ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk)), out(3)), 1))
	tests := []struct {
		name  string
		flags uint16
		want  []uint32
	}{
		{"SYN", ofp.TCPFlagSYN, []uint32{1}},
		{"SYNACK", ofp.TCPFlagSYN | ofp.TCPFlagACK, []uint32{2}},
		{"NoFlags", 0, []uint32{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 80)
			p.TCPFlags = tt.flags
			if r := tbl.Process(p); !slices.Equal(r.Ports, tt.want) {
				t.Errorf("ports %v, want %v", r.Ports, tt.want)
			}
		})
	}
}
