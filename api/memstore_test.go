package api

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// memStore is a small in-memory implementation of the sdnlb services, so
// that route tests can run whole scenarios (the Floodlight fixture) without
// SQLite. Like lbstore it is the one place that validates: writes take the
// store's path (validate with the domain's Validate and Apply, check the
// rules that span objects, then store), so a refused write changes
// nothing. It copies objects in and out so that handlers cannot change what
// is stored.
type memStore struct {
	mu       sync.Mutex
	nextID   int
	vips     *table[sdnlb.VIP]
	pools    *table[sdnlb.Pool]
	members  *table[sdnlb.Member]
	monitors *table[sdnlb.Monitor]
	assoc    map[[2]string]bool // pool id, monitor id
}

func newMemStore() *memStore {
	s := &memStore{}
	s.vips = &table[sdnlb.VIP]{store: s, kind: "VIP",
		id: func(v *sdnlb.VIP) *string { return &v.ID }, validate: (*sdnlb.VIP).Validate, read: s.readVIP}
	s.pools = &table[sdnlb.Pool]{store: s, kind: "pool",
		id: func(p *sdnlb.Pool) *string { return &p.ID }, validate: (*sdnlb.Pool).Validate, read: s.readPool}
	s.members = &table[sdnlb.Member]{store: s, kind: "member",
		id: func(m *sdnlb.Member) *string { return &m.ID }, validate: (*sdnlb.Member).Validate, read: s.readMember}
	s.monitors = &table[sdnlb.Monitor]{store: s, kind: "monitor",
		id: func(m *sdnlb.Monitor) *string { return &m.ID }, validate: (*sdnlb.Monitor).Validate, read: s.readMonitor}
	_ = s.Clear(context.Background())
	return s
}

