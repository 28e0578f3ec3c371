package mock

import (
	"context"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.PoolService = (*PoolService)(nil)

// PoolService is a fake sdnlb.PoolService.
type PoolService struct {
	FindPoolByIDFn      func(ctx context.Context, id string) (*sdnlb.Pool, error)
	FindPoolsFn         func(ctx context.Context, filter sdnlb.PoolFilter) ([]*sdnlb.Pool, error)
	CreatePoolFn        func(ctx context.Context, p *sdnlb.Pool) error
	UpdatePoolFn        func(ctx context.Context, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error)
	DeletePoolFn        func(ctx context.Context, id string, cascade bool) error
	AssociateMonitorFn  func(ctx context.Context, poolID, monitorID string) error
	DissociateMonitorFn func(ctx context.Context, poolID, monitorID string) error
}

func (s *PoolService) FindPoolByID(ctx context.Context, id string) (*sdnlb.Pool, error) {
	return s.FindPoolByIDFn(ctx, id)
}

func (s *PoolService) FindPools(ctx context.Context, filter sdnlb.PoolFilter) ([]*sdnlb.Pool, error) {
	return s.FindPoolsFn(ctx, filter)
}

func (s *PoolService) CreatePool(ctx context.Context, p *sdnlb.Pool) error {
	return s.CreatePoolFn(ctx, p)
}

func (s *PoolService) UpdatePool(ctx context.Context, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error) {
	return s.UpdatePoolFn(ctx, id, upd)
}

func (s *PoolService) DeletePool(ctx context.Context, id string, cascade bool) error {
	return s.DeletePoolFn(ctx, id, cascade)
}

func (s *PoolService) AssociateMonitor(ctx context.Context, poolID, monitorID string) error {
	return s.AssociateMonitorFn(ctx, poolID, monitorID)
}

func (s *PoolService) DissociateMonitor(ctx context.Context, poolID, monitorID string) error {
	return s.DissociateMonitorFn(ctx, poolID, monitorID)
}
