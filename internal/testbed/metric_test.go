package testbed

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestSDNLB_Metric(t *testing.T) {
	const exposition = `# TYPE sdnlb_controller_packet_ins_total counter
sdnlb_controller_packet_ins_total{kind="lb",node="a"} 3
sdnlb_controller_packet_ins_total{kind="arp",node="a"} 4
# TYPE sdnlb_controller_refusals_total counter
sdnlb_controller_refusals_total{node="a",reason="no_flow"} 5
# TYPE sdnlb_controller_switches gauge
sdnlb_controller_switches{node="a"} 2
# TYPE sdnlb_controller_switches_x gauge
sdnlb_controller_switches_x{node="a"} 100
# TYPE sdnlb_controller_stats_poll_seconds histogram
sdnlb_controller_stats_poll_seconds_bucket{node="a",le="0.1"} 2
sdnlb_controller_stats_poll_seconds_bucket{node="a",le="+Inf"} 3
sdnlb_controller_stats_poll_seconds_sum{node="a"} 0.75
sdnlb_controller_stats_poll_seconds_count{node="a"} 3
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, exposition)
	}))
	defer srv.Close()
	p := &SDNLB{APIAddr: strings.TrimPrefix(srv.URL, "http://"), tb: t, client: srv.Client()}
	for series, want := range map[string]float64{
		`sdnlb_controller_packet_ins_total{kind="lb"}`:           3,
		`sdnlb_controller_packet_ins_total`:                      7,
		`sdnlb_controller_refusals_total{reason="no_flow"}`:      5,
		`sdnlb_controller_switches`:                              2,
		`sdnlb_controller_packet_ins_total{node="a",kind="arp"}`: 4,
		`sdnlb_controller_stats_poll_seconds_count`:              3,
		`sdnlb_controller_stats_poll_seconds_sum{node="a"}`:      0.75,
	} {
		if got := p.Metric(series); got != want {
			t.Errorf("Metric(%s) = %v, want %v", series, got, want)
		}
	}
}
