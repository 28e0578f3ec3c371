package dataplane

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
)

// patchConfig is testnet.Config with what makes a health change reach beyond
// its pool: a SWITCH NAT pool and a CONTROLLER pool sharing member
// addresses, a DSR pool, a second (admin down) pool on v1, and a draining
// member.
func patchConfig() *sdnlb.Config {
	return testnet.Config(func(c *sdnlb.Config) {
		c.VIPs = append(c.VIPs,
			&sdnlb.VIP{ID: "v2", Address: "10.0.0.101", Protocol: sdnlb.ProtocolTCP, Port: 81, PoolID: "p2",
				AdminStateUp: true, MAC: "02:00:00:00:02:00"},
			&sdnlb.VIP{ID: "v3", Address: "10.0.0.102", Protocol: sdnlb.ProtocolTCP, Port: 82, PoolID: "p3",
				AdminStateUp: true, MAC: "02:00:00:00:03:00"})
		c.Pools = append(c.Pools,
			&sdnlb.Pool{ID: "p2", VIPID: "v2", LBMethod: sdnlb.WeightedRoundRobin, Protocol: sdnlb.ProtocolTCP,
				Dispatch: sdnlb.DispatchSwitch, Forwarding: sdnlb.ForwardingNAT, AdminStateUp: true},
			&sdnlb.Pool{ID: "p3", VIPID: "v3", LBMethod: sdnlb.RoundRobin, Protocol: sdnlb.ProtocolTCP,
				Dispatch: sdnlb.DispatchSwitch, Forwarding: sdnlb.ForwardingDSR, AdminStateUp: true},
			&sdnlb.Pool{ID: "p4", VIPID: "v1", LBMethod: sdnlb.RoundRobin, Protocol: sdnlb.ProtocolTCP})
		for i := 1; i <= 3; i++ {
			c.Members = append(c.Members,
				&sdnlb.Member{ID: fmt.Sprintf("s%d", i), PoolID: "p2", Address: fmt.Sprintf("10.0.0.%d", i), Port: 8080,
					Weight: i, AdminStateUp: true},
				&sdnlb.Member{ID: fmt.Sprintf("d%d", i), PoolID: "p3", Address: fmt.Sprintf("10.0.0.%d", 10+i),
					Weight: 1, AdminStateUp: true},
				&sdnlb.Member{ID: fmt.Sprintf("x%d", i), PoolID: "p4", Address: fmt.Sprintf("10.0.0.%d", 20+i), Port: 8080,
					Weight: 1, AdminStateUp: true})
		}
		c.Members[1].Weight = 0 // m2 drains
	})
}