// mustMemStore returns a memStore holding objects, created in order.
func mustMemStore(tb testing.TB, objects ...any) *memStore {
	tb.Helper()
	s := newMemStore()
	ctx := context.Background()
	for _, o := range objects {
		var err error
		switch o := o.(type) {
		case *sdnlb.VIP:
			err = s.CreateVIP(ctx, o)
		case *sdnlb.Pool:
			err = s.CreatePool(ctx, o)
		case *sdnlb.Member:
			err = s.CreateMember(ctx, o)
		case *sdnlb.Monitor:
			err = s.CreateMonitor(ctx, o)
		default:
			tb.Fatalf("a memStore holds no %T", o)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// server returns a Server whose services are all s.
func (s *memStore) server() *Server {
	return &Server{VIPService: s, PoolService: s, MemberService: s, MonitorService: s, ConfigService: s}
}

func (s *memStore) newID(id string) string {
	if id != "" {
		return id
	}
	s.nextID++
	return fmt.Sprintf("gen-%04d", s.nextID)
}

// table holds the objects of one kind. The methods that take store.mu are
// the exported services' entry points; the checks they run read the other
// tables' rows directly, under the same lock.
type table[T any] struct {
	store    *memStore
	kind     string
	rows     map[string]*T
	id       func(*T) *string
	validate func(*T) error // the domain's Validate
	read     func(*T) *T    // a copy with the fields the store derives on read
}

func (t *table[T]) notFound(id string) error {
	return sdnlb.Errorf(sdnlb.ENOTFOUND, "no %s %q", t.kind, id)
}

func (t *table[T]) find(id string) (*T, error) {
	t.store.mu.Lock()
	defer t.store.mu.Unlock()
	row, ok := t.rows[id]
	if !ok {
		return nil, t.notFound(id)
	}
	return t.read(row), nil
}

// list returns the page of the objects match selects, sorted by id.
func (t *table[T]) list(p sdnlb.Page, match func(*T) bool) []*T {
	t.store.mu.Lock()
	defer t.store.mu.Unlock()
	var all []*T
	for _, row := range t.rows {
		if o := t.read(row); match(o) {
			all = append(all, o)
		}
	}
	sort.Slice(all, func(i, j int) bool { return *t.id(all[i]) < *t.id(all[j]) })
	out := []*T{}
	for _, o := range all {
		if p.After != "" && *t.id(o) <= p.After {
			continue
		}
		if p.Limit > 0 && len(out) == p.Limit {
			break
		}
		out = append(out, o)
	}
	return out
}

// insert is the store's create path: validate, refuse a taken id or give
// one, check the rules that span objects (check also sets what the store
// derives on create), store a copy, and hand back what was stored.
func (t *table[T]) insert(obj *T, check func(*T) error) error {
	t.store.mu.Lock()
	defer t.store.mu.Unlock()
	row := *obj
	if err := t.validate(&row); err != nil {
		return err
	}
	id := t.id(&row)
	if _, taken := t.rows[*id]; taken {
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "%s %q exists", t.kind, *id)
	}
	*id = t.store.newID(*id)
	if err := check(&row); err != nil {
		return err
	}
	t.rows[*id] = &row
	*obj = *t.read(&row)
	return nil
}

// update is the store's update path: find, apply the update, validate,
// check the rules that span objects, store.
func (t *table[T]) update(id string, apply func(*T) error, check func(*T) error) (*T, error) {
	t.store.mu.Lock()
	defer t.store.mu.Unlock()
	row, ok := t.rows[id]
	if !ok {
		return nil, t.notFound(id)
	}
	next := t.read(row)
	if err := apply(next); err != nil {
		return nil, err
	}
	if err := t.validate(next); err != nil {
		return nil, err
	}
	if err := check(next); err != nil {
		return nil, err
	}
	t.rows[id] = next
	return t.read(next), nil
}

// remove is the store's delete path: find, then let dependants refuse or
// go first (nil when nothing depends on the kind), then delete.
func (t *table[T]) remove(id string, dependants func() error) error {
	t.store.mu.Lock()
	defer t.store.mu.Unlock()
	if _, ok := t.rows[id]; !ok {
		return t.notFound(id)
	}
	if dependants != nil {
		if err := dependants(); err != nil {
			return err
		}
	}
	delete(t.rows, id)
	return nil
}

func noCheck[T any](*T) error { return nil }

// VIPs

func (s *memStore) readVIP(v *sdnlb.VIP) *sdnlb.VIP {
	out := *v
	out.PoolID = ""
	for _, p := range s.pools.rows {
		if p.VIPID == v.ID {
			out.PoolID = p.ID
		}
	}
	return &out
}

// memberOffPort returns a member of p that p cannot use for v because of
// its port, as lbstore's findMemberOffPort does; nil when none.
func (s *memStore) memberOffPort(p *sdnlb.Pool, v *sdnlb.VIP) *sdnlb.Member {
	for _, m := range s.members.rows {
		if m.PoolID == p.ID && !p.Forwarding.AllowsMemberPort(v.Protocol, v.Port, m.Port) {
			return m
		}
	}
	return nil
}

// memberOfOtherFamily returns a member of p whose address is not of v's
// family, as lbstore's checkMembersFamily does; nil when none.
func (s *memStore) memberOfOtherFamily(p *sdnlb.Pool, v *sdnlb.VIP) *sdnlb.Member {
	for _, m := range s.members.rows {
		if m.PoolID == p.ID && sdnlb.IsIPv6(m.Address) != sdnlb.IsIPv6(v.Address) {
			return m
		}
	}
	return nil
}

// checkVIP checks what lbstore's checkVIPListener, checkVIPNotOnMember and
// linkVIPPool check, and then links the pool.
func (s *memStore) checkVIP(v *sdnlb.VIP) error {
	for _, m := range s.members.rows {
		if m.Address == v.Address {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "%s is the address of member %s of pool %s", v.Address, m.ID, m.PoolID)
		}
	}
	for _, o := range s.vips.rows {
		if o.ID != v.ID && o.Address == v.Address && o.Protocol == v.Protocol && (!v.Protocol.HasPorts() || o.Port == v.Port) {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "VIP %s has the same address, protocol and port", o.ID)
		}
		if o.ID != v.ID && o.Address == v.Address && (o.Protocol == sdnlb.ProtocolAny || v.Protocol == sdnlb.ProtocolAny) {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "VIP %s shares the address, and an ANY VIP is alone on it", o.ID)
		}
	}
	if v.PoolID != "" {
		p, ok := s.pools.rows[v.PoolID]
		switch {
		case !ok:
			return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "no pool %q", v.PoolID)
		case p.VIPID != "" && p.VIPID != v.ID:
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "pool_id", "pool %s serves VIP %s", p.ID, p.VIPID)
		case p.Protocol != v.Protocol:
			return sdnlb.FieldErrorf(sdnlb.EINVALID, "protocol", "pool %s is %s but the VIP is %s", p.ID, p.Protocol, v.Protocol)
		}
		if m := s.memberOffPort(p, v); m != nil {
			field := "port"
			if p.VIPID != v.ID {
				field = "pool_id" // the write links the pool
			}
			return sdnlb.FieldErrorf(sdnlb.EINVALID, field, "DSR pool %s has member %s on port %d, not the VIP's %d", p.ID, m.ID, m.Port, v.Port)
		}
		if m := s.memberOfOtherFamily(p, v); m != nil {
			field := "address"
			if p.VIPID != v.ID {
				field = "pool_id"
			}
			return sdnlb.FieldErrorf(sdnlb.EINVALID, field, "member %s of pool %s is %s; the VIP is %s", m.ID, p.ID, m.Address, v.Address)
		}
	}
	for _, p := range s.pools.rows {
		if p.VIPID == v.ID {
			p.VIPID = ""
		}
	}
	if v.PoolID != "" {
		s.pools.rows[v.PoolID].VIPID = v.ID
	}
	return nil
}

