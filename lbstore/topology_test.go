package lbstore_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

// testPart is a part of the topology of one switch, dpid, with a link
// from its port 1, a host on its port 2 and a path.
func testPart(dpid string, seen time.Time) *sdnlb.TopologyPart {
	return &sdnlb.TopologyPart{
		Switches: []*sdnlb.TopologySwitch{{DPID: dpid, Ports: []sdnlb.SwitchPort{{No: 1, Name: "p1", Up: true}, {No: 2, Name: "p2", Up: true}}}},
		Links:    []*sdnlb.Link{{Src: sdnlb.LinkEnd{DPID: "far", Port: 9}, Dst: sdnlb.LinkEnd{DPID: dpid, Port: 1}}},
		Hosts:    []*sdnlb.Host{{Address: "10.0.0.2", MAC: "02:00:00:00:00:02", DPID: dpid, Port: "2", PortName: "p2", LastSeen: seen}},
		Loads:    []sdnlb.PortLoad{{Port: sdnlb.LinkEnd{DPID: dpid, Port: 1}, RateBPS: 800, CapacityBPS: 1000, Utilisation: 0.8}},
		Paths:    []*sdnlb.Path{{From: dpid, To: "far", Hops: []sdnlb.LinkEnd{{DPID: dpid, Port: 1}}}},
	}
}

