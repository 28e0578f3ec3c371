package controller

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// link is one direction of a link between two switches: the LLDP frame
// that src sent arrived at dst.
type link struct {
	src, dst model.PortRef
}

// linkState is a discovered link as the topology reports it; both says
// its reverse direction was discovered too.
type linkState struct {
	link
	both bool
}

// topology is the links between the switches, as LLDP discovers them,
// and what their ports send. It spans switches, so it is the
// Controller's, fed by every connection's reader; it has its own lock and
// does no I/O. changed, when set, is called (without the lock) when a
// link appears or goes.
//
// The links are capped, per switch they arrive at and in all: LLDP
// frames come from the data plane, where a host can forge them, and a
// switch that forges its own packet-ins can name any port.
type topology struct {
	mu       sync.Mutex
	seen     map[link]time.Time // each direction: when its frame last came back
	into     map[uint64]int     // links in seen by the switch they arrive at
	caps     linkCaps
	load     map[model.PortRef]portLoad
	toward   map[[2]uint64]portLoad // by switch and destination switch: what its path row sent (L2Fabric)
	capacity uint64                 // bits per second of a port that reports no speed
	changed  func()
}

// portLoad is what a port sent: its counter when last read, and the rate
// since the read before.
type portLoad struct {
	txBytes  uint64
	at       time.Time
	rate     uint64 // bits per second
	capacity uint64 // bits per second; 0: not reported
}

// linkCaps bounds the links the topology holds: those arriving at one
// switch, and all of them.
type linkCaps struct{ perSwitch, total int }

// capReached names the cap that refused a new link or host; "" is none.
type capReached string

const (
	capNone      capReached = ""
	capPerSwitch capReached = "switch"
	capTotal     capReached = "total"
)

func newTopology(capacity uint64, caps linkCaps) *topology {
	return &topology{seen: map[link]time.Time{}, into: map[uint64]int{}, caps: caps, load: map[model.PortRef]portLoad{},
		toward: map[[2]uint64]portLoad{}, capacity: capacity, changed: func() {}}
}

// discovered records that the frame src sent arrived at dst now, unless
// the link is new and a cap is reached, which it returns.
func (t *topology) discovered(now time.Time, src, dst model.PortRef) capReached {
	t.mu.Lock()
	l := link{src, dst}
	at, known := t.seen[l]
	if !known {
		switch {
		case t.into[dst.DPID] >= t.caps.perSwitch:
			t.mu.Unlock()
			return capPerSwitch
		case len(t.seen) >= t.caps.total:
			t.mu.Unlock()
			return capTotal
		}
		t.into[dst.DPID]++
	}
	t.seen[l] = now
	t.mu.Unlock()
	if !known || now.Sub(at) > linkTimeout {
		t.changed()
	}
	return capNone
}

// size returns how many links the topology holds, live or not yet
// expired.
func (t *topology) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seen)
}

// expire forgets the links no frame came back on within linkTimeout.
func (t *topology) expire(now time.Time) {
	t.forget(func(l link) bool {
		at, ok := t.seen[l]
		return ok && now.Sub(at) > linkTimeout
	})
}

// portCounters records what a switch's ports sent, read now; capacity
// gives a port's speed in bits per second (0: not reported).
func (t *topology) portCounters(now time.Time, dpid uint64, stats []ofp.PortStats, capacity func(port uint32) uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range stats {
		st := &stats[i]
		ref := model.PortRef{DPID: dpid, Port: st.PortNo}
		l := t.load[ref].next(now, st.TxBytes)
		l.capacity = capacity(st.PortNo)
		t.load[ref] = l
	}
}

// next is the load after a read of the counter, bytes, now.
func (l portLoad) next(now time.Time, bytes uint64) portLoad {
	n := portLoad{txBytes: bytes, at: now}
	if dt := now.Sub(l.at); !l.at.IsZero() && dt > 0 && bytes >= l.txBytes {
		n.rate = uint64(float64(bytes-l.txBytes) * 8 / dt.Seconds())
	}
	return n
}

// pathCounters records what switch dpid's path row toward switch dst had
// sent, in bytes, read now.
func (t *topology) pathCounters(now time.Time, dpid, dst, bytes uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := [2]uint64{dpid, dst}
	t.toward[k] = t.toward[k].next(now, bytes)
}

// loadWithout is the utilisation of link l by what does not go to switch
// dst: when l is the first hop of its source's path to dst, less what
// that path sends. A path weighed by it does not run from its own
// traffic.
func (t *topology) loadWithout(l link, dst uint64, carries bool) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	rate, capacity := t.rateLocked(l.src)
	if carries {
		rate -= min(rate, t.toward[[2]uint64{l.src.DPID, dst}].rate)
	}
	return utilisationOf(rate, capacity)
}

