package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/sched"
)

func TestSnapshotBuilder_Build(t *testing.T) {
	t.Run("NumbersStableAcrossSnapshots", func(t *testing.T) {
		r := model.NewBuilder(time.Now)
		s1, _ := r.Build(testnet.Config(nil))
		s2, _ := r.Build(testnet.Config(func(c *sdnlb.Config) {
			c.Members = append([]*sdnlb.Member{{ID: "m0", PoolID: "p1", Address: "10.0.0.9", Weight: 1, AdminStateUp: true}}, c.Members...)
		}))
		for _, id := range []string{"m1", "m2", "m3"} {
			if testnet.MemberByID(s1, id).Num != testnet.MemberByID(s2, id).Num || testnet.MemberByID(s1, id).Cnt != testnet.MemberByID(s2, id).Cnt {
				t.Errorf("member %s changed number or counters between snapshots", id)
			}
		}
		if n := testnet.MemberByID(s2, "m0").Num; n != 4 {
			t.Errorf("new member got number %d, want 4 (numbers are never reused)", n)
		}
		if s2.Gen <= s1.Gen {
			t.Errorf("generation did not grow: %d then %d", s1.Gen, s2.Gen)
		}
	})
	t.Run("DeletedIDGetsFreshNumber", func(t *testing.T) {
		r := model.NewBuilder(time.Now)
		s1, _ := r.Build(testnet.Config(nil))
		r.Build(testnet.Config(func(c *sdnlb.Config) { c.Members = c.Members[1:] }))
		s3, _ := r.Build(testnet.Config(nil))
		if testnet.MemberByID(s1, "m1").Num == testnet.MemberByID(s3, "m1").Num {
			t.Errorf("a re-created member reused number %d: late flow-removed would count against it", testnet.MemberByID(s1, "m1").Num)
		}
	})
	t.Run("ConfigurationNumbers", func(t *testing.T) {
		numbered := func(c *sdnlb.Config) {
			c.VIPs[0].Num = 7
			for i, m := range c.Members {
				m.Num = uint32(12 - i)
			}
		}
		// Any process, whatever it numbered before, uses the
		// configuration's numbers.
		fresh, old := model.NewBuilder(time.Now), model.NewBuilder(time.Now)
		old.VIPs.Of("gone", 0)
		old.Members.Of("gone", 0)
		for _, r := range []*model.Builder{fresh, old} {
			s, skipped := r.Build(testnet.Config(numbered))
			if len(skipped) > 0 {
				t.Fatalf("skipped %v", skipped)
			}
			if n := s.VIPByID["v1"].Num; n != 7 {
				t.Errorf("vip v1: number %d, want 7", n)
			}
			for id, want := range map[string]uint32{"m1": 12, "m2": 11, "m3": 10} {
				if n := testnet.MemberByID(s, id).Num; n != want {
					t.Errorf("member %s: number %d, want %d", id, n, want)
				}
			}
		}
		// An object without one is numbered above every number seen, the
		// later members' in id order included.
		s, _ := fresh.Build(testnet.Config(func(c *sdnlb.Config) {
			numbered(c)
			c.Members = append([]*sdnlb.Member{{ID: "m0", PoolID: "p1", Address: "10.0.0.9", Weight: 1, AdminStateUp: true}}, c.Members...)
		}))
		if n := testnet.MemberByID(s, "m0").Num; n != 13 {
			t.Errorf("member without a number: number %d, want 13", n)
		}
	})
	t.Run("ConfigurationNumberChanged", func(t *testing.T) {
		// The id of a deleted member, created again: the store gave it
		// another number, and it counts from nothing.
		r := model.NewBuilder(time.Now)
		number := func(n uint32) func(*sdnlb.Config) { return func(c *sdnlb.Config) { c.Members[0].Num = n } }
		s1, _ := r.Build(testnet.Config(number(4)))
		testnet.MemberByID(s1, "m1").Cnt.Active.Add(1)
		s2, _ := r.Build(testnet.Config(number(9)))
		if m := testnet.MemberByID(s2, "m1"); m.Num != 9 || m.Cnt.Active.Load() != 0 || s2.Member(4) != nil {
			t.Errorf("member renumbered 4 → 9: number %d, %d active, number 4 finds %v", m.Num, m.Cnt.Active.Load(), s2.Member(4))
		}
	})
	t.Run("ConfigurationNumbersRefused", func(t *testing.T) {
		r := model.NewBuilder(time.Now)
		s, skipped := r.Build(testnet.Config(func(c *sdnlb.Config) {
			c.Members[0].Num, c.Members[1].Num, c.Members[2].Num = 5, 5, model.CookieNumberLimit
		}))
		if got := fmt.Sprint(skipped); !strings.Contains(got, "member m2: number 5 is member m1's") ||
			!strings.Contains(got, "member m3: number 16777216 does not fit a cookie") {
			t.Errorf("skipped %s, want m2's taken number and m3's too large one", got)
		}
		if testnet.MemberByID(s, "m1").Num != 5 {
			t.Errorf("m1 lost its number to a member listed after it")
		}
	})
	t.Run("SchedulerTurnSurvivesRebuilds", func(t *testing.T) {
		// A configuration change elsewhere, or the same pool rebuilt with
		// a member more, must not send the round robin back to m1.
		r := model.NewBuilder(time.Now)
		var got []string
		pick := func(s *model.Snapshot) {
			p := s.Pools["p1"]
			i, _ := p.Sched.Pick(sched.Key{})
			got = append(got, p.Rotation[i].ID)
		}
		s, _ := r.Build(testnet.Config(nil))
		pick(s)
		s, _ = r.Build(testnet.Config(func(c *sdnlb.Config) { c.VIPs[0].Name = "renamed" }))
		pick(s)
		s, _ = r.Build(testnet.Config(func(c *sdnlb.Config) {
			c.Members = append(c.Members, &sdnlb.Member{ID: "m4", PoolID: "p1", Address: "10.0.0.4", Weight: 1, AdminStateUp: true})
		}))
		pick(s)
		pick(s)
		if want := "m1 m2 m3 m4"; strings.Join(got, " ") != want {
			t.Errorf("picks across rebuilds: %v, want %s", got, want)
		}
	})
	tests := []struct {
		name     string
		edit     func(*sdnlb.Config)
		rotation string
		skipped  string
	}{
		{"AllInRotation", nil, "m1 m2 m3", ""},
		{"DownAndDrainingOut", func(c *sdnlb.Config) {
			c.Members[0].Health.Status = sdnlb.MemberDown
			c.Members[1].Weight = 0
			c.Members[2].Health.Status = sdnlb.MemberUp
		}, "m3", ""},
		{"BadMemberAddressSkipped", func(c *sdnlb.Config) { c.Members[1].Address = "nope" }, "m1 m3", "member m2"},
		{"DuplicateVIPSkipped", func(c *sdnlb.Config) {
			dup := *c.VIPs[0]
			dup.ID = "v0"
			c.VIPs = append(c.VIPs, &dup)
		}, "", "vip v1: another VIP"},
		{"UnknownMethodFallsBack", func(c *sdnlb.Config) { c.Pools[0].LBMethod = "FASTEST" }, "m1 m2 m3", "pool p1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, skipped := model.NewBuilder(time.Now).Build(testnet.Config(tt.edit))
			var ids []string
			for _, m := range snap.Pools["p1"].Rotation {
				ids = append(ids, m.ID)
			}
			if v := snap.VIPByID["v1"]; v != nil && v.Pool != nil && strings.Join(ids, " ") != tt.rotation {
				t.Errorf("rotation %v, want %s", ids, tt.rotation)
			}
			var msgs []string
			for _, err := range skipped {
				msgs = append(msgs, err.Error())
			}
			if got := strings.Join(msgs, "; "); (tt.skipped == "") != (got == "") || !strings.Contains(got, tt.skipped) {
				t.Errorf("skipped %q, want %q", got, tt.skipped)
			}
		})
	}
}

