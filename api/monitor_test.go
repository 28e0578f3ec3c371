package api

import (
	"context"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

func TestMonitorRoutes(t *testing.T) {
	stored := func() *sdnlb.Monitor {
		m := sdnlb.NewMonitor()
		m.ID, m.Type, m.PoolIDs = "m1", sdnlb.MonitorHTTP, []string{"p1"}
		return m
	}
	newMonitors := func() *mock.MonitorService {
		return &mock.MonitorService{
			FindMonitorByIDFn: func(ctx context.Context, id string) (*sdnlb.Monitor, error) {
				if id != "m1" {
					return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no monitor %s", id)
				}
				return stored(), nil
			},
			FindMonitorsFn: func(ctx context.Context, f sdnlb.MonitorFilter) ([]*sdnlb.Monitor, error) {
				if f.PoolID == nil || *f.PoolID != "p1" {
					return nil, nil
				}
				return []*sdnlb.Monitor{stored()}, nil
			},
			CreateMonitorFn: func(ctx context.Context, m *sdnlb.Monitor) error {
				if m.ID == "m1" {
					return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "monitor m1 exists")
				}
				return nil
			},
			UpdateMonitorFn: func(ctx context.Context, id string, upd sdnlb.MonitorUpdate) (*sdnlb.Monitor, error) {
				if id != "m1" {
					return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no monitor %s", id)
				}
				m := stored()
				upd.Apply(m)
				return m, nil
			},
			DeleteMonitorFn: func(ctx context.Context, id string, cascade bool) error {
				if !cascade {
					return sdnlb.Errorf(sdnlb.ECONFLICT, "pools p1 use monitor m1")
				}
				return nil
			},
		}
	}
	runRouteCases(t, &Server{MonitorService: newMonitors()}, []routeCase{
		{name: "ListByPool", method: "GET", path: "/v1/monitors?pool_id=p1", status: 200, check: decoded(func(t *testing.T, l *monitorList) {
			if len(l.Monitors) != 1 || l.Monitors[0].ID != "m1" || l.Next != "" {
				t.Errorf("got %+v", l)
			}
		})},
		{name: "CreateOKFractionalDelay", method: "POST", path: "/v1/monitors", body: `{"id":"m2","type":"PING","delay":0.5,"timeout":0.2}`, status: 201, check: func(t *testing.T, resp response) {
			var m sdnlb.Monitor
			decodeBody(t, resp, 201, &m)
			if m.Delay != 0.5 || m.Timeout != 0.2 || m.MaxRetries != 3 || resp.Header.Get("Location") != "/v1/monitors/m2" {
				t.Errorf("got %+v", m)
			}
		}},
		{name: "CreateErrDuplicate", method: "POST", path: "/v1/monitors", body: `{"id":"m1","type":"TCP"}`, status: 409, code: sdnlb.ECONFLICT, field: "id"},
		{name: "GetOK", method: "GET", path: "/v1/monitors/m1", status: 200, check: decoded(func(t *testing.T, m *sdnlb.Monitor) {
			if m.Type != sdnlb.MonitorHTTP || len(m.PoolIDs) != 1 {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "PatchOK", method: "PATCH", path: "/v1/monitors/m1", body: `{"url_path":"/health"}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Monitor) {
			if m.URLPath != "/health" || m.Type != sdnlb.MonitorHTTP {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "PutOK", method: "PUT", path: "/v1/monitors/m1", body: `{"type":"PING","name":"x"}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Monitor) {
			if m.Type != sdnlb.MonitorPING || m.Name != "x" {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "PutErrTypeRequired", method: "PUT", path: "/v1/monitors/m1", body: `{"name":"x"}`, status: 400, code: sdnlb.EINVALID, field: "type"},
		{name: "PatchErrNotFound", method: "PATCH", path: "/v1/monitors/m9", body: `{"delay":10}`, status: 404, code: sdnlb.ENOTFOUND},
		{name: "DeleteErrInUse", method: "DELETE", path: "/v1/monitors/m1", status: 409, code: sdnlb.ECONFLICT},
		{name: "DeleteCascade", method: "DELETE", path: "/v1/monitors/m1?cascade=1", status: 204},
	})
}

func TestMonitorRoutes_Rejected(t *testing.T) {
	m1 := sdnlb.NewMonitor()
	m1.ID = "m1"
	assertRejections(t, mustMemStore(t, m1), []routeCase{
		{name: "CreateErrTimeout", method: "POST", path: "/v1/monitors", body: `{"type":"TCP","delay":1,"timeout":1}`, status: 400, code: sdnlb.EINVALID, field: "timeout"},
		{name: "CreateErrExpectedCodes", method: "POST", path: "/v1/monitors", body: `{"type":"HTTP","expected_codes":"2xx"}`, status: 400, code: sdnlb.EINVALID, field: "expected_codes"},
		{name: "CreateErrPoolIDsReadOnly", method: "POST", path: "/v1/monitors", body: `{"pool_ids":["p1"]}`, status: 400, code: sdnlb.EINVALID, field: "pool_ids"},
		{name: "CreateErrDelayType", method: "POST", path: "/v1/monitors", body: `{"delay":"5s"}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "PatchErrDelay", method: "PATCH", path: "/v1/monitors/m1", body: `{"delay":0.01}`, status: 400, code: sdnlb.EINVALID, field: "delay"},
		{name: "CreateErrAgentWithoutPort", method: "POST", path: "/v1/monitors", body: `{"type":"AGENT"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "CreateErrAgentPort", method: "POST", path: "/v1/monitors", body: `{"type":"AGENT","port":65536}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "CreateErrPortOnTCP", method: "POST", path: "/v1/monitors", body: `{"type":"TCP","port":5555}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "PatchErrPortOnTCP", method: "PATCH", path: "/v1/monitors/m1", body: `{"port":5555}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "PatchErrAgentKeepsNoPort", method: "PATCH", path: "/v1/monitors/m1", body: `{"type":"AGENT"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
	})
}

func TestMonitorRoutes_Agent(t *testing.T) {
	m1 := sdnlb.NewMonitor()
	m1.ID = "m1"
	runRouteCases(t, mustMemStore(t, m1).server(), []routeCase{
		{name: "Create", method: "POST", path: "/v1/monitors", body: `{"id":"a","type":"AGENT","port":5555,"delay":0.2,"timeout":0.15}`, status: 201,
			check: decoded(func(t *testing.T, m *sdnlb.Monitor) {
				if m.Type != sdnlb.MonitorAgent || m.Port != 5555 || m.Delay != 0.2 || m.MaxRetries != 3 {
					t.Errorf("got %+v", m)
				}
			})},
		{name: "Get", method: "GET", path: "/v1/monitors/a", status: 200, check: decoded(func(t *testing.T, m *sdnlb.Monitor) {
			if m.Port != 5555 {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "PatchPort", method: "PATCH", path: "/v1/monitors/a", body: `{"port":6000}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Monitor) {
			if m.Type != sdnlb.MonitorAgent || m.Port != 6000 {
				t.Errorf("got %+v", m)
			}
		})},
		// PUT sets every field: a TCP monitor's port is the default 0.
		{name: "PutTCP", method: "PUT", path: "/v1/monitors/a", body: `{"type":"TCP"}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Monitor) {
			if m.Type != sdnlb.MonitorTCP || m.Port != 0 {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "PatchToAgent", method: "PATCH", path: "/v1/monitors/m1", body: `{"type":"AGENT","port":5555}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Monitor) {
			if m.Type != sdnlb.MonitorAgent || m.Port != 5555 {
				t.Errorf("got %+v", m)
			}
		})},
	})
}
