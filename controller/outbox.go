package controller

import (
	"sync/atomic"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// outbox collects, encoded and in order, the messages a switch's dataplane
// decides to send. The switch connection writes it out after each message
// it handles; tests decode it instead. Its storage is reused, so a steady
// stream of packet-ins allocates nothing.
type outbox struct {
	xids    *atomic.Uint32 // shared with the connection, so every message has its own xid
	wire    wire           // the switch's OpenFlow version; 1.3 until its connection says
	buf     []byte
	metrics *metrics // counts flow-mods and group-mods; nil: none
	// unsent is the last message's error that the version could not
	// express, for the connection to log.
	unsent error
}

func newOutbox(xids *atomic.Uint32, m *metrics) *outbox {
	return &outbox{xids: xids, wire: wire13{}, buf: make([]byte, 0, 4096), metrics: m}
}

// send appends m with a fresh xid.
func (o *outbox) send(m ofp.Message) {
	o.append(o.xids.Add(1), m)
	if o.metrics == nil {
		return
	}
	switch m.(type) {
	case *ofp.FlowMod:
		o.metrics.flowMods.Inc()
	case *ofp.GroupMod:
		o.metrics.groupMods.Inc()
	}
}

// request appends m and returns its xid, which its reply carries.
func (o *outbox) request(m ofp.Message) uint32 {
	xid := o.xids.Add(1)
	o.append(xid, m)
	return xid
}

// reply appends m with the xid of the request it answers.
func (o *outbox) reply(xid uint32, m ofp.Message) { o.append(xid, m) }

func (o *outbox) append(xid uint32, m ofp.Message) {
	var err error
	if o.buf, err = o.wire.append(o.buf, xid, m); err != nil {
		o.unsent = err
	}
}

func (o *outbox) empty() bool { return len(o.buf) == 0 }

func (o *outbox) reset() { o.buf = o.buf[:0] }
