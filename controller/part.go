package controller

import (
	"context"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
)

// TopologyPart is this node's part of a cluster's topology: what Topology
// shows, but with the links' loads as Loads, the loads of the ports at
// either end of the links on the switches this node decides for. Only
// those switches' counters are read here: the load of a link that another
// node's switch sends over is in that node's part.
func (c *Controller) TopologyPart(ctx context.Context) (*sdnlb.TopologyPart, error) {
	top, err := c.Topology(ctx)
	if err != nil {
		return nil, err
	}
	part := &sdnlb.TopologyPart{Switches: top.Switches, Links: make([]*sdnlb.Link, 0, len(top.Links)), Hosts: top.Hosts,
		Loads: []sdnlb.PortLoad{}, Paths: top.Paths}
	for _, l := range top.Links {
		part.Links = append(part.Links, &sdnlb.Link{Src: l.Src, Dst: l.Dst})
	}
	decided := map[uint64]bool{}
	for _, s := range c.switchConns() {
		decided[s.dpid] = s.master.Load()
	}
	links := c.topo.links(c.now())
	loaded := make(map[model.PortRef]bool, 2*len(links))
	c.topo.mu.Lock()
	defer c.topo.mu.Unlock()
	for _, l := range links {
		for _, p := range []model.PortRef{l.src, l.dst} {
			if !decided[p.DPID] || loaded[p] {
				continue
			}
			loaded[p] = true
			rate, capacity := c.topo.rateLocked(p)
			part.Loads = append(part.Loads, sdnlb.PortLoad{Port: sdnlb.LinkEnd{DPID: model.FormatDPID(p.DPID), Port: p.Port},
				RateBPS: rate, CapacityBPS: capacity, Utilisation: utilisationOf(rate, capacity)})
		}
	}
	return part, nil
}
