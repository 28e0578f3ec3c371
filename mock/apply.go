package mock

import (
	"context"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.ConfigApplyService = (*ConfigApplyService)(nil)

// ConfigApplyService is a fake sdnlb.ConfigApplyService.
type ConfigApplyService struct {
	ApplyConfigFn func(ctx context.Context, want *sdnlb.Config, opts sdnlb.ApplyOptions) (*sdnlb.ConfigDiff, error)
}

func (s *ConfigApplyService) ApplyConfig(ctx context.Context, want *sdnlb.Config, opts sdnlb.ApplyOptions) (*sdnlb.ConfigDiff, error) {
	return s.ApplyConfigFn(ctx, want, opts)
}
