package bgp

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Options configure a Speaker.
type Options struct {
	ASN      uint32     // this node's AS
	RouterID netip.Addr // IPv4, unique among the routers' peers
	Peers    []Peer
	// NextHops name the edges: a switch without a next hop of a VIP's
	// family is not announced for it.
	NextHops []NextHop
	// GracefulRestart is the restart time asked of the peers (RFC 4724):
	// while this node restarts, or is stopped, they keep its routes that
	// long. 0 turns graceful restart off: a stopped node's routes go at
	// once.
	GracefulRestart time.Duration
	Logger          *slog.Logger // nil: discard
	Registerer      prometheus.Registerer
}

// MaxGracefulRestart is the longest restart time BGP can carry (12 bits
// of seconds).
const MaxGracefulRestart = 4095 * time.Second

// DefaultPort is BGP's TCP port.
const DefaultPort = 179

// Peer is a router this node opens a session to.
type Peer struct {
	Addr netip.Addr
	Port uint16 // DefaultPort unless set
	ASN  uint32
}

func (p Peer) String() string { return netip.AddrPortFrom(p.Addr, p.Port).String() }

// ParsePeers reads the peers of --bgp-peers: comma-separated ADDR=ASN,
// where ADDR is an address, or an address and port (192.0.2.1:1179,
// [2001:db8::1]:1179).
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	for _, item := range splitList(s) {
		addr, asn, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want ADDR=ASN", item)
		}
		p := Peer{Port: DefaultPort}
		if ap, err := netip.ParseAddrPort(addr); err == nil {
			if ap.Port() == 0 {
				return nil, fmt.Errorf("%q: port 0", item)
			}
			p.Addr, p.Port = ap.Addr(), ap.Port()
		} else if a, err := netip.ParseAddr(addr); err == nil {
			p.Addr = a
		} else {
			return nil, fmt.Errorf("%q: %q is not an address, nor an address and port", item, addr)
		}
		if p.Addr = p.Addr.Unmap(); p.Addr.Zone() != "" || !p.Addr.IsGlobalUnicast() && !p.Addr.IsLoopback() {
			return nil, fmt.Errorf("%q: %s is not a unicast address", item, p.Addr)
		}
		n, err := parseASN(asn)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		p.ASN = n
		for _, q := range peers {
			if q.Addr == p.Addr {
				return nil, fmt.Errorf("%q: %s is named twice", item, p.Addr)
			}
		}
		peers = append(peers, p)
	}
	return peers, nil
}

// ParseNextHops reads the next hops of --bgp-next-hops: comma-separated
// DPID=ADDR, the datapath id in 16 hex digits (colons between the bytes
// optional), at most one address of each family per switch.
func ParseNextHops(s string) ([]NextHop, error) {
	var hops []NextHop
	for _, item := range splitList(s) {
		dpid, addr, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want DPID=ADDR", item)
		}
		id, err := parseDPID(dpid)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		a, err := netip.ParseAddr(strings.TrimSpace(addr))
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q: %q is not an address", item, addr)
		}
		if a = a.Unmap(); !a.IsGlobalUnicast() {
			return nil, fmt.Errorf("%q: %s is not a unicast address the routers can reach", item, a)
		}
		for _, h := range hops {
			if h.DPID == id && h.Addr.Is4() == a.Is4() {
				return nil, fmt.Errorf("%q: switch %s has a next hop of that family already (%s)", item, id, h.Addr)
			}
		}
		hops = append(hops, NextHop{DPID: id, Addr: a})
	}
	return hops, nil
}

// parseASN reads an AS number, 1-4294967295 (AS 0 is reserved).
func parseASN(s string) (uint32, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("AS %q: want 1-4294967295", s)
	}
	return uint32(n), nil
}

// parseDPID reads a datapath id and writes it as sdnlb.Switch.DPID does.
func parseDPID(s string) (string, error) {
	hex := strings.ReplaceAll(strings.TrimSpace(s), ":", "")
	v, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || hex == "" || len(hex) > 16 {
		return "", fmt.Errorf("datapath id %q: want 16 hex digits (00:00:00:00:00:00:00:01)", s)
	}
	var b strings.Builder
	for i := range 8 {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02x", byte(v>>(56-8*i)))
	}
	return b.String(), nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
