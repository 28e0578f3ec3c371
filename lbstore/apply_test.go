package lbstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

// webConfig is a VIP with a pool, two members and an HTTP monitor, all
// with ids.
func webConfig() *sdnlb.Config {
	mon := sdnlb.NewMonitor()
	mon.ID, mon.Type, mon.URLPath = "http", sdnlb.MonitorHTTP, "/health"
	vip := newVIP("10.0.0.100", 80)
	vip.ID = "web"
	pool := newPool("web")
	pool.ID, pool.MonitorIDs = "web", []string{"http"}
	m1, m2 := newMember("web", "10.0.0.1", 80), newMember("web", "10.0.0.2", 80)
	m1.ID, m2.ID = "m1", "m2"
	return &sdnlb.Config{VIPs: []*sdnlb.VIP{vip}, Pools: []*sdnlb.Pool{pool},
		Members: []*sdnlb.Member{m1, m2}, Monitors: []*sdnlb.Monitor{mon}}
}

func mustApply(tb testing.TB, ctx context.Context, db *lbstore.DB, want *sdnlb.Config, opts sdnlb.ApplyOptions) *sdnlb.ConfigDiff {
	tb.Helper()
	diff, err := lbstore.NewConfigService(db).ApplyConfig(ctx, want, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return diff
}

// diffIDs lists a kind diff's ids as "+id", "~id" and "-id", with the
// changed fields of updates.
func diffIDs(d sdnlb.KindDiff) []string {
	var out []string
	for _, o := range d.Created {
		out = append(out, "+"+o.ID)
	}
	for _, o := range d.Updated {
		s := "~" + o.ID
		for _, f := range o.Fields {
			s += " " + f.Field
		}
		out = append(out, s)
	}
	for _, o := range d.Deleted {
		out = append(out, "-"+o.ID)
	}
	return out
}

func assertDiff(tb testing.TB, d sdnlb.KindDiff, unchanged int, want ...string) {
	tb.Helper()
	if got := diffIDs(d); !reflect.DeepEqual(got, want) || d.Unchanged != unchanged {
		tb.Fatalf("diff %v with %d unchanged, want %v with %d", got, d.Unchanged, want, unchanged)
	}
}

// declared is the configuration as a client would declare it again: what
// the store holds, without what it derives.
func declared(cfg *sdnlb.Config) *sdnlb.Config {
	out := &sdnlb.Config{}
	for _, v := range cfg.VIPs {
		c := *v
		c.PoolID, c.MAC, c.Status = "", "", ""
		out.VIPs = append(out.VIPs, &c)
	}
	for _, p := range cfg.Pools {
		c := *p
		out.Pools = append(out.Pools, &c)
	}
	for _, m := range cfg.Members {
		c := *m
		c.Status, c.Health = "", sdnlb.MemberHealth{}
		out.Members = append(out.Members, &c)
	}
	for _, m := range cfg.Monitors {
		c := *m
		c.PoolIDs = nil
		out.Monitors = append(out.Monitors, &c)
	}
	return out
}

func TestConfigService_ApplyConfig(t *testing.T) {
	t.Run("CreateThenNoOp", func(t *testing.T) {
		ctx, db := mustSetup(t)
		events, unsubscribe := lbstore.NewEventService(db).Subscribe()
		defer unsubscribe()

		diff := mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		if !diff.Changed || diff.DryRun {
			t.Fatalf("changed %v, dry run %v", diff.Changed, diff.DryRun)
		}
		assertDiff(t, diff.VIPs, 0, "+web")
		assertDiff(t, diff.Pools, 0, "+web")
		assertDiff(t, diff.Members, 0, "+m1", "+m2")
		assertDiff(t, diff.Monitors, 0, "+http")
		// One event per object, in the order of the writes.
		assertEvents(t, receiveEvents(t, events, 5), []sdnlb.Event{
			{Kind: sdnlb.KindMonitor, Op: sdnlb.OpCreate, ID: "http"},
			{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: "web"},
			{Kind: sdnlb.KindPool, Op: sdnlb.OpCreate, ID: "web"},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpCreate, ID: "m1"},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpCreate, ID: "m2"},
		})
		assertNoEvent(t, events)

		cfg := MustLoadConfig(t, ctx, db)
		if v := cfg.VIPs[0]; v.PoolID != "web" || v.Address != "10.0.0.100" {
			t.Errorf("vip %+v", v)
		}
		if p := cfg.Pools[0]; p.VIPID != "web" || !reflect.DeepEqual(p.MonitorIDs, []string{"http"}) {
			t.Errorf("pool %+v", p)
		}
		// The pool was monitored before its members came: they start DOWN.
		if m := cfg.Members[0]; m.Health.Status != sdnlb.MemberDown {
			t.Errorf("member %+v", m)
		}

		// The same document, and what the store holds, change nothing.
		for _, again := range []*sdnlb.Config{webConfig(), declared(cfg)} {
			diff = mustApply(t, ctx, db, again, sdnlb.ApplyOptions{Prune: true})
			if diff.Changed {
				t.Fatalf("a second apply changed: %+v", diff)
			}
			assertDiff(t, diff.VIPs, 1)
			assertDiff(t, diff.Members, 2)
			assertNoEvent(t, events)
			assertUnchanged(t, ctx, db, cfg)
		}
	})

	t.Run("Update", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		events, unsubscribe := lbstore.NewEventService(db).Subscribe()
		defer unsubscribe()

		want := webConfig()
		want.VIPs[0].Port = 8080
		want.VIPs[0].SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 60}
		want.Members[1].Weight = 5
		want.Pools[0].MonitorIDs = nil
		diff := mustApply(t, ctx, db, want, sdnlb.ApplyOptions{})
		assertDiff(t, diff.VIPs, 0, "~web port session_persistence")
		assertDiff(t, diff.Pools, 0, "~web monitor_ids")
		assertDiff(t, diff.Members, 1, "~m2 weight")
		assertDiff(t, diff.Monitors, 1)
		port := diff.VIPs.Updated[0].Fields[0]
		if port.Old != 80 || port.New != 8080 {
			t.Errorf("port change %+v", port)
		}
		// The pool was unlinked and linked again around the VIP's new
		// port, dissociated and updated: one event for it.
		assertEvents(t, receiveEvents(t, events, 3), []sdnlb.Event{
			{Kind: sdnlb.KindPool, Op: sdnlb.OpUpdate, ID: "web"},
			{Kind: sdnlb.KindVIP, Op: sdnlb.OpUpdate, ID: "web"},
			{Kind: sdnlb.KindMember, Op: sdnlb.OpUpdate, ID: "m2"},
		})
		assertNoEvent(t, events)

		cfg := MustLoadConfig(t, ctx, db)
		if v := cfg.VIPs[0]; v.Port != 8080 || v.PoolID != "web" || v.SessionPersistence == nil {
			t.Errorf("vip %+v", v)
		}
		if p := cfg.Pools[0]; len(p.MonitorIDs) != 0 {
			t.Errorf("pool %+v", p)
		}
		if m := cfg.Members[1]; m.Weight != 5 {
			t.Errorf("member %+v", m)
		}
	})

	t.Run("AgentSlowStartCapacity", func(t *testing.T) {
		ctx, db := mustSetup(t)
		want := webConfig()
		agent := sdnlb.NewMonitor()
		agent.ID, agent.Type, agent.Port = "agent", sdnlb.MonitorAgent, 5555
		want.Monitors = append(want.Monitors, agent)
		want.Pools[0].LBMethod, want.Pools[0].SlowStart = sdnlb.Adaptive, 30
		want.Pools[0].MonitorIDs = []string{"agent", "http"}
		want.Members[0].Capacity = 1000
		mustApply(t, ctx, db, want, sdnlb.ApplyOptions{})
		cfg := MustLoadConfig(t, ctx, db)
		if p, m, mon := cfg.Pools[0], cfg.Members[0], cfg.Monitors[0]; p.SlowStart != 30 || p.Dispatch != sdnlb.DispatchSwitch ||
			m.Capacity != 1000 || mon.ID != "agent" || mon.Port != 5555 {
			t.Fatalf("stored pool %+v, member %+v, monitor %+v", p, m, mon)
		}
		if diff := mustApply(t, ctx, db, declared(cfg), sdnlb.ApplyOptions{Prune: true}); diff.Changed {
			t.Fatalf("applying what the store holds changed: %+v", diff)
		}

		want.Pools[0].SlowStart, want.Members[0].Capacity, want.Monitors[1].Port = 0, 0, 6000
		diff := mustApply(t, ctx, db, want, sdnlb.ApplyOptions{})
		assertDiff(t, diff.Pools, 0, "~web slow_start")
		assertDiff(t, diff.Members, 1, "~m1 capacity")
		assertDiff(t, diff.Monitors, 1, "~agent port")
		cfg = MustLoadConfig(t, ctx, db)
		if p, m, mon := cfg.Pools[0], cfg.Members[0], cfg.Monitors[0]; p.SlowStart != 0 || m.Capacity != 0 || mon.Port != 6000 {
			t.Fatalf("updated pool %+v, member %+v, monitor %+v", p, m, mon)
		}
	})

	t.Run("Prune", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		want := webConfig()
		want.Members = want.Members[:1]

		// Without prune, what the document leaves out stays.
		diff := mustApply(t, ctx, db, &sdnlb.Config{}, sdnlb.ApplyOptions{})
		if diff.Changed {
			t.Fatalf("an empty document without prune changed: %+v", diff)
		}
		diff = mustApply(t, ctx, db, want, sdnlb.ApplyOptions{Prune: true})
		assertDiff(t, diff.Members, 1, "-m2")

		// Everything goes, dependants first.
		events, unsubscribe := lbstore.NewEventService(db).Subscribe()
		defer unsubscribe()
		diff = mustApply(t, ctx, db, &sdnlb.Config{}, sdnlb.ApplyOptions{Prune: true})
		assertDiff(t, diff.VIPs, 0, "-web")
		assertDiff(t, diff.Monitors, 0, "-http")
		assertEvents(t, receiveEvents(t, events, 4), []sdnlb.Event{
			{Kind: sdnlb.KindMember, Op: sdnlb.OpDelete, ID: "m1"},
			{Kind: sdnlb.KindPool, Op: sdnlb.OpDelete, ID: "web"},
			{Kind: sdnlb.KindVIP, Op: sdnlb.OpDelete, ID: "web"},
			{Kind: sdnlb.KindMonitor, Op: sdnlb.OpDelete, ID: "http"},
		})
		if cfg := MustLoadConfig(t, ctx, db); len(cfg.VIPs)+len(cfg.Pools)+len(cfg.Members)+len(cfg.Monitors) != 0 {
			t.Fatalf("left %s", dumpConfig(cfg))
		}
	})

	t.Run("DryRun", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		before := MustLoadConfig(t, ctx, db)
		events, unsubscribe := lbstore.NewEventService(db).Subscribe()
		defer unsubscribe()

		want := webConfig()
		want.Members[0].AdminStateUp = false
		api := newVIP("10.0.0.101", 443)
		api.Name = "api" // keyed by its name
		want.VIPs = append(want.VIPs, api)
		diff := mustApply(t, ctx, db, want, sdnlb.ApplyOptions{DryRun: true, Prune: true})
		if !diff.DryRun || !diff.Changed {
			t.Fatalf("dry run %v, changed %v", diff.DryRun, diff.Changed)
		}
		assertDiff(t, diff.VIPs, 1, "+")
		if got := diff.VIPs.Created[0].Key; got != "name api" {
			t.Errorf("key %q", got)
		}
		assertDiff(t, diff.Members, 1, "~m1 admin_state_up")
		assertNoEvent(t, events)
		assertUnchanged(t, ctx, db, before)

		// A dry run refuses an object the apply would refuse for itself.
		want.Members[0].Weight = 1000
		_, err := lbstore.NewConfigService(db).ApplyConfig(ctx, want, sdnlb.ApplyOptions{DryRun: true})
		assertError(t, err, sdnlb.EINVALID, "members[0].weight", "members[0] (id m1)", "weight must be 0-256")
	})

	// A dry run reads in a read transaction: it answers while a write
	// holds the write lock, and so never makes writes wait.
	t.Run("DryRunTakesNoWriteLock", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		want := webConfig()
		want.Members[1].Weight = 3
		release := lbstore.HoldWriteLock(t, db)
		defer release()
		// The deadline only ends a dry run that would wait for the lock.
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		assertDiff(t, mustApply(t, ctx, db, want, sdnlb.ApplyOptions{DryRun: true}).Members, 1, "~m2 weight")
	})

	// The rules that span objects are checked by the writes, which a dry run
	// does not make: the apply checks them again in its own transaction.
	t.Run("ApplyChecksWhatTheDryRunCannot", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		before := MustLoadConfig(t, ctx, db)
		want := webConfig()
		twin := *want.VIPs[0]
		twin.ID = "twin" // on the address and port of web
		want.VIPs = append(want.VIPs, &twin)
		assertDiff(t, mustApply(t, ctx, db, want, sdnlb.ApplyOptions{DryRun: true}).VIPs, 1, "+twin")
		_, err := lbstore.NewConfigService(db).ApplyConfig(ctx, want, sdnlb.ApplyOptions{})
		assertError(t, err, sdnlb.ECONFLICT, "vips[1].address", "already listens on TCP 10.0.0.100:80")
		assertUnchanged(t, ctx, db, before)
	})

	// With If-Match, the apply converges only the configuration the client
	// exported: its ETag, checked inside the transaction.
	t.Run("IfMatch", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		_, read := mustExport(t, ctx, db)
		MustCreateVIP(t, ctx, db, newVIP("10.0.0.101", 80)) // someone else's write
		before := MustLoadConfig(t, ctx, db)
		want := webConfig()
		want.Members[0].Weight = 5
		for _, opts := range []sdnlb.ApplyOptions{{DryRun: true}, {Prune: true}} {
			_, err := lbstore.NewConfigService(db).ApplyConfig(sdnlb.WithIfMatch(ctx, read), want, opts)
			assertError(t, err, sdnlb.EPRECONDITION, "", "the configuration changed since it was read")
		}
		assertUnchanged(t, ctx, db, before)

		_, current := mustExport(t, ctx, db)
		for _, ifMatch := range []string{`"other", ` + current, "*"} {
			diff := mustApply(t, sdnlb.WithIfMatch(ctx, ifMatch), db, want, sdnlb.ApplyOptions{})
			if ifMatch == "*" {
				assertDiff(t, diff.Members, 2) // already applied
				continue
			}
			assertDiff(t, diff.Members, 1, "~m1 weight")
		}
	})

	t.Run("NameKeys", func(t *testing.T) {
		ctx, db := mustSetup(t)
		// Without ids: objects keyed by name, members by their endpoint,
		// references by the names.
		vip := newVIP("10.0.0.100", 80)
		vip.Name = "web"
		pool := newPool("web")
		pool.Name, pool.MonitorIDs = "web-pool", []string{"tcp"}
		mon := sdnlb.NewMonitor()
		mon.Name = "tcp"
		member := newMember("web-pool", "10.0.0.1", 80)
		want := &sdnlb.Config{VIPs: []*sdnlb.VIP{vip}, Pools: []*sdnlb.Pool{pool},
			Members: []*sdnlb.Member{member}, Monitors: []*sdnlb.Monitor{mon}}
		diff := mustApply(t, ctx, db, want, sdnlb.ApplyOptions{})
		if c := diff.Members.Created; len(c) != 1 || c[0].ID == "" || c[0].Key != "10.0.0.1:80 in pool web-pool" {
			t.Fatalf("members created %+v", c)
		}
		if want.VIPs[0].ID != "" || want.Members[0].PoolID != "web-pool" {
			t.Fatal("the apply changed its argument")
		}
		cfg := MustLoadConfig(t, ctx, db)
		if cfg.Pools[0].VIPID != cfg.VIPs[0].ID || cfg.Members[0].PoolID != cfg.Pools[0].ID ||
			!reflect.DeepEqual(cfg.Pools[0].MonitorIDs, []string{cfg.Monitors[0].ID}) {
			t.Fatalf("references not resolved: %s", dumpConfig(cfg))
		}

		// Applying it again matches the stored objects.
		member.Weight = 3
		diff = mustApply(t, ctx, db, want, sdnlb.ApplyOptions{Prune: true})
		assertDiff(t, diff.VIPs, 1)
		assertDiff(t, diff.Members, 0, "~"+cfg.Members[0].ID+" weight")

		// Two stored VIPs of one name: the name keys neither.
		other := newVIP("10.0.0.101", 80)
		other.Name = "web"
		MustCreateVIP(t, ctx, db, other)
		_, err := lbstore.NewConfigService(db).ApplyConfig(ctx, want, sdnlb.ApplyOptions{})
		assertError(t, err, sdnlb.EINVALID, "vips[0].name", "2 stored vips are named \"web\"")
	})

	t.Run("Relink", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		// The pool moves to a new UDP VIP and becomes DSR while its
		// members move to port 0; the old VIP goes.
		want := webConfig()
		dns := newVIP("10.0.0.53", 53)
		dns.ID, dns.Protocol = "dns", sdnlb.ProtocolUDP
		want.VIPs = []*sdnlb.VIP{dns}
		want.Pools[0].VIPID, want.Pools[0].Protocol, want.Pools[0].Forwarding = "dns", sdnlb.ProtocolUDP, sdnlb.ForwardingDSR
		want.Members[0].Port, want.Members[1].Port = 0, 53
		diff := mustApply(t, ctx, db, want, sdnlb.ApplyOptions{Prune: true})
		assertDiff(t, diff.VIPs, 0, "+dns", "-web")
		assertDiff(t, diff.Pools, 0, "~web vip_id forwarding protocol")
		cfg := MustLoadConfig(t, ctx, db)
		if len(cfg.VIPs) != 1 || cfg.VIPs[0].PoolID != "web" || cfg.Pools[0].VIPID != "dns" {
			t.Fatalf("%s", dumpConfig(cfg))
		}

		// Two pools trade their VIPs.
		ctx, db = mustSetup(t)
		want = webConfig()
		other := newVIP("10.0.0.101", 80)
		other.ID = "other"
		otherPool := newPool("other")
		otherPool.ID = "other"
		want.VIPs, want.Pools = append(want.VIPs, other), append(want.Pools, otherPool)
		mustApply(t, ctx, db, want, sdnlb.ApplyOptions{})
		want.Pools[0].VIPID, want.Pools[1].VIPID = "other", "web"
		diff = mustApply(t, ctx, db, want, sdnlb.ApplyOptions{})
		assertDiff(t, diff.Pools, 0, "~other vip_id", "~web vip_id")
		if cfg := MustLoadConfig(t, ctx, db); cfg.VIPs[0].PoolID != "web" || cfg.VIPs[1].PoolID != "other" {
			t.Fatalf("%s", dumpConfig(cfg))
		}
	})

	// The caller's check is asked about each VIP the apply writes, with
	// the stored one, and its refusal names the VIP in the document.
	t.Run("CheckVIP", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		before := MustLoadConfig(t, ctx, db)
		want := webConfig()
		want.VIPs[0].Port = 8080
		other := newVIP("10.0.0.101", 80)
		other.ID = "other"
		want.VIPs = append(want.VIPs, other)
		var asked []string
		record := func(_ context.Context, old, v *sdnlb.VIP) error {
			if old == nil {
				asked = append(asked, v.ID+" new")
			} else {
				asked = append(asked, fmt.Sprintf("%s from port %d to %d", v.ID, old.Port, v.Port))
			}
			return nil
		}
		mustApply(t, ctx, db, want, sdnlb.ApplyOptions{DryRun: true, CheckVIP: record})
		if wantAsked := []string{"web from port 80 to 8080", "other new"}; !reflect.DeepEqual(asked, wantAsked) {
			t.Errorf("asked %q, want %q", asked, wantAsked)
		}
		refuse := func(_ context.Context, _, v *sdnlb.VIP) error {
			if v.ID == "other" {
				return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "a host holds %s", v.Address)
			}
			return nil
		}
		_, err := lbstore.NewConfigService(db).ApplyConfig(ctx, want, sdnlb.ApplyOptions{CheckVIP: refuse})
		assertError(t, err, sdnlb.ECONFLICT, "vips[1].address", "vips[1] (id other): a host holds 10.0.0.101")
		assertUnchanged(t, ctx, db, before)
	})

	// A VIP gives its address to a member: VIPs are written first.
	t.Run("MemberTakesVIPAddress", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		want := webConfig()
		want.VIPs[0].Address, want.Members[1].Address = "10.0.0.101", "10.0.0.100"
		diff := mustApply(t, ctx, db, want, sdnlb.ApplyOptions{})
		assertDiff(t, diff.VIPs, 0, "~web address")
		assertDiff(t, diff.Members, 1, "~m2 address")
	})

	t.Run("ReplaceOnTheSameAddress", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
		// A new VIP on the old one's address and a new member on a pruned
		// one's endpoint: prune frees them first.
		want := webConfig()
		want.VIPs[0].ID, want.Pools[0].VIPID = "web2", "web2"
		want.Members[1].ID = "m2b"
		diff := mustApply(t, ctx, db, want, sdnlb.ApplyOptions{Prune: true})
		assertDiff(t, diff.VIPs, 0, "+web2", "-web")
		assertDiff(t, diff.Members, 1, "+m2b", "-m2")
	})
}

