package lbstore

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.StatsPartService = (*DB)(nil)

const (
	// statsSweepEvery is how often a process sweeps the stats tables
	// (sweepStats).
	statsSweepEvery = time.Minute
	// statsTombstoneAge is how long an absorbed part's id stays refused:
	// a process paused for longer could record it again.
	statsTombstoneAge = 24 * time.Hour
)

// heldStats is a part of the stats as this process last wrote it, as the
// database holds it: the next record writes only the difference.
type heldStats struct {
	// members and vips are nil while not known (a write failed): the
	// next record writes them whole.
	members map[string]sdnlb.MemberPart
	vips    map[string]sdnlb.VIPPart
	// switches are the readings the part last wrote, by dpid.
	switches map[string]heldReadings
}

// heldReadings are the readings of a switch as a part last wrote them.
type heldReadings struct {
	generation uint64
	members    map[string]sdnlb.Counts // nil while not known
}

// forgotten is h once a write of it failed: what the database holds is
// not known, but the switches the part may have written are kept, so
// that a record that no longer lists them releases them.
func (h *heldStats) forgotten() *heldStats {
	f := &heldStats{switches: map[string]heldReadings{}}
	for dpid, r := range h.switches {
		f.switches[dpid] = heldReadings{generation: r.generation}
	}
	return f
}

// counters is a table of counters with a row per owner (a part, or a
// switch) and item (a member, or a VIP).
type counters[V comparable] struct {
	table, owner, item string
	// columns hold the counters; an absorption adds up the first
	// cumulative of them and leaves the others (active) be.
	columns    []string
	cumulative int
	row        func(V) []uint64 // the columns' values
	value      func([]uint64) V
}

var memberCounters = &counters[sdnlb.MemberPart]{
	table: "stats_members", owner: "part_id", item: "member_id",
	columns:    []string{"connections", "packets_in", "packets_out", "bytes_in", "bytes_out", "opened", "closed", "active"},
	cumulative: 7,
	row: func(m sdnlb.MemberPart) []uint64 {
		return []uint64{m.Connections, m.PacketsIn, m.PacketsOut, m.BytesIn, m.BytesOut, m.Opened, m.Closed, m.Active}
	},
	value: func(r []uint64) sdnlb.MemberPart {
		return sdnlb.MemberPart{Counts: sdnlb.Counts{Connections: r[0], PacketsIn: r[1], PacketsOut: r[2],
			BytesIn: r[3], BytesOut: r[4], Opened: r[5], Closed: r[6]}, Active: r[7]}
	},
}

var vipCounters = &counters[sdnlb.VIPPart]{
	table: "stats_vips", owner: "part_id", item: "vip_id",
	columns:    []string{"refused", "active"},
	cumulative: 1,
	row:        func(v sdnlb.VIPPart) []uint64 { return []uint64{v.Refused, v.Active} },
	value:      func(r []uint64) sdnlb.VIPPart { return sdnlb.VIPPart{Refused: r[0], Active: r[1]} },
}

// readingCounters are the switches' readings; Connections is not read
// from a switch, so it is not kept.
var readingCounters = &counters[sdnlb.Counts]{
	table: "stats_switch_members", owner: "dpid", item: "member_id",
	columns: []string{"packets_in", "packets_out", "bytes_in", "bytes_out", "opened", "closed"},
	row: func(c sdnlb.Counts) []uint64 {
		return []uint64{c.PacketsIn, c.PacketsOut, c.BytesIn, c.BytesOut, c.Opened, c.Closed}
	},
	value: func(r []uint64) sdnlb.Counts {
		return sdnlb.Counts{PacketsIn: r[0], PacketsOut: r[1], BytesIn: r[2], BytesOut: r[3], Opened: r[4], Closed: r[5]}
	},
}

// rowsOf are one owner's rows: held is what the database holds (nil when
// not known: then every row of the owner is rewritten), want what it
// should.
type rowsOf[V comparable] struct {
	owner      string
	held, want map[string]V
}

