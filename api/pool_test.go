package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

func TestPoolRoutes(t *testing.T) {
	stored := func() *sdnlb.Pool {
		return &sdnlb.Pool{ID: "p1", Name: "web", VIPID: "v1", LBMethod: sdnlb.LeastConnections, Dispatch: sdnlb.DispatchController,
			Forwarding: sdnlb.ForwardingDSR, Protocol: sdnlb.ProtocolTCP, AdminStateUp: true, MonitorIDs: []string{"m1"}}
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
			if p.Dispatch != sdnlb.DispatchSwitch || p.Forwarding != sdnlb.ForwardingNAT {
				t.Errorf("dispatch %q forwarding %q, want the defaults SWITCH and NAT", p.Dispatch, p.Forwarding)
			}
		}},
		{name: "CreateDispatchForwardingOK", method: "POST", path: "/v1/pools", body: `{"dispatch":"CONTROLLER","forwarding":"DSR"}`, status: 201,
			check: func(t *testing.T, resp response) {
				var p sdnlb.Pool
				decodeBody(t, resp, 201, &p)
				if p.Dispatch != sdnlb.DispatchController || p.Forwarding != sdnlb.ForwardingDSR {
					t.Errorf("got %+v", p)
				}
			}},
		// ADAPTIVE is switch-picked like the other weighted shares.
		{name: "CreateAdaptiveSlowStartOK", method: "POST", path: "/v1/pools", body: `{"lb_method":"ADAPTIVE","slow_start":12.5}`, status: 201,
			check: decoded(func(t *testing.T, p *sdnlb.Pool) {
				if p.LBMethod != sdnlb.Adaptive || p.Dispatch != sdnlb.DispatchSwitch || p.SlowStart != 12.5 {
					t.Errorf("got %+v", p)
				}
			})},
		{name: "CreateErrVIPNotFound", method: "POST", path: "/v1/pools", body: `{"vip_id":"missing"}`, status: 404, code: sdnlb.ENOTFOUND, field: "vip_id"},
		{name: "CreateErrVIPTaken", method: "POST", path: "/v1/pools", body: `{"vip_id":"v1"}`, status: 409, code: sdnlb.ECONFLICT, field: "vip_id"},
		{name: "GetOK", method: "GET", path: "/v1/pools/p1", status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.ID != "p1" || len(p.MonitorIDs) != 1 || p.Dispatch != sdnlb.DispatchController || p.Forwarding != sdnlb.ForwardingDSR {
				t.Errorf("got %+v", p)
			}
		})},
		{name: "GetShowsDispatchForwarding", method: "GET", path: "/v1/pools/p1", status: 200, check: func(t *testing.T, resp response) {
			if b := string(resp.Body); !strings.Contains(b, `"dispatch":"CONTROLLER"`) || !strings.Contains(b, `"forwarding":"DSR"`) {
				t.Errorf("body %s", b)
			}
		}},
		{name: "GetErrNotFound", method: "GET", path: "/v1/pools/nope", status: 404, code: sdnlb.ENOTFOUND},
		{name: "PatchOK", method: "PATCH", path: "/v1/pools/p1", body: `{"lb_method":"SOURCE_IP"}`, status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.LBMethod != sdnlb.SourceIP || p.Name != "web" || p.VIPID != "v1" {
				t.Errorf("got %+v", p)
			}
		})},
		{name: "PatchDispatchOK", method: "PATCH", path: "/v1/pools/p1", body: `{"dispatch":"SWITCH"}`, status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.Dispatch != sdnlb.DispatchSwitch || p.Forwarding != sdnlb.ForwardingDSR || p.LBMethod != sdnlb.LeastConnections {
				t.Errorf("got %+v", p)
			}
		})},
		{name: "PatchSlowStartOK", method: "PATCH", path: "/v1/pools/p1", body: `{"lb_method":"WEIGHTED_LEAST_CONNECTIONS","slow_start":60}`, status: 200,
			check: decoded(func(t *testing.T, p *sdnlb.Pool) {
				if p.SlowStart != 60 || p.Dispatch != sdnlb.DispatchController {
					t.Errorf("got %+v", p)
				}
			})},
		{name: "PatchForwardingOK", method: "PATCH", path: "/v1/pools/p1", body: `{"forwarding":"NAT"}`, status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.Forwarding != sdnlb.ForwardingNAT || p.Dispatch != sdnlb.DispatchController {
				t.Errorf("got %+v", p)
			}
		})},
		{name: "PutOK", method: "PUT", path: "/v1/pools/p1", body: `{"name":"x"}`, status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.LBMethod != sdnlb.RoundRobin || p.Dispatch != sdnlb.DispatchSwitch || p.Forwarding != sdnlb.ForwardingNAT || p.Name != "x" || p.VIPID != "" ||
				p.SlowStart != 0 {
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
		{name: "CreateErrDispatch", method: "POST", path: "/v1/pools", body: `{"id":"x","dispatch":"HYBRID"}`, status: 400, code: sdnlb.EINVALID, field: "dispatch"},
		{name: "CreateErrForwarding", method: "POST", path: "/v1/pools", body: `{"id":"x","forwarding":"TUNNEL"}`, status: 400, code: sdnlb.EINVALID, field: "forwarding"},
		{name: "CreateErrSlowStartMethod", method: "POST", path: "/v1/pools", body: `{"id":"x","slow_start":30}`, status: 400, code: sdnlb.EINVALID, field: "slow_start"},
		{name: "CreateErrClientPrefixZero", method: "POST", path: "/v1/pools", body: `{"id":"x","client_ipv6_prefix":0}`, status: 400, code: sdnlb.EINVALID, field: "client_ipv6_prefix"},
		{name: "CreateErrClientPrefixLong", method: "POST", path: "/v1/pools", body: `{"id":"x","client_ipv6_prefix":129}`, status: 400, code: sdnlb.EINVALID, field: "client_ipv6_prefix"},
		{name: "CreateErrHashKey", method: "POST", path: "/v1/pools", body: `{"id":"x","lb_method":"CONSISTENT_HASH","hash_key":"PORT"}`, status: 400, code: sdnlb.EINVALID, field: "hash_key"},
		{name: "CreateErrHashKeyMethod", method: "POST", path: "/v1/pools", body: `{"id":"x","lb_method":"ROUND_ROBIN","hash_key":"CLIENT"}`, status: 400, code: sdnlb.EINVALID, field: "hash_key"},
		{name: "PatchErrHashKeyMethod", method: "PATCH", path: "/v1/pools/p1", body: `{"hash_key":"CLIENT"}`, status: 400, code: sdnlb.EINVALID, field: "hash_key"},
		{name: "CreateErrHashKeyClientPrefix", method: "POST", path: "/v1/pools", body: `{"id":"x","lb_method":"CONSISTENT_HASH","hash_key":"CLIENT","dispatch":"SWITCH","client_ipv6_prefix":64}`, status: 400, code: sdnlb.EINVALID, field: "client_ipv6_prefix"},
		{name: "PatchErrClientPrefixType", method: "PATCH", path: "/v1/pools/p1", body: `{"client_ipv6_prefix":"64"}`, status: 400, code: sdnlb.EINVALID, field: "client_ipv6_prefix"},
		{name: "CreateErrSlowStartHigh", method: "POST", path: "/v1/pools", body: `{"id":"x","lb_method":"ADAPTIVE","slow_start":3601}`, status: 400, code: sdnlb.EINVALID, field: "slow_start"},
		{name: "CreateErrSlowStartNegative", method: "POST", path: "/v1/pools", body: `{"id":"x","lb_method":"ADAPTIVE","slow_start":-1}`, status: 400, code: sdnlb.EINVALID, field: "slow_start"},
		{name: "CreateErrSlowStartType", method: "POST", path: "/v1/pools", body: `{"id":"x","slow_start":"30s"}`, status: 400, code: sdnlb.EINVALID, field: "slow_start"},
		{name: "PatchErrSlowStartMethod", method: "PATCH", path: "/v1/pools/p1", body: `{"slow_start":5}`, status: 400, code: sdnlb.EINVALID, field: "slow_start"},
		{name: "CreateErrDispatchType", method: "POST", path: "/v1/pools", body: `{"id":"x","dispatch":1}`, status: 400, code: sdnlb.EINVALID, field: "dispatch"},
		{name: "PatchErrDispatch", method: "PATCH", path: "/v1/pools/p1", body: `{"dispatch":"switch"}`, status: 400, code: sdnlb.EINVALID, field: "dispatch"},
		{name: "PatchErrForwarding", method: "PATCH", path: "/v1/pools/p1", body: `{"forwarding":""}`, status: 400, code: sdnlb.EINVALID, field: "forwarding"},
		{name: "PutErrForwarding", method: "PUT", path: "/v1/pools/p1", body: `{"name":"x","forwarding":"dsr"}`, status: 400, code: sdnlb.EINVALID, field: "forwarding"},
		{name: "AssociateErrMissingID", method: "POST", path: "/v1/pools/p1/monitors", body: `{}`, status: 400, code: sdnlb.EINVALID, field: "monitor_id"},
		{name: "AssociateErrIDType", method: "POST", path: "/v1/pools/p1/monitors", body: `{"monitor_id":1}`, status: 400, code: sdnlb.EINVALID, field: "monitor_id"},
	})
}

