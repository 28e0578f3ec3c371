package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb"
)

const (
	// recordStatsEvery is how often each node records its part of the
	// stats and reads the others'.
	recordStatsEvery = time.Second
	// statsPartLive is how long a part counts as its node's live one
	// after it was recorded: three records missed. The leader absorbs an
	// older part; its active connections stop counting at once.
	statsPartLive = 3 * recordStatsEvery
)

// StatsSource is this node's controller as the cluster's stats see it.
type StatsSource interface {
	// OwnStats is what this node counted, and the readings of the
	// switches it counts or counted.
	OwnStats() *sdnlb.StatsPart
	// Overlaps are what the switches it took over had counted before.
	Overlaps() []sdnlb.StatsOverlap
	// Settle counts add of the overlap of switch dpid taken over under
	// generation.
	Settle(dpid string, generation uint64, add map[string]sdnlb.Counts)
	// SetElsewhere gives the controller what the rest of the cluster
	// counted.
	SetElsewhere(*sdnlb.Elsewhere)
	// Forget takes counts out of what this node counted: they went into
	// a part the leader absorbed.
	Forget(counts *sdnlb.StatsPart)
	// Down lists the members that are DOWN, by id: the connections the
	// switches dispatched to them are closed.
	Down() map[string]bool
}

// Leadership says whether this node leads, under which term.
type Leadership interface {
	IsLeader() bool
	State() (State, <-chan struct{})
}

// Stats shares the counters among the nodes, so that every node answers
// with the cluster's: each node records its part (what its controller
// counted) every second, reads the others' and gives their sum to its
// controller; the leader absorbs the parts of nodes gone into its own,
// so the cluster's totals keep what they counted. A switch that changes
// masters is counted once: its new master counts what its rows counted
// beyond the readings its last master recorded with its part.
//
//	s := cluster.NewStats(store, elector.Node(), elector, ctrl, log)
//	go s.Run(ctx)
type Stats struct {
	store  sdnlb.StatsPartService
	node   sdnlb.ClusterNode
	leader Leadership
	src    StatsSource
	log    *slog.Logger

	// Only Run's goroutine uses what follows.
	partID string
	// absorbed is what this node's part holds of the parts it absorbed
	// as the leader, by member and VIP id.
	absorbed        map[string]sdnlb.Counts
	absorbedRefused map[string]uint64
	// recorded is what the last record of this node's part held of its
	// own counts.
	recorded *sdnlb.StatsPart
	// released are the switches this node no longer counts whose last
	// readings were recorded, by datapath id, with the generation they
	// were counted under: the records that follow leave them out, which
	// releases them to the switch's next master.
	released map[string]uint64
}

// NewStats returns the Stats of node, whose controller src is.
func NewStats(store sdnlb.StatsPartService, node sdnlb.ClusterNode, leader Leadership, src StatsSource, logger *slog.Logger) *Stats {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Stats{store: store, node: node, leader: leader, src: src, log: logger.With("component", "cluster", "node_id", node.ID)}
	s.newPart()
	return s
}

// newPart begins a part of this node's with nothing absorbed.
func (s *Stats) newPart() {
	s.partID = rand.Text()
	s.absorbed, s.absorbedRefused, s.recorded, s.released = map[string]sdnlb.Counts{}, map[string]uint64{}, nil, map[string]uint64{}
}

// Run records, absorbs and reads every recordStatsEvery until ctx ends,
// then records once more, so that a node that stops loses nothing.
func (s *Stats) Run(ctx context.Context) error {
	tick := time.NewTicker(recordStatsEvery)
	defer tick.Stop()
	for {
		s.round(ctx)
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), recordStatsEvery)
			defer cancel()
			if err := s.record(fctx); err != nil {
				s.log.Warn("cannot record this node's stats before stopping", "err", err)
			}
			return nil
		case <-tick.C:
		}
	}
}

// round settles the overlaps it can, records this node's part, absorbs
// the parts of nodes gone if this node leads, and gives the controller
// the others'. A round that takes longer than a part lives is worthless.
func (s *Stats) round(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, statsPartLive)
	defer cancel()
	if err := s.settle(rctx); err != nil && ctx.Err() == nil {
		s.log.Debug("cannot read the switches' readings", "err", err)
	}
	if err := s.record(rctx); err != nil {
		if ctx.Err() == nil {
			s.log.Debug("cannot record this node's stats", "err", err)
		}
		return
	}
	parts, err := s.store.StatsParts(rctx)
	if err == nil && s.gone(parts) {
		if err := s.absorb(rctx); err != nil && ctx.Err() == nil {
			s.log.Debug("cannot absorb the stats of nodes gone", "err", err)
		}
		parts, err = s.store.StatsParts(rctx)
	}
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("cannot read the other nodes' stats", "err", err)
		}
		return
	}
	s.src.SetElsewhere(s.elsewhere(parts))
}