func TestAffinityTable(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		name   string
		ops    func(p *AffinityTable)
		at     time.Time
		member uint32
		ok     bool
	}{
		{"Empty", func(p *AffinityTable) {}, now, 0, false},
		{"Fresh", func(p *AffinityTable) { p.put(1, testnet.Addr4(7), 3, now.Add(time.Minute)) }, now, 3, true},
		{"Expired", func(p *AffinityTable) { p.put(1, testnet.Addr4(7), 3, now.Add(time.Minute)) }, now.Add(2 * time.Minute), 0, false},
		{"OtherVIP", func(p *AffinityTable) { p.put(2, testnet.Addr4(7), 3, now.Add(time.Minute)) }, now, 0, false},
		{"TouchExtends", func(p *AffinityTable) {
			p.put(1, testnet.Addr4(7), 3, now.Add(time.Minute))
			p.touch(1, testnet.Addr4(7), 3, now.Add(5*time.Minute))
		}, now.Add(3 * time.Minute), 3, true},
		{"TouchOfOtherMemberIgnored", func(p *AffinityTable) {
			p.put(1, testnet.Addr4(7), 3, now.Add(time.Minute))
			p.touch(1, testnet.Addr4(7), 4, now.Add(5*time.Minute))
		}, now.Add(3 * time.Minute), 0, false},
		{"ExpireDrops", func(p *AffinityTable) {
			p.put(1, testnet.Addr4(7), 3, now.Add(time.Minute))
			p.Expire(now.Add(2 * time.Minute))
			p.touch(1, testnet.Addr4(7), 3, now.Add(5*time.Minute)) // nothing left to extend
		}, now.Add(3 * time.Minute), 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewAffinityTable()
			tt.ops(p)
			m, ok := p.get(1, testnet.Addr4(7), tt.at)
			if m != tt.member || ok != tt.ok {
				t.Errorf("get = %d %v, want %d %v", m, ok, tt.member, tt.ok)
			}
		})
	}
}

