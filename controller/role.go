package controller

import (
	"fmt"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// OpenFlow roles. With Options.Roles, several sdnlb nodes connect to each
// switch and exactly one of them, the leader of the cluster, is its
// MASTER: it asks for the role with the lease generation as generation id
// (larger than any leader's before it, so a switch refuses a deposed
// leader's claim as stale). The others ask for SLAVE; a switch refuses a
// slave's flow-mods and group-mods (OFPBRC_IS_SLAVE) and sends it no
// packet-ins, so a follower sends neither and answers nothing. A follower
// promoted to MASTER reads the switch's flows and groups and adopts them
// (see adopt.go), as at a handshake, instead of wiping the switch.
//
// Without Options.Roles the controller never asks for a role: the switch
// treats it as EQUAL, which is what a single controller needs.

// role is what the controller asks each switch for.
type role struct {
	master     bool
	generation uint64
}

func (r role) ofp() ofp.RoleRequest {
	if r.master {
		return ofp.RoleRequest{Role: ofp.RoleMaster, GenerationID: r.generation}
	}
	return ofp.RoleRequest{Role: ofp.RoleSlave, GenerationID: r.generation}
}

func (r role) String() string {
	if r.master {
		return fmt.Sprintf("MASTER (generation %d)", r.generation)
	}
	return fmt.Sprintf("SLAVE (generation %d)", r.generation)
}

// SetRole makes the controller the MASTER of every switch (master) or a
// SLAVE, with the lease generation as generation id; a no-op without
// Options.Roles. It returns at once: promotions, which read each switch's
// state, run in the background.
func (c *Controller) SetRole(master bool, generation uint64) {
	if !c.opts.Roles {
		return
	}
	r := role{master: master, generation: generation}
	c.roleMu.Lock()
	changed := c.wantRole != r
	c.wantRole = r
	c.roleMu.Unlock()
	if !changed {
		return
	}
	c.log.Info("OpenFlow role", "role", r.String())
	for _, s := range c.switchConns() {
		s.wakeRole()
	}
}

// role is the role the controller asks for now.
func (c *Controller) role() role {
	if !c.opts.Roles {
		return role{master: true}
	}
	c.roleMu.Lock()
	defer c.roleMu.Unlock()
	return c.wantRole
}

// staleRole is called when a switch says another controller holds a newer
// generation: this node's idea of the lease is old.
func (c *Controller) staleRole() {
	if c.opts.OnStaleRole != nil {
		c.opts.OnStaleRole()
	}
}

// roleStateTimeout bounds how long a promotion waits for a switch's
// flows and groups.
const roleStateTimeout = 5 * time.Second

// wakeRole tells the switch's followRole that the controller's role
// changed; a wake already pending covers this one.
func (s *switchConn) wakeRole() {
	select {
	case s.roleWake <- struct{}{}:
	default:
	}
}

// followRole applies the controller's role to the switch, once at the
// start (a change that came before the switch was registered) and at
// every wake, until the connection ends. Being the only goroutine that
// changes the switch's role, it needs no lock for it.
func (s *switchConn) followRole() {
	if !s.c.opts.Roles {
		return
	}
	for {
		s.applyRole()
		select {
		case <-s.roleWake:
		case <-s.done:
			return
		}
	}
}

// applyRole brings the switch to the controller's role: a demotion stops
// every decision at once, then asks for SLAVE; a promotion asks for
// MASTER, reads the switch's state and adopts it. A change that arrives
// meanwhile is applied next.
func (s *switchConn) applyRole() {
	for {
		r := s.c.role()
		if r == s.asked || s.closed() {
			return
		}
		wasMaster := s.master.Load()
		if !r.master {
			s.decide(func(*dataplane, *outbox) { s.master.Store(false) })
		}
		s.asked = r
		if err := s.send(r.ofp()); err != nil {
			return
		}
		if !r.master || wasMaster {
			continue
		}
		have, err := s.readState()
		if err != nil {
			// The handshake of the next connection adopts it instead.
			s.log.Warn("cannot read the switch's state to take it over; closing its connection", "err", err)
			s.close()
			return
		}
		s.decide(func(old *dataplane, out *outbox) {
			if s.c.role() != r {
				return // changed meanwhile: the next turn applies it
			}
			// A new dataplane: the switch is what it holds now, not what
			// this node decided while it last led. The old one gives back
			// its share of the counters.
			snap := s.c.snap.Load()
			old.settle(snap)
			s.dp = newDataplane(s.c.dataplaneConfig(s.dpid, s.log, s.groups))
			s.dp.adopt(s.c.now(), snap, have, out)
			s.master.Store(true)
		})
		if s.flush() != nil {
			return
		}
		s.log.Info("switch taken over as MASTER", "generation", r.generation,
			"flows", len(have.flows), "groups", len(have.groups))
	}
}

// readState asks the switch for sdnlb's flows and its groups.
func (s *switchConn) readState() (switchState, error) {
	var have switchState
	timeout := time.NewTimer(roleStateTimeout)
	defer timeout.Stop()
	wait := func(m ofp.Message) (*flowsRequest, error) {
		xid, r, err := s.request(m)
		if err != nil {
			s.pending.forget(xid)
			return nil, err
		}
		select {
		case err := <-r.done:
			return r, err
		case <-timeout.C:
			s.pending.forget(xid)
			return nil, fmt.Errorf("no reply within %v", roleStateTimeout)
		}
	}
	r, err := wait(ofp.MultipartRequest{Body: statsRequest()})
	if err != nil {
		return have, fmt.Errorf("flows: %w", err)
	}
	have.flows = r.stats
	if s.groups {
		if r, err = wait(ofp.MultipartRequest{Body: ofp.GroupDescRequest{}}); err != nil {
			return have, fmt.Errorf("groups: %w", err)
		}
		have.groups = r.groups
	}
	return have, nil
}
