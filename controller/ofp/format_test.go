package ofp

import (
	"net/netip"
	"testing"
)

func TestMatch_String(t *testing.T) {
	ipv6 := mustOXM(t, OXMClassBasic, OXMIPv6Src,
		[]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, nil)
	tests := []struct {
		name  string
		match Match
		want  string
	}{
		{"Empty", Match{}, ""},
		{"NATForward", natFlowMod().Match,
			"tcp,in_port=1,nw_src=10.0.0.1,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80"},
		{"FieldOrderIsOVSNotWire", Match{OXMs: []OXM{
			MatchTCPDst(80), MatchIPProto(6), MatchInPort(1), MatchEthType(0x0800)}},
			"tcp,in_port=1,tp_dst=80"},
		{"ARPPacketIn", Match{OXMs: []OXM{
			MatchInPort(6), MatchEthType(0x0806), MatchEthDst([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
			MatchEthSrc(macF20B7D), MatchARPOp(1), MatchARPSPA([4]byte{10, 0, 0, 1}),
			MatchARPTPA([4]byte{10, 0, 0, 3}), MatchARPSHA(macF20B7D), MatchARPTHA([6]byte{}),
		}}, "arp,in_port=6,dl_src=f2:0b:a4:7d:f8:ea,dl_dst=ff:ff:ff:ff:ff:ff,arp_spa=10.0.0.1,arp_tpa=10.0.0.3,arp_op=1,arp_sha=f2:0b:a4:7d:f8:ea,arp_tha=00:00:00:00:00:00"},
		{"UDP", Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPProto(17), MatchUDPDst(53)}}, "udp,tp_dst=53"},
		{"ICMP", Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPProto(1), MatchICMPv4Type(8), MatchICMPv4Code(0)}},
			"icmp,icmp_type=8,icmp_code=0"},
		{"IPOtherProto", Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPProto(47)}}, "ip,nw_proto=47"},
		{"ProtoWithoutEthType", Match{OXMs: []OXM{MatchIPProto(6)}}, "nw_proto=6"},
		{"PrefixMask", Match{OXMs: []OXM{MatchEthType(0x0800),
			MatchIPv4DstMasked([4]byte{10, 0, 0, 9}, [4]byte{255, 255, 255, 0})}}, "ip,nw_dst=10.0.0.0/24"},
		{"NonPrefixMask", Match{OXMs: []OXM{MatchEthType(0x0800),
			MatchIPv4SrcMasked([4]byte{10, 9, 0, 9}, [4]byte{255, 0, 255, 0})}}, "ip,nw_src=10.0.0.0/255.0.255.0"},
		{"OtherEthType", Match{OXMs: []OXM{MatchEthType(0x88cc)}}, "dl_type=0x88cc"},
		{"ReservedInPort", Match{OXMs: []OXM{MatchInPort(PortLocal)}}, "in_port=LOCAL"},
		{"VLAN", Match{OXMs: []OXM{MatchVLANVID(10), MatchVLANPCP(3)}}, "dl_vlan=10,dl_vlan_pcp=3"},
		{"Untagged", Match{OXMs: []OXM{mustOXM(t, OXMClassBasic, OXMVLANVID, []byte{0, 0}, nil)}}, "vlan_tci=0x0000"},
		{"Metadata", Match{OXMs: []OXM{MatchMetadata(0xab)}}, "metadata=0xab"},
		{"TCP6", Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPProto(6), ipv6}}, "tcp6,ipv6_src=2001:db8::1"},
		{"UDP6", Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPProto(17), MatchUDPDst(53)}}, "udp6,tp_dst=53"},
		{"IPv6OtherProto", Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPProto(47)}}, "ipv6,nw_proto=47"},
		{"IPv6Prefix", Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPv6DstMasked(v6("2001:db8:0:1::9"), mask64)}},
			"ipv6,ipv6_dst=2001:db8:0:1::/64"},
		{"IPv6NonPrefixMask", Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPv6SrcMasked(v6("::1:0:0:9"), v6("::ffff:0:0:ffff"))}},
			"ipv6,ipv6_src=::1:0:0:9/::ffff:0:0:ffff"},
		{"NeighbourAdvertisement", Match{OXMs: []OXM{MatchEthType(0x86dd), MatchIPProto(58), MatchICMPv6Type(136),
			MatchICMPv6Code(0), MatchIPv6NDTarget(vip6), MatchIPv6NDTLL([6]byte{2, 0, 0, 0, 1, 0})}},
			"icmp6,icmp_type=136,icmp_code=0,nd_target=2001:db8::64,nd_tll=02:00:00:00:01:00"},
		{"ForeignClass", Match{OXMs: []OXM{MatchInPort(2),
			mustOXM(t, OXMClassNXM1, 77, []byte{0, 0, 0, 7}, []byte{0, 0, 0, 0xff})}},
			"in_port=2,oxm(0x0001:77)=0x7/0xff"},
		{"TunnelBeforeMetadataBeforeInPort", Match{OXMs: []OXM{MatchInPort(1), MatchMetadata(0x1f), MatchTunnelID(5)}},
			"tun_id=0x5,metadata=0x1f,in_port=1"},
		{"ZeroHexIsZero", Match{OXMs: []OXM{MatchMetadata(0), MatchReg(0, 0, 0xffffffff), MatchCTMark(0, 0xffffffff)}},
			"ct_mark=0,reg0=0,metadata=0"},
		{"ConntrackBeforeKeywordRegistersAfter", Match{OXMs: []OXM{MatchInPort(1), MatchEthType(0x0800), MatchIPProto(6),
			MatchReg(1, 5, 0xff), MatchReg(0, 1, 0xffffffff), MatchCTMark(5, 0xff), MatchCTZone(5),
			MatchCTState(CTStateEst|CTStateTrk, CTStateEst|CTStateTrk), MatchReg(7, 0xffffffff, 0xffffffff)}},
			"ct_state=+est+trk,ct_zone=5,ct_mark=0x5/0xff,tcp,reg0=0x1,reg1=0x5/0xff,reg7=0xffffffff,in_port=1"},
		{"CTLabelNoLeadingZeros", Match{OXMs: []OXM{MatchCTLabel([16]byte{12: 10, 15: 100}), MatchCTMark(0x60050, 0xffffffff)}},
			"ct_mark=0x60050,ct_label=0xa000064"},
		{"CTLabelZero", Match{OXMs: []OXM{MatchCTLabel([16]byte{})}}, "ct_label=0"},
		{"CTStateUntracked", Match{OXMs: []OXM{MatchCTState(0, CTStateTrk)}}, "ct_state=-trk"},
		{"CTStateBitOrder", Match{OXMs: []OXM{MatchCTState(CTStateTrk, CTStateTrk|CTStateInv)}}, "ct_state=-inv+trk"},
		{"CTStateAllBitsMasked", Match{OXMs: []OXM{MatchCTState(CTStateNew|CTStateTrk, 0xff)}}, "ct_state=new|trk"},
		{"CTStateUnmasked", Match{OXMs: []OXM{MatchCTState(CTStateNew|CTStateTrk, 0xffffffff)}}, "ct_state=new|trk"},
		{"CTStateNone", Match{OXMs: []OXM{MatchCTState(0, 0xff)}}, "ct_state=0"},
		{"CTStateUnknownBit", Match{OXMs: []OXM{MatchCTState(0x100, 0x100)}}, "ct_state=0x100/0x100"},
		{"CTOriginalTuple", Match{OXMs: []OXM{MatchEthType(0x0800), MatchCTTpDst(80), MatchCTNwProto(6),
			MatchCTNwDst([4]byte{10, 0, 0, 100}), MatchCTState(CTStateTrk, CTStateTrk|CTStateInv)}},
			"ct_state=-inv+trk,ct_nw_dst=10.0.0.100,ct_nw_proto=6,ct_tp_dst=80,ip"},
		{"TunnelAddresses", Match{OXMs: []OXM{MatchEthType(0x0800), MatchInPort(3),
			mustOXM(t, OXMClassNXM1, 32, []byte{192, 168, 2, 4}, nil), mustOXM(t, OXMClassNXM1, 31, []byte{192, 168, 2, 3}, nil)}},
			"ip,tun_src=192.168.2.3,tun_dst=192.168.2.4,in_port=3"},
		{"NXFieldWrongLength", Match{OXMs: []OXM{mustOXM(t, OXMClassNXM1, 107, []byte{1, 2}, nil)}},
			"oxm(0x0001:107)=0x0102"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.match.String(); got != tt.want {
				t.Errorf("String() = %q\nwant       %q", got, tt.want)
			}
		})
	}
}

