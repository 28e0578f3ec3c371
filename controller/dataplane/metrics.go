package dataplane

import (
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Metrics are always counted; they are exported only when a Registerer is
// given. Labelled children are resolved once so the hot path only adds.
type Metrics struct {
	packetIns [numKinds]prometheus.Counter
	refusals  [numRefusals]prometheus.Counter
	setups    prometheus.Counter
	flowMods  prometheus.Counter
	groupMods prometheus.Counter
	Switches  prometheus.Gauge
	// statsPoll times each switch's flow stats poll, from the request to
	// the last part of the reply read; statsPollFlows counts the flows
	// the replies carried: the poll's cost grows with them.
	statsPoll      prometheus.Histogram
	statsPollFlows prometheus.Counter
	// switchErrors counts OFPT_ERROR messages by OpenFlow error type, a
	// closed set: types no specification names count as OTHER.
	switchErrors *prometheus.CounterVec
}

func NewMetrics(reg prometheus.Registerer, log *slog.Logger) *Metrics {
	packetIns := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "sdnlb", Subsystem: "controller", Name: "packet_ins_total",
		Help: "Packet-in messages handled, by kind (arp, lb, reply, l2, other).",
	}, []string{"kind"})
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "sdnlb", Subsystem: "controller", Name: "refusals_total",
		Help: "New connections refused (limit, no_member) and packets reset for lack of a flow (no_flow).",
	}, []string{"reason"})
	m := &Metrics{
		setups: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "setups_total",
			Help: "Connections set up: flow pairs installed.",
		}),
		flowMods: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "flow_mods_total",
			Help: "Flow-mods sent to switches.",
		}),
		switchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sdnlb", Subsystem: "switch", Name: "errors_total",
			Help: "OpenFlow errors switches reported, by error type.",
		}, []string{"type"}),
		groupMods: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "group_mods_total",
			Help: "Group-mods sent to switches (in-switch dispatch).",
		}),
		Switches: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "switches",
			Help: "Switches connected.",
		}),
		statsPoll: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "stats_poll_seconds",
			Help:    "Flow stats polls read to their end, by the time from the request to the reply's last part read.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15), // 1 ms to 16 s
		}),
		statsPollFlows: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sdnlb", Subsystem: "controller", Name: "stats_poll_flows_total",
			Help: "Flows the replies to the flow stats polls carried.",
		}),
	}
	for i := range m.packetIns {
		m.packetIns[i] = packetIns.WithLabelValues(kindNames[i])
	}
	for i := range m.refusals {
		m.refusals[i] = refusals.WithLabelValues(refusalNames[i])
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{packetIns, refusals, m.setups, m.flowMods, m.groupMods, m.Switches, m.switchErrors,
			m.statsPoll, m.statsPollFlows} {
			if err := reg.Register(col); err != nil {
				log.Warn("controller metrics not registered", "err", err)
			}
		}
	}
	return m
}

// StatsPollPart counts the flows of one part of the reply to a stats poll.
func (m *Metrics) StatsPollPart(flows int) { m.statsPollFlows.Add(float64(flows)) }

// StatsPolled records a stats poll whose reply was read to its end, took
// after its request was sent.
func (m *Metrics) StatsPolled(took time.Duration) { m.statsPoll.Observe(took.Seconds()) }

// SwitchError counts an error a switch reported.
func (m *Metrics) SwitchError(t ofp.ErrorType) {
	name := t.String()
	if strings.HasPrefix(name, "ERROR_TYPE_") {
		name = "OTHER"
	}
	m.switchErrors.WithLabelValues(name).Inc()
}
