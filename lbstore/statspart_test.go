package lbstore_test

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

// statsConfig creates a VIP with a pool of n members, and a VIP without
// a pool, whose ids it returns: the stats of objects the configuration
// lacks are swept.
func statsConfig(tb testing.TB, ctx context.Context, db *lbstore.DB, n int) (vips, members []string) {
	tb.Helper()
	v := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.100", 80))
	lone := MustCreateVIP(tb, ctx, db, newVIP("10.0.0.101", 80))
	pool := MustCreatePool(tb, ctx, db, newPool(v.ID))
	lbstore.SeedMembers(tb, db, pool.ID, n)
	for i := range n {
		members = append(members, fmt.Sprintf("%s-%07d", pool.ID, i))
	}
	return []string{v.ID, lone.ID}, members
}

// counts are Counts with every field n, so that a mix-up of columns
// shows.
func counts(n uint64) sdnlb.Counts {
	return sdnlb.Counts{Connections: n, PacketsIn: n + 1, PacketsOut: n + 2, BytesIn: n + 3, BytesOut: n + 4, Opened: n + 5, Closed: n + 6}
}

// readingsOf are counts as a switch's rows read them: no Connections.
func readingsOf(n uint64) sdnlb.Counts {
	c := counts(n)
	c.Connections = 0
	return c
}

func mustRecordStats(tb testing.TB, db *lbstore.DB, n sdnlb.ClusterNode, p *sdnlb.StatsPart) {
	tb.Helper()
	if err := db.RecordStats(context.Background(), n, p); err != nil {
		tb.Fatal(err)
	}
}

