package dataplane

import (
	"fmt"
	"net/netip"
	"sync/atomic"

	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Outbox collects, encoded and in order, the messages a switch's dataplane
// decides to send. The switch connection writes it out after each message
// it handles; tests decode it instead. Its storage is reused, so a steady
// stream of packet-ins allocates nothing.
type Outbox struct {
	xids    *atomic.Uint32 // shared with the connection, so every message has its own xid
	Enc     Encoder        // the switch's OpenFlow version; 1.3 until its connection says
	Buf     []byte
	metrics *Metrics // counts flow-mods and group-mods; nil: none
	// Unsent is why the last message that was not sent was not: the
	// version could not express it, or it breaks the pipeline. For the
	// connection to log.
	Unsent error
	// Hosts and Transit are what the decision tells the fabric, which
	// spans switches (L2Fabric): the runtime hands them on once the
	// decision returns, so a decision writes no state but its switch's.
	Hosts   []HostSighting
	Transit []TransitRow
}

// HostSighting is a host seen on one of the switch's ports: settled if a
// host's port, seed if only the switch's flows name it there (adoption).
type HostSighting struct {
	MAC     [6]byte
	IP      netip.Addr // the zero Addr: not known
	At      model.PortRef
	Settled bool
	Seed    bool
}

// TransitRow is a row another switch must hold for a connection this
// switch set up (passReplies).
type TransitRow struct {
	DPID uint64
	FM   ofp.FlowMod
}

// Encoder encodes messages in one OpenFlow version. A message the version
// cannot express is the caller's mistake: b comes back as it was, with the
// error.
type Encoder interface {
	Append(b []byte, xid uint32, m ofp.Message) ([]byte, error)
}

// of13 encodes OpenFlow 1.3, the version the decision speaks.
type of13 struct{}

func (of13) Append(b []byte, xid uint32, m ofp.Message) ([]byte, error) {
	return ofp.AppendChecked(b, xid, m)
}

// FabricPaths is what a switch's decision reads of the fabric, which
// spans switches and which the runtime keeps.
type FabricPaths interface {
	// Home returns where a host attaches.
	Home(mac [6]byte) (model.PortRef, bool)
	// Between returns the switches a frame passes from one switch to
	// another, the first included.
	Between(from, to uint64) []uint64
}

func NewOutbox(xids *atomic.Uint32, m *Metrics) *Outbox {
	return &Outbox{xids: xids, Enc: of13{}, Buf: make([]byte, 0, 4096), metrics: m}
}

// Send appends m with a fresh xid.
func (o *Outbox) Send(m ofp.Message) {
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
func (o *Outbox) request(m ofp.Message) uint32 {
	xid := o.xids.Add(1)
	o.append(xid, m)
	return xid
}

// Reply appends m with the xid of the request it answers.
func (o *Outbox) Reply(xid uint32, m ofp.Message) { o.append(xid, m) }

// append encodes m, unless it is a flow-mod or group-mod that breaks the
// pipeline's table descriptors: every row the decision builds is checked
// here, on its way out, as the tests check it.
func (o *Outbox) append(xid uint32, m ofp.Message) {
	if err := fitsPipeline(m); err != nil {
		o.Unsent = err
		return
	}
	var err error
	if o.Buf, err = o.Enc.Append(o.Buf, xid, m); err != nil {
		o.Unsent = err
	}
}

func fitsPipeline(m ofp.Message) error {
	var err error
	switch m := m.(type) {
	case *ofp.FlowMod:
		err = model.CheckFlow(m)
	case *ofp.GroupMod:
		err = model.CheckGroup(m)
	}
	if err != nil {
		return fmt.Errorf("%s breaks the pipeline: %w", m.Type(), err)
	}
	return nil
}

func (o *Outbox) Empty() bool { return len(o.Buf) == 0 }

func (o *Outbox) Reset() { o.Buf, o.Hosts, o.Transit = o.Buf[:0], o.Hosts[:0], o.Transit[:0] }
