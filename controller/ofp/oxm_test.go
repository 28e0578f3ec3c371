package ofp

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"testing"
)

func v6(s string) [16]byte { return netip.MustParseAddr(s).As16() }

func TestOXM_Constructors(t *testing.T) {
	tests := []struct {
		name string
		oxm  OXM
		wire string // TLV as on the wire, OF 1.3.5 §7.2.3.7
	}{
		{"InPort", MatchInPort(PortLocal), "80 00 00 04 ff ff ff fe"},
		{"EthDst", MatchEthDst([6]byte{2, 0, 0, 0, 0, 1}), "80 00 06 06 02 00 00 00 00 01"},
		{"EthSrc", MatchEthSrc([6]byte{2, 0, 0, 0, 0, 1}), "80 00 08 06 02 00 00 00 00 01"},
		{"EthType", MatchEthType(0x0806), "80 00 0a 02 08 06"},
		{"VLANVIDSetsPresent", MatchVLANVID(10), "80 00 0c 02 10 0a"},
		{"VLANPCP", MatchVLANPCP(5), "80 00 0e 01 05"},
		{"IPProto", MatchIPProto(17), "80 00 14 01 11"},
		{"IPv4Src", MatchIPv4Src([4]byte{10, 0, 0, 1}), "80 00 16 04 0a 00 00 01"},
		{"IPv4Dst", MatchIPv4Dst([4]byte{10, 0, 0, 1}), "80 00 18 04 0a 00 00 01"},
		{"IPv4SrcMasked", MatchIPv4SrcMasked([4]byte{10, 1, 2, 3}, [4]byte{255, 255, 0, 0}),
			"80 00 17 08 0a 01 00 00 ff ff 00 00"},
		{"IPv4DstMasked", MatchIPv4DstMasked([4]byte{10, 0, 0, 7}, [4]byte{255, 255, 255, 0}),
			"80 00 19 08 0a 00 00 00 ff ff ff 00"},
		{"TCPSrc", MatchTCPSrc(40000), "80 00 1a 02 9c 40"},
		{"TCPDst", MatchTCPDst(80), "80 00 1c 02 00 50"},
		{"UDPSrc", MatchUDPSrc(53), "80 00 1e 02 00 35"},
		{"UDPDst", MatchUDPDst(53), "80 00 20 02 00 35"},
		{"ICMPv4Type", MatchICMPv4Type(8), "80 00 26 01 08"},
		{"ICMPv4Code", MatchICMPv4Code(3), "80 00 28 01 03"},
		{"ARPOp", MatchARPOp(2), "80 00 2a 02 00 02"},
		{"ARPSPA", MatchARPSPA([4]byte{10, 0, 0, 1}), "80 00 2c 04 0a 00 00 01"},
		{"ARPTPA", MatchARPTPA([4]byte{10, 0, 0, 1}), "80 00 2e 04 0a 00 00 01"},
		{"ARPSHA", MatchARPSHA([6]byte{1, 2, 3, 4, 5, 6}), "80 00 30 06 01 02 03 04 05 06"},
		{"ARPTHA", MatchARPTHA([6]byte{1, 2, 3, 4, 5, 6}), "80 00 32 06 01 02 03 04 05 06"},
		{"Metadata", MatchMetadata(0x0102030405060708), "80 00 04 08 01 02 03 04 05 06 07 08"},
		{"TunnelID", MatchTunnelID(5), "80 00 4c 08 00 00 00 00 00 00 00 05"},
		// Nicira fields: the TLVs `ovs-ofctl -O OpenFlow13 parse-flow` (OVS 3.1) encodes for ct_state=+est+trk,
		// ct_zone=5, ct_mark=0x5/0xff, reg0=0x1234, reg5=0xabcd/0xffff, ct_nw_proto=6, ct_nw_dst, ct_tp_dst=80.
		{"CTStateMasked", MatchCTState(CTStateEst|CTStateTrk, CTStateEst|CTStateTrk), "00 01 d3 08 00 00 00 22 00 00 00 22"},
		{"CTStateValueOutsideMaskDropped", MatchCTState(CTStateNew|CTStateTrk, CTStateNew), "00 01 d3 08 00 00 00 01 00 00 00 01"},
		{"CTStateFullMaskUnmasked", MatchCTState(CTStateNew|CTStateTrk, 0xffffffff), "00 01 d2 04 00 00 00 21"},
		{"CTZone", MatchCTZone(5), "00 01 d4 02 00 05"},
		{"CTMarkMasked", MatchCTMark(5, 0xff), "00 01 d7 08 00 00 00 05 00 00 00 ff"},
		{"CTMark", MatchCTMark(0x654321, 0xffffffff), "00 01 d6 04 00 65 43 21"},
		{"Reg0", MatchReg(0, 0x1234, 0xffffffff), "00 01 00 04 00 00 12 34"},
		{"Reg5Masked", MatchReg(5, 0xabcd, 0xffff), "00 01 0b 08 00 00 ab cd 00 00 ff ff"},
		{"CTNwProto", MatchCTNwProto(6), "00 01 ee 01 06"},
		{"CTNwDst", MatchCTNwDst([4]byte{10, 0, 0, 1}), "00 01 f2 04 0a 00 00 01"},
		{"CTTpDst", MatchCTTpDst(80), "00 01 fa 02 00 50"},
		// IPv6 and neighbour discovery, as OVS 3.1 encodes them (the golden flow_mod_*v6* and nd vectors).
		{"IPv6Src", MatchIPv6Src(v6("2001:db8::1")), "80 00 34 10 20 01 0d b8 00*11 01"},
		{"IPv6Dst", MatchIPv6Dst(v6("2001:db8::64")), "80 00 36 10 20 01 0d b8 00*11 64"},
		{"IPv6SrcMasked", MatchIPv6SrcMasked(v6("2001:db8:0:1::9"), [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
			"80 00 35 20 20 01 0d b8 00 00 00 01 00*8 ff ff ff ff ff ff ff ff 00*8"},
		{"IPv6DstMasked", MatchIPv6DstMasked(v6("2001:db8::64"), [16]byte{0xff, 0xff}), "80 00 37 20 20 01 00*14 ff ff 00*14"},
		{"ICMPv6Type", MatchICMPv6Type(135), "80 00 3a 01 87"},
		{"ICMPv6Code", MatchICMPv6Code(1), "80 00 3c 01 01"},
		{"NDTarget", MatchIPv6NDTarget(v6("2001:db8::64")), "80 00 3e 10 20 01 0d b8 00*11 64"},
		{"NDSLL", MatchIPv6NDSLL([6]byte{2, 0, 0, 0, 1, 0}), "80 00 40 06 02 00 00 00 01 00"},
		{"NDTLL", MatchIPv6NDTLL([6]byte{2, 0, 0, 0, 1, 0}), "80 00 42 06 02 00 00 00 01 00"},
		{"NDReserved", MatchNDReserved(NDFlagSolicited | NDFlagOverride), "10 00 02 04 60 00 00 00"},
		{"NDOptionsType", MatchNDOptionsType(NDOptionTargetLL), "10 00 04 01 02"},
		// OVS's own encoding of tcp_flags=+syn-ack (ovs-ofctl parse-flow).
		{"TCPFlagsSynNotAck", MatchTCPFlags(TCPFlagSYN, TCPFlagSYN|TCPFlagACK), "00 01 45 04 00 02 00 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := mustParseHex(t, tt.wire)
			if got := tt.oxm.appendTo(nil); !bytes.Equal(got, want) {
				t.Errorf("wire = % x, want % x", got, want)
			}
			got, n, err := decodeOXM(want)
			if err != nil || n != len(want) || got != tt.oxm {
				t.Errorf("decodeOXM = %+v, %d, %v; want %+v", got, n, err, tt.oxm)
			}
		})
	}
}

func TestOXM_Accessors(t *testing.T) {
	masked := MatchIPv4DstMasked([4]byte{10, 0, 0, 7}, [4]byte{255, 255, 255, 0})
	if got := masked.Value(); !bytes.Equal(got, []byte{10, 0, 0, 0}) {
		t.Errorf("Value = %v", got)
	}
	if got := masked.Mask(); !bytes.Equal(got, []byte{255, 255, 255, 0}) {
		t.Errorf("Mask = %v", got)
	}
	if got := masked.IPv4(); got != [4]byte{10, 0, 0, 0} {
		t.Errorf("IPv4 = %v", got)
	}
	plain := MatchTCPDst(8080)
	if plain.Mask() != nil || plain.Uint() != 8080 {
		t.Errorf("Mask = %v, Uint = %d", plain.Mask(), plain.Uint())
	}
	mac := MatchEthSrc([6]byte{1, 2, 3, 4, 5, 6})
	if mac.MAC() != [6]byte{1, 2, 3, 4, 5, 6} || mac.Uint() != 0x010203040506 {
		t.Errorf("MAC = %v, Uint = %x", mac.MAC(), mac.Uint())
	}
	ipv6 := MatchIPv6DstMasked(v6("2001:db8::64"), [16]byte{0xff, 0xff, 0xff, 0xff})
	if ipv6.Uint() != 0 {
		t.Errorf("Uint of a 16-byte value = %d, want 0", ipv6.Uint())
	}
	if got := ipv6.IPv6(); got != v6("2001:db8::") {
		t.Errorf("IPv6 = %v, want the value without the mask", netip.AddrFrom16(got))
	}

	// An experimenter OXM keeps its experimenter ID at the head of Value,
	// and the mask covers only the field after it.
	exp := mustOXM(t, OXMClassExperimenter, 2, []byte{0x4f, 0x4e, 0x46, 0x00, 0x00, 0x12}, []byte{0x0f, 0xff})
	if !bytes.Equal(exp.Value(), []byte{0x4f, 0x4e, 0x46, 0x00, 0x00, 0x12}) || !bytes.Equal(exp.Mask(), []byte{0x0f, 0xff}) {
		t.Errorf("experimenter Value = % x, Mask = % x", exp.Value(), exp.Mask())
	}
	wire := exp.appendTo(nil)
	if want := mustParseHex(t, "ff ff 05 08 4f 4e 46 00 00 12 0f ff"); !bytes.Equal(wire, want) {
		t.Errorf("experimenter wire = % x, want % x", wire, want)
	}
}

func TestNewOXM_Errors(t *testing.T) {
	tests := []struct {
		name        string
		class       uint16
		value, mask []byte
		want        error
	}{
		{"MaskLengthDiffers", OXMClassBasic, []byte{1, 2, 3, 4}, []byte{255}, ErrBadLength},
		{"ExperimenterWithoutID", OXMClassExperimenter, []byte{1, 2}, nil, ErrBadLength},
		{"TooLong", OXMClassNXM1, make([]byte, 17), make([]byte, 17), ErrUnsupported},
		{"BasicWrongLength", OXMClassBasic, []byte{0, 0, 1}, nil, ErrBadLength}, // field 1 is in_phy_port, 4 bytes
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewOXM(tt.class, 1, tt.value, tt.mask); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestMatch_Get(t *testing.T) {
	m := Match{OXMs: []OXM{
		mustOXM(t, OXMClassNXM1, OXMInPort, []byte{0, 0, 0, 9}, nil), // NXM reg0: same field number, other class
		MatchEthType(0x0800),
		MatchInPort(3),
	}}
	if p, ok := m.InPort(); !ok || p != 3 {
		t.Errorf("InPort = %d, %v; want 3, true", p, ok)
	}
	if o, ok := m.Get(OXMEthType); !ok || o.Uint() != 0x0800 {
		t.Errorf("Get(EthType) = %v, %v", o, ok)
	}
	if _, ok := m.Get(OXMTCPDst); ok {
		t.Error("Get(TCPDst) found a field that is not there")
	}
	var empty Match
	if _, ok := empty.InPort(); ok {
		t.Error("InPort on an empty match reported ok")
	}
	if o, ok := m.GetNX(NXMReg(0)); !ok || o.Uint() != 9 {
		t.Errorf("GetNX(reg0) = %v, %v; want 9", o, ok)
	}
	if _, ok := m.GetNX(NXMCTMark); ok {
		t.Error("GetNX(ct_mark) found a field that is not there")
	}
}

func TestMatch_Sum64(t *testing.T) {
	a := Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPv4Dst([4]byte{10, 0, 0, 1})}}
	b := Match{OXMs: []OXM{MatchEthType(0x0800), MatchIPv4Dst([4]byte{10, 0, 0, 2})}}
	same := Match{OXMs: slices.Clone(a.OXMs)}
	if a.Sum64() != same.Sum64() {
		t.Errorf("equal matches hash apart")
	}
	if a.Sum64() == b.Sum64() || a.Sum64() == (&Match{}).Sum64() {
		t.Errorf("different matches hash alike")
	}
}

// Open vSwitch reads TCP flags back in OpenFlow 1.3 as ONF's experimenter
// field: it decodes as the NXM field sdnlb writes, so a flow read back
// matches the one installed. ONF's other fields stay as they came.
func TestMatch_ONFTCPFlags(t *testing.T) {
	onf := func(field OXMField, value, mask []byte) []byte {
		fm, payload := byte(field<<1), append([]byte{0x4f, 0x4e, 0x46, 0x00}, value...)
		if mask != nil {
			fm |= 1
			payload = append(payload, mask...)
		}
		return append([]byte{0xff, 0xff, fm, byte(len(payload))}, payload...)
	}
	otherField := onf(41, []byte{0, 0x10}, nil)
	tests := map[string]struct {
		oxm  []byte
		want OXM
	}{
		"Masked":   {onf(onfTCPFlagsField, []byte{0, 0x02}, []byte{0, 0x12}), MatchTCPFlags(TCPFlagSYN, TCPFlagSYN|TCPFlagACK)},
		"Exact":    {onf(onfTCPFlagsField, []byte{0, 0x10}, nil), MatchTCPFlags(TCPFlagACK, 0xffff)},
		"ONFField": {otherField, mustOXM(t, OXMClassExperimenter, 41, otherField[4:], nil)},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var m Match
			if _, err := m.decode(matchBytes(tt.oxm)); err != nil {
				t.Fatal(err)
			}
			if len(m.OXMs) != 1 || m.OXMs[0] != tt.want {
				t.Errorf("decoded %v, want %v", m.OXMs, tt.want)
			}
		})
	}
}

// matchBytes wraps OXM TLVs in an ofp_match, padded to 8 bytes.
func matchBytes(oxms []byte) []byte {
	n := 4 + len(oxms)
	b := append([]byte{0, 1, byte(n >> 8), byte(n)}, oxms...)
	return append(b, make([]byte, pad8(n)-n)...)
}
