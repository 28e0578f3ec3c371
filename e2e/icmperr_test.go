//go:build e2e

package e2e

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// tooBigCounter reads how many "packet too big" errors h took in (for
// IPv4, destination unreachable, of which fragmentation needed is one).
func tooBigCounter(tb testing.TB, h *Host, v6 bool) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	file, name := "/proc/net/snmp", "InDestUnreachs"
	if v6 {
		file, name = "/proc/net/snmp6", "Icmp6InPktTooBigs"
	}
	out, err := h.Exec(ctx, "cat", file)
	if err != nil {
		tb.Fatal(err)
	}
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		f := strings.Fields(l)
		if v6 && len(f) == 2 && f[0] == name {
			n, _ := strconv.Atoi(f[1])
			return n
		}
		if !v6 && len(f) > 0 && f[0] == "Icmp:" && i+1 < len(lines) {
			values := strings.Fields(lines[i+1])
			for j, n := range f {
				if n == name && j < len(values) {
					v, _ := strconv.Atoi(values[j])
					return v
				}
			}
		}
	}
	tb.Fatalf("no %s in %s of %s", name, file, h.Name)
	return 0
}

// sendTooBig has c tell vip, as a router on the way would, that the reply
// vip:vipPort → c:clientPort was too big for the path.
func sendTooBig(tb testing.TB, c *Host, vip, client netip.AddrPort) {
	tb.Helper()
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], vip.Port())
	binary.BigEndian.PutUint16(tcp[2:], client.Port())
	tcp[12], tcp[13] = 5<<4, 0x10 // ACK
	var network string
	var msg []byte
	if vip.Addr().Is6() {
		network = "ip6:ipv6-icmp"
		inner := append([]byte{0x60, 0, 0, 0, 0, 20, 6, 64}, vip.Addr().AsSlice()...)
		inner = append(append(inner, client.Addr().AsSlice()...), tcp...)
		msg = append([]byte{2, 0, 0, 0, 0, 0, 0x05, 0x00}, inner...) // MTU 1280; the kernel fills the checksum in
	} else {
		network = "ip4:icmp"
		inner := append([]byte{0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0}, vip.Addr().AsSlice()...)
		inner = append(append(inner, client.Addr().AsSlice()...), tcp...)
		binary.BigEndian.PutUint16(inner[10:], inetChecksum(inner[:20]))
		msg = append([]byte{3, 4, 0, 0, 0, 0, 0x03, 0xe8}, inner...) // fragmentation needed, MTU 1000
		binary.BigEndian.PutUint16(msg[2:], inetChecksum(msg))
	}
	conn, err := c.ListenPacket(network, "")
	if err != nil {
		tb.Fatalf("raw ICMP socket on %s: %v", c.Name, err)
	}
	defer conn.Close()
	if _, err := conn.WriteTo(msg, &net.IPAddr{IP: vip.Addr().AsSlice()}); err != nil {
		tb.Fatalf("send the error to %s: %v", vip.Addr(), err)
	}
}

func inetChecksum(b []byte) uint16 {
	var sum uint32
	for ; len(b) >= 2; b = b[2:] {
		sum += uint32(b[0])<<8 | uint32(b[1])
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}

// An ICMP error that a reply through a VIP was too big for the path
// reaches the member that sent the reply, and no other, in both families,
// both dispatches and both forwardings: the switch's tracker relates it to
// a SWITCH connection, the controller finds a CONTROLLER connection's flow
// in the switch, and sends it on.
func TestICMPError_TooBigReachesMember(t *testing.T) {
	sw := NewSwitch(t)
	c := sw.AddHost(t, "c1", sw.Addr(1))
	var hosts []*Host
	byName := map[string]*Host{}
	for i := range 2 {
		name := "srv" + strconv.Itoa(i+1)
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		h.ServeHTTP(t, memberPort, name)
		h.ServeHTTP(t, dualDSRPort, name)
		hosts, byName[name] = append(hosts, h), h
	}
	lb := startSDNLB(t)
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	n, buckets := 0, 0
	for _, f := range families {
		for _, d := range sdnlb.Dispatches {
			for _, fwd := range []sdnlb.Forwarding{sdnlb.ForwardingNAT, sdnlb.ForwardingDSR} {
				t.Run(f.name+"/"+string(d)+"/"+string(fwd), func(t *testing.T) {
					n++
					addr, port, memberPort := f.addr(sw, byte(100+n)), vipPort, memberPort
					if fwd == sdnlb.ForwardingDSR {
						port, memberPort = dualDSRPort, 0
						for _, h := range hosts {
							h.HoldVIP(t, addr)
						}
					}
					vip := lb.MustCreateVIP(strconv.Itoa(n), addr, sdnlb.ProtocolTCP, port, nil)
					var pool sdnlb.Pool
					lb.MustAPI("POST", "/v1/pools", map[string]any{"name": vip.Name, "vip_id": vip.ID, "lb_method": sdnlb.RoundRobin,
						"protocol": sdnlb.ProtocolTCP, "dispatch": d, "forwarding": fwd}, 201, &pool)
					for _, h := range hosts {
						lb.MustCreateMember(&pool, f.hostIP(h), memberPort)
					}
					lb.WaitPoolMembers(pool.ID, len(hosts), 10*time.Second)
					if d == sdnlb.DispatchSwitch {
						buckets += len(hosts)
						(&lbBed{sw: sw}).waitBuckets(t, buckets, 10*time.Second)
					}

					k := keepOpen(t, c, net.JoinHostPort(addr, strconv.Itoa(port)))
					client := netip.MustParseAddrPort(k.conn.LocalAddr().String())
					v6 := client.Addr().Is6()
					before := map[*Host]int{}
					for _, h := range hosts {
						before[h] = tooBigCounter(t, h, v6)
					}
					sendTooBig(t, c, netip.AddrPortFrom(netip.MustParseAddr(addr), uint16(port)), client)
					member := byName[k.member]
					for deadline := time.Now().Add(5 * time.Second); tooBigCounter(t, member, v6) == before[member]; {
						if time.Now().After(deadline) {
							t.Fatalf("%s, which holds the connection, took no error in 5 s", k.member)
						}
						time.Sleep(50 * time.Millisecond)
					}
					for _, h := range hosts {
						if h != member && tooBigCounter(t, h, v6) != before[h] {
							t.Errorf("%s, which does not hold the connection, took the error too", h.Name)
						}
					}
				})
			}
		}
	}
}
