package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

// runCompatSteps runs a Floodlight scenario: paths are under
// /quantum/v1.0, and the first failing step ends it, since later steps build
// on earlier ones.
func runCompatSteps(t *testing.T, srv *Server, steps []routeCase) {
	t.Helper()
	ts := MustServe(t, srv)
	for _, st := range steps {
		st.path = "/quantum/v1.0" + st.path
		if !t.Run(st.name, func(t *testing.T) { st.assert(t, ts) }) {
			t.FailNow()
		}
	}
}

// The request bodies are verbatim from Floodlight's LoadBalancerTest
// fixture (floodlight/floodlight master, src/test/java/net/floodlightcontroller/
// loadbalancer/LoadBalancerTest.java).
const (
	fixtureVIP1     = `{"id":"1","name":"vip1","protocol":"icmp","address":"10.0.0.100","port":"8"}`
	fixtureVIP2     = `{"id":"2","name":"vip2","protocol":"tcp","address":"10.0.0.200","port":"100"}`
	fixturePool1    = `{"id":"1","name":"pool1","protocol":"icmp","lb_method":"STATISTICS","vip_id":"1"}`
	fixturePool2    = `{"id":"2","name":"pool2","protocol":"tcp","lb_method":"WRR","vip_id":"2"}`
	fixturePool3    = `{"id":"3","name":"pool3","protocol":"udp","vip_id":"3"}`
	fixtureMonitor1 = `{"id":"1","name":"monitor1","type":"tcp"}`
	fixtureMonitor2 = `{"id":"2","name":"monitor2","type":"tcp"}`
	fixtureMonitor3 = `{"id":"3","name":"monitor3","type":"udp"}`
	fixtureMember1  = `{"id":"1","address":"10.0.0.3","port":"8","pool_id":"1","weight":"2"}`
	fixtureMember2  = `{"id":"2","address":"10.0.0.4","port":"8","pool_id":"1","weight":"3"}`
	fixtureMember3  = `{"id":"3","address":"10.0.0.5","port":"100","pool_id":"2","weight":"4"}`
	fixtureMember4  = `{"id":"4","address":"10.0.0.6","port":"100","pool_id":"2"}`
	fixtureMember5  = `{"id":"5","address":"10.0.0.7","port":"100","pool_id":"1","weight":"5"}`
	fixtureMember6  = `{"id":"6","address":"10.0.0.8","port":"100","pool_id":"1","weight":"5"}`
)

// Responses carry the keys Floodlight's serializers write, in their order,
// and no other (floodlight/floodlight master 71fe8a7, LBVipSerializer,
// LBPoolSerializer, LBMemberSerializer, LBMonitorSerializer and
// LBStatsSerializer.java).
func TestCompat_KeysAsFloodlight(t *testing.T) {
	for _, tt := range []struct {
		name string
		obj  orderedObject
		want []string
	}{
		{"VIP", compatVIP(sdnlb.NewVIP()), []string{"name", "id", "address", "protocol", "port"}},
		{"Pool", compatPool(sdnlb.NewPool()), []string{"id", "name", "vipId", "lbMethod"}}, // then poolMembers, once per member
		{"Member", compatMember(sdnlb.NewMember(), "v"), []string{"id", "address", "port", "poolId", "vipId", "weight", "status"}},
		{"Monitor", compatMonitor(sdnlb.NewMonitor()), []string{"id", "address", "name", "type", "poolId"}},
		{"Stats", compatStats(&sdnlb.PoolStats{}), []string{"Bytes In", "Bytes Out", "Active Flows"}},
	} {
		var keys []string
		for _, p := range tt.obj {
			keys = append(keys, p.key)
		}
		if !slices.Equal(keys, tt.want) {
			t.Errorf("%s keys %q, want Floodlight's %q", tt.name, keys, tt.want)
		}
	}
}

