package controller

import (
	"cmp"
	"slices"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
)

// The cluster's side of the counters (cluster.Stats): what this node
// counted goes into its part, what the others counted comes back as
// Elsewhere, and what a switch had counted before this node took it over
// is settled against its last master's readings.

// OwnStats is what this node counted: every member's and VIP's counts
// and active connections, and the readings of each switch it counts or
// counted, Final once it no longer masters the switch. The counts and the
// readings are read with every ledger held, so they agree: whatever part
// of a switch's flows the counts hold, the readings hold too.
func (c *Controller) OwnStats() *sdnlb.StatsPart {
	snap := c.snap.Load()
	ledgers := c.ledgersByDPID()
	for _, l := range ledgers {
		l.ledger.Lock()
	}
	defer func() {
		for _, l := range ledgers {
			l.ledger.Unlock()
		}
	}()
	part := &sdnlb.StatsPart{Members: make(map[string]sdnlb.MemberPart, len(snap.MemberIDs)),
		VIPs: make(map[string]sdnlb.VIPPart, len(snap.VIPIDs)), Switches: []sdnlb.SwitchReadings{}}
	for num, id := range snap.MemberIDs {
		m := snap.MemberCnt[num]
		part.Members[id] = sdnlb.MemberPart{Counts: m.Own(), Active: uint64(max(0, m.Active.Load()))}
	}
	for num, id := range snap.VIPIDs {
		v := snap.VIPCnt[num]
		part.VIPs[id] = sdnlb.VIPPart{Refused: v.Refused.Load(), Active: uint64(max(0, v.Active.Load()))}
	}
	for _, l := range ledgers {
		generation, live, ok := l.ledger.Readings()
		if !ok {
			continue
		}
		r := c.role(l.dpid)
		part.Switches = append(part.Switches, sdnlb.SwitchReadings{DPID: model.FormatDPID(l.dpid), Generation: generation,
			Final: !r.master || r.generation != generation, Members: byID(snap, live)})
	}
	return part
}

// Overlaps are what the switches this node took over had counted when it
// first read them, waiting to be settled.
func (c *Controller) Overlaps() []sdnlb.StatsOverlap {
	snap := c.snap.Load()
	var out []sdnlb.StatsOverlap
	for _, l := range c.ledgersByDPID() {
		generation, overlap, prior, priorGen, ok := l.ledger.Overlap()
		if !ok {
			continue
		}
		o := sdnlb.StatsOverlap{DPID: model.FormatDPID(l.dpid), Generation: generation, Members: byID(snap, overlap)}
		if prior != nil {
			o.Prior, o.PriorGeneration = byID(snap, prior), priorGen
		}
		out = append(out, o)
	}
	return out
}

// Settle counts add, what of the overlap of switch dpid, taken over under
// generation, nobody counted before, by member id; a switch this node
// took over again since is left alone.
func (c *Controller) Settle(dpid string, generation uint64, add map[string]sdnlb.Counts) {
	id, ok := parseDPID(dpid)
	if !ok {
		return
	}
	c.mu.RLock()
	l := c.ledgers[id]
	c.mu.RUnlock()
	if l == nil {
		return
	}
	snap := c.snap.Load()
	nums := make(map[string]uint32, len(snap.MemberIDs))
	for num, id := range snap.MemberIDs {
		nums[id] = num
	}
	byNum := make(map[uint32]sdnlb.Counts, len(add))
	for id, n := range add {
		if num, ok := nums[id]; ok {
			byNum[num] = n
		}
	}
	l.Settle(snap, generation, byNum)
}

// SetElsewhere gives every member and VIP what the rest of the cluster
// counted of it, for the decisions and the stats to add.
func (c *Controller) SetElsewhere(e *sdnlb.Elsewhere) {
	snap := c.snap.Load()
	for num, id := range snap.MemberIDs {
		snap.MemberCnt[num].Elsewhere.Store(e.Members[id])
	}
	for num, id := range snap.VIPIDs {
		snap.VIPCnt[num].Elsewhere.Store(e.VIPs[id])
	}
}

// dpidLedger is a switch's ledger.
type dpidLedger struct {
	dpid   uint64
	ledger *dataplane.FlowLedger
}

// ledgersByDPID lists the switches' ledgers by datapath id, the order
// they are held in together.
func (c *Controller) ledgersByDPID() []dpidLedger {
	c.mu.RLock()
	out := make([]dpidLedger, 0, len(c.ledgers))
	for dpid, l := range c.ledgers {
		out = append(out, dpidLedger{dpid, l})
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b dpidLedger) int { return cmp.Compare(a.dpid, b.dpid) })
	return out
}

// byID is counts by member number as counts by member id; members gone
// are left out.
func byID(snap *model.Snapshot, counts map[uint32]sdnlb.Counts) map[string]sdnlb.Counts {
	out := make(map[string]sdnlb.Counts, len(counts))
	for num, n := range counts {
		if id, ok := snap.MemberIDs[num]; ok {
			out[id] = n
		}
	}
	return out
}

// Forget takes counts, what this node's part held when the leader
// absorbed it, out of what this node counted: the leader's part holds
// them now.
func (c *Controller) Forget(counts *sdnlb.StatsPart) {
	snap := c.snap.Load()
	for num, id := range snap.MemberIDs {
		if p, ok := counts.Members[id]; ok {
			snap.MemberCnt[num].Sub(p.Counts)
		}
	}
	for num, id := range snap.VIPIDs {
		if p, ok := counts.VIPs[id]; ok {
			model.Sub(&snap.VIPCnt[num].Refused, p.Refused)
		}
	}
}

// Down lists the members that are DOWN, whose connections the switches
// dispatched count as closed.
func (c *Controller) Down() map[string]bool {
	down := map[string]bool{}
	for _, p := range c.snap.Load().Pools {
		for _, m := range p.Members {
			if m.Status == sdnlb.MemberDown {
				down[m.ID] = true
			}
		}
	}
	return down
}
