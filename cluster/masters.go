package cluster

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb"
)

// movesPerRound bounds how many switches the leader moves in a round to
// even the counts: each move costs the new master a read of the switch's
// flows and groups.
const movesPerRound = 4

// Assignment is the switches' masters as this node last read them.
type Assignment struct {
	// Term is the lease term the assignment was read in.
	Term uint64
	// Masters is each switch's master, by datapath id.
	Masters []sdnlb.SwitchMaster
	// Live says this node recorded its switches recently enough to act as
	// the master of those assigned to it: until the start of its last
	// successful record plus the lease minus the margin, by its own
	// clock. The leader sees the record lapse only a lease after the
	// database wrote it, which is after that start: the node stops acting
	// as a master, by the margin, before the leader gives its switches to
	// another.
	Live bool
}

// Unassigned is the generation id of role requests to a switch no node
// masters: it is below every generation the term gives a switch, so the
// master the leader then assigns is never refused as stale.
func (a Assignment) Unassigned() uint64 { return termGeneration(a.Term) }

func (a Assignment) equal(b Assignment) bool {
	return a.Term == b.Term && a.Live == b.Live && slices.Equal(a.Masters, b.Masters)
}

// MastersOptions configure Masters.
type MastersOptions struct {
	// Switches lists the datapath ids of the switches connected to this
	// node's controller now.
	Switches func() []string
	// Together has one node master every switch (AssignTogether): the
	// controller forwards across them as one fabric.
	Together   bool
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: no metrics
}

// Masters spreads the switches' OpenFlow MASTER role over the live nodes.
// Every node runs it, in step with its elector: right after each attempt
// at the lease it records the switches its controller is connected to
// (its heartbeat, which so lapses with its lease) and reads the
// assignment; the leader also changes the assignment (Assign) and writes
// it, only while it holds the lease of the term it read.
//
//	ms := cluster.NewMasters(store, elector, cluster.MastersOptions{Switches: ctrl.SwitchIDs})
//	go ms.Run(ctx)
//	a, changed := ms.State() // wait on changed for the next assignment
type Masters struct {
	store    sdnlb.SwitchMasterService
	elector  *Elector
	switches func() []string
	together bool
	log      *slog.Logger
	clock    Clock // the elector's

	mu       sync.Mutex
	state    Assignment
	deadline time.Time     // Live until then
	expiry   Timer         // ends Live at the deadline, even while a round hangs
	changed  chan struct{} // closed at the next change of state
	refresh  chan struct{} // asks Run for a round at once
	mastered prometheus.Gauge

	// Run's own: the largest generation this node gave while it led, so
	// that a switch whose row was dropped in the term never gets a
	// smaller one back; and when it last wrote, to pace the moves.
	highWater uint64
	wroteAt   time.Time
}

// NewMasters returns the Masters of the elector's node; call Run.
func NewMasters(store sdnlb.SwitchMasterService, elector *Elector, opts MastersOptions) *Masters {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Masters{
		store:    store,
		elector:  elector,
		switches: opts.Switches,
		together: opts.Together,
		log:      log.With("component", "cluster", "node_id", elector.opts.Node.ID),
		clock:    elector.clock,
		changed:  make(chan struct{}),
		refresh:  make(chan struct{}, 1),
		mastered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sdnlb_cluster_switches_mastered",
			Help: "Switches this node is assigned to be the OpenFlow MASTER of, while it may act as one.",
		}),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(m.mastered)
	}
	return m
}

// State is the assignment as this node knows it, and a channel closed
// when it changes.
func (m *Masters) State() (Assignment, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.changed
}

// Refresh makes Run start a round at once: something (a switch refusing
// a stale role, or telling of a new master) says this node's view is old.
func (m *Masters) Refresh() {
	select {
	case m.refresh <- struct{}{}:
	default:
	}
}

// set makes a the state, Live until deadline.
func (m *Masters) set(a Assignment, deadline time.Time) {
	m.mu.Lock()
	m.deadline = deadline
	if m.expiry != nil {
		m.expiry.Stop()
		m.expiry = nil
	}
	a.Live = m.clock.Now().Before(deadline)
	if a.Live {
		m.expiry = m.clock.AfterFunc(deadline.Sub(m.clock.Now()), m.lapse)
	}
	if a.equal(m.state) {
		m.mu.Unlock()
		return
	}
	wasLive := m.state.Live
	m.state = a
	close(m.changed)
	m.changed = make(chan struct{})
	m.mu.Unlock()

	mine := 0
	if a.Live {
		for _, sm := range a.Masters {
			if sm.Node == m.elector.opts.Node.ID {
				mine++
			}
		}
	}
	m.mastered.Set(float64(mine))
	switch {
	case a.Live && !wasLive:
		m.log.Info("this node's switches are recorded: it masters those assigned to it", "term", a.Term)
	case !a.Live && wasLive:
		m.log.Warn("this node's switches were not recorded in time: it masters none until they are again", "term", a.Term)
	}
}

// lapse ends Live once the deadline has passed without a new record.
func (m *Masters) lapse() {
	m.mu.Lock()
	lapsed := m.state.Live && !m.clock.Now().Before(m.deadline)
	a, deadline := m.state, m.deadline
	m.mu.Unlock()
	if lapsed {
		m.set(a, deadline)
	}
}

