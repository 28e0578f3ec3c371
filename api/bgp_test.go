package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

func TestServer_BGP(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		svc := &mock.BGPService{BGPFn: func(ctx context.Context) (*sdnlb.BGP, error) {
			return &sdnlb.BGP{Enabled: true, ASN: 65001, RouterID: "192.0.2.10", GracefulRestart: 120,
				Peers: []*sdnlb.BGPPeer{{Address: "192.0.2.1", Port: 179, ASN: 65000, State: "ESTABLISHED", Since: &since,
					Advertised: 2, AddPaths: true, GracefulRestart: true}},
				Routes: []*sdnlb.BGPRoute{{Prefix: "203.0.113.10/32", NextHop: "192.0.2.11", DPID: "00:00:00:00:00:00:00:01"}},
			}, nil
		}}
		res := testRequest(t, MustServe(t, &Server{BGPService: svc}), "GET", "/v1/bgp", "")
		want := `{"enabled":true,"asn":65001,"router_id":"192.0.2.10","graceful_restart":120,"holding":false,` +
			`"peers":[{"address":"192.0.2.1","port":179,"asn":65000,"state":"ESTABLISHED","since":"2026-01-02T03:04:05Z",` +
			`"received":0,"advertised":2,"add_paths":true,"graceful_restart":true}],` +
			`"routes":[{"prefix":"203.0.113.10/32","next_hop":"192.0.2.11","dpid":"00:00:00:00:00:00:00:01","vip_ids":[]}]}`
		if res.Status != 200 || strings.TrimSpace(string(res.Body)) != want {
			t.Fatalf("status %d, body %s\nwant %s", res.Status, res.Body, want)
		}
	})
	t.Run("OKWithoutBGP", func(t *testing.T) {
		res := testRequest(t, MustServe(t, &Server{}), "GET", "/v1/bgp", "")
		want := `{"enabled":false,"asn":0,"router_id":"","graceful_restart":0,"holding":false,"peers":[],"routes":[]}`
		if res.Status != 200 || strings.TrimSpace(string(res.Body)) != want {
			t.Fatalf("status %d, body %s\nwant %s", res.Status, res.Body, want)
		}
	})
}
