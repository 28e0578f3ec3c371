package lbstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.TopologyPartService = (*DB)(nil)

// hostSeenStep is how finely a recorded host's last_seen is kept: a host
// the controller keeps seeing rewrites its row once a minute, not at
// every record.
const hostSeenStep = time.Minute

// itemsPerStatement bounds the rows one statement writes or deletes,
// within both databases' limits on parameters.
const itemsPerStatement = 1000

// topologyItem names an item of a node's part: its kind and its id within
// the kind.
type topologyItem struct{ kind, id string }

// topologyItems is a part as its rows hold it: each item's body, by item.
type topologyItems map[topologyItem]string

// The kinds of items.
const (
	itemSwitch = "switch"
	itemLink   = "link"
	itemHost   = "host"
	itemLoad   = "load"
	itemPath   = "path"
)

func endID(e sdnlb.LinkEnd) string { return e.DPID + " " + strconv.FormatUint(uint64(e.Port), 10) }

// encodePart returns the rows of part.
func encodePart(part *sdnlb.TopologyPart) (topologyItems, error) {
	items := topologyItems{}
	var errs []error
	add := func(kind, id string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", kind, id, err))
		}
		items[topologyItem{kind, id}] = string(b)
	}
	for _, s := range part.Switches {
		add(itemSwitch, s.DPID, s)
	}
	for _, l := range part.Links {
		add(itemLink, endID(l.Src)+" "+endID(l.Dst), l)
	}
	for _, h := range part.Hosts {
		seen := *h
		seen.LastSeen = h.LastSeen.Truncate(hostSeenStep).UTC()
		add(itemHost, h.DPID+" "+h.Address, &seen)
	}
	for _, ld := range part.Loads {
		add(itemLoad, endID(ld.Port), ld)
	}
	for _, p := range part.Paths {
		add(itemPath, p.From+" "+p.To, p)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("encode the part of the topology: %w", err)
	}
	return items, nil
}

// decodeItem adds the item of kind that body holds to part; a kind this
// version does not know (a newer node's) is left out.
func decodeItem(part *sdnlb.TopologyPart, kind, body string) error {
	switch kind {
	case itemSwitch:
		return appendDecoded(&part.Switches, body)
	case itemLink:
		return appendDecoded(&part.Links, body)
	case itemHost:
		return appendDecoded(&part.Hosts, body)
	case itemLoad:
		return appendDecoded(&part.Loads, body)
	case itemPath:
		return appendDecoded(&part.Paths, body)
	}
	return nil
}

func appendDecoded[T any](list *[]T, body string) error {
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

// RecordTopology records part as node's, by the database clock, writing
// only what changed since this process last recorded node's part: the
// part's time, and the items that are new, changed or gone. The part is
// written whole when this process has not recorded it yet, or it lapsed
// (not recorded within live, so another node may have removed it). Then
// the parts nobody recorded within live are removed, in a statement of
// their own: a record that waits for another node's never holds its own
// part's row meanwhile. A nil part removes node's.
//
// A process whose node id another took over records nothing: the node's
// row is read, not locked, so that a long record never holds up the
// elector's write of the row.
func (db *DB) RecordTopology(ctx context.Context, node sdnlb.ClusterNode, part *sdnlb.TopologyPart, live time.Duration) error {
	var items topologyItems
	if part != nil {
		var err error
		if items, err = encodePart(part); err != nil {
			return err
		}
	}
	db.recordedMu.Lock()
	defer db.recordedMu.Unlock()
	held, known := db.recorded[node.ID]
	// Until this record commits, what the database holds is not known.
	delete(db.recorded, node.ID)
	err := inTx(ctx, db.topology, func(tx *sql.Tx) error {
		var mine bool
		if err := tx.QueryRowContext(ctx, db.topology.Rebind(`SELECT EXISTS (SELECT 1 FROM cluster_nodes WHERE id = ? AND instance = ?)`),
			node.ID, node.Instance).Scan(&mine); err != nil {
			return fmt.Errorf("read node: %w", err)
		}
		if !mine {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "node id %q is in use by another sdnlb process", node.ID)
		}
		if part == nil {
			if _, err := tx.ExecContext(ctx, db.topology.Rebind(`DELETE FROM topology_parts WHERE node_id = ?`), node.ID); err != nil {
				return fmt.Errorf("forget part: %w", err)
			}
			return nil
		}
		res, err := tx.ExecContext(ctx, db.withNow(`UPDATE topology_parts SET seen_at = {now} WHERE node_id = ? AND seen_at >= {now} - ?`),
			node.ID, live.Microseconds())
		if err != nil {
			return fmt.Errorf("refresh part: %w", err)
		}
		refreshed, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("refresh part: %w", err)
		}
		if refreshed == 0 || !known {
			if _, err := tx.ExecContext(ctx, db.topology.Rebind(`DELETE FROM topology_parts WHERE node_id = ?`), node.ID); err != nil {
				return fmt.Errorf("replace part: %w", err)
			}
			if _, err := tx.ExecContext(ctx, db.withNow(`INSERT INTO topology_parts (node_id, seen_at) VALUES (?, {now})`), node.ID); err != nil {
				return fmt.Errorf("replace part: %w", err)
			}
			held = nil
		}
		return db.writeItems(ctx, tx, node.ID, held, items)
	})
	if err != nil {
		return unavailable(ctx, err)
	}
	if part != nil {
		db.recorded[node.ID] = items
	}
	if _, err := db.topology.ExecContext(ctx, db.withNow(`DELETE FROM topology_parts WHERE seen_at < {now} - ?`), live.Microseconds()); err != nil {
		return unavailable(ctx, fmt.Errorf("remove lapsed parts: %w", err))
	}
	return nil
}