// mustStatsParts reads the parts, by id.
func mustStatsParts(tb testing.TB, db *lbstore.DB) map[string]*sdnlb.StatsPart {
	tb.Helper()
	parts, err := db.StatsParts(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	byID := map[string]*sdnlb.StatsPart{}
	for _, p := range parts {
		if p.Members == nil || p.VIPs == nil {
			tb.Fatalf("part %s: nil maps", p.ID)
		}
		byID[p.ID] = p
	}
	return byID
}

// assertStatsParts checks that the parts are want, ignoring when they
// were recorded and their switches.
func assertStatsParts(tb testing.TB, db *lbstore.DB, want ...*sdnlb.StatsPart) {
	tb.Helper()
	got := mustStatsParts(tb, db)
	if len(got) != len(want) {
		tb.Fatalf("parts %v, want %d", slices.Sorted(maps.Keys(got)), len(want))
	}
	for _, w := range want {
		g := got[w.ID]
		if g == nil {
			tb.Fatalf("part %s missing; parts %v", w.ID, slices.Sorted(maps.Keys(got)))
		}
		if g.Node != w.Node || !reflect.DeepEqual(g.Members, w.Members) || !reflect.DeepEqual(g.VIPs, w.VIPs) {
			tb.Fatalf("part %s:\n got node %s %+v %+v\nwant node %s %+v %+v", w.ID, g.Node, g.Members, g.VIPs, w.Node, w.Members, w.VIPs)
		}
	}
}

// clonePart copies p's maps, as the part the store was given must not
// change what it holds.
func clonePart(p *sdnlb.StatsPart) *sdnlb.StatsPart {
	c := *p
	c.Members, c.VIPs = maps.Clone(p.Members), maps.Clone(p.VIPs)
	c.Switches = slices.Clone(p.Switches)
	return &c
}

func mustSwitchReadings(tb testing.TB, db *lbstore.DB, live time.Duration, dpids ...string) map[string]sdnlb.SwitchReadingsOf {
	tb.Helper()
	list, err := db.SwitchReadings(context.Background(), dpids, live)
	if err != nil {
		tb.Fatal(err)
	}
	byDPID := map[string]sdnlb.SwitchReadingsOf{}
	for _, r := range list {
		if r.Members == nil {
			tb.Fatalf("switch %s: nil members", r.DPID)
		}
		byDPID[r.DPID] = r
	}
	return byDPID
}

func assertReadings(tb testing.TB, got sdnlb.SwitchReadingsOf, part string, generation uint64, final bool, members map[string]sdnlb.Counts) {
	tb.Helper()
	if got.Part != part || got.Generation != generation || got.Final != final || !reflect.DeepEqual(got.Members, members) {
		tb.Fatalf("readings of %s: part %s generation %d final %v %+v\nwant part %s generation %d final %v %+v",
			got.DPID, got.Part, got.Generation, got.Final, got.Members, part, generation, final, members)
	}
}

// setRow overwrites a row's connections behind the store's back.
func setRow(tb testing.TB, db *lbstore.DB, part, member string, connections int64) {
	tb.Helper()
	q := `UPDATE stats_members SET connections = ? WHERE part_id = ? AND member_id = ?`
	if lbstore.CurrentBackend() == "postgres" {
		q = `UPDATE stats_members SET connections = $1 WHERE part_id = $2 AND member_id = $3`
	}
	if _, err := rawDB(tb, db.DSN).Exec(q, connections, part, member); err != nil {
		tb.Fatal(err)
	}
}

func TestDB_RecordStats(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		vips, members := statsConfig(t, ctx, db, 3)
		a, b := node("a"), node("b")
		mustJoin(t, db, a, b)
		pa := &sdnlb.StatsPart{ID: "pa", Node: "a",
			Members: map[string]sdnlb.MemberPart{members[0]: {Counts: counts(10), Active: 2}, members[1]: {Counts: counts(20)}},
			VIPs:    map[string]sdnlb.VIPPart{vips[0]: {Refused: 3, Active: 2}, vips[1]: {Refused: 1}}}
		pb := &sdnlb.StatsPart{ID: "pb", Node: "b", Members: map[string]sdnlb.MemberPart{members[0]: {Counts: counts(100)}}}
		before := time.Now()
		mustRecordStats(t, db, a, pa)
		mustRecordStats(t, db, b, pb)
		assertStatsParts(t, db, pa, &sdnlb.StatsPart{ID: "pb", Node: "b", Members: pb.Members, VIPs: map[string]sdnlb.VIPPart{}})
		for _, p := range mustStatsParts(t, db) {
			// The database's clock, on this machine.
			if p.RecordedAt.Location() != time.UTC || p.RecordedAt.Before(before.Add(-time.Minute)) || p.RecordedAt.After(time.Now().Add(time.Minute)) {
				t.Fatalf("part %s recorded at %v, around %v", p.ID, p.RecordedAt, before)
			}
		}

		// A record replaces the part's last: a member's counters grew,
		// another came, one went, so did a VIP; b's part stays.
		pa = clonePart(pa)
		pa.Members[members[0]] = sdnlb.MemberPart{Counts: counts(11), Active: 1}
		pa.Members[members[2]] = sdnlb.MemberPart{Counts: counts(30), Active: 5}
		delete(pa.Members, members[1])
		delete(pa.VIPs, vips[1])
		mustRecordStats(t, db, a, pa)
		assertStatsParts(t, db, pa, &sdnlb.StatsPart{ID: "pb", Node: "b", Members: pb.Members, VIPs: map[string]sdnlb.VIPPart{}})

		// An empty part has no rows.
		mustRecordStats(t, db, a, &sdnlb.StatsPart{ID: "pa", Node: "a"})
		assertStatsParts(t, db, &sdnlb.StatsPart{ID: "pa", Node: "a", Members: map[string]sdnlb.MemberPart{}, VIPs: map[string]sdnlb.VIPPart{}},
			&sdnlb.StatsPart{ID: "pb", Node: "b", Members: pb.Members, VIPs: map[string]sdnlb.VIPPart{}})
	})
	t.Run("OnlyChangesWritten", func(t *testing.T) {
		// A record writes only the rows that changed: a row changed
		// behind the store's back stays as it is until its member's
		// counters change, or a record fails (then the next writes the
		// part whole).
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 2)
		a := node("a")
		mustJoin(t, db, a)
		p := &sdnlb.StatsPart{ID: "pa", Node: "a",
			Members: map[string]sdnlb.MemberPart{members[0]: {Counts: counts(10)}, members[1]: {Counts: counts(20)}}, VIPs: map[string]sdnlb.VIPPart{}}
		mustRecordStats(t, db, a, p)
		setRow(t, db, "pa", members[1], 999)
		p = clonePart(p)
		p.Members[members[0]] = sdnlb.MemberPart{Counts: counts(11)}
		mustRecordStats(t, db, a, p)
		tampered := clonePart(p)
		m := tampered.Members[members[1]]
		m.Connections = 999
		tampered.Members[members[1]] = m
		assertStatsParts(t, db, tampered)

		other := a
		other.Instance = "another"
		assertError(t, db.RecordStats(ctx, other, p), sdnlb.ECONFLICT, "", `"a"`)
		mustRecordStats(t, db, a, p)
		assertStatsParts(t, db, p)
	})
	t.Run("Many", func(t *testing.T) {
		// Members by the thousand take several statements each way.
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 2500)
		a := node("a")
		mustJoin(t, db, a)
		p := &sdnlb.StatsPart{ID: "pa", Node: "a", Members: map[string]sdnlb.MemberPart{}, VIPs: map[string]sdnlb.VIPPart{}}
		for i, id := range members {
			p.Members[id] = sdnlb.MemberPart{Counts: counts(uint64(i)), Active: uint64(i % 7)}
		}
		p.Switches = []sdnlb.SwitchReadings{{DPID: "s1", Members: map[string]sdnlb.Counts{}}}
		for i, id := range members {
			p.Switches[0].Members[id] = readingsOf(uint64(i))
		}
		mustRecordStats(t, db, a, p)
		assertStatsParts(t, db, p)
		assertReadings(t, mustSwitchReadings(t, db, time.Minute, "s1")["s1"], "pa", 0, false, p.Switches[0].Members)
		p = clonePart(p)
		for _, id := range members[1:] {
			delete(p.Members, id)
		}
		p.Switches[0].Members = map[string]sdnlb.Counts{members[0]: readingsOf(7)}
		mustRecordStats(t, db, a, p)
		assertStatsParts(t, db, p)
		assertReadings(t, mustSwitchReadings(t, db, time.Minute, "s1")["s1"], "pa", 0, false, p.Switches[0].Members)
	})
	t.Run("Large", func(t *testing.T) {
		// Counters are uint64 below 2^63.
		ctx, db := mustSetup(t)
		vips, members := statsConfig(t, ctx, db, 1)
		a := node("a")
		mustJoin(t, db, a)
		big := uint64(1) << 62
		p := &sdnlb.StatsPart{ID: "pa", Node: "a",
			Members:  map[string]sdnlb.MemberPart{members[0]: {Counts: counts(big), Active: big}},
			VIPs:     map[string]sdnlb.VIPPart{vips[0]: {Refused: big, Active: big + 1}},
			Switches: []sdnlb.SwitchReadings{{DPID: "s1", Generation: big, Members: map[string]sdnlb.Counts{members[0]: readingsOf(big)}}}}
		mustRecordStats(t, db, a, p)
		assertStatsParts(t, db, p)
		assertReadings(t, mustSwitchReadings(t, db, time.Minute, "s1")["s1"], "pa", big, false, p.Switches[0].Members)
	})
	t.Run("ErrAbsorbed", func(t *testing.T) {
		// An absorbed part records nothing, whichever process tries,
		// until its tombstone goes a day later; a process that was
		// refused it once is refused even then.
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 1)
		a, l := node("a"), node("l")
		mustJoin(t, db, a, l)
		lease := mustTake(t, db, l, 0, 48*time.Hour)
		pa := &sdnlb.StatsPart{ID: "pa", Node: "a", Members: map[string]sdnlb.MemberPart{members[0]: {Counts: counts(1)}}}
		mustRecordStats(t, db, a, pa)
		lbstore.AgeClusterTables(t, db, time.Minute)
		mustRecordStats(t, db, l, &sdnlb.StatsPart{ID: "pl", Node: "l"})
		if _, err := db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		assertError(t, db.RecordStats(ctx, a, pa), sdnlb.ECONFLICT, "", `"pa"`, "absorbed")
		restarted := mustOpenProcesses(t, 1, db.DSN)[0]
		assertError(t, restarted.RecordStats(ctx, a, pa), sdnlb.ECONFLICT, "", `"pa"`, "absorbed")

		// A day on, the sweep removes the tombstone.
		mustRecordStats(t, db, a, &sdnlb.StatsPart{ID: "pa2", Node: "a"})
		lbstore.AgeClusterTables(t, db, 25*time.Hour)
		lbstore.SweepStatsNext(db)
		mustRecordStats(t, db, a, &sdnlb.StatsPart{ID: "pa2", Node: "a"})
		assertError(t, db.RecordStats(ctx, a, pa), sdnlb.ECONFLICT, "", `"pa"`, "absorbed")
		assertError(t, restarted.RecordStats(ctx, a, pa), sdnlb.ECONFLICT, "", `"pa"`, "absorbed")
		mustRecordStats(t, mustOpenProcesses(t, 1, db.DSN)[0], a, pa)
	})
	t.Run("ErrInUse", func(t *testing.T) {
		// A process whose node id another process took records nothing.
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 1)
		first, second := node("a"), node("a")
		first.Instance, second.Instance = "one", "two"
		mustJoin(t, db, first)
		p := &sdnlb.StatsPart{ID: "p1", Node: "a", Members: map[string]sdnlb.MemberPart{members[0]: {Counts: counts(1)}}, VIPs: map[string]sdnlb.VIPPart{}}
		mustRecordStats(t, db, first, p)
		changed := clonePart(p)
		changed.Members[members[0]] = sdnlb.MemberPart{Counts: counts(2)}
		assertError(t, db.RecordStats(ctx, second, changed), sdnlb.ECONFLICT, "", `"a"`)
		assertError(t, db.RecordStats(ctx, second, &sdnlb.StatsPart{ID: "p2", Node: "a"}), sdnlb.ECONFLICT, "", `"a"`)
		assertStatsParts(t, db, p)
	})
	t.Run("ErrNoID", func(t *testing.T) {
		ctx, db := mustSetup(t)
		mustJoin(t, db, node("a"))
		assertError(t, db.RecordStats(ctx, node("a"), &sdnlb.StatsPart{Node: "a"}), sdnlb.EINVALID, "", "id")
	})
	t.Run("Sweep", func(t *testing.T) {
		// The rows of members and VIPs deleted from the configuration go
		// with the next sweep, even while a part still lists them.
		ctx, db := mustSetup(t)
		vips, members := statsConfig(t, ctx, db, 2)
		a := node("a")
		mustJoin(t, db, a)
		p := &sdnlb.StatsPart{ID: "pa", Node: "a",
			Members:  map[string]sdnlb.MemberPart{members[0]: {Counts: counts(1)}, members[1]: {Counts: counts(2)}},
			VIPs:     map[string]sdnlb.VIPPart{vips[0]: {Refused: 1}, vips[1]: {Refused: 2}},
			Switches: []sdnlb.SwitchReadings{{DPID: "s1", Members: map[string]sdnlb.Counts{members[0]: readingsOf(1), members[1]: readingsOf(2)}}}}
		mustRecordStats(t, db, a, p)
		if err := lbstore.NewMemberService(db).DeleteMember(ctx, members[1]); err != nil {
			t.Fatal(err)
		}
		if err := lbstore.NewVIPService(db).DeleteVIP(ctx, vips[1], false); err != nil {
			t.Fatal(err)
		}
		mustRecordStats(t, db, a, p)
		assertStatsParts(t, db, p) // swept at most once a minute
		lbstore.SweepStatsNext(db)
		mustRecordStats(t, db, a, p)
		want := clonePart(p)
		delete(want.Members, members[1])
		delete(want.VIPs, vips[1])
		assertStatsParts(t, db, want)
		assertReadings(t, mustSwitchReadings(t, db, time.Minute, "s1")["s1"], "pa", 0, false,
			map[string]sdnlb.Counts{members[0]: readingsOf(1)})
	})
}

