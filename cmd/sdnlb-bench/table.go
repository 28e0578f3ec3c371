package main

import (
	"errors"
	"fmt"
	"net/netip"
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
// that into the packet-in's reason and cookie. Of several flows on the
// frame's way that send it to the controller (a copy, then a table's
// miss), the first gives the packet-in: a real switch sends one for each,
// and the first is the one the controller acts on. Flows that take the
// frame and none of which outputs to CONTROLLER shadow any lower one that
// would: the error wraps errNotPunted and names the last. The frame goes
// up as it arrived: no flow the bench meets rewrites a packet before
// punting it.
func punt(t *oftable.Table, port uint32, frame []byte) (*oftable.Flow, error) {
	p, err := oftable.ParseFrame(port, frame)
	if err != nil {
		return nil, err
	}
	r := t.Process(p)
	if r.Flow == nil {
		return nil, nil
	}
	for i := range r.Path {
		if sendsToController(&r.Path[i], p) {
			return &r.Path[i], nil
		}
	}
	return nil, fmt.Errorf("%v: %w: %q takes it", p, errNotPunted, r.Flow.String())
}

// sendsToController reports whether f's apply-actions output p to the
// controller.
func sendsToController(f *oftable.Flow, p oftable.Packet) bool {
	for _, in := range f.Instructions {
		var actions []ofp.Action
		switch in := in.(type) {
		case ofp.InstructionApplyActions:
			actions = in.Actions
		case *ofp.InstructionApplyActions:
			actions = in.Actions
		}
		if _, ports := oftable.ApplyActions(actions, p); slices.Contains(ports, ofp.PortController) {
			return true
		}
	}
	return false
}

// answer runs frame, arriving on port, through the switch's flow table and
// returns the ARP reply or neighbour advertisement the flows send back out
// of that port: the answer of a switch that answers for a VIP itself, as
// the asking host receives it.
func answer(t *oftable.Table, port uint32, frame []byte) (neighbour, bool) {
	p, err := oftable.ParseFrame(port, frame)
	if err != nil {
		return neighbour{}, false
	}
	r := t.Process(p)
	if !slices.Contains(r.Ports, port) {
		return neighbour{}, false
	}
	switch o := r.Out; {
	case o.EthType == ofp.EthTypeARP && o.ARPOp == 2:
		return neighbour{about: netip.AddrFrom4(o.ARPSPA), mac: o.ARPSHA, peer: netip.AddrFrom4(o.ARPTPA)}, true
	case o.EthType == ofp.EthTypeIPv6 && o.IPProto == ofp.IPProtoICMPv6 && o.ICMPType == ndAdvertisement:
		return neighbour{about: netip.AddrFrom16(o.NDTarget), mac: o.NDTLL, peer: netip.AddrFrom16(o.IPv6Dst)}, true
	}
	return neighbour{}, false
}
