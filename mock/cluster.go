package mock

import (
	"context"
	"time"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.LeaseService = (*LeaseService)(nil)

// LeaseService is a fake sdnlb.LeaseService.
type LeaseService struct {
	TakeLeaseFn    func(ctx context.Context, node sdnlb.ClusterNode, generation uint64, d time.Duration) (sdnlb.Lease, error)
	RecordNodeFn   func(ctx context.Context, node sdnlb.ClusterNode, d time.Duration) error
	ReleaseLeaseFn func(ctx context.Context, nodeID string, generation uint64) error
	ClusterFn      func(ctx context.Context) (*sdnlb.Cluster, error)
}

func (s *LeaseService) TakeLease(ctx context.Context, node sdnlb.ClusterNode, generation uint64, d time.Duration) (sdnlb.Lease, error) {
	return s.TakeLeaseFn(ctx, node, generation, d)
}

func (s *LeaseService) RecordNode(ctx context.Context, node sdnlb.ClusterNode, d time.Duration) error {
	return s.RecordNodeFn(ctx, node, d)
}

func (s *LeaseService) ReleaseLease(ctx context.Context, nodeID string, generation uint64) error {
	return s.ReleaseLeaseFn(ctx, nodeID, generation)
}

func (s *LeaseService) Cluster(ctx context.Context) (*sdnlb.Cluster, error) {
	return s.ClusterFn(ctx)
}

var _ sdnlb.SwitchMasterService = (*SwitchMasterService)(nil)

// SwitchMasterService is a fake sdnlb.SwitchMasterService.
type SwitchMasterService struct {
	RecordSwitchesFn       func(ctx context.Context, node sdnlb.ClusterNode, dpids []string) error
	SwitchMastersFn        func(ctx context.Context, live time.Duration) (*sdnlb.Mastery, error)
	SetSwitchMastersFn     func(ctx context.Context, nodeID string, term uint64, masters []sdnlb.SwitchMaster, drop []string) error
	SwitchMastersChangedFn func() <-chan struct{}
}

func (s *SwitchMasterService) RecordSwitches(ctx context.Context, node sdnlb.ClusterNode, dpids []string) error {
	return s.RecordSwitchesFn(ctx, node, dpids)
}

func (s *SwitchMasterService) SwitchMasters(ctx context.Context, live time.Duration) (*sdnlb.Mastery, error) {
	return s.SwitchMastersFn(ctx, live)
}

func (s *SwitchMasterService) SetSwitchMasters(ctx context.Context, nodeID string, term uint64, masters []sdnlb.SwitchMaster, drop []string) error {
	return s.SetSwitchMastersFn(ctx, nodeID, term, masters, drop)
}

func (s *SwitchMasterService) SwitchMastersChanged() <-chan struct{} {
	return s.SwitchMastersChangedFn()
}

var _ sdnlb.TopologyPartService = (*TopologyPartService)(nil)

// TopologyPartService is a fake sdnlb.TopologyPartService.
type TopologyPartService struct {
	RecordTopologyFn func(ctx context.Context, node sdnlb.ClusterNode, part *sdnlb.TopologyPart, live time.Duration) error
	TopologyPartsFn  func(ctx context.Context, live time.Duration) ([]*sdnlb.TopologyPart, error)
}

func (s *TopologyPartService) RecordTopology(ctx context.Context, node sdnlb.ClusterNode, part *sdnlb.TopologyPart, live time.Duration) error {
	return s.RecordTopologyFn(ctx, node, part, live)
}

func (s *TopologyPartService) TopologyParts(ctx context.Context, live time.Duration) ([]*sdnlb.TopologyPart, error) {
	return s.TopologyPartsFn(ctx, live)
}

var _ sdnlb.StatsPartService = (*StatsPartService)(nil)

// StatsPartService is a fake sdnlb.StatsPartService.
type StatsPartService struct {
	RecordStatsFn    func(ctx context.Context, node sdnlb.ClusterNode, part *sdnlb.StatsPart) error
	StatsPartsFn     func(ctx context.Context) ([]*sdnlb.StatsPart, error)
	SwitchReadingsFn func(ctx context.Context, dpids []string, live time.Duration) ([]sdnlb.SwitchReadingsOf, error)
	AbsorbStatsFn    func(ctx context.Context, nodeID string, term uint64, into string, live time.Duration) (*sdnlb.Absorbed, error)
}

func (s *StatsPartService) RecordStats(ctx context.Context, node sdnlb.ClusterNode, part *sdnlb.StatsPart) error {
	return s.RecordStatsFn(ctx, node, part)
}

func (s *StatsPartService) StatsParts(ctx context.Context) ([]*sdnlb.StatsPart, error) {
	return s.StatsPartsFn(ctx)
}

func (s *StatsPartService) SwitchReadings(ctx context.Context, dpids []string, live time.Duration) ([]sdnlb.SwitchReadingsOf, error) {
	return s.SwitchReadingsFn(ctx, dpids, live)
}

func (s *StatsPartService) AbsorbStats(ctx context.Context, nodeID string, term uint64, into string, live time.Duration) (*sdnlb.Absorbed, error) {
	return s.AbsorbStatsFn(ctx, nodeID, term, into, live)
}
