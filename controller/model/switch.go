package model

import (
	"cmp"
	"net"
)

// SwitchFeatures is what the handshake learned the switch's pipeline can
// do, which shapes the rows it gets.
type SwitchFeatures struct {
	// Groups: select groups, and the connection tracker with them, so the
	// switch dispatches SWITCH pools itself.
	Groups bool
	// OneTable: one flow table and no Nicira actions (OpenFlow 1.0). The
	// L2 table's rows go to table 0 below every other row, and the
	// controller answers ARP for VIPs.
	OneTable bool
	// Nicira: the switch takes Open vSwitch's Nicira matches, so it gets
	// the controller punts that match TCP flags (ControllerPunts); on
	// OpenFlow 1.0 they come through Nicira's flow-mods and flow reads,
	// which also select flows by cookie. On 1.3 it goes with Groups.
	Nicira bool
}

// PortRef is one port of one switch.
type PortRef struct {
	DPID uint64
	Port uint32
}

func ComparePortRef(a, b PortRef) int {
	return cmp.Or(cmp.Compare(a.DPID, b.DPID), cmp.Compare(a.Port, b.Port))
}

func MACString(mac [6]byte) string { return net.HardwareAddr(mac[:]).String() }

// FormatDPID writes a datapath id as Floodlight does: 8 colon-separated
// hex bytes.
func FormatDPID(dpid uint64) string {
	const hex = "0123456789abcdef"
	var b [23]byte
	for i := range 8 {
		v := byte(dpid >> (56 - 8*i))
		if i > 0 {
			b[3*i-1] = ':'
		}
		b[3*i], b[3*i+1] = hex[v>>4], hex[v&0xf]
	}
	return string(b[:])
}
