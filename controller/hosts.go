package controller

import (
	"context"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// FindHost returns the host at address that a switch showed the
// controller within sdnlb.HostTTL, as the switch that saw it last learned
// it, whether or not that switch is still connected. Each connected
// switch's learner is asked through decide, so the answer waits for at
// most the decision under way.
func (c *Controller) FindHost(ctx context.Context, address string) (*sdnlb.Host, error) {
	a, err := netip.ParseAddr(address)
	if err != nil || a.Zone() != "" {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no switch learned a host at %q", address)
	}
	ip, now := a, c.now()
	found := c.book.find(now, ip)
	for _, s := range c.switchConns() {
		var e dataplane.HostEntry
		var seen bool
		s.decide(func(dp *dataplane.Switch, _ *dataplane.Outbox) { e, seen = dp.Learner.SeenHost(now, ip) })
		if !seen || found != nil && !time.Unix(0, e.Seen).After(found.LastSeen) {
			continue
		}
		found = learnedHost(s.dpid, ip, e, s.ports.name(e.Port))
	}
	if found == nil {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no switch learned a host at %s", a)
	}
	return found, nil
}

func learnedHost(dpid uint64, ip netip.Addr, e dataplane.HostEntry, portName string) *sdnlb.Host {
	return &sdnlb.Host{Address: ip.String(), MAC: model.MACString(e.MAC), DPID: model.FormatDPID(dpid),
		Port: ofp.FormatPort(e.Port), PortName: portName, LastSeen: time.Unix(0, e.Seen)}
}

// retire ends the decisions of dp, the switch's dataplane until now (it
// disconnected, or a promotion replaces it): it gives back its share of
// the counters and of the host caps, and the book keeps its hosts for
// the rest of sdnlb.HostTTL. Run it within decide.
func (s *switchConn) retire(dp *dataplane.Switch, snap *model.Snapshot) {
	dp.Settle(snap)
	s.c.book.keep(s.c.now(), s.dpid, &dp.Learner, s.ports.name)
	dp.Learner.Release()
}

// hostBook remembers the hosts of the dataplanes that ended, for what
// remains of sdnlb.HostTTL after each one's last packet: a learned host
// holds its address that long whether or not its switch stays
// connected. It holds at most max hosts (the total host cap); past that,
// the hosts seen longest ago go first.
type hostBook struct {
	mu    sync.Mutex
	max   int
	hosts map[bookKey]*sdnlb.Host
}

type bookKey struct {
	dpid uint64
	ip   netip.Addr
}

func newHostBook(max int) *hostBook { return &hostBook{max: max, hosts: map[bookKey]*sdnlb.Host{}} }

// keep records the hosts l saw within sdnlb.HostTTL on switch dpid,
// whose ports name gives names.
func (b *hostBook) keep(now time.Time, dpid uint64, l *dataplane.L2Learner, name func(port uint32) string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l.SeenHosts(now, func(ip netip.Addr, e dataplane.HostEntry) {
		b.hosts[bookKey{dpid, ip}] = learnedHost(dpid, ip, e, name(e.Port))
	})
	b.expire(now)
	if over := len(b.hosts) - b.max; over > 0 {
		keys := slices.SortedFunc(maps.Keys(b.hosts), func(x, y bookKey) int { return b.hosts[x].LastSeen.Compare(b.hosts[y].LastSeen) })
		for _, k := range keys[:over] {
			delete(b.hosts, k)
		}
	}
}

// expire forgets the hosts not seen within sdnlb.HostTTL of now.
func (b *hostBook) expire(now time.Time) {
	for k, h := range b.hosts {
		if now.Sub(h.LastSeen) > sdnlb.HostTTL {
			delete(b.hosts, k)
		}
	}
}

// find returns the host at ip seen last within sdnlb.HostTTL of now, nil
// when none is.
func (b *hostBook) find(now time.Time, ip netip.Addr) *sdnlb.Host {
	b.mu.Lock()
	defer b.mu.Unlock()
	var found *sdnlb.Host
	for k, h := range b.hosts {
		if k.ip == ip && now.Sub(h.LastSeen) <= sdnlb.HostTTL && (found == nil || h.LastSeen.After(found.LastSeen)) {
			found = h
		}
	}
	if found == nil {
		return nil
	}
	h := *found
	return &h
}

// onSwitch calls f with a copy of each host of switch dpid seen within
// sdnlb.HostTTL of now.
func (b *hostBook) onSwitch(now time.Time, dpid uint64, f func(ip netip.Addr, h sdnlb.Host)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, h := range b.hosts {
		if k.dpid == dpid && now.Sub(h.LastSeen) <= sdnlb.HostTTL {
			f(k.ip, *h)
		}
	}
}
