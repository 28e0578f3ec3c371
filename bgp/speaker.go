// Package bgp announces the VIPs to routers over BGP, with GoBGP running
// in the process: each VIP's address (a /32 or /128), next hop every edge
// switch that serves it, while a member of its pool is in rotation. A
// router that spreads a VIP's packets over the edges by ECMP then reaches
// it through all of them, and stops sending to an edge within a second of
// the edge's loss. The speaker follows the configuration (sdnlb.ConfigSource)
// and asks which switches this node serves; it never reads the controller's
// state directly, and the controller does not wait on it.
package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/sdnlb/sdnlb"
)

const (
	// pollInterval is how often the speaker reads the switches this node
	// serves: the loss of one is withdrawn at most that much later.
	pollInterval = 200 * time.Millisecond
	// settleMax bounds how long a speaker that restarts with graceful
	// restart holds its sessions, waiting for the edges' switches to
	// reconnect (Open vSwitch retries every 8 s at most by default).
	settleMax = 30 * time.Second
	// connectRetry is how often, in seconds, a session that is down is
	// tried again. The speaker opens every session itself.
	connectRetry = 5
	// reloadRetry is how long after a failed load of the configuration
	// the speaker tries again.
	reloadRetry = time.Second
)

// Speaker is this node's BGP speaker. It implements sdnlb.BGPService.
type Speaker struct {
	src      sdnlb.ConfigSource
	switches func(ctx context.Context) []Switch
	opts     Options
	log      *slog.Logger
	server   *server.BgpServer
	quiet    atomic.Bool // silences GoBGP once the speaker has stopped it

	mu        sync.Mutex
	announced map[key]Route
	holding   bool // the sessions are not open yet
	running   bool // GoBGP serves
}

// New returns a speaker that follows src's configuration and announces
// from the switches that switches reports served. It does nothing until
// Run.
func New(src sdnlb.ConfigSource, switches func(ctx context.Context) []Switch, opts Options) *Speaker {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Speaker{src: src, switches: switches, opts: opts, log: opts.Logger.With("component", "bgp"),
		announced: map[key]Route{}, holding: true}
	s.server = server.NewBgpServer(server.LoggerOption(slog.New(newGoBGPHandler(s.log, &s.quiet)), nil))
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(collector{s})
	}
	return s
}

// Run speaks BGP until ctx ends. With graceful restart it then leaves the
// sessions without a word, so that the peers keep the routes for the
// restart time (a restarted node takes them over); without it the peers
// are told and drop them. It returns an error if GoBGP cannot start or
// the change feed closes.
func (s *Speaker) Run(ctx context.Context) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	defer s.stop()
	events, unsubscribe := s.src.Subscribe()
	defer unsubscribe()

	var (
		cfg      *sdnlb.Config
		members  map[string]*sdnlb.Member
		pending  []sdnlb.Event // health changes heard while a load ran
		loading  bool
		reloadAt = time.Now()
		sw       []Switch
		polled   bool // sw was read
		served   []string
		dirty    bool
		open     bool // the sessions: opened once the routes are in place
		holdEnd  = time.Now().Add(s.settleWait())
	)
	type loadResult struct {
		cfg *sdnlb.Config
		err error
	}
	loaded := make(chan loadResult, 1)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	apply := func(ev sdnlb.Event) {
		switch {
		case ev.Op == sdnlb.OpHealth && loading:
			pending = append(pending, ev)
		case ev.Op == sdnlb.OpHealth:
			dirty = patchHealth(cfg, members, ev) || dirty
		case reloadAt.IsZero():
			reloadAt = time.Now()
		}
	}
	for {
		if !loading && !reloadAt.IsZero() && !time.Now().Before(reloadAt) {
			loading, reloadAt = true, time.Time{}
			go func() {
				c, err := s.src.LoadConfig(ctx)
				loaded <- loadResult{c, err}
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return errors.New("bgp: the store's change feed closed")
			}
			apply(ev)
			for more := true; more; {
				select {
				case ev, ok := <-events:
					if !ok {
						return errors.New("bgp: the store's change feed closed")
					}
					apply(ev)
				default:
					more = false
				}
			}
		case r := <-loaded:
			loading = false
			if r.err != nil {
				if ctx.Err() == nil {
					s.log.Warn("load configuration failed; retrying", "err", r.err, "retry_in", reloadRetry)
				}
				if reloadAt.IsZero() {
					reloadAt = time.Now().Add(reloadRetry)
				}
				break
			}
			cfg, members, dirty = r.cfg, indexMembers(r.cfg), true
			for _, ev := range pending {
				patchHealth(cfg, members, ev)
			}
			pending = nil
		case <-tick.C:
			sw, polled = s.switches(ctx), true
			if now := servedIDs(sw); !slices.Equal(now, served) {
				served, dirty = now, true
			}
		}
		if dirty && cfg != nil {
			s.reconcile(Routes(cfg, served, s.opts.NextHops))
			dirty = false
		}
		if !open && cfg != nil && polled && (settled(sw, s.opts.NextHops) || !time.Now().Before(holdEnd)) {
			if err := s.openSessions(ctx); err != nil {
				return err
			}
			open = true
		}
	}
}

