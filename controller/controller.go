package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/internal/peerlog"
)

// Options tune the controller; zero values take the defaults.
type Options struct {
	IdleTimeout   time.Duration // of connection flows, default 30 s; negative: none
	HardTimeout   time.Duration // of connection flows, default none
	EchoInterval  time.Duration // keepalive, default 5 s; 3 unanswered close the connection
	StatsInterval time.Duration // flow-stats polling, default 2 s
	L2            model.L2Mode  // who switches traffic not for a VIP, default L2Normal
	// LinkCapacity is the speed, in bits per second, of a link whose
	// ports report none (Open vSwitch's patch ports, many virtual NICs),
	// against which its utilisation is measured; default
	// DefaultLinkCapacity.
	LinkCapacity uint64
	// Allow lists the addresses switches may connect from; empty: any.
	Allow         []netip.Prefix
	MaxSwitches   int // sessions at once, default DefaultMaxSwitches
	MaxHandshakes int // handshakes in flight, default DefaultMaxHandshakes
	// The caps of the topology (caps.go): the links arriving at one
	// switch and in all, the hosts learned on one switch and on all;
	// default DefaultMaxLinksPerSwitch, DefaultMaxLinks,
	// DefaultMaxHostsPerSwitch and DefaultMaxHosts.
	MaxLinksPerSwitch, MaxLinks int
	MaxHostsPerSwitch, MaxHosts int
	Logger                      *slog.Logger // nil: discard
	Registerer                  prometheus.Registerer
	// Roles makes the controller ask each switch for an OpenFlow role,
	// SLAVE until SetMasters makes it the switch's MASTER (see role.go);
	// without it the controller asks for none and acts as the switch's
	// only controller.
	Roles bool
	// Node is this node's id, under which the stats show what it counted.
	Node string
	// ShareStats says the cluster's stats settle what a switch's flows
	// had counted when this process took the switch over (see
	// FlowLedger and cluster.Stats); without it that counts at once.
	ShareStats bool
	// OnStaleRole is called when a switch says another controller holds a
	// newer generation (a stale role request, or a flow-mod refused as a
	// slave's) or took MASTER: the assignment should be read again. It
	// must not block.
	OnStaleRole func()
}

// Defaults of Options.
const (
	DefaultIdleTimeout   = 30 * time.Second
	DefaultEchoInterval  = 5 * time.Second
	DefaultStatsInterval = 2 * time.Second
	DefaultLinkCapacity  = 1_000_000_000
)

// How long the controller waits on a switch before giving up on it.
const (
	handshakeTimeout = 10 * time.Second
	writeTimeout     = 10 * time.Second
	requestTimeout   = 5 * time.Second // SwitchFlows
	reloadRetry      = time.Second     // after a failed LoadConfig
)

// Controller is the embedded OpenFlow 1.3 controller. It implements
// sdnlb.SwitchService, sdnlb.StatsService and sdnlb.HostService.
type Controller struct {
	src     sdnlb.ConfigSource
	opts    Options
	log     *slog.Logger
	metrics *dataplane.Metrics

	idle, hard uint16 // connection flow timeouts in seconds
	now        func() time.Time

	snap     atomic.Pointer[model.Snapshot]
	builder  *model.Builder // only the goroutine that follows the configuration
	affinity *dataplane.AffinityTable
	topo     *topology
	hosts    *dataplane.HostCaps
	book     *hostBook // the hosts of dataplanes gone, until sdnlb.HostTTL
	fabric   *fabric   // under L2Fabric
	addr     atomic.Pointer[net.Addr]

	capMetrics capMetrics

	guard *guard
	// peerLog writes the lines a switch or any TCP peer can cause, at
	// most one a minute per kind and source.
	peerLog *peerlog.Log
	mu      sync.RWMutex
	conns   map[uint64]*switchConn           // by datapath id
	ledgers map[uint64]*dataplane.FlowLedger // by datapath id, for good: a switch's counters carry over its reconnects

	roleMu sync.Mutex
	roles  roles // with Options.Roles: what SetMasters gave last
}

var (
	_ sdnlb.SwitchService   = (*Controller)(nil)
	_ sdnlb.StatsService    = (*Controller)(nil)
	_ sdnlb.HostService     = (*Controller)(nil)
	_ sdnlb.TopologyService = (*Controller)(nil)
)