// write brings each owner's rows from held to want: it writes the rows
// new or changed and deletes those gone, in item order (so that two
// writers lock shared rows in one order), itemsPerStatement rows a
// statement.
func (c *counters[V]) write(ctx context.Context, db *DB, tx *sql.Tx, owners ...rowsOf[V]) error {
	var whole, set, drop []any
	for _, o := range owners {
		if o.held == nil {
			whole = append(whole, o.owner)
		}
		var changed, gone []string
		for id, v := range o.want {
			if was, ok := o.held[id]; !ok || was != v {
				changed = append(changed, id)
			}
		}
		for id := range o.held {
			if _, ok := o.want[id]; !ok {
				gone = append(gone, id)
			}
		}
		slices.Sort(changed)
		slices.Sort(gone)
		for _, id := range changed {
			set = append(set, o.owner, id)
			for _, n := range c.row(o.want[id]) {
				set = append(set, int64(n))
			}
		}
		for _, id := range gone {
			drop = append(drop, o.owner, id)
		}
	}
	for owners := range chunks(whole, 1) {
		if _, err := tx.ExecContext(ctx, db.stats.Rebind(`DELETE FROM `+c.table+` WHERE `+c.owner+` IN (`+placeholders(len(owners), "?")+`)`),
			owners...); err != nil {
			return fmt.Errorf("replace %s: %w", c.table, err)
		}
	}
	updates := make([]string, len(c.columns))
	for i, col := range c.columns {
		updates[i] = col + " = excluded." + col
	}
	perRow := 2 + len(c.columns)
	for rows := range chunks(set, perRow) {
		if _, err := tx.ExecContext(ctx, db.stats.Rebind(`INSERT INTO `+c.table+` (`+c.owner+`, `+c.item+`, `+strings.Join(c.columns, ", ")+`)
			VALUES `+placeholders(len(rows)/perRow, "("+placeholders(perRow, "?")+")")+`
			ON CONFLICT (`+c.owner+`, `+c.item+`) DO UPDATE SET `+strings.Join(updates, ", ")), rows...); err != nil {
			return fmt.Errorf("write %s: %w", c.table, err)
		}
	}
	for rows := range chunks(drop, 2) {
		if _, err := tx.ExecContext(ctx, db.stats.Rebind(`DELETE FROM `+c.table+`
			WHERE (`+c.owner+`, `+c.item+`) IN (VALUES `+placeholders(len(rows)/2, "(?, ?)")+`)`), rows...); err != nil {
			return fmt.Errorf("delete %s: %w", c.table, err)
		}
	}
	return nil
}

// read calls f with each row that joinWhere (which names the table t)
// selects.
func (c *counters[V]) read(ctx context.Context, tx *Tx, joinWhere string, args []any, f func(owner, item string, v V)) error {
	rows, err := tx.QueryxContext(ctx, `SELECT t.`+c.owner+`, t.`+c.item+`, t.`+strings.Join(c.columns, ", t.")+`
		FROM `+c.table+` t `+joinWhere, args...)
	if err != nil {
		return fmt.Errorf("read %s: %w", c.table, err)
	}
	defer rows.Close()
	var owner, item string
	stored := make([]int64, len(c.columns))
	dest := []any{&owner, &item}
	for i := range stored {
		dest = append(dest, &stored[i])
	}
	values := make([]uint64, len(c.columns))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read %s: %w", c.table, err)
		}
		for i, n := range stored {
			values[i] = uint64(n)
		}
		f(owner, item, c.value(values))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", c.table, err)
	}
	return nil
}

