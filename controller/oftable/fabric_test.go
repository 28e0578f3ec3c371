package oftable_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// Two switches, 1 and 2, linked by their ports 5; the client is on
// switch 1, the member on switch 2.
func twoSwitches(tb testing.TB) *oftable.Fabric {
	tb.Helper()
	var f oftable.Fabric
	toMember := oxms(ofp.MatchEthDst(memberMAC))
	toClient := oxms(ofp.MatchEthDst(clientMAC))
	mustApply(tb, f.Switch(1), add(1, 10, toMember, out(5)), add(1, 10, toClient, out(clientPort)), add(1, 0, nil, toController))
	mustApply(tb, f.Switch(2), add(2, 10, toMember, out(memberPort)), add(2, 10, toClient, out(5)), add(2, 0, nil, toController))
	f.Link(oftable.Port{DPID: 1, Port: 5}, oftable.Port{DPID: 2, Port: 5})
	return &f
}

func TestFabric_Send(t *testing.T) {
	p := tcpPacket(0, clientMAC, memberMAC, client, 40000, member, 80)
	reply := tcpPacket(0, memberMAC, clientMAC, member, 80, client, 40000)
	tests := []struct {
		name      string
		at        oftable.Port
		p         oftable.Packet
		wantExits []oftable.Port
		wantHops  []uint64
		wantIn    []uint32 // in_port at each hop
	}{
		{"AcrossTheLink", oftable.Port{DPID: 1, Port: clientPort}, p, []oftable.Port{{DPID: 2, Port: memberPort}}, []uint64{1, 2}, []uint32{clientPort, 5}},
		{"Back", oftable.Port{DPID: 2, Port: memberPort}, reply, []oftable.Port{{DPID: 1, Port: clientPort}}, []uint64{2, 1}, []uint32{memberPort, 5}},
		{"Local", oftable.Port{DPID: 2, Port: 7}, p, []oftable.Port{{DPID: 2, Port: memberPort}}, []uint64{2}, []uint32{7}},
		{"ToTheController", oftable.Port{DPID: 1, Port: clientPort}, func() oftable.Packet { q := p; q.EthDst = vipMAC; return q }(),
			[]oftable.Port{{DPID: 1, Port: ofp.PortController}}, []uint64{1}, []uint32{clientPort}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trip := twoSwitches(t).Send(tt.at, tt.p)
			if trip.Err != nil {
				t.Fatal(trip.Err)
			}
			var hops []uint64
			var ins []uint32
			for _, h := range trip.Hops {
				hops, ins = append(hops, h.DPID), append(ins, h.In.InPort)
			}
			if !slices.Equal(trip.ExitPorts(), tt.wantExits) || !slices.Equal(hops, tt.wantHops) || !slices.Equal(ins, tt.wantIn) {
				t.Errorf("exits %v hops %v in_ports %v, want %v %v %v", trip.ExitPorts(), hops, ins, tt.wantExits, tt.wantHops, tt.wantIn)
			}
			for _, e := range trip.Exits {
				want := tt.p
				want.InPort = trip.Hops[len(trip.Hops)-1].In.InPort
				if e.Packet != want {
					t.Errorf("left as %s, want %s", full(e.Packet), full(want))
				}
			}
		})
	}
}

// What a switch keeps to itself (metadata, registers, the tracker's
// fields and connections) does not cross a link.
func TestFabric_Send_SwitchState(t *testing.T) {
	var f oftable.Fabric
	ip := oxms(ofp.MatchEthType(0x0800))
	mustApply(t, f.Switch(1),
		add(1, 10, ip, set(ofp.MatchReg(0, 1, 0xffffffff)), ct(ofp.CTCommit, 1, 1)),
		inTable(add(1, 10, nil, out(5)), 1))
	mustApply(t, f.Switch(2),
		add(2, 20, oxms(ofp.MatchReg(0, 1, 0xffffffff))),
		add(2, 20, oxms(state(ofp.CTStateTrk, 0))),
		add(2, 10, ip, out(3)))
	f.Link(oftable.Port{DPID: 1, Port: 5}, oftable.Port{DPID: 2, Port: 1})
	trip := f.Send(oftable.Port{DPID: 1, Port: clientPort}, tcpPacket(0, clientMAC, memberMAC, client, 1, member, 2))
	if want := []oftable.Port{{DPID: 2, Port: 3}}; !slices.Equal(trip.ExitPorts(), want) || trip.Err != nil {
		t.Errorf("exits %v (%v), want %v", trip.ExitPorts(), trip.Err, want)
	}
	if n1, n2 := len(f.Switch(1).Tracker().Conns()), len(f.Switch(2).Tracker().Conns()); n1 != 1 || n2 != 0 {
		t.Errorf("connections: %d on switch 1, %d on switch 2; want 1, 0", n1, n2)
	}
}

