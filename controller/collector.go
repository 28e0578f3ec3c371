package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sdnlb/sdnlb/controller/model"
)

// snapshotCollector exports the counters of every VIP and member of the
// current snapshot at scrape time, so a deleted object's series go with
// it: the counters as this node counted them (a cluster's are their sum
// over the nodes), the gauges as the cluster has them. Labels are
// configuration ids only, never client data.
type snapshotCollector struct {
	c *Controller

	memberUp, memberActive, memberConns, memberBytes, memberPackets *prometheus.Desc
	memberWeight, memberCPU, memberSessions, memberSlowStart        *prometheus.Desc
	vipActive, vipRefused                                           *prometheus.Desc
}

func newSnapshotCollector(c *Controller) *snapshotCollector {
	member := []string{"vip", "pool", "member"}
	return &snapshotCollector{
		c: c,
		memberUp: prometheus.NewDesc("sdnlb_member_up",
			"1 while the member takes new connections (UP, or no monitor), else 0.", member, nil),
		memberActive: prometheus.NewDesc("sdnlb_member_active_connections",
			"Connections open through the member in the cluster: those the controllers set up, and the estimate of those the switches dispatched; every node shows the cluster's.", member, nil),
		memberConns: prometheus.NewDesc("sdnlb_member_connections_total",
			"Connections the member took, as this node counted them.", member, nil),
		memberBytes: prometheus.NewDesc("sdnlb_member_bytes_total",
			"Bytes of the member's connections as this node counted them, by direction (in: client → member).", append(member, "direction"), nil),
		memberPackets: prometheus.NewDesc("sdnlb_member_packets_total",
			"Packets of the member's connections as this node counted them, by direction (in: client → member).", append(member, "direction"), nil),
		memberWeight: prometheus.NewDesc("sdnlb_member_effective_weight",
			"The weight the member takes new connections by, in units of the configured weights (ADAPTIVE and slow start move it); 0 out of rotation.", member, nil),
		memberCPU: prometheus.NewDesc("sdnlb_member_available_cpu",
			"The part of its CPU the member's agent says is free, 0-1; only members with an agent.", member, nil),
		memberSessions: prometheus.NewDesc("sdnlb_member_available_sessions",
			"1 - active connections / capacity, 0-1; only members with a capacity.", member, nil),
		memberSlowStart: prometheus.NewDesc("sdnlb_member_slow_start",
			"The part of the member's slow start behind it, 0-1; 1 once over or without one.", member, nil),
		vipActive: prometheus.NewDesc("sdnlb_vip_active_connections",
			"Connections open to the VIP in the cluster, as sdnlb_member_active_connections counts them; every node shows the cluster's.", []string{"vip"}, nil),
		vipRefused: prometheus.NewDesc("sdnlb_vip_refused_connections_total",
			"New connections to the VIP this node refused (no member, connection limit).", []string{"vip"}, nil),
	}
}

func (sc *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{sc.memberUp, sc.memberActive, sc.memberConns, sc.memberBytes,
		sc.memberPackets, sc.memberWeight, sc.memberCPU, sc.memberSessions, sc.memberSlowStart, sc.vipActive, sc.vipRefused} {
		ch <- d
	}
}

func (sc *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	snap := sc.c.snap.Load()
	for _, v := range snap.VIPByID {
		ch <- prometheus.MustNewConstMetric(sc.vipActive, prometheus.GaugeValue, float64(v.ActiveConns()), v.ID)
		ch <- prometheus.MustNewConstMetric(sc.vipRefused, prometheus.CounterValue, float64(v.Cnt.Refused.Load()), v.ID)
	}
	for _, p := range snap.Pools {
		vip := ""
		if p.VIP != nil {
			vip = p.VIP.ID
		}
		for _, m := range p.Members {
			st, own := m.Stats(""), m.Cnt.Own()
			labels := []string{vip, p.ID, m.ID}
			up := 0.0
			if model.InRotation(m.Status) {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(sc.memberUp, prometheus.GaugeValue, up, labels...)
			ch <- prometheus.MustNewConstMetric(sc.memberActive, prometheus.GaugeValue, float64(st.ActiveConnections), labels...)
			ch <- prometheus.MustNewConstMetric(sc.memberConns, prometheus.CounterValue, float64(own.Connections), labels...)
			ch <- prometheus.MustNewConstMetric(sc.memberBytes, prometheus.CounterValue, float64(own.BytesIn), append(labels, "in")...)
			ch <- prometheus.MustNewConstMetric(sc.memberBytes, prometheus.CounterValue, float64(own.BytesOut), append(labels, "out")...)
			ch <- prometheus.MustNewConstMetric(sc.memberPackets, prometheus.CounterValue, float64(own.PacketsIn), append(labels, "in")...)
			ch <- prometheus.MustNewConstMetric(sc.memberPackets, prometheus.CounterValue, float64(own.PacketsOut), append(labels, "out")...)
			ch <- prometheus.MustNewConstMetric(sc.memberWeight, prometheus.GaugeValue, st.EffectiveWeight, labels...)
			ch <- prometheus.MustNewConstMetric(sc.memberSlowStart, prometheus.GaugeValue, st.SlowStart, labels...)
			if st.AvailableCPU != nil {
				ch <- prometheus.MustNewConstMetric(sc.memberCPU, prometheus.GaugeValue, *st.AvailableCPU, labels...)
			}
			if st.AvailableSessions != nil {
				ch <- prometheus.MustNewConstMetric(sc.memberSessions, prometheus.GaugeValue, *st.AvailableSessions, labels...)
			}
		}
	}
}