func (s *memStore) FindVIPByID(ctx context.Context, id string) (*sdnlb.VIP, error) {
	return s.vips.find(id)
}

func (s *memStore) FindVIPs(ctx context.Context, f sdnlb.VIPFilter) ([]*sdnlb.VIP, error) {
	return s.vips.list(f.Page, func(v *sdnlb.VIP) bool { return f.Address == nil || *f.Address == v.Address }), nil
}

func (s *memStore) CreateVIP(ctx context.Context, v *sdnlb.VIP) error {
	return s.vips.insert(v, func(v *sdnlb.VIP) error {
		v.MAC, v.Status = sdnlb.VIPMAC(v.ID), sdnlb.VIPDown
		return s.checkVIP(v)
	})
}

func (s *memStore) UpdateVIP(ctx context.Context, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
	return s.vips.update(id, func(v *sdnlb.VIP) error { upd.Apply(v); return nil }, s.checkVIP)
}

func (s *memStore) DeleteVIP(ctx context.Context, id string, cascade bool) error {
	return s.vips.remove(id, func() error {
		for _, p := range s.pools.rows {
			if p.VIPID == id {
				if !cascade {
					return sdnlb.Errorf(sdnlb.ECONFLICT, "pool %s serves VIP %s", p.ID, id)
				}
				s.deletePool(p.ID)
			}
		}
		return nil
	})
}

// Pools

func (s *memStore) readPool(p *sdnlb.Pool) *sdnlb.Pool {
	out := *p
	out.MonitorIDs = s.associated(0, p.ID)
	return &out
}

// associated returns, sorted and never nil, the other ends of the
// associations whose end (0 the pool, 1 the monitor) is id.
func (s *memStore) associated(end int, id string) []string {
	ids := []string{}
	for k := range s.assoc {
		if k[end] == id {
			ids = append(ids, k[1-end])
		}
	}
	slices.Sort(ids)
	return ids
}

// checkPool checks what lbstore's checkPoolVIP checks.
func (s *memStore) checkPool(p *sdnlb.Pool) error {
	if p.VIPID == "" {
		return nil
	}
	v, ok := s.vips.rows[p.VIPID]
	if !ok {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "vip_id", "no VIP %q", p.VIPID)
	}
	for _, o := range s.pools.rows {
		if o.ID != p.ID && o.VIPID == p.VIPID {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "vip_id", "pool %s serves VIP %s", o.ID, p.VIPID)
		}
	}
	if v.Protocol != p.Protocol {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "protocol", "pool protocol %s differs from VIP protocol %s", p.Protocol, v.Protocol)
	}
	if m := s.memberOffPort(p, v); m != nil {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "forwarding", "DSR pool %s has member %s on port %d, not the VIP's %d", p.ID, m.ID, m.Port, v.Port)
	}
	if m := s.memberOfOtherFamily(p, v); m != nil {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "vip_id", "member %s of pool %s is %s; VIP %s is %s", m.ID, p.ID, m.Address, v.ID, v.Address)
	}
	return nil
}

func (s *memStore) FindPoolByID(ctx context.Context, id string) (*sdnlb.Pool, error) {
	return s.pools.find(id)
}

func (s *memStore) FindPools(ctx context.Context, f sdnlb.PoolFilter) ([]*sdnlb.Pool, error) {
	return s.pools.list(f.Page, func(p *sdnlb.Pool) bool {
		return (f.VIPID == nil || *f.VIPID == p.VIPID) && (f.MonitorID == nil || slices.Contains(p.MonitorIDs, *f.MonitorID))
	}), nil
}

