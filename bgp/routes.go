package bgp

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/sdnlb/sdnlb"
)

// NextHop is the address that names an edge switch to the routers: the
// address, on the routers' link, of the interface that hands what the
// routers send it to the switch (the bridge's own port of an Open vSwitch
// edge). An edge has at most one next hop per address family; IPv4 VIPs
// are announced from the edges with an IPv4 next hop, IPv6 VIPs from those
// with an IPv6 one.
type NextHop struct {
	DPID string // as sdnlb.Switch.DPID
	Addr netip.Addr
}

// Switch is a switch connected to this node, as the speaker needs it.
type Switch struct {
	DPID string // as sdnlb.Switch.DPID
	// Served says this node serves the VIPs on the switch: it is the
	// switch's MASTER in a cluster; a single node serves every switch.
	Served bool
	// Settled says who serves the switch is known: always on a single
	// node, in a cluster once the switch has an assigned MASTER.
	Settled bool
}

// Route is one path the speaker announces: a VIP's address, next hop an
// edge that serves it.
type Route struct {
	Prefix  netip.Prefix
	NextHop NextHop
	// PathID tells the paths of one prefix apart (RFC 7911): the next
	// hop's place in the configuration, from 1, so that it outlives
	// restarts.
	PathID uint32
	VIPIDs []string
}

// key identifies a route among the speaker's paths.
type key struct {
	prefix netip.Prefix
	pathID uint32
}

func (r Route) key() key { return key{r.Prefix, r.PathID} }

// Routes is what the node announces: the address of every VIP that asks
// to be announced, is enabled, and has a member of its enabled pool in
// rotation, from every edge this node serves that has a next hop of the
// address's family, sorted by prefix and path. Pure: the speaker calls it
// whenever the configuration or the served switches change.
func Routes(cfg *sdnlb.Config, served []string, hops []NextHop) []Route {
	if cfg == nil {
		return nil
	}
	rotating := map[string]bool{} // pools with a member in rotation
	for _, m := range cfg.Members {
		if m.InRotation() {
			rotating[m.PoolID] = true
		}
	}
	enabled := map[string]bool{} // enabled pools with a member in rotation
	for _, p := range cfg.Pools {
		if p.AdminStateUp && rotating[p.ID] {
			enabled[p.ID] = true
		}
	}
	vips := map[netip.Addr][]string{}
	for _, v := range cfg.VIPs {
		if !v.Announce || !v.AdminStateUp || !enabled[v.PoolID] {
			continue
		}
		a, err := netip.ParseAddr(v.Address)
		if err != nil {
			continue // the store keeps valid addresses only
		}
		vips[a] = append(vips[a], v.ID)
	}
	var routes []Route
	for i, h := range hops {
		if !slices.Contains(served, h.DPID) {
			continue
		}
		for a, ids := range vips {
			if a.Is4() != h.Addr.Is4() {
				continue
			}
			slices.Sort(ids)
			routes = append(routes, Route{Prefix: netip.PrefixFrom(a, a.BitLen()), NextHop: h, PathID: uint32(i + 1), VIPIDs: ids})
		}
	}
	slices.SortFunc(routes, func(a, b Route) int {
		if c := a.Prefix.Addr().Compare(b.Prefix.Addr()); c != 0 {
			return c
		}
		return cmp.Compare(a.PathID, b.PathID)
	})
	return routes
}