// Run holds rounds until ctx ends: after each of the elector's attempts
// (and at least every two Renew), at once when the elector's state
// changes, when another node changed the assignment or Refresh asks, and
// on the leader also when the connection of a switch's master lapses.
// Then it forgets this node's switches, so that the leader gives them to
// others at its next round rather than a lease later.
func (m *Masters) Run(ctx context.Context) error {
	next := m.clock.NewTimer(0)
	defer next.Stop()
	for {
		_, leaderChanged := m.elector.State()
		select {
		case <-ctx.Done():
			m.mu.Lock()
			a := m.state
			m.mu.Unlock()
			m.set(a, time.Time{})
			rctx, cancel := context.WithTimeout(context.Background(), m.elector.opts.Renew)
			if err := m.store.RecordSwitches(rctx, m.elector.opts.Node, nil); err != nil {
				m.log.Warn("cannot forget this node's switches", "err", err)
			}
			cancel()
			return nil
		case <-next.C():
		case <-m.elector.attempted:
			next.Stop()
		case <-leaderChanged:
			next.Stop()
		case <-m.refresh:
			next.Stop()
		case <-m.store.SwitchMastersChanged():
			next.Stop()
		}
		next.Reset(m.round(ctx))
	}
}

// round records this node's switches, reads the assignment and, on the
// leader, changes it; it returns when the next round is due.
func (m *Masters) round(ctx context.Context) time.Duration {
	opts := m.elector.opts
	start := m.clock.Now()
	// A round that takes longer than the lease is worthless.
	ctx, cancel := context.WithTimeout(ctx, opts.Lease)
	defer cancel()
	m.mu.Lock()
	deadline := m.deadline
	m.mu.Unlock()
	if err := m.store.RecordSwitches(ctx, opts.Node, m.switches()); err != nil {
		m.log.Debug("cannot record this node's switches", "err", err)
	} else {
		deadline = start.Add(opts.Lease - opts.Margin)
	}
	view, err := m.store.SwitchMasters(ctx, opts.Lease)
	if err != nil {
		m.log.Debug("cannot read the switches' masters", "err", err)
		m.mu.Lock()
		a := m.state
		m.mu.Unlock()
		m.set(a, deadline)
		return 2 * opts.Renew
	}
	slices.SortFunc(view.Masters, func(a, b sdnlb.SwitchMaster) int { return cmp.Compare(a.DPID, b.DPID) })
	// The elector's next attempt normally comes first.
	wait := 2 * opts.Renew
	if s, _ := m.elector.State(); s.Generation == view.Term && m.elector.IsLeader() {
		view.Masters = m.assign(ctx, view)
		wait = min(wait, untilLapse(view, opts.Lease))
	}
	m.set(Assignment{Term: view.Term, Masters: view.Masters}, deadline)
	return wait
}

// assign changes the assignment as the leader and returns it as it
// stands: changed if the write succeeded, as read if not.
func (m *Masters) assign(ctx context.Context, view *sdnlb.Mastery) []sdnlb.SwitchMaster {
	opts := m.elector.opts
	connected := map[string][]string{}
	for _, c := range view.Connections {
		connected[c.DPID] = append(connected[c.DPID], c.Node)
	}
	moves := movesPerRound
	if m.clock.Now().Sub(m.wroteAt) < opts.Renew/2 {
		// This round follows a write (its own notification): the moves
		// wait for the next renewal's, so a joining node takes over a few
		// at a time.
		moves = 0
	}
	floor := max(termGeneration(view.Term), m.highWater)
	next := Assign(connected, view.Masters, floor, moves)
	if m.together {
		next = AssignTogether(connected, view.Masters, floor)
	}
	set, drop := changes(view.Masters, next)
	if len(set)+len(drop) == 0 {
		return view.Masters
	}
	for _, sm := range set {
		m.highWater = max(m.highWater, sm.Generation)
	}
	m.wroteAt = m.clock.Now()
	if err := m.store.SetSwitchMasters(ctx, opts.Node.ID, view.Term, set, drop); err != nil {
		m.log.Warn("cannot write the switches' masters", "err", err)
		return view.Masters
	}
	was := map[string]string{}
	for _, sm := range view.Masters {
		was[sm.DPID] = sm.Node
	}
	for _, sm := range set {
		m.log.Info("switch master assigned", "dpid", sm.DPID, "master", sm.Node, "was", was[sm.DPID], "generation", sm.Generation)
	}
	for _, dpid := range drop {
		m.log.Info("switch master dropped: no live node is connected to the switch", "dpid", dpid, "was", was[dpid])
	}
	return next
}

// untilLapse is how long until the connection of a switch's master to it
// lapses, when the leader gives the switch to another node; a lease when
// no switch has a master.
func untilLapse(view *sdnlb.Mastery, lease time.Duration) time.Duration {
	age := map[[2]string]time.Duration{}
	for _, c := range view.Connections {
		age[[2]string{c.Node, c.DPID}] = c.Age
	}
	wait := lease
	for _, sm := range view.Masters {
		if a, ok := age[[2]string{sm.Node, sm.DPID}]; ok {
			wait = min(wait, lease-a+time.Millisecond)
		}
	}
	return max(0, wait)
}