func (s *memStore) CreatePool(ctx context.Context, p *sdnlb.Pool) error {
	return s.pools.insert(p, s.checkPool)
}

func (s *memStore) UpdatePool(ctx context.Context, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error) {
	return s.pools.update(id, func(p *sdnlb.Pool) error { upd.Apply(p); return nil }, s.checkPool)
}

func (s *memStore) deletePool(id string) {
	for mid, m := range s.members.rows {
		if m.PoolID == id {
			delete(s.members.rows, mid)
		}
	}
	for k := range s.assoc {
		if k[0] == id {
			delete(s.assoc, k)
		}
	}
	delete(s.pools.rows, id)
}

func (s *memStore) DeletePool(ctx context.Context, id string, cascade bool) error {
	return s.pools.remove(id, func() error {
		for _, m := range s.members.rows {
			if m.PoolID == id && !cascade {
				return sdnlb.Errorf(sdnlb.ECONFLICT, "pool %s has member %s", id, m.ID)
			}
		}
		s.deletePool(id)
		return nil
	})
}

// checkAssociation checks what lbstore's checkAssociation checks.
func (s *memStore) checkAssociation(poolID, monitorID string) error {
	if _, ok := s.pools.rows[poolID]; !ok {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "no pool %q", poolID)
	}
	if _, ok := s.monitors.rows[monitorID]; !ok {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "monitor_id", "no monitor %q", monitorID)
	}
	return nil
}

func (s *memStore) AssociateMonitor(ctx context.Context, poolID, monitorID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkAssociation(poolID, monitorID); err != nil {
		return err
	}
	s.assoc[[2]string{poolID, monitorID}] = true
	return nil
}

func (s *memStore) DissociateMonitor(ctx context.Context, poolID, monitorID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkAssociation(poolID, monitorID); err != nil {
		return err
	}
	k := [2]string{poolID, monitorID}
	if !s.assoc[k] {
		return sdnlb.Errorf(sdnlb.ENOTFOUND, "monitor %q is not associated with pool %q", monitorID, poolID)
	}
	delete(s.assoc, k)
	return nil
}

// Members

func (s *memStore) readMember(m *sdnlb.Member) *sdnlb.Member {
	out := *m
	out.Status = out.EffectiveStatus()
	return &out
}

// checkMember checks what lbstore's initialHealth, checkMemberEndpoint,
// checkMemberNotOnVIP and checkMemberPort check.
func (s *memStore) checkMember(m *sdnlb.Member) error {
	p, ok := s.pools.rows[m.PoolID]
	if !ok {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "no pool %q", m.PoolID)
	}
	for _, v := range s.vips.rows {
		if v.Address == m.Address {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "%s is the address of vip %s", m.Address, v.ID)
		}
	}
	for _, o := range s.members.rows {
		if o.ID != m.ID && o.PoolID == m.PoolID && o.Address == m.Address && o.Port == m.Port {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "member %s has the same address and port in pool %s", o.ID, m.PoolID)
		}
	}
	if v, ok := s.vips.rows[p.VIPID]; ok && sdnlb.IsIPv6(v.Address) != sdnlb.IsIPv6(m.Address) {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "address", "%s is %s; the pool's VIP %s (%s) is %s",
			m.Address, sdnlb.Family(m.Address), v.ID, v.Address, sdnlb.Family(v.Address))
	}
	if v, ok := s.vips.rows[p.VIPID]; ok && !p.Forwarding.AllowsMemberPort(v.Protocol, v.Port, m.Port) {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "port", "DSR pool %s serves VIP %s on port %d: the port must be 0 or %d, not %d", p.ID, v.ID, v.Port, v.Port, m.Port)
	}
	return nil
}

func (s *memStore) FindMemberByID(ctx context.Context, id string) (*sdnlb.Member, error) {
	return s.members.find(id)
}

func (s *memStore) FindMembers(ctx context.Context, f sdnlb.MemberFilter) ([]*sdnlb.Member, error) {
	return s.members.list(f.Page, func(m *sdnlb.Member) bool {
		return (f.PoolID == nil || *f.PoolID == m.PoolID) && (f.Address == nil || *f.Address == m.Address)
	}), nil
}

