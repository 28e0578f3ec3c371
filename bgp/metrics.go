package bgp

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	peerUpDesc = prometheus.NewDesc("sdnlb_bgp_peer_up",
		"1 while the BGP session with the peer is established, else 0.", []string{"peer"}, nil)
	routesDesc = prometheus.NewDesc("sdnlb_bgp_routes_announced",
		"Paths this node announces over BGP: a VIP's address with one edge's next hop each.", nil, nil)
)

// collectTimeout bounds how long a scrape waits for GoBGP.
const collectTimeout = 2 * time.Second

// collector reads the metrics from the speaker at each scrape.
type collector struct{ s *Speaker }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- peerUpDesc
	ch <- routesDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	status, err := c.s.BGP(ctx)
	if err != nil {
		return
	}
	for _, p := range status.Peers {
		up := 0.0
		if p.State == "ESTABLISHED" {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(peerUpDesc, prometheus.GaugeValue, up, p.Address)
	}
	ch <- prometheus.MustNewConstMetric(routesDesc, prometheus.GaugeValue, float64(len(status.Routes)))
}
