package testbed

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// nsWorkers is how many OS threads per host sit in the host's namespace and
// create sockets there. Dials run whole on a worker, so this bounds how many
// connects to one host can be in flight at once.
const nsWorkers = 16

// Host is a network namespace joined to a switch (Switch.AddHost) or a
// router (Router.AddHost) by a veth pair.
type Host struct {
	Name string // as given to AddHost
	IP   string
	IP6  string // the IPv6 twin of IP: Switch.Addr6 of IP's last byte
	MAC  net.HardwareAddr
	// OFPort is the OpenFlow port number of the host's veth on the bridge.
	OFPort int
	// NetNS is the namespace name, for "ip netns exec".
	NetNS string
	// Link is the other end of the veth: the bridge port, in the root
	// namespace, or the router's interface, in the router's.
	Link string

	tb        TB
	sw        *Switch // nil for a router's host
	jobs      chan func()
	stop      chan struct{}
	closeOnce sync.Once
}

// AddHost creates a namespace with eth0 at ip/24 and its IPv6 twin /64
// plugged into the bridge, with checksum offload off on both veth ends (the
// userspace datapath does not fill in checksums) and the client sysctls
// that let a namespace open many short connections. ip must lie in
// s.Subnet: use s.Addr.
func (s *Switch) AddHost(tb TB, name, ip string) *Host {
	tb.Helper()
	if s.NetNS != "" {
		tb.Fatalf("switch %s is a separate switch: it takes no hosts", s.Name)
	}
	if !validHostName(name) {
		tb.Fatalf("host name %q: use 1-20 letters, digits, '-' or '_'", name)
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil || !s.Subnet.Contains(addr) {
		tb.Fatalf("host %s: address %q is not in the switch subnet %s (use Switch.Addr)", name, ip, s.Subnet)
	}
	s.mu.Lock()
	idx := len(s.hosts)
	s.mu.Unlock()
	suffix := strconv.FormatInt(int64(idx), 36)
	h := &Host{
		Name:  name,
		IP:    ip,
		IP6:   s.Addr6(addr.As4()[3]),
		NetNS: s.prefix + "-" + name,
		Link:  s.prefix + "v" + suffix,
		tb:    tb,
		sw:    s,
	}
	s.mu.Lock()
	s.hosts = append(s.hosts, h)
	s.mu.Unlock()

	peer := s.prefix + "n" + suffix
	mustRunCmd(tb, "ip", "netns", "add", h.NetNS)
	mustRunCmd(tb, "ip", "link", "add", h.Link, "type", "veth", "peer", "name", peer, "netns", h.NetNS)
	mustRunCmd(tb, "ip", "-n", h.NetNS, "link", "set", peer, "name", "eth0")
	disableIPv6(tb, "", h.Link)
	// The root namespace owns the bridge's LOCAL address; without this its
	// kernel would also answer ARP for it on every host's veth, with the
	// veth's MAC, and hosts would send the controller's probes' replies
	// to the wrong port.
	mustRunCmd(tb, "sysctl", "-q", "-w", "net.ipv4.conf."+h.Link+".arp_ignore=1")
	quietIPv6(tb, h.NetNS, "eth0")
	mustRunCmd(tb, "ethtool", "-K", h.Link, "tx", "off")
	mustRunCmd(tb, "ip", "netns", "exec", h.NetNS, "ethtool", "-K", "eth0", "tx", "off")
	mustRunCmd(tb, "ip", "netns", "exec", h.NetNS, "sh", "-c",
		"echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse && echo '1024 65535' > /proc/sys/net/ipv4/ip_local_port_range")
	mustRunCmd(tb, "ip", "-n", h.NetNS, "addr", "add", ip+"/24", "dev", "eth0")
	mustRunCmd(tb, "ip", "-n", h.NetNS, "addr", "add", h.IP6+"/64", "dev", "eth0", "nodad")
	mustRunCmd(tb, "ip", "-n", h.NetNS, "link", "set", "eth0", "up")
	mustRunCmd(tb, "ip", "-n", h.NetNS, "link", "set", "lo", "up")
	mustRunCmd(tb, "ip", "link", "set", h.Link, "up")
	s.Vsctl("add-port", s.Name, h.Link)

	h.MAC = h.readMAC(tb)
	h.OFPort = s.ofport(tb, h.Link)
	h.startWorkers(tb)
	return h
}

// validHostName keeps names usable as part of a namespace name.
func validHostName(name string) bool {
	if name == "" || len(name) > 20 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func (h *Host) readMAC(tb TB) net.HardwareAddr {
	tb.Helper()
	out := mustRunCmd(tb, "ip", "-j", "-n", h.NetNS, "link", "show", "eth0")
	var links []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil || len(links) != 1 {
		tb.Fatalf("host %s: parse MAC from %q: %v", h.Name, out, err)
	}
	mac, err := net.ParseMAC(links[0].Address)
	if err != nil {
		tb.Fatalf("host %s: %v", h.Name, err)
	}
	return mac
}

// ofport waits until ovs-vswitchd has numbered the port (-1 or [] before).
func (s *Switch) ofport(tb TB, iface string) int {
	tb.Helper()
	deadline := time.Now().Add(cmdTimeout)
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		out := strings.TrimSpace(s.Vsctl("get", "Interface", iface, "ofport"))
		if n, err := strconv.Atoi(out); err == nil && n > 0 {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("port %s got no OpenFlow port number", iface)
	return 0
}

// startWorkers starts threads that enter the host namespace with setns and
// then only run jobs. A socket belongs to the namespace of the thread that
// created it, for its whole life. The threads never leave the namespace: a
// goroutine that exits while locked takes its thread with it, so no other
// goroutine ever runs in the namespace by accident.
func (h *Host) startWorkers(tb TB) {
	tb.Helper()
	nsFile, err := os.Open("/run/netns/" + h.NetNS)
	if err != nil {
		tb.Fatalf("host %s: %v", h.Name, err)
	}
	defer nsFile.Close()
	h.jobs = make(chan func())
	h.stop = make(chan struct{})
	ready := make(chan error, nsWorkers)
	for i := 0; i < nsWorkers; i++ {
		go h.nsWorker(int(nsFile.Fd()), ready, nil)
	}
	for i := 0; i < nsWorkers; i++ {
		if err := <-ready; err != nil {
			tb.Fatalf("host %s: setns: %v", h.Name, err)
		}
	}
}

// nsWorker runs jobs on a thread in the namespace behind nsFD. The main
// thread is never used: Go does not end it when a locked goroutine exits, and
// it would stay in the namespace. A worker that lands there keeps it locked
// until a replacement has locked another thread, then gives it back.
func (h *Host) nsWorker(nsFD int, ready chan<- error, locked chan<- struct{}) {
	runtime.LockOSThread()
	if locked != nil {
		close(locked)
	}
	if syscall.Gettid() == syscall.Getpid() {
		replaced := make(chan struct{})
		go h.nsWorker(nsFD, ready, replaced)
		<-replaced
		runtime.UnlockOSThread()
		return
	}
	if err := setns(nsFD); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case job := <-h.jobs:
			job()
		case <-h.stop:
			return
		}
	}
}

// setnsTrap is the setns(2) system call number; package syscall lacks it.
var setnsTrap = map[string]uintptr{"amd64": 308, "arm64": 268, "riscv64": 268}

func setns(fd int) error {
	trap, ok := setnsTrap[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("setns: unknown system call number on %s", runtime.GOARCH)
	}
	_, _, errno := syscall.Syscall(trap, uintptr(fd), syscall.CLONE_NEWNET, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// inNS runs f on a thread inside the host's namespace.
func (h *Host) inNS(ctx context.Context, f func()) error {
	done := make(chan struct{})
	select {
	case h.jobs <- func() { defer close(done); f() }:
	case <-ctx.Done():
		return ctx.Err()
	case <-h.stop:
		return fmt.Errorf("host %s is closed", h.Name)
	}
	<-done
	return nil
}

// Listen opens a stream listener inside the host's namespace.
func (h *Host) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	var err error
	if nsErr := h.inNS(context.Background(), func() { l, err = net.Listen(network, addr) }); nsErr != nil {
		return nil, nsErr
	}
	return l, err
}

// ListenPacket opens a packet socket inside the host's namespace.
func (h *Host) ListenPacket(network, addr string) (net.PacketConn, error) {
	var c net.PacketConn
	var err error
	if nsErr := h.inNS(context.Background(), func() { c, err = net.ListenPacket(network, addr) }); nsErr != nil {
		return nil, nsErr
	}
	return c, err
}

// DialContext connects from inside the host's namespace. Use IP literals:
// name resolution would not happen in the namespace.
func (h *Host) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return h.dial(ctx, net.Dialer{}, network, addr)
}

func (h *Host) dial(ctx context.Context, d net.Dialer, network, addr string) (net.Conn, error) {
	var c net.Conn
	var err error
	if nsErr := h.inNS(ctx, func() { c, err = d.DialContext(ctx, network, addr) }); nsErr != nil {
		return nil, nsErr
	}
	return c, err
}

// HTTPClient returns a client whose connections start in the host's
// namespace. Keep-alives are off, so every request is a new connection (and
// so a new load-balancing decision).
func (h *Host) HTTPClient() *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext:       h.DialContext,
			DisableKeepAlives: true,
		},
	}
}

