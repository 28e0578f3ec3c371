package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

const (
	edge1 = "00:00:00:00:00:00:00:01"
	edge2 = "00:00:00:00:00:00:00:02"
)

var testHops = []NextHop{
	{edge1, netip.MustParseAddr("192.0.2.1")},
	{edge2, netip.MustParseAddr("192.0.2.2")},
	{edge1, netip.MustParseAddr("2001:db8::1")},
}

// testConfig is a VIP per address, each with a pool and one member UP.
func testConfig(addrs ...string) *sdnlb.Config {
	cfg := &sdnlb.Config{}
	for i, a := range addrs {
		v := sdnlb.NewVIP()
		v.ID, v.Address, v.PoolID = fmt.Sprintf("v%d", i), a, fmt.Sprintf("p%d", i)
		p := &sdnlb.Pool{ID: v.PoolID, VIPID: v.ID, AdminStateUp: true}
		m := sdnlb.NewMember()
		m.ID, m.PoolID, m.Health.Status = fmt.Sprintf("m%d", i), p.ID, sdnlb.MemberUp
		cfg.VIPs, cfg.Pools, cfg.Members = append(cfg.VIPs, v), append(cfg.Pools, p), append(cfg.Members, m)
	}
	return cfg
}

// render writes routes as "prefix via next hop #path (vips)", one a line.
func render(routes []Route) string {
	var lines []string
	for _, r := range routes {
		lines = append(lines, fmt.Sprintf("%s via %s #%d (%s)", r.Prefix, r.NextHop.Addr, r.PathID, strings.Join(r.VIPIDs, " ")))
	}
	return strings.Join(lines, "\n")
}

func TestRoutes(t *testing.T) {
	both := []string{edge1, edge2}
	for _, tc := range []struct {
		name   string
		cfg    *sdnlb.Config
		edit   func(*sdnlb.Config)
		served []string
		want   []string
	}{
		{name: "EveryServedEdge", cfg: testConfig("10.0.0.1"), served: both,
			want: []string{"10.0.0.1/32 via 192.0.2.1 #1 (v0)", "10.0.0.1/32 via 192.0.2.2 #2 (v0)"}},
		{name: "OnlyServedEdges", cfg: testConfig("10.0.0.1"), served: []string{edge2},
			want: []string{"10.0.0.1/32 via 192.0.2.2 #2 (v0)"}},
		{name: "NoServedEdge", cfg: testConfig("10.0.0.1")},
		{name: "EdgeWithoutNextHop", cfg: testConfig("10.0.0.1"), served: []string{"00:00:00:00:00:00:00:03"}},
		{name: "IPv6FromEdgesWithAnIPv6NextHop", cfg: testConfig("2001:db8:1::10", "10.0.0.1"), served: both,
			want: []string{"10.0.0.1/32 via 192.0.2.1 #1 (v1)", "10.0.0.1/32 via 192.0.2.2 #2 (v1)", "2001:db8:1::10/128 via 2001:db8::1 #3 (v0)"}},
		{name: "SortedByAddress", cfg: testConfig("10.0.0.9", "10.0.0.1"), served: []string{edge1},
			want: []string{"10.0.0.1/32 via 192.0.2.1 #1 (v1)", "10.0.0.9/32 via 192.0.2.1 #1 (v0)"}},
		{name: "OneRouteForVIPsOnOneAddress", cfg: testConfig("10.0.0.1", "10.0.0.1"), served: []string{edge1},
			want: []string{"10.0.0.1/32 via 192.0.2.1 #1 (v0 v1)"}},
		{name: "NotAnnounced", cfg: testConfig("10.0.0.1"), served: both,
			edit: func(c *sdnlb.Config) { c.VIPs[0].Announce = false }},
		{name: "VIPDisabled", cfg: testConfig("10.0.0.1"), served: both,
			edit: func(c *sdnlb.Config) { c.VIPs[0].AdminStateUp = false }},
		{name: "PoolDisabled", cfg: testConfig("10.0.0.1"), served: both,
			edit: func(c *sdnlb.Config) { c.Pools[0].AdminStateUp = false }},
		{name: "NoPool", cfg: testConfig("10.0.0.1"), served: both,
			edit: func(c *sdnlb.Config) { c.VIPs[0].PoolID = "" }},
		{name: "MemberDown", cfg: testConfig("10.0.0.1"), served: both,
			edit: func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown }},
		{name: "MemberDraining", cfg: testConfig("10.0.0.1"), served: both,
			edit: func(c *sdnlb.Config) { c.Members[0].Weight = 0 }},
		{name: "MemberUnmonitored", cfg: testConfig("10.0.0.1"), served: []string{edge1},
			edit: func(c *sdnlb.Config) { c.Members[0].Health.Status = "" },
			want: []string{"10.0.0.1/32 via 192.0.2.1 #1 (v0)"}},
		{name: "OneMemberOfSeveralUp", cfg: testConfig("10.0.0.1"), served: []string{edge1},
			edit: func(c *sdnlb.Config) {
				down := *c.Members[0]
				down.ID, down.Health.Status = "m-down", sdnlb.MemberDown
				c.Members = append([]*sdnlb.Member{&down}, c.Members...)
			},
			want: []string{"10.0.0.1/32 via 192.0.2.1 #1 (v0)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit != nil {
				tc.edit(tc.cfg)
			}
			got := render(Routes(tc.cfg, tc.served, testHops))
			if want := strings.Join(tc.want, "\n"); got != want {
				t.Errorf("routes:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// A path keeps its id whatever else changes: the peers tell an edge's
// path from another's by it, across restarts.
func TestRoutes_PathIDFollowsTheNextHop(t *testing.T) {
	cfg := testConfig("10.0.0.1")
	ids := func(served []string) []uint32 {
		var out []uint32
		for _, r := range Routes(cfg, served, testHops) {
			out = append(out, r.PathID)
		}
		return out
	}
	if got := ids([]string{edge2}); !slices.Equal(got, []uint32{2}) {
		t.Fatalf("edge 2 alone: path ids %v, want [2]", got)
	}
	if got := ids([]string{edge2, edge1}); !slices.Equal(got, []uint32{1, 2}) {
		t.Fatalf("both edges: path ids %v, want [1 2]", got)
	}
}

func TestRoutes_NoConfig(t *testing.T) {
	if got := Routes(nil, []string{edge1}, testHops); got != nil {
		t.Fatalf("routes %v without a configuration", got)
	}
}
