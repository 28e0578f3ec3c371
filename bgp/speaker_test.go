package bgp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osrg/gobgp/v4/api"
	"github.com/osrg/gobgp/v4/pkg/apiutil"
	"github.com/osrg/gobgp/v4/pkg/packet/bgp"
	"github.com/osrg/gobgp/v4/pkg/server"

	"github.com/sdnlb/sdnlb"
)

// fakeSource is a configuration and its change feed, set by the test.
type fakeSource struct {
	mu     sync.Mutex
	cfg    *sdnlb.Config
	events chan sdnlb.Event
}

func newFakeSource(cfg *sdnlb.Config) *fakeSource {
	return &fakeSource{cfg: cfg, events: make(chan sdnlb.Event, 16)}
}

func (f *fakeSource) LoadConfig(context.Context) (*sdnlb.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *f.cfg
	c.Members = nil
	for _, m := range f.cfg.Members {
		mc := *m
		c.Members = append(c.Members, &mc)
	}
	return &c, nil
}

func (f *fakeSource) Subscribe() (<-chan sdnlb.Event, func()) { return f.events, func() {} }

// setHealth changes a member's health and sends its event, as the store does.
func (f *fakeSource) setHealth(id string, status sdnlb.MemberStatus) {
	f.mu.Lock()
	f.cfg.Seq++
	for _, m := range f.cfg.Members {
		if m.ID == id {
			m.Health.Status = status
		}
	}
	ev := sdnlb.Event{Seq: f.cfg.Seq, Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: id, Status: status}
	f.mu.Unlock()
	f.events <- ev
}

// fakeSwitches are the switches the speaker asks about, set by the test.
type fakeSwitches struct {
	mu sync.Mutex
	sw []Switch
}

func (f *fakeSwitches) set(sw ...Switch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sw = sw
}

func (f *fakeSwitches) get(context.Context) []Switch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sw)
}

const (
	speakerASN  = 65001
	receiverASN = 65000
)

// router is a GoBGP server standing in for a router: it listens on
// loopback, takes several paths per prefix from the speaker and helps it
// restart gracefully.
type router struct {
	server *server.BgpServer
	port   uint16
}