func TestFormatInstructions(t *testing.T) {
	ryuFlowMod := goldenCases(t)
	var ryu []Instruction
	for _, c := range ryuFlowMod {
		if c.name == "flow_mod" {
			ryu = c.msg.(*FlowMod).Instructions
		}
	}
	tests := []struct {
		name string
		in   []Instruction
		want string
	}{
		{"None", nil, "drop"},
		{"EmptyApply", []Instruction{InstructionApplyActions{}}, "drop"},
		{"NATForward", natFlowMod().Instructions,
			"set_field:02:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->tcp_dst,output:3"},
		{"ApplyBeforeGoto", []Instruction{InstructionGotoTable{TableID: 1},
			InstructionApplyActions{Actions: []Action{ActionOutput{Port: PortController, MaxLen: 65535}}}},
			"CONTROLLER:65535,goto_table:1"},
		{"WriteActions", []Instruction{InstructionWriteActions{Actions: []Action{ActionOutput{Port: PortNormal}}}},
			"write_actions(NORMAL)"},
		{"ExecutionOrder", []Instruction{InstructionWriteMetadata{Metadata: 0xab, Mask: 0xff},
			InstructionClearActions{}, InstructionMeter{MeterID: 2}},
			"meter:2,clear_actions,write_metadata:0xab/0xff"},
		{"PointerActions", []Instruction{&InstructionApplyActions{Actions: []Action{
			&ActionSetField{Field: MatchIPv4Src([4]byte{10, 0, 0, 100})}, &ActionOutput{Port: PortInPort}}}},
			"set_field:10.0.0.100->ip_src,IN_PORT"},
		{"VLANAndGroup", []Instruction{InstructionApplyActions{Actions: []Action{
			ActionPushVLAN{EtherType: 0x8100}, ActionSetField{Field: MatchVLANVID(5)}, ActionGroup{GroupID: 1},
			ActionPopVLAN{}, ActionDecNwTTL{}, ActionOutput{Port: PortFlood}}}},
			"push_vlan:0x8100,set_field:4101->vlan_vid,group:1,pop_vlan,dec_ttl,FLOOD"},
		{"ARPResponder", arpResponderFlowMod().Instructions,
			"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],set_field:02:00:00:00:01:00->eth_src,set_field:2->arp_op," +
				"move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],set_field:02:00:00:00:01:00->arp_sha," +
				"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],set_field:10.0.0.100->arp_spa,IN_PORT"},
		{"RawExperimenter", []Instruction{InstructionApplyActions{Actions: []Action{
			ActionRaw{Type: ActionTypeExperimenter, Data: []byte{0, 0, 0x23, 0x20}}}}},
			"action(type=0xffff,data=0x00002320)"},
		{"RyuFlowMod", ryu,
			"set_field:01:02:03:04:05:06->eth_src,set_field:1->oxm(0x8000:41)," +
				"write_actions(set_field:258->vlan_vid,copy_ttl_out,copy_ttl_in,copy_ttl_in,pop_pbb," +
				"push_pbb:0x1234,pop_mpls:0x9876,push_mpls:0x8847,pop_vlan,push_vlan:0x8100,dec_mpls_ttl," +
				"set_mpls_ttl:10,dec_ttl,mod_nw_ttl:10,set_queue:3,group:99,output:6)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatInstructions(tt.in); got != tt.want {
				t.Errorf("FormatInstructions = %q\nwant                 %q", got, tt.want)
			}
		})
	}
}