// writeItems brings node's items from held, what the database holds, to
// items: it writes those new or changed and deletes those gone.
func (db *DB) writeItems(ctx context.Context, tx *sql.Tx, nodeID string, held, items topologyItems) error {
	var set, drop []any
	for it, body := range items {
		if was, ok := held[it]; !ok || was != body {
			set = append(set, nodeID, it.kind, it.id, body)
		}
	}
	for it := range held {
		if _, ok := items[it]; !ok {
			drop = append(drop, it.kind, it.id)
		}
	}
	for rows := range chunks(set, 4) {
		if _, err := tx.ExecContext(ctx, db.topology.Rebind(`INSERT INTO topology_items (node_id, kind, id, body)
			VALUES `+placeholders(len(rows)/4, "(?, ?, ?, ?)")+`
			ON CONFLICT (node_id, kind, id) DO UPDATE SET body = excluded.body`), rows...); err != nil {
			return fmt.Errorf("write items: %w", err)
		}
	}
	for rows := range chunks(drop, 2) {
		if _, err := tx.ExecContext(ctx, db.topology.Rebind(`DELETE FROM topology_items
			WHERE node_id = ? AND (kind, id) IN (VALUES `+placeholders(len(rows)/2, "(?, ?)")+`)`),
			append([]any{nodeID}, rows...)...); err != nil {
			return fmt.Errorf("delete items: %w", err)
		}
	}
	return nil
}

// chunks yields args, perRow of them a row, itemsPerStatement rows at a
// time.
func chunks(args []any, perRow int) iter.Seq[[]any] {
	return func(yield func([]any) bool) {
		for n := itemsPerStatement * perRow; len(args) > 0; args = args[min(n, len(args)):] {
			if !yield(args[:min(n, len(args))]) {
				return
			}
		}
	}
}

// TopologyParts reads, in one snapshot, the parts recorded within live,
// by node id.
func (db *DB) TopologyParts(ctx context.Context, live time.Duration) ([]*sdnlb.TopologyPart, error) {
	return readTx(ctx, db, func(tx *Tx) ([]*sdnlb.TopologyPart, error) {
		var rows []struct {
			Node string `db:"node_id"`
			Kind string `db:"kind"`
			Body string `db:"body"`
		}
		if err := tx.SelectContext(ctx, &rows, db.withNow(`SELECT i.node_id, i.kind, i.body
			FROM topology_items i JOIN topology_parts p ON p.node_id = i.node_id
			WHERE p.seen_at >= {now} - ? ORDER BY i.node_id`), live.Microseconds()); err != nil {
			return nil, fmt.Errorf("read parts of the topology: %w", err)
		}
		var parts []*sdnlb.TopologyPart
		for _, r := range rows {
			if len(parts) == 0 || parts[len(parts)-1].Node != r.Node {
				parts = append(parts, &sdnlb.TopologyPart{Node: r.Node})
			}
			if err := decodeItem(parts[len(parts)-1], r.Kind, r.Body); err != nil {
				return nil, fmt.Errorf("read the part of node %q: %s: %w", r.Node, r.Kind, err)
			}
		}
		return parts, nil
	})
}