// New returns a controller that follows src. Start it with Serve.
func New(src sdnlb.ConfigSource, opts Options) *Controller {
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.EchoInterval <= 0 {
		opts.EchoInterval = DefaultEchoInterval
	}
	if opts.StatsInterval <= 0 {
		opts.StatsInterval = DefaultStatsInterval
	}
	if opts.L2 == "" {
		opts.L2 = model.L2Normal
	}
	if opts.LinkCapacity == 0 {
		opts.LinkCapacity = DefaultLinkCapacity
	}
	if opts.MaxSwitches <= 0 {
		opts.MaxSwitches = DefaultMaxSwitches
	}
	if opts.MaxHandshakes <= 0 {
		opts.MaxHandshakes = DefaultMaxHandshakes
	}
	opts.setCapDefaults()
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "controller")
	c := &Controller{
		src:      src,
		opts:     opts,
		log:      log,
		metrics:  dataplane.NewMetrics(opts.Registerer, log),
		idle:     model.FlowSeconds(opts.IdleTimeout),
		hard:     model.FlowSeconds(opts.HardTimeout),
		now:      time.Now,
		affinity: dataplane.NewAffinityTable(),
		topo:     newTopology(opts.LinkCapacity, linkCaps{perSwitch: opts.MaxLinksPerSwitch, total: opts.MaxLinks}),
		hosts:    dataplane.NewHostCaps(opts.MaxHostsPerSwitch, opts.MaxHosts),
		book:     newHostBook(opts.MaxHosts),
		conns:    map[uint64]*switchConn{},
		ledgers:  map[uint64]*dataplane.FlowLedger{},
		peerLog:  peerlog.New(log, refusalLogEvery),
	}
	c.guard = &guard{allow: opts.Allow, maxSwitches: opts.MaxSwitches, maxHandshakes: opts.MaxHandshakes,
		log: c.peerLog, bySource: map[netip.Addr]int{}}
	c.builder = model.NewBuilder(func() time.Time { return c.now() })
	c.snap.Store(model.EmptySnapshot)
	if opts.L2 == model.L2Fabric {
		c.fabric = newFabric()
		c.topo.changed = c.fabric.poke
		c.fabric.deliver = func(dpid uint64, fm *ofp.FlowMod) {
			if s := c.switchConn(dpid); s != nil {
				s.deliver(fm)
			}
		}
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(newSnapshotCollector(c)); err != nil {
			log.Warn("VIP and member metrics not registered", "err", err)
		}
	}
	c.capMetrics = newCapMetrics(c)
	c.hosts.Refused = func(dpid uint64, perSwitch bool) {
		if perSwitch {
			c.capReached(itemHost, dpid, capPerSwitch)
		} else {
			c.capReached(itemHost, dpid, capTotal)
		}
	}
	return c
}

// Addr is the address the controller listens on, nil before it serves.
func (c *Controller) Addr() net.Addr {
	if a := c.addr.Load(); a != nil {
		return *a
	}
	return nil
}

// Serve accepts switches on ln and follows the configuration until ctx
// ends; then it closes ln and every switch connection and returns nil. It returns an
// error when the first configuration read fails or ln fails.
func (c *Controller) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Subscribe before reading so no change falls between the two.
	events, unsubscribe := c.src.Subscribe()
	defer unsubscribe()
	if err := c.reload(ctx); err != nil {
		ln.Close()
		return fmt.Errorf("controller: first configuration read: %w", err)
	}
	addr := ln.Addr()
	c.addr.Store(&addr)
	c.log.Info("controller listening", "addr", addr.String())

	var wg sync.WaitGroup
	wg.Go(func() { c.follow(ctx, events) })
	wg.Go(func() { every(ctx, c.opts.StatsInterval, c.housekeep) })
	wg.Go(func() { every(ctx, lldpInterval, c.discoverLinks) })
	if c.fabric != nil {
		wg.Go(func() { c.followFabric(ctx) })
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()

	var err error
	var backoff time.Duration
	for {
		conn, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(aerr, net.ErrClosed) {
				err = fmt.Errorf("controller: accept: %w", aerr)
				break
			}
			// Out of file descriptors and the like: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			c.log.Warn("accepting a switch failed; retrying", "err", aerr, "in", backoff)
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			continue
		}
		backoff = 0
		a, why := c.guard.admit(c.now(), conn)
		if a == nil {
			c.peerLog.Warn(c.now(), "connection refused", hostOf(conn.RemoteAddr().String()), "switch connection refused",
				"remote", conn.RemoteAddr().String(), "why", why)
			conn.Close()
			continue
		}
		wg.Go(func() { c.serveConn(ctx, a) })
	}
	cancel()
	for _, s := range c.switchConns() {
		s.close()
	}
	wg.Wait()
	return err
}

// follow applies the store's events as they come, a burst at a time, and
// every stats interval weighs the pools again (weights.go).
func (c *Controller) follow(ctx context.Context, events <-chan sdnlb.Event) {
	var retry <-chan time.Time
	var burst []sdnlb.Event
	weigh := time.NewTicker(c.opts.StatsInterval)
	defer weigh.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-weigh.C:
			if snap := c.builder.Reweigh(c.now()); snap != nil {
				c.log.Debug("pools weighed again", "gen", snap.Gen, "pools", len(snap.Patched.Pools))
				c.install(snap)
			}
			continue
		case ev, ok := <-events:
			if !ok {
				c.log.Warn("configuration feed closed; the data path keeps its last configuration")
				events = nil
				continue
			}
			burst = drain(append(burst[:0], ev), events)
		case <-retry:
			burst = burst[:0] // a failed apply retries as a full reload
		}
		retry = nil
		if err := c.apply(ctx, burst); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Warn("configuration reload failed; retrying", "err", err)
			retry = time.After(reloadRetry)
		}
	}
}

