package health

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// netError is a probe that failed on the network, as opposed to a member
// or monitor that cannot be probed at all; local is the local address of
// the probe's connection, invalid when none opened.
type netError struct {
	local netip.Addr
	err   error
}

func (e *netError) Error() string { return e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

// hostAddrsTTL bounds how often failing probes read the host's interface
// addresses again: with thousands of members down, a read per probe would
// be thousands of netlink dumps a second.
const hostAddrsTTL = time.Second

// routes says where probes leave this host, in the errors of failed probes,
// so that a member no route reaches, or one that a stranger answers (a 404
// from a host on the default route), reads as the network problem it is.
type routes struct {
	// source returns the local address the host's routing picks to reach
	// an address; hostAddrs lists the host's interface addresses. Tests
	// replace both.
	source    func(to netip.Addr) (netip.Addr, error)
	hostAddrs func() ([]ifaceAddr, error)

	mu     sync.Mutex
	readAt time.Time
	addrs  []ifaceAddr
}

// ifaceAddr is one address of an interface, with its prefix length.
type ifaceAddr struct {
	name   string
	prefix netip.Prefix
}

func newRoutes() *routes {
	return &routes{source: routeSource, hostAddrs: hostAddrs}
}

// explain adds to a network failure of a probe to member the address and
// interface the probe left from, and why the path is the likely culprit:
// no route at all, a member behind a gateway (on none of that interface's
// subnets), or a member on the subnet that no one answers ARP for. Other
// errors come back as they are.
func (r *routes) explain(err error, member netip.Addr) error {
	var ne *netError
	if !errors.As(err, &ne) || !member.IsValid() {
		return err
	}
	local := ne.local
	if !local.IsValid() {
		var rerr error
		if local, rerr = r.source(member); rerr != nil {
			if errors.Is(rerr, syscall.ENETUNREACH) {
				return fmt.Errorf("%w (this host has no route to %s)", err, member)
			}
			return err
		}
	}
	iface, onLink := r.lookup(local, member)
	switch {
	case iface == "":
		return fmt.Errorf("%w (probed from %s)", err, local)
	case !onLink:
		return fmt.Errorf("%w (probed from %s on %s, through a gateway: %s is on none of %s's subnets)",
			err, local, iface, member, iface)
	case errors.Is(err, syscall.EHOSTUNREACH):
		return fmt.Errorf("%w (probed from %s on %s: nothing there answers %s for %s)", err, local, iface, resolution(member), member)
	default:
		return fmt.Errorf("%w (probed from %s on %s)", err, local, iface)
	}
}

// resolution names how a host finds the link address of an on-link member.
func resolution(member netip.Addr) string {
	if member.Is4() {
		return "ARP"
	}
	return "neighbour solicitations"
}

// lookup returns the interface that holds local, and whether member is on
// one of its subnets.
func (r *routes) lookup(local, member netip.Addr) (iface string, onLink bool) {
	addrs := r.cachedAddrs()
	for _, a := range addrs {
		if a.prefix.Addr() == local {
			iface = a.name
			break
		}
	}
	member = member.WithZone("") // a prefix contains no zoned address
	for _, a := range addrs {
		if a.name == iface && a.prefix.Contains(member) {
			return iface, true
		}
	}
	return iface, false
}

func (r *routes) cachedAddrs() []ifaceAddr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.readAt) < hostAddrsTTL {
		return r.addrs
	}
	addrs, err := r.hostAddrs()
	if err != nil {
		addrs = nil // the errors then name the address without its interface
	}
	r.addrs, r.readAt = addrs, time.Now()
	return addrs
}

// routeSource asks the kernel which source address reaches to. Connecting a
// UDP socket sends nothing: it only looks up the route.
func routeSource(to netip.Addr) (netip.Addr, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(to, 9)))
	if err != nil {
		return netip.Addr{}, unwrapOp(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}

func hostAddrs() ([]ifaceAddr, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []ifaceAddr
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipn.IP)
			if !ok {
				continue
			}
			ones, _ := ipn.Mask.Size()
			out = append(out, ifaceAddr{name: ifc.Name, prefix: netip.PrefixFrom(ip.Unmap(), ones)})
		}
	}
	return out, nil
}
