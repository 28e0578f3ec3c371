package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/api"
	"github.com/sdnlb/sdnlb/bgp"
	"github.com/sdnlb/sdnlb/cluster"
	"github.com/sdnlb/sdnlb/controller"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/health"
	"github.com/sdnlb/sdnlb/lbstore"
)

// shutdownTimeout bounds how long Close waits for API requests in flight.
const shutdownTimeout = 5 * time.Second

// Main is the whole service. The e2e tests run it in-process with ":0"
// addresses and a temporary database.
type Main struct {
	Config Config
	Logger *slog.Logger

	DB         *lbstore.DB
	Store      *lbstore.Store
	Controller *controller.Controller
	Health     *health.Engine
	Elector    *cluster.Elector
	// Masters spreads the switches' MASTER role over the nodes; nil on
	// SQLite, where the one node is every switch's only controller.
	Masters *cluster.Masters
	// Topology answers for the whole network: on PostgreSQL each node
	// records its part, and merges the others' with its own.
	Topology *cluster.Topology
	// Stats shares the counters: each node records its part, every node
	// answers with the cluster's (on SQLite, the one node's, kept across
	// its restarts).
	Stats *cluster.Stats
	// BGP announces the VIPs to the routers; nil without --bgp-asn.
	BGP *bgp.Speaker

	apiLn      net.Listener
	ofLn       net.Listener
	httpServer *http.Server
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	errs       chan error
}

// NewMain returns a Main for cfg; nil logger discards.
func NewMain(cfg Config, logger *slog.Logger) *Main {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Main{Config: cfg, Logger: logger, errs: make(chan error, 3)}
}