// absorb adds the cumulative counters of the rows of parts to the rows
// of into, inserting those into lacks, and deletes the rows of parts. It
// returns the sums it added, by item, the other counters 0.
func (c *counters[V]) absorb(ctx context.Context, db *DB, tx *sql.Tx, into string, parts []string) (map[string]V, error) {
	cumulative := c.columns[:c.cumulative]
	sums := map[string][]uint64{}
	selected := make([]string, len(cumulative))
	for i, col := range cumulative {
		selected[i] = "CAST(SUM(" + col + ") AS BIGINT)"
	}
	ids := make([]any, len(parts))
	for i, id := range parts {
		ids[i] = id
	}
	for ids := range chunks(ids, 1) {
		if err := c.sum(ctx, db, tx, `SELECT `+c.item+`, `+strings.Join(selected, ", ")+` FROM `+c.table+`
			WHERE `+c.owner+` IN (`+placeholders(len(ids), "?")+`) GROUP BY `+c.item, ids, sums); err != nil {
			return nil, err
		}
	}
	var set []any
	for _, item := range slices.Sorted(maps.Keys(sums)) {
		set = append(set, into, item)
		for _, n := range sums[item] {
			set = append(set, int64(n))
		}
	}
	added := make([]string, len(cumulative))
	for i, col := range cumulative {
		added[i] = col + " = " + c.table + "." + col + " + excluded." + col
	}
	row := "(?, ?, " + placeholders(len(cumulative), "?") + strings.Repeat(", 0", len(c.columns)-c.cumulative) + ")"
	perRow := 2 + len(cumulative)
	for rows := range chunks(set, perRow) {
		if _, err := tx.ExecContext(ctx, db.stats.Rebind(`INSERT INTO `+c.table+` (`+c.owner+`, `+c.item+`, `+strings.Join(c.columns, ", ")+`)
			VALUES `+placeholders(len(rows)/perRow, row)+`
			ON CONFLICT (`+c.owner+`, `+c.item+`) DO UPDATE SET `+strings.Join(added, ", ")), rows...); err != nil {
			return nil, fmt.Errorf("add to %s: %w", c.table, err)
		}
	}
	for ids := range chunks(ids, 1) {
		if _, err := tx.ExecContext(ctx, db.stats.Rebind(`DELETE FROM `+c.table+` WHERE `+c.owner+` IN (`+placeholders(len(ids), "?")+`)`),
			ids...); err != nil {
			return nil, fmt.Errorf("delete %s: %w", c.table, err)
		}
	}
	out := make(map[string]V, len(sums))
	for item, s := range sums {
		out[item] = c.value(append(s, make([]uint64, len(c.columns)-c.cumulative)...))
	}
	return out, nil
}

// sum adds, to sums by item, the sums query selects after each item.
func (c *counters[V]) sum(ctx context.Context, db *DB, tx *sql.Tx, query string, args []any, sums map[string][]uint64) error {
	rows, err := tx.QueryContext(ctx, db.stats.Rebind(query), args...)
	if err != nil {
		return fmt.Errorf("sum %s: %w", c.table, err)
	}
	defer rows.Close()
	var item string
	stored := make([]int64, c.cumulative)
	dest := []any{&item}
	for i := range stored {
		dest = append(dest, &stored[i])
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("sum %s: %w", c.table, err)
		}
		s := sums[item]
		if s == nil {
			s = make([]uint64, c.cumulative)
			sums[item] = s
		}
		for i, n := range stored {
			s[i] += uint64(n)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sum %s: %w", c.table, err)
	}
	return nil
}