// drain appends the events already waiting to burst.
func drain(burst []sdnlb.Event, events <-chan sdnlb.Event) []sdnlb.Event {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return burst
			}
			burst = append(burst, ev)
		default:
			return burst
		}
	}
}

// apply brings the snapshot and every switch up to a burst of events. A
// burst of health changes patches the snapshot, which costs what the
// changed pools hold; anything else reloads the whole configuration.
func (c *Controller) apply(ctx context.Context, burst []sdnlb.Event) error {
	changes, ok := model.HealthChanges(burst)
	if !ok {
		return c.reload(ctx)
	}
	snap := c.builder.Patch(changes)
	c.log.Debug("configuration patched", "gen", snap.Gen, "members", len(snap.Patched.Members))
	c.install(snap)
	return nil
}

// reload reads the configuration, swaps in a new snapshot and brings every
// switch to it.
func (c *Controller) reload(ctx context.Context) error {
	cfg, err := c.src.LoadConfig(ctx)
	if err != nil {
		return err
	}
	snap, skipped := c.builder.Build(cfg)
	for _, err := range skipped {
		c.log.Warn("configuration object ignored by the data path", "err", err)
	}
	c.log.Debug("configuration snapshot", "seq", cfg.Seq, "vips", len(snap.VIPByID), "members", len(snap.MemberPools))
	c.install(snap)
	return nil
}

// install swaps snap in and brings every switch to it.
func (c *Controller) install(snap *model.Snapshot) {
	c.snap.Store(snap)
	for _, s := range c.switchConns() {
		// A switch that cannot take the writes has its connection closed
		// by the writer; its reader reports the disconnect.
		if err := s.sync(snap); err != nil {
			s.log.Debug("configuration not synced to switch", "err", err)
		}
	}
}

func (c *Controller) switchConns() []*switchConn {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*switchConn, 0, len(c.conns))
	for _, s := range c.conns {
		out = append(out, s)
	}
	return out
}

// register makes s the connection of its datapath, closing the one it
// replaces (a reconnecting switch).
func (c *Controller) register(s *switchConn) {
	c.mu.Lock()
	old := c.conns[s.dpid]
	c.conns[s.dpid] = s
	n := len(c.conns)
	c.mu.Unlock()
	c.metrics.Switches.Set(float64(n))
	c.portsChanged()
	if old != nil {
		old.log.Info("switch reconnected; closing its old connection")
		old.close()
	}
}

func (c *Controller) unregister(s *switchConn) {
	c.mu.Lock()
	if c.conns[s.dpid] == s {
		delete(c.conns, s.dpid)
		c.topo.switchGone(s.dpid)
	}
	n := len(c.conns)
	c.mu.Unlock()
	c.metrics.Switches.Set(float64(n))
}

func (c *Controller) switchConn(dpid uint64) *switchConn {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.conns[dpid]
}

// Config is what a new dataplane of switch dpid shares with the
// controller.
func (c *Controller) dataplaneConfig(dpid uint64, log *slog.Logger, f model.SwitchFeatures) dataplane.Config {
	return dataplane.Config{DPID: dpid, IdleTimeout: c.idle, HardTimeout: c.hard, L2: c.opts.L2, Groups: f.Groups, OneTable: f.OneTable, Nicira: f.Nicira,
		Affinity: c.affinity, Ledger: c.ledger(dpid), Fabric: c.fabric, Hosts: c.hosts, Metrics: c.metrics, Log: log, Peer: c.peerLog.To(log)}
}

// portsChanged asks the fabric, if any, to route again: a switch came or
// a port changed.
func (c *Controller) portsChanged() {
	if c.fabric != nil {
		c.fabric.poke()
	}
}

// ledger returns the flow ledger of switch dpid, which every connection
// of the switch keeps, so that its counters carry over a reconnect.
func (c *Controller) ledger(dpid uint64) *dataplane.FlowLedger {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.ledgers[dpid]
	if l == nil {
		l = dataplane.NewFlowLedger(c.opts.ShareStats)
		c.ledgers[dpid] = l
	}
	return l
}

// housekeep expires persistence entries and polls flow stats.
func (c *Controller) housekeep() {
	c.affinity.Expire(c.now())
	c.pollStats()
}

// every runs f every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, f func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// pollStats asks every switch the controller is MASTER of for the counters
// of sdnlb's flows and of its ports.
func (c *Controller) pollStats() {
	for _, s := range c.switchConns() {
		if s.master.Load() {
			s.pollStats()
		}
	}
}

// errClosed ends a connection that the controller closed on purpose.
var errClosed = errors.New("connection closed")

// hostOf is the host of a remote address "host:port", the source its
// peer-caused log lines are counted under: a peer's connections from
// many ports are one source.
func hostOf(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
