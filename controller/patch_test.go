package controller

import (
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// patchConfig is testConfig with what makes a health change reach beyond
// its pool: a SWITCH NAT pool and a CONTROLLER pool sharing member
// addresses, a DSR pool, a second (admin down) pool on v1, and a draining
// member.
func patchConfig() *sdnlb.Config {
	return testConfig(func(c *sdnlb.Config) {
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
func describe(s *snapshot) string {
	var lines []string
	for _, p := range s.pools {
		vip := "-"
		if p.vip != nil {
			vip = p.vip.id
			if p.vip.pool != nil {
				vip += "→" + p.vip.pool.id
			}
		}
		var rot []string
		for _, m := range p.rotation {
			rot = append(rot, m.id)
		}
		lines = append(lines, fmt.Sprintf("pool %s vip %s rotation %v", p.id, vip, rot))
		for _, m := range p.members {
			if p.byNum[m.num] != m || s.member(m.num) != m {
				lines = append(lines, fmt.Sprintf("member %s: not found by its number", m.id))
			}
			lines = append(lines, fmt.Sprintf("member %s %s since %s zone %t", m.id, m.status, m.since.Format(time.RFC3339), m.memberZone))
		}
	}
	for _, v := range s.vipByID {
		pool := "-"
		if v.pool != nil {
			pool = v.pool.id
			if s.pools[pool] != v.pool {
				pool += " (stale)"
			}
		}
		if s.vips[v.key] != v || s.vipByNum[v.num] != v {
			pool += " (not indexed)"
		}
		lines = append(lines, fmt.Sprintf("vip %s pool %s", v.id, pool))
	}
	for k, o := range s.replyPunts {
		lines = append(lines, fmt.Sprintf("punt %v:%d/%d %+v", k.ip, k.port, k.proto, o))
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
	b := newSnapshotBuilder(time.Now)
	last, _ := b.build(cfg)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for step := range 200 {
		before := describe(last)
		var changes []healthChange
		for range 1 + rng.IntN(3) {
			m := cfg.Members[rng.IntN(len(cfg.Members))]
			at = at.Add(time.Second)
			m.Health = sdnlb.MemberHealth{Status: statuses[rng.IntN(len(statuses))], Since: at}
			changes = append(changes, healthChange{memberID: m.ID, status: m.Health.Status, since: at})
		}
		patched := b.patch(changes)
		if got := describe(last); got != before {
			t.Fatalf("step %d: the patch changed the snapshot it came from:\n%s\nwas\n%s", step, got, before)
		}
		built, _ := newSnapshotBuilder(time.Now).build(cfg)
		if got, want := describe(patched), describe(built); got != want {
			t.Fatalf("step %d: %v patched to\n%s\nwant, as built:\n%s", step, changes, got, want)
		}
		for _, groups := range []bool{false, true} {
			full, _ := reconcile(last, patched, switchFeatures{groups: groups}, L2Learn)
			if got, want := flowLines(t, reconcilePatch(last, patched, groups)), flowLines(t, full); !slices.Equal(got, want) {
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
			if _, ok := healthChanges(tt.burst); ok != tt.ok {
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
					d.packetIn(uint32(last), arpFrame(t, 2, memberMAC(int(last)), vipMAC, m.Address, "10.0.0.100", vipMAC))
				}
			}
			statuses := []sdnlb.MemberStatus{sdnlb.MemberUp, sdnlb.MemberDown, sdnlb.MemberNoMonitor}
			rng := rand.New(rand.NewPCG(3, 4))
			for step := range 100 {
				var changes []healthChange
				for range 1 + rng.IntN(2) {
					m := cfg.Members[rng.IntN(len(cfg.Members))]
					m.Health = sdnlb.MemberHealth{Status: statuses[rng.IntN(len(statuses))], Since: full.now}
					changes = append(changes, healthChange{memberID: m.ID, status: m.Health.Status, since: full.now})
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
func (d *decision) patch(changes []healthChange) []string {
	d.tb.Helper()
	d.snap = d.builder.patch(changes)
	d.dp.configure(d.now, d.snap, d.out)
	return d.sent(nil)
}
