package mock

import (
	"context"

	"github.com/sdnlb/sdnlb"
)

var (
	_ sdnlb.MemberService       = (*MemberService)(nil)
	_ sdnlb.MemberHealthService = (*MemberHealthService)(nil)
	_ sdnlb.HealthReporter      = (*HealthReporter)(nil)
)

// MemberService is a fake sdnlb.MemberService.
type MemberService struct {
	FindMemberByIDFn func(ctx context.Context, id string) (*sdnlb.Member, error)
	FindMembersFn    func(ctx context.Context, filter sdnlb.MemberFilter) ([]*sdnlb.Member, error)
	CreateMemberFn   func(ctx context.Context, m *sdnlb.Member) error
	UpdateMemberFn   func(ctx context.Context, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error)
	DeleteMemberFn   func(ctx context.Context, id string) error
}

func (s *MemberService) FindMemberByID(ctx context.Context, id string) (*sdnlb.Member, error) {
	return s.FindMemberByIDFn(ctx, id)
}

func (s *MemberService) FindMembers(ctx context.Context, filter sdnlb.MemberFilter) ([]*sdnlb.Member, error) {
	return s.FindMembersFn(ctx, filter)
}

func (s *MemberService) CreateMember(ctx context.Context, m *sdnlb.Member) error {
	return s.CreateMemberFn(ctx, m)
}

func (s *MemberService) UpdateMember(ctx context.Context, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error) {
	return s.UpdateMemberFn(ctx, id, upd)
}

func (s *MemberService) DeleteMember(ctx context.Context, id string) error {
	return s.DeleteMemberFn(ctx, id)
}

// MemberHealthService is a fake sdnlb.MemberHealthService.
type MemberHealthService struct {
	SetMemberHealthFn func(ctx context.Context, id string, h sdnlb.MemberHealth) error
}

func (s *MemberHealthService) SetMemberHealth(ctx context.Context, id string, h sdnlb.MemberHealth) error {
	return s.SetMemberHealthFn(ctx, id, h)
}

// HealthReporter is a fake sdnlb.HealthReporter.
type HealthReporter struct {
	MemberHealthFn func(memberID string) (sdnlb.MemberHealth, bool)
}

func (r *HealthReporter) MemberHealth(memberID string) (sdnlb.MemberHealth, bool) {
	return r.MemberHealthFn(memberID)
}
