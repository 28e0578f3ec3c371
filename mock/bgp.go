package mock

import (
	"context"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.BGPService = (*BGPService)(nil)

// BGPService is a fake sdnlb.BGPService.
type BGPService struct {
	BGPFn func(ctx context.Context) (*sdnlb.BGP, error)
}

func (s *BGPService) BGP(ctx context.Context) (*sdnlb.BGP, error) { return s.BGPFn(ctx) }
