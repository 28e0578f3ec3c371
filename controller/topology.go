package controller

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// portRef is one port of one switch.
type portRef struct {
	dpid uint64
	port uint32
}

func comparePortRef(a, b portRef) int {
	return cmp.Or(cmp.Compare(a.dpid, b.dpid), cmp.Compare(a.port, b.port))
}

// link is one direction of a link between two switches: the LLDP frame
// that src sent arrived at dst.
type link struct {
	src, dst portRef
}

// linkState is a discovered link as the topology reports it; both says
// its reverse direction was discovered too.
type linkState struct {
	link
	both bool
}

// topology is the links between the switches, as LLDP discovers them. It
// spans switches, so it is the Controller's, fed by every connection's
// reader; it has its own lock and does no I/O.
type topology struct {
	mu   sync.Mutex
	seen map[link]time.Time // each direction: when its frame last came back
}

func newTopology() *topology { return &topology{seen: map[link]time.Time{}} }

// discovered records that the frame src sent arrived at dst now.
func (t *topology) discovered(now time.Time, src, dst portRef) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen[link{src, dst}] = now
}

// expire forgets the links no frame came back on within linkTimeout.
func (t *topology) expire(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for l, at := range t.seen {
		if now.Sub(at) > linkTimeout {
			delete(t.seen, l)
		}
	}
}

// portDown forgets, at once, the links of a port that went down or away,
// in both directions.
func (t *topology) portDown(p portRef) {
	t.forget(func(l link) bool { return l.src == p || l.dst == p })
}

// switchGone forgets the links of a switch that disconnected.
func (t *topology) switchGone(dpid uint64) {
	t.forget(func(l link) bool { return l.src.dpid == dpid || l.dst.dpid == dpid })
}

func (t *topology) forget(match func(link) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for l := range t.seen {
		if match(l) {
			delete(t.seen, l)
		}
	}
}

// links returns every direction seen within linkTimeout of now, paired
// with its reverse, ordered by source and then destination. expire only
// frees the memory: a link is gone at its timeout, not at the next round.
func (t *topology) links(now time.Time) []linkState {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := func(l link) bool { at, ok := t.seen[l]; return ok && now.Sub(at) <= linkTimeout }
	out := make([]linkState, 0, len(t.seen))
	for l := range t.seen {
		if live(l) {
			out = append(out, linkState{link: l, both: live(link{l.dst, l.src})})
		}
	}
	slices.SortFunc(out, func(a, b linkState) int {
		return cmp.Or(comparePortRef(a.src, b.src), comparePortRef(a.dst, b.dst))
	})
	return out
}

// Topology returns the connected switches, the links between them and the
// hosts on their other ports. Each switch's learner is asked through
// decide, as FindHost asks it.
func (c *Controller) Topology(ctx context.Context) (*sdnlb.Topology, error) {
	now := c.now()
	links := c.topo.links(now)
	linked := make(map[portRef]bool, 2*len(links))
	top := &sdnlb.Topology{Switches: []*sdnlb.TopologySwitch{}, Links: make([]*sdnlb.Link, 0, len(links)), Hosts: []*sdnlb.Host{}}
	for _, l := range links {
		linked[l.src], linked[l.dst] = true, true
		top.Links = append(top.Links, &sdnlb.Link{
			Src:           sdnlb.LinkEnd{DPID: formatDPID(l.src.dpid), Port: l.src.port},
			Dst:           sdnlb.LinkEnd{DPID: formatDPID(l.dst.dpid), Port: l.dst.port},
			Bidirectional: l.both,
		})
	}
	for _, s := range c.switchConns() {
		top.Switches = append(top.Switches, &sdnlb.TopologySwitch{DPID: formatDPID(s.dpid), Ports: switchPorts(s.ports.all())})
		s.decide(func(dp *dataplane, _ *outbox) {
			dp.learner.seenHosts(now, func(ip uint32, e hostEntry) {
				if e.port == 0 || linked[portRef{dpid: s.dpid, port: e.port}] {
					return
				}
				top.Hosts = append(top.Hosts, &sdnlb.Host{Address: ipString(uintIP(ip)), MAC: macString(e.mac), DPID: formatDPID(s.dpid),
					Port: ofp.FormatPort(e.port), PortName: s.ports.name(e.port), LastSeen: time.Unix(0, e.seen)})
			})
		})
	}
	slices.SortFunc(top.Switches, func(a, b *sdnlb.TopologySwitch) int { return cmp.Compare(a.DPID, b.DPID) })
	slices.SortFunc(top.Hosts, func(a, b *sdnlb.Host) int {
		return cmp.Or(cmp.Compare(a.DPID, b.DPID), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
	})
	return top, nil
}
