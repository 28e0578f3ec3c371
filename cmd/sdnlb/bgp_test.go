package main

import (
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/bgp"
	"github.com/sdnlb/sdnlb/cluster"
)

// With --bgp-asn the node runs its speaker: GET /v1/bgp and /metrics show
// its session (to a router that is not there) and no route while no edge
// is connected; VIPs are announced unless they say otherwise.
func TestMain_BGP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	router := l.Addr().String()
	l.Close()
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"), func(c *Config) {
		c.BGPASN, c.BGPRouterID, c.BGPPeers = 65001, "192.0.2.10", router+"=65000"
		c.BGPNextHops, c.BGPGracefulRestart = "1=192.0.2.11", 0
	})

	var vip sdnlb.VIP
	call(t, m, http.MethodPost, "/v1/vips", map[string]any{"address": "203.0.113.10", "port": 80}, http.StatusCreated, &vip)
	if !vip.Announce {
		t.Fatalf("vip %+v: want it announced by default", vip)
	}

	var b sdnlb.BGP
	call(t, m, http.MethodGet, "/v1/bgp", nil, http.StatusOK, &b)
	if !b.Enabled || b.ASN != 65001 || b.RouterID != "192.0.2.10" || len(b.Peers) != 1 || len(b.Routes) != 0 {
		t.Fatalf("bgp %+v", b)
	}
	if p := b.Peers[0]; p.Address != "127.0.0.1" || p.ASN != 65000 || p.State == "ESTABLISHED" || p.Since != nil {
		t.Fatalf("peer %+v: want a session that is not established", p)
	}
	_, metrics := send(t, m, http.MethodGet, "/metrics", "", "")
	node := m.Elector.Node().ID
	for _, want := range []string{`sdnlb_bgp_peer_up{node="` + node + `",peer="127.0.0.1"} 0`, `sdnlb_bgp_routes_announced{node="` + node + `"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// A single node serves every switch; a node of a cluster the switches
// assigned to it, while it may act as their MASTER.
func TestServedEdges(t *testing.T) {
	switches := []*sdnlb.Switch{{DPID: "1"}, {DPID: "2"}, {DPID: "3"}}
	assigned := &cluster.Assignment{Live: true, Masters: []sdnlb.SwitchMaster{{DPID: "1", Node: "a"}, {DPID: "2", Node: "b"}}}
	lapsed := *assigned
	lapsed.Live = false
	for _, tc := range []struct {
		name string
		a    *cluster.Assignment
		want []bgp.Switch
	}{
		{"OneNode", nil, []bgp.Switch{edge("1", true, true), edge("2", true, true), edge("3", true, true)}},
		{"Cluster", assigned, []bgp.Switch{edge("1", true, true), edge("2", false, true), edge("3", false, false)}},
		{"ClusterNotLive", &lapsed, []bgp.Switch{edge("1", false, true), edge("2", false, true), edge("3", false, false)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := servedEdges(switches, tc.a, "a"); !slices.Equal(got, tc.want) {
				t.Fatalf("served %v, want %v", got, tc.want)
			}
		})
	}
}

func edge(dpid string, served, settled bool) bgp.Switch {
	return bgp.Switch{DPID: dpid, Served: served, Settled: settled}
}
