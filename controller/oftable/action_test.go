package oftable_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

func TestApplyActions(t *testing.T) {
	syn := tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 80)
	udp := syn
	udp.IPProto = 17
	arp := oftable.Packet{InPort: clientPort, EthSrc: clientMAC, EthType: 0x0806, ARPOp: 1, ARPSPA: client, ARPTPA: vip}
	set := func(o ofp.OXM) ofp.Action { return ofp.ActionSetField{Field: o} }
	edit := func(p oftable.Packet, f func(*oftable.Packet)) oftable.Packet {
		f(&p)
		return p
	}
	arp.ARPSHA = clientMAC
	ptrSet, ptrOut := ofp.ActionSetField{Field: ofp.MatchIPv4Dst(member)}, ofp.ActionOutput{Port: memberPort}
	ptrMove := ofp.ActionRegMove{NBits: 48, Src: ofp.NXMEthSrc, Dst: ofp.NXMEthDst}
	tests := []struct {
		name      string
		in        oftable.Packet
		actions   []ofp.Action
		want      oftable.Packet
		wantPorts []uint32
	}{
		{"None", syn, nil, syn, nil},
		{"ForwardNAT", syn, []ofp.Action{set(ofp.MatchEthDst(memberMAC)), set(ofp.MatchIPv4Dst(member)), set(ofp.MatchTCPDst(8080)), out(memberPort)},
			edit(syn, func(p *oftable.Packet) { p.EthDst, p.IPv4Dst, p.L4Dst = memberMAC, member, 8080 }), []uint32{memberPort}},
		{"ReverseNAT", syn, []ofp.Action{set(ofp.MatchEthSrc(vipMAC)), set(ofp.MatchIPv4Src(vip)), set(ofp.MatchTCPSrc(80)), out(clientPort)},
			edit(syn, func(p *oftable.Packet) { p.EthSrc, p.IPv4Src, p.L4Src = vipMAC, vip, 80 }), []uint32{clientPort}},
		{"UDPPorts", udp, []ofp.Action{set(ofp.MatchUDPSrc(1)), set(ofp.MatchUDPDst(2))},
			edit(udp, func(p *oftable.Packet) { p.L4Src, p.L4Dst = 1, 2 }), nil},
		{"TCPFieldOfUDPPacketSkipped", udp, []ofp.Action{set(ofp.MatchTCPDst(2)), out(1)}, udp, []uint32{1}},
		{"IPv4FieldOfARPPacketSkipped", arp, []ofp.Action{set(ofp.MatchIPv4Dst(member))}, arp, nil},
		{"ARPFields", arp, []ofp.Action{set(ofp.MatchARPOp(2)), set(ofp.MatchARPSPA(vip)), set(ofp.MatchARPTPA(client))},
			edit(arp, func(p *oftable.Packet) { p.ARPOp, p.ARPSPA, p.ARPTPA = 2, vip, client }), nil},
		{"ARPHardwareAddresses", arp, []ofp.Action{set(ofp.MatchARPSHA(vipMAC)), set(ofp.MatchARPTHA(clientMAC))},
			edit(arp, func(p *oftable.Packet) { p.ARPSHA, p.ARPTHA = vipMAC, clientMAC }), nil},
		{"MovesInOrder", arp, []ofp.Action{move(48, ofp.NXMEthSrc, ofp.NXMEthDst), set(ofp.MatchEthSrc(vipMAC)),
			move(32, ofp.NXMARPSPA, ofp.NXMARPTPA), move(32, oxmARPSPA, ofp.NXMIPDst), out(ofp.PortInPort)},
			edit(arp, func(p *oftable.Packet) { p.EthDst, p.EthSrc, p.ARPTPA = clientMAC, vipMAC, client }), []uint32{clientPort}},
		{"MoveByOXMHeader", arp, []ofp.Action{move(48, oxmEthSrc, ofp.NXMARPTHA)},
			edit(arp, func(p *oftable.Packet) { p.ARPTHA = clientMAC }), nil},
		{"MoveOfPart", syn, []ofp.Action{ofp.ActionRegMove{NBits: 16, Src: ofp.NXMIPSrc, Dst: ofp.NXMIPDst}},
			edit(syn, func(p *oftable.Packet) { p.IPv4Dst = [4]byte{10, 0, 1, 5} }), nil},
		{"MoveAtOffsets", syn, []ofp.Action{ofp.ActionRegMove{NBits: 8, SrcOfs: 8, DstOfs: 0, Src: ofp.NXMIPSrc, Dst: ofp.NXMTCPDst}},
			edit(syn, func(p *oftable.Packet) { p.L4Dst = 80&0xff00 | 1 }), nil},
		{"MoveBetweenWidths", syn, []ofp.Action{move(32, ofp.NXMIPSrc, ofp.NXMEthDst)},
			edit(syn, func(p *oftable.Packet) { p.EthDst = [6]byte{0x02, 0, 10, 0, 1, 5} }), nil},
		{"MoveIntoAndOutOfRegisters", syn, []ofp.Action{move(32, ofp.NXMIPSrc, ofp.NXMReg(3)),
			ofp.ActionRegMove{NBits: 16, SrcOfs: 16, Src: ofp.NXMReg(3), Dst: ofp.NXMReg(4)}, move(32, ofp.NXMReg(3), ofp.NXMIPDst)},
			edit(syn, func(p *oftable.Packet) { p.Regs[3], p.Regs[4], p.IPv4Dst = 0x0a000105, 0x0a00, client }), nil},
		{"SetRegister", syn, []ofp.Action{set(ofp.MatchReg(2, 7, 0xffffffff))}, edit(syn, func(p *oftable.Packet) { p.Regs[2] = 7 }), nil},
		{"MoveIntoInPortOf16Bits", syn, []ofp.Action{set(ofp.MatchReg(4, 0xfffe, 0xffffffff)), move(16, ofp.NXMReg(4), ofp.NXMInPort), out(ofp.PortInPort)},
			edit(syn, func(p *oftable.Packet) { p.Regs[4], p.InPort = 0xfffe, ofp.PortLocal }), []uint32{ofp.PortLocal}},
		{"MoveOutOfCTLabel", func() oftable.Packet { p := syn; p.CTLabel[15] = 9; return p }(),
			[]ofp.Action{move(32, ofp.NXMCTLabel, ofp.NXMIPDst)},
			edit(syn, func(p *oftable.Packet) { p.CTLabel[15], p.IPv4Dst = 9, [4]byte{0, 0, 0, 9} }), nil},
		{"MoveIntoCTMarkSkipped", syn, []ofp.Action{move(16, ofp.NXMTCPDst, ofp.NXMCTMark)}, syn, nil},
		{"CTClear", func() oftable.Packet { p := syn; p.CTState, p.CTZone, p.CTMark = 0x21, 5, 6; return p }(),
			[]ofp.Action{ofp.ActionCTClear{}}, syn, nil},
		{"GroupAndCTSkipped", syn, []ofp.Action{ofp.ActionGroup{GroupID: 1}, ofp.ActionCT{Table: 1}, out(2)}, syn, []uint32{2}},
		{"InPortResolved", syn, []ofp.Action{out(ofp.PortInPort)}, syn, []uint32{clientPort}},
		{"ReservedPortsKept", syn, []ofp.Action{out(ofp.PortController), out(ofp.PortFlood), out(ofp.PortLocal), out(5)},
			syn, []uint32{ofp.PortController, ofp.PortFlood, ofp.PortLocal, 5}},
		{"PointerActions", syn, []ofp.Action{&ptrSet, &ptrMove, &ptrOut},
			edit(syn, func(p *oftable.Packet) { p.IPv4Dst, p.EthDst = member, clientMAC }), []uint32{memberPort}},
		{"UnmodelledSkipped", syn, []ofp.Action{ofp.ActionPushVLAN{EtherType: 0x8100}, ofp.ActionDecNwTTL{}, out(2)}, syn, []uint32{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ports := oftable.ApplyActions(tt.actions, tt.in)
			if got != tt.want || !slices.Equal(ports, tt.wantPorts) {
				t.Errorf("ApplyActions(%s):\n got  %v to %v\n want %v to %v", ofp.FormatActions(tt.actions), got, ports, tt.want, tt.wantPorts)
			}
		})
	}
}