func TestCompat_FloodlightFixture(t *testing.T) {
	store := newMemStore()
	pool1 := `{"id":"1","name":"pool1","vipId":"1","lbMethod":"Statistics","poolMembers":"1","poolMembers":"2","poolMembers":"5","poolMembers":"6"}`
	runCompatSteps(t, store.server(), []routeCase{
		// testCreateVip
		{name: "CreateVIP1", method: "POST", path: "/vips/", body: fixtureVIP1, status: 200,
			want: `{"name":"vip1","id":"1","address":"10.0.0.100","protocol":"1","port":"8"}`},
		{name: "CreateVIP2", method: "POST", path: "/vips/", body: fixtureVIP2, status: 200,
			want: `{"name":"vip2","id":"2","address":"10.0.0.200","protocol":"6","port":"100"}`},
		// As in Floodlight, posting an id again replaces the object.
		{name: "VIP1PostedAgain", method: "POST", path: "/vips/", body: fixtureVIP1, status: 200,
			want: `{"name":"vip1","id":"1","address":"10.0.0.100","protocol":"1","port":"8"}`},
		{name: "ListVIPs", method: "GET", path: "/vips/", status: 200,
			want: `[{"name":"vip1","id":"1","address":"10.0.0.100","protocol":"1","port":"8"},{"name":"vip2","id":"2","address":"10.0.0.200","protocol":"6","port":"100"}]`},

		// testCreatePool: pool 3 names VIP 3, which does not exist.
		{name: "CreatePool1", method: "POST", path: "/pools/", body: fixturePool1, status: 200,
			want: `{"id":"1","name":"pool1","vipId":"1","lbMethod":"Statistics"}`},
		{name: "CreatePool2", method: "POST", path: "/pools/", body: fixturePool2, status: 200,
			want: `{"id":"2","name":"pool2","vipId":"2","lbMethod":"Weighted Round-Robin"}`},
		{name: "ErrPool3VIPMissing", method: "POST", path: "/pools/", body: fixturePool3, status: 404, code: sdnlb.ENOTFOUND, field: "vip_id"},
		{name: "ErrPool3NotStored", method: "GET", path: "/pools/3/", status: 404, code: sdnlb.ENOTFOUND},

		// testCreateMonitor: monitor 3 is UDP, which sdnlb cannot probe.
		{name: "CreateMonitor1", method: "POST", path: "/health_monitors/", body: fixtureMonitor1, status: 200,
			want: `{"id":"1","address":null,"name":"monitor1","type":"6","poolId":null}`},
		{name: "CreateMonitor2", method: "POST", path: "/health_monitors/", body: fixtureMonitor2, status: 200},
		{name: "ErrMonitor3UDP", method: "POST", path: "/health_monitors/", body: fixtureMonitor3, status: 400, code: sdnlb.EINVALID, field: "type"},
		{name: "ErrMonitor3NotStored", method: "GET", path: "/health_monitors/3/", status: 404, code: sdnlb.ENOTFOUND},

		// testCreateMember, member 1 twice.
		{name: "CreateMember1", method: "POST", path: "/members/", body: fixtureMember1, status: 200,
			want: `{"id":"1","address":"10.0.0.3","port":"8","poolId":"1","vipId":"1","weight":"2","status":"Alive"}`},
		{name: "CreateMember2", method: "POST", path: "/members/", body: fixtureMember2, status: 200},
		{name: "CreateMember3", method: "POST", path: "/members/", body: fixtureMember3, status: 200},
		{name: "CreateMember4", method: "POST", path: "/members/", body: fixtureMember4, status: 200,
			want: `{"id":"4","address":"10.0.0.6","port":"100","poolId":"2","vipId":"2","weight":"1","status":"Alive"}`},
		{name: "CreateMember5", method: "POST", path: "/members/", body: fixtureMember5, status: 200},
		{name: "CreateMember6", method: "POST", path: "/members/", body: fixtureMember6, status: 200},
		{name: "Member1PostedAgain", method: "POST", path: "/members/", body: fixtureMember1, status: 200,
			want: `{"id":"1","address":"10.0.0.3","port":"8","poolId":"1","vipId":"1","weight":"2","status":"Alive"}`},
		{name: "GetPool1RepeatsPoolMembers", method: "GET", path: "/pools/1/", status: 200, want: "[" + pool1 + "]"},
		{name: "GetPool1OldForm", method: "GET", path: "/pools/1", status: 200, want: "[" + pool1 + "]"},
		{name: "Pool2Members", method: "GET", path: "/pools/2/members/", status: 200,
			want: `[{"id":"3","address":"10.0.0.5","port":"100","poolId":"2","vipId":"2","weight":"4","status":"Alive"},{"id":"4","address":"10.0.0.6","port":"100","poolId":"2","vipId":"2","weight":"1","status":"Alive"}]`},
		{name: "Pool2MembersOldForm", method: "GET", path: "/pools/2/members", status: 200},
		{name: "GetMember1", method: "GET", path: "/members/1/", status: 200,
			want: `[{"id":"1","address":"10.0.0.3","port":"8","poolId":"1","vipId":"1","weight":"2","status":"Alive"}]`},

		// testAssociateMonitor / testDissociateMonitor
		{name: "AssociateMonitor1", method: "POST", path: "/pools/1/health_monitors/", body: `{"id":"1"}`, status: 200,
			want: `[{"id":"1","address":null,"name":"monitor1","type":"6","poolId":"1"}]`},
		{name: "ListPool1Monitors", method: "GET", path: "/pools/1/health_monitors/", status: 200,
			want: `[{"id":"1","address":null,"name":"monitor1","type":"6","poolId":"1"}]`},
		{name: "AssociateCreatesUnknownMonitor", method: "PUT", path: "/pools/2/health_monitors/", body: `{"id":"9"}`, status: 200,
			check: func(t *testing.T, resp response) {
				if !strings.Contains(string(resp.Body), `"id":"9"`) {
					t.Errorf("monitor 9 not associated: %s", resp.Body)
				}
			}},
		{name: "ErrAssociateUnknownPool", method: "PUT", path: "/pools/nope/health_monitors/", body: `{"id":"10"}`, status: 404, code: sdnlb.ENOTFOUND},
		{name: "ErrAssociateUnknownPoolCreatesNothing", method: "GET", path: "/health_monitors/10/", status: 404, code: sdnlb.ENOTFOUND},
		{name: "DissociateMonitor1", method: "DELETE", path: "/pools/1/health_monitors/1/", status: 200, want: `0`},
		{name: "ErrDissociateAgain", method: "DELETE", path: "/pools/1/health_monitors/1/", status: 404, code: sdnlb.ENOTFOUND},
		{name: "Monitor1KeptWithoutPool", method: "GET", path: "/health_monitors/1/", status: 200,
			want: `[{"id":"1","address":null,"name":"monitor1","type":"6","poolId":null}]`},

		// testSetMemberWeight / testSetPriorityMember
		{name: "SetWeight", method: "PUT", path: "/members/2/9/", status: 200, want: `{"status" : "0"}`},
		{name: "ErrWeightTooBig", method: "PUT", path: "/members/2/300/", status: 400, code: sdnlb.EINVALID, field: "weight"},
		{name: "ErrWeightNotNumber", method: "POST", path: "/members/2/x/", status: 400, code: sdnlb.EINVALID, field: "weight"},
		{name: "SetPriority", method: "PUT", path: "/pools/1/members/1/", status: 200, want: `0`},
		{name: "PriorityWeights", method: "GET", path: "/pools/1/members/", status: 200,
			want: `[{"id":"1","address":"10.0.0.3","port":"8","poolId":"1","vipId":"1","weight":"3","status":"Alive"},` +
				`{"id":"2","address":"10.0.0.4","port":"8","poolId":"1","vipId":"1","weight":"1","status":"Alive"},` +
				`{"id":"5","address":"10.0.0.7","port":"100","poolId":"1","vipId":"1","weight":"1","status":"Alive"},` +
				`{"id":"6","address":"10.0.0.8","port":"100","poolId":"1","vipId":"1","weight":"1","status":"Alive"}]`},
		{name: "ErrPriorityOtherPool", method: "PUT", path: "/pools/2/members/1/", status: 404, code: sdnlb.ENOTFOUND},

		// testRemoveVip / testRemovePool / testRemoveMember: nothing is left
		// pointing at what was deleted.
		{name: "DeleteMember1", method: "DELETE", path: "/members/1/", status: 200, want: `{"status" : "200 OK!"}`},
		{name: "ErrDeleteMember1Again", method: "DELETE", path: "/members/1/", status: 404, code: sdnlb.ENOTFOUND},
		{name: "AssociateMonitor1Again", method: "PUT", path: "/pools/1/health_monitors/", body: `{"id":"1"}`, status: 200},
		{name: "DeleteMonitorInUseDissociates", method: "DELETE", path: "/health_monitors/1/", status: 200, want: `{"status" : "200 OK!"}`},
		{name: "Pool1WithoutMonitor", method: "GET", path: "/pools/1/health_monitors/", status: 200, want: `[]`},
		{name: "DeleteVIP1KeepsItsPool", method: "DELETE", path: "/vips/1/", status: 200, want: `{"status" : "200 OK!"}`},
		{name: "Pool1Unlinked", method: "GET", path: "/pools/1/", status: 200, check: func(t *testing.T, resp response) {
			if !strings.Contains(string(resp.Body), `"vipId":null`) {
				t.Errorf("pool 1 still names its deleted VIP: %s", resp.Body)
			}
		}},
		{name: "DeletePool1TakesItsMembers", method: "DELETE", path: "/pools/1/", status: 200, want: `{"status" : "200 OK!"}`},
		{name: "Pool1MembersGone", method: "GET", path: "/members/2/", status: 404, code: sdnlb.ENOTFOUND},
		{name: "DeletePool2Cascade", method: "DELETE", path: "/pools/2/?cascade=true", status: 200, want: `{"status" : "200 OK!"}`},
		{name: "DeleteVIP2", method: "DELETE", path: "/vips/2", status: 200, want: `{"status" : "200 OK!"}`},
		{name: "ErrGetVIP2", method: "GET", path: "/vips/2/", status: 404, code: sdnlb.ENOTFOUND},

		// /clear/
		{name: "Clear", method: "DELETE", path: "/clear/", status: 200, want: `{"status" : "All Vips, Pools, Members and Monitors have been deleted "}`},
		{name: "EmptyAfterClear", method: "GET", path: "/vips/", status: 200, want: `[]`},
		{name: "NoMembersAfterClear", method: "GET", path: "/members/", status: 200, want: `[]`},
	})
}

