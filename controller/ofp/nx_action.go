package ofp

import (
	"encoding/binary"
	"net/netip"
)

// Nicira (Open vSwitch) extension actions: OFPAT_EXPERIMENTER actions with
// experimenter NXExperimenterID and a 16-bit subtype, laid out as OVS's
// lib/ofp-actions.c encodes them. An experimenter action this package does
// not model (another vendor, or another Nicira subtype such as learn or
// note) decodes as ActionRaw, which re-encodes byte for byte.

// NXExperimenterID is NX_VENDOR_ID, the experimenter ID of Nicira actions.
const NXExperimenterID uint32 = 0x00002320

// Nicira action subtypes this package models.
const (
	nxastRegMove       = 6  // NXAST_REG_MOVE
	nxastMultipath     = 10 // NXAST_MULTIPATH
	nxastResubmitTable = 14 // NXAST_RESUBMIT_TABLE
	nxastFinTimeout    = 19 // NXAST_FIN_TIMEOUT
	nxastCT            = 35 // NXAST_CT
	nxastNAT           = 36 // NXAST_NAT
	nxastCTClear       = 43 // NXAST_CT_CLEAR
)

// ResubmitInPort is OFPP_IN_PORT in the 16-bit OpenFlow 1.0 numbering that
// NXAST_RESUBMIT_TABLE uses: resubmit with the packet's own in_port.
const ResubmitInPort uint16 = 0xfff8

// ActionResubmit is NXAST_RESUBMIT_TABLE, resubmit(port,table): look the
// packet up again in Table as if it had arrived on InPort. InPort is a
// 16-bit OpenFlow 1.0 port number (ResubmitInPort keeps the real one);
// Table TableAll (255) means the current table.
type ActionResubmit struct {
	InPort uint16
	Table  uint8
}

// ActionCTClear is NXAST_CT_CLEAR: forget the packet's conntrack state.
type ActionCTClear struct{}

// Conntrack flags (ActionCT.Flags).
const (
	CTCommit uint16 = 1 << 0 // NX_CT_F_COMMIT
	CTForce  uint16 = 1 << 1 // NX_CT_F_FORCE: commit in this direction even if committed the other way
)

// CTRecircNone is NX_CT_RECIRC_NONE, ActionCT.Table for "do not
// recirculate".
const CTRecircNone uint8 = 0xff

// ActionCT is NXAST_CT, ct(...): send the packet through the connection
// tracker. Table is the table the tracked copy recirculates to, or
// CTRecircNone (the zero value 0 is table 0, a real table). The zone is
// Zone, or when ZoneField is set the 16 bits ZoneField[ZoneOfs..ZoneOfs+15].
// Alg is the well-known port of a helper (21 FTP, 69 TFTP) or 0. Actions
// run inside the tracker: an ActionNAT first, then set-fields of ct_mark;
// OVS requires CTCommit for anything but a bare NAT.
type ActionCT struct {
	Flags     uint16
	Zone      uint16
	ZoneField NXMHeader
	ZoneOfs   uint16
	Table     uint8
	Alg       uint16
	Actions   []Action
}

// NAT flags (ActionNAT.Flags).
const (
	NATSrc         uint16 = 1 << 0 // NX_NAT_F_SRC
	NATDst         uint16 = 1 << 1 // NX_NAT_F_DST
	NATPersistent  uint16 = 1 << 2 // NX_NAT_F_PERSISTENT
	NATProtoHash   uint16 = 1 << 3 // NX_NAT_F_PROTO_HASH
	NATProtoRandom uint16 = 1 << 4 // NX_NAT_F_PROTO_RANDOM
	natFlagsMask          = 1<<5 - 1
)

