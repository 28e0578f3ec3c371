package mock

import (
	"context"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.MonitorService = (*MonitorService)(nil)

// MonitorService is a fake sdnlb.MonitorService.
type MonitorService struct {
	FindMonitorByIDFn   func(ctx context.Context, id string) (*sdnlb.Monitor, error)
	FindMonitorsFn      func(ctx context.Context, filter sdnlb.MonitorFilter) ([]*sdnlb.Monitor, error)
	CreateMonitorFn     func(ctx context.Context, m *sdnlb.Monitor) error
	UpdateMonitorFn     func(ctx context.Context, id string, upd sdnlb.MonitorUpdate) (*sdnlb.Monitor, error)
	UpdateAllMonitorsFn func(ctx context.Context, upd sdnlb.MonitorUpdate) (int, error)
	DeleteMonitorFn     func(ctx context.Context, id string, cascade bool) error
}

func (s *MonitorService) FindMonitorByID(ctx context.Context, id string) (*sdnlb.Monitor, error) {
	return s.FindMonitorByIDFn(ctx, id)
}

func (s *MonitorService) FindMonitors(ctx context.Context, filter sdnlb.MonitorFilter) ([]*sdnlb.Monitor, error) {
	return s.FindMonitorsFn(ctx, filter)
}

func (s *MonitorService) CreateMonitor(ctx context.Context, m *sdnlb.Monitor) error {
	return s.CreateMonitorFn(ctx, m)
}

func (s *MonitorService) UpdateMonitor(ctx context.Context, id string, upd sdnlb.MonitorUpdate) (*sdnlb.Monitor, error) {
	return s.UpdateMonitorFn(ctx, id, upd)
}

func (s *MonitorService) UpdateAllMonitors(ctx context.Context, upd sdnlb.MonitorUpdate) (int, error) {
	return s.UpdateAllMonitorsFn(ctx, upd)
}

func (s *MonitorService) DeleteMonitor(ctx context.Context, id string, cascade bool) error {
	return s.DeleteMonitorFn(ctx, id, cascade)
}
