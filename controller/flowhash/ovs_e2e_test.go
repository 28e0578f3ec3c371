//go:build e2e

package flowhash

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/internal/testbed"
)

// Open vSwitch computes the same hashes: a flow stores, for the source
// address and for the connection, the low 16 bits of the hash (modulo_n
// over 65,536 links) and its high 16 bits (hash_threshold over as many)
// in registers, and ofproto/trace shows them for packets of both families
// and of TCP, UDP and ICMP, with the basis sdnlb uses (0) and another.
func TestOVS_HashesAgree(t *testing.T) {
	sw := testbed.NewSwitch(t)
	const basis = 4242
	mp := func(fields string, basis int, alg string, reg int) string {
		return fmt.Sprintf("multipath(%s,%d,%s,65536,0,reg%d[0..15])", fields, basis, alg, reg)
	}
	sw.Ofctl("add-flow", "priority=10,ip,actions="+mp("nw_src", 0, "modulo_n", 1)+","+mp("nw_src", 0, "hash_threshold", 2)+","+
		mp("symmetric_l4", 0, "modulo_n", 3)+","+mp("symmetric_l4", 0, "hash_threshold", 4)+","+
		mp("nw_src", basis, "modulo_n", 5)+","+mp("symmetric_l4", basis, "modulo_n", 6))
	sw.Ofctl("add-flow", "priority=10,ipv6,actions="+mp("nw_src", 0, "modulo_n", 1)+","+mp("nw_src", 0, "hash_threshold", 2)+","+
		mp("symmetric_l4", 0, "modulo_n", 3)+","+mp("symmetric_l4", 0, "hash_threshold", 4)+","+
		mp("nw_src", basis, "modulo_n", 5)+","+mp("symmetric_l4", basis, "modulo_n", 6))

	r := rand.New(rand.NewPCG(30, 1))
	mac := func() (m [6]byte) {
		for i := range m {
			m[i] = byte(r.Uint32())
		}
		m[0] &^= 1 // unicast
		return m
	}
	addr := func(v6 bool) netip.Addr {
		if v6 {
			var a [16]byte
			for i := range a {
				a[i] = byte(r.Uint32())
			}
			a[0] = 0x20
			return netip.AddrFrom16(a)
		}
		return netip.AddrFrom4([4]byte{10, byte(r.Uint32()), byte(r.Uint32()), byte(1 + r.IntN(254))})
	}
	agree, total := 0, 0
	for _, g := range goldens {
		regs := trace(t, sw, &g.flow)
		if got := regs[1] | regs[2]<<16; got != g.src {
			t.Errorf("%s: Open vSwitch's nw_src hash %#08x, the golden %#08x", g.name, got, g.src)
		}
		if got := regs[3] | regs[4]<<16; got != g.conn {
			t.Errorf("%s: Open vSwitch's symmetric_l4 hash %#08x, the golden %#08x", g.name, got, g.conn)
		}
	}
	for _, v6 := range []bool{false, true} {
		for _, proto := range []uint8{ofp.IPProtoTCP, ofp.IPProtoUDP, 1} {
			for range 100 {
				f := Flow{EthSrc: mac(), EthDst: mac(), EthType: ofp.EthTypeIPv4, Src: addr(v6), Dst: addr(v6), Proto: proto}
				if v6 {
					f.EthType = ofp.EthTypeIPv6
					if proto == 1 {
						f.Proto = ofp.IPProtoICMPv6
					}
				}
				if proto != 1 {
					f.SrcPort, f.DstPort = uint16(1024+r.IntN(64000)), uint16(1+r.IntN(65535))
				}
				regs := trace(t, sw, &f)
				src, conn := Hash(&f, ofp.HashFieldsNWSrc, 0), Hash(&f, ofp.HashFieldsSymmetricL4, 0)
				want := [7]uint32{0, src & 0xffff, src >> 16, conn & 0xffff, conn >> 16,
					Hash(&f, ofp.HashFieldsNWSrc, basis) & 0xffff, Hash(&f, ofp.HashFieldsSymmetricL4, basis) & 0xffff}
				total++
				if regs != want {
					t.Errorf("%+v: Open vSwitch's registers %x, Go's %x", f, regs[1:], want[1:])
					continue
				}
				agree++
			}
		}
	}
	t.Logf("Open vSwitch and Go agree on all 6 hashes of %d of %d packets", agree, total)
}

// trace has Open vSwitch trace f through the bridge's flows and returns
// the registers of the final flow.
func trace(t *testing.T, sw *testbed.Switch, f *Flow) (regs [7]uint32) {
	t.Helper()
	name := map[uint8]string{ofp.IPProtoTCP: "tcp", ofp.IPProtoUDP: "udp", 1: "icmp", ofp.IPProtoICMPv6: "icmp6"}[f.Proto]
	spec := fmt.Sprintf("in_port=LOCAL,dl_src=%s,dl_dst=%s", macString(f.EthSrc), macString(f.EthDst))
	if f.EthType == ofp.EthTypeIPv6 {
		if f.Proto != ofp.IPProtoICMPv6 {
			name += "6"
		}
		spec += fmt.Sprintf(",%s,ipv6_src=%s,ipv6_dst=%s", name, f.Src, f.Dst)
	} else {
		spec += fmt.Sprintf(",%s,nw_src=%s,nw_dst=%s", name, f.Src, f.Dst)
	}
	if f.Proto == ofp.IPProtoTCP || f.Proto == ofp.IPProtoUDP {
		name = strings.TrimSuffix(name, "6")
		spec += fmt.Sprintf(",%s_src=%d,%s_dst=%d", name, f.SrcPort, name, f.DstPort)
	}
	out := sw.Appctl("ofproto/trace", sw.Name, spec)
	for _, m := range regRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		v, _ := strconv.ParseUint(m[2], 16, 32)
		if n < len(regs) {
			regs[n] = uint32(v) // the final flow's, printed last
		}
	}
	return regs
}

var regRE = regexp.MustCompile(`\breg(\d)=0x([0-9a-f]+)`)

func macString(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}