// settleWait is how long the sessions wait for the edges: with graceful
// restart, until the switches named in the next hops are back or
// settleMax, within half the restart time so that the peers' stale
// routes never lapse first; without it, not at all.
func (s *Speaker) settleWait() time.Duration {
	return min(settleMax, s.opts.GracefulRestart/2)
}

// settled reports whether every switch named in hops is connected and
// known to be served or not.
func settled(sw []Switch, hops []NextHop) bool {
	for _, h := range hops {
		if !slices.ContainsFunc(sw, func(s Switch) bool { return s.DPID == h.DPID && s.Settled }) {
			return false
		}
	}
	return true
}

// servedIDs lists the datapath ids of the served switches, sorted.
func servedIDs(sw []Switch) []string {
	var ids []string
	for _, s := range sw {
		if s.Served {
			ids = append(ids, s.DPID)
		}
	}
	slices.Sort(ids)
	return ids
}

// indexMembers maps the configuration's members by id, for health changes.
func indexMembers(cfg *sdnlb.Config) map[string]*sdnlb.Member {
	m := make(map[string]*sdnlb.Member, len(cfg.Members))
	for _, mem := range cfg.Members {
		m[mem.ID] = mem
	}
	return m
}

// patchHealth writes a health change newer than cfg onto its member and
// reports whether it changed the member's place in rotation.
func patchHealth(cfg *sdnlb.Config, members map[string]*sdnlb.Member, ev sdnlb.Event) bool {
	m := members[ev.ID]
	if cfg == nil || m == nil || ev.Seq <= cfg.Seq {
		return false
	}
	was := m.InRotation()
	m.Health.Status, m.Health.Agent = ev.Status, ev.Agent
	return m.InRotation() != was
}

// localOnly names GoBGP's import policy that takes this node's own paths
// and no peer's: the node is no router, and must never pass one peer's
// routes on to another.
const localOnly = "sdnlb-local-only"

// start starts GoBGP: this node's AS and router id, listening nowhere
// (the speaker opens the sessions), taking no route from the peers.
func (s *Speaker) start(ctx context.Context) error {
	go s.server.Serve()
	err := s.server.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: s.opts.ASN, RouterId: s.opts.RouterID.String(), ListenPort: -1,
	}})
	if err == nil {
		err = s.server.AddPolicy(ctx, &api.AddPolicyRequest{Policy: &api.Policy{Name: localOnly, Statements: []*api.Statement{{
			Name:       localOnly,
			Conditions: &api.Conditions{RouteType: api.Conditions_ROUTE_TYPE_LOCAL},
			Actions:    &api.Actions{RouteAction: api.RouteAction_ROUTE_ACTION_ACCEPT},
		}}}})
	}
	if err == nil {
		err = s.server.SetPolicyAssignment(ctx, &api.SetPolicyAssignmentRequest{Assignment: &api.PolicyAssignment{
			Name: "global", Direction: api.PolicyDirection_POLICY_DIRECTION_IMPORT,
			Policies: []*api.Policy{{Name: localOnly}}, DefaultAction: api.RouteAction_ROUTE_ACTION_REJECT,
		}})
	}
	if err != nil {
		s.quiet.Store(true)
		s.server.Stop()
		return fmt.Errorf("bgp: start: %w", err)
	}
	s.mu.Lock()
	s.running = true
	s.mu.Unlock()
	s.log.Info("bgp speaker started", "asn", s.opts.ASN, "router_id", s.opts.RouterID, "peers", len(s.opts.Peers),
		"next_hops", len(s.opts.NextHops), "graceful_restart", s.opts.GracefulRestart)
	return nil
}

