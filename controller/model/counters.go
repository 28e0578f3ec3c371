package model

import (
	"math"
	"sync/atomic"

	"github.com/sdnlb/sdnlb"
)

// VIPCounters outlive snapshots: one per VIP id.
type VIPCounters struct {
	Active  atomic.Int64
	Refused atomic.Uint64
}

// MemberCounters outlive snapshots: one per member id. Every counter but
// active only grows: what the member's flows counted, added as the
// switches' flow ledgers read it.
type MemberCounters struct {
	Active                atomic.Int64 // connections the controller set up and that have not ended
	Total                 atomic.Uint64
	PacketsIn, PacketsOut atomic.Uint64
	BytesIn, BytesOut     atomic.Uint64
	// Connections the switches dispatched (SWITCH): opened (also in
	// total), and of TCP ones, closed (a FIN or reset from the client, a
	// reset from the member).
	Opened, Closed atomic.Uint64
}

// ActiveConns is the member's active connections: those the controller
// set up, and an estimate of those the switches dispatched, opened less
// closed. The estimate counts a connection ended at its client's FIN or
// reset, or the member's reset (NAT); one that ends with more than one
// counts more than once (the estimate stays at 0 at least), one whose
// client and member vanish without either stays counted until the member
// goes DOWN, and one of UDP never ends.
func (m *MemberCounters) ActiveConns() uint64 {
	return uint64(max(0, m.Active.Load())) + m.DispatchedActive()
}

// endDispatched counts every connection the switches dispatched to the
// member as closed: its route resets those of a DOWN member, whose clients
// may never send the FIN or reset that would count them.
func (m *MemberCounters) endDispatched() {
	for {
		closed, opened := m.Closed.Load(), m.Opened.Load()
		if closed >= opened || m.Closed.CompareAndSwap(closed, opened) {
			return
		}
	}
}

// DispatchedActive is the estimate of the member's active connections
// that the switches dispatched.
func (m *MemberCounters) DispatchedActive() uint64 {
	closed := m.Closed.Load()
	if opened := m.Opened.Load(); opened > closed {
		return opened - closed
	}
	return 0
}

func (m *MemberCounters) bytes() uint64 { return m.BytesIn.Load() + m.BytesOut.Load() }

// Stats reads the member's counters.
func (m *Member) Stats() sdnlb.MemberStats {
	active := m.Cnt.ActiveConns()
	if m.Status == sdnlb.MemberDown { // the switches reset what they dispatched to it
		active = uint64(max(0, m.Cnt.Active.Load()))
	}
	st := sdnlb.MemberStats{
		MemberID:          m.ID,
		Address:           m.address,
		Port:              int(m.Port),
		Status:            m.Status,
		StatusSince:       m.Since,
		ActiveConnections: active,
		TotalConnections:  m.Cnt.Total.Load(),
		PacketsIn:         m.Cnt.PacketsIn.Load(),
		PacketsOut:        m.Cnt.PacketsOut.Load(),
		BytesIn:           m.Cnt.BytesIn.Load(),
		BytesOut:          m.Cnt.BytesOut.Load(),
		EffectiveWeight:   math.Round(m.Effective*100) / 100,
		SlowStart:         math.Round(m.RampDone*1000) / 1000,
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
