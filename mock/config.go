package mock

import (
	"context"

	"github.com/sdnlb/sdnlb"
)

var (
	_ sdnlb.ConfigService = (*ConfigService)(nil)
	_ sdnlb.EventService  = (*EventService)(nil)
)

// ConfigService is a fake sdnlb.ConfigService.
type ConfigService struct {
	LoadConfigFn   func(ctx context.Context) (*sdnlb.Config, error)
	ExportConfigFn func(ctx context.Context, export func(*sdnlb.ConfigStream) error) error
	ClearFn        func(ctx context.Context) error
}

func (s *ConfigService) LoadConfig(ctx context.Context) (*sdnlb.Config, error) {
	return s.LoadConfigFn(ctx)
}

func (s *ConfigService) ExportConfig(ctx context.Context, export func(*sdnlb.ConfigStream) error) error {
	return s.ExportConfigFn(ctx, export)
}

func (s *ConfigService) Clear(ctx context.Context) error {
	return s.ClearFn(ctx)
}

// EventService is a fake sdnlb.EventService.
type EventService struct {
	SubscribeFn func() (<-chan sdnlb.Event, func())
}

func (s *EventService) Subscribe() (<-chan sdnlb.Event, func()) {
	return s.SubscribeFn()
}