// Which NAT range fields follow nx_action_nat (NX_NAT_RANGE_*).
const (
	natRangeIPv4Min  = 1 << 0 // NX_NAT_RANGE_IPV4_MIN
	natRangeIPv4Max  = 1 << 1 // NX_NAT_RANGE_IPV4_MAX
	natRangeIPv6Min  = 1 << 2 // NX_NAT_RANGE_IPV6_MIN
	natRangeIPv6Max  = 1 << 3 // NX_NAT_RANGE_IPV6_MAX
	natRangeProtoMin = 1 << 4 // NX_NAT_RANGE_PROTO_MIN
	natRangeProtoMax = 1 << 5 // NX_NAT_RANGE_PROTO_MAX
	natRangeMask     = 1<<6 - 1
)

// ActionNAT is NXAST_NAT, nat(...), valid only inside ActionCT. With
// neither NATSrc nor NATDst it is the bare "nat" that applies the NAT of
// an existing connection. Otherwise it translates the source or the
// destination to an address in [AddrMin, AddrMax] (AddrMax unset for one
// address) and a port in [PortMin, PortMax]. Addresses are IPv4 or IPv6,
// both of one family; as in OVS, ports go on the wire only with an
// address, and an unspecified address or zero port counts as none.
type ActionNAT struct {
	Flags            uint16
	AddrMin, AddrMax netip.Addr
	PortMin, PortMax uint16
}

// ActionRegMove is NXAST_REG_MOVE, move:Src[SrcOfs..]->Dst[DstOfs..]:
// copy NBits bits between two fields named by NXM or OXM headers.
type ActionRegMove struct {
	NBits  uint16
	SrcOfs uint16
	DstOfs uint16
	Src    NXMHeader
	Dst    NXMHeader
}

// Fields a multipath hash covers (ActionMultipath.Fields), of OVS's
// enum nx_hash_fields.
const (
	HashFieldsSymmetricL4 uint16 = 1 // NX_HASH_FIELDS_SYMMETRIC_L4
	HashFieldsNWSrc       uint16 = 4 // NX_HASH_FIELDS_NW_SRC: the IPv4 or IPv6 source address
)

// MultipathModuloN is NX_MP_ALG_MODULO_N: the link is the hash modulo
// MaxLink+1.
const MultipathModuloN uint16 = 0

// ActionMultipath is NXAST_MULTIPATH,
// multipath(fields,basis,algorithm,n_links,arg,Dst[DstOfs..]): hash the
// packet's Fields with Basis, pick a link of 0..MaxLink by Algorithm (and
// Arg), and store it in NBits bits of Dst.
type ActionMultipath struct {
	Fields    uint16
	Basis     uint16
	Algorithm uint16
	MaxLink   uint16
	Arg       uint32
	DstOfs    uint16
	NBits     uint16
	Dst       NXMHeader
}

// ActionFinTimeout is NXAST_FIN_TIMEOUT,
// fin_timeout(idle_timeout=IdleTimeout,hard_timeout=HardTimeout): when a
// TCP packet with FIN or RST matches the flow, its timeouts drop to these
// (0 leaves one as it is; a shorter one stays). A flow on one connection's
// 5-tuple so ends soon after the connection does, and shows its new idle
// timeout in its statistics.
type ActionFinTimeout struct {
	IdleTimeout, HardTimeout uint16
}

func (ActionResubmit) ActionType() ActionType   { return ActionTypeExperimenter }
func (ActionFinTimeout) ActionType() ActionType { return ActionTypeExperimenter }
func (ActionMultipath) ActionType() ActionType  { return ActionTypeExperimenter }
func (ActionCTClear) ActionType() ActionType    { return ActionTypeExperimenter }
func (ActionCT) ActionType() ActionType         { return ActionTypeExperimenter }
func (ActionNAT) ActionType() ActionType        { return ActionTypeExperimenter }
func (ActionRegMove) ActionType() ActionType    { return ActionTypeExperimenter }

// appendNXHeader appends the 10 bytes every Nicira action starts with;
// n is the action length, or 0 when the caller patches it afterwards.
func appendNXHeader(b []byte, n int, subtype uint16) []byte {
	b = appendActionHeader(b, ActionTypeExperimenter, n)
	b = binary.BigEndian.AppendUint32(b, NXExperimenterID)
	return binary.BigEndian.AppendUint16(b, subtype)
}