func TestFormatActions(t *testing.T) {
	if got := FormatActions(nil); got != "drop" {
		t.Errorf("FormatActions(nil) = %q, want drop", got)
	}
	got := FormatActions([]Action{ActionSetQueue{QueueID: 1}, ActionOutput{Port: PortLocal}})
	if want := "set_queue:1,LOCAL"; got != want {
		t.Errorf("FormatActions = %q, want %q", got, want)
	}
}

func TestFormatActions_Nicira(t *testing.T) {
	ip := netip.MustParseAddr
	tests := []struct {
		name   string
		action Action
		want   string
	}{
		{"ResubmitTable", ActionResubmit{InPort: ResubmitInPort, Table: 5}, "resubmit(,5)"},
		{"ResubmitPortTable", ActionResubmit{InPort: 1234, Table: 99}, "resubmit(1234,99)"},
		{"ResubmitPort", ActionResubmit{InPort: 2, Table: TableAll}, "resubmit:2"},
		{"ResubmitReservedPort", &ActionResubmit{InPort: 0xfffe, Table: 1}, "resubmit(LOCAL,1)"},
		{"ResubmitNothing", ActionResubmit{InPort: ResubmitInPort, Table: TableAll}, "resubmit(,)"},
		{"CTClear", ActionCTClear{}, "ct_clear"},
		{"FinTimeoutIdle", ActionFinTimeout{IdleTimeout: 10}, "fin_timeout(idle_timeout=10)"},
		{"FinTimeoutBoth", &ActionFinTimeout{IdleTimeout: 1, HardTimeout: 5}, "fin_timeout(idle_timeout=1,hard_timeout=5)"},
		{"MultipathClient", ActionMultipath{Fields: HashFieldsNWSrc, Algorithm: MultipathModuloN, MaxLink: 255, NBits: 8, Dst: NXMReg(3)},
			"multipath(nw_src,0,modulo_n,256,0,NXM_NX_REG3[0..7])"},
		{"MoveWholeFields", ActionRegMove{NBits: 48, Src: NXMEthSrc, Dst: NXMEthDst},
			"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]"},
		{"MoveRanges", &ActionRegMove{NBits: 6, SrcOfs: 10, Src: NXMReg(0), Dst: NXMReg(1)},
			"move:NXM_NX_REG0[10..15]->NXM_NX_REG1[0..5]"},
		{"MoveOneBit", ActionRegMove{NBits: 1, DstOfs: 31, Src: NXMReg(0), Dst: NXMReg(1)},
			"move:NXM_NX_REG0[0]->NXM_NX_REG1[31]"},
		{"MoveOXMHeaders", ActionRegMove{NBits: 32, Src: 0x80000408, Dst: NXMReg(3)}, // OXM_OF_METADATA
			"move:OXM_OF_METADATA[0..31]->NXM_NX_REG3[]"},
		{"MoveOXMWithNXMName", ActionRegMove{NBits: 48, Src: 0x80000806, Dst: NXMEthDst}, // OXM eth_src
			"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]"},
		{"MoveARPHardwareAddress", ActionRegMove{NBits: 48, Src: NXMARPSHA, Dst: NXMARPTHA},
			"move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[]"},
		{"MoveARPProtocolAddress", &ActionRegMove{NBits: 32, Src: NXMARPSPA, Dst: NXMARPTPA},
			"move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[]"},
		{"MoveUnknownField", ActionRegMove{NBits: 8, Src: 0x0001ff04, Dst: NXMReg(0)},
			"move:oxm(0x0001:127)[0..7]->NXM_NX_REG0[0..7]"},
		{"CTRecirculate", ActionCT{Table: 4, Zone: 0}, "ct(table=4)"},
		{"CTNothing", ActionCT{Table: CTRecircNone}, "ct()"},
		{"CTZoneFromField", ActionCT{Table: 4, ZoneField: NXMReg(0), ZoneOfs: 4}, "ct(table=4,zone=NXM_NX_REG0[4..19])"},
		{"CTZoneWholeField", ActionCT{Table: CTRecircNone, ZoneField: NXMCTZone}, "ct(zone=NXM_NX_CT_ZONE[])"},
		{"CTLoadBalancer", &ActionCT{Flags: CTCommit, Table: 2, Zone: 1, Actions: []Action{
			ActionNAT{Flags: NATDst, AddrMin: ip("10.0.0.1"), PortMin: 80}}},
			"ct(commit,table=2,zone=1,nat(dst=10.0.0.1:80))"},
		{"CTEverything", ActionCT{Flags: CTCommit | CTForce, Table: CTRecircNone, ZoneField: NXMReg(2), Alg: 21,
			Actions: []Action{&ActionNAT{Flags: NATSrc | NATPersistent | NATProtoHash,
				AddrMin: ip("10.0.0.1"), AddrMax: ip("10.0.0.9"), PortMin: 1000, PortMax: 2000},
				ActionSetField{Field: MatchCTMark(1, 0xffffffff)}}},
			"ct(commit,force,zone=NXM_NX_REG2[0..15],nat(src=10.0.0.1-10.0.0.9:1000-2000,persistent,hash)," +
				"exec(set_field:0x1->ct_mark),alg=ftp)"},
		{"CTExecOnly", ActionCT{Flags: CTCommit, Table: CTRecircNone, Alg: 69,
			Actions: []Action{ActionSetField{Field: MatchCTMark(0x654321, 0xffffffff)}}},
			"ct(commit,exec(set_field:0x654321->ct_mark),alg=tftp)"},
		{"CTExecLabel", ActionCT{Flags: CTCommit, Table: 2, Zone: 94,
			Actions: []Action{ActionSetField{Field: MatchCTLabel([16]byte{12: 10, 15: 2})}}},
			"ct(commit,table=2,zone=94,exec(set_field:0xa000002->ct_label))"},
		{"MoveFromLabel", ActionRegMove{NBits: 32, Src: NXMCTLabel, Dst: NXMIPDst},
			"move:NXM_NX_CT_LABEL[0..31]->NXM_OF_IP_DST[]"},
		{"CTOtherAlg", ActionCT{Table: CTRecircNone, Alg: 99}, "ct(alg=99)"},
		{"NATBare", ActionNAT{}, "nat"},
		{"NATFlagsNeedRange", ActionNAT{Flags: NATSrc | NATPersistent}, "nat(src)"},
		{"NATRangeSameMinMax", ActionNAT{Flags: NATDst, AddrMin: ip("10.0.0.1"), AddrMax: ip("10.0.0.1"),
			PortMin: 80, PortMax: 80}, "nat(dst=10.0.0.1:80)"},
		{"NATIPv6Range", ActionNAT{Flags: NATDst, AddrMin: ip("2001:1::1"), AddrMax: ip("2001:1::ffff")},
			"nat(dst=2001:1::1-2001:1::ffff)"},
		{"NATIPv6Port", ActionNAT{Flags: NATDst | NATProtoRandom, AddrMin: ip("2001::1"), PortMin: 80},
			"nat(dst=[2001::1]:80,random)"},
		{"SetFieldNXMField", ActionSetField{Field: MatchReg(1, 0, 0xffffffff)}, "set_field:0->reg1"},
		{"RawExperimenter", ActionRaw{Type: ActionTypeExperimenter, Data: []byte{0, 0, 0x23, 0x20, 0, 8, 0, 0}},
			"action(type=0xffff,data=0x0000232000080000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatActions([]Action{tt.action}); got != tt.want {
				t.Errorf("FormatActions = %q\nwant           %q", got, tt.want)
			}
		})
	}
}