// RecordStats records part, by the database clock, writing only what
// changed since this process last recorded it: the part's time, the rows
// of its members and VIPs that are new, changed or gone, and the
// readings of its switches that changed. A part this process has not
// recorded yet, or whose last record failed, is written whole. Then, at
// most once a minute, it sweeps the stats tables (sweepStats).
//
// The part's row is written first: a record and an absorption of the
// same part take turns on it, so an absorbed part records nothing. A
// process whose node id another took over records nothing: the node's
// row is read, not locked, as by RecordTopology.
func (db *DB) RecordStats(ctx context.Context, node sdnlb.ClusterNode, part *sdnlb.StatsPart) error {
	if part == nil || part.ID == "" {
		return sdnlb.Errorf(sdnlb.EINVALID, "a part of the stats needs an id")
	}
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	held, recorded := db.statsHeld[part.ID]
	if !recorded {
		held = &heldStats{}
	}
	next := &heldStats{members: cloneOrEmpty(part.Members), vips: cloneOrEmpty(part.VIPs)}
	absorbed := false
	err := inTx(ctx, db.stats, func(tx *sql.Tx) error {
		var mine bool
		if err := tx.QueryRowContext(ctx, db.stats.Rebind(`SELECT EXISTS (SELECT 1 FROM cluster_nodes WHERE id = ? AND instance = ?)`),
			node.ID, node.Instance).Scan(&mine); err != nil {
			return fmt.Errorf("read node: %w", err)
		}
		if !mine {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "node id %q is in use by another sdnlb process", node.ID)
		}
		// Once recorded, the part's row is only updated: should it have
		// gone (a tombstone older than a day), the part was absorbed.
		query, args := `UPDATE stats_parts SET recorded_at = {now} WHERE id = ? AND NOT absorbed`, []any{part.ID}
		if !recorded {
			query, args = `INSERT INTO stats_parts (id, node_id, recorded_at) VALUES (?, ?, {now})
				ON CONFLICT (id) DO UPDATE SET recorded_at = excluded.recorded_at WHERE NOT stats_parts.absorbed`, []any{part.ID, node.ID}
		}
		res, err := tx.ExecContext(ctx, db.withNow(query), args...)
		if err != nil {
			return fmt.Errorf("record part: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("record part: %w", err)
		} else if n == 0 {
			absorbed = true
			return sdnlb.Errorf(sdnlb.ECONFLICT, "part %q of the stats was absorbed: record a new one", part.ID)
		}
		if err := memberCounters.write(ctx, db, tx, rowsOf[sdnlb.MemberPart]{part.ID, held.members, next.members}); err != nil {
			return err
		}
		if err := vipCounters.write(ctx, db, tx, rowsOf[sdnlb.VIPPart]{part.ID, held.vips, next.vips}); err != nil {
			return err
		}
		next.switches, err = db.writeReadings(ctx, tx, part.ID, held.switches, part.Switches)
		return err
	})
	switch {
	case absorbed:
		delete(db.statsHeld, part.ID)
	case err != nil && recorded:
		db.statsHeld[part.ID] = held.forgotten()
	case err == nil:
		db.statsHeld[part.ID] = next
	}
	if err != nil {
		return unavailable(ctx, err)
	}
	return unavailable(ctx, db.sweepStats(ctx))
}

func cloneOrEmpty[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return maps.Clone(m)
}

