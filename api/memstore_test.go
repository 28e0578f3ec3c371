package api

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/sdnlb/sdnlb"
)

// memStore is a small in-memory implementation of the sdnlb services with
// the store's cross-object rules, so that route tests can run whole
// scenarios (the Floodlight fixture) without SQLite. It copies objects in
// and out so that handlers cannot change what is stored.
type memStore struct {
	mu       sync.Mutex
	nextID   int
	vips     map[string]*sdnlb.VIP
	pools    map[string]*sdnlb.Pool
	members  map[string]*sdnlb.Member
	monitors map[string]*sdnlb.Monitor
	assoc    map[[2]string]bool // pool id, monitor id
}

func newMemStore() *memStore {
	s := &memStore{}
	_ = s.Clear(context.Background())
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

func notFound(kind, id string) error { return sdnlb.Errorf(sdnlb.ENOTFOUND, "no %s %q", kind, id) }

// page sorts by id and applies the keyset page.
func page[T any](items []T, id func(T) string, p sdnlb.Page) []T {
	sort.Slice(items, func(i, j int) bool { return id(items[i]) < id(items[j]) })
	out := []T{}
	for _, it := range items {
		if p.After != "" && id(it) <= p.After {
			continue
		}
		if p.Limit > 0 && len(out) == p.Limit {
			break
		}
		out = append(out, it)
	}
	return out
}

// VIPs

func (s *memStore) readVIP(v *sdnlb.VIP) *sdnlb.VIP {
	out := *v
	out.PoolID = ""
	for _, p := range s.pools {
		if p.VIPID == v.ID {
			out.PoolID = p.ID
		}
	}
	return &out
}

func (s *memStore) FindVIPByID(ctx context.Context, id string) (*sdnlb.VIP, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.vips[id]
	if !ok {
		return nil, notFound("VIP", id)
	}
	return s.readVIP(v), nil
}

func (s *memStore) FindVIPs(ctx context.Context, f sdnlb.VIPFilter) ([]*sdnlb.VIP, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*sdnlb.VIP
	for _, v := range s.vips {
		if f.Address == nil || *f.Address == v.Address {
			out = append(out, s.readVIP(v))
		}
	}
	return page(out, func(v *sdnlb.VIP) string { return v.ID }, f.Page), nil
}

func (s *memStore) checkVIP(v *sdnlb.VIP) error {
	if err := v.Validate(); err != nil {
		return err
	}
	for _, o := range s.vips {
		if o.ID != v.ID && o.Address == v.Address && o.Protocol == v.Protocol && o.Port == v.Port {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "VIP %s has the same address, protocol and port", o.ID)
		}
	}
	if v.PoolID != "" {
		p, ok := s.pools[v.PoolID]
		if !ok {
			return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "no pool %q", v.PoolID)
		}
		if p.VIPID != "" && p.VIPID != v.ID {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "pool_id", "pool %s serves VIP %s", p.ID, p.VIPID)
		}
	}
	return nil
}

func (s *memStore) CreateVIP(ctx context.Context, v *sdnlb.VIP) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vips[v.ID]; ok {
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "VIP %q exists", v.ID)
	}
	v.ID = s.newID(v.ID)
	if err := s.checkVIP(v); err != nil {
		return err
	}
	v.MAC, v.Status = sdnlb.VIPMAC(v.ID), sdnlb.VIPDown
	stored := *v
	s.vips[v.ID] = &stored
	if v.PoolID != "" {
		s.pools[v.PoolID].VIPID = v.ID
	}
	return nil
}

func (s *memStore) UpdateVIP(ctx context.Context, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.vips[id]
	if !ok {
		return nil, notFound("VIP", id)
	}
	next := *s.readVIP(cur)
	upd.Apply(&next)
	if err := s.checkVIP(&next); err != nil {
		return nil, err
	}
	if upd.PoolID != nil {
		for _, p := range s.pools {
			if p.VIPID == id {
				p.VIPID = ""
			}
		}
		if next.PoolID != "" {
			s.pools[next.PoolID].VIPID = id
		}
	}
	s.vips[id] = &next
	return s.readVIP(&next), nil
}

func (s *memStore) DeleteVIP(ctx context.Context, id string, cascade bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.vips[id]; !ok {
		return notFound("VIP", id)
	}
	for _, p := range s.pools {
		if p.VIPID == id {
			if !cascade {
				return sdnlb.Errorf(sdnlb.ECONFLICT, "pool %s serves VIP %s", p.ID, id)
			}
			s.deletePool(p.ID)
		}
	}
	delete(s.vips, id)
	return nil
}

// Pools

