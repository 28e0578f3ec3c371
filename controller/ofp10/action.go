package ofp10

import (
	"encoding/binary"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// ofp_action_type in 1.0: every set-field is its own action.
const (
	actionOutput   uint16 = 0  // OFPAT_OUTPUT
	actionSetDLSrc uint16 = 4  // OFPAT_SET_DL_SRC
	actionSetDLDst uint16 = 5  // OFPAT_SET_DL_DST
	actionSetNwSrc uint16 = 6  // OFPAT_SET_NW_SRC
	actionSetNwDst uint16 = 7  // OFPAT_SET_NW_DST
	actionSetTpSrc uint16 = 9  // OFPAT_SET_TP_SRC
	actionSetTpDst uint16 = 10 // OFPAT_SET_TP_DST
)

// appendActions encodes a 1.3 action list as 1.0 actions: output, and
// set_field of eth_src/dst (SET_DL_*), ipv4_src/dst (SET_NW_*) and
// tcp or udp src/dst (SET_TP_*). proto is the ip_proto the flow matches
// (0: none): SET_TP_* rewrites whichever transport the packet has, so a
// tcp or udp set_field is accepted only where the match pins that
// protocol, as 1.3 switches require, and decodes back the same.
func appendActions(b []byte, actions []ofp.Action, proto uint8) ([]byte, error) {
	var err error
	for _, a := range actions {
		switch a := a.(type) {
		case ofp.ActionOutput:
			b, err = appendOutput(b, a)
		case *ofp.ActionOutput:
			b, err = appendOutput(b, *a)
		case ofp.ActionSetField:
			b, err = appendSetField(b, &a.Field, proto)
		case *ofp.ActionSetField:
			b, err = appendSetField(b, &a.Field, proto)
		default:
			err = unsupported("action %s", ofp.FormatActions([]ofp.Action{a}))
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

func appendOutput(b []byte, a ofp.ActionOutput) ([]byte, error) {
	p, err := portTo10(a.Port)
	if err != nil {
		return b, err
	}
	b = binary.BigEndian.AppendUint16(b, actionOutput)
	b = binary.BigEndian.AppendUint16(b, 8)
	b = binary.BigEndian.AppendUint16(b, p)
	return binary.BigEndian.AppendUint16(b, a.MaxLen), nil
}

func appendSetField(b []byte, o *ofp.OXM, proto uint8) ([]byte, error) {
	if o.Class != ofp.OXMClassBasic || o.HasMask {
		return b, unsupported("action set_field %s", oxmName(*o))
	}
	switch o.Field {
	case ofp.OXMEthSrc, ofp.OXMEthDst:
		t := actionSetDLSrc
		if o.Field == ofp.OXMEthDst {
			t = actionSetDLDst
		}
		b = appendActionHeader(b, t, 16)
		return append(append(b, o.Value()...), 0, 0, 0, 0, 0, 0), nil
	case ofp.OXMIPv4Src, ofp.OXMIPv4Dst:
		t := actionSetNwSrc
		if o.Field == ofp.OXMIPv4Dst {
			t = actionSetNwDst
		}
		return append(appendActionHeader(b, t, 8), o.Value()...), nil
	case ofp.OXMTCPSrc, ofp.OXMUDPSrc, ofp.OXMTCPDst, ofp.OXMUDPDst:
		t := actionSetTpSrc
		if o.Field == ofp.OXMTCPDst || o.Field == ofp.OXMUDPDst {
			t = actionSetTpDst
		}
		if f, ok := tpField(t, proto); !ok || f != o.Field {
			return b, unsupported("action set_field %s in a flow that does not match its protocol", oxmName(*o))
		}
		return append(append(appendActionHeader(b, t, 8), o.Value()...), 0, 0), nil
	}
	return b, unsupported("action set_field %s", oxmName(*o))
}

func appendActionHeader(b []byte, t uint16, n uint16) []byte {
	b = binary.BigEndian.AppendUint16(b, t)
	return binary.BigEndian.AppendUint16(b, n)
}

// decodeActions decodes a 1.0 action list into 1.3 actions, appending to
// dst. SET_TP_SRC/DST become tcp_src/dst or udp_src/dst by proto, the
// ip_proto of the flow's match or of a packet-out's frame; without TCP or
// UDP there they are ErrUnsupported (Open vSwitch rejects such flows).
func decodeActions(b []byte, dst []ofp.Action, proto uint8) ([]ofp.Action, error) {
	for len(b) > 0 {
		if len(b) < 8 {
			return dst, ofp.ErrShort
		}
		t := binary.BigEndian.Uint16(b)
		n := int(binary.BigEndian.Uint16(b[2:]))
		if n < 8 || n%8 != 0 || n > len(b) {
			return dst, ofp.ErrBadLength
		}
		body := b[4:n]
		var a ofp.Action
		switch t {
		case actionOutput:
			if n != 8 {
				return dst, ofp.ErrBadLength
			}
			a = ofp.ActionOutput{Port: portFrom10(binary.BigEndian.Uint16(body)),
				MaxLen: binary.BigEndian.Uint16(body[2:])}
		case actionSetDLSrc, actionSetDLDst:
			if n != 16 {
				return dst, ofp.ErrBadLength
			}
			f := ofp.OXMEthSrc
			if t == actionSetDLDst {
				f = ofp.OXMEthDst
			}
			a = ofp.ActionSetField{Field: mustOXM(f, body[:6], nil)}
		case actionSetNwSrc, actionSetNwDst:
			if n != 8 {
				return dst, ofp.ErrBadLength
			}
			f := ofp.OXMIPv4Src
			if t == actionSetNwDst {
				f = ofp.OXMIPv4Dst
			}
			a = ofp.ActionSetField{Field: mustOXM(f, body[:4], nil)}
		case actionSetTpSrc, actionSetTpDst:
			if n != 8 {
				return dst, ofp.ErrBadLength
			}
			f, ok := tpField(t, proto)
			if !ok {
				return dst, unsupported("set_tp action in a flow not matching tcp or udp")
			}
			a = ofp.ActionSetField{Field: mustOXM(f, body[:2], nil)}
		default:
			return dst, unsupported("action type %d", t)
		}
		dst = append(dst, a)
		b = b[n:]
	}
	return dst, nil
}

// tpField is the 1.3 field a SET_TP_SRC or SET_TP_DST action rewrites
// in a flow matching ip_proto proto.
func tpField(t uint16, proto uint8) (ofp.OXMField, bool) {
	switch proto {
	case ofp.IPProtoTCP:
		if t == actionSetTpSrc {
			return ofp.OXMTCPSrc, true
		}
		return ofp.OXMTCPDst, true
	case ofp.IPProtoUDP:
		if t == actionSetTpSrc {
			return ofp.OXMUDPSrc, true
		}
		return ofp.OXMUDPDst, true
	}
	return 0, false
}

// frameProto is the IPv4 protocol of an Ethernet frame, tagged or not,
// which decides what a packet-out's SET_TP_* rewrites; 0 for a frame
// that is not IPv4 or for none (a buffered packet).
func frameProto(frame []byte) uint8 {
	const ethTypeAt, vlanLen, protoInIPv4 = 12, 4, 9
	at := ethTypeAt
	if len(frame) >= at+2 && binary.BigEndian.Uint16(frame[at:]) == 0x8100 {
		at += vlanLen
	}
	if len(frame) < at+2+protoInIPv4+1 || binary.BigEndian.Uint16(frame[at:]) != ofp.EthTypeIPv4 {
		return 0
	}
	return frame[at+2+protoInIPv4]
}
