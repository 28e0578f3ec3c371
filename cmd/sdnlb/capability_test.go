package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// Every refused cell of the capability table, built through the whole
// service's API on a SQLite store, in each dispatch and family it covers:
// the write it names is refused with the cell's status and a JSON body
// naming its field, and the configuration is as it was before the write.
func TestCapabilities_Refusals(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	setups := 0
	for _, row := range sdnlb.Capabilities() {
		for _, cell := range row.Cells {
			if cell.Verdict != sdnlb.Refused {
				continue
			}
			for _, d := range eachOf(cell.Dispatch, sdnlb.Dispatches) {
				for _, family := range eachOf(cell.Family, []string{"IPv4", "IPv6"}) {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", row.Setting, cell.Name(), d, family), func(t *testing.T) {
						setups++
						s := cellSetup{main: m, n: setups, family: family}
						status, body, before := s.build(t, cell, d)
						if status == 0 {
							t.Fatalf("every write accepted, want %d naming %s", cell.Status, cell.Field)
						}
						if status != cell.Status || refusedField(body) != cell.Field {
							t.Errorf("refused with %d %s, want %d naming %s", status, body, cell.Status, cell.Field)
						}
						if after := mustExport(t, m); after != before {
							t.Errorf("the refused write changed the configuration:\nbefore %s\nafter  %s", before, after)
						}
					})
				}
			}
		}
	}
}

// Validation refuses nothing the table does not: every method, in each
// dispatch and family, under each VIP and pool setting a cell names (and
// none), is refused exactly where a refused cell of the table says so,
// and on a field one of those cells names.
func TestCapabilities_NoUnlistedRefusal(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	var refusals []sdnlb.Cell
	vipSettings := []map[string]any{{}}
	poolSettings := []map[string]any{{}}
	for _, row := range sdnlb.Capabilities() {
		for _, cell := range row.Cells {
			c := cell.Config
			if cell.Verdict == sdnlb.Refused && c.Members == 0 && c.Member == nil {
				refusals = append(refusals, cell)
			}
			if len(c.VIP) > 0 && !slices.ContainsFunc(vipSettings, func(v map[string]any) bool { return sameJSON(v, c.VIP) }) {
				vipSettings = append(vipSettings, c.VIP)
			}
			pool := maps.Clone(c.Pool)
			delete(pool, "lb_method")
			if len(pool) > 0 && !slices.ContainsFunc(poolSettings, func(p map[string]any) bool { return sameJSON(p, pool) }) {
				poolSettings = append(poolSettings, pool)
			}
		}
	}
	n := 0
	for _, method := range sdnlb.LBMethods {
		for _, d := range sdnlb.Dispatches {
			for _, family := range []string{"IPv4", "IPv6"} {
				for _, vip := range vipSettings {
					for _, extra := range poolSettings {
						n++
						pool := maps.Clone(extra)
						pool["lb_method"] = method
						config := sdnlb.CellConfig{VIP: vip, Pool: pool}
						predicted := map[string]bool{}
						for _, r := range refusals {
							if (r.Dispatch == "" || r.Dispatch == d) && (r.Family == "" || r.Family == family) &&
								within(r.Config.VIP, vip) && within(r.Config.Pool, pool) {
								predicted[r.Field] = true
							}
						}
						s := cellSetup{main: m, n: n, family: family}
						status, body, _ := s.build(t, sdnlb.Cell{Dispatch: d, Verdict: sdnlb.Honoured, Config: config}, d)
						switch {
						case status == 0 && len(predicted) > 0:
							t.Errorf("%s VIP %v pool %v (%s): accepted, where the table refuses it on %v", d, vip, pool, family, slices.Sorted(maps.Keys(predicted)))
						case status != 0 && !predicted[refusedField(body)]:
							t.Errorf("%s VIP %v pool %v (%s): refused with %d %s, which no refused cell of the table says", d, vip, pool, family, status, body)
						}
					}
				}
			}
		}
	}
	t.Logf("%d configurations against %d refused cells", n, len(refusals))
}

