package ofp

import (
	"encoding/hex"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
)

// Rendering of the Nicira match fields and actions, as OVS 3.1's
// lib/match.c and lib/ofp-actions.c print them.

// ctStateNames are the ct_state bits by bit number.
var ctStateNames = [...]string{"new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"}

// tcpFlagNames are the tcp_flags bits by bit number.
var tcpFlagNames = [...]string{"fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns"}

// formatNXMatch renders a non-basic match field as keyword=value, or in
// the oxm(CLASS:FIELD) form when this package has no name for it.
func formatNXMatch(o *OXM) string {
	f, ok := lookupNXField(o.header())
	if !ok || o.Class == OXMClassExperimenter {
		return formatForeignOXM(o)
	}
	switch f.format {
	case nxCTState:
		return "ct_state=" + formatCTState(o)
	case nxTCPFlags:
		if o.HasMask {
			return "tcp_flags=" + formatFlagBits(uint32(o.Uint()), uint32(bytesUint(o.Mask())), tcpFlagNames[:])
		}
	}
	return f.name + "=" + formatNXValue(o, f)
}

// formatNXValue renders the value (and mask) of a field described by f.
func formatNXValue(o *OXM, f nxField) string {
	v := o.Value()
	switch f.format {
	case nxDecimal:
		if !o.HasMask {
			return strconv.FormatUint(o.Uint(), 10)
		}
	case nxIP:
		if len(v) == 4 || len(v) == 16 {
			return formatIP(v, o.Mask())
		}
	case nxCTState:
		return formatCTState(o)
	case nxHexBytes:
		s := hexNoLeadingZeros(v)
		if o.HasMask {
			s += "/" + hexNoLeadingZeros(o.Mask())
		}
		return s
	case nxHex:
		if f.bits == 48 && len(v) == 6 { // Ethernet addresses
			s := formatMAC(v)
			if o.HasMask {
				s += "/" + formatMAC(o.Mask())
			}
			return s
		}
	}
	if len(v) > 8 {
		return formatRaw(o)
	}
	s := hexUint(o.Uint())
	if o.HasMask {
		s += "/" + hexUint(bytesUint(o.Mask()))
	}
	return s
}

// hexNoLeadingZeros renders a wide field as OVS does: 0x and its hex
// digits from the first that is not zero (ct_label=0xa000064), or 0.
func hexNoLeadingZeros(b []byte) string {
	s := strings.TrimLeft(hex.EncodeToString(b), "0")
	if s == "" {
		return "0"
	}
	return "0x" + s
}