func (a ActionResubmit) appendAction(b []byte) []byte {
	b = appendNXHeader(b, 16, nxastResubmitTable)
	b = binary.BigEndian.AppendUint16(b, a.InPort)
	return append(b, a.Table, 0, 0, 0)
}

func (a ActionMultipath) appendAction(b []byte) []byte {
	b = appendNXHeader(b, 32, nxastMultipath)
	b = binary.BigEndian.AppendUint16(b, a.Fields)
	b = binary.BigEndian.AppendUint16(b, a.Basis)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, a.Algorithm)
	b = binary.BigEndian.AppendUint16(b, a.MaxLink)
	b = binary.BigEndian.AppendUint32(b, a.Arg)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, a.DstOfs<<6|(a.NBits-1))
	return binary.BigEndian.AppendUint32(b, uint32(a.Dst))
}

func (a ActionFinTimeout) appendAction(b []byte) []byte {
	b = appendNXHeader(b, 16, nxastFinTimeout)
	b = binary.BigEndian.AppendUint16(b, a.IdleTimeout)
	b = binary.BigEndian.AppendUint16(b, a.HardTimeout)
	return append(b, 0, 0)
}

func (ActionCTClear) appendAction(b []byte) []byte {
	return append(appendNXHeader(b, 16, nxastCTClear), 0, 0, 0, 0, 0, 0)
}

func (a ActionRegMove) appendAction(b []byte) []byte {
	b = appendNXHeader(b, 24, nxastRegMove)
	b = binary.BigEndian.AppendUint16(b, a.NBits)
	b = binary.BigEndian.AppendUint16(b, a.SrcOfs)
	b = binary.BigEndian.AppendUint16(b, a.DstOfs)
	b = binary.BigEndian.AppendUint32(b, uint32(a.Src))
	return binary.BigEndian.AppendUint32(b, uint32(a.Dst))
}

// ctZoneBits is the only zone width OVS accepts from a field.
const ctZoneBits = 16

func (a ActionCT) appendAction(b []byte) []byte {
	start := len(b)
	b = appendNXHeader(b, 0, nxastCT)
	b = binary.BigEndian.AppendUint16(b, a.Flags)
	b = binary.BigEndian.AppendUint32(b, uint32(a.ZoneField))
	if a.ZoneField != 0 {
		b = binary.BigEndian.AppendUint16(b, a.ZoneOfs<<6|(ctZoneBits-1)) // zone_ofs_nbits
	} else {
		b = binary.BigEndian.AppendUint16(b, a.Zone) // zone_imm
	}
	b = append(b, a.Table, 0, 0, 0)
	b = binary.BigEndian.AppendUint16(b, a.Alg)
	b = appendActions(b, a.Actions)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	return b
}

func (a ActionNAT) appendAction(b []byte) []byte {
	start := len(b)
	b = appendNXHeader(b, 0, nxastNAT)
	b = append(b, 0, 0)
	b = binary.BigEndian.AppendUint16(b, a.Flags)
	b = append(b, 0, 0) // range_present, patched below
	var present uint16
	switch {
	case a.AddrMin.Is4() && !a.AddrMin.IsUnspecified():
		ip := a.AddrMin.As4()
		b, present = append(b, ip[:]...), natRangeIPv4Min
		if a.AddrMax.Is4() && !a.AddrMax.IsUnspecified() {
			ip = a.AddrMax.As4()
			b, present = append(b, ip[:]...), present|natRangeIPv4Max
		}
	case a.AddrMin.Is6() && !a.AddrMin.IsUnspecified():
		ip := a.AddrMin.As16()
		b, present = append(b, ip[:]...), natRangeIPv6Min
		if a.AddrMax.Is6() && !a.AddrMax.IsUnspecified() {
			ip = a.AddrMax.As16()
			b, present = append(b, ip[:]...), present|natRangeIPv6Max
		}
	}
	if present != 0 && a.PortMin != 0 {
		b, present = binary.BigEndian.AppendUint16(b, a.PortMin), present|natRangeProtoMin
		if a.PortMax != 0 {
			b, present = binary.BigEndian.AppendUint16(b, a.PortMax), present|natRangeProtoMax
		}
	}
	b = appendPad8(b, len(b)-start)
	binary.BigEndian.PutUint16(b[start+2:], uint16(len(b)-start))
	binary.BigEndian.PutUint16(b[start+14:], present)
	return b
}

