package testbed

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// frrDir holds FRR's daemons, as Debian's frr package installs them.
const frrDir = "/usr/lib/frr"

// frrEnv marks the FRR daemons a router starts: its value is the creating
// process's PID in base 36. FRR drops root for its own user, which clears
// the daemons' Pdeathsig, so the daemons of a test process that died
// before its cleanup live on; the next router ends them.
const frrEnv = "SDNLB_TESTBED_FRR"

// Router is a Linux router in a network namespace of its own: links to
// switches and hosts behind it, forwarding with ECMP over multipath
// routes (the kernel hashes each packet's addresses, protocol and ports,
// so a connection keeps its path while the route does), and FRR's zebra
// and bgpd once StartFRR runs.
type Router struct {
	Name  string
	NetNS string
	// Subnet is the router's own test subnet, for its hosts: the router is
	// Addr(1) on each host's link.
	Subnet netip.Prefix

	tb     TB
	prefix string
	lock   *os.File
	frr    string // FRR's files; "" until StartFRR

	mu        sync.Mutex
	hosts     []*Host
	daemons   []*daemon
	closeOnce sync.Once
}

// NewRouter creates a router and registers Close with tb.Cleanup.
func NewRouter(tb TB, name string) *Router {
	tb.Helper()
	requireRoot(tb)
	removeStaleFRR(tb)
	if !validHostName(name) {
		tb.Fatalf("router name %q: use 1-20 letters, digits, '-' or '_'", name)
	}
	prefix := newName("")
	r := &Router{Name: name, NetNS: prefix + "-" + name, tb: tb, prefix: prefix}
	tb.Cleanup(r.Close)
	r.Subnet, _, r.lock = lockSubnet(tb)
	mustRunCmd(tb, "ip", "netns", "add", r.NetNS)
	mustRunCmd(tb, "ip", "-n", r.NetNS, "link", "set", "lo", "up")
	// Multipath by a hash of the addresses, protocol and ports, as a
	// router hashes packets off the wire: the L4 policy (1) would take the
	// hash a packet already carries, which a host's packets bring along
	// over a veth from the sending socket, random per connection and new
	// at each retransmission. Replies come back on another link than their
	// connection left by, so no reverse path filter.
	mustRunCmd(tb, "ip", "netns", "exec", r.NetNS, "sysctl", "-q", "-w",
		"net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=3", "net.ipv4.fib_multipath_hash_fields=0x37",
		"net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0")
	return r
}

// Addr returns the address with last octet n in the router's subnet.
func (r *Router) Addr(n byte) string {
	a := r.Subnet.Addr().As4()
	a[3] = n
	return netip.AddrFrom4(a).String()
}

// Link cables the router to a port of sw, with address cidr
// ("10.77.3.1/24") on the router's end, and returns that end's name.
func (r *Router) Link(tb TB, sw *Switch, cidr string) string {
	tb.Helper()
	dev, port := newName("r"), newName("s") // the router's end, the switch's
	mustRunCmd(tb, "ip", "link", "add", port, "type", "veth", "peer", "name", dev, "netns", r.NetNS)
	if sw.NetNS != "" {
		mustRunCmd(tb, "ip", "link", "set", port, "netns", sw.NetNS)
	}
	sw.plug(tb, port)
	// Answer ARP only for the addresses of this link, and from them: the
	// links to switches share one L2 network through them, where
	// answering for another link's address would draw that link's
	// traffic.
	conf := "net.ipv4.conf." + dev + "."
	mustRunCmd(tb, "ip", "netns", "exec", r.NetNS, "sysctl", "-q", "-w", conf+"arp_ignore=1", conf+"arp_announce=2")
	r.up(tb, dev, "addr", "add", cidr, "dev", dev)
	return dev
}

// AddHost creates a host behind the router, at ip in the router's subnet
// (Addr), on a link of its own to the router, which is its gateway.
func (r *Router) AddHost(tb TB, name, ip string) *Host {
	tb.Helper()
	if !validHostName(name) {
		tb.Fatalf("host name %q: use 1-20 letters, digits, '-' or '_'", name)
	}
	if a, err := netip.ParseAddr(ip); err != nil || !r.Subnet.Contains(a) || ip == r.Addr(1) {
		tb.Fatalf("host %s: address %q is not in the router's subnet %s, or is the router's (use Router.Addr)", name, ip, r.Subnet)
	}
	h := &Host{Name: name, IP: ip, NetNS: r.prefix + "-" + name, Link: newName("h"), tb: tb}
	r.mu.Lock()
	r.hosts = append(r.hosts, h)
	r.mu.Unlock()
	mustRunCmd(tb, "ip", "netns", "add", h.NetNS)
	mustRunCmd(tb, "ip", "-n", h.NetNS, "link", "add", "eth0", "type", "veth", "peer", "name", h.Link, "netns", r.NetNS)
	disableIPv6(tb, h.NetNS, "eth0")
	mustRunCmd(tb, "ip", "netns", "exec", h.NetNS, "sh", "-c",
		"echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse && echo '1024 65535' > /proc/sys/net/ipv4/ip_local_port_range")
	// Point to point: every host's link carries the router's Addr(1).
	mustRunCmd(tb, "ip", "-n", h.NetNS, "addr", "add", ip, "peer", r.Addr(1), "dev", "eth0")
	mustRunCmd(tb, "ip", "-n", h.NetNS, "link", "set", "eth0", "up")
	mustRunCmd(tb, "ip", "-n", h.NetNS, "link", "set", "lo", "up")
	mustRunCmd(tb, "ip", "-n", h.NetNS, "route", "add", "default", "via", r.Addr(1))
	r.up(tb, h.Link, "addr", "add", r.Addr(1), "peer", ip, "dev", h.Link)
	h.MAC = h.readMAC(tb)
	h.startWorkers(tb)
	return h
}

