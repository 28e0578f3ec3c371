package cluster

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// partsStore is StatsPartService in memory, on a clock the test moves.
type partsStore struct {
	mu       sync.Mutex
	now      time.Time
	parts    map[string]*sdnlb.StatsPart
	absorbed map[string]bool
	readings map[string]sdnlb.SwitchReadingsOf
	holder   string // of the lease
	term     uint64
}

func newPartsStore() *partsStore {
	return &partsStore{now: time.Unix(1000, 0), parts: map[string]*sdnlb.StatsPart{}, absorbed: map[string]bool{},
		readings: map[string]sdnlb.SwitchReadingsOf{}}
}

func (s *partsStore) RecordStats(_ context.Context, _ sdnlb.ClusterNode, part *sdnlb.StatsPart) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.absorbed[part.ID] {
		return sdnlb.Errorf(sdnlb.ECONFLICT, "part %s absorbed", part.ID)
	}
	p := &sdnlb.StatsPart{ID: part.ID, Node: part.Node, RecordedAt: s.now, Members: maps.Clone(part.Members), VIPs: maps.Clone(part.VIPs)}
	s.parts[part.ID] = p
	listed := map[string]bool{}
	for _, r := range part.Switches {
		listed[r.DPID] = true
		if held, ok := s.readings[r.DPID]; ok && held.Generation > r.Generation {
			continue
		}
		r.Final = false
		s.readings[r.DPID] = sdnlb.SwitchReadingsOf{SwitchReadings: r, Part: part.ID}
	}
	for dpid, r := range s.readings { // a switch the part no longer lists is released
		if r.Part == part.ID && !listed[dpid] {
			r.Final = true
			s.readings[dpid] = r
		}
	}
	return nil
}

func (s *partsStore) StatsParts(context.Context) ([]*sdnlb.StatsPart, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*sdnlb.StatsPart
	for _, p := range s.parts {
		c := *p
		c.Members, c.VIPs = maps.Clone(p.Members), maps.Clone(p.VIPs)
		out = append(out, &c)
	}
	return out, nil
}

func (s *partsStore) SwitchReadings(_ context.Context, dpids []string, live time.Duration) ([]sdnlb.SwitchReadingsOf, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sdnlb.SwitchReadingsOf
	for _, d := range dpids {
		r, ok := s.readings[d]
		if !ok {
			continue
		}
		if p := s.parts[r.Part]; p == nil || p.RecordedAt.Before(s.now.Add(-live)) {
			r.Final = true
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *partsStore) AbsorbStats(_ context.Context, nodeID string, term uint64, into string, live time.Duration) (*sdnlb.Absorbed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != nodeID || s.term != term {
		return nil, sdnlb.Errorf(sdnlb.ECONFLICT, "not the leader")
	}
	dst := s.parts[into]
	if dst == nil {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "part %s", into)
	}
	a := &sdnlb.Absorbed{Members: map[string]sdnlb.Counts{}, VIPs: map[string]uint64{}}
	for id, p := range s.parts {
		if id == into || !p.RecordedAt.Before(s.now.Add(-live)) && p.Node != nodeID {
			continue
		}
		for mid, m := range p.Members {
			c := a.Members[mid]
			c.Add(m.Counts)
			a.Members[mid] = c
			d := dst.Members[mid]
			d.Counts.Add(m.Counts)
			dst.Members[mid] = d
		}
		for vid, v := range p.VIPs {
			a.VIPs[vid] += v.Refused
			d := dst.VIPs[vid]
			d.Refused += v.Refused
			dst.VIPs[vid] = d
		}
		a.Parts = append(a.Parts, id)
		delete(s.parts, id)
		s.absorbed[id] = true
	}
	return a, nil
}

// counting is a controller as the cluster's stats see it.
type counting struct {
	mu        sync.Mutex
	own       sdnlb.StatsPart
	overlaps  []sdnlb.StatsOverlap
	settled   map[string]map[string]sdnlb.Counts // by dpid
	elsewhere *sdnlb.Elsewhere
}

func newCounting() *counting {
	return &counting{own: sdnlb.StatsPart{Members: map[string]sdnlb.MemberPart{}, VIPs: map[string]sdnlb.VIPPart{}},
		settled: map[string]map[string]sdnlb.Counts{}}
}

func (c *counting) count(member string, n sdnlb.Counts, active uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.own.Members[member]
	m.Counts.Add(n)
	m.Active = active
	c.own.Members[member] = m
}

func (c *counting) OwnStats() *sdnlb.StatsPart {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.own
	p.Members, p.VIPs = maps.Clone(c.own.Members), maps.Clone(c.own.VIPs)
	return &p
}

func (c *counting) Overlaps() []sdnlb.StatsOverlap {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.overlaps
}

func (c *counting) Settle(dpid string, _ uint64, add map[string]sdnlb.Counts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.settled[dpid] = add
	c.overlaps = nil
	for id, n := range add {
		m := c.own.Members[id]
		m.Counts.Add(n)
		c.own.Members[id] = m
	}
}

func (c *counting) SetElsewhere(e *sdnlb.Elsewhere) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.elsewhere = e
}