func TestCompat_Requests(t *testing.T) {
	store := newMemStore()
	runCompatSteps(t, store.server(), []routeCase{
		{name: "ErrFormContentTypeFromPage", method: "POST", path: "/vips/", body: `{"id":"w","protocol":"TCP","address":"10.0.0.9","port":40000}`,
			headers: []string{"Content-Type: application/x-www-form-urlencoded", "Origin: http://example.com"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrFormContentTypeSameOriginPage", method: "POST", path: "/vips/", body: `{"id":"w","protocol":"TCP","address":"10.0.0.9","port":40000}`,
			headers: []string{"Content-Type: application/x-www-form-urlencoded", "Sec-Fetch-Site: same-origin"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "ErrTextPlain", method: "POST", path: "/vips/", body: `{"id":"w","protocol":"TCP","address":"10.0.0.9","port":40000}`,
			headers: []string{"Content-Type: text/plain"}, status: 415, code: sdnlb.EUNSUPPORTED},
		{name: "NothingStoredByRefusedTypes", method: "GET", path: "/vips/", status: 200, want: `[]`},
		{name: "NoContentTypeNumbersAndHighPort", method: "POST", path: "/vips/", body: `{"id":"w","protocol":"TCP","address":"10.0.0.9","port":40000,"tenant_id":"t","network_id":""}`,
			headers: []string{"Content-Type:"}, status: 200,
			want: `{"name":null,"id":"w","address":"10.0.0.9","protocol":"6","port":"40000"}`},
		{name: "PutOnCollectionCreates", method: "PUT", path: "/vips", body: `{"id":"v2","protocol":"ICMP","address":"10.0.0.10"}`, status: 200,
			want: `{"name":null,"id":"v2","address":"10.0.0.10","protocol":"1","port":"0"}`},
		{name: "UpdateVIPKeepsOtherKeys", method: "POST", path: "/vips/v2/", body: `{"name":"pingable","id":"v2"}`, status: 200,
			want: `{"name":"pingable","id":"v2","address":"10.0.0.10","protocol":"1","port":"0"}`},
		{name: "ErrUpdateVIPBadPort", method: "PUT", path: "/vips/v2", body: `{"port":"70000"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "ErrUpdateMissingVIP", method: "PUT", path: "/vips/nope/", body: `{"name":"x"}`, status: 404, code: sdnlb.ENOTFOUND},
		{name: "NoIDGetsOne", method: "POST", path: "/vips/", body: `{"protocol":"udp","address":"10.0.0.9","port":"53"}`, status: 200},
		{name: "PoolTakesVIPProtocol", method: "POST", path: "/pools", body: `{"id":"p","vip_id":"w","lb_method":"1"}`, status: 200,
			want: `{"id":"p","name":null,"vipId":"w","lbMethod":"Round-Robin"}`},
		{name: "NativeLBMethod", method: "PUT", path: "/pools/p/", body: `{"lb_method":"least_connections","name":"web"}`, status: 200,
			want: `{"id":"p","name":"web","vipId":"w","lbMethod":"LEAST_CONNECTIONS"}`},
		{name: "ErrBodyIDDiffers", method: "PUT", path: "/pools/p/", body: `{"id":"q"}`, status: 400, code: sdnlb.EINVALID, field: "id"},
		{name: "ErrBadLBMethod", method: "POST", path: "/pools/", body: `{"id":"q","lb_method":"FASTEST"}`, status: 400, code: sdnlb.EINVALID, field: "lb_method"},
		{name: "ErrBadJSONStoresNoPool", method: "POST", path: "/pools/", body: `{"id":"q",`, status: 400, code: sdnlb.EINVALID},
		{name: "NoRandomEmptyPool", method: "GET", path: "/pools/", status: 200, want: `[{"id":"p","name":"web","vipId":"w","lbMethod":"LEAST_CONNECTIONS"}]`},
		{name: "ErrUnknownKey", method: "POST", path: "/vips/", body: `{"address":"10.0.0.1","port":"1","lb_method":"RR"}`, status: 400, code: sdnlb.EINVALID, field: "lb_method"},
		{name: "ErrNested", method: "POST", path: "/vips/", body: `{"address":"10.0.0.1","port":{"n":1}}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "ErrNotObject", method: "POST", path: "/vips/", body: `["10.0.0.1"]`, status: 400, code: sdnlb.EINVALID},
		{name: "ErrPortText", method: "POST", path: "/vips/", body: `{"address":"10.0.0.1","port":"http"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "ErrBadAddress", method: "POST", path: "/vips/", body: `{"address":"167772260","port":"80"}`, status: 400, code: sdnlb.EINVALID, field: "address"},
		{name: "ErrTLSProtocol", method: "POST", path: "/vips/", body: `{"address":"10.0.0.1","port":"443","protocol":"tls"}`, status: 400, code: sdnlb.EINVALID, field: "protocol"},
		{name: "ErrTooLarge", method: "POST", path: "/vips/", body: `{"name":"` + strings.Repeat("x", maxBodyBytes) + `"}`, status: 413, code: sdnlb.ETOOLARGE},
		{name: "MemberAdminDown", method: "POST", path: "/members/", body: `{"id":"m","address":"10.0.0.20","port":"80","pool_id":"p","admin_state":"0","status":"1","connection_limit":"5"}`, status: 200,
			want: `{"id":"m","address":"10.0.0.20","port":"80","poolId":"p","vipId":"w","weight":"1","status":"Inactive"}`},
		{name: "MemberUpdate", method: "POST", path: "/members/m/", body: `{"admin_state":"1","weight":7}`, status: 200,
			want: `{"id":"m","address":"10.0.0.20","port":"80","poolId":"p","vipId":"w","weight":"7","status":"Alive"}`},
		{name: "ErrMemberPoolChange", method: "PUT", path: "/members/m/", body: `{"pool_id":"other"}`, status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		{name: "ErrMemberNoPool", method: "POST", path: "/members/", body: `{"address":"10.0.0.21","pool_id":"nope"}`, status: 404, code: sdnlb.ENOTFOUND, field: "pool_id"},
		{name: "ErrMemberAdminState", method: "POST", path: "/members/", body: `{"address":"10.0.0.21","pool_id":"p","admin_state":"maybe"}`, status: 400, code: sdnlb.EINVALID, field: "admin_state"},
		{name: "MonitorICMPIsPing", method: "POST", path: "/health_monitors/", body: `{"id":"h","type":"ICMP","delay":"10","timeout":"3","attempts_before_deactivation":"4","pool_id":"p","address":"1","protocol":"6","port":"80","admin_state":"1","status":"0","network_id":"n"}`, status: 200,
			want: `{"id":"h","address":null,"name":null,"type":"1","poolId":null}`},
		{name: "MonitorHTTP", method: "PUT", path: "/health_monitors/h/", body: `{"type":"http","name":"web"}`, status: 200,
			want: `{"id":"h","address":null,"name":"web","type":"HTTP","poolId":null}`},
		{name: "ErrMonitorAttempts", method: "PUT", path: "/health_monitors/h/", body: `{"attempts_before_deactivation":"0"}`, status: 400, code: sdnlb.EINVALID, field: "attempts_before_deactivation"},
		{name: "ErrMonitorTimeout", method: "PUT", path: "/health_monitors/h/", body: `{"timeout":"10"}`, status: 400, code: sdnlb.EINVALID, field: "timeout"},
		{name: "ListMonitors", method: "GET", path: "/health_monitors/", status: 200,
			want: `[{"id":"h","address":null,"name":"web","type":"HTTP","poolId":null}]`},
		{name: "PeriodRead", method: "GET", path: "/health_monitors/monitors/period/", status: 200, want: `{"status" : "Monitors' period is 10 seconds "}`},
		{name: "PeriodSet", method: "POST", path: "/health_monitors/monitors/20/", status: 200, want: `{"status" : "Monitors period changed to 20 seconds "}`},
		{name: "PeriodReadAfterSet", method: "GET", path: "/health_monitors/monitors/period", status: 200, want: `{"status" : "Monitors' period is 20 seconds "}`},
		{name: "ErrPeriodBelowTimeout", method: "PUT", path: "/health_monitors/monitors/2/", status: 400, code: sdnlb.EINVALID, field: "timeout"},
		{name: "ErrPeriodText", method: "PUT", path: "/health_monitors/monitors/soon/", status: 400, code: sdnlb.EINVALID, field: "period"},
		{name: "Disable", method: "PUT", path: "/health_monitors/all/disable/", status: 200, want: `{"health monitors":"disabled"}`},
		{name: "ErrDisableGetCrossSite", method: "GET", path: "/health_monitors/all/disable", headers: []string{"Sec-Fetch-Site: cross-site"}, status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrDisableGetNoOrigin", method: "GET", path: "/health_monitors/all/disable", status: 403, code: sdnlb.EFORBIDDEN},
		{name: "ErrPeriodGetNoOrigin", method: "GET", path: "/health_monitors/monitors/30", status: 403, code: sdnlb.EFORBIDDEN},
		{name: "PeriodUnchanged", method: "GET", path: "/health_monitors/monitors/period", status: 200, want: `{"status" : "Monitors' period is 20 seconds "}`},
		{name: "Enable", method: "GET", path: "/health_monitors/all/enable", headers: []string{"Sec-Fetch-Site: same-origin"}, status: 200, want: `{"health monitors":"enabled"}`},
		{name: "LoadBalancerPyDisable", method: "POST", path: "/health_monitors/disable/", status: 200, want: `{"health monitors":"disabled"}`},
		{name: "LoadBalancerPyEnable", method: "POST", path: "/health_monitors/enable/", status: 200, want: `{"health monitors":"enabled"}`},
		{name: "DoubleSlash", method: "GET", path: "//health_monitors//monitors/period", status: 200, want: `{"status" : "Monitors' period is 20 seconds "}`},
		{name: "ErrUnknownPath", method: "GET", path: "/firewall/", status: 404, code: sdnlb.ENOTFOUND},
		{name: "ErrUnknownNestedPath", method: "GET", path: "/vips/w/pools/", status: 404, code: sdnlb.ENOTFOUND},
		{name: "ErrPoolMembersUnknownPool", method: "GET", path: "/pools/nope/members/", status: 404, code: sdnlb.ENOTFOUND},
		{name: "ErrStatsNoController", method: "GET", path: "/pools/p/stats/", status: 503, code: sdnlb.EUNAVAILABLE},
	})
}

func TestCompat_AdminStateSetsDisabled(t *testing.T) {
	a, b := sdnlb.NewMonitor(), sdnlb.NewMonitor()
	a.ID, b.ID = "a", "b"
	store := mustMemStore(t, a, b)
	ts := MustServe(t, store.server())
	if resp := testRequest(t, ts, "POST", "/quantum/v1.0/health_monitors/all/disable/", ""); resp.Status != 200 {
		t.Fatalf("status %d: %s", resp.Status, resp.Body)
	}
	for _, id := range []string{"a", "b"} {
		m, err := store.FindMonitorByID(context.Background(), id)
		if err != nil || m.AdminStateUp {
			t.Errorf("monitor %s: %+v %v, want admin down", id, m, err)
		}
	}
}

func TestCompat_PoolStats(t *testing.T) {
	stats := &mock.StatsService{PoolStatsFn: func(ctx context.Context, id string) (*sdnlb.PoolStats, error) {
		if id != "1" {
			return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no pool %s", id)
		}
		return &sdnlb.PoolStats{PoolID: "1", BytesIn: 10, BytesOut: 20, ActiveConnections: 15}, nil
	}}
	runCompatSteps(t, &Server{StatsService: stats}, []routeCase{
		{name: "OK", method: "GET", path: "/pools/1/stats/", status: 200, want: `{"Bytes In":"10","Bytes Out":"20","Active Flows":"30"}`},
		{name: "ErrUnknownPool", method: "GET", path: "/pools/2/stats", status: 404, code: sdnlb.ENOTFOUND},
	})
}

func TestCompat_WritesNeedToken(t *testing.T) {
	store := newMemStore()
	srv := store.server()
	srv.Token = "s3cret"
	runCompatSteps(t, srv, []routeCase{
		{name: "ErrCreate", method: "POST", path: "/vips/", body: fixtureVIP1, status: 401, code: sdnlb.EUNAUTHORIZED},
		{name: "ErrGetThatWrites", method: "GET", path: "/health_monitors/all/disable/", status: 401, code: sdnlb.EUNAUTHORIZED},
		{name: "ErrClear", method: "DELETE", path: "/clear/", status: 401, code: sdnlb.EUNAUTHORIZED},
		{name: "ReadOpen", method: "GET", path: "/vips/", status: 200, want: `[]`},
		{name: "CreateWithToken", method: "POST", path: "/vips/", body: fixtureVIP1, headers: []string{"Authorization: Bearer s3cret"}, status: 200},
	})
}

// TestCompat_PoolDispatchForwarding: Floodlight's pool has neither field,
// so its routes neither take nor show them; its pools get the defaults and
// its updates keep what the native API set.
func TestCompat_PoolDispatchForwarding(t *testing.T) {
	store := newMemStore()
	srv := store.server()
	runCompatSteps(t, srv, []routeCase{
		{name: "CreateVIP", method: "POST", path: "/vips/", body: `{"id":"w","protocol":"tcp","address":"10.0.0.9","port":"80"}`, status: 200},
		{name: "CreatePool", method: "POST", path: "/pools/", body: `{"id":"p","vip_id":"w"}`, status: 200,
			want: `{"id":"p","name":null,"vipId":"w","lbMethod":"Invalid Method"}`},
		{name: "ErrDispatchKey", method: "POST", path: "/pools/", body: `{"id":"q","dispatch":"CONTROLLER"}`, status: 400, code: sdnlb.EINVALID, field: "dispatch"},
		{name: "ErrForwardingKey", method: "PUT", path: "/pools/p/", body: `{"forwarding":"DSR"}`, status: 400, code: sdnlb.EINVALID, field: "forwarding"},
	})
	ts := MustServe(t, srv)
	var p sdnlb.Pool
	decodeBody(t, testRequest(t, ts, "GET", "/v1/pools/p", ""), 200, &p)
	if p.Dispatch != sdnlb.DispatchSwitch || p.Forwarding != sdnlb.ForwardingNAT {
		t.Fatalf("a Floodlight pool got %s %s, want the defaults SWITCH NAT", p.Dispatch, p.Forwarding)
	}
	decodeBody(t, testRequest(t, ts, "PATCH", "/v1/pools/p", `{"dispatch":"CONTROLLER","forwarding":"DSR"}`), 200, &p)
	runCompatSteps(t, srv, []routeCase{
		{name: "UpdateKeepsThem", method: "PUT", path: "/pools/p/", body: `{"name":"web"}`, status: 200,
			want: `{"id":"p","name":"web","vipId":"w","lbMethod":"Invalid Method"}`},
		{name: "ErrDSRMemberPort", method: "POST", path: "/members/", body: `{"address":"10.0.0.20","port":"8080","pool_id":"p"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "DSRMemberOnVIPPort", method: "POST", path: "/members/", body: `{"id":"m","address":"10.0.0.20","port":"80","pool_id":"p"}`, status: 200},
	})
	decodeBody(t, testRequest(t, ts, "GET", "/v1/pools/p", ""), 200, &p)
	if p.Dispatch != sdnlb.DispatchController || p.Forwarding != sdnlb.ForwardingDSR || p.Name != "web" {
		t.Fatalf("after a Floodlight update: %+v", p)
	}
}

// TestCompat_UnsetLBMethod: a pool created without lb_method shows
// Floodlight's "Invalid Method" until a client chooses one, and balances
// by ROUND_ROBIN, which /v1 shows.
func TestCompat_UnsetLBMethod(t *testing.T) {
	store := newMemStore()
	srv := store.server()
	runCompatSteps(t, srv, []routeCase{
		{name: "CreateVIP", method: "POST", path: "/vips/", body: `{"id":"w","protocol":"tcp","address":"10.0.0.9","port":"80"}`, status: 200},
		{name: "CreatePool", method: "POST", path: "/pools/", body: `{"id":"p","name":"web","vip_id":"w"}`, status: 200,
			want: `{"id":"p","name":"web","vipId":"w","lbMethod":"Invalid Method"}`},
		{name: "ListShowsIt", method: "GET", path: "/pools/", status: 200,
			want: `[{"id":"p","name":"web","vipId":"w","lbMethod":"Invalid Method"}]`},
	})
	ts := MustServe(t, srv)
	var p sdnlb.Pool
	decodeBody(t, testRequest(t, ts, "GET", "/v1/pools/p", ""), 200, &p)
	if p.LBMethod != sdnlb.RoundRobin || p.Dispatch != sdnlb.DispatchSwitch {
		t.Fatalf("/v1 shows %s %s, want the default ROUND_ROBIN SWITCH", p.LBMethod, p.Dispatch)
	}
	runCompatSteps(t, srv, []routeCase{
		{name: "ChosenRR", method: "PUT", path: "/pools/p/", body: `{"lb_method":"RR"}`, status: 200,
			want: `{"id":"p","name":"web","vipId":"w","lbMethod":"Round-Robin"}`},
		// Posting the pool again without lb_method replaces the choice.
		{name: "PostedAgainWithout", method: "POST", path: "/pools/", body: `{"id":"p","name":"web","vip_id":"w"}`, status: 200,
			want: `{"id":"p","name":"web","vipId":"w","lbMethod":"Invalid Method"}`},
	})
	decodeBody(t, testRequest(t, ts, "PATCH", "/v1/pools/p", `{"lb_method":"ROUND_ROBIN"}`), 200, &p)
	runCompatSteps(t, srv, []routeCase{
		{name: "ChosenThroughV1", method: "GET", path: "/pools/p/", status: 200,
			want: `[{"id":"p","name":"web","vipId":"w","lbMethod":"Round-Robin"}]`},
	})
	// A pool created through /v1 without a method shows its method.
	decodeBody(t, testRequest(t, ts, "POST", "/v1/pools", `{"id":"n"}`), 201, &p)
	runCompatSteps(t, srv, []routeCase{
		{name: "NativePool", method: "GET", path: "/pools/n/", status: 200,
			want: `[{"id":"n","name":null,"vipId":null,"lbMethod":"Round-Robin"}]`},
	})
}

// TestCompat_AnyProtocolVIP: a VIP created without a protocol serves every
// protocol (ANY on /v1), shows Floodlight's "0" and is alone on its
// address; its pool takes ANY from it.
func TestCompat_AnyProtocolVIP(t *testing.T) {
	store := newMemStore()
	srv := store.server()
	runCompatSteps(t, srv, []routeCase{
		{name: "CreateVIP", method: "POST", path: "/vips/", body: `{"id":"all","address":"10.0.0.9","port":"80"}`, status: 200,
			want: `{"name":null,"id":"all","address":"10.0.0.9","protocol":"0","port":"80"}`},
		{name: "PoolTakesAny", method: "POST", path: "/pools/", body: `{"id":"p","vip_id":"all","lb_method":"RR"}`, status: 200,
			want: `{"id":"p","name":null,"vipId":"all","lbMethod":"Round-Robin"}`},
		{name: "ErrTCPOnAnyAddress", method: "POST", path: "/vips/", body: `{"id":"web","protocol":"tcp","address":"10.0.0.9","port":"443"}`, status: 409, code: sdnlb.ECONFLICT, field: "address"},
		{name: "ProtocolZeroIsAny", method: "POST", path: "/vips/", body: `{"id":"all2","protocol":"0","address":"10.0.0.10"}`, status: 200,
			want: `{"name":null,"id":"all2","address":"10.0.0.10","protocol":"0","port":"0"}`},
		{name: "ErrPoolOtherProtocol", method: "POST", path: "/pools/", body: `{"id":"q","vip_id":"all2","protocol":"tcp"}`, status: 400, code: sdnlb.EINVALID, field: "protocol"},
		{name: "ProtocolNumber", method: "POST", path: "/vips/", body: `{"id":"udp","protocol":"17","address":"10.0.0.11","port":"53"}`, status: 200,
			want: `{"name":null,"id":"udp","address":"10.0.0.11","protocol":"17","port":"53"}`},
		{name: "ErrProtocolNumber", method: "POST", path: "/vips/", body: `{"protocol":"47","address":"10.0.0.12"}`, status: 400, code: sdnlb.EINVALID, field: "protocol"},
		{name: "UpdateKeepsAny", method: "PUT", path: "/vips/all/", body: `{"name":"everything"}`, status: 200,
			want: `{"name":"everything","id":"all","address":"10.0.0.9","protocol":"0","port":"80"}`},
	})
	ts := MustServe(t, srv)
	var v sdnlb.VIP
	decodeBody(t, testRequest(t, ts, "GET", "/v1/vips/all", ""), 200, &v)
	if v.Protocol != sdnlb.ProtocolAny || v.PoolID != "p" {
		t.Fatalf("/v1 shows protocol %s pool %q, want ANY p", v.Protocol, v.PoolID)
	}
	var p sdnlb.Pool
	if decodeBody(t, testRequest(t, ts, "GET", "/v1/pools/p", ""), 200, &p); p.Protocol != sdnlb.ProtocolAny {
		t.Fatalf("/v1 shows the pool's protocol %s, want ANY", p.Protocol)
	}
	decodeBody(t, testRequest(t, ts, "POST", "/v1/vips", `{"id":"n","address":"10.0.0.20","protocol":"ANY"}`), 201, &v)
	assertError(t, testRequest(t, ts, "POST", "/v1/vips", `{"address":"10.0.0.21","protocol":"GRE"}`), 400, sdnlb.EINVALID, "protocol")
	assertError(t, testRequest(t, ts, "POST", "/v1/vips", `{"address":"10.0.0.20","protocol":"TCP","port":22}`), 409, sdnlb.ECONFLICT, "address")
}

// TestCompat_PostExistingIDReplaces: as in Floodlight, whose resources
// keep objects in a map by id, POST of an id that exists replaces the
// object with the body (defaults for what it leaves out), checked as a
// create is; /v1 keeps 409.
func TestCompat_PostExistingIDReplaces(t *testing.T) {
	store := newMemStore()
	srv := store.server()
	vip := func(id, name, port string) string {
		return `{"name":"` + name + `","id":"` + id + `","address":"10.0.0.100","protocol":"6","port":"` + port + `"}`
	}
	runCompatSteps(t, srv, []routeCase{
		{name: "CreateVIP", method: "POST", path: "/vips/", body: `{"id":"1","name":"web","protocol":"tcp","address":"10.0.0.100","port":"80"}`, status: 200},
		{name: "CreateVIP2", method: "POST", path: "/vips/", body: `{"id":"2","protocol":"tcp","address":"10.0.0.101","port":"80"}`, status: 200},
		{name: "CreatePool", method: "POST", path: "/pools/", body: `{"id":"1","name":"pool","protocol":"tcp","lb_method":"STATISTICS","vip_id":"1"}`, status: 200},
		{name: "CreateMember", method: "POST", path: "/members/", body: `{"id":"1","address":"10.0.0.1","port":"8080","pool_id":"1","weight":"5"}`, status: 200},
		{name: "CreateMonitor", method: "POST", path: "/health_monitors/", body: `{"id":"1","name":"check","type":"tcp","delay":"10","timeout":"3"}`, status: 200},
		{name: "AssociateMonitor", method: "POST", path: "/pools/1/health_monitors/", body: `{"id":"1"}`, status: 200},

		// A refused replacement changes nothing.
		{name: "ErrVIPBadPort", method: "POST", path: "/vips/", body: `{"id":"1","protocol":"tcp","address":"10.0.0.100","port":"70000"}`, status: 400, code: sdnlb.EINVALID, field: "port"},
		{name: "ErrVIPNoAddress", method: "POST", path: "/vips/", body: `{"id":"1","protocol":"tcp","port":"80"}`, status: 400, code: sdnlb.EINVALID, field: "address"},
		{name: "ErrVIPOtherAddressTaken", method: "POST", path: "/vips/", body: `{"id":"1","protocol":"tcp","address":"10.0.0.101","port":"80"}`, status: 409, code: sdnlb.ECONFLICT, field: "address"},
		{name: "VIPUnchanged", method: "GET", path: "/vips/1/", status: 200, want: "[" + vip("1", "web", "80") + "]"},
		{name: "ErrMemberMoves", method: "POST", path: "/members/", body: `{"id":"1","address":"10.0.0.1","pool_id":"2"}`, status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		{name: "ErrMemberNoPool", method: "POST", path: "/members/", body: `{"id":"1","address":"10.0.0.1"}`, status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		{name: "Pool9OnVIP2", method: "POST", path: "/pools/", body: `{"id":"9","vip_id":"2"}`, status: 200},
		{name: "ErrPoolOntoVIPWithPool", method: "POST", path: "/pools/", body: `{"id":"1","vip_id":"2"}`, status: 409, code: sdnlb.ECONFLICT, field: "vip_id"},

		// An edited setup script run again: every key it sends replaces,
		// every key it leaves out takes its default.
		{name: "VIPReplaced", method: "POST", path: "/vips/", body: `{"id":"1","name":"www","protocol":"tcp","address":"10.0.0.100","port":"8080"}`, status: 200,
			want: vip("1", "www", "8080")},
		// The VIP's pool is the one its body names, as in Floodlight: none.
		{name: "PoolUnlinkedByVIP", method: "GET", path: "/pools/1/", status: 200, check: func(t *testing.T, resp response) {
			if !strings.Contains(string(resp.Body), `"vipId":null`) {
				t.Errorf("pool 1 still serves VIP 1: %s", resp.Body)
			}
		}},
		// A VIP that names a free pool takes it, and its previous pool is
		// released; a pool that serves another VIP is refused, as on create.
		{name: "VIP2TakesPool1", method: "POST", path: "/vips/", body: `{"id":"2","protocol":"tcp","address":"10.0.0.101","port":"80","pool_id":"1"}`, status: 200},
		{name: "Pool9Released", method: "GET", path: "/pools/9/", status: 200, check: func(t *testing.T, resp response) {
			if !strings.Contains(string(resp.Body), `"vipId":null`) {
				t.Errorf("pool 9 still serves VIP 2: %s", resp.Body)
			}
		}},
		{name: "ErrVIP1TakesPoolOfVIP2", method: "POST", path: "/vips/", body: `{"id":"1","protocol":"tcp","address":"10.0.0.100","port":"80","pool_id":"1"}`, status: 409, code: sdnlb.ECONFLICT, field: "pool_id"},
		// A pool's body names its VIP: posted again it moves there.
		{name: "PoolReplacedMovesToVIP1", method: "POST", path: "/pools/", body: `{"id":"1","name":"pool","vip_id":"1"}`, status: 200,
			want: `{"id":"1","name":"pool","vipId":"1","lbMethod":"Invalid Method","poolMembers":"1"}`},
		{name: "VIP2WithoutPool", method: "GET", path: "/pools/?limit=1000", status: 200, check: func(t *testing.T, resp response) {
			if strings.Contains(string(resp.Body), `"vipId":"2"`) {
				t.Errorf("a pool still serves VIP 2: %s", resp.Body)
			}
		}},
		{name: "MemberReplaced", method: "POST", path: "/members/", body: `{"id":"1","address":"10.0.0.2","pool_id":"1"}`, status: 200,
			want: `{"id":"1","address":"10.0.0.2","port":"0","poolId":"1","vipId":"1","weight":"1","status":"Alive"}`},
		{name: "MonitorReplacedKeepsPools", method: "POST", path: "/health_monitors/", body: `{"id":"1","name":"ping","type":"icmp"}`, status: 200,
			want: `{"id":"1","address":null,"name":"ping","type":"1","poolId":"1"}`},
		{name: "PutOnCollectionReplacesToo", method: "PUT", path: "/vips", body: `{"id":"1","protocol":"tcp","address":"10.0.0.100","port":"81"}`, status: 200,
			want: `{"name":null,"id":"1","address":"10.0.0.100","protocol":"6","port":"81"}`},
	})
	ts := MustServe(t, srv)
	var m sdnlb.Monitor
	decodeBody(t, testRequest(t, ts, "GET", "/v1/monitors/1", ""), 200, &m)
	if m.Type != sdnlb.MonitorPING || m.Delay != sdnlb.NewMonitor().Delay {
		t.Errorf("replaced monitor %s delay %v, want PING with the default delay", m.Type, m.Delay)
	}
	assertError(t, testRequest(t, ts, "POST", "/v1/vips", `{"id":"1","address":"10.0.0.102","protocol":"TCP","port":80}`), 409, sdnlb.ECONFLICT, "id")
}

// A pool lists every member, however many: its poolMembers are read a page
// at a time and written as they are read.
func TestCompat_PoolManyMembers(t *testing.T) {
	const n = 2*sdnlb.MaxPageLimit + 1
	p := sdnlb.NewPool()
	p.ID = "web"
	objects := []any{p}
	for i := range n {
		m := sdnlb.NewMember()
		m.ID, m.PoolID, m.Address = fmt.Sprintf("m%04d", i), "web", fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
		objects = append(objects, m)
	}
	ts := MustServe(t, mustMemStore(t, objects...).server())
	for _, path := range []string{"/quantum/v1.0/pools/", "/quantum/v1.0/pools/web/"} {
		resp := testRequest(t, ts, "GET", path, "")
		if resp.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.Status, resp.Body)
		}
		dec := json.NewDecoder(bytes.NewReader(resp.Body))
		var members []string
		for tok, err := dec.Token(); err == nil; tok, err = dec.Token() {
			if tok == "poolMembers" {
				id, _ := dec.Token()
				members = append(members, id.(string))
			}
		}
		if len(members) != n || members[0] != "m0000" || members[n-1] != fmt.Sprintf("m%04d", n-1) || !slices.IsSorted(members) {
			t.Errorf("GET %s: %d poolMembers, from %v to %v", path, len(members), members[:1], members[len(members)-1:])
		}
	}
}

// Floodlight's routes know no AGENT monitor: they take none, and a
// monitor they replace is of one of their types, without an agent's port.
func TestCompat_AgentMonitor(t *testing.T) {
	agent := sdnlb.NewMonitor()
	agent.ID, agent.Type, agent.Port = "ag", sdnlb.MonitorAgent, 5555
	srv := mustMemStore(t, agent).server()
	runCompatSteps(t, srv, []routeCase{
		{name: "ListShowsAgent", method: "GET", path: "/health_monitors/ag/", status: 200,
			want: `[{"id":"ag","address":null,"name":null,"type":"AGENT","poolId":null}]`},
		{name: "ErrCreateAgent", method: "POST", path: "/health_monitors/", body: `{"id":"x","type":"agent"}`, status: 400, code: sdnlb.EINVALID, field: "type"},
		{name: "ReplacedAsTCP", method: "POST", path: "/health_monitors/", body: `{"id":"ag","name":"check"}`, status: 200,
			want: `{"id":"ag","address":null,"name":"check","type":"6","poolId":null}`},
	})
	var m sdnlb.Monitor
	decodeBody(t, testRequest(t, MustServe(t, srv), "GET", "/v1/monitors/ag", ""), 200, &m)
	if m.Type != sdnlb.MonitorTCP || m.Port != 0 {
		t.Errorf("replaced monitor %s port %d, want TCP on the member's own port (0)", m.Type, m.Port)
	}
}

// DELETE /vips/{vip}/ reads cascade as every boolean query parameter is
// read: cascade=1 takes the pool along, and a value that is no boolean is
// refused before anything changes.
func TestCompat_VIPDeleteCascadeBoolean(t *testing.T) {
	vip := sdnlb.NewVIP()
	vip.ID, vip.Address = "v", "192.0.2.10"
	pool := sdnlb.NewPool()
	pool.ID, pool.VIPID = "p", "v"
	store := mustMemStore(t, vip, pool)
	ts := MustServe(t, store.server())
	ctx := context.Background()

	assertError(t, testRequest(t, ts, "DELETE", "/quantum/v1.0/vips/v/?cascade=yes", ""), http.StatusBadRequest, sdnlb.EINVALID, "cascade")
	if p, err := store.FindPoolByID(ctx, "p"); err != nil || p.VIPID != "v" {
		t.Fatalf("a refused delete changed the pool: %+v %v", p, err)
	}
	if resp := testRequest(t, ts, "DELETE", "/quantum/v1.0/vips/v/?cascade=1", ""); resp.Status != http.StatusOK {
		t.Fatalf("cascade=1: %d %s", resp.Status, resp.Body)
	}
	if _, err := store.FindPoolByID(ctx, "p"); sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND {
		t.Errorf("cascade=1 left the pool: %v", err)
	}
}
