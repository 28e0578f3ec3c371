package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// noFlowCookie is the packet-in cookie when no flow matched (-1).
const noFlowCookie = ^uint64(0)

// errNotPunted is punt's error for a frame the table does not send to
// the controller: a real switch would send no packet-in for it.
var errNotPunted = errors.New("the switch's flows do not send it to the controller")

// punt runs frame, arriving on port, through the switch's flow table and
// returns the reason and cookie of the packet-in a switch would send: the
// flow that takes it outputs to CONTROLLER (OFPR_ACTION with its cookie,
// or OFPR_NO_MATCH for the table-miss flow), or no flow takes it
// (OFPR_NO_MATCH, cookie -1: the fake switch punts what misses, so a
// controller that installs no table-miss flow still sees its packets).
// A flow that takes the frame and does not output to CONTROLLER shadows
// any lower one that would: the error wraps errNotPunted and names it.
// The frame goes up as it arrived: no flow the bench meets rewrites a
// packet before punting it.
func punt(t *oftable.Table, port uint32, frame []byte) (reason uint8, cookie uint64, err error) {
	p, err := oftable.ParseFrame(port, frame)
	if err != nil {
		return 0, 0, err
	}
	r := t.Process(p)
	switch f := r.Flow; {
	case f == nil:
		return ofp.ReasonNoMatch, noFlowCookie, nil
	case !slices.Contains(r.Ports, ofp.PortController):
		return 0, 0, fmt.Errorf("%v: %w: %q takes it", p, errNotPunted, f.String())
	case f.Priority == 0 && len(f.Match.OXMs) == 0: // the table-miss flow
		return ofp.ReasonNoMatch, f.Cookie, nil
	default:
		return ofp.ReasonAction, f.Cookie, nil
	}
}

// answer runs frame, arriving on port, through the switch's flow table and
// returns the ARP packet the flows send back out of that port: the reply
// of a switch that answers ARP for a VIP itself, as the asking host
// receives it.
func answer(t *oftable.Table, port uint32, frame []byte) (arpInfo, bool) {
	p, err := oftable.ParseFrame(port, frame)
	if err != nil {
		return arpInfo{}, false
	}
	r := t.Process(p)
	if o := r.Out; slices.Contains(r.Ports, port) && o.EthType == 0x0806 {
		return arpInfo{op: o.ARPOp, sha: o.ARPSHA, spa: ipU32(o.ARPSPA), tha: o.ARPTHA, tpa: ipU32(o.ARPTPA)}, true
	}
	return arpInfo{}, false
}
