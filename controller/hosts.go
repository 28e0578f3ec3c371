package controller

import (
	"context"
	"net/netip"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// FindHost returns the host at address that a switch showed the
// controller within sdnlb.HostTTL, as the switch that saw it last learned
// it. Each switch's learner is asked through decide, so the answer waits
// for at most the decision under way.
func (c *Controller) FindHost(ctx context.Context, address string) (*sdnlb.Host, error) {
	a, err := netip.ParseAddr(address)
	if err != nil || a.Zone() != "" {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no switch learned a host at %q", address)
	}
	ip, now := a, c.now()
	var found *sdnlb.Host
	for _, s := range c.switchConns() {
		var e dataplane.HostEntry
		var seen bool
		s.decide(func(dp *dataplane.Switch, _ *dataplane.Outbox) { e, seen = dp.Learner.SeenHost(now, ip) })
		if !seen || found != nil && !time.Unix(0, e.Seen).After(found.LastSeen) {
			continue
		}
		found = &sdnlb.Host{Address: a.String(), MAC: model.MACString(e.MAC), DPID: model.FormatDPID(s.dpid),
			Port: ofp.FormatPort(e.Port), PortName: s.ports.name(e.Port), LastSeen: time.Unix(0, e.Seen)}
	}
	if found == nil {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no switch learned a host at %s", a)
	}
	return found, nil
}
