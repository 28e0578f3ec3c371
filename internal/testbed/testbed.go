// Package testbed builds a private network on a real Open vSwitch (userspace
// datapath): a bridge with its own daemons, hosts in network namespaces with
// HTTP and UDP servers, and sdnlb processes that drive the bridge. The e2e
// tests and the demo (cmd/sdnlb-demo) use it. It needs root, ovs-vswitchd,
// iproute2 and ethtool; everything it creates is private to one run and
// removed by the cleanups it registers with its TB.
package testbed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// TB is the part of testing.TB the bed uses: the e2e tests pass their
// *testing.T, a program (the demo) its own implementation. Fatal, Fatalf
// and Skip must not return; Cleanup functions run last added, first run.
type TB interface {
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Failed() bool
	Helper()
	Logf(format string, args ...any)
	Name() string
	Skip(args ...any)
	TempDir() string
}

const (
	// namePrefix starts every interface, bridge and namespace the bed creates,
	// followed by the creating process's PID in base 36 and a dash, so a later
	// run can tell a crashed run's leftovers (dead PID) from live ones.
	namePrefix = "sdt"

	ovsSchema  = "/usr/share/openvswitch/vswitch.ovsschema"
	cmdTimeout = 20 * time.Second
)

var switchSeq atomic.Int64

// Switch is a private Open vSwitch: its own ovsdb-server and ovs-vswitchd
// with every socket, pidfile and log inside a test temp dir, and one bridge
// using the userspace (netdev) datapath.
type Switch struct {
	// Name is the bridge name; it is also the name of its LOCAL port device.
	Name string
	// Subnet is the test subnet the bridge's hosts live in (a /24 in
	// 10.77.0.0/16 that no other live test bed holds).
	Subnet netip.Prefix
	// Subnet6 is the IPv6 subnet beside it: fd5d:77:N::/64 (N in hex)
	// for 10.77.N.0/24, so it is as much the bed's own.
	Subnet6 netip.Prefix
	// LocalIP and LocalIP6 are the root namespace's addresses on the
	// bridge LOCAL port.
	LocalIP, LocalIP6 string
	// Protocol is the one OpenFlow version the bridge speaks once
	// SetController runs, as ovs-vsctl and ovs-ofctl name it: OpenFlow13
	// unless the test sets OpenFlow10 before.
	Protocol string
	// NetNS is the network namespace the bridge's ovs-vswitchd and its
	// ports live in: "" for the creating process's, a namespace of its own
	// for a separate switch (NewSeparateSwitch).
	NetNS string
	// ControllerAddr is, for a separate switch, the address in the
	// creating process's namespace that the switch reaches controllers
	// at, over a link of its own: an sdnlb that drives it listens there.
	ControllerAddr string

	tb     TB
	dir    string
	prefix string
	env    []string
	lock   *os.File
	killed bool // Kill ended its ovs-vswitchd

	mu        sync.Mutex
	hosts     []*Host
	daemons   []*daemon
	added     bool // by AddBridge: the daemons are the first bridge's
	closeOnce sync.Once
}

// NewSwitch starts private OVS daemons and a netdev bridge, gives the root
// namespace LocalIP on the bridge's LOCAL port, and registers Close with
// t.Cleanup. Without SetController the bridge switches in standalone mode
// (NORMAL).
func NewSwitch(tb TB) *Switch {
	tb.Helper()
	return newSwitch(tb, false)
}

// NewSeparateSwitch is NewSwitch for a switch that shares nothing with
// the others: its ovs-vswitchd runs in a network namespace of its own
// (NetNS), so it has a connection tracker of its own, as a separate
// machine has (the bridges of one ovs-vswitchd share theirs). Its LocalIP
// is in that namespace; it reaches controllers in the creating process's
// namespace at ControllerAddr, over a link of its own. It takes no hosts:
// link it to a bridge that has them (LinkSwitches), or to a router.
func NewSeparateSwitch(tb TB) *Switch {
	tb.Helper()
	return newSwitch(tb, true)
}