func TestNXMHeader(t *testing.T) {
	tests := []struct {
		h      NXMHeader
		class  uint16
		field  OXMField
		length int
		name   string
	}{
		{NXMReg(0), OXMClassNXM1, 0, 4, "NXM_NX_REG0"},
		{NXMReg(15), OXMClassNXM1, 15, 4, "NXM_NX_REG15"},
		{NXMCTMark, OXMClassNXM1, 107, 4, "NXM_NX_CT_MARK"},
		{NXMCTZone, OXMClassNXM1, 106, 2, "NXM_NX_CT_ZONE"},
		{NXMEthSrc, OXMClassNXM0, 2, 6, "NXM_OF_ETH_SRC"},
		{NXMTCPDst, OXMClassNXM0, 10, 2, "NXM_OF_TCP_DST"},
		{NXMARPOp, OXMClassNXM0, 15, 2, "NXM_OF_ARP_OP"},
		{NXMARPSPA, OXMClassNXM0, 16, 4, "NXM_OF_ARP_SPA"},
		{NXMARPTPA, OXMClassNXM0, 17, 4, "NXM_OF_ARP_TPA"},
		{NXMARPSHA, OXMClassNXM1, 17, 6, "NXM_NX_ARP_SHA"},
		{NXMARPTHA, OXMClassNXM1, 18, 6, "NXM_NX_ARP_THA"},
		{0x80003006, OXMClassBasic, OXMARPSHA, 6, "NXM_NX_ARP_SHA"},
		{0x80004c08, OXMClassBasic, OXMTunnelID, 8, "NXM_NX_TUN_ID"},
		{0x80000004, OXMClassBasic, OXMInPort, 4, "OXM_OF_IN_PORT"},
		{NXMIPv6Src, OXMClassNXM1, 19, 16, "NXM_NX_IPV6_SRC"},
		{NXMIPv6Dst, OXMClassNXM1, 20, 16, "NXM_NX_IPV6_DST"},
		{NXMICMPv6Type, OXMClassNXM1, 21, 1, "NXM_NX_ICMPV6_TYPE"},
		{NXMICMPv6Code, OXMClassNXM1, 22, 1, "NXM_NX_ICMPV6_CODE"},
		{NXMNDTarget, OXMClassNXM1, 23, 16, "NXM_NX_ND_TARGET"},
		{NXMNDSLL, OXMClassNXM1, 24, 6, "NXM_NX_ND_SLL"},
		{NXMNDTLL, OXMClassNXM1, 25, 6, "NXM_NX_ND_TLL"},
		{NXMIPv6Label, OXMClassNXM1, 27, 4, "NXM_NX_IPV6_LABEL"},
		{NXMNDReserved, OXMClassEricsson, 1, 4, "ERICOXM_OF_ICMPV6_ND_RESERVED"},
		{NXMNDOptionsType, OXMClassEricsson, 2, 1, "ERICOXM_OF_ICMPV6_ND_OPTIONS_TYPE"},
		{0x80003410, OXMClassBasic, OXMIPv6Src, 16, "NXM_NX_IPV6_SRC"},
		{0x80003e10, OXMClassBasic, OXMIPv6NDTarget, 16, "NXM_NX_ND_TARGET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.h.Class() != tt.class || tt.h.Field() != tt.field || tt.h.Len() != tt.length || tt.h.String() != tt.name {
				t.Errorf("%#x: class %#x field %d len %d name %q", uint32(tt.h), tt.h.Class(), tt.h.Field(), tt.h.Len(), tt.h.String())
			}
		})
	}
}

