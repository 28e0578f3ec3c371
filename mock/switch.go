package mock

import (
	"context"

	"github.com/sdnlb/sdnlb"
)

var (
	_ sdnlb.SwitchService   = (*SwitchService)(nil)
	_ sdnlb.StatsService    = (*StatsService)(nil)
	_ sdnlb.HostService     = (*HostService)(nil)
	_ sdnlb.TopologyService = (*TopologyService)(nil)
)

// SwitchService is a fake sdnlb.SwitchService.
type SwitchService struct {
	SwitchesFn    func(ctx context.Context) ([]*sdnlb.Switch, error)
	SwitchFlowsFn func(ctx context.Context, dpid string) ([]*sdnlb.Flow, error)
}

func (s *SwitchService) Switches(ctx context.Context) ([]*sdnlb.Switch, error) {
	return s.SwitchesFn(ctx)
}

func (s *SwitchService) SwitchFlows(ctx context.Context, dpid string) ([]*sdnlb.Flow, error) {
	return s.SwitchFlowsFn(ctx, dpid)
}

// StatsService is a fake sdnlb.StatsService.
type StatsService struct {
	PoolStatsFn    func(ctx context.Context, poolID string) (*sdnlb.PoolStats, error)
	AllPoolStatsFn func(ctx context.Context) ([]*sdnlb.PoolStats, error)
}

func (s *StatsService) PoolStats(ctx context.Context, poolID string) (*sdnlb.PoolStats, error) {
	return s.PoolStatsFn(ctx, poolID)
}

func (s *StatsService) AllPoolStats(ctx context.Context) ([]*sdnlb.PoolStats, error) {
	return s.AllPoolStatsFn(ctx)
}

// HostService is a fake sdnlb.HostService.
type HostService struct {
	FindHostFn func(ctx context.Context, address string) (*sdnlb.Host, error)
}

func (s *HostService) FindHost(ctx context.Context, address string) (*sdnlb.Host, error) {
	return s.FindHostFn(ctx, address)
}

// TopologyService is a fake sdnlb.TopologyService.
type TopologyService struct {
	TopologyFn func(ctx context.Context) (*sdnlb.Topology, error)
}

func (s *TopologyService) Topology(ctx context.Context) (*sdnlb.Topology, error) {
	return s.TopologyFn(ctx)
}