func newSwitch(tb TB, separate bool) *Switch {
	tb.Helper()
	requireRoot(tb)
	removeStale(tb)

	dir := tb.TempDir()
	prefix := newName("")
	s := &Switch{
		Name:     prefix + "br",
		Protocol: "OpenFlow13",
		tb:       tb,
		dir:      dir,
		prefix:   prefix,
		env: append(os.Environ(),
			"OVS_RUNDIR="+dir, "OVS_DBDIR="+dir, "OVS_LOGDIR="+dir,
			"OVS_SYSCONFDIR="+dir),
	}
	tb.Cleanup(s.Close)

	s.Subnet, s.Subnet6, s.lock = lockSubnet(tb)
	if separate {
		s.NetNS = prefix + "-ns"
		mustRunCmd(tb, "ip", "netns", "add", s.NetNS)
		mustRunCmd(tb, "ip", "-n", s.NetNS, "link", "set", "lo", "up")
		// The link to the controllers: point to point, so that neither
		// side takes a route to the subnet of the other's hosts.
		ctl, peer := prefix+"c", prefix+"d"
		s.ControllerAddr = s.Addr(253)
		mustRunCmd(tb, "ip", "link", "add", ctl, "type", "veth", "peer", "name", peer, "netns", s.NetNS)
		disableIPv6(tb, "", ctl)
		disableIPv6(tb, s.NetNS, peer)
		mustRunCmd(tb, "ip", "addr", "add", s.ControllerAddr, "peer", s.Addr(252), "dev", ctl)
		mustRunCmd(tb, "ip", "-n", s.NetNS, "addr", "add", s.Addr(252), "peer", s.ControllerAddr, "dev", peer)
		mustRunCmd(tb, "ip", "link", "set", ctl, "up")
		mustRunCmd(tb, "ip", "-n", s.NetNS, "link", "set", peer, "up")
	}
	db := filepath.Join(dir, "conf.db")
	s.mustRun("ovsdb-tool", "create", db, ovsSchema)
	s.startDaemon("ovsdb-server", "", db,
		"--remote=punix:"+s.dbSocket(),
		"--unixctl="+filepath.Join(dir, "ovsdb-server.ctl"),
		"--pidfile="+filepath.Join(dir, "ovsdb-server.pid"),
		"--log-file="+filepath.Join(dir, "ovsdb-server.log"),
		"--no-chdir", "-vconsole:off")
	s.waitReady("ovsdb-server", "ovs-vsctl", "--db=unix:"+s.dbSocket(), "--timeout=5", "--no-wait", "init")
	s.startDaemon("ovs-vswitchd", s.NetNS, "unix:"+s.dbSocket(),
		"--unixctl="+filepath.Join(dir, "ovs-vswitchd.ctl"),
		"--pidfile="+filepath.Join(dir, "ovs-vswitchd.pid"),
		"--log-file="+filepath.Join(dir, "ovs-vswitchd.log"),
		"--no-chdir", "-vconsole:off")
	// Without --no-wait, add-br returns once ovs-vswitchd has built the bridge.
	s.Vsctl("add-br", s.Name, "--", "set", "bridge", s.Name, "datapath_type=netdev",
		"other-config:disable-in-band=true")
	s.waitReady("ovs-vswitchd", "ovs-ofctl", "-O", "OpenFlow13", "show", "unix:"+s.mgmtSocket())

	s.LocalIP, s.LocalIP6 = s.Addr(254), s.Addr6(254)
	quietIPv6(tb, s.NetNS, s.Name)
	mustRunCmd(tb, inNetNS(s.NetNS, "ethtool", "-K", s.Name, "tx", "off")...)
	mustRunCmd(tb, inNetNS(s.NetNS, "ip", "addr", "add", s.LocalIP+"/24", "dev", s.Name)...)
	mustRunCmd(tb, inNetNS(s.NetNS, "ip", "addr", "add", s.LocalIP6+"/64", "dev", s.Name, "nodad")...)
	mustRunCmd(tb, inNetNS(s.NetNS, "ip", "link", "set", s.Name, "up")...)
	return s
}

// newName returns a fresh name for what the bed creates: namePrefix, the
// process's PID in base 36, a dash, a sequence number, then kind.
func newName(kind string) string {
	return namePrefix + strconv.FormatInt(int64(os.Getpid()), 36) + "-" + strconv.FormatInt(switchSeq.Add(1), 36) + kind
}

// inNetNS returns the command line that runs name with args in network
// namespace ns ("" for this process's).
func inNetNS(ns, name string, args ...string) []string {
	if ns == "" {
		return append([]string{name}, args...)
	}
	return append([]string{"ip", "netns", "exec", ns, name}, args...)
}

