package oftable

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// ICMPv6 types the model knows.
const (
	icmpv6NS uint8 = 135 // neighbour solicitation
	icmpv6NA uint8 = 136 // neighbour advertisement
)

// Packet is the header fields a flow can match and an action can rewrite,
// and the metadata that travels with a packet through one switch's
// tables: in_port, metadata, the registers and what the connection
// tracker said of it. Packets are untagged: a match on vlan_vid sees
// OFPVID_NONE. Fields of layers the packet does not have are zero; the
// prerequisites Apply enforces keep a flow from reading them.
type Packet struct {
	InPort   uint32
	Metadata uint64          // what the tables' write_metadata wrote
	Regs     [numRegs]uint32 // reg0 .. reg15 (NXM_NX_REGn)
	// The connection tracker's fields (ct_state, ct_zone, ct_mark,
	// ct_label): zero until a ct action with a recirculation table gives
	// the recirculated packet those of its connection; see Tracker.
	CTState            uint32 // ofp.CTState* bits
	CTZone             uint16
	CTMark             uint32
	CTLabel            [16]byte
	EthSrc, EthDst     [6]byte
	EthType            uint16
	ARPOp              uint16
	ARPSHA, ARPTHA     [6]byte
	ARPSPA, ARPTPA     [4]byte
	IPProto            uint8 // IPv6: the next header
	IPv4Src, IPv4Dst   [4]byte
	IPv6Src, IPv6Dst   [16]byte
	L4Src, L4Dst       uint16 // TCP or UDP ports
	TCPFlags           uint16 // the TCP header's flags, ofp.TCPFlag* bits
	ICMPType, ICMPCode uint8  // ICMPv4 or ICMPv6
	// Neighbour discovery (ICMPv6 types 135 and 136), as Open vSwitch
	// reads it: the target, the addresses of the source and target
	// link-layer address options (nd_sll, nd_tll), the 32 bits after the
	// checksum (an advertisement's flags) and the first option's type.
	NDTarget      [16]byte
	NDSLL, NDTLL  [6]byte
	NDReserved    uint32
	NDOptionsType uint8
}

// ErrVLAN is ParseFrame's error for an 802.1Q or 802.1ad tagged frame,
// which Packet cannot represent.
var ErrVLAN = errors.New("oftable: VLAN-tagged frames are not modelled")

