package flowhash

import (
	"net/netip"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// goldens are three packets' hashes by the source address and by the
// connection (basis 0), as Open vSwitch 3.1.0 computes them: ofproto/trace
// of a flow that stores them in registers (TestOVS_HashesAgree checks
// them, and many more packets).
var client, vip = [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 0x64}

var goldens = []struct {
	name      string
	flow      Flow
	src, conn uint32
}{
	{"TCPv4", Flow{EthSrc: client, EthDst: vip, EthType: ofp.EthTypeIPv4, Src: netip.MustParseAddr("10.0.0.1"),
		Dst: netip.MustParseAddr("10.0.0.100"), Proto: ofp.IPProtoTCP, SrcPort: 40000, DstPort: 80}, 0x2fa5f781, 0xc76efd83},
	{"UDPv4", Flow{EthSrc: client, EthDst: vip, EthType: ofp.EthTypeIPv4, Src: netip.MustParseAddr("10.0.0.1"),
		Dst: netip.MustParseAddr("10.0.0.100"), Proto: ofp.IPProtoUDP, SrcPort: 40000, DstPort: 53}, 0x2fa5f781, 0x57f23815},
	{"TCPv6", Flow{EthSrc: client, EthDst: vip, EthType: ofp.EthTypeIPv6, Src: netip.MustParseAddr("2001:db8::1"),
		Dst: netip.MustParseAddr("2001:db8::100"), Proto: ofp.IPProtoTCP, SrcPort: 40000, DstPort: 443}, 0x0e5b0adb, 0x333ed5e0},
}

func TestHash_Golden(t *testing.T) {
	for _, tt := range goldens {
		t.Run(tt.name, func(t *testing.T) {
			if got := Hash(&tt.flow, ofp.HashFieldsNWSrc, 0); got != tt.src {
				t.Errorf("nw_src hash %#08x, want %#08x", got, tt.src)
			}
			if got := Hash(&tt.flow, ofp.HashFieldsSymmetricL4, 0); got != tt.conn {
				t.Errorf("symmetric_l4 hash %#08x, want %#08x", got, tt.conn)
			}
		})
	}
}

// symmetric_l4 hashes both directions of a connection alike; UDP's ports
// are left out of it, TCP's are not.
func TestHash_SymmetricL4(t *testing.T) {
	f := Flow{EthSrc: [6]byte{2, 0, 0, 0, 0, 1}, EthDst: [6]byte{2, 0, 0, 0, 0, 2}, EthType: ofp.EthTypeIPv6,
		Src: netip.MustParseAddr("2001:db8::1"), Dst: netip.MustParseAddr("2001:db8::2"), Proto: ofp.IPProtoTCP, SrcPort: 40000, DstPort: 80}
	back := Flow{EthSrc: f.EthDst, EthDst: f.EthSrc, EthType: f.EthType, Src: f.Dst, Dst: f.Src, Proto: f.Proto, SrcPort: f.DstPort, DstPort: f.SrcPort}
	if a, b := Hash(&f, ofp.HashFieldsSymmetricL4, 0), Hash(&back, ofp.HashFieldsSymmetricL4, 0); a != b {
		t.Errorf("a connection's directions hash to %#x and %#x", a, b)
	}
	other := f
	other.SrcPort++
	if Hash(&f, ofp.HashFieldsSymmetricL4, 0) == Hash(&other, ofp.HashFieldsSymmetricL4, 0) {
		t.Error("two TCP connections of one client hash alike")
	}
	f.Proto, other.Proto = ofp.IPProtoUDP, ofp.IPProtoUDP
	if Hash(&f, ofp.HashFieldsSymmetricL4, 0) != Hash(&other, ofp.HashFieldsSymmetricL4, 0) {
		t.Error("UDP's ports changed the hash")
	}
}

// Link is the hash modulo the links, for the fields and algorithm it
// supports, and 0 for the others.
func TestLink(t *testing.T) {
	f := Flow{EthType: ofp.EthTypeIPv4, Src: netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.100")}
	a := ofp.ActionMultipath{Fields: ofp.HashFieldsNWSrc, Algorithm: ofp.MultipathModuloN, MaxLink: 255}
	if got, want := Link(a, &f), uint16(0x2fa5f781%256); got != want {
		t.Errorf("link %d, want %d", got, want)
	}
	a.Algorithm = 2 // hrw
	if Supported(a) || Link(a, &f) != 0 {
		t.Errorf("hrw supported, or linked to %d", Link(a, &f))
	}
}