// AddBridge adds another netdev bridge to s's ovs-vswitchd and registers
// its Close with tb.Cleanup. Only one userspace datapath runs per network
// namespace, so switches that a test links together must be bridges of one
// ovs-vswitchd. The bridge shares s's subnet (take distinct host numbers
// from Addr) and has no LocalIP: its LOCAL port stays down.
func (s *Switch) AddBridge(tb TB) *Switch {
	tb.Helper()
	if s.NetNS != "" {
		tb.Fatalf("switch %s is a separate switch: it has one bridge", s.Name)
	}
	prefix := newName("")
	b := &Switch{Name: prefix + "br", Subnet: s.Subnet, Subnet6: s.Subnet6, tb: tb, dir: s.dir, prefix: prefix, env: s.env, added: true, Protocol: "OpenFlow13"}
	tb.Cleanup(b.Close)
	b.Vsctl("add-br", b.Name, "--", "set", "bridge", b.Name, "datapath_type=netdev",
		"other-config:disable-in-band=true")
	b.waitReady("ovs-vswitchd", "ovs-ofctl", "-O", "OpenFlow13", "show", "unix:"+b.mgmtSocket())
	disableIPv6(tb, "", b.Name)
	return b
}

// AddPatch adds patch port name to the bridge, joined to patch port peer
// of another bridge of the same ovs-vswitchd (AddBridge), and returns its
// OpenFlow port number. A link between two bridges is a patch port on
// each, each the other's peer; deleting either (Vsctl del-port) cuts it.
func (s *Switch) AddPatch(tb TB, name, peer string) int {
	tb.Helper()
	s.Vsctl("add-port", s.Name, name, "--", "set", "interface", name, "type=patch", "options:peer="+peer)
	return s.ofport(tb, name)
}

// Addr returns the address with last octet n in the switch's subnet. Tests
// take every host, VIP and member address from here, so that test beds of
// runs on the same machine never share a subnet.
func (s *Switch) Addr(n byte) string {
	a := s.Subnet.Addr().As4()
	a[3] = n
	return netip.AddrFrom4(a).String()
}

// Addr6 returns the address with last byte n in the switch's IPv6 subnet,
// the IPv6 twin of Addr(n).
func (s *Switch) Addr6(n byte) string {
	a := s.Subnet6.Addr().As16()
	a[15] = n
	return netip.AddrFrom16(a).String()
}

// SetController points the bridge at a controller speaking s.Protocol at addr
// ("127.0.0.1:PORT"), in secure fail mode so the switch never forwards on its
// own. Only point it at a port the test itself opened.
func (s *Switch) SetController(addr string) {
	s.tb.Helper()
	s.Vsctl("set-controller", s.Name, "tcp:"+addr,
		"--", "set", "bridge", s.Name, "fail_mode=secure", "protocols="+s.Protocol)
	// Reconnect fast after the controller restarts, and keep OVS from adding
	// hidden in-band flows that would steal the controller's traffic.
	s.Vsctl("set", "controller", s.Name, "max_backoff=1000",
		"connection_mode=out-of-band")
}

// WaitConnected waits until the bridge has an OpenFlow session with its
// controller (OVS reports is_connected after the version handshake). OVS
// refreshes that column only every few seconds, so this takes up to ~5 s;
// a test that runs the controller in-process can ask the controller instead.
func (s *Switch) WaitConnected(timeout time.Duration) {
	s.tb.Helper()
	deadline := time.Now().Add(timeout)
	var got string
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		got = strings.TrimSpace(s.Vsctl("--if-exists", "get", "controller", s.Name, "is_connected"))
		if got == "true" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.tb.Fatalf("bridge %s not connected to its controller after %v (is_connected=%q)", s.Name, timeout, got)
}

// DelController removes the controller. Open vSwitch then deletes every
// flow of the bridge (it flushes a bridge whose last controller goes), and
// in secure mode nothing replaces them: the bridge drops every packet
// until a controller is set again and reinstalls them. Disconnect keeps
// the flows.
func (s *Switch) DelController() {
	s.tb.Helper()
	s.Vsctl("del-controller", s.Name)
}

// Disconnect ends the session with the controller and keeps the flows, as
// when the controller dies or cannot be reached: the bridge keeps a
// controller, at a port that this process opened and closed again, so
// nothing answers there.
func (s *Switch) Disconnect() {
	s.tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		s.tb.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	s.SetController(dead)
}

