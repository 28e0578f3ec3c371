package main

import (
	"errors"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// dialect is the part of a fake switch that depends on the OpenFlow
// version it speaks: the wire format, and the few answers a switch of
// that version gives differently. The setups, the table model, the
// warm-up and the accounting are the same for every version; messages
// are built and read in the ofp package's 1.3 model.
type dialect interface {
	// name is the version as -openflow and the report write it.
	name() string
	// version is the ofp_header version.
	version() uint8
	// appendMsg encodes m, or fails for a message the version cannot carry.
	appendMsg(b []byte, xid uint32, m ofp.Message) ([]byte, error)
	// decode decodes one whole message.
	decode(msg []byte) (ofp.Message, error)
	// msgType is the 1.3 type of header type t; typeUnknown when the
	// version has no such message or 1.3 no counterpart.
	msgType(t uint8) ofp.Type
	// flowModCommand reads a flow-mod's command without decoding it.
	flowModCommand(msg []byte) (ofp.FlowModCommand, error)
	// parsePacketOut reads a packet-out's rewrite and frame by hand (see
	// rewrite). The rewrite is returned, not written through a pointer:
	// a pointer passed to an interface method escapes, and the setup
	// path allocates nothing.
	parsePacketOut(msg []byte) (rewrite, []byte, error)
	// puntedBy is the reason and cookie of the packet-in for a frame the
	// flow f sends to the controller, or that no flow takes (f nil).
	puntedBy(f *oftable.Flow) (reason uint8, cookie uint64)
	// featuresReply completes fr with what the version puts in it.
	featuresReply(fr ofp.FeaturesReply, ports []ofp.Port) ofp.Message
	// flowStats answers a flow stats request from the switch's table.
	flowStats(req ofp.FlowStatsRequest, t *oftable.Table) ([]ofp.FlowStats, error)
}

// typeUnknown is msgType's answer for a message the fake switch rejects
// with OFPBRC_BAD_TYPE.
const typeUnknown ofp.Type = 0xff

// dialects are the versions -openflow takes, the default first.
var dialects = []dialect{dialect13{}, dialect10{}}

func dialectNamed(name string) (dialect, bool) {
	for _, d := range dialects {
		if d.name() == name {
			return d, true
		}
	}
	return nil, false
}

var errShortFlowMod = errors.New("short flow-mod")

// dialect13 is OpenFlow 1.3, the version sdnlb's controller prefers.
type dialect13 struct{}

// noFlowCookie is the 1.3 packet-in cookie when no flow matched (-1).
const noFlowCookie = ^uint64(0)

func (dialect13) name() string   { return "1.3" }
func (dialect13) version() uint8 { return ofp.Version }

func (dialect13) appendMsg(b []byte, xid uint32, m ofp.Message) ([]byte, error) {
	return ofp.AppendChecked(b, xid, m)
}

func (dialect13) decode(msg []byte) (ofp.Message, error) {
	_, m, err := ofp.Decode(msg)
	return m, err
}

func (dialect13) msgType(t uint8) ofp.Type { return ofp.Type(t) }

func (dialect13) flowModCommand(msg []byte) (ofp.FlowModCommand, error) {
	const off = ofp.HeaderLen + 17 // after cookie, cookie_mask and table_id
	if len(msg) <= off {
		return 0, errShortFlowMod
	}
	return ofp.FlowModCommand(msg[off]), nil
}

func (dialect13) parsePacketOut(msg []byte) (rewrite, []byte, error) {
	var rw rewrite
	frame, err := parsePacketOut(msg, &rw)
	return rw, frame, err
}

// puntedBy gives OFPR_NO_MATCH for the table-miss flow as for no flow,
// and the flow's cookie, or -1 without one.
func (dialect13) puntedBy(f *oftable.Flow) (uint8, uint64) {
	switch {
	case f == nil:
		return ofp.ReasonNoMatch, noFlowCookie
	case f.Priority == 0 && len(f.Match.OXMs) == 0:
		return ofp.ReasonNoMatch, f.Cookie
	default:
		return ofp.ReasonAction, f.Cookie
	}
}

// featuresReply is fr alone: 1.3 lists the ports in a port-desc reply.
func (dialect13) featuresReply(fr ofp.FeaturesReply, _ []ofp.Port) ofp.Message { return &fr }

// flowStats is empty: the connection flows carry no traffic here, and a
// 1.3 controller selects flows by cookie in its flow-mods, not by
// looking at them.
func (dialect13) flowStats(ofp.FlowStatsRequest, *oftable.Table) ([]ofp.FlowStats, error) {
	return nil, nil
}
