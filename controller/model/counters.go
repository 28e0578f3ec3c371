package model

import (
	"cmp"
	"math"
	"slices"
	"sync/atomic"

	"github.com/sdnlb/sdnlb"
)

// VIPCounters outlive snapshots: one per VIP id. Active and Refused are
// this node's own; Elsewhere is what the rest of the cluster counted.
type VIPCounters struct {
	Active    atomic.Int64
	Refused   atomic.Uint64
	Elsewhere atomic.Pointer[sdnlb.VIPPart]
}

// ActiveConns is the connections to the VIP the cluster's controllers set
// up and that have not ended: this node's, and the other live nodes' as
// they last recorded them.
func (v *VIPCounters) ActiveConns() int64 {
	n := v.Active.Load()
	if e := v.Elsewhere.Load(); e != nil {
		n += int64(e.Active)
	}
	return n
}

// RefusedConns is the cluster's refused connections to the VIP.
func (v *VIPCounters) RefusedConns() uint64 {
	n := v.Refused.Load()
	if e := v.Elsewhere.Load(); e != nil {
		n += e.Refused
	}
	return n
}

// MemberCounters outlive snapshots: one per member id. The atomics are
// what this node counted; every one but active only grows: what the
// member's flows counted, added as the switches' flow ledgers read it.
// Elsewhere is what the rest of the cluster counted, as this node last
// read it: decisions and stats are the cluster's.
type MemberCounters struct {
	Active                atomic.Int64 // connections the controller set up and that have not ended
	Total                 atomic.Uint64
	PacketsIn, PacketsOut atomic.Uint64
	BytesIn, BytesOut     atomic.Uint64
	// Connections the switches dispatched (SWITCH): opened (also in
	// total), and of TCP ones, closed (a FIN or reset from the client, a
	// reset from the member).
	Opened, Closed atomic.Uint64
	Elsewhere      atomic.Pointer[sdnlb.MemberElsewhere]
}

// Own is what this node counted of the member.
func (m *MemberCounters) Own() sdnlb.Counts {
	return sdnlb.Counts{
		Connections: m.Total.Load(),
		PacketsIn:   m.PacketsIn.Load(), PacketsOut: m.PacketsOut.Load(),
		BytesIn: m.BytesIn.Load(), BytesOut: m.BytesOut.Load(),
		Opened: m.Opened.Load(), Closed: m.Closed.Load(),
	}
}

// Add adds c to what this node counted of the member.
func (m *MemberCounters) Add(c sdnlb.Counts) {
	m.Total.Add(c.Connections)
	m.PacketsIn.Add(c.PacketsIn)
	m.PacketsOut.Add(c.PacketsOut)
	m.BytesIn.Add(c.BytesIn)
	m.BytesOut.Add(c.BytesOut)
	m.Opened.Add(c.Opened)
	m.Closed.Add(c.Closed)
}

// Sub takes c out of what this node counted of the member, down to 0.
func (m *MemberCounters) Sub(c sdnlb.Counts) {
	Sub(&m.Total, c.Connections)
	Sub(&m.PacketsIn, c.PacketsIn)
	Sub(&m.PacketsOut, c.PacketsOut)
	Sub(&m.BytesIn, c.BytesIn)
	Sub(&m.BytesOut, c.BytesOut)
	Sub(&m.Opened, c.Opened)
	Sub(&m.Closed, c.Closed)
}

// Sub takes n from a, down to 0.
func Sub(a *atomic.Uint64, n uint64) {
	for {
		v := a.Load()
		if a.CompareAndSwap(v, v-min(v, n)) {
			return
		}
	}
}

// Cluster is what the cluster counted of the member: this node's counts
// and the rest's.
func (m *MemberCounters) Cluster() sdnlb.Counts {
	c := m.Own()
	if e := m.Elsewhere.Load(); e != nil {
		c.Add(e.Counts)
	}
	return c
}

// ControllerActive is the connections through the member that the
// cluster's controllers set up and that have not ended.
func (m *MemberCounters) ControllerActive() int64 {
	n := m.Active.Load()
	if e := m.Elsewhere.Load(); e != nil {
		n += int64(e.Active)
	}
	return n
}