// CreateMember starts a member DOWN when an admin-up monitor checks its
// pool, as lbstore's initialHealth does.
func (s *memStore) CreateMember(ctx context.Context, m *sdnlb.Member) error {
	return s.members.insert(m, func(m *sdnlb.Member) error {
		if err := s.checkMember(m); err != nil {
			return err
		}
		m.Health = sdnlb.MemberHealth{Status: sdnlb.MemberNoMonitor}
		for k := range s.assoc {
			if k[0] == m.PoolID && s.monitors.rows[k[1]].AdminStateUp {
				m.Health.Status = sdnlb.MemberDown
			}
		}
		return nil
	})
}

func (s *memStore) UpdateMember(ctx context.Context, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error) {
	return s.members.update(id, func(m *sdnlb.Member) error {
		if err := upd.Validate(m); err != nil {
			return err
		}
		upd.Apply(m)
		return nil
	}, s.checkMember)
}

func (s *memStore) DeleteMember(ctx context.Context, id string) error {
	return s.members.remove(id, nil)
}

// Monitors

func (s *memStore) readMonitor(m *sdnlb.Monitor) *sdnlb.Monitor {
	out := *m
	out.PoolIDs = s.associated(1, m.ID)
	return &out
}

func (s *memStore) FindMonitorByID(ctx context.Context, id string) (*sdnlb.Monitor, error) {
	return s.monitors.find(id)
}

func (s *memStore) FindMonitors(ctx context.Context, f sdnlb.MonitorFilter) ([]*sdnlb.Monitor, error) {
	return s.monitors.list(f.Page, func(m *sdnlb.Monitor) bool { return f.PoolID == nil || slices.Contains(m.PoolIDs, *f.PoolID) }), nil
}

func (s *memStore) CreateMonitor(ctx context.Context, m *sdnlb.Monitor) error {
	return s.monitors.insert(m, noCheck)
}

func (s *memStore) UpdateMonitor(ctx context.Context, id string, upd sdnlb.MonitorUpdate) (*sdnlb.Monitor, error) {
	return s.monitors.update(id, func(m *sdnlb.Monitor) error { upd.Apply(m); return nil }, noCheck)
}

// UpdateAllMonitors changes all monitors or, when one result is invalid,
// none, as lbstore's one transaction does.
func (s *memStore) UpdateAllMonitors(ctx context.Context, upd sdnlb.MonitorUpdate) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string]*sdnlb.Monitor{}
	changed := 0
	for id, cur := range s.monitors.rows {
		m := *cur
		upd.Apply(&m)
		if err := m.Validate(); err != nil {
			return 0, sdnlb.FieldErrorf(sdnlb.ErrorCode(err), sdnlb.ErrorField(err), "monitor %s: %s", id, sdnlb.ErrorMessage(err))
		}
		if !reflect.DeepEqual(&m, cur) {
			changed++
		}
		next[id] = &m
	}
	s.monitors.rows = next
	return changed, nil
}

func (s *memStore) DeleteMonitor(ctx context.Context, id string, cascade bool) error {
	return s.monitors.remove(id, func() error {
		for k := range s.assoc {
			if k[1] == id {
				if !cascade {
					return sdnlb.Errorf(sdnlb.ECONFLICT, "pool %s uses monitor %s", k[0], id)
				}
				delete(s.assoc, k)
			}
		}
		return nil
	})
}

// Config

func (s *memStore) LoadConfig(ctx context.Context) (*sdnlb.Config, error) {
	vips, _ := s.FindVIPs(ctx, sdnlb.VIPFilter{})
	pools, _ := s.FindPools(ctx, sdnlb.PoolFilter{})
	members, _ := s.FindMembers(ctx, sdnlb.MemberFilter{})
	monitors, _ := s.FindMonitors(ctx, sdnlb.MonitorFilter{})
	return &sdnlb.Config{VIPs: vips, Pools: pools, Members: members, Monitors: monitors}, nil
}

func (s *memStore) ExportConfig(ctx context.Context, export func(*sdnlb.ConfigStream) error) error {
	cfg, _ := s.LoadConfig(ctx)
	return export(&sdnlb.ConfigStream{ETag: sdnlb.ConfigETag(cfg),
		VIPs: all(cfg.VIPs), Pools: all(cfg.Pools), Members: all(cfg.Members), Monitors: all(cfg.Monitors)})
}

func (s *memStore) Clear(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vips.rows, s.pools.rows, s.members.rows = map[string]*sdnlb.VIP{}, map[string]*sdnlb.Pool{}, map[string]*sdnlb.Member{}
	s.monitors.rows, s.assoc = map[string]*sdnlb.Monitor{}, map[[2]string]bool{}
	return nil
}
