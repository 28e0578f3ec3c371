package controller

import (
	"fmt"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// OpenFlow roles. With Options.Roles, several sdnlb nodes connect to each
// switch and exactly one of them, the node the cluster assigned, is its
// MASTER: it asks for the role with the switch's generation id from the
// assignment (larger with every change of the switch's master, so a
// switch refuses a former master's claim as stale). The others ask for
// SLAVE with the same generation; a switch refuses a slave's flow-mods
// and group-mods (OFPBRC_IS_SLAVE) and sends it no packet-ins, so a slave
// sends neither and answers nothing. A slave promoted to MASTER reads the
// switch's flows and groups and adopts them (see adopt.go), as at a
// handshake, instead of wiping the switch.
//
// Without Options.Roles the controller never asks for a role: the switch
// treats it as EQUAL, which is what a single controller needs.

// role is what the controller asks a switch for.
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

// Masters is the cluster's assignment of the switches' MASTER role, as
// SetMasters takes it.
type Masters struct {
	// Node is this node; "" while it may be the MASTER of no switch.
	Node string
	// Switches names each switch's MASTER node and the generation id of
	// every role request to the switch.
	Switches []sdnlb.SwitchMaster
	// Unassigned is the generation id of the SLAVE requests to the
	// switches that Switches does not name.
	Unassigned uint64
}

// roles is Masters by datapath id.
type roles struct {
	switches   map[uint64]sdnlb.SwitchMaster
	node       string
	unassigned uint64
}

// SetMasters makes the controller the MASTER of the switches m assigns
// to m.Node and a SLAVE of the others; a no-op without Options.Roles. It
// returns at once: promotions, which read each switch's state, run in the
// background.
func (c *Controller) SetMasters(m Masters) {
	if !c.opts.Roles {
		return
	}
	r := roles{switches: make(map[uint64]sdnlb.SwitchMaster, len(m.Switches)), node: m.Node, unassigned: m.Unassigned}
	for _, sm := range m.Switches {
		if dpid, ok := parseDPID(sm.DPID); ok {
			r.switches[dpid] = sm
		}
	}
	c.roleMu.Lock()
	c.roles = r
	c.roleMu.Unlock()
	for _, s := range c.switchConns() {
		s.wakeRole()
	}
}

// role is the role the controller asks switch dpid for now.
func (c *Controller) role(dpid uint64) role {
	if !c.opts.Roles {
		return role{master: true}
	}
	c.roleMu.Lock()
	defer c.roleMu.Unlock()
	sm, ok := c.roles.switches[dpid]
	if !ok {
		return role{generation: c.roles.unassigned}
	}
	return role{master: sm.Node == c.roles.node && c.roles.node != "", generation: sm.Generation}
}

// masterNode is the node assigned to be switch dpid's MASTER, "" for none
// or without Options.Roles.
func (c *Controller) masterNode(dpid uint64) string {
	c.roleMu.Lock()
	defer c.roleMu.Unlock()
	return c.roles.switches[dpid].Node
}

// staleRole is called when a switch says another controller holds a newer
// generation, or took MASTER: this node's idea of the assignment is old.
func (c *Controller) staleRole() {
	if c.opts.OnStaleRole != nil {
		c.opts.OnStaleRole()
	}
}

// roleStateTimeout bounds how long a promotion waits for a switch's
// flows and groups.
const roleStateTimeout = 5 * time.Second

// wakeRole tells the switch's followRole that the assignment changed; a
// wake already pending covers this one.
func (s *switchConn) wakeRole() {
	select {
	case s.roleWake <- struct{}{}:
	default:
	}
}

// followRole applies the switch's role to it, once at the
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

// applyRole brings the switch to its role: a demotion stops
// every decision at once, then asks for SLAVE; a promotion asks for
// MASTER, reads the switch's state and adopts it. A change that arrives
// meanwhile is applied next.
func (s *switchConn) applyRole() {
	for {
		r := s.c.role(s.dpid)
		if r == s.asked || s.closed() {
			return
		}
		wasMaster := s.master.Load()
		if !r.master {
			s.decide(func(*dataplane.Switch, *dataplane.Outbox) { s.master.Store(false) })
		}
		s.asked = r
		// OpenFlow 1.0 has no roles: a node that is not the switch's
		// master only leaves it alone.
		if s.wire.roles() {
			if err := s.send(r.ofp()); err != nil {
				return
			}
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
		s.decide(func(old *dataplane.Switch, out *dataplane.Outbox) {
			if s.c.role(s.dpid) != r {
				return // changed meanwhile: the next turn applies it
			}
			// A new dataplane: the switch is what it holds now, not what
			// this node decided while it last led. The old one gives back
			// its share of the counters and hosts.
			snap := s.c.snap.Load()
			s.retire(old, snap)
			s.c.ledger(s.dpid).Begin(r.generation)
			s.dp = dataplane.New(s.c.dataplaneConfig(s.dpid, s.log, s.features))
			s.dp.Adopt(s.c.now(), snap, have, out)
			s.master.Store(true)
		})
		if s.flush() != nil {
			return
		}
		s.log.Info("switch taken over as MASTER", "generation", r.generation,
			"flows", len(have.Flows), "groups", len(have.Groups))
	}
}

// readState asks the switch for sdnlb's flows and its groups.
func (s *switchConn) readState() (dataplane.SwitchState, error) {
	var have dataplane.SwitchState
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
	r, err := wait(ofp.MultipartRequest{Body: dataplane.StatsRequest()})
	if err != nil {
		return have, fmt.Errorf("flows: %w", err)
	}
	have.Flows, have.Unreadable = r.flows.Stats, r.flows.Unreadable
	if s.features.Groups {
		if r, err = wait(ofp.MultipartRequest{Body: ofp.GroupDescRequest{}}); err != nil {
			return have, fmt.Errorf("groups: %w", err)
		}
		have.Groups = append(r.groups.Groups, r.groups.Unreadable...) // the latter without buckets
	}
	return have, nil
}
