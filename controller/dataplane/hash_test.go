package dataplane

import (
	"fmt"
	"math"
	"net/netip"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// hashConfig is a CONSISTENT_HASH pool by key of n members (weights
// 1..n when weighted) of family fam, dispatched by dispatch.
func hashConfig(fam family, dispatch sdnlb.Dispatch, key sdnlb.HashKey, n int, weighted bool) *sdnlb.Config {
	return switchConfig(sdnlb.ForwardingNAT, func(c *sdnlb.Config) {
		c.Pools[0].LBMethod, c.Pools[0].HashKey, c.Pools[0].Dispatch = sdnlb.ConsistentHash, key, dispatch
		c.VIPs[0].Address = fam.vip
		c.Members = nil
		for i := 1; i <= n; i++ {
			w := 1
			if weighted {
				w = i
			}
			c.Members = append(c.Members, &sdnlb.Member{ID: fmt.Sprintf("m%d", i), PoolID: "p1", Address: fam.member(i),
				Port: 8080, Weight: w, AdminStateUp: true})
		}
	})
}

// hashClient is the address of the test's client i.
func hashClient(fam family, i int) string {
	if fam == ipv4 {
		return fmt.Sprintf("10.2.%d.%d", i/200, 1+i%200)
	}
	return fmt.Sprintf("2001:db8:9::%x", i+1)
}

// memberOf is the member (its address) a new connection from client i's
// sport reaches: through the switch's own dispatch, or through the
// controller's, whose flows then carry the client's next segment.
func (d *decision) memberOf(fam family, i int, sport uint16) string {
	d.tb.Helper()
	seg := testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: hashClient(fam, i), Dst: fam.vip,
		Sport: sport, Dport: 80, SYN: true}
	syn := testnet.TCPFrame(d.tb, seg)
	r := d.process(testnet.ClientOF, syn)
	if len(r.Ports) == 1 && r.Ports[0] == ofp.PortController {
		d.packetIn(testnet.ClientOF, syn)
		seg.SYN, seg.ACK = false, true
		r = d.process(testnet.ClientOF, testnet.TCPFrame(d.tb, seg))
	}
	if len(r.Outputs) != 1 {
		d.tb.Fatalf("client %s's SYN left by %v, want one way", hashClient(fam, i), r.Ports)
	}
	if out := r.Outputs[0].Packet; fam == ipv6 {
		return netip.AddrFrom16(out.IPv6Dst).String()
	}
	return netip.AddrFrom4(r.Outputs[0].Packet.IPv4Dst).String()
}

// CONSISTENT_HASH is one function in both dispatches: the member the
// controller picks for a connection is the member of the slot the
// switch's multipath gives it, for either key and family. By CLIENT a
// client keeps its member whatever its port; by CONNECTION its
// connections spread.
func TestDispatch_ConsistentHashSameInBothDispatches(t *testing.T) {
	const members = 10
	for _, key := range sdnlb.HashKeys {
		for _, fam := range []family{ipv4, ipv6} {
			t.Run(string(key)+"/"+fam.vip, func(t *testing.T) {
				sw := newSwitchDecision(t, hashConfig(fam, sdnlb.DispatchSwitch, key, members, true))
				ctl := newSwitchDecision(t, hashConfig(fam, sdnlb.DispatchController, key, members, true))
				sw.learnMembers(fam, members)
				ctl.learnMembers(fam, members)
				for i := range 20 {
					reached := map[string]bool{}
					for sport := uint16(40000); sport < 40012; sport++ {
						m := sw.memberOf(fam, i, sport)
						if c := ctl.memberOf(fam, i, sport); c != m {
							t.Fatalf("client %s port %d: member %s under SWITCH, %s under CONTROLLER", hashClient(fam, i), sport, m, c)
						}
						reached[m] = true
					}
					switch {
					case key == sdnlb.HashKeyClient && len(reached) != 1:
						t.Errorf("client %s's 12 connections reached members %v, want one", hashClient(fam, i), reached)
					case key == sdnlb.HashKeyConnection && len(reached) < 3:
						t.Errorf("client %s's 12 connections reached members %v, want them spread", hashClient(fam, i), reached)
					}
				}
			})
		}
	}
}