func TestConfigService_ApplyConfigRejected(t *testing.T) {
	for _, tc := range []struct {
		name, code, field string
		prune             bool
		// spansObjects: a rule between objects, which the writes check
		// and so a dry run does not.
		spansObjects bool
		edit         func(*sdnlb.Config)
		mentions     []string
	}{
		{name: "ErrInvalidMember", code: sdnlb.EINVALID, field: "members[1].port",
			edit:     func(c *sdnlb.Config) { c.Members[1].Port = 70000 },
			mentions: []string{"members[1] (id m2)", "port must be 0-65535"}},
		{name: "ErrCapacity", code: sdnlb.EINVALID, field: "members[1].capacity",
			edit:     func(c *sdnlb.Config) { c.Members[1].Capacity = -1 },
			mentions: []string{"members[1] (id m2)", "capacity must be 0-"}},
		{name: "ErrSlowStart", code: sdnlb.EINVALID, field: "pools[0].slow_start",
			edit:     func(c *sdnlb.Config) { c.Pools[0].SlowStart = 10 },
			mentions: []string{"ROUND_ROBIN does not weigh members"}},
		{name: "ErrMonitorPort", code: sdnlb.EINVALID, field: "monitors[0].port",
			edit:     func(c *sdnlb.Config) { c.Monitors[0].Port = 8080 },
			mentions: []string{"port is for AGENT monitors only"}},
		{name: "ErrDuplicateID", code: sdnlb.EINVALID, field: "members[1].id",
			edit:     func(c *sdnlb.Config) { c.Members[1].ID = "m1" },
			mentions: []string{"listed twice, also as members[0]"}},
		{name: "ErrDanglingReference", code: sdnlb.EINVALID, field: "pools[0].vip_id",
			edit:     func(c *sdnlb.Config) { c.Pools[0].VIPID = "nope" },
			mentions: []string{`vip "nope" not found`}},
		{name: "ErrMemberOfNoPool", code: sdnlb.EINVALID, field: "members[1].pool_id",
			edit:     func(c *sdnlb.Config) { c.Members[1].PoolID = "nope" },
			mentions: []string{"members[1] (id m2)", `pool "nope" not found`}},
		{name: "ErrUnknownMonitor", code: sdnlb.EINVALID, field: "pools[0].monitor_ids",
			edit:     func(c *sdnlb.Config) { c.Pools[0].MonitorIDs = []string{"nope"} },
			mentions: []string{`monitor "nope" not found`}},
		{name: "ErrMemberKeyedTwice", code: sdnlb.EINVALID, field: "members[3].address",
			edit:     func(c *sdnlb.Config) { c.Members = append(c.Members, newMember("web", "10.0.0.3", 80)) },
			mentions: []string{"member 10.0.0.3:80 in pool web is listed twice, also as members[2]"}},
		{name: "ErrNullObject", code: sdnlb.EINVALID, field: "vips[1]",
			edit:     func(c *sdnlb.Config) { c.VIPs = append(c.VIPs, nil) },
			mentions: []string{"vips[1] is null"}},
		{name: "ErrNoKey", code: sdnlb.EINVALID, field: "vips[0].id",
			edit:     func(c *sdnlb.Config) { c.VIPs[0].ID, c.VIPs[0].Name = "", "" },
			mentions: []string{"needs an id, or a name"}},
		{name: "ErrNameNotUnique", code: sdnlb.EINVALID, field: "monitors[1].name",
			edit: func(c *sdnlb.Config) {
				m := *c.Monitors[0]
				c.Monitors[0].Name, m.ID, m.Name = "check", "", "check"
				c.Monitors = append(c.Monitors, &m)
			},
			mentions: []string{`2 monitors are named "check"`}},
		{name: "ErrSameAddress", code: sdnlb.ECONFLICT, field: "vips[1].address", spansObjects: true,
			edit: func(c *sdnlb.Config) {
				v := *c.VIPs[0]
				v.ID = "web2"
				c.VIPs = append(c.VIPs, &v)
			},
			mentions: []string{"already listens on TCP 10.0.0.100:80"}},
		// The same checks as the single writes, whatever the order of the
		// document.
		{name: "ErrVIPOnMemberAddress", code: sdnlb.ECONFLICT, field: "vips[1].address", spansObjects: true,
			edit: func(c *sdnlb.Config) {
				v := newVIP("10.0.0.2", 80)
				v.ID = "hijack"
				c.VIPs = append(c.VIPs, v)
			},
			mentions: []string{"vips[1] (id hijack)", "member m2 of pool web"}},
		{name: "ErrMemberOnVIPAddress", code: sdnlb.ECONFLICT, field: "members[3].address", spansObjects: true,
			edit: func(c *sdnlb.Config) {
				m := newMember("web", "10.0.0.100", 8080)
				m.ID = "m4"
				c.Members = append(c.Members, m)
			},
			mentions: []string{"members[3] (id m4)", "vip web"}},
		{name: "ErrVIPMovesOntoMember", code: sdnlb.ECONFLICT, field: "vips[0].address", spansObjects: true,
			edit:     func(c *sdnlb.Config) { c.VIPs[0].Address = "10.0.0.1" },
			mentions: []string{"vips[0] (id web)", "member m1 of pool web"}},
		{name: "ErrMemberMovesOntoVIP", code: sdnlb.ECONFLICT, field: "members[1].address", spansObjects: true,
			edit:     func(c *sdnlb.Config) { c.Members[1].Address = "10.0.0.100" },
			mentions: []string{"members[1] (id m2)", "vip web"}},
		{name: "ErrMemberChangesPool", code: sdnlb.EINVALID, field: "members[0].pool_id",
			edit: func(c *sdnlb.Config) {
				p := newPool("")
				p.ID = "other"
				c.Pools = append(c.Pools, p)
				c.Members[0].PoolID = "other"
			},
			mentions: []string{"pool_id cannot change"}},
		{name: "ErrProtocolMismatch", code: sdnlb.EINVALID, field: "pools[0].protocol", spansObjects: true,
			edit:     func(c *sdnlb.Config) { c.VIPs[0].Protocol = sdnlb.ProtocolUDP },
			mentions: []string{"must match the protocol of vip web"}},
		{name: "ErrReferenceToPruned", code: sdnlb.EINVALID, field: "members[0].pool_id", prune: true,
			edit:     func(c *sdnlb.Config) { c.Pools = nil },
			mentions: []string{`pool "web" is not in the document, and prune deletes it`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, db := mustSetup(t)
			mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
			before := MustLoadConfig(t, ctx, db)
			events, unsubscribe := lbstore.NewEventService(db).Subscribe()
			defer unsubscribe()

			want := webConfig()
			want.Members = append(want.Members, newMember("web", "10.0.0.3", 80)) // a create that must not happen
			tc.edit(want)
			_, err := lbstore.NewConfigService(db).ApplyConfig(ctx, want, sdnlb.ApplyOptions{Prune: tc.prune})
			assertError(t, err, tc.code, tc.field, tc.mentions...)
			if !tc.spansObjects {
				_, err = lbstore.NewConfigService(db).ApplyConfig(ctx, want, sdnlb.ApplyOptions{Prune: tc.prune, DryRun: true})
				assertError(t, err, tc.code, tc.field, tc.mentions...)
			}
			assertUnchanged(t, ctx, db, before)
			assertNoEvent(t, events)
		})
	}
}

