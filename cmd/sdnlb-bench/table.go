package main

import (
	"encoding/binary"
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// ctlFlow is a flow the controller installed that punts to it. The fake
// switch keeps these so its packet-ins carry the reason and cookie a real
// switch would give them (a controller may dispatch on the cookie).
type ctlFlow struct {
	priority uint16
	cookie   uint64
	match    ofp.Match
}

// applyFlowMod updates flows as the switch's table would, as far as flows
// that punt are concerned.
func applyFlowMod(flows []ctlFlow, fm *ofp.FlowMod) []ctlFlow {
	switch fm.Command {
	case ofp.FlowAdd, ofp.FlowModify, ofp.FlowModifyStrict:
		flows = slices.DeleteFunc(flows, func(f ctlFlow) bool {
			return f.priority == fm.Priority && slices.Equal(f.match.OXMs, fm.Match.OXMs)
		})
		if punts(fm.Instructions) {
			flows = append(flows, ctlFlow{priority: fm.Priority, cookie: fm.Cookie, match: fm.Match})
		}
	case ofp.FlowDelete, ofp.FlowDeleteStrict:
		strict := fm.Command == ofp.FlowDeleteStrict
		flows = slices.DeleteFunc(flows, func(f ctlFlow) bool {
			if f.cookie&fm.CookieMask != fm.Cookie&fm.CookieMask {
				return false
			}
			if strict {
				return f.priority == fm.Priority && slices.Equal(f.match.OXMs, fm.Match.OXMs)
			}
			return len(fm.Match.OXMs) == 0 || slices.Equal(f.match.OXMs, fm.Match.OXMs)
		})
	}
	return flows
}

func punts(is []ofp.Instruction) bool {
	for _, in := range is {
		var actions []ofp.Action
		switch in := in.(type) {
		case ofp.InstructionApplyActions:
			actions = in.Actions
		case ofp.InstructionWriteActions:
			actions = in.Actions
		}
		for _, a := range actions {
			if out, ok := a.(ofp.ActionOutput); ok && out.Port == ofp.PortController {
				return true
			}
		}
	}
	return false
}

// noFlowCookie is the packet-in cookie when no flow matched (-1).
const noFlowCookie = ^uint64(0)

// lookupPunt finds the highest-priority punting flow that matches the
// frame arriving on port and returns the packet-in reason and cookie.
func lookupPunt(flows []ctlFlow, port uint32, frame []byte) (reason uint8, cookie uint64) {
	fields := frameFields(port, frame)
	var best *ctlFlow
	for i := range flows {
		f := &flows[i]
		if (best == nil || f.priority > best.priority) && matches(&f.match, &fields) {
			best = f
		}
	}
	switch {
	case best == nil:
		return ofp.ReasonNoMatch, noFlowCookie
	case best.priority == 0 && len(best.match.OXMs) == 0: // the table-miss flow
		return ofp.ReasonNoMatch, best.cookie
	}
	return ofp.ReasonAction, best.cookie
}

// packetFields holds, per OpenFlow-basic field, the frame's value; nil
// when the frame has no such field.
type packetFields [ofp.OXMIPv6ExtHdr + 1][]byte

func frameFields(port uint32, f []byte) packetFields {
	var p packetFields
	p[ofp.OXMInPort] = binary.BigEndian.AppendUint32(nil, port)
	if len(f) < 14 {
		return p
	}
	p[ofp.OXMEthDst], p[ofp.OXMEthSrc], p[ofp.OXMEthType] = f[0:6], f[6:12], f[12:14]
	p[ofp.OXMVLANVID] = []byte{0, 0} // untagged: OFPVID_NONE
	switch binary.BigEndian.Uint16(f[12:]) {
	case 0x0800:
		if len(f) < ipOff+20 {
			return p
		}
		ip := f[ipOff:]
		p[ofp.OXMIPProto], p[ofp.OXMIPv4Src], p[ofp.OXMIPv4Dst] = ip[9:10], ip[12:16], ip[16:20]
		p[ofp.OXMIPDSCP], p[ofp.OXMIPECN] = []byte{ip[1] >> 2}, []byte{ip[1] & 3}
		l4 := f[ipOff+int(ip[0]&0x0f)*4:]
		if len(l4) < 4 {
			return p
		}
		switch ip[9] {
		case 6:
			p[ofp.OXMTCPSrc], p[ofp.OXMTCPDst] = l4[0:2], l4[2:4]
		case 17:
			p[ofp.OXMUDPSrc], p[ofp.OXMUDPDst] = l4[0:2], l4[2:4]
		case 1:
			p[ofp.OXMICMPv4Type], p[ofp.OXMICMPv4Code] = l4[0:1], l4[1:2]
		}
	case 0x0806:
		if len(f) < 14+28 {
			return p
		}
		a := f[14:]
		p[ofp.OXMARPOp], p[ofp.OXMARPSHA], p[ofp.OXMARPSPA] = a[6:8], a[8:14], a[14:18]
		p[ofp.OXMARPTHA], p[ofp.OXMARPTPA] = a[18:24], a[24:28]
	}
	return p
}

// matches reports whether every OXM of m matches the packet.
func matches(m *ofp.Match, p *packetFields) bool {
	for i := range m.OXMs {
		o := &m.OXMs[i]
		if o.Class != ofp.OXMClassBasic || int(o.Field) >= len(p) {
			return false
		}
		have, want, mask := p[o.Field], o.Value(), o.Mask()
		if have == nil || len(have) != len(want) {
			return false
		}
		for j := range want {
			mk := byte(0xff)
			if mask != nil {
				mk = mask[j]
			}
			if have[j]&mk != want[j]&mk {
				return false
			}
		}
	}
	return true
}
