package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// errNotPunted is punt's error for a frame the table does not send to
// the controller: a real switch would send no packet-in for it.
var errNotPunted = errors.New("the switch's flows do not send it to the controller")

// punt runs frame, arriving on port, through the switch's flow table and
// returns the flow that sends it to the controller, or nil when no flow
// takes it: the fake switch punts what misses, so a controller that
// installs no table-miss flow still sees its packets. The dialect turns
// that into the packet-in's reason and cookie. A flow that takes the
// frame and does not output to CONTROLLER shadows any lower one that
// would: the error wraps errNotPunted and names it. The frame goes up as
// it arrived: no flow the bench meets rewrites a packet before punting it.
func punt(t *oftable.Table, port uint32, frame []byte) (*oftable.Flow, error) {
	p, err := oftable.ParseFrame(port, frame)
	if err != nil {
		return nil, err
	}
	r := t.Process(p)
	if f := r.Flow; f != nil && !slices.Contains(r.Ports, ofp.PortController) {
		return nil, fmt.Errorf("%v: %w: %q takes it", p, errNotPunted, f.String())
	}
	return r.Flow, nil
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
