package api

import (
	"context"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

func TestMemberRoutes(t *testing.T) {
	stored := func() *sdnlb.Member {
		return &sdnlb.Member{ID: "m1", PoolID: "p1", Address: "10.0.0.3", Port: 80, Weight: 5, AdminStateUp: true,
			Status: sdnlb.MemberUp, Health: sdnlb.MemberHealth{Status: sdnlb.MemberUp}}
	}
	newMembers := func(t *testing.T) *mock.MemberService {
		return &mock.MemberService{
			FindMemberByIDFn: func(ctx context.Context, id string) (*sdnlb.Member, error) {
				if id != "m1" {
					return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no member %s", id)
				}
				return stored(), nil
			},
			FindMembersFn: func(ctx context.Context, f sdnlb.MemberFilter) ([]*sdnlb.Member, error) {
				if f.PoolID == nil || *f.PoolID != "p1" || f.Address == nil || *f.Address != "10.0.0.3" {
					t.Errorf("filter %+v", f)
				}
				return []*sdnlb.Member{stored()}, nil
			},
			CreateMemberFn: func(ctx context.Context, m *sdnlb.Member) error {
				switch m.PoolID {
				case "missing":
					return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "no pool missing")
				case "p1":
					return sdnlb.Errorf(sdnlb.ECONFLICT, "member m1 has 10.0.0.3:80 in pool p1")
				}
				m.ID, m.Health.Status, m.Status = "m2", sdnlb.MemberNoMonitor, sdnlb.MemberNoMonitor
				return nil
			},
			UpdateMemberFn: func(ctx context.Context, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error) {
				m := stored()
				upd.Apply(m)
				m.Status = m.EffectiveStatus()
				return m, nil
			},
			DeleteMemberFn: func(ctx context.Context, id string) error {
				if id != "m1" {
					return sdnlb.Errorf(sdnlb.ENOTFOUND, "no member %s", id)
				}
				return nil
			},
		}
	}
	checked := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	live := &mock.HealthReporter{MemberHealthFn: func(id string) (sdnlb.MemberHealth, bool) {
		return sdnlb.MemberHealth{Status: sdnlb.MemberUp, LastCheck: &checked, LatencyMS: 1.5, LastError: ""}, id == "m1"
	}}

	runRouteCases(t, &Server{MemberService: newMembers(t), HealthReporter: live}, []routeCase{
		{name: "GetOverlaysLiveHealth", method: "GET", path: "/v1/members/m1", status: 200, check: decoded(func(t *testing.T, m *sdnlb.Member) {
			if m.Health.LastCheck == nil || !m.Health.LastCheck.Equal(checked) || m.Health.LatencyMS != 1.5 {
				t.Errorf("health %+v", m.Health)
			}
		})},
		{name: "GetErrNotFound", method: "GET", path: "/v1/members/m9", status: 404, code: sdnlb.ENOTFOUND},
		{name: "CreateOK", method: "POST", path: "/v1/members", body: `{"pool_id":"p2","address":"10.0.0.4"}`, status: 201, check: decoded(func(t *testing.T, m *sdnlb.Member) {
			if m.ID != "m2" || m.Weight != 1 || !m.AdminStateUp || m.Port != 0 || m.Status != sdnlb.MemberNoMonitor {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "CreateErrPoolNotFound", method: "POST", path: "/v1/members", body: `{"pool_id":"missing","address":"10.0.0.4"}`, status: 404, code: sdnlb.ENOTFOUND, field: "pool_id"},
		{name: "CreateErrDuplicate", method: "POST", path: "/v1/members", body: `{"pool_id":"p1","address":"10.0.0.3","port":80}`, status: 409, code: sdnlb.ECONFLICT},
		{name: "PatchWeightZeroDrains", method: "PATCH", path: "/v1/members/m1", body: `{"weight":0}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Member) {
			if m.Weight != 0 || m.Status != sdnlb.MemberDraining || m.Port != 80 {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "PatchCapacityOK", method: "PATCH", path: "/v1/members/m1", body: `{"capacity":2000}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Member) {
			if m.Capacity != 2000 || m.Weight != 5 {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "PatchSamePoolOK", method: "PATCH", path: "/v1/members/m1", body: `{"pool_id":"p1","port":81}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Member) {
			if m.Port != 81 {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "PutDefaults", method: "PUT", path: "/v1/members/m1", body: `{"address":"10.0.0.9"}`, status: 200, check: decoded(func(t *testing.T, m *sdnlb.Member) {
			if m.Address != "10.0.0.9" || m.Weight != 1 || m.Port != 0 {
				t.Errorf("got %+v", m)
			}
		})},
		{name: "DeleteOK", method: "DELETE", path: "/v1/members/m1", status: 204},
		{name: "DeleteErrNotFound", method: "DELETE", path: "/v1/members/m9", status: 404, code: sdnlb.ENOTFOUND},
	})

	t.Run("NoOverlayWhenStatusDisagrees", func(t *testing.T) {
		// The store says UP; a live DOWN not yet stored is not laid over it.
		down := &mock.HealthReporter{MemberHealthFn: func(id string) (sdnlb.MemberHealth, bool) {
			return sdnlb.MemberHealth{Status: sdnlb.MemberDown, LastCheck: &checked, LastError: "refused"}, true
		}}
		ts := MustServe(t, &Server{MemberService: newMembers(t), HealthReporter: down})
		var m sdnlb.Member
		decodeBody(t, testRequest(t, ts, "GET", "/v1/members/m1", ""), 200, &m)
		if m.Health.LastCheck != nil || m.Health.LastError != "" || m.Health.Status != sdnlb.MemberUp {
			t.Errorf("health %+v", m.Health)
		}
	})

	t.Run("AgentOverlay", func(t *testing.T) {
		// The live report is fresher than the stored one, as long as both
		// agree on the drain, which the member's status follows.
		storedAgent := &sdnlb.AgentReport{Available: 80, At: checked}
		for _, tc := range []struct {
			name      string
			live      *sdnlb.AgentReport
			available int
		}{
			{"Fresher", &sdnlb.AgentReport{Available: 30, At: checked.Add(time.Second)}, 30},
			{"DrainNotStoredYet", &sdnlb.AgentReport{Available: 30, Drain: true, At: checked.Add(time.Second)}, 80},
			{"None", nil, 80},
		} {
			t.Run(tc.name, func(t *testing.T) {
				members := newMembers(t)
				find := members.FindMemberByIDFn
				members.FindMemberByIDFn = func(ctx context.Context, id string) (*sdnlb.Member, error) {
					m, err := find(ctx, id)
					if m != nil {
						m.Health.Agent = storedAgent
					}
					return m, err
				}
				agent := &mock.HealthReporter{MemberHealthFn: func(id string) (sdnlb.MemberHealth, bool) {
					return sdnlb.MemberHealth{Status: sdnlb.MemberUp, Agent: tc.live}, true
				}}
				ts := MustServe(t, &Server{MemberService: members, HealthReporter: agent})
				var m sdnlb.Member
				decodeBody(t, testRequest(t, ts, "GET", "/v1/members/m1", ""), 200, &m)
				if m.Health.Agent == nil || m.Health.Agent.Available != tc.available || m.Health.Agent.Drain || m.Status != sdnlb.MemberUp {
					t.Errorf("member %s with agent %+v, want UP with %d%% available", m.Status, m.Health.Agent, tc.available)
				}
			})
		}
	})

	t.Run("ListFiltersAndOverlay", func(t *testing.T) {
		ts := MustServe(t, &Server{MemberService: newMembers(t), HealthReporter: live})
		var l memberList
		decodeBody(t, testRequest(t, ts, "GET", "/v1/members?pool_id=p1&address=10.0.0.3", ""), 200, &l)
		if len(l.Members) != 1 || l.Members[0].Health.LatencyMS != 1.5 {
			t.Errorf("got %+v", l)
		}
	})
}

func TestMemberRoutes_Rejected(t *testing.T) {
	p1, p2 := sdnlb.NewPool(), sdnlb.NewPool()
	p1.ID, p2.ID = "p1", "p2"
	m1 := sdnlb.NewMember()
	m1.ID, m1.PoolID, m1.Address, m1.Port = "m1", "p1", "10.0.0.3", 80
	assertRejections(t, mustMemStore(t, p1, p2, m1), []routeCase{
		{name: "CreateErrPoolRequired", method: "POST", path: "/v1/members", body: `{"address":"10.0.0.4"}`, status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		{name: "CreateErrWeight", method: "POST", path: "/v1/members", body: `{"pool_id":"p2","address":"10.0.0.4","weight":257}`, status: 400, code: sdnlb.EINVALID, field: "weight"},
		{name: "CreateErrCapacity", method: "POST", path: "/v1/members", body: `{"pool_id":"p2","address":"10.0.0.4","capacity":-1}`, status: 400, code: sdnlb.EINVALID, field: "capacity"},
		{name: "PatchErrCapacity", method: "PATCH", path: "/v1/members/m1", body: `{"capacity":10000001}`, status: 400, code: sdnlb.EINVALID, field: "capacity"},
		{name: "CreateErrHealthReadOnly", method: "POST", path: "/v1/members", body: `{"pool_id":"p2","address":"10.0.0.4","health":{}}`, status: 400, code: sdnlb.EINVALID, field: "health"},
		{name: "PatchErrPoolChange", method: "PATCH", path: "/v1/members/m1", body: `{"pool_id":"p2"}`, status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		{name: "PutErrPoolChange", method: "PUT", path: "/v1/members/m1", body: `{"pool_id":"p2","address":"10.0.0.3"}`, status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		{name: "PutErrStatusReadOnly", method: "PUT", path: "/v1/members/m1", body: `{"address":"10.0.0.9","status":"UP"}`, status: 400, code: sdnlb.EINVALID, field: "status"},
	})
}