// writeReadings writes the readings of the switches of partID that
// differ from held, each only while no larger generation is held: a
// switch's member rows are diffed while partID wrote them last, and
// rewritten whole when another part did. The switches of held that
// switches no longer lists are released. It returns the readings the
// database holds of partID.
func (db *DB) writeReadings(ctx context.Context, tx *sql.Tx, partID string, held map[string]heldReadings, switches []sdnlb.SwitchReadings) (map[string]heldReadings, error) {
	want := map[string]sdnlb.SwitchReadings{}
	for _, r := range switches {
		r.Members = cloneOrEmpty(r.Members)
		want[r.DPID] = r
	}
	next := map[string]heldReadings{}
	var changed []any
	for _, dpid := range slices.Sorted(maps.Keys(want)) {
		r := want[dpid]
		if h, ok := held[dpid]; ok && h.members != nil && h.generation == r.Generation && maps.Equal(h.members, r.Members) {
			next[dpid] = h
			continue
		}
		changed = append(changed, dpid)
	}
	type writer struct {
		DPID       string `db:"dpid"`
		Part       string `db:"part_id"`
		Generation int64  `db:"generation"`
	}
	writers := map[string]writer{}
	for dpids := range chunks(changed, 1) {
		rows, err := tx.QueryContext(ctx, db.stats.Rebind(`SELECT dpid, part_id, generation FROM stats_switches
			WHERE dpid IN (`+placeholders(len(dpids), "?")+`)`), dpids...)
		if err != nil {
			return nil, fmt.Errorf("read readings: %w", err)
		}
		for rows.Next() {
			var w writer
			if err := rows.Scan(&w.DPID, &w.Part, &w.Generation); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read readings: %w", err)
			}
			writers[w.DPID] = w
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read readings: %w", err)
		}
	}
	var heads []any
	for _, dpid := range changed {
		r := want[dpid.(string)]
		if w, ok := writers[r.DPID]; ok && uint64(w.Generation) > r.Generation {
			continue // a later master's
		}
		heads = append(heads, r.DPID, partID, int64(r.Generation))
	}
	var owners []rowsOf[sdnlb.Counts]
	for rows := range chunks(heads, 3) {
		// The condition is checked on the row as it is when this
		// statement locks it: a later master that wrote since the read
		// above still wins.
		res, err := tx.QueryContext(ctx, db.withNow(`INSERT INTO stats_switches (dpid, part_id, generation, recorded_at)
			VALUES `+placeholders(len(rows)/3, "(?, ?, ?, {now})")+`
			ON CONFLICT (dpid) DO UPDATE SET part_id = excluded.part_id, generation = excluded.generation,
				released = FALSE, recorded_at = excluded.recorded_at
			WHERE stats_switches.generation <= excluded.generation
			RETURNING dpid`), rows...)
		if err != nil {
			return nil, fmt.Errorf("write readings: %w", err)
		}
		for res.Next() {
			var dpid string
			if err := res.Scan(&dpid); err != nil {
				res.Close()
				return nil, fmt.Errorf("write readings: %w", err)
			}
			var written map[string]sdnlb.Counts // nil: rewrite them whole
			if w, ok := writers[dpid]; ok && w.Part == partID {
				written = held[dpid].members
			}
			owners = append(owners, rowsOf[sdnlb.Counts]{dpid, written, want[dpid].Members})
			next[dpid] = heldReadings{generation: want[dpid].Generation, members: want[dpid].Members}
		}
		if err := res.Close(); err != nil {
			return nil, fmt.Errorf("write readings: %w", err)
		}
	}
	if err := readingCounters.write(ctx, db, tx, owners...); err != nil {
		return nil, err
	}
	var released []any
	for _, dpid := range slices.Sorted(maps.Keys(held)) {
		if _, ok := want[dpid]; !ok {
			released = append(released, dpid)
		}
	}
	for dpids := range chunks(released, 1) {
		if _, err := tx.ExecContext(ctx, db.stats.Rebind(`UPDATE stats_switches SET released = TRUE
			WHERE part_id = ? AND dpid IN (`+placeholders(len(dpids), "?")+`)`), append([]any{partID}, dpids...)...); err != nil {
			return nil, fmt.Errorf("release readings: %w", err)
		}
	}
	return next, nil
}

// sweepStats deletes, at most once every statsSweepEvery, the rows of
// members and VIPs the configuration no longer has, and the tombstones
// older than statsTombstoneAge. The configuration's writes do not touch
// the stats tables, so a node that still counts a member deleted a
// moment ago may write its row again: the next sweep takes it. Each
// statement commits on its own.
func (db *DB) sweepStats(ctx context.Context) error {
	if time.Since(db.statsSweptAt) < statsSweepEvery {
		return nil
	}
	for _, q := range []string{
		`DELETE FROM stats_members WHERE NOT EXISTS (SELECT 1 FROM members m WHERE m.id = stats_members.member_id)`,
		`DELETE FROM stats_vips WHERE NOT EXISTS (SELECT 1 FROM vips v WHERE v.id = stats_vips.vip_id)`,
		`DELETE FROM stats_switch_members WHERE NOT EXISTS (SELECT 1 FROM members m WHERE m.id = stats_switch_members.member_id)`,
	} {
		if _, err := db.stats.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sweep the stats: %w", err)
		}
	}
	if _, err := db.stats.ExecContext(ctx, db.withNow(`DELETE FROM stats_parts WHERE absorbed AND recorded_at < {now} - ?`),
		statsTombstoneAge.Microseconds()); err != nil {
		return fmt.Errorf("sweep the stats: %w", err)
	}
	db.statsSweptAt = time.Now()
	return nil
}