func TestDB_SwitchReadings(t *testing.T) {
	t.Run("Generations", func(t *testing.T) {
		// A switch's readings are replaced by a generation at least that
		// held, never by an older master's.
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 3)
		a, b := node("a"), node("b")
		mustJoin(t, db, a, b)
		m0, m1, m2 := members[0], members[1], members[2]
		record := func(n sdnlb.ClusterNode, part string, generation uint64, readings map[string]sdnlb.Counts) {
			t.Helper()
			mustRecordStats(t, db, n, &sdnlb.StatsPart{ID: part, Node: n.ID,
				Switches: []sdnlb.SwitchReadings{{DPID: "s1", Generation: generation, Members: readings}}})
		}
		assertS1 := func(part string, generation uint64, readings map[string]sdnlb.Counts) {
			t.Helper()
			assertReadings(t, mustSwitchReadings(t, db, time.Minute, "s1", "s2")["s1"], part, generation, false, readings)
		}
		fromA := map[string]sdnlb.Counts{m0: readingsOf(1), m1: readingsOf(2)}
		record(a, "pa", 5, fromA)
		assertS1("pa", 5, fromA)
		if got := mustSwitchReadings(t, db, time.Minute, "s2", "s3"); len(got) != 0 {
			t.Fatalf("readings of switches never read: %+v", got)
		}
		record(b, "pb", 3, map[string]sdnlb.Counts{m0: readingsOf(9)})
		assertS1("pa", 5, fromA)

		// b masters it now: its readings replace a's whole.
		fromB := map[string]sdnlb.Counts{m0: readingsOf(10), m2: readingsOf(30)}
		record(b, "pb", 7, fromB)
		assertS1("pb", 7, fromB)
		// b again, same generation.
		fromB = map[string]sdnlb.Counts{m0: readingsOf(11), m2: readingsOf(30)}
		record(b, "pb", 7, fromB)
		assertS1("pb", 7, fromB)
		// a, which has not read the switch since, records what it wrote.
		record(a, "pa", 5, fromA)
		assertS1("pb", 7, fromB)

		// a masters it again: what it wrote last is not what the
		// database holds, so it writes its readings whole.
		fromA = map[string]sdnlb.Counts{m0: readingsOf(4), m1: readingsOf(2)}
		record(a, "pa", 9, fromA)
		assertS1("pa", 9, fromA)
		// b's late record of the switch is refused.
		record(b, "pb", 7, map[string]sdnlb.Counts{m0: readingsOf(12), m2: readingsOf(30)})
		assertS1("pa", 9, fromA)
	})
	t.Run("Final", func(t *testing.T) {
		// Readings are final once their part no longer lists the switch,
		// lapses, is absorbed or is gone.
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 1)
		a, b, l := node("a"), node("b"), node("l")
		mustJoin(t, db, a, b, l)
		lease := mustTake(t, db, l, 0, 48*time.Hour)
		readings := map[string]sdnlb.Counts{members[0]: readingsOf(1)}
		pa := &sdnlb.StatsPart{ID: "pa", Node: "a", Switches: []sdnlb.SwitchReadings{
			{DPID: "s1", Generation: 1, Members: readings}, {DPID: "s2", Generation: 1, Members: readings}}}
		mustRecordStats(t, db, a, pa)
		mustRecordStats(t, db, b, &sdnlb.StatsPart{ID: "pb", Node: "b", Switches: []sdnlb.SwitchReadings{
			{DPID: "s3", Generation: 1, Members: readings}}})
		got := mustSwitchReadings(t, db, time.Minute, "s1", "s2", "s3")
		assertReadings(t, got["s1"], "pa", 1, false, readings)
		assertReadings(t, got["s2"], "pa", 1, false, readings)

		// a no longer masters s2.
		pa.Switches = pa.Switches[:1]
		mustRecordStats(t, db, a, pa)
		got = mustSwitchReadings(t, db, time.Minute, "s1", "s2")
		assertReadings(t, got["s1"], "pa", 1, false, readings)
		assertReadings(t, got["s2"], "pa", 1, true, readings)

		// Not recorded within live: final to a reader that says so.
		lbstore.AgeClusterTables(t, db, time.Minute)
		mustRecordStats(t, db, b, &sdnlb.StatsPart{ID: "pb", Node: "b"})
		assertReadings(t, mustSwitchReadings(t, db, 2*time.Minute, "s1")["s1"], "pa", 1, false, readings)
		assertReadings(t, mustSwitchReadings(t, db, 30*time.Second, "s1")["s1"], "pa", 1, true, readings)

		// Absorbed, and so is b's part, which stopped listing s3.
		mustRecordStats(t, db, l, &sdnlb.StatsPart{ID: "pl", Node: "l"})
		lbstore.AgeClusterTables(t, db, time.Minute)
		mustRecordStats(t, db, l, &sdnlb.StatsPart{ID: "pl", Node: "l"})
		if _, err := db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		got = mustSwitchReadings(t, db, time.Hour, "s1", "s3")
		assertReadings(t, got["s1"], "pa", 1, true, readings)
		assertReadings(t, got["s3"], "pb", 1, true, readings)

		// The tombstones gone, the readings stay.
		lbstore.AgeClusterTables(t, db, 25*time.Hour)
		lbstore.SweepStatsNext(db)
		mustRecordStats(t, db, l, &sdnlb.StatsPart{ID: "pl", Node: "l"})
		assertReadings(t, mustSwitchReadings(t, db, time.Hour, "s1")["s1"], "pa", 1, true, readings)
	})
}