// ParseFrame reads the fields of an Ethernet frame that arrived on
// inPort: ARP, IPv4 with TCP, UDP or ICMPv4, and IPv6 with TCP, UDP or
// ICMPv6 (neighbour discovery included). Other EtherTypes, IP protocols
// and IPv6 extension headers leave the fields past them zero.
func ParseFrame(inPort uint32, frame []byte) (Packet, error) {
	var (
		eth    layers.Ethernet
		arp    layers.ARP
		ip     layers.IPv4
		ip6    layers.IPv6
		tcp    layers.TCP
		udp    layers.UDP
		icmp   layers.ICMPv4
		icmp6  layers.ICMPv6
		ns     layers.ICMPv6NeighborSolicitation
		advert layers.ICMPv6NeighborAdvertisement
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet,
		&eth, &arp, &ip, &ip6, &tcp, &udp, &icmp, &icmp6, &ns, &advert)
	parser.IgnoreUnsupported = true
	var decoded []gopacket.LayerType
	if err := parser.DecodeLayers(frame, &decoded); err != nil {
		return Packet{}, fmt.Errorf("oftable: parse frame: %w", err)
	}
	if len(decoded) == 0 {
		return Packet{}, errors.New("oftable: parse frame: no Ethernet header")
	}
	p := Packet{InPort: inPort, EthType: uint16(eth.EthernetType)}
	copy(p.EthSrc[:], eth.SrcMAC)
	copy(p.EthDst[:], eth.DstMAC)
	if eth.EthernetType == layers.EthernetTypeDot1Q || eth.EthernetType == layers.EthernetTypeQinQ {
		return Packet{}, ErrVLAN
	}
	for _, l := range decoded[1:] {
		switch l {
		case layers.LayerTypeARP:
			if len(arp.SourceProtAddress) != 4 || len(arp.DstProtAddress) != 4 ||
				len(arp.SourceHwAddress) != 6 || len(arp.DstHwAddress) != 6 {
				return Packet{}, errors.New("oftable: parse frame: ARP for another protocol than IPv4 over Ethernet")
			}
			p.ARPOp = arp.Operation
			p.ARPSHA, p.ARPTHA = [6]byte(arp.SourceHwAddress), [6]byte(arp.DstHwAddress)
			p.ARPSPA, p.ARPTPA = [4]byte(arp.SourceProtAddress), [4]byte(arp.DstProtAddress)
		case layers.LayerTypeIPv4:
			p.IPProto = uint8(ip.Protocol)
			p.IPv4Src, p.IPv4Dst = [4]byte(ip.SrcIP.To4()), [4]byte(ip.DstIP.To4())
		case layers.LayerTypeTCP:
			p.L4Src, p.L4Dst = uint16(tcp.SrcPort), uint16(tcp.DstPort)
			p.TCPFlags = tcpFlags(&tcp)
		case layers.LayerTypeUDP:
			p.L4Src, p.L4Dst = uint16(udp.SrcPort), uint16(udp.DstPort)
		case layers.LayerTypeICMPv4:
			p.ICMPType, p.ICMPCode = icmp.TypeCode.Type(), icmp.TypeCode.Code()
		case layers.LayerTypeIPv6:
			p.IPProto = uint8(ip6.NextHeader)
			p.IPv6Src, p.IPv6Dst = [16]byte(ip6.SrcIP.To16()), [16]byte(ip6.DstIP.To16())
		case layers.LayerTypeICMPv6:
			p.ICMPType, p.ICMPCode = icmp6.TypeCode.Type(), icmp6.TypeCode.Code()
		case layers.LayerTypeICMPv6NeighborSolicitation:
			p.NDTarget = [16]byte(ns.TargetAddress.To16())
			p.readNDOptions(ns.Contents, ns.Options)
		case layers.LayerTypeICMPv6NeighborAdvertisement:
			p.NDTarget = [16]byte(advert.TargetAddress.To16())
			p.readNDOptions(advert.Contents, advert.Options)
		}
	}
	return p, nil
}

// tcpFlags are the flags of a TCP header as tcp_flags matches them.
func tcpFlags(t *layers.TCP) uint16 {
	var f uint16
	for i, set := range []bool{t.FIN, t.SYN, t.RST, t.PSH, t.ACK, t.URG, t.ECE, t.CWR, t.NS} {
		if set {
			f |= 1 << i
		}
	}
	return f
}

// readNDOptions reads the reserved word at the start of an ND message's
// body and its link-layer address options.
func (p *Packet) readNDOptions(body []byte, opts layers.ICMPv6Options) {
	p.NDReserved = binary.BigEndian.Uint32(body)
	for i, o := range opts {
		if i == 0 {
			p.NDOptionsType = uint8(o.Type)
		}
		switch {
		case len(o.Data) != 6:
		case o.Type == layers.ICMPv6OptSourceAddress:
			p.NDSLL = [6]byte(o.Data)
		case o.Type == layers.ICMPv6OptTargetAddress:
			p.NDTLL = [6]byte(o.Data)
		}
	}
}