// DumpFlows returns the bridge's flow table as ovs-ofctl prints
// it, one flow a line, without the reply header. args go after the bridge:
// a flow filter such as "tcp,nw_dst=10.77.0.100" and options such as
// "--no-stats" (stable lines to compare) or "--names".
func (s *Switch) DumpFlows(args ...string) []string {
	s.tb.Helper()
	out := s.Ofctl("dump-flows", args...)
	var flows []string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		// ovs-ofctl heads the flows with OFPST_FLOW reply, or NXST_FLOW
		// reply for 1.0, which it asks with Nicira's flow stats.
		if line == "" || strings.HasPrefix(line, "OFPST_FLOW reply") || strings.HasPrefix(line, "NXST_FLOW reply") {
			continue
		}
		flows = append(flows, line)
	}
	return flows
}

// Vsctl runs ovs-vsctl against the private database and returns its output.
func (s *Switch) Vsctl(args ...string) string {
	s.tb.Helper()
	return s.mustRun("ovs-vsctl", append([]string{"--db=unix:" + s.dbSocket(), "--timeout=20"}, args...)...)
}

// Appctl runs an ovs-appctl command against the switch's ovs-vswitchd.
func (s *Switch) Appctl(args ...string) string {
	s.tb.Helper()
	return s.mustRun("ovs-appctl", append([]string{"-t", filepath.Join(s.dir, "ovs-vswitchd.ctl")}, args...)...)
}

// Ofctl runs "ovs-ofctl -O PROTOCOL CMD BRIDGE ARGS...": the bridge target is
// inserted after the command, e.g. Ofctl("add-flow", "priority=5,actions=drop").
func (s *Switch) Ofctl(cmd string, args ...string) string {
	s.tb.Helper()
	full := append([]string{"-O", s.Protocol, cmd, "unix:" + s.mgmtSocket()}, args...)
	return s.mustRun("ovs-ofctl", full...)
}

// Close removes the hosts, the bridge and the daemons. It is safe to call more
// than once and runs from t.Cleanup anyway.
func (s *Switch) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		hosts, daemons := s.hosts, s.daemons
		s.mu.Unlock()
		for _, h := range hosts {
			h.close()
		}
		if s.tb.Failed() {
			s.logTail("ovs-vswitchd.log", 40)
			s.logEnded(daemons)
		}
		if (len(daemons) == 2 || s.added) && !s.killed {
			// A netdev bridge's tap device outlives ovs-vswitchd unless the
			// bridge is deleted first; an added bridge's daemons, its first
			// bridge's, are still up (its Close runs first).
			if _, err := s.run("ovs-vsctl", "--db=unix:"+s.dbSocket(), "--timeout=10", "--if-exists", "del-br", s.Name); err != nil {
				s.tb.Logf("delete bridge: %v", err)
			}
		}
		for i := len(daemons) - 1; i >= 0; i-- {
			daemons[i].stop(s.tb)
		}
		if s.NetNS != "" {
			// The namespace takes its devices with it, the bridge's own too.
			if _, err := s.run("ip", "netns", "del", s.NetNS); err != nil {
				s.tb.Logf("delete namespace: %v", err)
			}
		} else if linkExists(s.Name) {
			_, _ = s.run("ip", "link", "del", s.Name)
		}
		if s.lock != nil {
			s.lock.Close()
		}
	})
}

func (s *Switch) dbSocket() string   { return filepath.Join(s.dir, "db.sock") }
func (s *Switch) mgmtSocket() string { return filepath.Join(s.dir, s.Name+".mgmt") }

// lockSubnet takes the first 10.77.N.0/24 whose lock file no other live bed
// holds, with its IPv6 twin fd5d:77:N::/64; closing the lock frees them.
// flock dies with its holder, so a crashed run frees its subnet.
func lockSubnet(tb TB) (netip.Prefix, netip.Prefix, *os.File) {
	tb.Helper()
	lockDir := filepath.Join(os.TempDir(), "sdnlb-e2e-subnets")
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		tb.Fatalf("subnet lock dir: %v", err)
	}
	for n := 0; n < 256; n++ {
		f, err := os.OpenFile(filepath.Join(lockDir, strconv.Itoa(n)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			tb.Fatalf("subnet lock: %v", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 77, byte(n), 0}), 24),
			netip.PrefixFrom(netip.AddrFrom16([16]byte{0xfd, 0x5d, 0, 0x77, 0, byte(n)}), 64), f
	}
	tb.Fatalf("no free test subnet in 10.77.0.0/16")
	return netip.Prefix{}, netip.Prefix{}, nil
}

