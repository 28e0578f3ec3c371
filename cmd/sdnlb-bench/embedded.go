package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller"
	"github.com/sdnlb/sdnlb/controller/model"
)

// IDs of the objects the bench configures.
const (
	benchName   = "sdnlb-bench"
	benchVIPID  = "bench-vip"
	benchPoolID = "bench-pool"
)

// staticSource is a sdnlb.ConfigSource whose configuration never
// changes: one VIP, a round-robin pool dispatched by the controller and
// its unmonitored members.
type staticSource struct{ cfg *config }

var _ sdnlb.ConfigSource = staticSource{}

func (s staticSource) LoadConfig(context.Context) (*sdnlb.Config, error) {
	c := s.cfg
	vip := sdnlb.NewVIP()
	vip.ID, vip.Name, vip.PoolID = benchVIPID, benchName, benchPoolID
	vip.Address, vip.Port = c.vip.Addr().String(), int(c.vip.Port())
	vip.MAC, vip.Status = sdnlb.VIPMAC(benchVIPID), sdnlb.VIPActive
	pool := sdnlb.NewPool()
	pool.ID, pool.Name, pool.VIPID = benchPoolID, benchName, benchVIPID
	pool.Dispatch = sdnlb.DispatchController
	conf := &sdnlb.Config{Seq: 1, VIPs: []*sdnlb.VIP{vip}, Pools: []*sdnlb.Pool{pool}}
	addr := c.firstMember
	for i := range c.members {
		m := sdnlb.NewMember()
		m.ID, m.PoolID = fmt.Sprintf("bench-member-%d", i+1), benchPoolID
		m.Address, m.Port = addr.String(), int(c.vip.Port())
		m.Health.Status = sdnlb.MemberNoMonitor
		m.Status = m.EffectiveStatus()
		conf.Members = append(conf.Members, m)
		addr = addr.Next()
	}
	return conf, nil
}

// Subscribe returns a feed that stays quiet until it is ended.
func (staticSource) Subscribe() (<-chan sdnlb.Event, func()) {
	ch := make(chan sdnlb.Event)
	var once sync.Once
	return ch, func() { once.Do(func() { close(ch) }) }
}

// startEmbedded runs the controller c in this process on a loopback port;
// stop ends it and returns what Serve returned.
func startEmbedded(ctx context.Context, cfg *config, log *slog.Logger) (addr string, c *controller.Controller, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, fmt.Errorf("embedded controller: %w", err)
	}
	// The fake switches learn hosts through the controller, as the
	// per-connection path measured here needs.
	c = controller.New(staticSource{cfg}, controller.Options{Logger: log, L2: model.L2Learn})
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- c.Serve(ctx, ln) }()
	return ln.Addr().String(), c, func() error {
		cancel()
		return <-served
	}, nil
}