func (c *counting) Forget(p *sdnlb.StatsPart) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, f := range p.Members {
		m := c.own.Members[id]
		m.Counts = m.Counts.Above(f.Counts)
		c.own.Members[id] = m
	}
}

func (c *counting) Down() map[string]bool { return nil }

// cluster is what node sees of member: its own counts and the rest's.
func (c *counting) cluster(member string) (sdnlb.Counts, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, active := c.own.Members[member].Counts, c.own.Members[member].Active
	if c.elsewhere != nil && c.elsewhere.Members[member] != nil {
		n.Add(c.elsewhere.Members[member].Counts)
		active += c.elsewhere.Members[member].Active
	}
	return n, active
}

// leading is a Leadership the test sets.
type leading struct {
	leader bool
	term   uint64
}

func (l *leading) IsLeader() bool { return l.leader }
func (l *leading) State() (State, <-chan struct{}) {
	return State{Leader: l.leader, Generation: l.term}, nil
}

type statsNode struct {
	*Stats
	ctrl *counting
	lead *leading
}

func newStatsNode(store *partsStore, id string) statsNode {
	ctrl, lead := newCounting(), &leading{}
	return statsNode{NewStats(store, sdnlb.ClusterNode{ID: id}, lead, ctrl, nil), ctrl, lead}
}

// Every node shows the cluster's counts, each node's share, and the
// active connections of the live ones.
func TestStats_EveryNodeShowsTheCluster(t *testing.T) {
	store := newPartsStore()
	a, b := newStatsNode(store, "a"), newStatsNode(store, "b")
	a.ctrl.count("m1", sdnlb.Counts{Connections: 60, BytesIn: 6000}, 2)
	b.ctrl.count("m1", sdnlb.Counts{Connections: 40, BytesIn: 4000}, 1)
	ctx := context.Background()
	for range 2 {
		a.round(ctx)
		b.round(ctx)
	}
	for _, n := range []statsNode{a, b} {
		got, active := n.ctrl.cluster("m1")
		if got.Connections != 100 || got.BytesIn != 10000 || active != 3 {
			t.Errorf("node %s shows %+v, %d active; want 100 connections, 10000 bytes in, 3 active", n.node.ID, got, active)
		}
	}
	shares := a.ctrl.elsewhere.Members["m1"].Nodes
	if len(shares) != 1 || shares[0].Node != "b" || shares[0].TotalConnections != 40 || shares[0].ActiveConnections != 1 {
		t.Errorf("node a shows the others' shares %+v, want b's 40 connections, 1 active", shares)
	}
}

// A node gone keeps its counts in the cluster's totals, under the leader
// once it absorbed them, and never twice; its active connections stop
// counting once its part lapses.
func TestStats_NodeGoneKeepsItsCounts(t *testing.T) {
	store := newPartsStore()
	a, b := newStatsNode(store, "a"), newStatsNode(store, "b")
	store.holder, store.term, b.lead.leader, b.lead.term = "b", 7, true, 7
	a.ctrl.count("m1", sdnlb.Counts{Connections: 60}, 2)
	b.ctrl.count("m1", sdnlb.Counts{Connections: 40}, 1)
	ctx := context.Background()
	a.round(ctx)
	b.round(ctx)
	var last uint64
	for i := range 6 { // a is gone: b goes on alone
		store.now = store.now.Add(recordStatsEvery)
		b.round(ctx)
		got, active := b.ctrl.cluster("m1")
		if got.Connections < last || got.Connections != 100 {
			t.Fatalf("round %d: b shows %d connections (before: %d), want 100", i, got.Connections, last)
		}
		last = got.Connections
		if lapsed := i >= 3; lapsed && active != 1 {
			t.Errorf("round %d: %d active once a's part lapsed, want b's 1", i, active)
		}
	}
	if len(store.parts) != 1 || !store.absorbed[a.partID] {
		t.Fatalf("parts %v, absorbed %v: want a's absorbed into b's", maps.Keys(store.parts), store.absorbed)
	}
	if shares := b.ctrl.elsewhere.Members["m1"].Nodes; len(shares) != 1 || shares[0].Node != "b" || shares[0].TotalConnections != 60 {
		t.Errorf("b shows the shares %+v, want its own holding a's 60", shares)
	}
	// A node b's records could not reach takes b's part over; b, back,
	// finds its part absorbed, gives up what it held and begins anew.
	c := newStatsNode(store, "c")
	store.holder, store.term, c.lead.leader, c.lead.term, b.lead.leader = "c", 8, true, 8, false
	c.round(ctx)
	store.now = store.now.Add(statsPartLive + recordStatsEvery)
	c.round(ctx)
	old := b.partID
	b.ctrl.count("m1", sdnlb.Counts{Connections: 5}, 1)
	b.round(ctx)
	c.round(ctx)
	if b.partID == old {
		t.Fatalf("b records part %s again after c absorbed it", old)
	}
	for _, n := range []statsNode{b, c} {
		if got, _ := n.ctrl.cluster("m1"); got.Connections != 105 {
			t.Errorf("node %s shows %d connections, want 105", n.node.ID, got.Connections)
		}
	}
}

