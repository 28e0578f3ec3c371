package main

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// dialect10 is OpenFlow 1.0, through the controller/ofp10 codec: one flow
// table, the port list in the features reply, packet-ins without a
// cookie, and flows removed by cookie by dumping them and deleting each
// strictly, which is why its flow stats list the table's flows.
type dialect10 struct{}

func (dialect10) name() string   { return "1.0" }
func (dialect10) version() uint8 { return ofp10.Version }

func (dialect10) appendMsg(b []byte, xid uint32, m ofp.Message) ([]byte, error) {
	return ofp10.Append(b, xid, m)
}

func (dialect10) decode(msg []byte) (ofp.Message, error) {
	_, m, err := ofp10.Decode(msg)
	return m, err
}

// msgType maps the 1.0 types: HELLO to FLOW_MOD are numbered as in 1.3
// (VENDOR as EXPERIMENTER), the later ones moved.
func (dialect10) msgType(t uint8) ofp.Type {
	switch ofp10.Type(t) {
	case ofp10.TypePortMod:
		return ofp.TypePortMod
	case ofp10.TypeStatsRequest:
		return ofp.TypeMultipartRequest
	case ofp10.TypeStatsReply:
		return ofp.TypeMultipartReply
	case ofp10.TypeBarrierRequest:
		return ofp.TypeBarrierRequest
	case ofp10.TypeBarrierReply:
		return ofp.TypeBarrierReply
	}
	if ofp10.Type(t) <= ofp10.TypeFlowMod {
		return ofp.Type(t)
	}
	return typeUnknown
}

// flowModCommand reads the low byte of 1.0's 16-bit command, after the
// match and the cookie; every command fits in it.
func (dialect10) flowModCommand(msg []byte) (ofp.FlowModCommand, error) {
	const off = ofp.HeaderLen + match10Len + 8 + 1
	if len(msg) <= off {
		return 0, errShortFlowMod
	}
	return ofp.FlowModCommand(msg[off]), nil
}

func (dialect10) parsePacketOut(msg []byte) (rewrite, []byte, error) {
	var rw rewrite
	frame, err := parsePacketOut10(msg, &rw)
	return rw, frame, err
}

// puntedBy gives OFPR_ACTION for any flow that punts, the lowest one
// included: 1.0 has no table-miss flow, only flows, and misses. A 1.0
// packet-in has no cookie.
func (dialect10) puntedBy(f *oftable.Flow) (uint8, uint64) {
	if f == nil {
		return ofp.ReasonNoMatch, 0
	}
	return ofp.ReasonAction, 0
}

// actions10 is the ofp_action_type bitmap of the features reply: the
// actions the NAT path uses, which are those the hand parser reads.
const actions10 = 1<<action10Output | 1<<action10SetDLSrc | 1<<action10SetDLDst |
	1<<action10SetNwSrc | 1<<action10SetNwDst | 1<<action10SetTpSrc | 1<<action10SetTpDst

// featuresReply carries the port list, which 1.0 has no port-desc for.
func (dialect10) featuresReply(fr ofp.FeaturesReply, ports []ofp.Port) ofp.Message {
	return &ofp10.FeaturesReply{FeaturesReply: fr, Actions: actions10, Ports: ports}
}

// flowStats lists the table's flows: a 1.0 controller dumps them to
// remove those of a cookie. Past the warm-up the table stays as it was
// then (see fakeSwitch.table), and so do the dumps. Only an unfiltered
// request is answered: the table model does not select flows by match.
func (dialect10) flowStats(req ofp.FlowStatsRequest, t *oftable.Table) ([]ofp.FlowStats, error) {
	if len(req.Match.OXMs) > 0 || req.OutPort != ofp.PortAny {
		return nil, fmt.Errorf("flow stats request for %q out_port %d: the fake switch lists all flows only", req.Match.String(), req.OutPort)
	}
	if req.TableID != 0 && req.TableID != ofp.TableAll {
		return nil, nil // 1.0 has table 0 alone
	}
	flows := t.Flows()
	stats := make([]ofp.FlowStats, len(flows))
	for i, f := range flows {
		// 1.0 flow stats have no flags.
		stats[i] = ofp.FlowStats{
			Priority: f.Priority, IdleTimeout: f.IdleTimeout, HardTimeout: f.HardTimeout,
			Cookie: f.Cookie, Match: f.Match, Instructions: f.Instructions,
		}
	}
	return stats, nil
}