// render is a part as JSON, its lists in order and its hosts' last_seen
// in UTC, to compare.
func render(tb testing.TB, p *sdnlb.TopologyPart) string {
	tb.Helper()
	c := *p
	c.Switches = slices.Clone(c.Switches)
	slices.SortFunc(c.Switches, func(a, b *sdnlb.TopologySwitch) int { return cmp.Compare(a.DPID, b.DPID) })
	c.Links = slices.Clone(c.Links)
	slices.SortFunc(c.Links, func(a, b *sdnlb.Link) int {
		return cmp.Or(cmp.Compare(a.Src.DPID, b.Src.DPID), cmp.Compare(a.Src.Port, b.Src.Port), cmp.Compare(a.Dst.DPID, b.Dst.DPID))
	})
	c.Hosts = nil
	for _, h := range p.Hosts {
		h := *h
		h.LastSeen = h.LastSeen.UTC()
		c.Hosts = append(c.Hosts, &h)
	}
	slices.SortFunc(c.Hosts, func(a, b *sdnlb.Host) int {
		return cmp.Or(cmp.Compare(a.DPID, b.DPID), cmp.Compare(a.Address, b.Address))
	})
	c.Loads = slices.Clone(c.Loads)
	slices.SortFunc(c.Loads, func(a, b sdnlb.PortLoad) int {
		return cmp.Or(cmp.Compare(a.Port.DPID, b.Port.DPID), cmp.Compare(a.Port.Port, b.Port.Port))
	})
	c.Paths = slices.Clone(c.Paths)
	slices.SortFunc(c.Paths, func(a, b *sdnlb.Path) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	b, err := json.Marshal(c)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func mustRecordTopology(tb testing.TB, db *lbstore.DB, n sdnlb.ClusterNode, p *sdnlb.TopologyPart, live time.Duration) {
	tb.Helper()
	if err := db.RecordTopology(context.Background(), n, p, live); err != nil {
		tb.Fatal(err)
	}
}

// assertParts checks that the parts recorded within live are want, by
// node id.
func assertParts(tb testing.TB, db *lbstore.DB, live time.Duration, want ...*sdnlb.TopologyPart) {
	tb.Helper()
	got, err := db.TopologyParts(context.Background(), live)
	if err != nil {
		tb.Fatal(err)
	}
	if len(got) != len(want) {
		tb.Fatalf("%d parts, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if g, w := render(tb, got[i]), render(tb, want[i]); g != w {
			tb.Fatalf("part %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

// mustJoin records the nodes as the elector does: a part is recorded for
// a node whose row is the process's.
func mustJoin(tb testing.TB, db *lbstore.DB, nodes ...sdnlb.ClusterNode) {
	tb.Helper()
	for _, n := range nodes {
		if err := db.RecordNode(context.Background(), n, time.Minute); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestDB_RecordTopology(t *testing.T) {
	seen := time.Date(2026, 5, 4, 3, 2, 1, 987654321, time.FixedZone("X", 3600))
	// A host's last_seen is kept to the minute.
	stored := func(p *sdnlb.TopologyPart, node string) *sdnlb.TopologyPart {
		c := *p
		c.Node = node
		c.Hosts = nil
		for _, h := range p.Hosts {
			h := *h
			h.LastSeen = h.LastSeen.Truncate(time.Minute)
			c.Hosts = append(c.Hosts, &h)
		}
		return &c
	}

	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		a, b := node("a"), node("b")
		mustJoin(t, db, a, b)
		pa, pb := testPart("s1", seen), testPart("s2", seen)
		mustRecordTopology(t, db, a, pa, time.Minute)
		mustRecordTopology(t, db, b, pb, time.Minute)
		assertParts(t, db, time.Minute, stored(pa, "a"), stored(pb, "b"))

		// A record replaces the node's last: a host moved and another
		// came, the link went, the load changed, the path is gone; b's
		// part stays.
		pa.Hosts[0].Port, pa.Hosts[0].LastSeen = "3", seen.Add(time.Hour)
		pa.Hosts = append(pa.Hosts, &sdnlb.Host{Address: "10.0.0.4", MAC: "02:00:00:00:00:04", DPID: "s1", Port: "4", LastSeen: seen})
		pa.Links = nil
		pa.Loads[0].RateBPS, pa.Loads[0].Utilisation = 500, 0.5
		pa.Paths = nil
		mustRecordTopology(t, db, a, pa, time.Minute)
		assertParts(t, db, time.Minute, stored(pa, "a"), stored(pb, "b"))

		// Forgotten: a node that stops removes its part.
		if err := db.RecordTopology(ctx, a, nil, time.Minute); err != nil {
			t.Fatal(err)
		}
		assertParts(t, db, time.Minute, stored(pb, "b"))
		mustRecordTopology(t, db, a, pa, time.Minute)
		assertParts(t, db, time.Minute, stored(pa, "a"), stored(pb, "b"))
	})
	t.Run("OnlyChangesWritten", func(t *testing.T) {
		// A record writes only the items that changed: a row changed
		// behind the store's back stays as it is until its item changes.
		_, db := mustSetup(t)
		a := node("a")
		mustJoin(t, db, a)
		p := testPart("s1", seen)
		mustRecordTopology(t, db, a, p, time.Minute)
		raw := rawDB(t, db.DSN)
		if _, err := raw.Exec(`UPDATE topology_items SET body = '{"dpid":"s1","ports":[]}' WHERE kind = 'switch'`); err != nil {
			t.Fatal(err)
		}
		// The host seen again within the same minute is no change.
		p.Hosts[0].LastSeen = seen.Add(time.Second)
		mustRecordTopology(t, db, a, p, time.Minute)
		tampered := stored(p, "a")
		tampered.Switches = []*sdnlb.TopologySwitch{{DPID: "s1", Ports: []sdnlb.SwitchPort{}}}
		assertParts(t, db, time.Minute, tampered)

		p.Switches[0].Ports[0].Up = false
		mustRecordTopology(t, db, a, p, time.Minute)
		assertParts(t, db, time.Minute, stored(p, "a"))
	})
	t.Run("Lapse", func(t *testing.T) {
		// A part not recorded within live is not read, and the next
		// record of any node removes it; its node's next record writes
		// it whole again.
		_, db := mustSetup(t)
		a, b := node("a"), node("b")
		mustJoin(t, db, a, b)
		pa, pb := testPart("s1", seen), testPart("s2", seen)
		mustRecordTopology(t, db, a, pa, time.Minute)
		assertParts(t, db, 30*time.Second, stored(pa, "a"))
		lbstore.AgeClusterTables(t, db, time.Minute)
		assertParts(t, db, 30*time.Second)
		assertParts(t, db, time.Hour, stored(pa, "a"))
		mustRecordTopology(t, db, b, pb, 30*time.Second)
		assertParts(t, db, time.Hour, stored(pb, "b"))
		mustRecordTopology(t, db, a, pa, 30*time.Second)
		assertParts(t, db, time.Hour, stored(pa, "a"), stored(pb, "b"))
	})
	t.Run("Many", func(t *testing.T) {
		// Hosts by the thousand take several statements each way.
		_, db := mustSetup(t)
		a := node("a")
		mustJoin(t, db, a)
		p := testPart("s1", seen)
		for i := range 2500 {
			p.Hosts = append(p.Hosts, &sdnlb.Host{Address: fmt.Sprintf("10.1.%d.%d", i/250, i%250), DPID: "s1", Port: "2", LastSeen: seen})
		}
		mustRecordTopology(t, db, a, p, time.Minute)
		assertParts(t, db, time.Minute, stored(p, "a"))
		p.Hosts = p.Hosts[:1]
		mustRecordTopology(t, db, a, p, time.Minute)
		assertParts(t, db, time.Minute, stored(p, "a"))
	})
	t.Run("ErrInUse", func(t *testing.T) {
		// A process whose node id another process took records nothing,
		// and forgets nothing.
		ctx, db := mustSetup(t)
		first, second := node("a"), node("a")
		first.Instance, second.Instance = "one", "two"
		mustJoin(t, db, first)
		p := testPart("s1", seen)
		mustRecordTopology(t, db, first, p, time.Minute)
		err := db.RecordTopology(ctx, second, testPart("s2", seen), time.Minute)
		assertError(t, err, sdnlb.ECONFLICT, "", `"a"`)
		err = db.RecordTopology(ctx, second, nil, time.Minute)
		assertError(t, err, sdnlb.ECONFLICT, "", `"a"`)
		assertParts(t, db, time.Minute, stored(p, "a"))
	})
}