// decodeNXAction decodes the body (after type and length) of an
// experimenter action. It returns ok false for anything it does not
// model, which the caller keeps as ActionRaw.
func decodeNXAction(body []byte, inCT bool) (Action, bool, error) {
	if len(body) < 6 || binary.BigEndian.Uint32(body) != NXExperimenterID {
		return nil, false, nil
	}
	args := body[6:] // after vendor and subtype
	switch binary.BigEndian.Uint16(body[4:]) {
	case nxastResubmitTable:
		if len(args) != 6 {
			return nil, true, ErrBadLength
		}
		return ActionResubmit{InPort: binary.BigEndian.Uint16(args), Table: args[2]}, true, nil
	case nxastFinTimeout:
		if len(args) != 6 {
			return nil, true, ErrBadLength
		}
		return ActionFinTimeout{IdleTimeout: binary.BigEndian.Uint16(args), HardTimeout: binary.BigEndian.Uint16(args[2:])}, true, nil
	case nxastCTClear:
		if len(args) != 6 {
			return nil, true, ErrBadLength
		}
		return ActionCTClear{}, true, nil
	case nxastRegMove:
		return decodeRegMove(args)
	case nxastMultipath:
		a, err := decodeMultipath(args)
		return a, true, err
	case nxastCT:
		if inCT {
			return nil, true, errNXArgument // OVS allows no ct() inside ct()
		}
		a, err := decodeCT(args)
		return a, true, err
	case nxastNAT:
		a, err := decodeNAT(args)
		return a, true, err
	}
	return nil, false, nil
}

// decodeRegMove decodes nx_action_reg_move after the subtype. A move that
// names an experimenter field (8-byte header) stays raw.
func decodeRegMove(args []byte) (Action, bool, error) {
	if len(args) < 10 {
		return nil, true, ErrBadLength
	}
	src := NXMHeader(binary.BigEndian.Uint32(args[6:]))
	if src.Class() == OXMClassExperimenter {
		return nil, false, nil
	}
	if len(args) < 14 {
		return nil, true, ErrBadLength
	}
	dst := NXMHeader(binary.BigEndian.Uint32(args[10:]))
	if dst.Class() == OXMClassExperimenter {
		return nil, false, nil
	}
	if len(args) != 14 {
		return nil, true, ErrBadLength
	}
	return ActionRegMove{
		NBits:  binary.BigEndian.Uint16(args),
		SrcOfs: binary.BigEndian.Uint16(args[2:]),
		DstOfs: binary.BigEndian.Uint16(args[4:]),
		Src:    src,
		Dst:    dst,
	}, true, nil
}

// decodeMultipath decodes nx_action_multipath after the subtype.
func decodeMultipath(args []byte) (Action, error) {
	if len(args) != 22 {
		return nil, ErrBadLength
	}
	ofsNBits := binary.BigEndian.Uint16(args[16:])
	return ActionMultipath{
		Fields:    binary.BigEndian.Uint16(args),
		Basis:     binary.BigEndian.Uint16(args[2:]),
		Algorithm: binary.BigEndian.Uint16(args[6:]),
		MaxLink:   binary.BigEndian.Uint16(args[8:]),
		Arg:       binary.BigEndian.Uint32(args[10:]),
		DstOfs:    ofsNBits >> 6,
		NBits:     ofsNBits&0x3f + 1,
		Dst:       NXMHeader(binary.BigEndian.Uint32(args[18:])),
	}, nil
}

// ctFixedLen is nx_action_conntrack after the subtype, before the nested
// actions.
const ctFixedLen = 14