// Run opens the database, starts listening for switches and API clients,
// and returns once both listen. The services run until Close.
func (m *Main) Run(ctx context.Context) (err error) {
	cfg := m.Config
	db := lbstore.NewDB(cfg.DB)
	db.Logger = m.Logger
	if err := db.Open(); err != nil {
		return err
	}
	m.DB = db
	m.Store = lbstore.NewStore(m.DB)

	ofTLS, err := cfg.openflowTLS()
	if err != nil {
		return err
	}
	if m.ofLn, err = net.Listen("tcp", cfg.OpenFlowAddr); err != nil {
		return fmt.Errorf("openflow listen: %w", err)
	}
	if ofTLS != nil {
		m.ofLn = tls.NewListener(m.ofLn, ofTLS)
	}
	if m.apiLn, err = net.Listen("tcp", cfg.APIAddr); err != nil {
		return fmt.Errorf("api listen: %w", err)
	}

	node := m.node()
	registry := nodeRegistry(node.ID)
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	idle := cfg.FlowIdleTimeout
	if idle == 0 {
		idle = -1 // the flag's 0 is "none"; the controller's 0 is "its default"
	}
	allow, err := cfg.openFlowAllow()
	if err != nil {
		return err
	}
	m.Elector = cluster.New(m.DB, cluster.Options{
		Node:       node,
		Logger:     m.Logger,
		Registerer: registry,
	})
	// Several nodes can connect to a switch only on PostgreSQL; on SQLite
	// the one node acts as the switches' only controller.
	roles := db.Dialect() == "postgres"
	m.Controller = controller.New(m.Store, controller.Options{
		IdleTimeout:       idle,
		HardTimeout:       cfg.FlowHardTimeout,
		EchoInterval:      cfg.EchoInterval,
		StatsInterval:     cfg.StatsInterval,
		LinkCapacity:      cfg.LinkMbps * 1_000_000,
		L2:                model.L2Mode(cfg.L2),
		Allow:             allow,
		MaxSwitches:       cfg.OpenFlowMaxSwitches,
		MaxHandshakes:     cfg.OpenFlowMaxHandshakes,
		MaxLinks:          cfg.MaxLinks,
		MaxHosts:          cfg.MaxHosts,
		MaxLinksPerSwitch: cfg.MaxLinksPerSwitch,
		MaxHostsPerSwitch: cfg.MaxHostsPerSwitch,
		Logger:            m.Logger,
		Registerer:        registry,
		Roles:             roles,
		OnStaleRole:       func() { m.Masters.Refresh() },
		Node:              m.Elector.Node().ID,
		ShareStats:        true,
	})
	var parts sdnlb.TopologyPartService
	if roles {
		m.Masters = cluster.NewMasters(m.DB, m.Elector, cluster.MastersOptions{
			Switches:   m.Controller.SwitchIDs,
			Together:   cfg.L2 == string(model.L2Fabric),
			Logger:     m.Logger,
			Registerer: registry,
		})
		parts = m.DB
	}
	m.Topology = cluster.NewTopology(parts, m.Elector.Node(), m.Controller.TopologyPart, m.Logger)
	m.Stats = cluster.NewStats(m.DB, m.Elector.Node(), m.Elector, m.Controller, m.Logger)
	bgpOpts, err := cfg.bgpOptions()
	if err != nil {
		return err
	}
	if bgpOpts != nil {
		bgpOpts.Logger, bgpOpts.Registerer = m.Logger, registry
		m.BGP = bgp.New(m.Store, m.edges, *bgpOpts)
	}
	// The monitors run on the leader only, so each transition is written
	// once; a write is refused once the lease lapsed, even before the
	// engine has stopped.
	m.Health = health.New(m.Store, leaderOnly{m.Store, m.Elector}, health.Options{
		Logger:        m.Logger,
		MaxConcurrent: cfg.MaxProbes,
		Registerer:    registry,
	})
	srv := &api.Server{
		VIPService:        m.Store,
		PoolService:       m.Store,
		MemberService:     m.Store,
		MonitorService:    m.Store,
		ConfigService:     m.Store,
		EventService:      m.Store,
		StatsService:      m.Controller,
		SwitchService:     m.Controller,
		TopologyService:   m.Topology,
		HostService:       m.Controller,
		HealthReporter:    m.Health,
		ClusterService:    m.DB,
		NodeID:            m.Elector.Node().ID,
		Logger:            m.Logger,
		Token:             cfg.APIToken,
		AuthReads:         cfg.AuthReads,
		AllowedHosts:      splitList(cfg.APIAllowedHosts),
		CORSOrigins:       splitList(cfg.CORSOrigins),
		MaxConns:          cfg.APIMaxConns,
		MaxConnsPerClient: cfg.APIMaxConnsPerClient,
		MaxStreams:        cfg.APIMaxStreams,
		ClientPrefix4:     cfg.APIClientPrefix4,
		ClientPrefix6:     cfg.APIClientPrefix6,
		Ready:             m.ready,
		Registry:          registry,

		ConfigApplyService: m.Store,
	}
	if m.BGP != nil {
		srv.BGPService = m.BGP
	}
	m.httpServer = srv.HTTPServer(slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn))
	m.apiLn = srv.Listener(m.apiLn)
	if cfg.APIToken == "" && !loopbackAddr(cfg.APIAddr) {
		m.Logger.Warn("the API listens beyond loopback without a token: anyone who reaches it can change everything",
			"component", "api", "api_addr", cfg.APIAddr)
	}

	// A node id another live process uses would make two nodes one.
	if err := m.Elector.Join(ctx); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}

	ctx, m.cancel = context.WithCancel(ctx)
	m.goRun("controller", func() error { return m.Controller.Serve(ctx, m.ofLn) })
	m.goRun("cluster", func() error { return m.Elector.Run(ctx) })
	m.goRun("health", func() error { return m.runHealth(ctx) })
	m.goRun("stats", func() error { return m.Stats.Run(ctx) })
	if m.BGP != nil {
		m.goRun("bgp", func() error { return m.BGP.Run(ctx) })
	}
	if m.Masters != nil {
		m.goRun("masters", func() error { return m.Masters.Run(ctx) })
		m.goRun("roles", func() error { m.followMasters(ctx); return nil })
		m.goRun("topology", func() error { return m.Topology.Run(ctx) })
	}
	m.goRun("api", func() error {
		if err := m.httpServer.Serve(m.apiLn); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	m.Logger.Info("sdnlb started", "api_addr", m.APIAddr(), "openflow_addr", m.OpenFlowAddr(), "db", m.DB.Name(),
		"node_id", m.Elector.Node().ID)
	return nil
}

// labelledRegistry registers through a Registerer that labels every
// collector, and gathers from the registry underneath.
type labelledRegistry struct {
	prometheus.Registerer
	prometheus.Gatherer
}

// nodeRegistry is a registry whose every series, the Go and process
// collectors' too, carries node="id": the nodes of a cluster export the
// same series names, and the cluster's figures are sums or maxima over
// this label (docs/OBSERVABILITY.md, "A cluster in Prometheus").
func nodeRegistry(id string) labelledRegistry {
	registry := prometheus.NewRegistry()
	return labelledRegistry{prometheus.WrapRegistererWith(prometheus.Labels{"node": id}, registry), registry}
}

// node is this node as the cluster shows it; the default id is the host
// name and the API port.
func (m *Main) node() sdnlb.ClusterNode {
	id := m.Config.NodeID
	if id == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		_, port, _ := net.SplitHostPort(m.APIAddr())
		id = net.JoinHostPort(host, port)
	}
	return sdnlb.ClusterNode{ID: id, APIAddr: m.APIAddr(), OpenFlowAddr: m.OpenFlowAddr()}
}

