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