// stop ends the sessions: with graceful restart without a NOTIFICATION,
// which the peers take for a restart; without it with one.
func (s *Speaker) stop() {
	s.mu.Lock()
	s.running = false
	s.mu.Unlock()
	if err := s.server.StopBgp(context.Background(), &api.StopBgpRequest{AllowGracefulRestart: s.opts.GracefulRestart > 0}); err != nil {
		s.log.Warn("stop bgp", "err", err)
	}
	// Stop also stops GoBGP's BFD server; it asks StopBgp again first,
	// which fails now, and would log that.
	s.quiet.Store(true)
	s.server.Stop()
}

// openSessions adds the peers, once: the sessions open with the routes
// already in place.
func (s *Speaker) openSessions(ctx context.Context) error {
	for _, p := range s.opts.Peers {
		if err := s.server.AddPeer(ctx, &api.AddPeerRequest{Peer: s.peerConfig(p)}); err != nil {
			return fmt.Errorf("bgp: add peer %s: %w", p, err)
		}
	}
	s.mu.Lock()
	s.holding = false
	s.mu.Unlock()
	s.log.Info("bgp sessions opening", "peers", len(s.opts.Peers))
	return nil
}

// families are the address families every session carries.
var families = []*api.Family{
	{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST},
	{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST},
}

// peerConfig is a peer's session: both unicast families, every edge's
// path of a prefix sent to a peer that takes several (ADD-PATH), and
// graceful restart in the restarting role. The speaker counts every start
// as a restart: a peer that kept routes of an earlier run keeps them
// until this run's End-of-RIB, which GoBGP sends once it has the peer's.
func (s *Speaker) peerConfig(p Peer) *api.Peer {
	gr := s.opts.GracefulRestart > 0
	sendMax := uint32(max(1, len(s.opts.NextHops)))
	var afs []*api.AfiSafi
	for _, f := range families {
		afs = append(afs, &api.AfiSafi{
			Config:            &api.AfiSafiConfig{Family: f, Enabled: true},
			MpGracefulRestart: &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: gr}},
			AddPaths:          &api.AddPaths{Config: &api.AddPathsConfig{SendMax: sendMax}},
		})
	}
	return &api.Peer{
		Conf:      &api.PeerConf{NeighborAddress: p.Addr.String(), PeerAsn: p.ASN},
		Transport: &api.Transport{RemotePort: uint32(p.Port)},
		Timers:    &api.Timers{Config: &api.TimersConfig{ConnectRetry: connectRetry}},
		GracefulRestart: &api.GracefulRestart{Enabled: gr, RestartTime: uint32(s.opts.GracefulRestart / time.Second),
			LocalRestarting: gr},
		AfiSafis: afs,
	}
}

// reconcile brings GoBGP's paths to want: it adds the new paths, and
// withdraws those no longer wanted.
func (s *Speaker) reconcile(want []Route) {
	s.mu.Lock()
	have := s.announced
	s.mu.Unlock()
	next := make(map[key]Route, len(want))
	var add, del []*apiutil.Path
	for _, r := range want {
		next[r.key()] = r
		if old, ok := have[r.key()]; !ok || old.NextHop != r.NextHop {
			add = append(add, path(r, false))
			s.log.Debug("announce", "prefix", r.Prefix, "next_hop", r.NextHop.Addr, "dpid", r.NextHop.DPID)
		}
	}
	for k, r := range have {
		if _, ok := next[k]; !ok {
			del = append(del, path(r, true))
			s.log.Debug("withdraw", "prefix", r.Prefix, "next_hop", r.NextHop.Addr, "dpid", r.NextHop.DPID)
		}
	}
	if len(add) > 0 {
		if _, err := s.server.AddPath(apiutil.AddPathRequest{Paths: add}); err != nil {
			s.log.Error("announce routes", "err", err)
		}
	}
	if len(del) > 0 {
		if err := s.server.DeletePath(apiutil.DeletePathRequest{Paths: del}); err != nil {
			s.log.Error("withdraw routes", "err", err)
		}
	}
	if len(add)+len(del) > 0 {
		s.log.Info("bgp routes changed", "announced", len(add), "withdrawn", len(del), "routes", len(next))
	}
	s.mu.Lock()
	s.announced = next
	s.mu.Unlock()
}

