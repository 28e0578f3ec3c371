package api

import (
	"testing"

	"github.com/sdnlb/sdnlb"
)

// ipv6Store holds an IPv4 VIP "v4" with pool "p4" and member "m4", an IPv6
// VIP "v6" with pool "p6" and member "m6", and an unlinked pool "free"
// with an IPv4 member.
func ipv6Store(t *testing.T) *memStore {
	vip := func(id, address string) *sdnlb.VIP {
		v := sdnlb.NewVIP()
		v.ID, v.Address, v.Port = id, address, 80
		return v
	}
	pool := func(id, vipID string) *sdnlb.Pool {
		p := sdnlb.NewPool()
		p.ID, p.VIPID = id, vipID
		return p
	}
	member := func(id, poolID, address string) *sdnlb.Member {
		m := sdnlb.NewMember()
		m.ID, m.PoolID, m.Address, m.Port = id, poolID, address, 8080
		return m
	}
	return mustMemStore(t, vip("v4", "10.0.0.100"), pool("p4", "v4"), member("m4", "p4", "10.0.0.1"),
		vip("v6", "2001:db8::100"), pool("p6", "v6"), member("m6", "p6", "2001:db8::1"),
		pool("free", ""), member("mf", "free", "10.0.0.2"))
}

func TestIPv6_Rejected(t *testing.T) {
	var cases []routeCase
	for name, address := range map[string]string{
		"Unspecified": "::", "Loopback": "::1", "Multicast": "ff02::1", "LinkLocal": "fe80::1", "Zone": "fe80::1%eth0",
		"IPv4Mapped": "::ffff:10.0.0.9", "IPv4Compatible": "::10.0.0.9", "WithPort": "[2001:db8::9]:80",
	} {
		cases = append(cases,
			routeCase{name: "VIPErr" + name, method: "POST", path: "/v1/vips", body: `{"address":"` + address + `","port":80}`,
				status: 400, code: sdnlb.EINVALID, field: "address"},
			routeCase{name: "MemberErr" + name, method: "POST", path: "/v1/members", body: `{"pool_id":"p6","address":"` + address + `"}`,
				status: 400, code: sdnlb.EINVALID, field: "address"})
	}
	cases = append(cases,
		routeCase{name: "ErrIPv6MemberInIPv4Pool", method: "POST", path: "/v1/members", body: `{"pool_id":"p4","address":"2001:db8::9"}`,
			status: 400, code: sdnlb.EINVALID, field: "address", check: mentions("2001:db8::9 is IPv6; the pool's VIP v4 (10.0.0.100) is IPv4")},
		routeCase{name: "ErrIPv4MemberInIPv6Pool", method: "POST", path: "/v1/members", body: `{"pool_id":"p6","address":"10.0.0.9"}`,
			status: 400, code: sdnlb.EINVALID, field: "address", check: mentions("10.0.0.9 is IPv4; the pool's VIP v6 (2001:db8::100) is IPv6")},
		routeCase{name: "ErrMemberPatchedToIPv6", method: "PATCH", path: "/v1/members/m4", body: `{"address":"2001:db8::9"}`,
			status: 400, code: sdnlb.EINVALID, field: "address"},
		routeCase{name: "ErrMemberPutIPv4InIPv6Pool", method: "PUT", path: "/v1/members/m6", body: `{"pool_id":"p6","address":"10.0.0.9"}`,
			status: 400, code: sdnlb.EINVALID, field: "address"},
		routeCase{name: "ErrVIPPatchedToIPv6WithMembers", method: "PATCH", path: "/v1/vips/v4", body: `{"address":"2001:db8::200"}`,
			status: 400, code: sdnlb.EINVALID, field: "address"},
		routeCase{name: "ErrPoolOfIPv4MembersTakesIPv6VIP", method: "POST", path: "/v1/vips", body: `{"address":"2001:db8::200","port":80,"pool_id":"free"}`,
			status: 400, code: sdnlb.EINVALID, field: "pool_id"},
		routeCase{name: "ErrCompatVIP", method: "POST", path: "/quantum/v1.0/vips/", body: `{"id":"c6","address":"2001:db8::300","port":"80"}`,
			status: 400, code: sdnlb.EINVALID, field: "address", check: mentions("must be an IPv4 address")},
		routeCase{name: "ErrCompatMember", method: "POST", path: "/quantum/v1.0/members/", body: `{"id":"c6","address":"2001:db8::9","port":"80","pool_id":"p6"}`,
			status: 400, code: sdnlb.EINVALID, field: "address", check: mentions("must be an IPv4 address")},
		routeCase{name: "ErrCompatVIPUpdate", method: "PUT", path: "/quantum/v1.0/vips/v4/", body: `{"address":"::ffff:10.0.0.100"}`,
			status: 400, code: sdnlb.EINVALID, field: "address"},
	)
	assertRejections(t, ipv6Store(t), cases)
}

