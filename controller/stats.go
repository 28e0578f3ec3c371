package controller

import (
	"cmp"
	"context"
	"net"
	"slices"
	"strconv"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// handleFlowRemoved accounts a connection flow that ended: its counters
// join the member's totals and, for the client → member direction, the
// connection stops being active.
func (s *session) handleFlowRemoved() {
	fr := &s.removed
	cat, vipNum, memberNum, ok := cookieParts(fr.Cookie)
	if !ok || (cat != catConn && cat != catConnReply) {
		return
	}
	snap := s.c.snap.Load()
	m := snap.memberCnt[memberNum] // nil once the member is deleted
	if cat == catConnReply {
		if m != nil {
			m.packetsOut.Add(fr.PacketCount)
			m.bytesOut.Add(fr.ByteCount)
		}
		return
	}
	if m != nil {
		m.packetsIn.Add(fr.PacketCount)
		m.bytesIn.Add(fr.ByteCount)
	}
	// Only connections this session counted are released here: after a
	// reconnect the switch reports flows of the old session, which settled
	// its counts when it ended.
	key := uint64(vipNum)<<32 | uint64(memberNum)
	if s.active[key] <= 0 {
		return
	}
	if s.active[key]--; s.active[key] == 0 {
		delete(s.active, key)
	}
	if m != nil {
		m.active.Add(-1)
	}
	if v := snap.vipCnt[vipNum]; v != nil {
		v.active.Add(-1)
	}
	if v := snap.vipByNum[vipNum]; v != nil && v.persist > 0 {
		if src, ok := fr.Match.Get(ofp.OXMIPv4Src); ok {
			s.c.persist.touch(vipNum, ipUint(src.IPv4()), memberNum, s.c.now().Add(v.persist))
		}
	}
}

// pollStats asks the switch for the counters of its connection flows; the
// reply updates the members' live counters.
func (s *session) pollStats() {
	xid := s.nextXID()
	s.pollXID.Store(xid)
	s.sendXID(xid, ofp.MultipartRequest{Body: connFlowStatsRequest()})
}

func connFlowStatsRequest() ofp.FlowStatsRequest {
	return ofp.FlowStatsRequest{
		TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
		Cookie: makeCookie(catConn, 0, 0), CookieMask: maskApp | maskConnCats,
	}
}

func (s *session) handleMultipart(xid uint32, m *ofp.MultipartReply) {
	more := m.Flags&ofp.MultipartReplyMore != 0
	switch body := m.Body.(type) {
	case ofp.PortDescReply:
		s.portsMu.Lock()
		for _, p := range body.Ports {
			s.ports[p.PortNo] = p
		}
		s.portsMu.Unlock()
	case ofp.FlowStatsReply:
		if xid == s.pollXID.Load() {
			s.collectPoll(xid, body.Stats, more)
			return
		}
		s.pendMu.Lock()
		r := s.pending[xid]
		if r != nil {
			r.stats = append(r.stats, body.Stats...)
		}
		s.pendMu.Unlock()
		if !more {
			s.finishRequest(xid, r, nil)
		}
	}
}

// collectPoll assembles one poll's reply parts and, at the last one, moves
// the members' live counters by the difference to the previous poll.
func (s *session) collectPoll(xid uint32, stats []ofp.FlowStats, more bool) {
	if xid != s.pollFrom {
		clear(s.poll)
		s.pollFrom = xid
	}
	for i := range stats {
		cat, _, memberNum, ok := cookieParts(stats[i].Cookie)
		if !ok {
			continue
		}
		fc := s.poll[memberNum]
		switch cat {
		case catConn:
			fc.packetsIn += int64(stats[i].PacketCount)
			fc.bytesIn += int64(stats[i].ByteCount)
		case catConnReply:
			fc.packetsOut += int64(stats[i].PacketCount)
			fc.bytesOut += int64(stats[i].ByteCount)
		}
		s.poll[memberNum] = fc
	}
	if more {
		return
	}
	cnt := s.c.snap.Load().memberCnt
	for num, old := range s.live {
		if _, ok := s.poll[num]; !ok {
			addLive(cnt[num], flowCounters{}, old)
		}
	}
	for num, fc := range s.poll {
		addLive(cnt[num], fc, s.live[num])
	}
	s.live, s.poll = s.poll, s.live
	clear(s.poll)
	s.pollFrom = 0
}

func addLive(m *memberCounters, now, before flowCounters) {
	if m == nil {
		return
	}
	m.livePacketsIn.Add(now.packetsIn - before.packetsIn)
	m.liveBytesIn.Add(now.bytesIn - before.bytesIn)
	m.livePacketsOut.Add(now.packetsOut - before.packetsOut)
	m.liveBytesOut.Add(now.bytesOut - before.bytesOut)
}

// settle removes what an ended session contributed to the live and active
// counters, and gives up its held setups.
func (s *session) settle() {
	snap := s.c.snap.Load()
	for num, fc := range s.live {
		addLive(snap.memberCnt[num], flowCounters{}, fc)
	}
	clear(s.live)
	for key, n := range s.active {
		if m := snap.memberCnt[uint32(key)]; m != nil {
			m.active.Add(-n)
		}
		if v := snap.vipCnt[uint32(key>>32)]; v != nil {
			v.active.Add(-n)
		}
	}
	clear(s.active)
	s.heldMu.Lock()
	for _, q := range s.held {
		for _, h := range q {
			h.vip.active.Add(-1)
		}
	}
	clear(s.held)
	s.heldMu.Unlock()
	s.pendMu.Lock()
	for xid, r := range s.pending {
		delete(s.pending, xid)
		r.done <- errClosed
	}
	s.pendMu.Unlock()
}

// finishRequest completes the pending request xid, if any, with err.
func (s *session) finishRequest(xid uint32, r *flowsRequest, err error) {
	s.pendMu.Lock()
	if r == nil {
		r = s.pending[xid]
	}
	delete(s.pending, xid)
	s.pendMu.Unlock()
	if r != nil {
		r.done <- err
	}
}

// Switches lists the connected switches, by datapath id.
func (c *Controller) Switches(ctx context.Context) ([]*sdnlb.Switch, error) {
	sessions := c.sessionList()
	out := make([]*sdnlb.Switch, 0, len(sessions))
	for _, s := range sessions {
		sw := &sdnlb.Switch{DPID: formatDPID(s.dpid), Address: s.remote, ConnectedAt: s.connectedAt, Ports: []sdnlb.SwitchPort{}}
		s.portsMu.Lock()
		for _, p := range s.ports {
			sw.Ports = append(sw.Ports, sdnlb.SwitchPort{
				No: p.PortNo, Name: p.Name, MAC: net.HardwareAddr(p.HWAddr[:]).String(),
				Up: p.Config&ofp.PortConfigDown == 0 && p.State&ofp.PortStateLinkDown == 0,
			})
		}
		s.portsMu.Unlock()
		slices.SortFunc(sw.Ports, func(a, b sdnlb.SwitchPort) int { return cmp.Compare(a.No, b.No) })
		out = append(out, sw)
	}
	slices.SortFunc(out, func(a, b *sdnlb.Switch) int { return cmp.Compare(a.DPID, b.DPID) })
	return out, nil
}

// SwitchFlows asks a switch for the flows sdnlb installed on it.
func (c *Controller) SwitchFlows(ctx context.Context, dpid string) ([]*sdnlb.Flow, error) {
	id, ok := parseDPID(dpid)
	var s *session
	if ok {
		s = c.session(id)
	}
	if s == nil {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no switch with dpid %s is connected", dpid)
	}
	r := &flowsRequest{done: make(chan error, 1)}
	xid := s.nextXID()
	s.pendMu.Lock()
	s.pending[xid] = r
	s.pendMu.Unlock()
	defer func() {
		s.pendMu.Lock()
		delete(s.pending, xid)
		s.pendMu.Unlock()
	}()
	req := ofp.MultipartRequest{Body: ofp.FlowStatsRequest{
		TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
		Cookie: appID << cookieAppShift, CookieMask: maskApp,
	}}
	if err := s.sendXID(xid, req); err != nil {
		return nil, sdnlb.Errorf(sdnlb.EUNAVAILABLE, "switch %s: %v", dpid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	select {
	case err := <-r.done:
		if err != nil {
			return nil, sdnlb.Errorf(sdnlb.EUNAVAILABLE, "switch %s: %v", dpid, err)
		}
	case <-ctx.Done():
		return nil, sdnlb.Errorf(sdnlb.EUNAVAILABLE, "switch %s did not answer the flow request: %v", dpid, ctx.Err())
	}
	flows := make([]*sdnlb.Flow, 0, len(r.stats))
	for i := range r.stats {
		st := &r.stats[i]
		flows = append(flows, &sdnlb.Flow{
			Cookie:          "0x" + strconv.FormatUint(st.Cookie, 16),
			TableID:         int(st.TableID),
			Priority:        int(st.Priority),
			Match:           st.Match.String(),
			Actions:         ofp.FormatInstructions(st.Instructions),
			IdleTimeout:     int(st.IdleTimeout),
			HardTimeout:     int(st.HardTimeout),
			Packets:         st.PacketCount,
			Bytes:           st.ByteCount,
			DurationSeconds: float64(st.DurationSec) + float64(st.DurationNsec)/1e9,
		})
	}
	slices.SortStableFunc(flows, func(a, b *sdnlb.Flow) int { return cmp.Compare(b.Priority, a.Priority) })
	return flows, nil
}

// PoolStats sums the live counters of a pool's members.
func (c *Controller) PoolStats(ctx context.Context, poolID string) (*sdnlb.PoolStats, error) {
	snap := c.snap.Load()
	p, ok := snap.pools[poolID]
	if !ok {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "pool %s not found", poolID)
	}
	ps := &sdnlb.PoolStats{PoolID: poolID, Members: make([]sdnlb.MemberStats, 0, len(p.members)), UpdatedAt: c.now()}
	if p.vip != nil {
		ps.RefusedConnections = p.vip.cnt.refused.Load()
	}
	for _, m := range p.members {
		ms := sdnlb.MemberStats{
			MemberID:          m.id,
			Address:           m.address,
			Port:              int(m.port),
			Status:            m.status,
			ActiveConnections: uint64(max(0, m.cnt.active.Load())),
			TotalConnections:  m.cnt.total.Load(),
			PacketsIn:         m.cnt.packetsIn.Load() + uint64(max(0, m.cnt.livePacketsIn.Load())),
			PacketsOut:        m.cnt.packetsOut.Load() + uint64(max(0, m.cnt.livePacketsOut.Load())),
			BytesIn:           m.cnt.bytesIn.Load() + uint64(max(0, m.cnt.liveBytesIn.Load())),
			BytesOut:          m.cnt.bytesOut.Load() + uint64(max(0, m.cnt.liveBytesOut.Load())),
		}
		ps.ActiveConnections += ms.ActiveConnections
		ps.TotalConnections += ms.TotalConnections
		ps.PacketsIn += ms.PacketsIn
		ps.PacketsOut += ms.PacketsOut
		ps.BytesIn += ms.BytesIn
		ps.BytesOut += ms.BytesOut
		ps.Members = append(ps.Members, ms)
	}
	return ps, nil
}

func ipString(ip [4]byte) string { return net.IP(ip[:]).String() }

func macString(mac [6]byte) string { return net.HardwareAddr(mac[:]).String() }