func TestCheckActions(t *testing.T) {
	tests := []struct {
		name     string
		actions  []ofp.Action
		wantCode uint16 // with ErrTypeBadAction; 0xffff: no error
	}{
		{"OK", []ofp.Action{ofp.ActionSetField{Field: ofp.MatchTCPDst(1)}, &ofp.ActionOutput{Port: ofp.PortFlood}}, 0xffff},
		{"OKNone", nil, 0xffff},
		{"ErrPort0", []ofp.Action{out(0)}, ofp.BadActionBadOutPort},
		{"ErrGroup", []ofp.Action{ofp.ActionGroup{GroupID: 1}}, ofp.BadActionBadType},
		{"ErrSetInPort", []ofp.Action{ofp.ActionSetField{Field: ofp.MatchInPort(1)}}, 13},
		{"OKMove", []ofp.Action{move(48, ofp.NXMARPSHA, ofp.NXMARPTHA), &ofp.ActionRegMove{NBits: 48, Src: oxmEthSrc, Dst: ofp.NXMEthDst}}, 0xffff},
		{"OKMoveOfPart", []ofp.Action{ofp.ActionRegMove{NBits: 8, SrcOfs: 8, Src: ofp.NXMIPSrc, Dst: ofp.NXMIPDst}}, 0xffff},
		{"OKMoveRegister", []ofp.Action{move(32, ofp.NXMReg(0), ofp.NXMIPDst), move(16, ofp.NXMCTMark, ofp.NXMReg(15))}, 0xffff},
		{"OKCTClear", []ofp.Action{ofp.ActionCTClear{}}, 0xffff},
		{"OKFinTimeout", []ofp.Action{&ofp.ActionFinTimeout{IdleTimeout: 10}}, 0xffff},
		{"ErrMoveUnmodelledField", []ofp.Action{move(32, 0x00012008, ofp.NXMIPDst)}, ofp.BadActionBadType},
		{"ErrMoveBeyondField", []ofp.Action{ofp.ActionRegMove{NBits: 16, SrcOfs: 24, Src: ofp.NXMIPSrc, Dst: ofp.NXMIPDst}}, ofp.BadActionBadArgument},
		{"ErrMoveNoBits", []ofp.Action{move(0, ofp.NXMIPSrc, ofp.NXMIPDst)}, ofp.BadActionBadArgument},
		{"ErrMoveIntoCTMark", []ofp.Action{move(16, ofp.NXMTCPDst, ofp.NXMCTMark)}, 15},
		{"ErrSetCTLabel", []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTLabel([16]byte{15: 1})}}, 15},
		{"ErrSetCTState", []ofp.Action{ofp.ActionSetField{Field: ofp.MatchCTState(ofp.CTStateTrk, 0xffffffff)}}, 13},
		{"ErrCT", []ofp.Action{ofp.ActionCT{Zone: 1, Table: 1}}, ofp.BadActionBadType},
		{"ErrMoveIntoUnsettable", []ofp.Action{move(16, ofp.NXMARPOp, oxmEthType)}, 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := oftable.CheckActions(tt.actions)
			var msg *ofp.ErrorMsg
			switch {
			case tt.wantCode == 0xffff && err != nil:
				t.Fatalf("CheckActions: %v", err)
			case tt.wantCode != 0xffff && (!errors.As(err, &msg) || msg.ErrType != ofp.ErrTypeBadAction || msg.Code != tt.wantCode):
				t.Fatalf("CheckActions = %v, want BAD_ACTION code %d", err, tt.wantCode)
			}
		})
	}
}