func (s *memStore) readPool(p *sdnlb.Pool) *sdnlb.Pool {
	out := *p
	out.MonitorIDs = []string{}
	for k := range s.assoc {
		if k[0] == p.ID {
			out.MonitorIDs = append(out.MonitorIDs, k[1])
		}
	}
	slices.Sort(out.MonitorIDs)
	return &out
}

func (s *memStore) FindPoolByID(ctx context.Context, id string) (*sdnlb.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pools[id]
	if !ok {
		return nil, notFound("pool", id)
	}
	return s.readPool(p), nil
}

func (s *memStore) FindPools(ctx context.Context, f sdnlb.PoolFilter) ([]*sdnlb.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*sdnlb.Pool
	for _, p := range s.pools {
		if (f.VIPID == nil || *f.VIPID == p.VIPID) && (f.MonitorID == nil || s.assoc[[2]string{p.ID, *f.MonitorID}]) {
			out = append(out, s.readPool(p))
		}
	}
	return page(out, func(p *sdnlb.Pool) string { return p.ID }, f.Page), nil
}

func (s *memStore) checkPool(p *sdnlb.Pool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.VIPID == "" {
		return nil
	}
	v, ok := s.vips[p.VIPID]
	if !ok {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "vip_id", "no VIP %q", p.VIPID)
	}
	for _, o := range s.pools {
		if o.ID != p.ID && o.VIPID == p.VIPID {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "vip_id", "pool %s serves VIP %s", o.ID, p.VIPID)
		}
	}
	if v.Protocol != p.Protocol {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "protocol", "pool protocol %s differs from VIP protocol %s", p.Protocol, v.Protocol)
	}
	return nil
}

func (s *memStore) CreatePool(ctx context.Context, p *sdnlb.Pool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pools[p.ID]; ok {
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "pool %q exists", p.ID)
	}
	p.ID = s.newID(p.ID)
	if err := s.checkPool(p); err != nil {
		return err
	}
	stored := *p
	s.pools[p.ID] = &stored
	return nil
}

func (s *memStore) UpdatePool(ctx context.Context, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.pools[id]
	if !ok {
		return nil, notFound("pool", id)
	}
	next := *cur
	upd.Apply(&next)
	if err := s.checkPool(&next); err != nil {
		return nil, err
	}
	s.pools[id] = &next
	return s.readPool(&next), nil
}

func (s *memStore) deletePool(id string) {
	for mid, m := range s.members {
		if m.PoolID == id {
			delete(s.members, mid)
		}
	}
	for k := range s.assoc {
		if k[0] == id {
			delete(s.assoc, k)
		}
	}
	delete(s.pools, id)
}

func (s *memStore) DeletePool(ctx context.Context, id string, cascade bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pools[id]; !ok {
		return notFound("pool", id)
	}
	for _, m := range s.members {
		if m.PoolID == id && !cascade {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "pool %s has member %s", id, m.ID)
		}
	}
	s.deletePool(id)
	return nil
}

func (s *memStore) AssociateMonitor(ctx context.Context, poolID, monitorID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pools[poolID]; !ok {
		return notFound("pool", poolID)
	}
	if _, ok := s.monitors[monitorID]; !ok {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "monitor_id", "no monitor %q", monitorID)
	}
	s.assoc[[2]string{poolID, monitorID}] = true
	return nil
}

func (s *memStore) DissociateMonitor(ctx context.Context, poolID, monitorID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
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

func (s *memStore) FindMemberByID(ctx context.Context, id string) (*sdnlb.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.members[id]
	if !ok {
		return nil, notFound("member", id)
	}
	return s.readMember(m), nil
}

func (s *memStore) FindMembers(ctx context.Context, f sdnlb.MemberFilter) ([]*sdnlb.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*sdnlb.Member
	for _, m := range s.members {
		if (f.PoolID == nil || *f.PoolID == m.PoolID) && (f.Address == nil || *f.Address == m.Address) {
			out = append(out, s.readMember(m))
		}
	}
	return page(out, func(m *sdnlb.Member) string { return m.ID }, f.Page), nil
}

func (s *memStore) checkMember(m *sdnlb.Member) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if _, ok := s.pools[m.PoolID]; !ok {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "no pool %q", m.PoolID)
	}
	for _, o := range s.members {
		if o.ID != m.ID && o.PoolID == m.PoolID && o.Address == m.Address && o.Port == m.Port {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "member %s has the same address and port in pool %s", o.ID, m.PoolID)
		}
	}
	return nil
}