func TestGroup_String(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"SelectWithNAT", lbGroupMod().String(),
			"group_id=1,type=select,bucket=weight:10,actions=output:1," +
				"bucket=weight:20,actions=ct(commit,table=2,zone=1,nat(dst=10.0.0.2:8080))"},
		{"SelectDefaultWeight", GroupMod{GroupType: GroupTypeSelect, GroupID: 2, Buckets: []Bucket{
			{Weight: 1, WatchPort: PortAny, WatchGroup: GroupAny, Actions: []Action{ActionOutput{Port: 1}}}}}.String(),
			"group_id=2,type=select,bucket=actions=output:1"},
		{"Modify", GroupMod{Command: GroupModify, GroupType: GroupTypeIndirect, GroupID: 7, Buckets: []Bucket{
			{WatchPort: PortAny, WatchGroup: GroupAny, Actions: []Action{ActionResubmit{InPort: ResubmitInPort, Table: 3}}}}}.String(),
			"modify,group_id=7,type=indirect,bucket=actions=resubmit(,3)"},
		{"Delete", GroupMod{Command: GroupDelete, GroupID: 1}.String(), "delete,group_id=1"},
		{"FastFailover", GroupDesc{GroupType: GroupTypeFF, GroupID: 8, Buckets: []Bucket{
			{WatchPort: 1, WatchGroup: GroupAny, Actions: []Action{ActionOutput{Port: 1}}},
			{WatchPort: 2, WatchGroup: 5, Actions: []Action{ActionOutput{Port: 2}}}}}.String(),
			"group_id=8,type=ff,bucket=watch_port:1,actions=output:1,bucket=watch_port:2,watch_group:5,actions=output:2"},
		{"RyuAllGroup", GroupDesc{GroupType: GroupTypeAll, GroupID: 1, Buckets: []Bucket{ryuBucket}}.String(),
			"group_id=1,type=all,bucket=weight:1,watch_port:1,watch_group:1,actions=output:2"},
		{"NoBucketsUnknownType", GroupDesc{GroupType: 9, GroupID: 3}.String(), "group_id=3,type=unknown"},
		{"EmptyBucket", GroupDesc{GroupID: 4, Buckets: []Bucket{{WatchPort: PortAny, WatchGroup: GroupAny}}}.String(),
			"group_id=4,type=all,bucket=actions=drop"},
		{"Stats", GroupStats{GroupID: 1, RefCount: 2, PacketCount: 123, ByteCount: 12345, DurationSec: 9,
			DurationNsec: 609036000, Buckets: []BucketCounter{{234, 2345}}}.String(),
			"group_id=1,duration=9.609036s,ref_count=2,packet_count=123,byte_count=12345,bucket0:packet_count=234,byte_count=2345"},
		{"StatsMillisecondsSkippedBucket", GroupStats{GroupID: 2, DurationSec: 1, DurationNsec: 5000000,
			Buckets: []BucketCounter{{^uint64(0), ^uint64(0)}, {1, 64}}}.String(),
			"group_id=2,duration=1.005s,ref_count=0,packet_count=0,byte_count=0,bucket1:packet_count=1,byte_count=64"},
		{"StatsWholeSecondsAndBadNsec", GroupStats{GroupID: 3, DurationSec: 4, DurationNsec: 4000000000}.String(),
			"group_id=3,duration=4.4000s,ref_count=0,packet_count=0,byte_count=0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("String() = %q\nwant       %q", tt.got, tt.want)
			}
		})
	}
}