// StatsParts reads, in one snapshot, every part not absorbed, without
// its switches' readings.
func (db *DB) StatsParts(ctx context.Context) ([]*sdnlb.StatsPart, error) {
	return readTx(ctx, db, func(tx *Tx) ([]*sdnlb.StatsPart, error) {
		var heads []struct {
			ID         string `db:"id"`
			Node       string `db:"node_id"`
			RecordedAt int64  `db:"recorded_at"`
		}
		if err := tx.SelectContext(ctx, &heads, `SELECT id, node_id, recorded_at FROM stats_parts WHERE NOT absorbed ORDER BY id`); err != nil {
			return nil, fmt.Errorf("read parts of the stats: %w", err)
		}
		parts := make([]*sdnlb.StatsPart, len(heads))
		byID := make(map[string]*sdnlb.StatsPart, len(heads))
		for i, h := range heads {
			parts[i] = &sdnlb.StatsPart{ID: h.ID, Node: h.Node, RecordedAt: time.UnixMicro(h.RecordedAt).UTC(),
				Members: map[string]sdnlb.MemberPart{}, VIPs: map[string]sdnlb.VIPPart{}}
			byID[h.ID] = parts[i]
		}
		live := `JOIN stats_parts p ON p.id = t.part_id WHERE NOT p.absorbed`
		if err := memberCounters.read(ctx, tx, live, nil, func(part, member string, m sdnlb.MemberPart) {
			byID[part].Members[member] = m
		}); err != nil {
			return nil, err
		}
		if err := vipCounters.read(ctx, tx, live, nil, func(part, vip string, v sdnlb.VIPPart) {
			byID[part].VIPs[vip] = v
		}); err != nil {
			return nil, err
		}
		return parts, nil
	})
}

// SwitchReadings reads, in one snapshot, the readings of each switch of
// dpids that has some, in dpid order. They are final once their part
// released the switch, was absorbed (or its tombstone went), or was not
// recorded within live.
func (db *DB) SwitchReadings(ctx context.Context, dpids []string, live time.Duration) ([]sdnlb.SwitchReadingsOf, error) {
	return readTx(ctx, db, func(tx *Tx) ([]sdnlb.SwitchReadingsOf, error) {
		ids := make([]any, len(dpids))
		for i, dpid := range dpids {
			ids[i] = dpid
		}
		byDPID := map[string]*sdnlb.SwitchReadingsOf{}
		for ids := range chunks(ids, 1) {
			var heads []struct {
				DPID       string `db:"dpid"`
				Part       string `db:"part_id"`
				Generation int64  `db:"generation"`
				Final      bool   `db:"final"`
			}
			if err := tx.SelectContext(ctx, &heads, db.withNow(`SELECT s.dpid, s.part_id, s.generation,
					(s.released OR p.id IS NULL OR p.absorbed OR p.recorded_at < {now} - ?) AS final
				FROM stats_switches s LEFT JOIN stats_parts p ON p.id = s.part_id
				WHERE s.dpid IN (`+placeholders(len(ids), "?")+`)`), append([]any{live.Microseconds()}, ids...)...); err != nil {
				return nil, fmt.Errorf("read readings: %w", err)
			}
			for _, h := range heads {
				byDPID[h.DPID] = &sdnlb.SwitchReadingsOf{
					SwitchReadings: sdnlb.SwitchReadings{DPID: h.DPID, Generation: uint64(h.Generation), Final: h.Final, Members: map[string]sdnlb.Counts{}},
					Part:           h.Part}
			}
			if err := readingCounters.read(ctx, tx, `WHERE t.dpid IN (`+placeholders(len(ids), "?")+`)`, ids,
				func(dpid, member string, c sdnlb.Counts) { byDPID[dpid].Members[member] = c }); err != nil {
				return nil, err
			}
		}
		out := make([]sdnlb.SwitchReadingsOf, 0, len(byDPID))
		for _, dpid := range slices.Sorted(maps.Keys(byDPID)) {
			out = append(out, *byDPID[dpid])
		}
		return out, nil
	})
}

