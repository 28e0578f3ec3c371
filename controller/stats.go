package controller

import (
	"context"
	"maps"
	"net/netip"
	"slices"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// AllPoolStats returns the counters of every pool, by pool id.
func (c *Controller) AllPoolStats(ctx context.Context) ([]*sdnlb.PoolStats, error) {
	snap := c.snap.Load()
	ids := slices.Sorted(maps.Keys(snap.Pools))
	var addrs []netip.Addr
	for _, id := range ids {
		for _, m := range snap.Pools[id].Members {
			addrs = append(addrs, m.IP)
		}
	}
	at, groupless := c.locate(addrs), c.grouplessSwitches()
	out := make([]*sdnlb.PoolStats, 0, len(ids))
	for _, id := range ids {
		out = append(out, c.poolStats(snap.Pools[id], at, groupless))
	}
	return out, nil
}

// PoolStats sums the live counters of a pool's members.
func (c *Controller) PoolStats(ctx context.Context, poolID string) (*sdnlb.PoolStats, error) {
	p, ok := c.snap.Load().Pools[poolID]
	if !ok {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "pool %s not found", poolID)
	}
	addrs := make([]netip.Addr, len(p.Members))
	for i, m := range p.Members {
		addrs[i] = m.IP
	}
	return c.poolStats(p, c.locate(addrs), c.grouplessSwitches()), nil
}

// grouplessSwitches lists the connected switches without select groups,
// which cannot dispatch SWITCH pools themselves, in order.
func (c *Controller) grouplessSwitches() []string {
	out := []string{}
	for _, s := range c.switchConns() {
		if !s.features.Groups {
			out = append(out, model.FormatDPID(s.dpid))
		}
	}
	slices.Sort(out)
	return out
}

// poolStats reads the cluster's counters of p's members, which at
// locates; groupless is grouplessSwitches.
func (c *Controller) poolStats(p *model.Pool, at map[netip.Addr]*sdnlb.MemberLocation, groupless []string) *sdnlb.PoolStats {
	ps := &sdnlb.PoolStats{PoolID: p.ID, Members: make([]sdnlb.MemberStats, 0, len(p.Members)),
		ControllerDispatchedOn: []string{}, UpdatedAt: c.now()}
	if p.Switched() {
		ps.ControllerDispatchedOn = groupless
	}
	if p.VIP != nil {
		ps.RefusedConnections = p.VIP.Cnt.RefusedConns()
	}
	nodes := map[string]*sdnlb.NodeStats{c.opts.Node: {Node: c.opts.Node}}
	var total sdnlb.NodeStats
	for _, m := range p.Members {
		ms := m.Stats(c.opts.Node)
		ms.Location = at[m.IP]
		total.Add(ms.Share())
		ps.Members = append(ps.Members, ms)
		for _, n := range ms.Nodes {
			sum := nodes[n.Node]
			if sum == nil {
				sum = &sdnlb.NodeStats{Node: n.Node}
				nodes[n.Node] = sum
			}
			sum.Add(n)
		}
	}
	ps.ActiveConnections, ps.TotalConnections = total.ActiveConnections, total.TotalConnections
	ps.PacketsIn, ps.PacketsOut, ps.BytesIn, ps.BytesOut = total.PacketsIn, total.PacketsOut, total.BytesIn, total.BytesOut
	ps.Nodes = make([]sdnlb.NodeStats, 0, len(nodes))
	for _, id := range slices.Sorted(maps.Keys(nodes)) {
		ps.Nodes = append(ps.Nodes, *nodes[id])
	}
	return ps
}

// locate finds where the switches showed each of addrs, asking each
// switch's learner once: on a host's port rather than at a link's end
// (where a frame from it came from another switch), else where the
// switch's flows name it.
func (c *Controller) locate(addrs []netip.Addr) map[netip.Addr]*sdnlb.MemberLocation {
	at := map[netip.Addr]*sdnlb.MemberLocation{}
	if len(addrs) == 0 {
		return at
	}
	linked := map[model.PortRef]bool{}
	for _, l := range c.topo.links(c.now()) {
		linked[l.src], linked[l.dst] = true, true
	}
	for _, s := range c.switchConns() {
		s.decide(func(dp *dataplane.Switch, _ *dataplane.Outbox) {
			for _, ip := range addrs {
				e, ok := dp.Learner.Host(ip)
				if !ok || at[ip] != nil && at[ip].Port != "" || linked[model.PortRef{DPID: s.dpid, Port: e.Port}] {
					continue
				}
				loc := &sdnlb.MemberLocation{DPID: model.FormatDPID(s.dpid)}
				if e.Port != 0 {
					loc.Port = ofp.FormatPort(e.Port)
				}
				at[ip] = loc
			}
		})
	}
	return at
}
