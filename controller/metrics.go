package controller

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are always counted; they are exported only when a Registerer is
// given. Labelled children are resolved once so the hot path only adds.
type metrics struct {
	packetIns [numKinds]prometheus.Counter
	refusals  [numRefusals]prometheus.Counter
	setups    prometheus.Counter
	groupMods prometheus.Counter
	switches  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	packetIns := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "sdnlb", Subsystem: "controller", Name: "packet_ins_total",
		Help: "Packet-in messages handled, by kind (arp, lb, reply, l2, other).",
	}, []string{"kind"})
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "sdnlb", Subsystem: "controller", Name: "refusals_total",
		Help: "New connections refused (limit, no_member) and packets reset for lack of a flow (no_flow).",
	}, []string{"reason"})
	m := &metrics{
		setups: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "setups_total",
			Help: "Connections set up: flow pairs installed.",
		}),
		groupMods: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "group_mods_total",
			Help: "Select group changes sent to switches (in-switch dispatch).",
		}),
		switches: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "switches",
			Help: "Switches connected.",
		}),
	}
	for i := range m.packetIns {
		m.packetIns[i] = packetIns.WithLabelValues(kindNames[i])
	}
	for i := range m.refusals {
		m.refusals[i] = refusals.WithLabelValues(refusalNames[i])
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{packetIns, refusals, m.setups, m.groupMods, m.switches} {
			if err := reg.Register(col); err != nil {
				log.Warn("controller metrics not registered", "err", err)
			}
		}
	}
	return m
}
