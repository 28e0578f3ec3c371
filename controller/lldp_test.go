package controller

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
)

func TestLLDP_RoundTrip(t *testing.T) {
	src := [6]byte{0x02, 0, 0, 0, 0, 7}
	for _, c := range []struct {
		dpid uint64
		port uint32
	}{{1, 1}, {0xfedcba9876543210, 0xfffffeff}, {0, 0}} {
		frame := appendLLDP(nil, src, c.dpid, c.port)
		dpid, port, ok := parseLLDP(frame)
		if !ok || dpid != c.dpid || port != c.port {
			t.Fatalf("parseLLDP(appendLLDP(%x, %d)) = %x, %d, %v", c.dpid, c.port, dpid, port, ok)
		}
		// A standard decoder reads it as LLDP too.
		p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
		eth := testnet.LayerOf[*layers.Ethernet](t, p)
		if eth.DstMAC.String() != "01:80:c2:00:00:0e" || eth.SrcMAC.String() != net.HardwareAddr(src[:]).String() {
			t.Fatalf("ethernet %s → %s", eth.SrcMAC, eth.DstMAC)
		}
		l := testnet.LayerOf[*layers.LinkLayerDiscovery](t, p)
		if l.ChassisID.Subtype != layers.LLDPChassisIDSubTypeLocal || l.PortID.Subtype != layers.LLDPPortIDSubtypeLocal || l.TTL != 3 {
			t.Fatalf("lldp %+v", l)
		}
	}
}

func TestLLDP_Ignored(t *testing.T) {
	ours := appendLLDP(nil, [6]byte{2}, 1, 2)
	// Another LLDP speaker: a host's lldpd names its chassis by MAC.
	other := testnet.Serialize(t, &layers.Ethernet{SrcMAC: testnet.MustMAC(t, "02:00:00:00:00:09"), DstMAC: testnet.MustMAC(t, "01:80:c2:00:00:0e"), EthernetType: layers.EthernetTypeLinkLayerDiscovery},
		&layers.LinkLayerDiscovery{
			ChassisID: layers.LLDPChassisID{Subtype: layers.LLDPChassisIDSubTypeMACAddr, ID: []byte{2, 0, 0, 0, 0, 9}},
			PortID:    layers.LLDPPortID{Subtype: layers.LLDPPortIDSubtypeIfaceName, ID: []byte("eth0")},
			TTL:       120,
		})
	if _, _, ok := parseLLDP(other); ok {
		t.Fatal("another speaker's frame was read as sdnlb's")
	}
	for n := range len(ours) {
		if _, _, ok := parseLLDP(ours[:n]); ok && n < 14+2+23+2+2+2+2 {
			t.Fatalf("a frame truncated to %d bytes was read", n)
		}
	}
}