// up configures the router's link dev with "ip args" and brings it up,
// with IPv6 off and no reverse path filter (the "all" setting turns off
// only the ones of links that do not filter either).
func (r *Router) up(tb TB, dev string, args ...string) {
	tb.Helper()
	disableIPv6(tb, r.NetNS, dev)
	mustRunCmd(tb, "ip", "netns", "exec", r.NetNS, "sysctl", "-q", "-w", "net.ipv4.conf."+dev+".rp_filter=0")
	mustRunCmd(tb, "ip", "netns", "exec", r.NetNS, "ethtool", "-K", dev, "tx", "off")
	mustRunCmd(tb, append([]string{"ip", "-n", r.NetNS}, args...)...)
	mustRunCmd(tb, "ip", "-n", r.NetNS, "link", "set", dev, "up")
}

// removeStaleFRR ends the FRR daemons, and removes the directories, of
// routers whose test process is gone.
func removeStaleFRR(tb TB) {
	tb.Helper()
	endMarked(tb, frrEnv, func(v string) bool {
		pid, err := strconv.ParseInt(v, 36, 32)
		return err == nil && !processAlive(int(pid))
	})
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), namePrefix+"*-frr-*"))
	for _, dir := range dirs {
		if staleName(filepath.Base(dir)) {
			tb.Logf("removing leftover FRR directory %s", dir)
			_ = os.RemoveAll(dir)
		}
	}
}

// requireFRR fails tb when FRR's daemons are missing.
func requireFRR(tb TB) {
	tb.Helper()
	for _, bin := range []string{filepath.Join(frrDir, "zebra"), filepath.Join(frrDir, "bgpd"), "vtysh"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("the BGP test bed needs FRR's %s: %v (scripts/test.sh installs the frr package)", bin, err)
		}
	}
	if _, err := user.Lookup("frr"); err != nil {
		tb.Fatalf("the BGP test bed runs FRR as its user frr: %v (the frr package creates it)", err)
	}
}

