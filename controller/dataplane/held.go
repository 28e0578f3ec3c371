package dataplane

import (
	"net/netip"
	"time"

	"github.com/sdnlb/sdnlb/controller/model"
)

// Held setups: a new connection to a member whose MAC is not known yet
// waits for the member's ARP reply, within bounds.
const (
	maxHeldPerMember = 16
	heldTimeout      = 2 * time.Second
)

type heldSetup struct {
	conn     model.Connection
	data     []byte
	deadline time.Time
	vip      *model.VIPCounters
}

// heldSetups are the setups waiting for their member's MAC, by the
// member's address. Each holds one of its VIP's connection slots, which
// it gives back when it is dropped.
type heldSetups struct {
	byMember   map[netip.Addr][]heldSetup
	nextExpiry time.Time // zero: no deadline to watch
}

func newHeldSetups() heldSetups {
	return heldSetups{byMember: map[netip.Addr][]heldSetup{}}
}

// add parks c with its first packet until its member's MAC is known and
// reports whether it did: a member with maxHeldPerMember setups waiting
// takes no more.
func (h *heldSetups) add(now time.Time, c model.Connection, data []byte, vip *model.VIPCounters) bool {
	ip := c.MemberIP
	q := h.byMember[ip]
	if len(q) >= maxHeldPerMember {
		vip.Active.Add(-1) // dropped: the client will retransmit
		return false
	}
	h.byMember[ip] = append(q, heldSetup{conn: c, data: append([]byte(nil), data...), deadline: now.Add(heldTimeout), vip: vip})
	if h.nextExpiry.IsZero() {
		h.nextExpiry = now.Add(heldTimeout)
	}
	return true
}

// waiting reports whether setups wait for the member at ip.
func (h *heldSetups) waiting(ip netip.Addr) bool {
	return len(h.byMember[ip]) > 0
}

// take removes the setups waiting for the member at ip and returns them.
func (h *heldSetups) take(ip netip.Addr) []heldSetup {
	q := h.byMember[ip]
	delete(h.byMember, ip)
	return q
}

// expire drops setups whose member never answered, releasing their VIP
// connection slots. It is cheap to call for every message.
func (h *heldSetups) expire(now time.Time) {
	if h.nextExpiry.IsZero() || now.Before(h.nextExpiry) {
		return
	}
	h.nextExpiry = time.Time{}
	for ip, q := range h.byMember {
		kept := q[:0]
		for _, s := range q {
			if now.After(s.deadline) {
				s.vip.Active.Add(-1)
				continue
			}
			kept = append(kept, s)
			if h.nextExpiry.IsZero() || s.deadline.Before(h.nextExpiry) {
				h.nextExpiry = s.deadline
			}
		}
		if len(kept) == 0 {
			delete(h.byMember, ip)
		} else {
			h.byMember[ip] = kept
		}
	}
}

// release drops every held setup, releasing their VIP connection slots.
func (h *heldSetups) release() {
	for _, q := range h.byMember {
		for _, s := range q {
			s.vip.Active.Add(-1)
		}
	}
	clear(h.byMember)
}