// TestPoolRoutes_DSR runs the rule that a DSR pool's members use the VIP's
// port through the routes that can break it, on a store that enforces it:
// each refusal is a 400 naming the field and changes nothing.
func TestPoolRoutes_DSR(t *testing.T) {
	v1, v2, free := sdnlb.NewVIP(), sdnlb.NewVIP(), sdnlb.NewVIP()
	v1.ID, v1.Address, v1.Port = "v1", "10.0.0.100", 80
	v2.ID, v2.Address, v2.Port = "v2", "10.0.0.101", 80
	free.ID, free.Address, free.Port = "free", "10.0.0.102", 80 // no pool
	dsr, nat, staged := sdnlb.NewPool(), sdnlb.NewPool(), sdnlb.NewPool()
	dsr.ID, dsr.VIPID, dsr.Forwarding = "dsr", "v1", sdnlb.ForwardingDSR
	nat.ID, nat.VIPID = "nat", "v2"
	staged.ID, staged.Forwarding = "staged", sdnlb.ForwardingDSR // no VIP yet
	onVIPPort, onOwnPort, onOther := sdnlb.NewMember(), sdnlb.NewMember(), sdnlb.NewMember()
	onVIPPort.ID, onVIPPort.PoolID, onVIPPort.Address = "m1", "dsr", "10.0.0.1"
	onOwnPort.ID, onOwnPort.PoolID, onOwnPort.Address, onOwnPort.Port = "m2", "dsr", "10.0.0.2", 80
	onOther.ID, onOther.PoolID, onOther.Address, onOther.Port = "m3", "nat", "10.0.0.3", 8080
	stagedMember := sdnlb.NewMember()
	stagedMember.ID, stagedMember.PoolID, stagedMember.Address, stagedMember.Port = "m4", "staged", "10.0.0.4", 8080
	store := mustMemStore(t, v1, v2, free, dsr, nat, staged, onVIPPort, onOwnPort, onOther, stagedMember)

	assertRejections(t, store, []routeCase{
		{name: "CreateMemberErrPort", method: "POST", path: "/v1/members", body: `{"pool_id":"dsr","address":"10.0.0.9","port":8080}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "PatchMemberErrPort", method: "PATCH", path: "/v1/members/m1", body: `{"port":443}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "PatchPoolErrForwarding", method: "PATCH", path: "/v1/pools/nat", body: `{"forwarding":"DSR"}`, status: 400, code: sdnlb.EINVALID, field: "forwarding"},
		{name: "PutPoolErrForwarding", method: "PUT", path: "/v1/pools/nat", body: `{"vip_id":"v2","forwarding":"DSR"}`, status: 400, code: sdnlb.EINVALID, field: "forwarding"},
		{name: "LinkPoolErrForwarding", method: "PATCH", path: "/v1/pools/staged", body: `{"vip_id":"free"}`, status: 400, code: sdnlb.EINVALID, field: "forwarding"},
		{name: "LinkVIPErrPoolID", method: "PATCH", path: "/v1/vips/free", body: `{"pool_id":"staged"}`, status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		{name: "PatchVIPErrPort", method: "PATCH", path: "/v1/vips/v1", body: `{"port":8080}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "CreateVIPErrPoolID", method: "POST", path: "/v1/vips", body: `{"address":"10.0.0.103","port":80,"pool_id":"staged"}`, status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		{name: "FloodlightMemberErrPort", method: "POST", path: "/quantum/v1.0/members/", body: `{"pool_id":"dsr","address":"10.0.0.9","port":"8080"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
	})

	runRouteCases(t, store.server(), []routeCase{
		{name: "CreateMemberOnVIPPort", method: "POST", path: "/v1/members", body: `{"pool_id":"dsr","address":"10.0.0.9","port":80}`, status: 201},
		{name: "StagedPoolTakesAnyPort", method: "POST", path: "/v1/members", body: `{"pool_id":"staged","address":"10.0.0.9","port":9000}`, status: 201},
		{name: "NATPoolTakesAnyPort", method: "POST", path: "/v1/members", body: `{"pool_id":"nat","address":"10.0.0.9","port":9000}`, status: 201},
	})
}

// TestPoolRoutes_DispatchForwardingPersist patches each field through a
// store and reads it back.
func TestPoolRoutes_DispatchForwardingPersist(t *testing.T) {
	ts := MustServe(t, newMemStore().server())
	resp := testRequest(t, ts, "POST", "/v1/pools", `{"id":"p"}`)
	var p sdnlb.Pool
	decodeBody(t, resp, 201, &p)
	if p.Dispatch != sdnlb.DispatchSwitch || p.Forwarding != sdnlb.ForwardingNAT {
		t.Fatalf("created %+v, want SWITCH and NAT", p)
	}
	for _, body := range []string{`{"dispatch":"CONTROLLER"}`, `{"forwarding":"DSR"}`} {
		decodeBody(t, testRequest(t, ts, "PATCH", "/v1/pools/p", body), 200, &sdnlb.Pool{})
	}
	decodeBody(t, testRequest(t, ts, "GET", "/v1/pools/p", ""), 200, &p)
	if p.Dispatch != sdnlb.DispatchController || p.Forwarding != sdnlb.ForwardingDSR {
		t.Fatalf("read back %+v, want CONTROLLER and DSR", p)
	}
	// The list shows them too.
	var l struct {
		Pools []map[string]json.RawMessage `json:"pools"`
	}
	if err := json.Unmarshal(testRequest(t, ts, "GET", "/v1/pools", "").Body, &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Pools) != 1 || string(l.Pools[0]["dispatch"]) != `"CONTROLLER"` || string(l.Pools[0]["forwarding"]) != `"DSR"` {
		t.Fatalf("list %+v", l)
	}
}