// AbsorbStats, in one transaction, adds the parts not recorded within
// live, and nodeID's other parts, to the part into, deletes their rows
// and keeps their ids as tombstones; their switches' readings stay. Each
// part absorbed is marked by one conditional statement, which a record
// or another absorption of the part waits for: a part is absorbed once,
// and never once recorded within live. The lease is checked first, and
// its row locked last, so that a takeover waits only for the commit and
// a deposed leader commits nothing. What this process holds of into
// gets the sums too, so that its next record, which includes them,
// writes only what changed.
func (db *DB) AbsorbStats(ctx context.Context, nodeID string, term uint64, into string, live time.Duration) (*sdnlb.Absorbed, error) {
	db.statsMu.Lock()
	defer db.statsMu.Unlock()
	held, recorded := db.statsHeld[into]
	if recorded {
		// Until the absorption commits, what the database holds of into
		// is not known.
		db.statsHeld[into] = held.forgotten()
	}
	out := &sdnlb.Absorbed{Members: map[string]sdnlb.Counts{}, VIPs: map[string]uint64{}}
	err := inTx(ctx, db.stats, func(tx *sql.Tx) error {
		var leads bool
		if err := tx.QueryRowContext(ctx, db.withNow(`SELECT EXISTS (SELECT 1 FROM cluster_lease
			WHERE id = 1 AND holder = ? AND generation = ? AND expires_at > {now})`), nodeID, int64(term)).Scan(&leads); err != nil {
			return fmt.Errorf("read lease: %w", err)
		}
		if !leads {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "node %q does not hold the lease of term %d", nodeID, term)
		}
		res, err := tx.ExecContext(ctx, db.stats.Rebind(`UPDATE stats_parts SET recorded_at = recorded_at WHERE id = ? AND NOT absorbed`), into)
		if err != nil {
			return fmt.Errorf("lock part: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("lock part: %w", err)
		} else if n == 0 {
			return sdnlb.Errorf(sdnlb.ENOTFOUND, "part %q of the stats does not exist, or was absorbed", into)
		}
		rows, err := tx.QueryContext(ctx, db.withNow(`UPDATE stats_parts SET absorbed = TRUE, recorded_at = {now}
			WHERE NOT absorbed AND id <> ? AND (recorded_at < {now} - ? OR node_id = ?)
			RETURNING id`), into, live.Microseconds(), nodeID)
		if err != nil {
			return fmt.Errorf("absorb parts: %w", err)
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("absorb parts: %w", err)
			}
			out.Parts = append(out.Parts, id)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("absorb parts: %w", err)
		}
		slices.Sort(out.Parts)
		members, err := memberCounters.absorb(ctx, db, tx, into, out.Parts)
		if err != nil {
			return err
		}
		for id, m := range members {
			out.Members[id] = m.Counts
		}
		vips, err := vipCounters.absorb(ctx, db, tx, into, out.Parts)
		if err != nil {
			return err
		}
		for id, v := range vips {
			out.VIPs[id] = v.Refused
		}
		res, err = tx.ExecContext(ctx, db.withNow(`UPDATE cluster_lease SET holder = holder
			WHERE id = 1 AND holder = ? AND generation = ? AND expires_at > {now}`), nodeID, int64(term))
		if err != nil {
			return fmt.Errorf("lock lease: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "node %q no longer holds the lease of term %d", nodeID, term)
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(ctx, err)
	}
	if recorded && held.members != nil {
		for id, c := range out.Members {
			m := held.members[id]
			m.Add(c)
			held.members[id] = m
		}
		for id, refused := range out.VIPs {
			v := held.vips[id]
			v.Refused += refused
			held.vips[id] = v
		}
		db.statsHeld[into] = held
	}
	return out, nil
}