type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// startLocked starts cmd (with Pdeathsig set) from a goroutine locked to
// its OS thread, which then runs wait, which must wait for cmd, and closes
// done. Pdeathsig fires when the creating thread exits, and Go ends a
// thread when a locked goroutine returns, so the thread must live as long
// as cmd.
func startLocked(cmd *exec.Cmd, done chan struct{}, wait func()) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(done)
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		wait()
	}()
	return <-started
}

// startDaemon runs an OVS daemon in network namespace ns ("" for ours).
func (s *Switch) startDaemon(name, ns string, args ...string) {
	s.tb.Helper()
	d := startDaemon(s.tb, s.dir, s.env, ns, name, args...)
	s.mu.Lock()
	s.daemons = append(s.daemons, d)
	s.mu.Unlock()
}

// startDaemon runs a daemon in the foreground as our child, in network
// namespace ns ("" for ours), its output in dir, so we reap it ourselves,
// and has the kernel kill it if the test process dies. Pdeathsig fires
// when the creating thread exits, and Go ends a thread when a locked
// goroutine returns (as the host namespace workers do), so the child is
// started and waited for on a thread locked for the child's lifetime. "ip
// netns exec" execs the daemon, which so keeps the process and its
// Pdeathsig.
func startDaemon(tb TB, dir string, env []string, ns, name string, args ...string) *daemon {
	tb.Helper()
	out, err := os.Create(filepath.Join(dir, filepath.Base(name)+".out"))
	if err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	line := inNetNS(ns, name, args...)
	cmd := exec.Command(line[0], line[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d := &daemon{name: filepath.Base(name), cmd: cmd, done: make(chan struct{})}
	err = startLocked(cmd, d.done, func() {
		_ = cmd.Wait()
		out.Close()
	})
	if err != nil {
		out.Close()
		tb.Fatalf("start %s: %v", name, err)
	}
	return d
}

// Kill kills the switch's ovs-vswitchd, as a switch that dies: its data
// path goes with it, and its controllers see their connections end.
func (s *Switch) Kill() {
	s.tb.Helper()
	s.mu.Lock()
	daemons := s.daemons
	s.killed = true
	s.mu.Unlock()
	for _, d := range daemons {
		if d.name == "ovs-vswitchd" {
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	}
}

func (d *daemon) stop(tb TB) {
	select {
	case <-d.done: // killed
		return
	default:
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
		return
	case <-time.After(5 * time.Second):
	}
	tb.Logf("%s ignored SIGTERM for 5s, killing it", d.name)
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
		tb.Errorf("%s (pid %d) still running after SIGKILL", d.name, d.cmd.Process.Pid)
	}
}

// waitReady runs a client command until the daemon answers it: a daemon's
// socket file appears before the daemon listens on it. It fails fast when a
// daemon has exited.
func (s *Switch) waitReady(daemonName, name string, args ...string) {
	s.tb.Helper()
	deadline := time.Now().Add(cmdTimeout)
	var err error
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		if _, err = s.run(name, args...); err == nil {
			return
		}
		s.mu.Lock()
		daemons := s.daemons
		s.mu.Unlock()
		for _, d := range daemons {
			select {
			case <-d.done:
				s.logTail(d.name+".log", 20)
				s.tb.Fatalf("%s exited while waiting for %s", d.name, daemonName)
			default:
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	// ovs-vswitchd retries a busy userspace datapath, so a bed next to
	// another test's waits until that one ends, up to here.
	if daemonName == "ovs-vswitchd" && s.logContains("ovs-vswitchd.log", netdevDatapathDev+": creating tap device failed") {
		if other := OtherUserspaceOVS(s.daemonPIDs()...); other != "" {
			s.tb.Fatal(other)
		}
	}
	s.tb.Fatalf("%s not ready: %v", daemonName, err)
}

func (s *Switch) logContains(file, substr string) bool {
	data, err := os.ReadFile(filepath.Join(s.dir, file))
	return err == nil && bytes.Contains(data, []byte(substr))
}

// VswitchdPID is the id of the ovs-vswitchd that runs the bridge, for
// ProcessCPU and ProcessRSS: all the switch's work, its userspace datapath
// included, is that process's. A bridge from AddBridge has none of its own.
func (s *Switch) VswitchdPID() int {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.daemons {
		if d.name == "ovs-vswitchd" {
			return d.cmd.Process.Pid
		}
	}
	s.tb.Fatalf("bridge %s runs on another bridge's ovs-vswitchd", s.Name)
	return 0
}

func (s *Switch) daemonPIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	pids := make([]int, len(s.daemons))
	for i, d := range s.daemons {
		pids[i] = d.cmd.Process.Pid
	}
	return pids
}

// logEnded logs how each daemon that ended before the switch closed, and
// that the test did not kill, ended (a signal or an exit status), and
// what it wrote to its output: a daemon that dies without a word in its
// log says there why.
func (s *Switch) logEnded(daemons []*daemon) {
	for _, d := range daemons {
		select {
		case <-d.done:
		default:
			continue
		}
		if s.killed && d.name == "ovs-vswitchd" {
			continue
		}
		s.tb.Logf("%s (pid %d) ended before its switch closed: %v", d.name, d.cmd.Process.Pid, d.cmd.ProcessState)
		s.logTail(d.name+".out", 20)
	}
}

func (s *Switch) logTail(file string, lines int) {
	logFileTail(s.tb, filepath.Join(s.dir, file), file, lines)
}

// logFileTail logs the last lines of the file at path, named name.
func logFileTail(tb TB, path, name string, lines int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	all := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	tb.Logf("last lines of %s:\n%s", name, strings.Join(all, "\n"))
}

func (s *Switch) run(name string, args ...string) (string, error) {
	return runCmd(s.env, name, args...)
}

// plug adds dev, a link end in the switch's namespace, to the bridge as a
// port, with IPv6 and checksum offload off (the userspace datapath fills
// in no checksums), and returns its OpenFlow port number.
func (s *Switch) plug(tb TB, dev string) int {
	tb.Helper()
	disableIPv6(tb, s.NetNS, dev)
	mustRunCmd(tb, inNetNS(s.NetNS, "ethtool", "-K", dev, "tx", "off")...)
	mustRunCmd(tb, inNetNS(s.NetNS, "ip", "link", "set", dev, "up")...)
	s.Vsctl("add-port", s.Name, dev)
	return s.ofport(tb, dev)
}

// LinkSwitches joins two switches with a cable, a veth pair with an end
// plugged into each (also across namespaces, where AddPatch cannot), and
// returns the ports of a and of b.
func LinkSwitches(tb TB, a, b *Switch) (int, int) {
	tb.Helper()
	ea, eb := newName("x"), newName("y")
	mustRunCmd(tb, "ip", "link", "add", ea, "type", "veth", "peer", "name", eb)
	for _, end := range []struct {
		dev string
		sw  *Switch
	}{{ea, a}, {eb, b}} {
		if end.sw.NetNS != "" {
			mustRunCmd(tb, "ip", "link", "set", end.dev, "netns", end.sw.NetNS)
		}
	}
	return a.plug(tb, ea), b.plug(tb, eb)
}

func (s *Switch) mustRun(name string, args ...string) string {
	s.tb.Helper()
	out, err := s.run(name, args...)
	if err != nil {
		s.tb.Fatal(err)
	}
	return out
}

// runCmd runs a short command with a deadline and returns its stdout; the
// error carries stderr.
func runCmd(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err,
			strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func mustRunCmd(tb TB, line ...string) string {
	tb.Helper()
	out, err := runCmd(nil, line[0], line[1:]...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func requireRoot(tb TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("e2e test bed needs root (network namespaces, OVS)")
	}
	for _, bin := range []string{"ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovsdb-tool", "ip", "ethtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("e2e test bed needs %s: %v (scripts/test.sh installs it)", bin, err)
		}
	}
}

// disableIPv6 turns IPv6 off on dev (in namespace ns, "" for the root one),
// a port that needs no address, so it sends nothing of its own.
func disableIPv6(tb TB, ns, dev string) {
	tb.Helper()
	path := "/proc/sys/net/ipv6/conf/" + dev + "/disable_ipv6"
	if _, err := os.Stat("/proc/sys/net/ipv6"); errors.Is(err, os.ErrNotExist) {
		return // kernel without IPv6
	}
	if ns == "" {
		if err := os.WriteFile(path, []byte("1"), 0o644); err != nil {
			tb.Fatalf("disable IPv6 on %s: %v", dev, err)
		}
		return
	}
	mustRunCmd(tb, "ip", "netns", "exec", ns, "sh", "-c", "echo 1 > "+path)
}

// quietIPv6 keeps IPv6 on dev (in namespace ns, "" for the root one) and
// drops what it would send unasked, or wait for: no duplicate address
// detection (addresses work at once), no router solicitations, no router
// advertisements heeded. What remains are the few MLD reports of the
// link coming up, which the switch floods or its controller ignores, and
// which nothing waits on.
func quietIPv6(tb TB, ns, dev string) {
	tb.Helper()
	conf := "net.ipv6.conf." + dev + "."
	mustRunCmd(tb, inNetNS(ns, "sysctl", "-q", "-w", conf+"disable_ipv6=0", conf+"accept_dad=0",
		conf+"router_solicitations=0", conf+"accept_ra=0")...)
}

func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}

// removeStale deletes interfaces and namespaces that an earlier test process
// created and left behind when it crashed. Only names with our prefix whose
// creating process is gone (or a zombie) are touched.
func removeStale(tb TB) {
	tb.Helper()
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		tb.Fatalf("list links: %v", err)
	}
	for _, l := range links {
		if staleName(l.Name()) {
			tb.Logf("removing leftover link %s", l.Name())
			if _, err := runCmd(nil, "ip", "link", "del", l.Name()); err != nil && linkExists(l.Name()) {
				tb.Logf("remove leftover link: %v", err)
			}
		}
	}
	nss, err := os.ReadDir("/run/netns")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		tb.Fatalf("list namespaces: %v", err)
	}
	for _, ns := range nss {
		if staleName(ns.Name()) {
			tb.Logf("removing leftover namespace %s", ns.Name())
			if _, err := runCmd(nil, "ip", "netns", "del", ns.Name()); err != nil {
				tb.Logf("remove leftover namespace: %v", err)
			}
		}
	}
}

func staleName(name string) bool {
	rest, ok := strings.CutPrefix(name, namePrefix)
	if !ok {
		return false
	}
	pid36, _, ok := strings.Cut(rest, "-")
	if !ok {
		return false
	}
	pid, err := strconv.ParseInt(pid36, 36, 32)
	if err != nil || pid <= 0 {
		return false
	}
	return !processAlive(int(pid))
}

// processAlive reads the process state: a killed process can stay a zombie for
// a while, and a zombie holds nothing.
func processAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := statFields(data)
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// readAll is io.ReadAll with a size cap, for test servers' peers.
func readAll(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, 1<<20))
}