// describe renders what a snapshot decides with: pools, their members'
// state, rotations and VIP links, and the reply punts.
func describe(s *model.Snapshot) string {
	var lines []string
	for _, p := range s.Pools {
		vip := "-"
		if p.VIP != nil {
			vip = p.VIP.ID
			if p.VIP.Pool != nil {
				vip += "→" + p.VIP.Pool.ID
			}
		}
		var rot []string
		for _, m := range p.Rotation {
			rot = append(rot, m.ID)
		}
		lines = append(lines, fmt.Sprintf("pool %s vip %s rotation %v", p.ID, vip, rot))
		for _, m := range p.Members {
			if p.ByNum[m.Num] != m || s.Member(m.Num) != m {
				lines = append(lines, fmt.Sprintf("member %s: not found by its number", m.ID))
			}
			lines = append(lines, fmt.Sprintf("member %s %s since %s zone %t", m.ID, m.Status, m.Since.Format(time.RFC3339), m.MemberZone))
		}
	}
	for _, v := range s.VIPByID {
		pool := "-"
		if v.Pool != nil {
			pool = v.Pool.ID
			if s.Pools[pool] != v.Pool {
				pool += " (stale)"
			}
		}
		if s.VIPs[v.Key] != v || s.VIPByNum[v.Num] != v {
			pool += " (not indexed)"
		}
		lines = append(lines, fmt.Sprintf("vip %s pool %s", v.ID, pool))
	}
	for k, o := range s.ReplyPunts {
		lines = append(lines, fmt.Sprintf("punt %v:%d/%d %+v", k.IP, k.Port, k.Proto, o))
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestSnapshotBuilder_Patch checks health patches against full builds: a
// patch must decide as a build of the changed configuration does, leave
// the snapshot it came from as it was, and reconcile to the same flows.
func TestSnapshotBuilder_Patch(t *testing.T) {
	statuses := []sdnlb.MemberStatus{sdnlb.MemberUp, sdnlb.MemberDown, sdnlb.MemberNoMonitor}
	rng := rand.New(rand.NewPCG(1, 2))
	cfg := patchConfig()
	b := model.NewBuilder(time.Now)
	last, _ := b.Build(cfg)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 200 {
		before := describe(last)
		var changes []model.HealthChange
		for range 1 + rng.IntN(3) {
			m := cfg.Members[rng.IntN(len(cfg.Members))]
			at = at.Add(time.Second)
			m.Health = sdnlb.MemberHealth{Status: statuses[rng.IntN(len(statuses))], Since: at}
			changes = append(changes, model.HealthChange{MemberID: m.ID, Status: m.Health.Status, Since: at})
		}
		patched := b.Patch(changes)
		if got := describe(last); got != before {
			t.Fatalf("step %d: the patch changed the snapshot it came from:\n%s\nwas\n%s", step, got, before)
		}
		built, _ := model.NewBuilder(time.Now).Build(cfg)
		if got, want := describe(patched), describe(built); got != want {
			t.Fatalf("step %d: %v patched to\n%s\nwant, as built:\n%s", step, changes, got, want)
		}
		for _, groups := range []bool{false, true} {
			full, _ := reconcile(last, patched, model.SwitchFeatures{Groups: groups}, model.L2Learn)
			if got, want := testnet.FlowLines(t, reconcilePatch(last, patched, groups)), testnet.FlowLines(t, full); !slices.Equal(got, want) {
				t.Fatalf("step %d (groups %t): %v reconciled to\n%s\nwant\n%s", step, groups, changes,
					strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		last = patched
	}
}

func TestHealthChanges(t *testing.T) {
	health := sdnlb.Event{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: "m1", Status: sdnlb.MemberDown}
	tests := []struct {
		name  string
		burst []sdnlb.Event
		ok    bool
	}{
		{"Health", []sdnlb.Event{health, health}, true},
		{"Empty", nil, false}, // a retry after a failed reload
		{"WithoutStatus", []sdnlb.Event{{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: "m1"}}, false},
		{"WithAnUpdate", []sdnlb.Event{health, {Kind: sdnlb.KindMember, Op: sdnlb.OpUpdate, ID: "m1"}}, false},
		{"Resync", []sdnlb.Event{{Op: sdnlb.OpResync}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := model.HealthChanges(tt.burst); ok != tt.ok {
				t.Errorf("patchable = %t, want %t", ok, tt.ok)
			}
		})
	}
}

// TestDataplane_HealthPatchSendsWhatAReloadSends runs two switches through
// the same random health changes, one reloading the whole configuration,
// one patched: each change must send both the same messages.
func TestDataplane_HealthPatchSendsWhatAReloadSends(t *testing.T) {
	for _, groups := range []bool{false, true} {
		t.Run(fmt.Sprintf("Groups=%t", groups), func(t *testing.T) {
			newD := newDecision
			if groups {
				newD = newSwitchDecision
			}
			cfg := patchConfig()
			full, patched := newD(t, cfg), newD(t, cfg)
			for _, d := range []*decision{full, patched} {
				for i, m := range cfg.Members {
					if i > 0 && cfg.Members[i-1].Address == m.Address {
						continue
					}
					last := net.ParseIP(m.Address).To4()[3]
					d.packetIn(uint32(last), testnet.ARPFrame(t, 2, testnet.MemberMAC(int(last)), testnet.VIPMAC, m.Address, "10.0.0.100", testnet.VIPMAC))
				}
			}
			statuses := []sdnlb.MemberStatus{sdnlb.MemberUp, sdnlb.MemberDown, sdnlb.MemberNoMonitor}
			rng := rand.New(rand.NewPCG(3, 4))
			for step := range 100 {
				var changes []model.HealthChange
				for range 1 + rng.IntN(2) {
					m := cfg.Members[rng.IntN(len(cfg.Members))]
					m.Health = sdnlb.MemberHealth{Status: statuses[rng.IntN(len(statuses))], Since: full.now}
					changes = append(changes, model.HealthChange{MemberID: m.ID, Status: m.Health.Status, Since: full.now})
				}
				want := full.configure(cfg)
				got := patched.patch(changes)
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("step %d: %v sent\n%s\nwant, as a reload sends:\n%s", step, changes,
						strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
		})
	}
}

// patch applies health changes to the configuration the switch has and
// returns what the switch is sent for them.
func (d *decision) patch(changes []model.HealthChange) []string {
	d.tb.Helper()
	d.snap = d.builder.Patch(changes)
	d.dp.Configure(d.now, d.snap, d.out)
	return d.sent(nil)
}