func TestDB_AbsorbStats(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		ctx, db := mustSetup(t)
		vips, members := statsConfig(t, ctx, db, 3)
		m0, m1, m2 := members[0], members[1], members[2]
		a, b, l := node("a"), node("b"), node("l")
		mustJoin(t, db, a, b, l)
		lease := mustTake(t, db, l, 0, time.Hour)
		big := uint64(1) << 61
		pl := &sdnlb.StatsPart{ID: "pl", Node: "l",
			Members: map[string]sdnlb.MemberPart{m0: {Counts: counts(big), Active: 3}},
			VIPs:    map[string]sdnlb.VIPPart{vips[0]: {Refused: 1, Active: 3}}}
		pa := &sdnlb.StatsPart{ID: "pa", Node: "a",
			Members:  map[string]sdnlb.MemberPart{m0: {Counts: counts(2 * big), Active: 4}, m1: {Counts: counts(7), Active: 1}},
			VIPs:     map[string]sdnlb.VIPPart{vips[0]: {Refused: 2, Active: 4}, vips[1]: {Refused: 5}},
			Switches: []sdnlb.SwitchReadings{{DPID: "s1", Generation: 1, Members: map[string]sdnlb.Counts{m0: readingsOf(1)}}}}
		// l's part before it restarted: absorbed while still live.
		pl0 := &sdnlb.StatsPart{ID: "pl0", Node: "l", Members: map[string]sdnlb.MemberPart{m1: {Counts: counts(100), Active: 9}}}
		pb := &sdnlb.StatsPart{ID: "pb", Node: "b", Members: map[string]sdnlb.MemberPart{m2: {Counts: counts(1)}}, VIPs: map[string]sdnlb.VIPPart{}}
		mustRecordStats(t, db, a, pa)
		lbstore.AgeClusterTables(t, db, time.Minute)
		for _, p := range []*sdnlb.StatsPart{pl, pl0, pb} {
			mustRecordStats(t, db, node(p.Node), p)
		}
		got, err := db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		sum := func(cs ...sdnlb.Counts) sdnlb.Counts {
			var s sdnlb.Counts
			for _, c := range cs {
				s.Add(c)
			}
			return s
		}
		want := &sdnlb.Absorbed{Parts: []string{"pa", "pl0"},
			Members: map[string]sdnlb.Counts{m0: counts(2 * big), m1: sum(counts(7), counts(100))},
			VIPs:    map[string]uint64{vips[0]: 2, vips[1]: 5}}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("absorbed %+v\nwant     %+v", got, want)
		}
		// Active connections are not absorbed: they ended with their
		// part.
		absorbedInto := &sdnlb.StatsPart{ID: "pl", Node: "l",
			Members: map[string]sdnlb.MemberPart{m0: {Counts: sum(counts(big), counts(2*big)), Active: 3}, m1: {Counts: want.Members[m1]}},
			VIPs:    map[string]sdnlb.VIPPart{vips[0]: {Refused: 3, Active: 3}, vips[1]: {Refused: 5}}}
		assertStatsParts(t, db, absorbedInto, pb)
		assertReadings(t, mustSwitchReadings(t, db, time.Hour, "s1")["s1"], "pa", 1, true, map[string]sdnlb.Counts{m0: readingsOf(1)})
		// Nothing more to absorb.
		got, err = db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second)
		if err != nil || len(got.Parts) != 0 || len(got.Members) != 0 || len(got.VIPs) != 0 {
			t.Fatalf("second absorption: %+v, %v", got, err)
		}

		// The leader's next record holds the sums and what it counted
		// since: the store knows what the absorption wrote, so only the
		// changed rows are written (a row changed behind its back
		// stays).
		setRow(t, db, "pl", m1, 999)
		next := clonePart(absorbedInto)
		next.Members[m0] = sdnlb.MemberPart{Counts: sum(counts(big), counts(2*big), counts(1)), Active: 2}
		mustRecordStats(t, db, l, next)
		tampered := clonePart(next)
		m := tampered.Members[m1]
		m.Connections = 999
		tampered.Members[m1] = m
		assertStatsParts(t, db, tampered, pb)
	})
	t.Run("ErrLease", func(t *testing.T) {
		// Only the holder of the lease of term absorbs; otherwise
		// nothing changes.
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 1)
		a, l := node("a"), node("l")
		mustJoin(t, db, a, l)
		lease := mustTake(t, db, l, 0, time.Hour)
		pa := &sdnlb.StatsPart{ID: "pa", Node: "a", Members: map[string]sdnlb.MemberPart{members[0]: {Counts: counts(1)}}, VIPs: map[string]sdnlb.VIPPart{}}
		mustRecordStats(t, db, a, pa)
		lbstore.AgeClusterTables(t, db, time.Minute)
		pl := &sdnlb.StatsPart{ID: "pl", Node: "l", Members: map[string]sdnlb.MemberPart{}, VIPs: map[string]sdnlb.VIPPart{}}
		mustRecordStats(t, db, l, pl)
		_, err := db.AbsorbStats(ctx, "a", lease.Generation, "pl", 30*time.Second)
		assertError(t, err, sdnlb.ECONFLICT, "", `"a"`)
		_, err = db.AbsorbStats(ctx, "l", lease.Generation+1, "pl", 30*time.Second)
		assertError(t, err, sdnlb.ECONFLICT, "", `"l"`)
		lbstore.AgeClusterTables(t, db, time.Hour)
		_, err = db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second)
		assertError(t, err, sdnlb.ECONFLICT, "", `"l"`)
		assertStatsParts(t, db, pa, pl)
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		// The part absorbed into must exist, and not be absorbed.
		ctx, db := mustSetup(t)
		a, l := node("a"), node("l")
		mustJoin(t, db, a, l)
		lease := mustTake(t, db, l, 0, time.Hour)
		mustRecordStats(t, db, a, &sdnlb.StatsPart{ID: "pa", Node: "a"})
		_, err := db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second)
		assertError(t, err, sdnlb.ENOTFOUND, "", `"pl"`)
		mustRecordStats(t, db, l, &sdnlb.StatsPart{ID: "pl0", Node: "l"})
		mustRecordStats(t, db, l, &sdnlb.StatsPart{ID: "pl", Node: "l"})
		if _, err := db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		_, err = db.AbsorbStats(ctx, "l", lease.Generation, "pl0", 30*time.Second)
		assertError(t, err, sdnlb.ENOTFOUND, "", `"pl0"`)
		if got := mustStatsParts(t, db); len(got) != 2 || got["pa"] == nil || got["pl"] == nil {
			t.Fatalf("parts %v, want pa and pl", slices.Sorted(maps.Keys(got)))
		}
	})
	t.Run("Many", func(t *testing.T) {
		// Parts of members by the thousand take several statements.
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 2500)
		a, l := node("a"), node("l")
		mustJoin(t, db, a, l)
		lease := mustTake(t, db, l, 0, time.Hour)
		pa := &sdnlb.StatsPart{ID: "pa", Node: "a", Members: map[string]sdnlb.MemberPart{}}
		pl := &sdnlb.StatsPart{ID: "pl", Node: "l", Members: map[string]sdnlb.MemberPart{}, VIPs: map[string]sdnlb.VIPPart{}}
		for i, id := range members {
			pa.Members[id] = sdnlb.MemberPart{Counts: counts(uint64(i))}
			if i%2 == 0 {
				pl.Members[id] = sdnlb.MemberPart{Counts: counts(1)}
			}
		}
		mustRecordStats(t, db, a, pa)
		lbstore.AgeClusterTables(t, db, time.Minute)
		mustRecordStats(t, db, l, pl)
		got, err := db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		want := clonePart(pl)
		for id, m := range pa.Members {
			if got.Members[id] != m.Counts {
				t.Fatalf("absorbed %+v of %s, want %+v", got.Members[id], id, m.Counts)
			}
			w := want.Members[id]
			w.Add(m.Counts)
			want.Members[id] = w
		}
		assertStatsParts(t, db, want)
	})
	t.Run("ReadersSeeEveryCountOnce", func(t *testing.T) {
		// While parts are recorded and absorbed, a reader's sum over the
		// parts only grows and never passes what was counted: an
		// absorption moves counts in one snapshot, and the leader's
		// record that follows includes them.
		ctx, db := mustSetup(t)
		_, members := statsConfig(t, ctx, db, 1)
		m0 := members[0]
		l := node("l")
		mustJoin(t, db, l)
		lease := mustTake(t, db, l, 0, time.Hour)
		const rounds = 15
		pl := &sdnlb.StatsPart{ID: "pl", Node: "l", Members: map[string]sdnlb.MemberPart{m0: {Counts: counts(1)}}}
		final := pl.Members[m0].Counts
		for i := range rounds {
			final.Add(counts(uint64(i + 1))) // d<i>'s part
			final.Add(counts(1))             // the leader's two records
			final.Add(counts(1))
		}
		mustRecordStats(t, db, l, pl)

		stop := make(chan struct{})
		errs := make(chan error, 2)
		var wg, reading sync.WaitGroup
		var reads atomic.Int64
		for range 2 {
			reading.Add(1)
			wg.Go(func() {
				var last sdnlb.Counts
				for n := 0; ; n++ {
					parts, err := db.StatsParts(ctx)
					if n == 0 {
						reading.Done()
					}
					if err != nil {
						errs <- err
						return
					}
					reads.Add(1)
					var sum sdnlb.Counts
					for _, p := range parts {
						sum.Add(p.Members[m0].Counts)
					}
					if !atMost(last, sum) || !atMost(sum, final) {
						errs <- fmt.Errorf("sum over the parts %+v after %+v; at most %+v", sum, last, final)
						return
					}
					last = sum
					select {
					case <-stop:
						return
					default:
					}
				}
			})
		}
		reading.Wait()
		for i := range rounds {
			d := node(fmt.Sprintf("d%d", i))
			mustJoin(t, db, d)
			mustRecordStats(t, db, d, &sdnlb.StatsPart{ID: d.ID, Node: d.ID, Members: map[string]sdnlb.MemberPart{m0: {Counts: counts(uint64(i + 1))}}})
			lbstore.AgeClusterTables(t, db, time.Minute)
			grow(pl, m0, counts(1))
			mustRecordStats(t, db, l, pl)
			got, err := db.AbsorbStats(ctx, "l", lease.Generation, "pl", 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Parts, []string{d.ID}) {
				t.Fatalf("round %d absorbed %v", i, got.Parts)
			}
			grow(pl, m0, got.Members[m0])
			grow(pl, m0, counts(1))
			mustRecordStats(t, db, l, pl)
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		t.Logf("%d reads during %d absorptions", reads.Load(), rounds)
		assertStatsParts(t, db, &sdnlb.StatsPart{ID: "pl", Node: "l",
			Members: map[string]sdnlb.MemberPart{m0: {Counts: final}}, VIPs: map[string]sdnlb.VIPPart{}})
	})
}

// grow adds c to member's counters in p.
func grow(p *sdnlb.StatsPart, member string, c sdnlb.Counts) {
	m := p.Members[member]
	m.Add(c)
	p.Members[member] = m
}

// atMost reports whether no counter of a is above b's.
func atMost(a, b sdnlb.Counts) bool { return a.Above(b) == sdnlb.Counts{} }
