// Package cluster elects the leader of the sdnlb nodes that share a
// database, with a lease row the database keeps (sdnlb.LeaseService).
//
// The leader renews the lease every Renew for Lease, by the database clock,
// with one conditional statement. It acts as leader only until its local
// deadline: the start of its last successful renewal plus Lease minus
// Margin. The database sets the expiry after that start, so the deadline
// passes, by a margin, before the lease expires and any other node can take
// it: a leader that was paused (SIGSTOP), cut off from the database or slow
// stops acting as leader before another starts. A lease row rather than an
// advisory lock for that reason: a paused process keeps its session, and
// with it a session lock, for as long as its connection lives.
//
//	e := cluster.New(store, cluster.Options{Node: node, Logger: log})
//	go e.Run(ctx)
//	state, changed := e.State() // wait on changed for the next state
package cluster

import (
	"context"
	"crypto/rand"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb"
)

// Defaults: a takeover happens within Lease plus a little after the
// leader's last renewal.
const (
	DefaultLease = 1500 * time.Millisecond
	DefaultRenew = 500 * time.Millisecond
)

// Options configure an Elector.
type Options struct {
	// Node is this node; Node.ID names it in the lease.
	Node sdnlb.ClusterNode
	// Lease is how long a renewal holds the lease (DefaultLease), Renew how
	// often the leader renews it and a follower tries to take it
	// (DefaultRenew), and Margin how long before the lease expires the
	// leader stops acting as leader (Lease/6).
	Lease, Renew, Margin time.Duration
	// Clock times the lease, the local deadline and the retries; nil is
	// the real clock. Database calls are bounded by context deadlines,
	// on the real clock whatever this says.
	Clock      Clock
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: no metrics
}

// State is what this node is.
type State struct {
	Leader bool
	// Generation is the term of the lease: this node's while Leader
	// (larger than every term before it), else the latest seen.
	Generation uint64
}

// Elector takes and keeps the lease for this node.
type Elector struct {
	store sdnlb.LeaseService
	opts  Options
	log   *slog.Logger
	clock Clock

	mu       sync.Mutex
	state    State
	deadline time.Time     // the local deadline while leader
	expiry   Timer         // steps down at the deadline, even while a renewal hangs
	changed  chan struct{} // closed at the next change of state
	leader   prometheus.Gauge
	// attempted receives after each attempt at the lease: the node's
	// Masters records its switches right after, so that they lapse with
	// its lease.
	attempted chan struct{}
}

// New returns an Elector; call Run.
func New(store sdnlb.LeaseService, opts Options) *Elector {
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Renew <= 0 {
		opts.Renew = DefaultRenew
	}
	if opts.Margin <= 0 {
		opts.Margin = opts.Lease / 6
	}
	if opts.Node.Instance == "" {
		opts.Node.Instance = rand.Text()
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Elector{
		store:     store,
		opts:      opts,
		log:       log.With("component", "cluster", "node_id", opts.Node.ID),
		clock:     opts.Clock,
		changed:   make(chan struct{}),
		attempted: make(chan struct{}, 1),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sdnlb_cluster_leader",
			Help: "1 while this node is the leader of the cluster, else 0.",
		}),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(e.leader, &nodesCollector{store: store})
	}
	return e
}

// Node is this node.
func (e *Elector) Node() sdnlb.ClusterNode { return e.opts.Node }

// Join records this node in the cluster; call it before Run. A process
// restarted under the same id finds the row of the one before it: Join
// waits up to a lease and a renewal for that row to lapse. A node id that
// another live process keeps recording fails with the store's ECONFLICT.
func (e *Elector) Join(ctx context.Context) error {
	giveUp := e.clock.Now().Add(e.opts.Lease + e.opts.Renew)
	waited := false
	for {
		err := e.store.RecordNode(ctx, e.opts.Node, e.opts.Lease)
		if sdnlb.ErrorCode(err) != sdnlb.ECONFLICT || !e.clock.Now().Before(giveUp) {
			return err
		}
		if !waited {
			waited = true
			e.log.Info("waiting for the previous process of this node id to lapse", "err", err)
		}
		retry := e.clock.NewTimer(e.opts.Renew)
		select {
		case <-ctx.Done():
			retry.Stop()
			return ctx.Err()
		case <-retry.C():
		}
	}
}

