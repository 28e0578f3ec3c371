package health

import (
	"errors"
	"fmt"
	"time"

	"github.com/sdnlb/sdnlb"
)

// check is one monitor's verdict on one member with the counter that flips it.
type check struct {
	monitorID string
	up        bool
	// fresh: the member was never checked (the store created it DOWN and
	// it has no LastCheck), so the first result decides the verdict at
	// once, like HAProxy's initial check, instead of waiting for rise.
	fresh   bool
	streak  int    // consecutive results against the verdict
	lastErr string // of this monitor's latest probe
}

// record counts one probe result and reports whether the verdict flipped.
// A verdict flips after fall consecutive failures while up, or rise
// consecutive successes while down.
func (c *check) record(ok bool, rise, fall int) bool {
	if c.fresh {
		c.fresh, c.streak = false, 0
		flipped := c.up != ok
		c.up = ok
		return flipped
	}
	if ok == c.up {
		c.streak = 0
		return false
	}
	c.streak++
	need := fall
	if !c.up {
		need = rise
	}
	if c.streak < need {
		return false
	}
	c.up, c.streak = ok, 0
	return true
}

// drop takes the verdict down at once, whatever fall says: an agent said
// its member is out. It reports whether the verdict flipped.
func (c *check) drop() bool {
	flipped := c.up || c.fresh
	c.up, c.fresh, c.streak = false, false, 0
	return flipped
}

// memberState is the health of one member: the verdicts of its pool's
// monitors and the MemberHealth they add up to, with what its agent last
// said. It does no I/O; every method takes the time, so it is tested
// without clocks.
type memberState struct {
	health sdnlb.MemberHealth
	checks []*check // one per admin-up monitor of the pool, by monitor id

	// The agent report last handed to the store, and when: a report that
	// only moves a little is not worth a write.
	written   *sdnlb.AgentReport
	writtenAt time.Time
}

// An agent report whose drain is unchanged is written once its share
// moved by agentWriteStep points since the last write, at most once per
// agentWriteEvery: agents answer several times a second, and every write
// reaches every controller.
const (
	agentWriteStep  = 5
	agentWriteEvery = time.Second
)

// transition is a change of the member's status.
type transition struct {
	From, To sdnlb.MemberStatus
	Reason   string
}

// newMemberState starts from the health the store holds, so a restart
// keeps members where they were.
func newMemberState(h sdnlb.MemberHealth) *memberState {
	if h.Status != sdnlb.MemberUp && h.Status != sdnlb.MemberDown {
		h.Status = sdnlb.MemberNoMonitor
	}
	return &memberState{health: h, written: h.Agent}
}

// status adds the verdicts up: UP only when every monitor says up.
func (s *memberState) status() sdnlb.MemberStatus {
	if len(s.checks) == 0 {
		return sdnlb.MemberNoMonitor
	}
	for _, c := range s.checks {
		if !c.up {
			return sdnlb.MemberDown
		}
	}
	return sdnlb.MemberUp
}

func (s *memberState) find(monitorID string) *check {
	for _, c := range s.checks {
		if c.monitorID == monitorID {
			return c
		}
	}
	return nil
}

// setMonitors makes the checks those of monitorIDs (sorted), keeping the
// counters of monitors that stay. A new monitor's verdict starts from the
// member's status: a member in rotation (UP, NO_MONITOR) counts as up until
// max_retries failures; one never checked is fresh; any other DOWN member
// needs rise successes.
func (s *memberState) setMonitors(monitorIDs []string, now time.Time) (transition, bool) {
	checks := make([]*check, 0, len(monitorIDs))
	for _, id := range monitorIDs {
		c := s.find(id)
		if c == nil {
			c = &check{monitorID: id}
			switch {
			case s.health.Status != sdnlb.MemberDown:
				c.up = true
			case s.health.LastCheck == nil:
				c.fresh = true
			}
		}
		checks = append(checks, c)
	}
	s.checks = checks
	reason := "monitors changed"
	if len(checks) == 0 {
		reason = "pool has no monitor"
	}
	return s.settle(now, reason)
}

// probeResult is the outcome of one probe.
type probeResult struct {
	Err     error
	Latency time.Duration
	Said    *agentReply // what the member's agent said, on a passed AGENT probe
}

// observe records a probe of monitorID that ended at now. rise and fall
// are the monitor's rise and max_retries.
func (s *memberState) observe(monitorID string, r probeResult, rise, fall int, now time.Time) (transition, bool) {
	c := s.find(monitorID)
	if c == nil {
		return transition{}, false
	}
	wasFresh := c.fresh
	c.lastErr = ""
	if r.Err != nil {
		c.lastErr = r.Err.Error()
	}
	var out *agentOutError
	isOut := errors.As(r.Err, &out)
	var flipped bool
	if isOut {
		flipped = c.drop()
	} else {
		flipped = c.record(r.Err == nil, rise, fall)
	}
	s.health.LastCheck = &now
	s.health.LatencyMS = float64(r.Latency) / float64(time.Millisecond)
	s.health.LastError = ""
	for _, c := range s.checks {
		if c.lastErr != "" {
			s.health.LastError = c.lastErr
			break
		}
	}
	if !flipped {
		return transition{}, false
	}
	var reason string
	switch {
	case isOut:
		reason = fmt.Sprintf("monitor %s: %s", monitorID, c.lastErr)
	case wasFresh && c.up:
		reason = fmt.Sprintf("monitor %s: first check passed", monitorID)
	case wasFresh:
		reason = fmt.Sprintf("monitor %s: first check failed: %s", monitorID, c.lastErr)
	case c.up:
		reason = fmt.Sprintf("monitor %s: %d consecutive successes", monitorID, rise)
	default:
		reason = fmt.Sprintf("monitor %s: %d consecutive failures: %s", monitorID, fall, c.lastErr)
	}
	return s.settle(now, reason)
}

// settle moves the status to what the checks add up to.
func (s *memberState) settle(now time.Time, reason string) (transition, bool) {
	to := s.status()
	if to == s.health.Status {
		return transition{}, false
	}
	t := transition{From: s.health.Status, To: to, Reason: reason}
	s.health.Status = to
	s.health.Since = now
	return t, true
}

// hear records what the member's agent said at now, and reports whether
// the store must hear of it too: at once the first time and when the
// drain flips; when only the share moves, once it moved by agentWriteStep
// points since the last write and agentWriteEvery passed since; never
// when nothing changed.
func (s *memberState) hear(r agentReply, now time.Time) bool {
	a := sdnlb.AgentReport{Available: 100, At: now}
	if last := s.health.Agent; last != nil {
		a.Available, a.Drain = last.Available, last.Drain
	}
	if r.available >= 0 {
		a.Available = r.available
	}
	a.Drain = r.drain || a.Drain && !r.undrain
	s.health.Agent = &a // a new one: the last is published
	w := s.written
	switch {
	case w == nil || w.Drain != a.Drain:
		return true
	case w.Available == a.Available:
		return false
	}
	return max(a.Available-w.Available, w.Available-a.Available) >= agentWriteStep && now.Sub(s.writtenAt) >= agentWriteEvery
}

// forgetAgent drops the agent's report once no AGENT monitor checks the
// member, so that an old drain does not hold it out of rotation; it
// reports whether there was one.
func (s *memberState) forgetAgent() bool {
	had := s.health.Agent != nil
	s.health.Agent = nil
	return had
}

// wrote notes that the member's health, with its agent report, went to
// the store at now.
func (s *memberState) wrote(now time.Time) {
	s.written, s.writtenAt = s.health.Agent, now
}