// ActiveConns is the member's active connections in the cluster: those
// the controllers set up, and an estimate of those the switches
// dispatched, opened less closed. The estimate counts a connection ended
// at its client's FIN or reset, or the member's reset (NAT); one that
// ends with more than one counts more than once (the estimate stays at 0
// at least), one whose client and member vanish without either stays
// counted until the member goes DOWN, and one of UDP never ends.
func (m *MemberCounters) ActiveConns() uint64 {
	return uint64(max(0, m.ControllerActive())) + m.DispatchedActive()
}

// endDispatched counts every connection the switches dispatched to the
// member as closed, as this node counted them: its route resets those of
// a DOWN member, whose clients may never send the FIN or reset that would
// count them. Every node evens its own counts, also those that closed
// more than it opened (another node's before a takeover), and the leader
// those it absorbed (cluster.Stats).
func (m *MemberCounters) endDispatched() {
	for {
		closed, opened := m.Closed.Load(), m.Opened.Load()
		if closed == opened || m.Closed.CompareAndSwap(closed, opened) {
			return
		}
	}
}

// DispatchedActive is the estimate of the member's active connections
// that the cluster's switches dispatched.
func (m *MemberCounters) DispatchedActive() uint64 {
	c := m.Cluster()
	if c.Opened > c.Closed {
		return c.Opened - c.Closed
	}
	return 0
}

// bytes is the bytes the cluster counted of the member's connections.
func (m *MemberCounters) bytes() uint64 {
	c := m.Cluster()
	return c.BytesIn + c.BytesOut
}

// Stats reads the cluster's counters of the member, and each node's
// share; self is this node's id.
func (m *Member) Stats(self string) sdnlb.MemberStats {
	active := m.Cnt.ActiveConns()
	if m.Status == sdnlb.MemberDown { // the switches reset what they dispatched to it
		active = uint64(max(0, m.Cnt.ControllerActive()))
	}
	c := m.Cnt.Cluster()
	st := sdnlb.MemberStats{
		MemberID:          m.ID,
		Address:           m.address,
		Port:              int(m.Port),
		Status:            m.Status,
		StatusSince:       m.Since,
		ActiveConnections: active,
		TotalConnections:  c.Connections,
		PacketsIn:         c.PacketsIn,
		PacketsOut:        c.PacketsOut,
		BytesIn:           c.BytesIn,
		BytesOut:          c.BytesOut,
		EffectiveWeight:   math.Round(m.Effective*100) / 100,
		SlowStart:         math.Round(m.RampDone*1000) / 1000,
		Nodes:             m.Cnt.nodes(self, m.Status == sdnlb.MemberDown),
	}
	if !InRotation(m.Status) {
		st.EffectiveWeight, st.SlowStart = 0, 0 // out of rotation
	}
	if m.Agent != nil {
		c := m.availableCPU()
		st.AvailableCPU = &c
	}
	if m.Capacity > 0 {
		s := math.Round(m.AvailableSessions()*1000) / 1000
		st.AvailableSessions = &s
	}
	return st
}

// nodes is each node's share of the member's counters, this node's (self)
// with what it counted itself; down leaves out the estimate of the
// connections the switches dispatched.
func (m *MemberCounters) nodes(self string, down bool) []sdnlb.NodeStats {
	own := sdnlb.NodeStats{Node: self}
	var out []sdnlb.NodeStats
	if e := m.Elsewhere.Load(); e != nil {
		out = make([]sdnlb.NodeStats, 0, len(e.Nodes)+1)
		for _, n := range e.Nodes {
			if n.Node == self {
				own = n
				continue
			}
			out = append(out, n)
		}
	}
	c := m.Own()
	active := uint64(max(0, m.Active.Load()))
	if !down && c.Opened > c.Closed {
		active += c.Opened - c.Closed
	}
	own.Add(c.Share(active))
	out = append(out, own)
	slices.SortFunc(out, func(a, b sdnlb.NodeStats) int { return cmp.Compare(a.Node, b.Node) })
	return out
}
