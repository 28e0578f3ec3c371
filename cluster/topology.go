package cluster

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/sdnlb/sdnlb"
)

var _ sdnlb.TopologyService = (*Topology)(nil)

const (
	// recordTopologyEvery is how often each node records its part of the
	// topology: as often as its controller sends LLDP frames.
	recordTopologyEvery = time.Second
	// topologyPartTimeout is how long a node's part counts after it was
	// recorded, by the database clock: three records missed, as long as a
	// link counts without its LLDP frame. An older part is of a node gone.
	topologyPartTimeout = 3 * recordTopologyEvery
)

// Topology answers for the whole network: this node's part of the
// topology, from its controller, merged with the parts the other nodes
// recorded within topologyPartTimeout. Every node of a cluster runs it:
// each switch sends its packet-ins to its MASTER only, so a node alone
// knows only the links into the switches it masters and the hosts on them.
//
//	t := cluster.NewTopology(store, elector.Node(), ctrl.TopologyPart, log)
//	go t.Run(ctx)
//	top, err := t.Topology(ctx)
type Topology struct {
	store sdnlb.TopologyPartService
	node  sdnlb.ClusterNode
	local func(ctx context.Context) (*sdnlb.TopologyPart, error)
	log   *slog.Logger
}

// NewTopology returns the Topology of node, whose part local gives. A nil
// store is a node alone (SQLite): its topology is its part, and Run is
// not needed.
func NewTopology(store sdnlb.TopologyPartService, node sdnlb.ClusterNode, local func(ctx context.Context) (*sdnlb.TopologyPart, error),
	logger *slog.Logger) *Topology {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Topology{store: store, node: node, local: local, log: logger.With("component", "cluster", "node_id", node.ID)}
}

// Topology is this node's part merged with the other nodes' (Merge).
// While the database is away it is this node's part alone.
func (t *Topology) Topology(ctx context.Context) (*sdnlb.Topology, error) {
	own, err := t.local(ctx)
	if err != nil {
		return nil, err
	}
	parts := []*sdnlb.TopologyPart{own}
	if t.store != nil {
		recorded, err := t.store.TopologyParts(ctx, topologyPartTimeout)
		if err != nil {
			t.log.Debug("cannot read the other nodes' parts of the topology", "err", err)
		}
		for _, p := range recorded {
			// This node's own is fresher from its controller.
			if p.Node != t.node.ID {
				parts = append(parts, p)
			}
		}
	}
	return Merge(parts), nil
}

// Run records this node's part every recordTopologyEvery until ctx ends,
// then forgets it, so that the others stop showing it at once.
func (t *Topology) Run(ctx context.Context) error {
	tick := time.NewTicker(recordTopologyEvery)
	defer tick.Stop()
	for {
		t.record(ctx)
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), recordTopologyEvery)
			defer cancel()
			if err := t.store.RecordTopology(fctx, t.node, nil, topologyPartTimeout); err != nil {
				t.log.Warn("cannot forget this node's part of the topology", "err", err)
			}
			return nil
		case <-tick.C:
		}
	}
}

// record records this node's part once. A record that takes longer than
// the part counts is worthless.
func (t *Topology) record(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, topologyPartTimeout)
	defer cancel()
	part, err := t.local(rctx)
	if err == nil {
		err = t.store.RecordTopology(rctx, t.node, part, topologyPartTimeout)
	}
	if err != nil && ctx.Err() == nil {
		t.log.Debug("cannot record this node's part of the topology", "err", err)
	}
}

// Merge is the topology that parts make together, each part a node's and
// the first preferred where two say the same. A switch shows once; a link
// shows once whichever nodes discovered it, bidirectional when any node
// discovered its reverse, and carrying what its source port sent (the
// load in the part of the source switch's master); a host shows once per
// switch, as the part that saw it last says, unless its port is a link's;
// a path shows once (only the node that masters its switches computes it).
func Merge(parts []*sdnlb.TopologyPart) *sdnlb.Topology {
	top := &sdnlb.Topology{Switches: []*sdnlb.TopologySwitch{}, Links: []*sdnlb.Link{}, Hosts: []*sdnlb.Host{}, Paths: []*sdnlb.Path{}}
	type direction struct{ src, dst sdnlb.LinkEnd }
	switches := map[string]bool{}
	links := map[direction]bool{}
	loads := map[sdnlb.LinkEnd]sdnlb.PortLoad{}
	hosts := map[[2]string]*sdnlb.Host{} // by switch and address
	paths := map[[2]string]bool{}
	for _, p := range parts {
		for _, s := range p.Switches {
			if !switches[s.DPID] {
				switches[s.DPID] = true
				top.Switches = append(top.Switches, s)
			}
		}
		for _, l := range p.Links {
			if d := (direction{l.Src, l.Dst}); !links[d] {
				links[d] = true
				top.Links = append(top.Links, &sdnlb.Link{Src: l.Src, Dst: l.Dst})
			}
		}
		for _, ld := range p.Loads {
			if _, ok := loads[ld.Port]; !ok {
				loads[ld.Port] = ld
			}
		}
		for _, h := range p.Hosts {
			k := [2]string{h.DPID, h.Address}
			if seen, ok := hosts[k]; !ok || h.LastSeen.After(seen.LastSeen) {
				hosts[k] = h
			}
		}
		for _, path := range p.Paths {
			if k := [2]string{path.From, path.To}; !paths[k] {
				paths[k] = true
				top.Paths = append(top.Paths, path)
			}
		}
	}
	linked := map[[2]string]bool{} // by switch and port, as Host writes them
	for _, l := range top.Links {
		l.Bidirectional = links[direction{l.Dst, l.Src}]
		if ld, ok := loads[l.Src]; ok {
			l.RateBPS, l.CapacityBPS, l.Utilisation = ld.RateBPS, ld.CapacityBPS, ld.Utilisation
		}
		for _, end := range []sdnlb.LinkEnd{l.Src, l.Dst} {
			linked[[2]string{end.DPID, strconv.FormatUint(uint64(end.Port), 10)}] = true
		}
	}
	for _, h := range hosts {
		if !linked[[2]string{h.DPID, h.Port}] {
			top.Hosts = append(top.Hosts, h)
		}
	}
	slices.SortFunc(top.Switches, func(a, b *sdnlb.TopologySwitch) int { return cmp.Compare(a.DPID, b.DPID) })
	slices.SortFunc(top.Links, func(a, b *sdnlb.Link) int {
		return cmp.Or(compareEnds(a.Src, b.Src), compareEnds(a.Dst, b.Dst))
	})
	slices.SortFunc(top.Hosts, func(a, b *sdnlb.Host) int {
		return cmp.Or(cmp.Compare(a.DPID, b.DPID), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
	})
	slices.SortFunc(top.Paths, func(a, b *sdnlb.Path) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	return top
}

// compareEnds orders link ends as the controller does: by switch, then
// port number. Datapath ids are fixed-width hex, so they order as text.
func compareEnds(a, b sdnlb.LinkEnd) int {
	return cmp.Or(cmp.Compare(a.DPID, b.DPID), cmp.Compare(a.Port, b.Port))
}