// Exec runs a command inside the host's namespace ("ip netns exec") and
// returns its combined output.
func (h *Host) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.NetNS, name}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s in %s: %w: %s", name, h.Name, err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// HoldVIP sets the host up as a DSR member of vip, of either family, as
// the README says: the VIP on its loopback, so that it takes the packets
// the switch forwards to it unchanged, and never claims the VIP on eth0.
// IPv4 needs arp_ignore and arp_announce for that. IPv6 needs nothing
// more: Linux answers a neighbour solicitation only for the addresses of
// the interface it came in on, and solicits from that interface's own.
func (h *Host) HoldVIP(tb TB, vip string) {
	tb.Helper()
	addr, err := netip.ParseAddr(vip)
	if err != nil {
		tb.Fatalf("host %s: VIP %q: %v", h.Name, vip, err)
	}
	if addr.Is4() {
		mustRunCmd(tb, "ip", "netns", "exec", h.NetNS, "sysctl", "-q", "-w",
			"net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2")
	}
	mustRunCmd(tb, "ip", "-n", h.NetNS, "addr", "add", netip.PrefixFrom(addr, addr.BitLen()).String(), "dev", "lo")
}

// SetDown takes the host's bridge-side veth down: for the switch and the
// host, the cable is unplugged.
func (h *Host) SetDown(tb TB) {
	tb.Helper()
	mustRunCmd(tb, "ip", "link", "set", h.Link, "down")
}