// The diff marshals as the API answers it: every list present, values of
// changed fields as JSON writes them.
func TestConfigDiff_JSON(t *testing.T) {
	ctx, db := mustSetup(t)
	mustApply(t, ctx, db, webConfig(), sdnlb.ApplyOptions{})
	want := webConfig()
	want.Monitors[0].Delay = 2.5
	b, err := json.Marshal(mustApply(t, ctx, db, want, sdnlb.ApplyOptions{DryRun: true}))
	if err != nil {
		t.Fatal(err)
	}
	const wantJSON = `{"dry_run":true,"changed":true,` +
		`"vips":{"created":[],"updated":[],"deleted":[],"unchanged":1},` +
		`"pools":{"created":[],"updated":[],"deleted":[],"unchanged":1},` +
		`"members":{"created":[],"updated":[],"deleted":[],"unchanged":2},` +
		`"monitors":{"created":[],"updated":[{"id":"http","fields":[{"field":"delay","old":5,"new":2.5}]}],"deleted":[],"unchanged":0}}`
	if string(b) != wantJSON {
		t.Fatalf("got  %s\nwant %s", b, wantJSON)
	}
}

// largeConfig declares 10 VIPs with a pool of 1,000 members each.
func largeConfig() *sdnlb.Config {
	cfg := &sdnlb.Config{}
	for i := range 10 {
		v := newVIP("10.0.0.100", 80+i)
		v.ID = fmt.Sprintf("vip-%d", i)
		p := newPool(v.ID)
		p.ID = fmt.Sprintf("pool-%d", i)
		cfg.VIPs, cfg.Pools = append(cfg.VIPs, v), append(cfg.Pools, p)
		for j := range 1_000 {
			m := newMember(p.ID, fmt.Sprintf("10.1.%d.%d", j/250, j%250+1), 80)
			m.ID = fmt.Sprintf("%s-m%d", p.ID, j)
			cfg.Members = append(cfg.Members, m)
		}
	}
	return cfg
}

// An apply of 10,000 members that changes nothing: one read of everything
// and the diff.
func BenchmarkConfigService_ApplyConfigNoOp(b *testing.B) {
	ctx, db := mustSetup(b)
	mustApply(b, ctx, db, largeConfig(), sdnlb.ApplyOptions{})
	want := largeConfig()
	b.ReportAllocs()
	for b.Loop() {
		if diff := mustApply(b, ctx, db, want, sdnlb.ApplyOptions{Prune: true}); diff.Changed {
			b.Fatal("changed")
		}
	}
}

// An apply that creates 10,000 members into an empty store, which is
// cleared again untimed.
func BenchmarkConfigService_ApplyConfigCreate(b *testing.B) {
	ctx, db := mustSetup(b)
	want := largeConfig()
	b.ReportAllocs()
	for b.Loop() {
		if diff := mustApply(b, ctx, db, want, sdnlb.ApplyOptions{}); len(diff.Members.Created) != 10_000 {
			b.Fatalf("created %d", len(diff.Members.Created))
		}
		b.StopTimer()
		if err := lbstore.NewConfigService(db).Clear(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
