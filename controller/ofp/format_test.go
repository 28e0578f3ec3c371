package ofp

import "testing"

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
		{"ForeignClass", Match{OXMs: []OXM{MatchInPort(2),
			mustOXM(t, OXMClassNXM1, 0, []byte{0, 0, 0, 7}, []byte{0, 0, 0, 0xff})}},
			"in_port=2,oxm(0x0001:0)=0x7/0xff"},
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