// match10Len is sizeof(struct ofp_match) in 1.0.
const match10Len = 40

// ofp_action_type values of 1.0 the hand parser reads: every set-field is
// an action of its own.
const (
	action10Output   = 0  // OFPAT_OUTPUT
	action10SetDLSrc = 4  // OFPAT_SET_DL_SRC
	action10SetDLDst = 5  // OFPAT_SET_DL_DST
	action10SetNwSrc = 6  // OFPAT_SET_NW_SRC
	action10SetNwDst = 7  // OFPAT_SET_NW_DST
	action10SetTpSrc = 9  // OFPAT_SET_TP_SRC
	action10SetTpDst = 10 // OFPAT_SET_TP_DST
)

// port10 is the 1.3 number of a 1.0 port: the same below OFPP_MAX
// (0xff00), the reserved ports above it with their low 16 bits kept.
func port10(p uint16) uint32 {
	if p < 0xff00 {
		return uint32(p)
	}
	return 0xffff0000 | uint32(p)
}

// parsePacketOut10 is parsePacketOut for 1.0's ofp_packet_out, read by
// hand for the same reason; TestPacketOutCheck10_AgreesWithOftable keeps
// it in step with ofp10.Decode and oftable.
func parsePacketOut10(msg []byte, r *rewrite) (frame []byte, err error) {
	const actionsOff = ofp.HeaderLen + 8 // buffer_id, in_port, actions_len
	if len(msg) < actionsOff {
		return nil, errShortPacketOut
	}
	n := int(binary.BigEndian.Uint16(msg[actionsOff-2:]))
	if actionsOff+n > len(msg) {
		return nil, errShortPacketOut
	}
	*r = rewrite{}
	if err := parseActions10(msg[actionsOff:actionsOff+n], r); err != nil {
		return nil, err
	}
	return msg[actionsOff+n:], nil
}

// parseActions10 reads a list of 1.0 actions into r. SET_TP_SRC/DST
// rewrite whichever transport the packet has; they read as tcp_src/dst,
// the only transport the bench checks. Other actions are skipped, as
// parseActions skips them.
func parseActions10(a []byte, r *rewrite) error {
	for len(a) > 0 {
		if len(a) < 8 {
			return errBadActions
		}
		typ := binary.BigEndian.Uint16(a)
		n := int(binary.BigEndian.Uint16(a[2:]))
		if n < 8 || n > len(a) || n%8 != 0 {
			return errBadActions
		}
		if want := action10Len(typ); want != 0 && n != want {
			return errBadActions
		}
		v := a[4:]
		switch typ {
		case action10Output:
			r.outPort = port10(binary.BigEndian.Uint16(v))
			r.outputs++
		case action10SetDLSrc:
			r.ethSrc, r.has = [6]byte(v[:6]), r.has|1<<oxmEthSrc
		case action10SetDLDst:
			r.ethDst, r.has = [6]byte(v[:6]), r.has|1<<oxmEthDst
		case action10SetNwSrc:
			r.ipSrc, r.has = netip.AddrFrom4([4]byte(v)), r.has|1<<oxmIPv4Src
		case action10SetNwDst:
			r.ipDst, r.has = netip.AddrFrom4([4]byte(v)), r.has|1<<oxmIPv4Dst
		case action10SetTpSrc:
			r.tcpSrc, r.has = binary.BigEndian.Uint16(v), r.has|1<<oxmTCPSrc
		case action10SetTpDst:
			r.tcpDst, r.has = binary.BigEndian.Uint16(v), r.has|1<<oxmTCPDst
		}
		a = a[n:]
	}
	return nil
}

// action10Len is the length of a 1.0 action the parser reads, 0 for the
// others.
func action10Len(typ uint16) int {
	switch typ {
	case action10SetDLSrc, action10SetDLDst:
		return 16
	case action10Output, action10SetNwSrc, action10SetNwDst, action10SetTpSrc, action10SetTpDst:
		return 8
	}
	return 0
}
