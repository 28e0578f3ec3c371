package controller

import (
	"cmp"
	"context"
	"net"
	"slices"
	"strconv"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Switches lists the connected switches, by datapath id.
func (c *Controller) Switches(ctx context.Context) ([]*sdnlb.Switch, error) {
	conns := c.switchConns()
	out := make([]*sdnlb.Switch, 0, len(conns))
	for _, s := range conns {
		out = append(out, &sdnlb.Switch{DPID: model.FormatDPID(s.dpid), Address: s.remote, ConnectedAt: s.connectedAt,
			OpenFlow: versionName(s.wire.version()), Ports: switchPorts(s.ports.all()), SelectGroups: s.features.Groups, Master: c.masterNode(s.dpid)})
	}
	slices.SortFunc(out, func(a, b *sdnlb.Switch) int { return cmp.Compare(a.DPID, b.DPID) })
	return out, nil
}

// SwitchIDs lists the datapath ids of the connected switches, as
// Switches writes them, in no order.
func (c *Controller) SwitchIDs() []string {
	conns := c.switchConns()
	out := make([]string, len(conns))
	for i, s := range conns {
		out[i] = model.FormatDPID(s.dpid)
	}
	return out
}

// SwitchFlows asks a switch for the flows sdnlb installed on it.
func (c *Controller) SwitchFlows(ctx context.Context, dpid string) ([]*sdnlb.Flow, error) {
	id, ok := parseDPID(dpid)
	var s *switchConn
	if ok {
		s = c.switchConn(id)
	}
	if s == nil {
		return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "no switch with dpid %s is connected", dpid)
	}
	xid, r, err := s.request(ofp.MultipartRequest{Body: ofp.FlowStatsRequest{
		TableID: ofp.TableAll, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny,
		Cookie: model.AppID << model.CookieAppShift, CookieMask: model.MaskApp,
	}})
	defer s.pending.forget(xid)
	if err != nil {
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
	flows := make([]*sdnlb.Flow, 0, len(r.flows.Stats))
	for i := range r.flows.Stats {
		st := &r.flows.Stats[i]
		flows = append(flows, &sdnlb.Flow{
			Cookie:          "0x" + strconv.FormatUint(st.Cookie, 16),
			TableID:         int(st.TableID),
			Table:           model.TableName(st.TableID),
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

// parseDPID reads model.FormatDPID's form, or plain hex, as a datapath id.
func parseDPID(s string) (uint64, bool) {
	var v uint64
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		var d byte
		switch {
		case c == ':':
			continue
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		digits++
		if digits > 16 {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, digits > 0
}

// switchPorts lists ports as the API shows them, by number.
func switchPorts(ports []ofp.Port) []sdnlb.SwitchPort {
	out := make([]sdnlb.SwitchPort, 0, len(ports))
	for _, p := range ports {
		out = append(out, sdnlb.SwitchPort{No: p.PortNo, Name: p.Name, MAC: net.HardwareAddr(p.HWAddr[:]).String(), Up: portUp(p)})
	}
	slices.SortFunc(out, func(a, b sdnlb.SwitchPort) int { return cmp.Compare(a.No, b.No) })
	return out
}

// portUp reports whether a port can carry packets: neither the switch's
// configuration nor its link holds it down.
func portUp(p ofp.Port) bool {
	return p.Config&ofp.PortConfigDown == 0 && p.State&ofp.PortStateLinkDown == 0
}