// SetUp plugs the host back in as a host that rebooted, with an empty
// neighbour cache. Linux starts sending on the host's side of the veth
// only once its link watcher has seen the carrier; an ARP request sent
// before then (to answer a packet that arrived at once) is lost, and
// retried a second later. So the cache is emptied once that has happened:
// the next packet the host sends asks at once.
func (h *Host) SetUp(tb TB) {
	tb.Helper()
	mustRunCmd(tb, "ip", "link", "set", h.Link, "up")
	for i := 0; ; i++ {
		if out := mustRunCmd(tb, "ip", "-n", h.NetNS, "-o", "link", "show", "eth0"); strings.Contains(out, "state UP") {
			break
		}
		if i == 500 {
			tb.Fatalf("host %s: eth0 not up 5s after its veth", h.Name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mustRunCmd(tb, "ip", "-n", h.NetNS, "neigh", "flush", "all")
}

// close stops the namespace threads and removes the veth and the namespace.
func (h *Host) close() {
	h.closeOnce.Do(func() {
		if h.stop != nil {
			close(h.stop)
		}
		tb := h.tb
		// A router's host leaves it to its namespace to take the veth along.
		if h.sw != nil {
			if _, err := h.sw.run("ovs-vsctl", "--db=unix:"+h.sw.dbSocket(), "--timeout=10", "--if-exists", "del-port", h.sw.Name, h.Link); err != nil {
				tb.Logf("host %s: %v", h.Name, err)
			}
			if linkExists(h.Link) {
				if _, err := runCmd(nil, "ip", "link", "del", h.Link); err != nil {
					tb.Errorf("host %s: %v", h.Name, err)
				}
			}
		}
		if _, err := os.Stat("/run/netns/" + h.NetNS); err == nil {
			if _, err := runCmd(nil, "ip", "netns", "del", h.NetNS); err != nil {
				tb.Errorf("host %s: %v", h.Name, err)
			}
		}
	})
}