func TestPurgeFor(t *testing.T) {
	// Fresh registries number the same configuration the same way.
	first, _ := model.NewBuilder(time.Now).Build(testnet.Config(nil))
	v, m := first.VIPByID["v1"], testnet.MemberByID(first, "m2")
	c := model.Connection{Proto: ofp.IPProtoTCP, VIPIP: v.IP, VIPPort: v.Port, VIPMAC: v.MAC, VIPNum: v.Num, MemberIP: m.IP, MemberNum: m.Num}
	tests := []struct {
		name string
		edit func(*sdnlb.Config)
		want string
	}{
		{"Unchanged", nil, ""},
		{"OtherMemberDown", func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }, ""},
		{"Draining", func(c *sdnlb.Config) { c.Members[1].AdminStateUp = false }, ""},
		{"MemberDown", func(c *sdnlb.Config) { c.Members[1].Health.Status = sdnlb.MemberDown }, "delete cookie=0x5d80000000000002/0xff80000000ffffff"},
		{"MemberMoved", func(c *sdnlb.Config) { c.Members[1].Address = "10.0.0.22" }, "delete cookie=0x5d80000000000002/0xff80000000ffffff"},
		{"MemberDeleted", func(c *sdnlb.Config) { c.Members = c.Members[:1] }, "delete cookie=0x5d80000000000002/0xff80000000ffffff"},
		{"VIPDisabled", func(c *sdnlb.Config) { c.VIPs[0].AdminStateUp = false }, "delete cookie=0x5d80000001000000/0xff80ffffff000000"},
		{"VIPPortChanged", func(c *sdnlb.Config) { c.VIPs[0].Port = 81 }, "delete cookie=0x5d80000001000000/0xff80ffffff000000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			snap, _ := model.NewBuilder(time.Now).Build(testnet.Config(tt.edit))
			fm, stale := purgeFor(snap, &c)
			got := ""
			if stale {
				got = testnet.FlowLine(t, &fm)
			}
			if got != tt.want {
				t.Errorf("purge %q, want %q", got, tt.want)
			}
		})
	}
}