// gone reports whether parts hold one the leader absorbs: of this node
// but not this process's, or not recorded within statsPartLive of the
// latest record.
func (s *Stats) gone(parts []*sdnlb.StatsPart) bool {
	latest := latestRecord(parts)
	return slices.ContainsFunc(parts, func(p *sdnlb.StatsPart) bool {
		return p.ID != s.partID && (p.Node == s.node.ID || p.RecordedAt.Before(latest.Add(-statsPartLive)))
	})
}

// latestRecord is when the latest of parts was recorded.
func latestRecord(parts []*sdnlb.StatsPart) time.Time {
	var at time.Time
	for _, p := range parts {
		if p.RecordedAt.After(at) {
			at = p.RecordedAt
		}
	}
	return at
}

// record records this node's part: its own counts and what it absorbed.
// A part the leader absorbed (this node was taken for gone: paused, or
// cut off from the database) is not recorded again: what it held leaves
// this node's counts, and a new part begins.
func (s *Stats) record(ctx context.Context) error {
	own := s.src.OwnStats()
	err := s.store.RecordStats(ctx, s.node, s.part(own))
	if sdnlb.ErrorCode(err) == sdnlb.ECONFLICT && s.recorded != nil {
		s.log.Warn("this node's stats were absorbed by the leader, which took it for gone; beginning a new part", "part", s.partID)
		s.src.Forget(s.recorded)
		s.newPart()
		own = s.src.OwnStats()
		err = s.store.RecordStats(ctx, s.node, s.part(own))
	}
	if err != nil {
		return err
	}
	s.recorded = own
	for _, r := range own.Switches {
		if r.Final {
			s.released[r.DPID] = r.Generation
		}
	}
	return nil
}

// part is the part to record: own, with what this node absorbed.
func (s *Stats) part(own *sdnlb.StatsPart) *sdnlb.StatsPart {
	p := &sdnlb.StatsPart{ID: s.partID, Node: s.node.ID, Members: make(map[string]sdnlb.MemberPart, len(own.Members)),
		VIPs: make(map[string]sdnlb.VIPPart, len(own.VIPs))}
	for _, r := range own.Switches {
		// A switch this node stopped counting is recorded once more with
		// its last readings, then left out: released.
		if gen, ok := s.released[r.DPID]; !r.Final || !ok || gen != r.Generation {
			p.Switches = append(p.Switches, r)
		}
	}
	down := s.src.Down()
	for id, m := range own.Members {
		a, ok := s.absorbed[id]
		if ok && down[id] && a.Closed != a.Opened {
			a.Closed = a.Opened
			s.absorbed[id] = a
		}
		m.Counts.Add(a)
		p.Members[id] = m
	}
	for id, v := range own.VIPs {
		v.Refused += s.absorbedRefused[id]
		p.VIPs[id] = v
	}
	return p
}

// absorb, on the leader, absorbs the parts not recorded within
// statsPartLive, and this node's earlier ones, into this node's.
func (s *Stats) absorb(ctx context.Context) error {
	st, _ := s.leader.State()
	if !st.Leader || !s.leader.IsLeader() {
		return nil
	}
	a, err := s.store.AbsorbStats(ctx, s.node.ID, st.Generation, s.partID, statsPartLive)
	if err != nil {
		return err
	}
	for id, c := range a.Members {
		sum := s.absorbed[id]
		sum.Add(c)
		s.absorbed[id] = sum
	}
	for id, n := range a.VIPs {
		s.absorbedRefused[id] += n
	}
	if len(a.Parts) > 0 {
		s.log.Info("absorbed the stats of nodes gone", "parts", len(a.Parts))
	}
	return nil
}

