package health

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb"
)

// metrics are the engine's Prometheus collectors. They always exist so the
// hot path has no nil checks; they are registered only when asked.
type metrics struct {
	probes      *prometheus.CounterVec
	transitions *prometheus.CounterVec
	seconds     *prometheus.HistogramVec
	members     *prometheus.GaugeVec
	check       *prometheus.GaugeVec // the latest probe's duration, by member id
	healthUp    *prometheus.GaugeVec // by member id
	available   *prometheus.GaugeVec // what the member's agent last said, by member id
}

func newMetrics(reg prometheus.Registerer, log *slog.Logger) *metrics {
	m := &metrics{
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sdnlb_health_probes_total",
			Help: "Health probes run, by monitor type and result (success, failure).",
		}, []string{"type", "result"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sdnlb_health_transitions_total",
			Help: "Member health status changes, by the status entered.",
		}, []string{"status"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sdnlb_health_probe_seconds",
			Help:    "Duration of health probes, by monitor type.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"type"}),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sdnlb_members",
			Help: "Members by health status (UP, DOWN, NO_MONITOR).",
		}, []string{"status"}),
		check: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sdnlb_member_check_duration_seconds",
			Help: "Duration of the member's latest health probe.",
		}, []string{"member"}),
		healthUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sdnlb_member_health_up",
			Help: "1 while the member's health monitors say UP (or it has none), 0 while DOWN; a drain leaves it as it is.",
		}, []string{"member"}),
		available: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sdnlb_member_agent_available_percent",
			Help: "The share of its capacity the member's agent (an AGENT monitor) last said was free, in percent.",
		}, []string{"member"}),
	}
	if reg == nil {
		return m
	}
	m.probes = register(reg, m.probes, log)
	m.transitions = register(reg, m.transitions, log)
	m.seconds = register(reg, m.seconds, log)
	m.members = register(reg, m.members, log)
	m.check = register(reg, m.check, log)
	m.healthUp = register(reg, m.healthUp, log)
	m.available = register(reg, m.available, log)
	return m
}

// register adds c to reg, or returns the collector already registered under
// its name (a second engine on one registry, as in tests).
func register[C prometheus.Collector](reg prometheus.Registerer, c C, log *slog.Logger) C {
	err := reg.Register(c)
	var dup prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c
	case errors.As(err, &dup):
		if existing, ok := dup.ExistingCollector.(C); ok {
			return existing
		}
	}
	log.Error("health metrics not registered", "err", err)
	return c
}

func (m *metrics) probed(member string, typ sdnlb.MonitorType, err error, d time.Duration) {
	m.check.WithLabelValues(member).Set(d.Seconds())
	result := "success"
	if err != nil {
		result = "failure"
	}
	m.probes.WithLabelValues(string(typ), result).Inc()
	m.seconds.WithLabelValues(string(typ)).Observe(d.Seconds())
}

func (m *metrics) changed(member string, from, to sdnlb.MemberStatus) {
	m.transitions.WithLabelValues(string(to)).Inc()
	m.members.WithLabelValues(string(from)).Dec()
	m.members.WithLabelValues(string(to)).Inc()
	m.setHealth(member, to)
}

// added counts a member the engine starts watching, with the health it
// starts from.
func (m *metrics) added(member string, h sdnlb.MemberHealth) {
	m.members.WithLabelValues(string(h.Status)).Inc()
	m.setHealth(member, h.Status)
	if h.Agent != nil {
		m.agentSaid(member, h.Agent.Available)
	}
}

func (m *metrics) removed(member string, status sdnlb.MemberStatus) {
	m.members.WithLabelValues(string(status)).Dec()
	m.check.DeleteLabelValues(member)
	m.healthUp.DeleteLabelValues(member)
	m.agentGone(member)
}

func (m *metrics) agentSaid(member string, available int) {
	m.available.WithLabelValues(member).Set(float64(available))
}

func (m *metrics) agentGone(member string) { m.available.DeleteLabelValues(member) }

func (m *metrics) setHealth(member string, status sdnlb.MemberStatus) {
	up := 1.0
	if status == sdnlb.MemberDown {
		up = 0
	}
	m.healthUp.WithLabelValues(member).Set(up)
}

// forget drops what the gauges say of the members when a run ends: a
// node that does not run the monitors (a follower) knows nothing of them,
// and the next run counts them afresh.
func (m *metrics) forget() {
	m.members.Reset()
	m.check.Reset()
	m.healthUp.Reset()
	m.available.Reset()
}