func TestReconcile_SharedVIPAddress(t *testing.T) {
	withUDP := func(c *sdnlb.Config) {
		c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.100", Protocol: sdnlb.ProtocolUDP, Port: 53,
			AdminStateUp: true, MAC: "02:00:00:00:02:00"})
	}
	r := model.NewBuilder(time.Now)
	both, _ := r.Build(testnet.Config(withUDP))
	tcpOnly, _ := r.Build(testnet.Config(nil))
	mods, announce := reconcile(both, tcpOnly, model.SwitchFeatures{}, model.L2Normal)
	// v2's delete takes the ARP and drop flows v1 shares, so v1's come back.
	testnet.AssertLines(t, testnet.FlowLines(t, mods), []string{
		"delete cookie=0x5d02000002000000/0xffffffffff000000",
		"delete cookie=0x5d07000002000000/0xffffffffff000000",
		"delete cookie=0x5d80000002000000/0xff80ffffff000000",
		"cookie=0x5d07000001000000, priority=511, arp,arp_spa=10.0.0.100,arp_tpa=10.0.0.100,arp_op=1 actions=drop",
		"cookie=0x5d07000001000000, priority=510, arp,arp_tpa=10.0.0.100,arp_op=1 actions=" + testnet.ARPAnswer("02:00:00:00:01:00", "10.0.0.100"),
		"cookie=0x5d02000001000000, priority=500, arp,arp_tpa=10.0.0.100 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=500, arp,dl_dst=02:00:00:00:01:00 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=501, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=CONTROLLER:65535",
		"cookie=0x5d02000001000000, priority=499, ip,nw_dst=10.0.0.100 actions=drop",
	})
	if len(announce) != 0 {
		t.Errorf("announced %d VIPs; v1 did not change", len(announce))
	}
	for i, fm := range mods {
		if fm.Command == ofp.FlowDelete && i >= 3 {
			t.Errorf("delete at position %d comes after an add", i)
		}
	}
	t.Run("ARPAnsweredByLowestID", func(t *testing.T) {
		if v := both.VIPByAddr[both.VIPByID["v1"].Key.IP]; v.ID != "v1" {
			t.Errorf("ARP for the shared address answered by %s", v.ID)
		}
	})
}