func TestIPv6_RoundTrip(t *testing.T) {
	runRouteCases(t, ipv6Store(t).server(), []routeCase{
		{name: "VIPCanonical", method: "POST", path: "/v1/vips", body: `{"id":"w","address":"2001:DB8:0::200","port":443}`, status: 201,
			check: decoded(func(t *testing.T, v *sdnlb.VIP) {
				if v.Address != "2001:db8::200" {
					t.Errorf("address %q, want 2001:db8::200", v.Address)
				}
			})},
		{name: "VIPRead", method: "GET", path: "/v1/vips/w", status: 200, check: decoded(func(t *testing.T, v *sdnlb.VIP) {
			if v.Address != "2001:db8::200" {
				t.Errorf("address %q", v.Address)
			}
		})},
		{name: "ErrVIPSameAddressOtherSpelling", method: "POST", path: "/v1/vips", body: `{"address":"2001:db8::0:200","port":443}`,
			status: 409, code: sdnlb.ECONFLICT, field: "address"},
		{name: "PoolDispatchedBySwitch", method: "POST", path: "/v1/pools", body: `{"id":"wp","vip_id":"w"}`, status: 201,
			check: decoded(func(t *testing.T, p *sdnlb.Pool) {
				if p.Dispatch != sdnlb.DispatchSwitch {
					t.Errorf("dispatch %s, want SWITCH", p.Dispatch)
				}
			})},
		{name: "MemberCanonical", method: "POST", path: "/v1/members", body: `{"id":"wm","pool_id":"wp","address":"2001:0DB8::0:0:7","port":443}`, status: 201,
			check: decoded(func(t *testing.T, m *sdnlb.Member) {
				if m.Address != "2001:db8::7" {
					t.Errorf("address %q, want 2001:db8::7", m.Address)
				}
			})},
		{name: "ErrMemberSameEndpointOtherSpelling", method: "POST", path: "/v1/members", body: `{"pool_id":"wp","address":"2001:db8:0:0::7","port":443}`,
			status: 409, code: sdnlb.ECONFLICT, field: "address"},
		{name: "IPv4VIPPoolMovesToIPv6WithoutMembers", method: "POST", path: "/v1/vips", body: `{"id":"x","address":"10.0.0.50","port":80}`, status: 201},
		{name: "IPv4Pool", method: "POST", path: "/v1/pools", body: `{"id":"xp","vip_id":"x"}`, status: 201, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.Dispatch != sdnlb.DispatchSwitch {
				t.Errorf("dispatch %s, want SWITCH", p.Dispatch)
			}
		})},
		{name: "VIPMovesToIPv6", method: "PATCH", path: "/v1/vips/x", body: `{"address":"2001:db8::50"}`, status: 200},
		{name: "PoolKeepsItsDispatch", method: "GET", path: "/v1/pools/xp", status: 200, check: decoded(func(t *testing.T, p *sdnlb.Pool) {
			if p.Dispatch != sdnlb.DispatchSwitch {
				t.Errorf("dispatch %s, want SWITCH", p.Dispatch)
			}
		})},
		// The Floodlight routes show what /v1 wrote, IPv6 included.
		{name: "CompatShowsIPv6VIP", method: "GET", path: "/quantum/v1.0/vips/v6", status: 200,
			want: `[{"name":null,"id":"v6","address":"2001:db8::100","protocol":"6","port":"80"}]`},
		{name: "CompatShowsIPv6Member", method: "GET", path: "/quantum/v1.0/pools/p6/members/", status: 200,
			want: `[{"id":"m6","address":"2001:db8::1","port":"8080","poolId":"p6","vipId":"v6","weight":"1","status":"Alive"}]`},
		{name: "CompatUpdateOtherKeysOfIPv6VIP", method: "PUT", path: "/quantum/v1.0/vips/v6/", body: `{"name":"six"}`, status: 200,
			want: `{"name":"six","id":"v6","address":"2001:db8::100","protocol":"6","port":"80"}`},
	})
}