// runHealth runs the health monitors while this node leads, until ctx
// ends.
func (m *Main) runHealth(ctx context.Context) error {
	for {
		state, changed := m.Elector.State()
		if !state.Leader {
			select {
			case <-ctx.Done():
				return nil
			case <-changed:
				continue
			}
		}
		hctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- m.Health.Run(hctx) }()
		var err error
		select {
		case <-changed:
			cancel()
			err = <-done
		case <-ctx.Done():
			cancel()
			return <-done
		case err = <-done:
			cancel()
		}
		if err != nil {
			return err
		}
	}
}

// followMasters makes the controller the MASTER of the switches assigned
// to this node while it may act as one, and a SLAVE of the others.
func (m *Main) followMasters(ctx context.Context) {
	for {
		a, changed := m.Masters.State()
		node := ""
		if a.Live {
			node = m.Elector.Node().ID
		}
		m.Controller.SetMasters(controller.Masters{Node: node, Switches: a.Masters, Unassigned: a.Unassigned()})
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// edges tells the BGP speaker which connected switches this node serves.
func (m *Main) edges(ctx context.Context) []bgp.Switch {
	switches, _ := m.Controller.Switches(ctx)
	if m.Masters == nil {
		return servedEdges(switches, nil, "")
	}
	a, _ := m.Masters.State()
	return servedEdges(switches, &a, m.Elector.Node().ID)
}

// servedEdges is which of switches node serves: with no assignment (on
// SQLite) every one; in a cluster those a assigns to node while it may
// act as their MASTER, and who serves a switch is known once a assigns it.
func servedEdges(switches []*sdnlb.Switch, a *cluster.Assignment, node string) []bgp.Switch {
	out := make([]bgp.Switch, len(switches))
	if a == nil {
		for i, s := range switches {
			out[i] = bgp.Switch{DPID: s.DPID, Served: true, Settled: true}
		}
		return out
	}
	masters := make(map[string]string, len(a.Masters))
	for _, sm := range a.Masters {
		masters[sm.DPID] = sm.Node
	}
	for i, s := range switches {
		master, ok := masters[s.DPID]
		out[i] = bgp.Switch{DPID: s.DPID, Served: a.Live && master == node, Settled: ok}
	}
	return out
}

// leaderOnly writes health transitions while this node leads.
type leaderOnly struct {
	sdnlb.MemberHealthService
	elector *cluster.Elector
}

func (l leaderOnly) SetMemberHealth(ctx context.Context, id string, h sdnlb.MemberHealth) error {
	if !l.elector.IsLeader() {
		return sdnlb.Errorf(sdnlb.EUNAVAILABLE, "not the leader of the cluster: health transitions are the leader's to write")
	}
	return l.MemberHealthService.SetMemberHealth(ctx, id, h)
}

// goRun runs a service; one that fails is logged and reported on errs.
func (m *Main) goRun(name string, run func() error) {
	m.wg.Go(func() {
		if err := run(); err != nil {
			m.Logger.Error("service stopped", "component", name, "err", err)
			m.errs <- fmt.Errorf("%s: %w", name, err)
		}
	})
}

// Err reports the first service that stopped with an error.
func (m *Main) Err() <-chan error { return m.errs }

// ready answers /readyz: the database answers and the controller listens.
func (m *Main) ready(ctx context.Context) error {
	if _, err := m.Store.LoadConfig(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	if m.Controller.Addr() == nil {
		return errors.New("controller not listening yet")
	}
	return nil
}

// APIAddr is the address the API listens on.
func (m *Main) APIAddr() string { return m.apiLn.Addr().String() }

// OpenFlowAddr is the address switches connect to.
func (m *Main) OpenFlowAddr() string { return m.ofLn.Addr().String() }

// Close stops the API (letting requests in flight finish), the controller
// and the monitors, then closes the database.
func (m *Main) Close() error {
	var errs []error
	if m.httpServer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		errs = append(errs, m.httpServer.Shutdown(ctx))
		cancel()
	} else if m.apiLn != nil {
		errs = append(errs, m.apiLn.Close())
	}
	if m.cancel != nil {
		m.cancel()
	} else if m.ofLn != nil {
		errs = append(errs, m.ofLn.Close())
	}
	m.wg.Wait()
	if m.DB != nil {
		errs = append(errs, m.DB.Close())
	}
	return errors.Join(errs...)
}

// openflowTLS builds the switch-facing TLS config, nil for plain TCP.
func (c Config) openflowTLS() (*tls.Config, error) {
	if c.TLSCert == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("openflow tls: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if c.TLSClientCA != "" {
		pem, err := os.ReadFile(c.TLSClientCA)
		if err != nil {
			return nil, fmt.Errorf("openflow tls client ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("openflow tls client ca: no certificate in %s", c.TLSClientCA)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return tc, nil
}