// path is GoBGP's path of r: IGP origin, r's next hop, r's path id.
func path(r Route, withdraw bool) *apiutil.Path {
	nlri, _ := bgp.NewIPAddrPrefix(r.Prefix)
	family := bgp.RF_IPv4_UC
	var hop bgp.PathAttributeInterface
	if r.Prefix.Addr().Is4() {
		hop, _ = bgp.NewPathAttributeNextHop(r.NextHop.Addr)
	} else {
		family = bgp.RF_IPv6_UC
		hop, _ = bgp.NewPathAttributeMpReachNLRI(family, []bgp.PathNLRI{{NLRI: nlri}}, r.NextHop.Addr)
	}
	return &apiutil.Path{Family: family, Nlri: nlri, RemoteID: r.PathID, Withdrawal: withdraw,
		Attrs: []bgp.PathAttributeInterface{bgp.NewPathAttributeOrigin(bgp.BGP_ORIGIN_ATTR_TYPE_IGP), hop}}
}

// routes returns the announced routes, sorted as Routes sorts them.
func (s *Speaker) routes() []Route {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Route, 0, len(s.announced))
	for _, r := range s.announced {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Route) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return int(a.PathID) - int(b.PathID)
	})
	return out
}

// sessionStates names GoBGP's session states as the API shows them.
var sessionStates = map[api.PeerState_SessionState]string{
	api.PeerState_SESSION_STATE_IDLE:        "IDLE",
	api.PeerState_SESSION_STATE_CONNECT:     "CONNECT",
	api.PeerState_SESSION_STATE_ACTIVE:      "ACTIVE",
	api.PeerState_SESSION_STATE_OPENSENT:    "OPENSENT",
	api.PeerState_SESSION_STATE_OPENCONFIRM: "OPENCONFIRM",
	api.PeerState_SESSION_STATE_ESTABLISHED: "ESTABLISHED",
}

// BGP shows the speaker: its settings, each configured peer's session and
// the announced routes.
func (s *Speaker) BGP(ctx context.Context) (*sdnlb.BGP, error) {
	out := &sdnlb.BGP{Enabled: true, ASN: s.opts.ASN, RouterID: s.opts.RouterID.String(),
		GracefulRestart: int(s.opts.GracefulRestart / time.Second), Peers: []*sdnlb.BGPPeer{}, Routes: []*sdnlb.BGPRoute{}}
	s.mu.Lock()
	running := s.running
	out.Holding = s.holding
	s.mu.Unlock()
	live := map[netip.Addr]*api.Peer{}
	if running && !out.Holding {
		err := s.server.ListPeer(ctx, &api.ListPeerRequest{EnableAdvertised: true}, func(p *api.Peer) {
			if a, err := netip.ParseAddr(p.GetConf().GetNeighborAddress()); err == nil {
				live[a] = p
			}
		})
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	for _, p := range s.opts.Peers {
		out.Peers = append(out.Peers, peerStatus(p, live[p.Addr]))
	}
	for _, r := range s.routes() {
		out.Routes = append(out.Routes, &sdnlb.BGPRoute{Prefix: r.Prefix.String(), NextHop: r.NextHop.Addr.String(),
			DPID: r.NextHop.DPID, VIPIDs: r.VIPIDs})
	}
	return out, nil
}

// peerStatus is a configured peer with what GoBGP says of its session
// (nil: no session yet).
func peerStatus(p Peer, live *api.Peer) *sdnlb.BGPPeer {
	out := &sdnlb.BGPPeer{Address: p.Addr.String(), Port: int(p.Port), ASN: p.ASN, State: "IDLE"}
	if live == nil {
		return out
	}
	state := live.GetState()
	if name, ok := sessionStates[state.GetSessionState()]; ok {
		out.State = name
	}
	if up := live.GetTimers().GetState().GetUptime(); out.State == "ESTABLISHED" && up != nil {
		t := up.AsTime()
		out.Since = &t
	}
	for _, af := range live.GetAfiSafis() {
		out.Received += af.GetState().GetReceived()
		out.Advertised += af.GetState().GetAdvertised()
	}
	for _, c := range state.GetRemoteCap() {
		if ap := c.GetAddPath(); ap != nil {
			for _, t := range ap.GetTuples() {
				m := t.GetMode()
				out.AddPaths = out.AddPaths || m == api.AddPathCapabilityTuple_MODE_RECEIVE || m == api.AddPathCapabilityTuple_MODE_BOTH
			}
		}
		if c.GetGracefulRestart() != nil {
			out.GracefulRestart = live.GetGracefulRestart().GetEnabled()
		}
	}
	return out
}
