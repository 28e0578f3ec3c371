// Package mock holds function-field fakes of the sdnlb service interfaces.
// A test sets the Fn fields it expects to be called; calling a method whose
// Fn is nil panics, which makes an unexpected call fail the test loudly.
package mock

import (
	"context"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.VIPService = (*VIPService)(nil)

// VIPService is a fake sdnlb.VIPService.
type VIPService struct {
	FindVIPByIDFn func(ctx context.Context, id string) (*sdnlb.VIP, error)
	FindVIPsFn    func(ctx context.Context, filter sdnlb.VIPFilter) ([]*sdnlb.VIP, error)
	CreateVIPFn   func(ctx context.Context, v *sdnlb.VIP) error
	UpdateVIPFn   func(ctx context.Context, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error)
	DeleteVIPFn   func(ctx context.Context, id string, cascade bool) error
}

func (s *VIPService) FindVIPByID(ctx context.Context, id string) (*sdnlb.VIP, error) {
	return s.FindVIPByIDFn(ctx, id)
}

func (s *VIPService) FindVIPs(ctx context.Context, filter sdnlb.VIPFilter) ([]*sdnlb.VIP, error) {
	return s.FindVIPsFn(ctx, filter)
}

func (s *VIPService) CreateVIP(ctx context.Context, v *sdnlb.VIP) error {
	return s.CreateVIPFn(ctx, v)
}

func (s *VIPService) UpdateVIP(ctx context.Context, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
	return s.UpdateVIPFn(ctx, id, upd)
}

func (s *VIPService) DeleteVIP(ctx context.Context, id string, cascade bool) error {
	return s.DeleteVIPFn(ctx, id, cascade)
}
