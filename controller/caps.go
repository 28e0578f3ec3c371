package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sdnlb/sdnlb/controller/model"
)

// Defaults of the topology's caps. A link arrives at one port of a
// switch, so a switch of a thousand linked ports is far beyond most; a
// host table of 65,536 is what the fabric holds network-wide.
const (
	DefaultMaxLinksPerSwitch = 1024
	DefaultMaxLinks          = 16384
	DefaultMaxHostsPerSwitch = 16384
	DefaultMaxHosts          = 65536
)

func (o *Options) setCapDefaults() {
	for _, c := range []struct {
		v   *int
		def int
	}{{&o.MaxLinksPerSwitch, DefaultMaxLinksPerSwitch}, {&o.MaxLinks, DefaultMaxLinks},
		{&o.MaxHostsPerSwitch, DefaultMaxHostsPerSwitch}, {&o.MaxHosts, DefaultMaxHosts}} {
		if *c.v <= 0 {
			*c.v = c.def
		}
	}
}

// What a cap turned away: a discovered link or a learned host.
const (
	itemLink = "link"
	itemHost = "host"
)

// capMetrics counts what the caps refused, by item and cap.
type capMetrics struct {
	refused map[[2]string]prometheus.Counter
}

func newCapMetrics(c *Controller) capMetrics {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "sdnlb", Subsystem: "topology", Name: "refused_total",
		Help: "New links and hosts the topology's caps turned away, by item (link, host) and cap (switch, total).",
	}, []string{"item", "cap"})
	m := capMetrics{refused: map[[2]string]prometheus.Counter{}}
	for _, item := range []string{itemLink, itemHost} {
		for _, cp := range []capReached{capPerSwitch, capTotal} {
			m.refused[[2]string{item, string(cp)}] = refused.WithLabelValues(item, string(cp))
		}
	}
	if reg := c.opts.Registerer; reg != nil {
		links := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "sdnlb", Subsystem: "topology", Name: "links",
			Help: "Links the topology holds, each direction apart."}, func() float64 { return float64(c.topo.size()) })
		hosts := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "sdnlb", Subsystem: "topology", Name: "hosts",
			Help: "Hosts the switches' learners hold."}, func() float64 { return float64(c.hosts.Held()) })
		for _, col := range []prometheus.Collector{refused, links, hosts} {
			if err := reg.Register(col); err != nil {
				c.log.Warn("topology metrics not registered", "err", err)
			}
		}
	}
	return m
}

// capReached counts a new item that a cap of the topology turned away on
// switch dpid, and says so in the log, at most once a minute per switch
// (or once for the total): a host or a switch forging LLDP frames or
// addresses reaches the caps at will.
func (c *Controller) capReached(item string, dpid uint64, cp capReached) {
	c.capMetrics.refused[[2]string{item, string(cp)}].Inc()
	source, limit := model.FormatDPID(dpid), c.opts.MaxLinksPerSwitch
	switch {
	case cp == capTotal && item == itemLink:
		source, limit = "all switches", c.opts.MaxLinks
	case cp == capTotal:
		source, limit = "all switches", c.opts.MaxHosts
	case item == itemHost:
		limit = c.opts.MaxHostsPerSwitch
	}
	c.peerLog.Warn(c.now(), item+" cap reached", source, "the topology is full; new "+item+"s are refused until some go",
		"item", item, "cap", string(cp), "limit", limit, "dpid", model.FormatDPID(dpid))
}