func startRouter(t *testing.T) *router {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	r := &router{server: server.NewBgpServer(), port: port}
	go r.server.Serve()
	t.Cleanup(r.server.Stop)
	ctx := context.Background()
	err = r.server.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{
		Asn: receiverASN, RouterId: "192.0.2.254", ListenPort: int32(port), ListenAddresses: []string{"127.0.0.1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var afs []*api.AfiSafi
	for _, f := range families {
		afs = append(afs, &api.AfiSafi{
			Config:            &api.AfiSafiConfig{Family: f, Enabled: true},
			MpGracefulRestart: &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}},
			AddPaths:          &api.AddPaths{Config: &api.AddPathsConfig{Receive: true}},
		})
	}
	err = r.server.AddPeer(ctx, &api.AddPeerRequest{Peer: &api.Peer{
		Conf:            &api.PeerConf{NeighborAddress: "127.0.0.1", PeerAsn: speakerASN},
		Transport:       &api.Transport{PassiveMode: true},
		GracefulRestart: &api.GracefulRestart{Enabled: true, RestartTime: 120},
		AfiSafis:        afs,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// paths lists the router's paths as "prefix via next hop", stale ones
// marked, sorted.
func (r *router) paths(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, family := range []bgp.Family{bgp.RF_IPv4_UC, bgp.RF_IPv6_UC} {
		err := r.server.ListPath(apiutil.ListPathRequest{TableType: api.TableType_TABLE_TYPE_GLOBAL, Family: family},
			func(prefix bgp.NLRI, paths []*apiutil.Path) {
				for _, p := range paths {
					line := fmt.Sprintf("%s via %s", prefix, nextHop(p))
					if p.Stale {
						line += " (stale)"
					}
					out = append(out, line)
				}
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

func nextHop(p *apiutil.Path) netip.Addr {
	for _, a := range p.Attrs {
		switch a := a.(type) {
		case *bgp.PathAttributeNextHop:
			return a.Value
		case *bgp.PathAttributeMpReachNLRI:
			return a.Nexthop
		}
	}
	return netip.Addr{}
}

// waitPaths waits, up to 20 s, for the router to hold want.
func (r *router) waitPaths(t *testing.T, what string, want ...string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got = r.paths(t); slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("%s: the router holds\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
}

// startSpeaker runs a speaker peering with r until the returned stop.
func startSpeaker(t *testing.T, r *router, src *fakeSource, sw *fakeSwitches, gr time.Duration) (*Speaker, func()) {
	t.Helper()
	s := New(src, sw.get, Options{
		ASN: speakerASN, RouterID: netip.MustParseAddr("192.0.2.10"),
		Peers:    []Peer{{Addr: netip.MustParseAddr("127.0.0.1"), Port: r.port, ASN: receiverASN}},
		NextHops: testHops, GracefulRestart: gr,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("speaker: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return s, stop
}

// The speaker announces each VIP from every served edge, withdraws what
// loses its last member or its edge, and shows its session and routes.
func TestSpeaker_AnnouncesAndWithdraws(t *testing.T) {
	r := startRouter(t)
	src := newFakeSource(testConfig("10.0.0.1", "2001:db8:1::10"))
	sw := &fakeSwitches{}
	sw.set(Switch{DPID: edge1, Served: true, Settled: true}, Switch{DPID: edge2, Served: true, Settled: true})
	s, _ := startSpeaker(t, r, src, sw, 0)

	r.waitPaths(t, "both edges", "10.0.0.1/32 via 192.0.2.1", "10.0.0.1/32 via 192.0.2.2", "2001:db8:1::10/128 via 2001:db8::1")

	status, err := s.BGP(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Peers) != 1 || status.Peers[0].State != "ESTABLISHED" || !status.Peers[0].AddPaths || status.Peers[0].Advertised != 3 ||
		status.Peers[0].Since == nil || status.Holding || len(status.Routes) != 3 {
		t.Fatalf("status %+v, peer %+v: want one established session taking several paths, 3 routes", status, status.Peers[0])
	}

	sw.set(Switch{DPID: edge1, Served: true, Settled: true}, Switch{DPID: edge2, Settled: true})
	r.waitPaths(t, "edge 2 no longer served", "10.0.0.1/32 via 192.0.2.1", "2001:db8:1::10/128 via 2001:db8::1")

	src.setHealth("m0", sdnlb.MemberDown)
	r.waitPaths(t, "the IPv4 VIP's member down", "2001:db8:1::10/128 via 2001:db8::1")

	src.setHealth("m0", sdnlb.MemberUp)
	r.waitPaths(t, "the member back", "10.0.0.1/32 via 192.0.2.1", "2001:db8:1::10/128 via 2001:db8::1")
}

// With graceful restart, a speaker that stops leaves its session without
// a NOTIFICATION, which a peer takes for a restart (it keeps the routes),
// and the next one holds its session until its edges are back, then takes
// the routes over; without it the peer is told and drops them. (Whether a
// router keeps the routes is the router's: the e2e test asks FRR. GoBGP,
// asked for its paths during the restart, races with itself.)
func TestSpeaker_GracefulRestart(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		r := startRouter(t)
		src := newFakeSource(testConfig("10.0.0.1"))
		sw := &fakeSwitches{}
		sw.set(Switch{DPID: edge1, Served: true, Settled: true}, Switch{DPID: edge2, Settled: true})
		_, stop := startSpeaker(t, r, src, sw, time.Minute)
		r.waitPaths(t, "announced", "10.0.0.1/32 via 192.0.2.1")

		stop()
		r.waitSession(t, "stopped", func(p *api.Peer) bool {
			return p.State.SessionState != api.PeerState_SESSION_STATE_ESTABLISHED && p.GracefulRestart.PeerRestarting
		})
		if n := r.session(t).State.Messages.Received.Notification; n != 0 {
			t.Fatalf("the router got %d notifications: want the session left without one", n)
		}

		sw.set()
		s, _ := startSpeaker(t, r, src, sw, time.Minute)
		time.Sleep(2 * time.Second)
		if status, err := s.BGP(context.Background()); err != nil || !status.Holding {
			t.Fatalf("status %+v (%v): want the session held while edge 1 is away", status, err)
		}
		if st := r.session(t).State.SessionState; st == api.PeerState_SESSION_STATE_ESTABLISHED {
			t.Fatal("the session opened while edge 1 was away")
		}
		sw.set(Switch{DPID: edge1, Served: true, Settled: true}, Switch{DPID: edge2, Settled: true})
		r.waitSession(t, "restarted", func(p *api.Peer) bool {
			return p.State.SessionState == api.PeerState_SESSION_STATE_ESTABLISHED && !p.GracefulRestart.PeerRestarting
		})
		r.waitPaths(t, "restarted", "10.0.0.1/32 via 192.0.2.1")
	})
	t.Run("Off", func(t *testing.T) {
		r := startRouter(t)
		src := newFakeSource(testConfig("10.0.0.1"))
		sw := &fakeSwitches{}
		sw.set(Switch{DPID: edge1, Served: true, Settled: true})
		_, stop := startSpeaker(t, r, src, sw, 0)
		r.waitPaths(t, "announced", "10.0.0.1/32 via 192.0.2.1")
		stop()
		r.waitPaths(t, "stopped")
		if p := r.session(t); p.State.Messages.Received.Notification != 1 || p.GracefulRestart.PeerRestarting {
			t.Fatalf("the router got %d notifications, peer restarting %v: want the session closed with one",
				p.State.Messages.Received.Notification, p.GracefulRestart.PeerRestarting)
		}
	})
}

// session is the router's session with the speaker.
func (r *router) session(t *testing.T) *api.Peer {
	t.Helper()
	var out *api.Peer
	if err := r.server.ListPeer(context.Background(), &api.ListPeerRequest{}, func(p *api.Peer) { out = p }); err != nil || out == nil {
		t.Fatalf("the router's session: %v", err)
	}
	return out
}

// waitSession waits, up to 20 s, until the router's session satisfies ok.
func (r *router) waitSession(t *testing.T, what string, ok func(*api.Peer) bool) {
	t.Helper()
	var p *api.Peer
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if p = r.session(t); ok(p) {
			return
		}
	}
	t.Fatalf("%s: the router's session is %v, graceful restart %+v", what, p.State.SessionState, p.GracefulRestart)
}
