package api

import (
	"context"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

func TestPoolRoutes(t *testing.T) {
	stored := func() *sdnlb.Pool {
		return &sdnlb.Pool{ID: "p1", Name: "web", VIPID: "v1", LBMethod: sdnlb.LeastConnections, Protocol: sdnlb.ProtocolTCP, AdminStateUp: true, MonitorIDs: []string{"m1"}}
	}
	newPools := func(t *testing.T) *mock.PoolService {
		return &mock.PoolService{
			FindPoolByIDFn: func(ctx context.Context, id string) (*sdnlb.Pool, error) {
				if id != "p1" {
					return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no pool %s", id)
				}
				return stored(), nil
			},
			FindPoolsFn: func(ctx context.Context, f sdnlb.PoolFilter) ([]*sdnlb.Pool, error) {
				if f.VIPID != nil && *f.VIPID != "v1" {
					return nil, nil
				}
				return []*sdnlb.Pool{stored()}, nil
			},
			CreatePoolFn: func(ctx context.Context, p *sdnlb.Pool) error {
				if p.VIPID == "missing" {
					return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "vip_id", "no VIP missing")
				}
				if p.VIPID == "v1" {
					return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "vip_id", "VIP v1 has pool p1")
				}
				p.ID = "p2"
				return nil
			},
			UpdatePoolFn: func(ctx context.Context, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error) {
				p := stored()
				upd.Apply(p)
				return p, nil
			},
			DeletePoolFn: func(ctx context.Context, id string, cascade bool) error {
				if !cascade {
					return sdnlb.Errorf(sdnlb.ECONFLICT, "pool p1 has members m1")
				}
				return nil
			},
			AssociateMonitorFn: func(ctx context.Context, poolID, monitorID string) error {
				if monitorID != "m2" {
					return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "monitor_id", "no monitor %s", monitorID)
				}
				return nil
			},
			DissociateMonitorFn: func(ctx context.Context, poolID, monitorID string) error {
				if monitorID != "m1" {
					return sdnlb.Errorf(sdnlb.ENOTFOUND, "monitor %s is not associated with pool %s", monitorID, poolID)
				}
				return nil
			},
		}
	}
	members := &mock.MemberService{FindMembersFn: func(ctx context.Context, f sdnlb.MemberFilter) ([]*sdnlb.Member, error) {
		if f.PoolID == nil || *f.PoolID != "p1" {
			return nil, nil
		}
		return []*sdnlb.Member{{ID: "m1", PoolID: "p1", Address: "10.0.0.3"}}, nil
	}}

	runRouteCases(t, &Server{PoolService: newPools(t), MemberService: members}, []routeCase{
		{name: "ListOK", method: "GET", path: "/v1/pools?vip_id=v1", status: 200, check: decoded(func(t *testing.T, l *poolList) {
			if len(l.Pools) != 1 || l.Pools[0].ID != "p1" {
				t.Errorf("got %+v", l)
			}
		})},
		{name: "ListFilterNone", method: "GET", path: "/v1/pools?vip_id=v9", status: 200, check: func(t *testing.T, resp response) {
			if string(resp.Body) != `{"pools":[],"next":""}`+"\n" {
				t.Errorf("body %s", resp.Body)
			}
		}},
		{name: "CreateOK", method: "POST", path: "/v1/pools", body: `{"name":"api","lb_method":"RANDOM"}`, status: 201, check: func(t *testing.T, resp response) {
			var p sdnlb.Pool
			decodeBody(t, resp, 201, &p)
			if p.ID != "p2" || p.LBMethod != sdnlb.Random || p.Protocol != sdnlb.ProtocolTCP || !p.AdminStateUp || resp.Header.Get("Location") != "/v1/pools/p2" {
				t.Errorf("got %+v, Location %q", p, resp.Header.Get("Location"))
			}
		}},
		{name: "CreateErrVIPNotFound", method: "POST", path: "/v1/pools", body: `{"vip_id":"missing"}`, status: 404, code: sdnlb.ENOTFOUND, field: "vip_id"},
		{name: "CreateErrVIPTaken", method: "POST", path: "/v1/pools", body: `{"vip_id":"v1"}`, status: 409, code: sdnlb.ECONFLICT, field: "vip_id"},
		{name: "GetOK", method: "GET", path: "/v1/pools/p1", status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.ID != "p1" || len(p.MonitorIDs) != 1 {
				t.Errorf("got %+v", p)
			}
		})},
		{name: "GetErrNotFound", method: "GET", path: "/v1/pools/nope", status: 404, code: sdnlb.ENOTFOUND},
		{name: "PatchOK", method: "PATCH", path: "/v1/pools/p1", body: `{"lb_method":"SOURCE_IP"}`, status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.LBMethod != sdnlb.SourceIP || p.Name != "web" || p.VIPID != "v1" {
				t.Errorf("got %+v", p)
			}
		})},
		{name: "PutOK", method: "PUT", path: "/v1/pools/p1", body: `{"name":"x"}`, status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.LBMethod != sdnlb.RoundRobin || p.Name != "x" || p.VIPID != "" {
				t.Errorf("PUT must reset absent fields to the defaults: %+v", p)
			}
		})},
		{name: "DeleteErrHasMembers", method: "DELETE", path: "/v1/pools/p1", status: 409, code: sdnlb.ECONFLICT},
		{name: "DeleteCascadeOK", method: "DELETE", path: "/v1/pools/p1?cascade=true", status: 204},
		{name: "MembersOK", method: "GET", path: "/v1/pools/p1/members", status: 200, check: decoded(func(t *testing.T, l *memberList) {
			if len(l.Members) != 1 || l.Members[0].ID != "m1" {
				t.Errorf("got %+v", l)
			}
		})},
		{name: "MembersErrNoPool", method: "GET", path: "/v1/pools/nope/members", status: 404, code: sdnlb.ENOTFOUND},
		{name: "AssociateOK", method: "POST", path: "/v1/pools/p1/monitors", body: `{"monitor_id":"m2"}`, status: 204},
		{name: "AssociateErrNoMonitor", method: "POST", path: "/v1/pools/p1/monitors", body: `{"monitor_id":"m9"}`, status: 404, code: sdnlb.ENOTFOUND, field: "monitor_id"},
		{name: "DissociateOK", method: "DELETE", path: "/v1/pools/p1/monitors/m1", status: 204},
		{name: "DissociateErrNotAssociated", method: "DELETE", path: "/v1/pools/p1/monitors/m2", status: 404, code: sdnlb.ENOTFOUND},
	})
}

