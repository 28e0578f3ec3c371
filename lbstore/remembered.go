package lbstore

import (
	"context"
	"slices"

	"github.com/sdnlb/sdnlb"
)

// While the database cannot be reached, reads answer from the
// configuration LoadConfig read last, which the controller and the health
// monitors reload after every change, instead of failing. Such an answer
// misses what other processes wrote while this one was cut off; writes
// still answer EUNAVAILABLE. Before any LoadConfig there is nothing to
// answer from, and reads fail too.

// remember keeps cfg as the fallback of reads, unless a newer one is kept.
func (db *DB) remember(cfg *sdnlb.Config) {
	for {
		old := db.remembered.Load()
		if old != nil && old.Seq > cfg.Seq {
			return
		}
		if db.remembered.CompareAndSwap(old, cfg) {
			return
		}
	}
}

// readOrRemember runs read in a read transaction; when the database is
// unavailable it answers with recall from the remembered configuration.
func readOrRemember[T any](ctx context.Context, db *DB, read func(*Tx) (T, error), recall func(*sdnlb.Config) (T, error)) (T, error) {
	v, err := readTx(ctx, db, read)
	if sdnlb.ErrorCode(err) != sdnlb.EUNAVAILABLE {
		return v, err
	}
	cfg := db.remembered.Load()
	if cfg == nil {
		return v, err
	}
	return recall(cfg)
}

// recallByID copies the object with id out of objs, which are sorted by
// id as every list the store reads.
func recallByID[T any](objs []*T, idOf func(*T) string, kind, id string) (*T, error) {
	i, found := slices.BinarySearchFunc(objs, id, func(o *T, id string) int {
		switch s := idOf(o); {
		case s < id:
			return -1
		case s > id:
			return 1
		}
		return 0
	})
	if !found {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "%s %q not found", kind, id)
	}
	c := *objs[i]
	return &c, nil
}

// recallPage copies out the page of objs that keep selects, as the list
// queries page: by id, after page.After, at most page.Limit.
func recallPage[T any](objs []*T, idOf func(*T) string, keep func(*T) bool, page sdnlb.Page) []*T {
	out := []*T{}
	for _, o := range objs {
		if page.After != "" && idOf(o) <= page.After || !keep(o) {
			continue
		}
		c := *o
		out = append(out, &c)
		if page.Limit > 0 && len(out) == page.Limit {
			break
		}
	}
	return out
}

// is reports whether a filter field is unset or equal to v.
func is(want *string, v string) bool { return want == nil || *want == v }

// ref reports whether a filter field on a reference is unset or names v,
// which, as in SQL, an empty reference (NULL) never matches.
func ref(want *string, v string) bool { return want == nil || v != "" && *want == v }

// has reports whether a filter field is unset or among ids.
func has(want *string, ids []string) bool { return want == nil || slices.Contains(ids, *want) }

func vipID(v *sdnlb.VIP) string         { return v.ID }
func poolID(p *sdnlb.Pool) string       { return p.ID }
func memberID(m *sdnlb.Member) string   { return m.ID }
func monitorID(m *sdnlb.Monitor) string { return m.ID }

func recallVIPs(cfg *sdnlb.Config, f sdnlb.VIPFilter) []*sdnlb.VIP {
	return recallPage(cfg.VIPs, vipID, func(v *sdnlb.VIP) bool { return is(f.Address, v.Address) && ref(f.PoolID, v.PoolID) }, f.Page)
}

func recallPools(cfg *sdnlb.Config, f sdnlb.PoolFilter) []*sdnlb.Pool {
	return recallPage(cfg.Pools, poolID, func(p *sdnlb.Pool) bool { return ref(f.VIPID, p.VIPID) && has(f.MonitorID, p.MonitorIDs) }, f.Page)
}

func recallMembers(cfg *sdnlb.Config, f sdnlb.MemberFilter) []*sdnlb.Member {
	return recallPage(cfg.Members, memberID, func(m *sdnlb.Member) bool { return ref(f.PoolID, m.PoolID) && is(f.Address, m.Address) }, f.Page)
}

func recallMonitors(cfg *sdnlb.Config, f sdnlb.MonitorFilter) []*sdnlb.Monitor {
	return recallPage(cfg.Monitors, monitorID, func(m *sdnlb.Monitor) bool { return has(f.PoolID, m.PoolIDs) }, f.Page)
}