func TestFabric_Send_Errors(t *testing.T) {
	p := tcpPacket(0, clientMAC, memberMAC, client, 1, member, 2)
	t.Run("ErrLoop", func(t *testing.T) {
		f := twoSwitches(t)
		mustApply(t, f.Switch(2), add(2, 10, oxms(ofp.MatchEthDst(memberMAC)), out(ofp.PortInPort)))
		trip := f.Send(oftable.Port{DPID: 1, Port: clientPort}, p)
		if !errors.Is(trip.Err, oftable.ErrLoop) || len(trip.Hops) != 64 || len(trip.Exits) != 0 {
			t.Errorf("err %v after %d hops, exits %v; want ErrLoop after 64", trip.Err, len(trip.Hops), trip.Exits)
		}
	})
	t.Run("ErrNoSwitch", func(t *testing.T) {
		f := twoSwitches(t)
		f.Link(oftable.Port{DPID: 2, Port: memberPort}, oftable.Port{DPID: 3, Port: 1})
		trip := f.Send(oftable.Port{DPID: 1, Port: clientPort}, p)
		if trip.Err == nil || !strings.Contains(trip.Err.Error(), "no switch 0x3") || len(trip.Exits) != 0 {
			t.Errorf("err %v, exits %v; want no switch 0x3", trip.Err, trip.Exits)
		}
	})
	t.Run("ErrLoopInASwitch", func(t *testing.T) {
		var f oftable.Fabric
		mustApply(t, f.Switch(1), add(1, 1, oxms(ofp.MatchEthType(0x0800)), ct(0, 1, 0)))
		if trip := f.Send(oftable.Port{DPID: 1, Port: 1}, p); !errors.Is(trip.Err, oftable.ErrLoop) {
			t.Errorf("err %v, want ErrLoop", trip.Err)
		}
	})
}

func TestFabric_Links(t *testing.T) {
	f := twoSwitches(t)
	p := tcpPacket(0, clientMAC, memberMAC, client, 1, member, 2)
	from := oftable.Port{DPID: 1, Port: clientPort}
	f.Unlink(oftable.Port{DPID: 2, Port: 5})
	if got, want := f.Send(from, p).ExitPorts(), []oftable.Port{{DPID: 1, Port: 5}}; !slices.Equal(got, want) {
		t.Errorf("unlinked: exits %v, want %v", got, want)
	}
	f.Link(oftable.Port{DPID: 1, Port: 5}, oftable.Port{DPID: 2, Port: 5})
	f.Link(oftable.Port{DPID: 1, Port: 5}, oftable.Port{DPID: 3, Port: 1}) // replaces the link to switch 2
	mustApply(t, f.Switch(3), add(3, 1, nil, out(2)))
	if got, want := f.Send(from, p).ExitPorts(), []oftable.Port{{DPID: 3, Port: 2}}; !slices.Equal(got, want) {
		t.Errorf("relinked: exits %v, want %v", got, want)
	}
	back := f.Send(oftable.Port{DPID: 2, Port: memberPort}, tcpPacket(0, memberMAC, clientMAC, member, 2, client, 1))
	if got, want := back.ExitPorts(), []oftable.Port{{DPID: 2, Port: 5}}; !slices.Equal(got, want) {
		t.Errorf("from switch 2, whose link went: exits %v, want %v", got, want)
	}
	if got := f.DPIDs(); !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Errorf("DPIDs %v", got)
	}
}