// String renders p briefly, for test failures: the protocol and its
// addresses, then in_port and the MACs, for example
// "tcp 10.0.1.5:40000 > 10.0.0.100:80 in_port=10 dl_src=02:00:00:00:00:01 dl_dst=02:00:00:00:00:02".
func (p Packet) String() string {
	var b strings.Builder
	ip := func(a [4]byte) string { return netip.AddrFrom4(a).String() }
	ip6 := func(a [16]byte) string { return netip.AddrFrom16(a).String() }
	switch {
	case p.EthType == ofp.EthTypeARP:
		fmt.Fprintf(&b, "arp op=%d %s (%v) > %s (%v)", p.ARPOp, ip(p.ARPSPA), net.HardwareAddr(p.ARPSHA[:]),
			ip(p.ARPTPA), net.HardwareAddr(p.ARPTHA[:]))
	case p.EthType == ofp.EthTypeIPv4 && (p.IPProto == ofp.IPProtoTCP || p.IPProto == ofp.IPProtoUDP):
		name := "tcp"
		if p.IPProto == ofp.IPProtoUDP {
			name = "udp"
		}
		fmt.Fprintf(&b, "%s %s:%d > %s:%d", name, ip(p.IPv4Src), p.L4Src, ip(p.IPv4Dst), p.L4Dst)
	case p.EthType == ofp.EthTypeIPv4 && p.IPProto == ofp.IPProtoICMP:
		fmt.Fprintf(&b, "icmp %s > %s type=%d code=%d", ip(p.IPv4Src), ip(p.IPv4Dst), p.ICMPType, p.ICMPCode)
	case p.EthType == ofp.EthTypeIPv4:
		fmt.Fprintf(&b, "ip proto=%d %s > %s", p.IPProto, ip(p.IPv4Src), ip(p.IPv4Dst))
	case p.EthType == ofp.EthTypeIPv6 && (p.IPProto == ofp.IPProtoTCP || p.IPProto == ofp.IPProtoUDP):
		name := "tcp6"
		if p.IPProto == ofp.IPProtoUDP {
			name = "udp6"
		}
		fmt.Fprintf(&b, "%s [%s]:%d > [%s]:%d", name, ip6(p.IPv6Src), p.L4Src, ip6(p.IPv6Dst), p.L4Dst)
	case p.EthType == ofp.EthTypeIPv6 && p.IPProto == ofp.IPProtoICMPv6 && (p.ICMPType == icmpv6NS || p.ICMPType == icmpv6NA):
		fmt.Fprintf(&b, "icmp6 %s > %s type=%d code=%d nd_target=%s nd_sll=%v nd_tll=%v nd_reserved=0x%x nd_options_type=%d",
			ip6(p.IPv6Src), ip6(p.IPv6Dst), p.ICMPType, p.ICMPCode, ip6(p.NDTarget),
			net.HardwareAddr(p.NDSLL[:]), net.HardwareAddr(p.NDTLL[:]), p.NDReserved, p.NDOptionsType)
	case p.EthType == ofp.EthTypeIPv6 && p.IPProto == ofp.IPProtoICMPv6:
		fmt.Fprintf(&b, "icmp6 %s > %s type=%d code=%d", ip6(p.IPv6Src), ip6(p.IPv6Dst), p.ICMPType, p.ICMPCode)
	case p.EthType == ofp.EthTypeIPv6:
		fmt.Fprintf(&b, "ipv6 proto=%d %s > %s", p.IPProto, ip6(p.IPv6Src), ip6(p.IPv6Dst))
	default:
		fmt.Fprintf(&b, "dl_type=0x%04x", p.EthType)
	}
	fmt.Fprintf(&b, " in_port=%s dl_src=%v dl_dst=%v", portString(p.InPort),
		net.HardwareAddr(p.EthSrc[:]), net.HardwareAddr(p.EthDst[:]))
	return b.String()
}

var reservedPorts = map[uint32]string{
	ofp.PortInPort: "IN_PORT", ofp.PortTable: "TABLE", ofp.PortNormal: "NORMAL", ofp.PortFlood: "FLOOD",
	ofp.PortAll: "ALL", ofp.PortController: "CONTROLLER", ofp.PortLocal: "LOCAL", ofp.PortAny: "ANY",
}

// portString names reserved ports as ovs-ofctl does.
func portString(port uint32) string {
	if name, ok := reservedPorts[port]; ok {
		return name
	}
	return strconv.FormatUint(uint64(port), 10)
}