func TestPoolRoutes_Rejected(t *testing.T) {
	p1 := sdnlb.NewPool()
	p1.ID = "p1"
	assertRejections(t, mustMemStore(t, p1), []routeCase{
		{name: "CreateErrProtocol", method: "POST", path: "/v1/pools", body: `{"protocol":"SCTP"}`, status: 400, code: sdnlb.EINVALID, field: "protocol"},
		{name: "CreateErrCreatedAtReadOnly", method: "POST", path: "/v1/pools", body: `{"id":"x","created_at":"now"}`, status: 400, code: sdnlb.EINVALID, field: "created_at"},
		{name: "PutErrIDReadOnly", method: "PUT", path: "/v1/pools/p1", body: `{"id":"p1"}`, status: 400, code: sdnlb.EINVALID, field: "id"},
		{name: "PatchErrAdminStateType", method: "PATCH", path: "/v1/pools/p1", body: `{"admin_state_up":"yes"}`, status: 400, code: sdnlb.EINVALID, field: "admin_state_up"},
		{name: "PatchErrMonitorIDsReadOnly", method: "PATCH", path: "/v1/pools/p1", body: `{"monitor_ids":["m2"]}`, status: 400, code: sdnlb.EINVALID, field: "monitor_ids"},
		{name: "PatchErrLBMethod", method: "PATCH", path: "/v1/pools/p1", body: `{"lb_method":"RR"}`, status: 400, code: sdnlb.EINVALID, field: "lb_method"},
		{name: "AssociateErrMissingID", method: "POST", path: "/v1/pools/p1/monitors", body: `{}`, status: 400, code: sdnlb.EINVALID, field: "monitor_id"},
		{name: "AssociateErrIDType", method: "POST", path: "/v1/pools/p1/monitors", body: `{"monitor_id":1}`, status: 400, code: sdnlb.EINVALID, field: "monitor_id"},
	})
}
