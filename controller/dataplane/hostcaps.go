package dataplane

import "sync/atomic"

// HostCaps bounds the hosts the L2 learners hold: each switch's, and
// every switch's together, since a host on the data plane can send from
// ever new addresses and a switch that forges its packet-ins can claim
// any. The learners of all switches share one; it is safe for concurrent
// use. A member the configuration names, and an address a setup waits
// for, are learned past the caps: the data path needs them.
type HostCaps struct {
	perSwitch int
	total     int64
	held      atomic.Int64
	// Refused, when set, is called for each new host a cap turned away,
	// with the switch and whether it was the switch's cap (or the
	// total). It runs within the switch's decision and must not block.
	Refused func(dpid uint64, perSwitch bool)
}

// NewHostCaps returns caps of perSwitch hosts on each switch and total
// on all of them.
func NewHostCaps(perSwitch, total int) *HostCaps {
	return &HostCaps{perSwitch: perSwitch, total: int64(total)}
}

// Held is how many hosts the learners sharing c hold.
func (c *HostCaps) Held() int { return int(c.held.Load()) }

// full reports whether a learner that holds n hosts is at a cap.
func (c *HostCaps) full(n int) bool { return n >= c.perSwitch || c.held.Load() >= c.total }

// refuse tells Refused of a new host a learner of switch dpid, holding n,
// turned away.
func (c *HostCaps) refuse(dpid uint64, n int) {
	if c.Refused != nil {
		c.Refused(dpid, n >= c.perSwitch)
	}
}

// take counts a new host.
func (c *HostCaps) take() { c.held.Add(1) }

// give returns n hosts a learner forgot.
func (c *HostCaps) give(n int) { c.held.Add(-int64(n)) }