func bytesUint(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// formatIP renders an IPv4 or IPv6 address (v and mask both 4 or both 16
// bytes) with an optional mask: CIDR when the mask is a prefix, the mask
// as an address otherwise.
func formatIP(v, mask []byte) string {
	ip, _ := netip.AddrFromSlice(v)
	if mask == nil {
		return ip.String()
	}
	leading, total := 0, 0
	for i, c := range mask {
		if leading == 8*i {
			leading += bits.LeadingZeros8(^c)
		}
		total += bits.OnesCount8(c)
	}
	if leading == total {
		return ip.String() + "/" + strconv.Itoa(leading)
	}
	m, _ := netip.AddrFromSlice(mask)
	return ip.String() + "/" + m.String()
}

// formatCTState renders ct_state the way OVS does: the flags joined by |
// when all eight bits are matched ("new|trk", "0" for none), else each
// matched bit as +name or -name from the lowest ("-inv+trk"). Values with
// bits OVS does not define print as hex.
func formatCTState(o *OXM) string {
	if len(o.Value()) != 4 {
		return formatRaw(o)
	}
	v, mask := uint32(o.Uint()), uint32(0xffffffff)
	if o.HasMask {
		mask = uint32(bytesUint(o.Mask()))
	}
	if v&^0xff != 0 || mask != 0xffffffff && mask&^0xff != 0 {
		return formatRaw(o)
	}
	var b strings.Builder
	if mask&0xff == 0xff {
		if v == 0 {
			return "0"
		}
		for i, name := range ctStateNames {
			if v&(1<<i) != 0 {
				if b.Len() > 0 {
					b.WriteByte('|')
				}
				b.WriteString(name)
			}
		}
		return b.String()
	}
	if mask == 0 {
		return "0/0"
	}
	return formatFlagBits(v, mask, ctStateNames[:])
}

// formatFlagBits renders the bits of mask as +name (set in v) or -name,
// in bit order, as OVS prints masked flag fields.
func formatFlagBits(v, mask uint32, names []string) string {
	var b strings.Builder
	for i, name := range names {
		if mask&(1<<i) == 0 {
			continue
		}
		if v&(1<<i) != 0 {
			b.WriteByte('+')
		} else {
			b.WriteByte('-')
		}
		b.WriteString(name)
	}
	return b.String()
}

// String returns the field's NXM (or, for fields OVS knows only as OXM,
// OXM) name as move: prints it, for example "NXM_NX_REG0" or
// "NXM_OF_ETH_SRC"; unknown fields print as oxm(CLASS:FIELD).
func (h NXMHeader) String() string {
	if f, ok := lookupNXField(h); ok {
		return f.nxm
	}
	return "oxm(" + hex4(uint64(h.Class())) + ":" + strconv.Itoa(int(h.Field())) + ")"
}

// formatSubfield renders field[ofs..ofs+n-1] as OVS does: [] for the
// whole field, [i] for one bit.
func formatSubfield(h NXMHeader, ofs, n uint16) string {
	width := 8 * h.Len()
	if f, ok := lookupNXField(h); ok {
		width = f.bits
	}
	switch {
	case ofs == 0 && int(n) == width:
		return h.String() + "[]"
	case n == 1:
		return h.String() + "[" + strconv.Itoa(int(ofs)) + "]"
	}
	return h.String() + "[" + strconv.Itoa(int(ofs)) + ".." + strconv.Itoa(int(ofs)+int(n)-1) + "]"
}

func formatRegMove(a ActionRegMove) string {
	return "move:" + formatSubfield(a.Src, a.SrcOfs, a.NBits) + "->" + formatSubfield(a.Dst, a.DstOfs, a.NBits)
}

// multipathNames are OVS's words for the hash fields and algorithms
// ActionMultipath models.
var (
	multipathFields     = map[uint16]string{HashFieldsSymmetricL4: "symmetric_l4", HashFieldsNWSrc: "nw_src"}
	multipathAlgorithms = map[uint16]string{MultipathModuloN: "modulo_n", 1: "hash_threshold", 2: "hrw", 3: "iter_hash"}
)

func formatMultipath(a ActionMultipath) string {
	fields, ok := multipathFields[a.Fields]
	if !ok {
		fields = strconv.Itoa(int(a.Fields))
	}
	alg, ok := multipathAlgorithms[a.Algorithm]
	if !ok {
		alg = strconv.Itoa(int(a.Algorithm))
	}
	return "multipath(" + fields + "," + strconv.Itoa(int(a.Basis)) + "," + alg + "," + strconv.Itoa(int(a.MaxLink)+1) + "," +
		strconv.FormatUint(uint64(a.Arg), 10) + "," + formatSubfield(a.Dst, a.DstOfs, a.NBits) + ")"
}

// formatFinTimeout spells a as ovs-ofctl does, leaving out a timeout of 0.
func formatFinTimeout(a ActionFinTimeout) string {
	var args []string
	if a.IdleTimeout != 0 {
		args = append(args, "idle_timeout="+strconv.Itoa(int(a.IdleTimeout)))
	}
	if a.HardTimeout != 0 {
		args = append(args, "hard_timeout="+strconv.Itoa(int(a.HardTimeout)))
	}
	return "fin_timeout(" + strings.Join(args, ",") + ")"
}

// resubmitPort widens a 16-bit OpenFlow 1.0 port, keeping the reserved
// ones reserved (0xfff8 is PortInPort).
func resubmitPort(p uint16) string {
	port := uint32(p)
	if p >= 0xff00 {
		port |= 0xffff0000
	}
	return FormatPort(port)
}

func formatResubmit(a ActionResubmit) string {
	if a.InPort != ResubmitInPort && a.Table == TableAll {
		return "resubmit:" + resubmitPort(a.InPort)
	}
	s := "resubmit("
	if a.InPort != ResubmitInPort {
		s += resubmitPort(a.InPort)
	}
	s += ","
	if a.Table != TableAll {
		s += strconv.Itoa(int(a.Table))
	}
	return s + ")"
}

// formatCT renders ct(...) in OVS's order: flags, table, zone, a leading
// nat(...), exec(...) for the other nested actions, alg.
func formatCT(a *ActionCT) string {
	var parts []string
	if a.Flags&CTCommit != 0 {
		parts = append(parts, "commit")
	}
	if a.Flags&CTForce != 0 {
		parts = append(parts, "force")
	}
	if a.Table != CTRecircNone {
		parts = append(parts, "table="+strconv.Itoa(int(a.Table)))
	}
	if a.ZoneField != 0 {
		parts = append(parts, "zone="+formatSubfield(a.ZoneField, a.ZoneOfs, ctZoneBits))
	} else if a.Zone != 0 {
		parts = append(parts, "zone="+strconv.Itoa(int(a.Zone)))
	}
	nested := a.Actions
	if len(nested) > 0 {
		switch n := nested[0].(type) {
		case ActionNAT:
			parts, nested = append(parts, formatNAT(&n)), nested[1:]
		case *ActionNAT:
			parts, nested = append(parts, formatNAT(n)), nested[1:]
		}
	}
	if len(nested) > 0 {
		parts = append(parts, "exec("+joinActions(nested)+")")
	}
	switch a.Alg {
	case 0:
	case 21:
		parts = append(parts, "alg=ftp")
	case 69:
		parts = append(parts, "alg=tftp")
	default:
		parts = append(parts, "alg="+strconv.Itoa(int(a.Alg)))
	}
	return "ct(" + strings.Join(parts, ",") + ")"
}

// natRange reports the address family Append puts on the wire for a (0
// for none, else 4 or 6), and whether it puts the maximum there.
func natRange(a *ActionNAT) (family int, hasMax bool) {
	switch {
	case a.AddrMin.Is4() && !a.AddrMin.IsUnspecified():
		return 4, a.AddrMax.Is4() && !a.AddrMax.IsUnspecified()
	case a.AddrMin.Is6() && !a.AddrMin.IsUnspecified():
		return 6, a.AddrMax.Is6() && !a.AddrMax.IsUnspecified()
	}
	return 0, false
}

// formatNAT renders nat, nat(src) or nat(dst=ADDR[-ADDR][:PORT[-PORT]],
// flags). As OVS 3.1 does, it prints persistent, hash and random only
// with a range, and brackets IPv6 addresses followed by a port.
func formatNAT(a *ActionNAT) string {
	if a.Flags&(NATSrc|NATDst) == 0 {
		return "nat"
	}
	s := "nat(dst"
	if a.Flags&NATSrc != 0 {
		s = "nat(src"
	}
	family, hasMax := natRange(a)
	if family == 0 {
		return s + ")"
	}
	addr := func(ip netip.Addr) string {
		if family == 6 && a.PortMin != 0 {
			return "[" + ip.String() + "]"
		}
		return ip.String()
	}
	s += "=" + addr(a.AddrMin)
	if hasMax && a.AddrMax != a.AddrMin {
		s += "-" + addr(a.AddrMax)
	}
	if a.PortMin != 0 {
		s += ":" + strconv.Itoa(int(a.PortMin))
		if a.PortMax != 0 && a.PortMax != a.PortMin {
			s += "-" + strconv.Itoa(int(a.PortMax))
		}
	}
	for _, f := range []struct {
		flag uint16
		name string
	}{{NATPersistent, "persistent"}, {NATProtoHash, "hash"}, {NATProtoRandom, "random"}} {
		if a.Flags&f.flag != 0 {
			s += "," + f.name
		}
	}
	return s + ")"
}
