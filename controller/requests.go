package controller

import (
	"sync"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// portTable is what a switch told of its ports: the port description at
// the handshake, port-status messages after. The reader writes it, API
// listings read it.
type portTable struct {
	mu    sync.Mutex
	ports map[uint32]ofp.Port
}

func (t *portTable) set(ports ...ofp.Port) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ports == nil {
		t.ports = make(map[uint32]ofp.Port, len(ports))
	}
	for _, p := range ports {
		t.ports[p.PortNo] = p
	}
}

func (t *portTable) delete(no uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.ports, no)
}

// name returns the switch's name for a port, "" when it did not say.
func (t *portTable) name(no uint32) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ports[no].Name
}

// speed returns a port's current speed in bits per second, 0 when the
// switch does not say.
func (t *portTable) speed(no uint32) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return uint64(t.ports[no].CurrSpeed) * 1000 // kb/s
}

// linkable reports whether a link may end at port no: the switch
// reported it, and it is a physical port, which LLDP is sent out of.
func (t *portTable) linkable(no uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.ports[no]
	return ok && no <= ofp.PortMax
}

// all returns the ports in no order.
func (t *portTable) all() []ofp.Port {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ofp.Port, 0, len(t.ports))
	for _, p := range t.ports {
		out = append(out, p)
	}
	return out
}

// flowsRequest is a request for the switch's flows or groups that someone
// waits for: the reply's parts gather here until the last one.
type flowsRequest struct {
	// The entries of every part.
	flows  ofp.FlowStatsReply
	groups ofp.GroupDescReply
	done   chan error // buffered 1
}

// pendingRequests are the requests of a connection that wait for their
// replies, by xid. Callers add and forget them; the reader adds the parts
// of their replies and finishes them.
type pendingRequests struct {
	mu sync.Mutex
	m  map[uint32]*flowsRequest
}

// add returns the request that the reply to xid completes.
func (p *pendingRequests) add(xid uint32) *flowsRequest {
	r := &flowsRequest{done: make(chan error, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[uint32]*flowsRequest{}
	}
	p.m[xid] = r
	return r
}

// gather adds a part of the reply to xid, of flows or of groups, to its
// request, if it waits.
func (p *pendingRequests) gather(xid uint32, part ofp.MultipartReplyBody) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.m[xid]
	if r == nil {
		return
	}
	switch part := part.(type) {
	case ofp.FlowStatsReply:
		r.flows.Stats = append(r.flows.Stats, part.Stats...)
		r.flows.Unreadable = append(r.flows.Unreadable, part.Unreadable...)
	case ofp.GroupDescReply:
		r.groups.Groups = append(r.groups.Groups, part.Groups...)
		r.groups.Unreadable = append(r.groups.Unreadable, part.Unreadable...)
	}
}

// forget drops a request that no one waits for anymore.
func (p *pendingRequests) forget(xid uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, xid)
}

// finish completes the request xid, if it waits, with err.
func (p *pendingRequests) finish(xid uint32, err error) {
	p.mu.Lock()
	r := p.m[xid]
	delete(p.m, xid)
	p.mu.Unlock()
	if r != nil {
		r.done <- err
	}
}

// failAll ends every request with err.
func (p *pendingRequests) failAll(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for xid, r := range p.m {
		delete(p.m, xid)
		r.done <- err
	}
}