// OXM headers of OpenFlow-basic fields, which moves may name instead of
// the NXM ones.
const (
	oxmEthSrc  ofp.NXMHeader = 0x80000806
	oxmEthType ofp.NXMHeader = 0x80000a02
	oxmARPSPA  ofp.NXMHeader = 0x80002c04
)

// move is a move of a whole field of nBits.
func move(nBits uint16, src, dst ofp.NXMHeader) ofp.Action {
	return ofp.ActionRegMove{NBits: nBits, Src: src, Dst: dst}
}

// A multipath over the source address gives a client one link whatever
// its port, and spreads clients over every link.
func TestApplyActions_MultipathByClient(t *testing.T) {
	mp := ofp.ActionMultipath{Fields: ofp.HashFieldsNWSrc, Algorithm: ofp.MultipathModuloN, MaxLink: 15, DstOfs: 4, NBits: 4, Dst: ofp.NXMReg(3)}
	if err := oftable.CheckActions([]ofp.Action{mp}); err != nil {
		t.Fatal(err)
	}
	linkOf := func(src [4]byte, sport uint16) uint32 {
		p := tcpPacket(clientPort, clientMAC, vipMAC, src, sport, vip, 80)
		p.Regs[3] = 0xf00f
		out, _ := oftable.ApplyActions([]ofp.Action{mp}, p)
		if out.Regs[3]&^0xf0 != 0xf00f {
			t.Fatalf("reg3 %#x: bits outside [4..7] changed", out.Regs[3])
		}
		return out.Regs[3] >> 4 & 0xf
	}
	seen := map[uint32]bool{}
	for i := range 200 {
		src := [4]byte{10, 1, byte(i / 250), byte(i % 250)}
		if a, b := linkOf(src, 40000), linkOf(src, 50000); a != b {
			t.Fatalf("client %v: link %d from one port, %d from another", src, a, b)
		}
		seen[linkOf(src, 40000)] = true
	}
	if len(seen) != 16 {
		t.Errorf("200 clients took %d of 16 links", len(seen))
	}
	wide := mp
	wide.NBits = 3
	if err := oftable.CheckActions([]ofp.Action{wide}); err == nil {
		t.Error("16 links into 3 bits accepted")
	}
}