func decodeCT(args []byte) (Action, error) {
	if len(args) < ctFixedLen {
		return nil, ErrBadLength
	}
	a := ActionCT{
		Flags:     binary.BigEndian.Uint16(args),
		ZoneField: NXMHeader(binary.BigEndian.Uint32(args[2:])),
		Table:     args[8],
		Alg:       binary.BigEndian.Uint16(args[12:]),
	}
	if a.Flags&^(CTCommit|CTForce) != 0 || a.Flags&(CTCommit|CTForce) == CTForce {
		return nil, errNXArgument
	}
	zone := binary.BigEndian.Uint16(args[6:])
	if a.ZoneField != 0 {
		if zone&0x3f != ctZoneBits-1 {
			return nil, errNXArgument // OVS: zone n_bits must be 16
		}
		a.ZoneOfs = zone >> 6
	} else {
		a.Zone = zone
	}
	var err error
	if a.Actions, err = decodeActionList(args[ctFixedLen:], nil, true); err != nil {
		return nil, err
	}
	return a, nil
}

// decodeNAT decodes nx_action_nat after the subtype: pad[2], flags,
// range_present, then the range fields range_present names, padded to 8.
func decodeNAT(args []byte) (Action, error) {
	if len(args) < 6 {
		return nil, ErrBadLength
	}
	a := ActionNAT{Flags: binary.BigEndian.Uint16(args[2:])}
	present := binary.BigEndian.Uint16(args[4:])
	if a.Flags&^natFlagsMask != 0 || a.Flags&(NATSrc|NATDst) == NATSrc|NATDst ||
		a.Flags&(NATProtoHash|NATProtoRandom) == NATProtoHash|NATProtoRandom {
		return nil, errNXArgument
	}
	v4 := present & (natRangeIPv4Min | natRangeIPv4Max)
	v6 := present & (natRangeIPv6Min | natRangeIPv6Max)
	ports := present & (natRangeProtoMin | natRangeProtoMax)
	if present&^natRangeMask != 0 || v4 != 0 && v6 != 0 ||
		v4 == natRangeIPv4Max || v6 == natRangeIPv6Max || ports == natRangeProtoMax ||
		ports != 0 && v4|v6 == 0 {
		return nil, errNXArgument
	}
	n := 0
	for _, bit := range [...]struct {
		bit uint16
		len int
	}{{natRangeIPv4Min, 4}, {natRangeIPv4Max, 4}, {natRangeIPv6Min, 16}, {natRangeIPv6Max, 16},
		{natRangeProtoMin, 2}, {natRangeProtoMax, 2}} {
		if present&bit.bit != 0 {
			n += bit.len
		}
	}
	if pad8(16+n) != 10+len(args) {
		return nil, ErrBadLength
	}
	opts := args[6:]
	switch {
	case v4 != 0:
		a.AddrMin = netip.AddrFrom4([4]byte(opts))
		opts = opts[4:]
		if v4&natRangeIPv4Max != 0 {
			a.AddrMax = netip.AddrFrom4([4]byte(opts))
			opts = opts[4:]
		}
	case v6 != 0:
		a.AddrMin = netip.AddrFrom16([16]byte(opts))
		opts = opts[16:]
		if v6&natRangeIPv6Max != 0 {
			a.AddrMax = netip.AddrFrom16([16]byte(opts))
			opts = opts[16:]
		}
	}
	if ports != 0 {
		a.PortMin = binary.BigEndian.Uint16(opts)
		if ports&natRangeProtoMax != 0 {
			a.PortMax = binary.BigEndian.Uint16(opts[2:])
		}
	}
	// As OVS: no zero minimum, no maximum below the minimum (what Append
	// would not reproduce).
	if a.AddrMin.IsValid() && a.AddrMin.IsUnspecified() ||
		a.AddrMax.IsValid() && a.AddrMax.Less(a.AddrMin) ||
		ports != 0 && a.PortMin == 0 || a.PortMax != 0 && a.PortMax < a.PortMin ||
		ports&natRangeProtoMax != 0 && a.PortMax == 0 {
		return nil, errNXArgument
	}
	return a, nil
}