func TestReconcile_ReplyPunts(t *testing.T) {
	// v2 serves TCP 81 from pool p2, whose member m9 is m1's address.
	sharedBackend := func(c *sdnlb.Config) {
		c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.101", Protocol: sdnlb.ProtocolTCP, Port: 81,
			PoolID: "p2", AdminStateUp: true, MAC: "02:00:00:00:02:00"})
		c.Pools = append(c.Pools, &sdnlb.Pool{ID: "p2", VIPID: "v2", LBMethod: sdnlb.RoundRobin, Protocol: sdnlb.ProtocolTCP, AdminStateUp: true})
		c.Members = append(c.Members, &sdnlb.Member{ID: "m9", PoolID: "p2", Address: "10.0.0.1", Port: 8080, Weight: 1, AdminStateUp: true})
	}
	// v3 serves TCP 82 from pool p3, which the switch dispatches; its
	// member m10 is m1's address and port.
	// flowHeld keeps the clients of the test's CONTROLLER VIP on their
	// members (SOURCE_IP persistence): its connections have flows of their
	// own, which the tracker does not hold.
	flowHeld := func(c *sdnlb.Config) {
		c.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
	}
	switchedBackend := func(c *sdnlb.Config) {
		flowHeld(c)
		c.VIPs = append(c.VIPs, &sdnlb.VIP{ID: "v3", Address: "10.0.0.102", Protocol: sdnlb.ProtocolTCP, Port: 82,
			PoolID: "p3", AdminStateUp: true, MAC: "02:00:00:00:03:00"})
		c.Pools = append(c.Pools, &sdnlb.Pool{ID: "p3", VIPID: "v3", LBMethod: sdnlb.RoundRobin, Protocol: sdnlb.ProtocolTCP,
			Dispatch: sdnlb.DispatchSwitch, Forwarding: sdnlb.ForwardingNAT, AdminStateUp: true})
		c.Members = append(c.Members, &sdnlb.Member{ID: "m10", PoolID: "p3", Address: "10.0.0.1", Port: 8080, Weight: 1, AdminStateUp: true})
	}
	tests := []struct {
		name   string
		edits  []func(*sdnlb.Config) // configurations in turn, from the first
		groups bool                  // the switch has select groups
		want   []string              // reply punt flow-mods of the last step
	}{
		{"UDPMemberAnswersFromVIPPort", []func(*sdnlb.Config){func(c *sdnlb.Config) {
			c.VIPs[0].Protocol, c.VIPs[0].Port = sdnlb.ProtocolUDP, 53
			c.Members = c.Members[:1]
			c.Members[0].Port = 0
		}}, false, []string{
			"cookie=0x5d04000001000001, priority=900, udp,nw_src=10.0.0.1,tp_src=53 actions=CONTROLLER:65535",
		}},
		{"ICMPEchoReplies", []func(*sdnlb.Config){func(c *sdnlb.Config) {
			c.VIPs[0].Protocol, c.VIPs[0].Port = sdnlb.ProtocolICMP, 0
			c.Members = c.Members[:1]
		}}, false, []string{
			"cookie=0x5d04000001000001, priority=900, icmp,nw_src=10.0.0.1,icmp_type=0 actions=CONTROLLER:65535",
		}},
		{"PoolWithoutVIP", []func(*sdnlb.Config){func(c *sdnlb.Config) { c.Pools[0].VIPID = "" }}, false, nil},
		{"DownLosesItsDrainingKeepsIt", []func(*sdnlb.Config){nil, func(c *sdnlb.Config) {
			c.Members[0].Health.Status = sdnlb.MemberDown
			c.Members[1].AdminStateUp = false
		}}, false, []string{
			"delete cookie=0x5d04000000000001/0xffff000000ffffff",
		}},
		{"BackFromDown", []func(*sdnlb.Config){
			func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown },
			func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberUp },
		}, false, []string{
			"cookie=0x5d04000001000001, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=CONTROLLER:65535",
		}},
		{"SharedAddressOneFlow", []func(*sdnlb.Config){sharedBackend}, false, []string{
			"cookie=0x5d04000001000001, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=CONTROLLER:65535",
			"cookie=0x5d04000001000002, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
			"cookie=0x5d04000001000003, priority=900, tcp,nw_src=10.0.0.3,tp_src=8080 actions=CONTROLLER:65535",
		}},
		// The shared flow is replaced under the remaining member's cookie,
		// never deleted.
		{"SharedAddressOwnerLeaves", []func(*sdnlb.Config){sharedBackend, func(c *sdnlb.Config) {
			sharedBackend(c)
			c.VIPs[0].AdminStateUp = false
		}}, false, []string{
			"delete cookie=0x5d04000000000002/0xffff000000ffffff",
			"delete cookie=0x5d04000000000003/0xffff000000ffffff",
			"cookie=0x5d04000002000004, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=CONTROLLER:65535",
		}},
		{"SharedAddressLastLeaves", []func(*sdnlb.Config){sharedBackend, func(c *sdnlb.Config) {
			sharedBackend(c)
			c.VIPs[0].AdminStateUp = false
		}, func(c *sdnlb.Config) { c.VIPs[0].AdminStateUp = false }}, false, []string{
			"delete cookie=0x5d04000000000004/0xffff000000ffffff",
		}},
		// The tracker takes a member shared by a SWITCH NAT pool and a
		// CONTROLLER pool first, whatever its number, and passes on to the
		// controller the replies of connections it does not hold.
		{"SharedWithSwitchPool", []func(*sdnlb.Config){switchedBackend}, true, []string{
			"cookie=0x5d04000001000003, priority=900, tcp,nw_src=10.0.0.2,tp_src=8080 actions=CONTROLLER:65535",
			"cookie=0x5d04000001000004, priority=900, tcp,nw_src=10.0.0.3,tp_src=8080 actions=CONTROLLER:65535",
			"cookie=0x5d04000002000002, priority=898, tcp,nw_dst=10.0.0.1,tp_dst=8080 actions=ct(commit,zone=94,exec(set_field:0->ct_label)),goto_table:9",
			"cookie=0x5d04000002000002, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=ct(table=3,zone=94)",
			"cookie=0x5d04000002000002, table=from-member, priority=50, tcp,nw_src=10.0.0.1,tp_src=8080 actions=CONTROLLER:65535",
		}},
		{"SwitchPoolLeaves", []func(*sdnlb.Config){switchedBackend, flowHeld}, true, []string{
			"delete cookie=0x5d04000000000002/0xffff000000ffffff table=from-member",
			"delete_strict cookie=0x5d04000000000000/0xffff000000000000 table=classify, priority=898, tcp,nw_dst=10.0.0.1,tp_dst=8080",
			"cookie=0x5d04000001000001, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=CONTROLLER:65535",
		}},
		{"ControllerPoolLeaves", []func(*sdnlb.Config){switchedBackend, func(c *sdnlb.Config) {
			switchedBackend(c)
			c.VIPs[0].AdminStateUp = false
		}}, true, []string{
			"delete cookie=0x5d04000000000003/0xffff000000ffffff",
			"delete cookie=0x5d04000000000004/0xffff000000ffffff",
			"cookie=0x5d04000002000002, table=from-member, priority=50, ct_label=0,tcp,nw_src=10.0.0.1,tp_src=8080 actions=goto_table:9",
			"cookie=0x5d04000002000002, priority=898, tcp,nw_dst=10.0.0.1,tp_dst=8080 actions=ct(commit,zone=94,exec(set_field:0->ct_label)),goto_table:9",
			"cookie=0x5d04000002000002, priority=900, tcp,nw_src=10.0.0.1,tp_src=8080 actions=ct(table=3,zone=94)",
		}},
	}
	t.Run("SharedMemberTrackedInMemberZone", func(t *testing.T) {
		s, _ := model.NewBuilder(time.Now).Build(testnet.Config(switchedBackend))
		for id, want := range map[string]bool{"m1": true, "m2": false, "m10": false} {
			if got := testnet.MemberByID(s, id).MemberZone; got != want {
				t.Errorf("member %s: memberZone %v, want %v", id, got, want)
			}
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := model.NewBuilder(time.Now)
			prev := model.EmptySnapshot
			var mods []ofp.FlowMod
			for _, edit := range tt.edits {
				next, skipped := r.Build(testnet.Config(edit))
				if len(skipped) > 0 {
					t.Fatalf("skipped %v", skipped)
				}
				mods, _ = reconcile(prev, next, model.SwitchFeatures{Groups: tt.groups}, model.L2Normal)
				prev = next
			}
			var punts []ofp.FlowMod
			for i, fm := range mods {
				if cat, _, _, _ := model.CookieParts(fm.Cookie); cat != model.CatMemberReply {
					continue
				}
				isDelete := func(fm ofp.FlowMod) bool { return fm.Command == ofp.FlowDelete || fm.Command == ofp.FlowDeleteStrict }
				if isDelete(fm) && len(punts) > 0 && !isDelete(punts[len(punts)-1]) {
					t.Errorf("delete at position %d comes after an add", i)
				}
				punts = append(punts, fm)
			}
			testnet.AssertLines(t, testnet.FlowLines(t, punts), tt.want)
		})
	}
}