// settle settles the overlap of each switch this node took over whose
// last master's readings are final: it counts what the switch's rows had
// counted beyond them. A switch nobody recorded counts whole; one another
// node took over since counts nothing here.
func (s *Stats) settle(ctx context.Context) error {
	overlaps := s.src.Overlaps()
	if len(overlaps) == 0 {
		return nil
	}
	dpids := make([]string, len(overlaps))
	for i, o := range overlaps {
		dpids[i] = o.DPID
	}
	held, err := s.store.SwitchReadings(ctx, dpids, statsPartLive)
	if err != nil {
		return err
	}
	last := make(map[string]sdnlb.SwitchReadingsOf, len(held))
	for _, r := range held {
		last[r.DPID] = r
	}
	for _, o := range overlaps {
		base, ok := s.counted(o, last)
		if !ok {
			continue
		}
		add := make(map[string]sdnlb.Counts, len(o.Members))
		for id, c := range o.Members {
			if beyond := c.Above(base[id]); beyond != (sdnlb.Counts{}) {
				add[id] = beyond
			}
		}
		s.src.Settle(o.DPID, o.Generation, add)
		var before, beyond sdnlb.Counts
		for id, c := range o.Members {
			before.Add(c.Above(c.Above(base[id])))
			beyond.Add(add[id])
		}
		s.log.Info("counted what a switch taken over counted beyond its last master's readings", "dpid", o.DPID, "generation", o.Generation,
			"readings_part", last[o.DPID].Part, "opened_before", before.Opened, "opened_beyond", beyond.Opened, "bytes_beyond", beyond.BytesIn+beyond.BytesOut)
	}
	return nil
}

// counted is what of switch o.DPID's rows was counted before this node
// took it over, per member, given the readings held by switch (last);
// ok is false while those readings may still change. A switch another
// node took over since counts whole: all it counted is in base.
func (s *Stats) counted(o sdnlb.StatsOverlap, last map[string]sdnlb.SwitchReadingsOf) (base map[string]sdnlb.Counts, ok bool) {
	r, found := last[o.DPID]
	switch {
	case !found:
		return nil, true
	case r.Generation > o.Generation:
		return o.Members, true
	case r.Part == s.partID:
		// This node's own readings, which its records may lag: what it
		// counted of its epoch before is exactly its prior.
		return o.Prior, true
	case !r.Final:
		return nil, false
	}
	return r.Members, true
}

// elsewhere is what the parts other than this node's own counted, with
// what this node absorbed; their active connections count while they
// were recorded within statsPartLive of the latest record.
func (s *Stats) elsewhere(parts []*sdnlb.StatsPart) *sdnlb.Elsewhere {
	at := latestRecord(parts)
	e := &sdnlb.Elsewhere{Members: map[string]*sdnlb.MemberElsewhere{}, VIPs: map[string]*sdnlb.VIPPart{}}
	nodes := map[string]map[string]*sdnlb.NodeStats{} // by member id, node id
	share := func(member, node string) *sdnlb.NodeStats {
		if nodes[member] == nil {
			nodes[member] = map[string]*sdnlb.NodeStats{}
		}
		n := nodes[member][node]
		if n == nil {
			n = &sdnlb.NodeStats{Node: node}
			nodes[member][node] = n
		}
		return n
	}
	member := func(id string) *sdnlb.MemberElsewhere {
		m := e.Members[id]
		if m == nil {
			m = &sdnlb.MemberElsewhere{}
			e.Members[id] = m
		}
		return m
	}
	vip := func(id string) *sdnlb.VIPPart {
		v := e.VIPs[id]
		if v == nil {
			v = &sdnlb.VIPPart{}
			e.VIPs[id] = v
		}
		return v
	}
	for id, c := range s.absorbed {
		member(id).Add(c)
		share(id, s.node.ID).Add(c.Share(0))
	}
	for id, n := range s.absorbedRefused {
		vip(id).Refused += n
	}
	for _, p := range parts {
		if p.ID == s.partID {
			continue
		}
		live := !p.RecordedAt.Before(at.Add(-statsPartLive))
		for id, mp := range p.Members {
			m := member(id)
			m.Add(mp.Counts)
			active := uint64(0)
			if live {
				m.Active += mp.Active
				active = mp.Active
				if mp.Opened > mp.Closed {
					active += mp.Opened - mp.Closed
				}
			}
			share(id, p.Node).Add(mp.Counts.Share(active))
		}
		for id, vp := range p.VIPs {
			v := vip(id)
			v.Refused += vp.Refused
			if live {
				v.Active += vp.Active
			}
		}
	}
	for id, byNode := range nodes {
		m := e.Members[id]
		for _, node := range slices.Sorted(maps.Keys(byNode)) {
			m.Nodes = append(m.Nodes, *byNode[node])
		}
		slices.SortFunc(m.Nodes, func(a, b sdnlb.NodeStats) int { return cmp.Compare(a.Node, b.Node) })
	}
	return e
}