// netdevDatapathDev is the device of Open vSwitch's userspace datapath.
// The first ovs-vswitchd with a netdev bridge in a network namespace
// creates it, and while it runs another cannot: its bridges fail with
// "ovs-netdev: creating tap device failed: Device or resource busy".
const netdevDatapathDev = "ovs-netdev"

// OtherUserspaceOVS says what to do when an ovs-vswitchd other than those
// with PIDs ours holds this network namespace's userspace datapath, and
// returns "" when none does. The demo checks it first: a system Open
// vSwitch does not go away by itself.
func OtherUserspaceOVS(ours ...int) string {
	if !linkExists(netdevDatapathDev) {
		return ""
	}
	var others []string
	for _, pid := range vswitchdsInThisNetNS() {
		if !slices.Contains(ours, pid) {
			others = append(others, strconv.Itoa(pid))
		}
	}
	holder := "another program"
	if len(others) > 0 {
		holder = "ovs-vswitchd (pid " + strings.Join(others, ", ") + ")"
	}
	return fmt.Sprintf("another Open vSwitch runs a userspace datapath in this network namespace (%s holds its device %s), "+
		"and there is room for one only: stop it (the system's: /usr/share/openvswitch/scripts/ovs-ctl stop) and run this again",
		holder, netdevDatapathDev)
}

// vswitchdsInThisNetNS lists the PIDs of the ovs-vswitchd processes in
// this process's network namespace.
func vswitchdsInThisNetNS() []int {
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return nil
	}
	return liveProcesses(func(proc string) bool {
		comm, err := os.ReadFile(proc + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "ovs-vswitchd" {
			return false
		}
		ns, err := os.Readlink(proc + "/ns/net")
		return err == nil && ns == self
	})
}

// liveProcesses lists the live processes that match accepts, given their
// /proc directory.
func liveProcesses(match func(proc string) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && match("/proc/"+e.Name()) && processAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
