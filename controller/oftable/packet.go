package oftable

import (
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

// EtherTypes and IP protocols the model knows.
const (
	ethTypeIPv4 uint16 = 0x0800
	ethTypeARP  uint16 = 0x0806

	protoICMP uint8 = 1
	protoTCP  uint8 = 6
	protoUDP  uint8 = 17
)

// Packet is the header fields a flow can match and an action can rewrite.
// Packets are untagged: a match on vlan_vid sees OFPVID_NONE. Fields of
// layers the packet does not have are zero; the prerequisites Apply
// enforces keep a flow from reading them.
type Packet struct {
	InPort             uint32
	Metadata           uint64 // what the tables' write_metadata wrote
	EthSrc, EthDst     [6]byte
	EthType            uint16
	ARPOp              uint16
	ARPSHA, ARPTHA     [6]byte
	ARPSPA, ARPTPA     [4]byte
	IPProto            uint8
	IPv4Src, IPv4Dst   [4]byte
	L4Src, L4Dst       uint16 // TCP or UDP ports
	ICMPType, ICMPCode uint8
}

// ErrVLAN is ParseFrame's error for an 802.1Q or 802.1ad tagged frame,
// which Packet cannot represent.
var ErrVLAN = errors.New("oftable: VLAN-tagged frames are not modelled")

// ParseFrame reads the fields of an Ethernet frame that arrived on
// inPort: ARP, and IPv4 with TCP, UDP or ICMPv4. Other EtherTypes and IP
// protocols leave the fields past them zero.
func ParseFrame(inPort uint32, frame []byte) (Packet, error) {
	var (
		eth  layers.Ethernet
		arp  layers.ARP
		ip   layers.IPv4
		tcp  layers.TCP
		udp  layers.UDP
		icmp layers.ICMPv4
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &eth, &arp, &ip, &tcp, &udp, &icmp)
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
		case layers.LayerTypeUDP:
			p.L4Src, p.L4Dst = uint16(udp.SrcPort), uint16(udp.DstPort)
		case layers.LayerTypeICMPv4:
			p.ICMPType, p.ICMPCode = icmp.TypeCode.Type(), icmp.TypeCode.Code()
		}
	}
	return p, nil
}

// String renders p briefly, for test failures: the protocol and its
// addresses, then in_port and the MACs, for example
// "tcp 10.0.1.5:40000 > 10.0.0.100:80 in_port=10 dl_src=02:00:00:00:00:01 dl_dst=02:00:00:00:00:02".
func (p Packet) String() string {
	var b strings.Builder
	ip := func(a [4]byte) string { return netip.AddrFrom4(a).String() }
	switch {
	case p.EthType == ethTypeARP:
		fmt.Fprintf(&b, "arp op=%d %s (%v) > %s (%v)", p.ARPOp, ip(p.ARPSPA), net.HardwareAddr(p.ARPSHA[:]),
			ip(p.ARPTPA), net.HardwareAddr(p.ARPTHA[:]))
	case p.EthType == ethTypeIPv4 && (p.IPProto == protoTCP || p.IPProto == protoUDP):
		name := "tcp"
		if p.IPProto == protoUDP {
			name = "udp"
		}
		fmt.Fprintf(&b, "%s %s:%d > %s:%d", name, ip(p.IPv4Src), p.L4Src, ip(p.IPv4Dst), p.L4Dst)
	case p.EthType == ethTypeIPv4 && p.IPProto == protoICMP:
		fmt.Fprintf(&b, "icmp %s > %s type=%d code=%d", ip(p.IPv4Src), ip(p.IPv4Dst), p.ICMPType, p.ICMPCode)
	case p.EthType == ethTypeIPv4:
		fmt.Fprintf(&b, "ip proto=%d %s > %s", p.IPProto, ip(p.IPv4Src), ip(p.IPv4Dst))
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