func (s *memStore) CreateMember(ctx context.Context, m *sdnlb.Member) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.members[m.ID]; ok {
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "member %q exists", m.ID)
	}
	m.ID = s.newID(m.ID)
	if err := s.checkMember(m); err != nil {
		return err
	}
	m.Health = sdnlb.MemberHealth{Status: sdnlb.MemberNoMonitor}
	for k := range s.assoc {
		if k[0] == m.PoolID {
			m.Health.Status = sdnlb.MemberDown
		}
	}
	m.Status = m.EffectiveStatus()
	stored := *m
	s.members[m.ID] = &stored
	return nil
}

func (s *memStore) UpdateMember(ctx context.Context, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.members[id]
	if !ok {
		return nil, notFound("member", id)
	}
	next := *cur
	upd.Apply(&next)
	if err := s.checkMember(&next); err != nil {
		return nil, err
	}
	s.members[id] = &next
	return s.readMember(&next), nil
}

func (s *memStore) DeleteMember(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.members[id]; !ok {
		return notFound("member", id)
	}
	delete(s.members, id)
	return nil
}

// Monitors

func (s *memStore) readMonitor(m *sdnlb.Monitor) *sdnlb.Monitor {
	out := *m
	out.PoolIDs = []string{}
	for k := range s.assoc {
		if k[1] == m.ID {
			out.PoolIDs = append(out.PoolIDs, k[0])
		}
	}
	slices.Sort(out.PoolIDs)
	return &out
}

func (s *memStore) FindMonitorByID(ctx context.Context, id string) (*sdnlb.Monitor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.monitors[id]
	if !ok {
		return nil, notFound("monitor", id)
	}
	return s.readMonitor(m), nil
}

func (s *memStore) FindMonitors(ctx context.Context, f sdnlb.MonitorFilter) ([]*sdnlb.Monitor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*sdnlb.Monitor
	for _, m := range s.monitors {
		if f.PoolID == nil || s.assoc[[2]string{*f.PoolID, m.ID}] {
			out = append(out, s.readMonitor(m))
		}
	}
	return page(out, func(m *sdnlb.Monitor) string { return m.ID }, f.Page), nil
}

func (s *memStore) CreateMonitor(ctx context.Context, m *sdnlb.Monitor) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.monitors[m.ID]; ok {
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "monitor %q exists", m.ID)
	}
	m.ID = s.newID(m.ID)
	if err := m.Validate(); err != nil {
		return err
	}
	stored := *m
	s.monitors[m.ID] = &stored
	return nil
}

func (s *memStore) UpdateMonitor(ctx context.Context, id string, upd sdnlb.MonitorUpdate) (*sdnlb.Monitor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.monitors[id]
	if !ok {
		return nil, notFound("monitor", id)
	}
	next := *cur
	upd.Apply(&next)
	if err := next.Validate(); err != nil {
		return nil, err
	}
	s.monitors[id] = &next
	return s.readMonitor(&next), nil
}

func (s *memStore) UpdateAllMonitors(ctx context.Context, upd sdnlb.MonitorUpdate) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := map[string]*sdnlb.Monitor{}
	for id, cur := range s.monitors {
		m := *cur
		upd.Apply(&m)
		if err := m.Validate(); err != nil {
			return 0, err
		}
		next[id] = &m
	}
	s.monitors = next
	return len(next), nil
}

func (s *memStore) DeleteMonitor(ctx context.Context, id string, cascade bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.monitors[id]; !ok {
		return notFound("monitor", id)
	}
	for k := range s.assoc {
		if k[1] == id {
			if !cascade {
				return sdnlb.Errorf(sdnlb.ECONFLICT, "pool %s uses monitor %s", k[0], id)
			}
			delete(s.assoc, k)
		}
	}
	delete(s.monitors, id)
	return nil
}

// Config

func (s *memStore) LoadConfig(ctx context.Context) (*sdnlb.Config, error) {
	vips, _ := s.FindVIPs(ctx, sdnlb.VIPFilter{})
	pools, _ := s.FindPools(ctx, sdnlb.PoolFilter{})
	members, _ := s.FindMembers(ctx, sdnlb.MemberFilter{})
	monitors, _ := s.FindMonitors(ctx, sdnlb.MonitorFilter{})
	return &sdnlb.Config{VIPs: vips, Pools: pools, Members: members, Monitors: monitors}, nil
}

func (s *memStore) Clear(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vips, s.pools, s.members = map[string]*sdnlb.VIP{}, map[string]*sdnlb.Pool{}, map[string]*sdnlb.Member{}
	s.monitors, s.assoc = map[string]*sdnlb.Monitor{}, map[[2]string]bool{}
	return nil
}