// rateLocked returns what port p sent per second, in bits, and its
// capacity.
func (t *topology) rateLocked(p model.PortRef) (rate, capacity uint64) {
	l := t.load[p]
	if l.capacity == 0 {
		return l.rate, t.capacity
	}
	return l.rate, l.capacity
}

func utilisationOf(rate, capacity uint64) float64 {
	if capacity == 0 {
		return 0
	}
	return min(float64(rate)/float64(capacity), 1)
}

// portDown forgets, at once, the links of a port that went down or away,
// in both directions.
func (t *topology) portDown(p model.PortRef) {
	t.forget(func(l link) bool { return l.src == p || l.dst == p })
}

// switchGone forgets the links of a switch that disconnected.
func (t *topology) switchGone(dpid uint64) {
	t.forget(func(l link) bool { return l.src.DPID == dpid || l.dst.DPID == dpid })
	t.mu.Lock()
	defer t.mu.Unlock()
	// Its counters go too: a switch that comes back starts its rates anew.
	for p := range t.load {
		if p.DPID == dpid {
			delete(t.load, p)
		}
	}
	for k := range t.toward {
		if k[0] == dpid {
			delete(t.toward, k)
		}
	}
}

func (t *topology) forget(match func(link) bool) {
	t.mu.Lock()
	n := len(t.seen)
	for l := range t.seen {
		if match(l) {
			delete(t.seen, l)
			if t.into[l.dst.DPID]--; t.into[l.dst.DPID] == 0 {
				delete(t.into, l.dst.DPID)
			}
		}
	}
	gone := len(t.seen) < n
	t.mu.Unlock()
	if gone {
		t.changed()
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
		return cmp.Or(model.ComparePortRef(a.src, b.src), model.ComparePortRef(a.dst, b.dst))
	})
	return out
}

// Topology returns the connected switches, the links between them and the
// hosts on their other ports. Each switch's learner is asked through
// decide, as FindHost asks it.
func (c *Controller) Topology(ctx context.Context) (*sdnlb.Topology, error) {
	now := c.now()
	links := c.topo.links(now)
	linked := make(map[model.PortRef]bool, 2*len(links))
	top := &sdnlb.Topology{Switches: []*sdnlb.TopologySwitch{}, Links: make([]*sdnlb.Link, 0, len(links)), Hosts: []*sdnlb.Host{},
		Paths: []*sdnlb.Path{}}
	c.topo.mu.Lock()
	for _, l := range links {
		linked[l.src], linked[l.dst] = true, true
		rate, capacity := c.topo.rateLocked(l.src)
		top.Links = append(top.Links, &sdnlb.Link{
			Src:           sdnlb.LinkEnd{DPID: model.FormatDPID(l.src.DPID), Port: l.src.Port},
			Dst:           sdnlb.LinkEnd{DPID: model.FormatDPID(l.dst.DPID), Port: l.dst.Port},
			Bidirectional: l.both,
			RateBPS:       rate,
			CapacityBPS:   capacity,
			Utilisation:   utilisationOf(rate, capacity),
		})
	}
	c.topo.mu.Unlock()
	for _, s := range c.switchConns() {
		top.Switches = append(top.Switches, &sdnlb.TopologySwitch{DPID: model.FormatDPID(s.dpid), Ports: switchPorts(s.ports.all())})
		live := map[netip.Addr]bool{}
		s.decide(func(dp *dataplane.Switch, _ *dataplane.Outbox) {
			dp.Learner.SeenHosts(now, func(ip netip.Addr, e dataplane.HostEntry) {
				if e.Port == 0 || linked[model.PortRef{DPID: s.dpid, Port: e.Port}] {
					return
				}
				live[ip] = true
				top.Hosts = append(top.Hosts, learnedHost(s.dpid, ip, e, s.ports.name(e.Port)))
			})
		})
		// The hosts its last connection learned, not seen again yet.
		c.book.onSwitch(now, s.dpid, func(ip netip.Addr, h sdnlb.Host) {
			if port, err := strconv.ParseUint(h.Port, 10, 32); !live[ip] && (err != nil || !linked[model.PortRef{DPID: s.dpid, Port: uint32(port)}]) {
				top.Hosts = append(top.Hosts, &h)
			}
		})
	}
	if c.fabric != nil {
		top.Paths = append(top.Paths, c.fabric.paths(links)...)
	}
	slices.SortFunc(top.Switches, func(a, b *sdnlb.TopologySwitch) int { return cmp.Compare(a.DPID, b.DPID) })
	slices.SortFunc(top.Hosts, func(a, b *sdnlb.Host) int {
		return cmp.Or(cmp.Compare(a.DPID, b.DPID), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Address, b.Address))
	})
	return top, nil
}