// A switch taken over counts what its rows counted beyond the readings
// its last master recorded with its part, once those are final.
func TestStats_TakeoverCountsBeyondTheLastReadings(t *testing.T) {
	store := newPartsStore()
	a, b := newStatsNode(store, "a"), newStatsNode(store, "b")
	ctx := context.Background()
	// a counted 50 connections from switch s's rows, which held 50.
	a.ctrl.count("m1", sdnlb.Counts{Connections: 50, Opened: 50}, 0)
	a.ctrl.own.Switches = []sdnlb.SwitchReadings{{DPID: "s", Generation: 1, Members: map[string]sdnlb.Counts{"m1": {Connections: 50, Opened: 50}}}}
	a.round(ctx)
	// b takes s over under generation 2 and first reads 58: 8 nobody counted.
	b.ctrl.overlaps = []sdnlb.StatsOverlap{{DPID: "s", Generation: 2, Members: map[string]sdnlb.Counts{"m1": {Connections: 58, Opened: 58}}}}
	b.round(ctx)
	if _, ok := b.ctrl.settled["s"]; ok {
		t.Fatal("b settled s while a, live, may still record readings of it")
	}
	a.ctrl.own.Switches[0].Final = true // a sees it lost s, and records its last readings once
	a.ctrl.own.Switches[0].Members["m1"] = sdnlb.Counts{Connections: 51, Opened: 51}
	a.ctrl.count("m1", sdnlb.Counts{Connections: 1, Opened: 1}, 0)
	a.round(ctx)
	b.round(ctx)
	if _, ok := b.ctrl.settled["s"]; ok {
		t.Fatal("b settled s while a's last readings of it were not released")
	}
	a.round(ctx)
	b.round(ctx)
	if got := b.ctrl.settled["s"]["m1"]; got.Connections != 7 || got.Opened != 7 {
		t.Fatalf("b settled %+v of s, want the 7 connections beyond a's last readings", got)
	}
	b.round(ctx)
	a.round(ctx)
	for _, n := range []statsNode{a, b} {
		if got, _ := n.ctrl.cluster("m1"); got.Connections != 58 {
			t.Errorf("node %s shows %d connections, want the 58 s counted", n.node.ID, got.Connections)
		}
	}

	// A switch nobody recorded counts whole; one another node took over
	// since counts nothing here.
	b.ctrl.overlaps = []sdnlb.StatsOverlap{{DPID: "new", Generation: 2, Members: map[string]sdnlb.Counts{"m1": {Connections: 3}}}}
	b.round(ctx)
	if got := b.ctrl.settled["new"]["m1"]; got.Connections != 3 {
		t.Errorf("b settled %+v of a switch nobody recorded, want all 3", got)
	}
	store.readings["s"] = sdnlb.SwitchReadingsOf{SwitchReadings: sdnlb.SwitchReadings{DPID: "s", Generation: 9}, Part: "x"}
	b.ctrl.overlaps = []sdnlb.StatsOverlap{{DPID: "s", Generation: 3, Members: map[string]sdnlb.Counts{"m1": {Connections: 70}}}}
	b.round(ctx)
	if got, ok := b.ctrl.settled["s"]; !ok || len(got) != 0 {
		t.Errorf("b settled %+v of a switch another node took over since, want nothing", got)
	}
}