// State is this node's state, and a channel closed when it changes.
func (e *Elector) State() (State, <-chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state, e.changed
}

// IsLeader reports whether this node leads now: it holds the lease and
// its local deadline has not passed, even if the timer that steps it down
// has not fired yet (after a pause, say).
func (e *Elector) IsLeader() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state.Leader && e.clock.Now().Before(e.deadline)
}

func (e *Elector) set(s State, deadline time.Time, why string) {
	e.mu.Lock()
	e.deadline = deadline
	if e.expiry != nil {
		e.expiry.Stop()
		e.expiry = nil
	}
	if s.Leader {
		e.expiry = e.clock.AfterFunc(deadline.Sub(e.clock.Now()), e.lapse)
	}
	if s == e.state {
		e.mu.Unlock()
		return
	}
	e.state = s
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
	if s.Leader {
		e.leader.Set(1)
		e.log.Info("leader", "generation", s.Generation, "why", why)
	} else {
		e.leader.Set(0)
		e.log.Info("follower", "generation", s.Generation, "why", why)
	}
}

// lapse steps down once the local deadline has passed without a renewal.
func (e *Elector) lapse() {
	e.mu.Lock()
	lapsed := e.state.Leader && !e.clock.Now().Before(e.deadline)
	gen := e.state.Generation
	e.mu.Unlock()
	if lapsed {
		e.set(State{Generation: gen}, time.Time{}, "the lease was not renewed in time")
	}
}

// Run takes and renews the lease until ctx ends; then it releases the
// lease if it holds it, so that another node takes over at once.
func (e *Elector) Run(ctx context.Context) error {
	var (
		gen     uint64 // the generation last held
		failing bool
	)
	next := e.clock.NewTimer(0)
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			if s, _ := e.State(); s.Leader {
				e.set(State{}, time.Time{}, "stopping")
				rctx, cancel := context.WithTimeout(context.Background(), e.opts.Renew)
				if err := e.store.ReleaseLease(rctx, e.opts.Node.ID, gen); err != nil {
					e.log.Warn("cannot release the lease", "err", err)
				}
				cancel()
			}
			return nil
		case <-next.C():
		}

		start := e.clock.Now()
		wait := e.opts.Renew
		// An attempt that takes longer than the lease is worthless.
		actx, cancel := context.WithTimeout(ctx, e.opts.Lease)
		lease, err := e.store.TakeLease(actx, e.opts.Node, gen, e.opts.Lease)
		cancel()
		now := e.clock.Now()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				continue
			}
			switch {
			case failing:
			case sdnlb.ErrorCode(err) == sdnlb.ECONFLICT:
				e.log.Error("another process acts as this node", "err", err)
			default:
				e.log.Warn("cannot reach the lease", "err", err)
			}
			failing = true
		case lease.Held:
			if failing {
				e.log.Info("the lease answers again")
			}
			failing = false
			gen = lease.Generation
			deadline := start.Add(e.opts.Lease - e.opts.Margin)
			if now.Before(deadline) {
				e.set(State{Leader: true, Generation: gen}, deadline, "took the lease")
			} else {
				e.set(State{Generation: gen}, time.Time{}, "the renewal came back too late")
			}
			wait = max(0, e.opts.Renew-now.Sub(start))
		default:
			failing = false
			why := "another node holds the lease"
			if s, _ := e.State(); !s.Leader {
				why = "a new term"
			}
			e.set(State{Generation: lease.Generation}, time.Time{}, why)
			// Try again as soon as the lease expires.
			if lease.Remaining > 0 && lease.Remaining < wait {
				wait = lease.Remaining + time.Millisecond
			}
		}
		select {
		case e.attempted <- struct{}{}:
		default:
		}
		next.Reset(wait)
	}
}

// nodesCollector counts the nodes recently seen, at scrape time.
type nodesCollector struct{ store sdnlb.ClusterService }

var nodesDesc = prometheus.NewDesc("sdnlb_cluster_nodes", "Nodes of the cluster seen recently.", nil, nil)

func (c *nodesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- nodesDesc }

func (c *nodesCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cl, err := c.store.Cluster(ctx)
	if err != nil {
		return // the database is away: no sample, and the rest still scrapes
	}
	ch <- prometheus.MustNewConstMetric(nodesDesc, prometheus.GaugeValue, float64(len(cl.Nodes)))
}