func TestFlowMod_String(t *testing.T) {
	tests := []struct {
		name string
		fm   *FlowMod
		want string
	}{
		{"NATForward", natFlowMod(),
			"cookie=0x100000002,table=0,priority=1000,idle_timeout=60,hard_timeout=300,send_flow_rem," +
				"tcp,in_port=1,nw_src=10.0.0.1,nw_dst=10.0.0.100,tp_src=40000,tp_dst=80 " +
				"actions=set_field:02:00:00:00:00:02->eth_dst,set_field:10.0.0.2->ip_dst,set_field:8080->tcp_dst,output:3"},
		{"DeleteByCookie", &FlowMod{Command: FlowDelete, Cookie: 2, CookieMask: 0xffffffff, TableID: TableAll},
			"delete,cookie=0x2/0xffffffff,table=255,priority=0"},
		{"TableMiss", &FlowMod{Priority: 0, Instructions: []Instruction{InstructionApplyActions{
			Actions: []Action{ActionOutput{Port: PortController, MaxLen: ControllerMaxLenNoBuffer}}}}},
			"cookie=0x0,table=0,priority=0 actions=CONTROLLER:65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fm.String(); got != tt.want {
				t.Errorf("String() = %q\nwant       %q", got, tt.want)
			}
		})
	}
}