// cellSetup builds a cell's configuration through the API: its VIP, its
// pool, then its members, each at addresses of its own (setup n).
type cellSetup struct {
	main   *Main
	n      int
	family string
}

// build writes the cell's configuration with dispatch d and stops at the
// first write refused: its status and body, and the configuration as
// exported before it; status 0 when every write was accepted.
func (s cellSetup) build(t *testing.T, cell sdnlb.Cell, d sdnlb.Dispatch) (status int, body, before string) {
	t.Helper()
	c := cell.Config
	vip := with(c.VIP, map[string]any{"name": fmt.Sprintf("cell%d", s.n), "address": s.addr(0, 100), "protocol": "TCP", "port": 80})
	before = mustExport(t, s.main)
	var created object
	if status, body = s.write(t, "/v1/vips", vip, &created); status != 0 {
		return status, body, before
	}
	pool := with(c.Pool, map[string]any{"name": fmt.Sprintf("cell%d", s.n), "vip_id": created.ID, "protocol": "TCP"})
	if cell.NamesDispatch() || cell.Dispatch == "" {
		pool["dispatch"] = d
	}
	before = mustExport(t, s.main)
	if status, body = s.write(t, "/v1/pools", pool, &created); status != 0 {
		return status, body, before
	}
	members := max(c.Members, 1)
	if c.Members == 0 && c.Member == nil {
		members = 0 // a cell about the VIP or the pool: no member needed
	}
	for i := range members {
		if i == members-1 {
			before = mustExport(t, s.main)
		}
		member := map[string]any{"pool_id": created.ID, "address": s.addr(i/250+1, i%250+1), "port": 80}
		if i == 0 {
			member = with(c.Member, member)
		}
		if status, body = s.write(t, "/v1/members", member, nil); status != 0 {
			if i != members-1 {
				t.Fatalf("member %d of %d refused: %d %s", i+1, members, status, body)
			}
			return status, body, before
		}
	}
	return 0, "", ""
}

// write posts fields to path: 0 when created (decoded into out), else the
// status and the body of the refusal.
func (s cellSetup) write(t *testing.T, path string, fields map[string]any, out any) (int, string) {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	status, body := send(t, s.main, http.MethodPost, path, "application/json", string(b))
	switch {
	case status == http.StatusCreated:
		if out != nil {
			if err := json.Unmarshal([]byte(body), out); err != nil {
				t.Fatalf("POST %s: %v: %s", path, err, body)
			}
		}
		return 0, ""
	case status >= 500:
		t.Fatalf("POST %s %s: %d %s", path, b, status, body)
	}
	return status, body
}

// addr is host x.y of the setup's own subnet in its family.
func (s cellSetup) addr(x, y int) string {
	if s.family == "IPv6" {
		return fmt.Sprintf("fd00:%x:%x::%x", s.n, x, y)
	}
	return fmt.Sprintf("10.%d.%d.%d", s.n%250, s.n/250*4+x, y)
}

// refusedField is the field an API error body names.
func refusedField(body string) string {
	var e struct {
		Error struct{ Field string }
	}
	_ = json.Unmarshal([]byte(body), &e)
	return e.Error.Field
}

// eachOf is the values a cell's axis covers: its value, or every one when
// it names none.
func eachOf[T ~string](v T, every []T) []T {
	if v == "" {
		return every
	}
	return []T{v}
}

// with returns fields with the cell's settings over them.
func with(settings, fields map[string]any) map[string]any {
	out := maps.Clone(fields)
	maps.Copy(out, settings)
	return out
}

// within reports whether every setting of part has the same value in
// whole.
func within(part, whole map[string]any) bool {
	for k, v := range part {
		if w, ok := whole[k]; !ok || !sameJSON(v, w) {
			return false
		}
	}
	return true
}

func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(x) == string(y)
}