// slotMembers is bucketMembers for the test's one VIP dispatched by
// slots: the port of the member each TableSlots row sends to.
func (d *decision) slotMembers() []int {
	d.tb.Helper()
	members := make([]int, model.GroupSlots)
	for _, sv := range d.dp.dispatcher.tracked {
		for slot := range members {
			p := oftable.Packet{EthType: ofp.EthTypeIPv4, IPProto: ofp.IPProtoTCP}
			p.Regs[2], p.Regs[3] = sv.group, uint32(slot) // the group's and slot's registers
			f, ok := d.sw.LookupIn(model.TableSlots, p)
			if !ok {
				d.tb.Fatalf("slot %d has no row", slot)
			}
			ip, _, _ := model.BucketTargetOf(model.Applied(f.Instructions))
			if h, known := d.dp.Learner.Host(ip); known {
				members[slot] = int(h.Port)
			}
		}
	}
	return members
}

// A switch's slots give each member its weight's share within one slot
// (1/64 is promised), and when one of ten members leaves, its clients
// move and few others: a thousand clients by CLIENT, the fraction that
// moves reported.
func TestDispatch_ConsistentHashSlots(t *testing.T) {
	const members, clients = 10, 1000
	d := newSwitchDecision(t, hashConfig(ipv4, sdnlb.DispatchSwitch, sdnlb.HashKeyClient, members, true))
	d.learnMembers(ipv4, members)
	slots := d.slotMembers()
	total := members * (members + 1) / 2
	for m := 1; m <= members; m++ {
		got, want := shares(slots, m)[0], float64(model.GroupSlots*m)/float64(total)
		if math.Abs(float64(got)-want) >= 1 {
			t.Errorf("member %d of weight %d/%d owns %d slots, want %.2f within one", m, m, total, got, want)
		}
	}

	before := make([]string, clients)
	for i := range before {
		before[i] = d.memberOf(ipv4, i, 40000)
	}
	d.patch([]model.HealthChange{{MemberID: "m4", Status: sdnlb.MemberDown, Since: d.now}})
	moved, own := 0, 0
	for i := range before {
		if before[i] == ipv4.member(4) {
			own++
		}
		if after := d.memberOf(ipv4, i, 41000); after != before[i] {
			moved++
			if after == ipv4.member(4) {
				t.Fatalf("client %d still reaches the member that left", i)
			}
		}
	}
	t.Logf("%d clients over %d members of weights 1-10: member 4 left, %d clients (%.1f %%) moved, %d of them its own",
		clients, members, moved, 100*float64(moved)/clients, own)
	if moved > own+clients/20 {
		t.Errorf("%d clients moved, member 4 had %d", moved, own)
	}
}

// A client known by a /64 keeps its member under the controller, across
// the addresses of its /64.
func TestDispatch_ConsistentHashClientPrefix(t *testing.T) {
	cfg := hashConfig(ipv6, sdnlb.DispatchController, sdnlb.HashKeyClient, 10, false)
	cfg.Pools[0].ClientIPv6Prefix = 64
	d := newSwitchDecision(t, cfg)
	d.learnMembers(ipv6, 10)
	pool := d.snap.Pools["p1"]
	first := ""
	for i := range 20 {
		client := netip.MustParseAddr(hashClient(ipv6, i*997))
		if pool.Client(client) != pool.Client(netip.MustParseAddr(hashClient(ipv6, 0))) {
			t.Fatal("the test's clients are not in one /64")
		}
		m := d.memberOf(ipv6, i*997, 40000)
		if first != "" && m != first {
			t.Fatalf("client %s reached member %s, another of its /64 member %s", client, m, first)
		}
		first = m
	}
}
