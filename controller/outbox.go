package controller

import (
	"net/netip"
	"sync/atomic"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// outbox collects, encoded and in order, the messages a switch's dataplane
// decides to send. The switch connection writes it out after each message
// it handles; tests decode it instead. Its storage is reused, so a steady
// stream of packet-ins allocates nothing.
type outbox struct {
	xids    *atomic.Uint32 // shared with the connection, so every message has its own xid
	enc     encoder        // the switch's OpenFlow version; 1.3 until its connection says
	buf     []byte
	metrics *metrics // counts flow-mods and group-mods; nil: none
	// unsent is the last message's error that the version could not
	// express, for the connection to log.
	unsent error
	// hosts and transit are what the decision tells the fabric, which
	// spans switches (L2Fabric): the runtime hands them on once the
	// decision returns, so a decision writes no state but its switch's.
	hosts   []hostSighting
	transit []transitRow
}

// hostSighting is a host seen on one of the switch's ports: settled if a
// host's port, seed if only the switch's flows name it there (adoption).
type hostSighting struct {
	mac     [6]byte
	ip      netip.Addr // the zero Addr: not known
	at      portRef
	settled bool
	seed    bool
}

// transitRow is a row another switch must hold for a connection this
// switch set up (passReplies).
type transitRow struct {
	dpid uint64
	fm   ofp.FlowMod
}

// encoder encodes messages in one OpenFlow version. A message the version
// cannot express is the caller's mistake: b comes back as it was, with the
// error.
type encoder interface {
	Append(b []byte, xid uint32, m ofp.Message) ([]byte, error)
}

// of13 encodes OpenFlow 1.3, the version the decision speaks.
type of13 struct{}

func (of13) Append(b []byte, xid uint32, m ofp.Message) ([]byte, error) {
	return ofp.AppendChecked(b, xid, m)
}

// fabricPaths is what a switch's decision reads of the fabric, which
// spans switches and which the runtime keeps.
type fabricPaths interface {
	// Home returns where a host attaches.
	Home(mac [6]byte) (portRef, bool)
	// Between returns the switches a frame passes from one switch to
	// another, the first included.
	Between(from, to uint64) []uint64
}

func newOutbox(xids *atomic.Uint32, m *metrics) *outbox {
	return &outbox{xids: xids, enc: of13{}, buf: make([]byte, 0, 4096), metrics: m}
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
	if o.buf, err = o.enc.Append(o.buf, xid, m); err != nil {
		o.unsent = err
	}
}

func (o *outbox) empty() bool { return len(o.buf) == 0 }

func (o *outbox) reset() { o.buf, o.hosts, o.transit = o.buf[:0], o.hosts[:0], o.transit[:0] }