// StartFRR runs FRR's zebra and bgpd in the router's namespace, with
// bgpd's configuration conf and every file in a directory of their own
// (not the system's), and waits until bgpd answers vtysh. They run as the
// user frr, as FRR wants, and stop with the router.
func (r *Router) StartFRR(tb TB, conf string) {
	tb.Helper()
	requireFRR(tb)
	if r.frr != "" {
		tb.Fatalf("router %s runs FRR already", r.Name)
	}
	// The user frr must reach the directory: not under the test's own
	// temporary directories, which only root may enter.
	dir, err := os.MkdirTemp("", r.prefix+"-frr-")
	if err != nil {
		tb.Fatal(err)
	}
	r.frr = dir
	u, err := user.Lookup("frr")
	if err != nil {
		tb.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for name, content := range map[string]string{"": "", "zebra.conf": "", "bgpd.conf": conf} {
		path := filepath.Join(dir, name)
		if name != "" {
			if err := os.WriteFile(path, []byte(content), 0o640); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.Chown(path, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
	common := func(daemon string) []string {
		return []string{"-u", "frr", "-g", "frr", "-f", filepath.Join(dir, daemon+".conf"), "-i", filepath.Join(dir, daemon+".pid"),
			"-z", filepath.Join(dir, "zserv.api"), "--vty_socket", dir, "--log", "file:" + filepath.Join(dir, daemon+".log")}
	}
	r.startDaemon(tb, filepath.Join(frrDir, "zebra"), common("zebra")...)
	r.waitFRR(tb, "zebra", "show zebra client summary")
	r.startDaemon(tb, filepath.Join(frrDir, "bgpd"), common("bgpd")...)
	r.waitFRR(tb, "bgpd", "show bgp summary")
}

func (r *Router) startDaemon(tb TB, name string, args ...string) {
	tb.Helper()
	env := append(os.Environ(), frrEnv+"="+strconv.FormatInt(int64(os.Getpid()), 36))
	d := startDaemon(tb, r.frr, env, r.NetNS, name, args...)
	r.mu.Lock()
	r.daemons = append(r.daemons, d)
	r.mu.Unlock()
}

// waitFRR waits until daemon answers cmd through vtysh.
func (r *Router) waitFRR(tb TB, daemon, cmd string) {
	tb.Helper()
	var err error
	for deadline := time.Now().Add(cmdTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err = r.vtysh(cmd); err == nil {
			return
		}
		r.mu.Lock()
		d := r.daemons[len(r.daemons)-1]
		r.mu.Unlock()
		select {
		case <-d.done:
			r.logTail(daemon+".log", 20)
			tb.Fatalf("FRR's %s exited while starting", daemon)
		default:
		}
	}
	tb.Fatalf("FRR's %s not ready: %v", daemon, err)
}

func (r *Router) vtysh(cmds ...string) (string, error) {
	args := []string{"--vty_socket", r.frr}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	return runCmd(nil, "vtysh", args...)
}

// Vtysh runs FRR commands ("show bgp summary") and returns their output.
func (r *Router) Vtysh(tb TB, cmds ...string) string {
	tb.Helper()
	out, err := r.vtysh(cmds...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// Nexthop is one next hop of a route in the router's kernel table.
type Nexthop struct {
	Gateway string `json:"gateway"`
	Dev     string `json:"dev"`
}

// Route returns the next hops of the route to prefix ("203.0.113.10/32")
// in the kernel's table, which zebra fills: what the router forwards by.
// None while there is no such route.
func (r *Router) Route(tb TB, prefix string) []Nexthop {
	tb.Helper()
	out := mustRunCmd(tb, "ip", "-j", "-n", r.NetNS, "route", "show", "exact", prefix)
	var routes []struct {
		Nexthop
		Nexthops []Nexthop `json:"nexthops"`
	}
	if err := json.Unmarshal([]byte(out), &routes); err != nil {
		tb.Fatalf("route %s: %v: %s", prefix, err, out)
	}
	var hops []Nexthop
	for _, rt := range routes {
		if len(rt.Nexthops) == 0 {
			rt.Nexthops = []Nexthop{rt.Nexthop}
		}
		hops = append(hops, rt.Nexthops...)
	}
	return hops
}

// RouteOf returns the link the router forwards a TCP connection by: the
// kernel's choice among a multipath route's next hops for the
// connection's addresses and ports, as it came in on link in. The router
// forwards by it once it has resolved the next hops (Resolve).
func (r *Router) RouteOf(in, src string, srcPort int, dst string, dstPort int) (string, error) {
	out, err := runCmd(nil, "ip", "-j", "-n", r.NetNS, "route", "get", dst, "from", src, "iif", in,
		"ipproto", "tcp", "sport", strconv.Itoa(srcPort), "dport", strconv.Itoa(dstPort))
	if err != nil {
		return "", err
	}
	var routes []Nexthop
	if err := json.Unmarshal([]byte(out), &routes); err != nil || len(routes) != 1 {
		return "", fmt.Errorf("route to %s: %q: %v", dst, out, err)
	}
	return routes[0].Dev, nil
}

// Resolve has the router resolve addr, a next hop on one of its links,
// as a router that has forwarded through it holds it: Linux hashes a
// connection onto a multipath route's next hops but passes over one whose
// address it is resolving (an INCOMPLETE neighbour entry), so the first
// packets hashed to a next hop never used before take another, and
// RouteOf would not say where they went. It pings addr, for up to 5 s.
func (r *Router) Resolve(tb TB, addr string) {
	tb.Helper()
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if _, err = runCmd(nil, "ip", "netns", "exec", r.NetNS, "ping", "-c", "1", "-W", "1", addr); err == nil {
			return
		}
	}
	tb.Fatalf("router %s cannot reach %s: %v", r.Name, addr, err)
}

func (r *Router) logTail(file string, lines int) {
	logFileTail(r.tb, filepath.Join(r.frr, file), "FRR's "+file, lines)
}

// Close stops FRR and removes the router's hosts and namespace.
func (r *Router) Close() {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		hosts, daemons := r.hosts, r.daemons
		r.mu.Unlock()
		for _, h := range hosts {
			h.close()
		}
		if r.tb.Failed() {
			for _, what := range []string{"route", "neigh"} {
				out, _ := runCmd(nil, "ip", "-n", r.NetNS, what)
				r.tb.Logf("router %s: ip %s:\n%s", r.Name, what, out)
			}
			if r.frr != "" {
				r.logTail("bgpd.log", 40)
			}
		}
		for i := len(daemons) - 1; i >= 0; i-- {
			daemons[i].stop(r.tb)
		}
		if r.frr != "" {
			_ = os.RemoveAll(r.frr)
		}
		if _, err := os.Stat("/run/netns/" + r.NetNS); err == nil {
			if _, err := runCmd(nil, "ip", "netns", "del", r.NetNS); err != nil {
				r.tb.Errorf("router %s: %v", r.Name, err)
			}
		}
		if r.lock != nil {
			r.lock.Close()
		}
	})
}
