//go:build e2e

package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTestbed proves the bed without a controller: the bridge switches in
// standalone mode (NORMAL), so hosts and the root namespace reach each other.
func TestTestbed(t *testing.T) {
	sw := NewSwitch(t)
	a := sw.AddHost(t, "a", sw.Addr(1))
	b := sw.AddHost(t, "b", sw.Addr(2))
	web := b.ServeHTTP(t, 8080, "srv-b")
	echo := b.ServeUDP(t, 5353, "udp-b")

	t.Run("HostFields", func(t *testing.T) {
		for _, h := range []*Host{a, b} {
			if h.OFPort <= 0 || len(h.MAC) != 6 || h.IP == "" {
				t.Errorf("host %s: OFPort %d MAC %v IP %q", h.Name, h.OFPort, h.MAC, h.IP)
			}
			if ip6, err := netip.ParseAddr(h.IP6); err != nil || !sw.Subnet6.Contains(ip6) {
				t.Errorf("host %s: IP6 %q not in %s", h.Name, h.IP6, sw.Subnet6)
			}
		}
		if want := sw.Addr6(2); b.IP6 != want {
			t.Errorf("host b: IP6 %s, want %s, the twin of %s", b.IP6, want, b.IP)
		}
		if a.OFPort == b.OFPort || a.MAC.String() == b.MAC.String() {
			t.Errorf("hosts share port or MAC: %d/%d %v/%v", a.OFPort, b.OFPort, a.MAC, b.MAC)
		}
		for _, name := range []string{sw.Name, a.Link, b.Link} {
			if len(name) > 15 {
				t.Errorf("interface name %q longer than 15 bytes", name)
			}
		}
	})

	t.Run("Ping", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out, err := a.Exec(ctx, "ping", "-c", "2", "-i", "0.2", "-W", "2", b.IP); err != nil {
			t.Fatalf("ping %s from a: %v\n%s", b.IP, err, out)
		}
	})

	// Both families switch alike (NORMAL), and the servers listen on both.
	t.Run("IPv6Across", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if out, err := a.Exec(ctx, "ping", "-6", "-c", "2", "-i", "0.2", "-W", "2", b.IP6); err != nil {
			t.Fatalf("ping %s from a: %v\n%s", b.IP6, err, out)
		}
		mustGet(t, a, "http://"+web.Addr6+"/", "srv-b")
		reply, err := a.UDPRequest(ctx, echo.Addr6, []byte("hi"), 2*time.Second)
		if err != nil || string(reply) != "udp-b" {
			t.Errorf("UDP to %s: %q, %v; want %q", echo.Addr6, reply, err, "udp-b")
		}
		got, err := a.HTTPGetFrom(ctx, 40123, "http://"+web.Addr6+"/")
		if err != nil || got != "srv-b" {
			t.Errorf("GET from port 40123 to %s: %q, %v", web.Addr6, got, err)
		}
		// The root namespace, where sdnlb runs, reaches the host from LocalIP6.
		c, err := net.DialTimeout("tcp", web.Addr6, 5*time.Second)
		if err != nil {
			t.Fatalf("root namespace to %s: %v", web.Addr6, err)
		}
		defer c.Close()
		if local := c.LocalAddr().(*net.TCPAddr).IP.String(); local != sw.LocalIP6 {
			t.Errorf("root namespace reached %s from %s, want %s", web.Addr6, local, sw.LocalIP6)
		}
	})

	t.Run("HTTPAcross", func(t *testing.T) {
		before := web.Hits()
		for i := 0; i < 3; i++ {
			mustGet(t, a, "http://"+web.Addr+"/", "srv-b")
		}
		if got := web.Hits() - before; got != 3 {
			t.Errorf("server counted %d hits, want 3", got)
		}
		mustGet(t, a, "http://"+web.Addr+"/health", "OK")
	})

	t.Run("SetHealth", func(t *testing.T) {
		web.SetHealth(http.StatusServiceUnavailable)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := a.HTTPGet(ctx, "http://"+web.Addr+"/health")
		if err == nil || !strings.Contains(err.Error(), "status 503") {
			t.Errorf("GET /health on a sick server: %v, want status 503", err)
		}
		web.SetHealth(http.StatusOK)
		mustGet(t, a, "http://"+web.Addr+"/health", "OK")
		mustGet(t, a, "http://"+web.Addr+"/", "srv-b")
	})

	t.Run("ConcurrentClients", func(t *testing.T) {
		const workers, perWorker = 16, 20
		before := web.Hits()
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			go func() {
				for i := 0; i < perWorker; i++ {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					body, err := a.HTTPGet(ctx, "http://"+web.Addr+"/")
					cancel()
					if err == nil && body != "srv-b" {
						err = fmt.Errorf("body %q", body)
					}
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for w := 0; w < workers; w++ {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if got := web.Hits() - before; got != workers*perWorker {
			t.Errorf("server counted %d hits, want %d", got, workers*perWorker)
		}
	})

	t.Run("ClientSysctls", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for file, want := range map[string]string{
			"/proc/sys/net/ipv4/tcp_tw_reuse":        "1",
			"/proc/sys/net/ipv4/ip_local_port_range": "1024\t65535",
		} {
			out, err := a.Exec(ctx, "cat", file)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("%s = %q, want %q", file, got, want)
			}
		}
	})

	t.Run("UDPAcross", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		reply, err := a.UDPRequest(ctx, echo.Addr, []byte("hi"), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(reply) != "udp-b" {
			t.Errorf("reply %q, want %q", reply, "udp-b")
		}
	})

	t.Run("RootReachesHostViaLocal", func(t *testing.T) {
		client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Get("http://" + web.Addr + "/health")
		if err != nil {
			t.Fatalf("root namespace to %s: %v", web.Addr, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status %d, want 200", resp.StatusCode)
		}
	})

	t.Run("SocketsLiveInHostNamespace", func(t *testing.T) {
		nsInode := fileInode(t, "/run/netns/"+a.NetNS)
		rootInode := fileInode(t, "/proc/self/ns/net")
		if nsInode == rootInode {
			t.Fatal("host namespace is the root namespace")
		}
		l, err := a.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if got := socketNetNS(t, l.(*net.TCPListener)); got != nsInode {
			t.Errorf("listener in netns inode %d, want host's %d (root is %d)", got, nsInode, rootInode)
		}
		// The host's loopback is its own: the root namespace cannot reach it.
		if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
			c.Close()
			t.Errorf("root namespace reached host loopback listener %s", l.Addr())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := a.DialContext(ctx, "tcp", l.Addr().String())
		if err != nil {
			t.Fatalf("host cannot reach its own loopback listener: %v", err)
		}
		defer c.Close()
		if got := socketNetNS(t, c.(*net.TCPConn)); got != nsInode {
			t.Errorf("dialed conn in netns inode %d, want %d", got, nsInode)
		}
		// Only the host has its address, so binding it proves the namespace.
		pc, err := a.ListenPacket("udp4", net.JoinHostPort(a.IP, "0"))
		if err != nil {
			t.Fatalf("bind host address in host: %v", err)
		}
		pc.Close()
		if pc, err := net.ListenPacket("udp4", net.JoinHostPort(a.IP, "0")); err == nil {
			pc.Close()
			t.Errorf("root namespace could bind host address %s", a.IP)
		}
	})

	t.Run("StopRestart", func(t *testing.T) {
		web.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := a.HTTPGet(ctx, "http://"+web.Addr+"/"); err == nil {
			t.Fatal("GET succeeded while the server was stopped")
		}
		web.Restart(t)
		mustGet(t, a, "http://"+web.Addr+"/", "srv-b")
	})

	t.Run("SetDownSetUp", func(t *testing.T) {
		b.SetDown(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := a.HTTPGet(ctx, "http://"+web.Addr+"/health"); err == nil {
			t.Fatal("GET succeeded while the host was down")
		}
		b.SetUp(t)
		mustEventuallyGet(t, a, "http://"+web.Addr+"/", "srv-b", 10*time.Second)
	})

	t.Run("SwitchTools", func(t *testing.T) {
		flows := sw.DumpFlows()
		if len(flows) != 1 || !strings.Contains(flows[0], "actions=NORMAL") {
			t.Fatalf("standalone bridge flows = %q, want one NORMAL flow", flows)
		}
		sw.Ofctl("add-flow", "priority=7,udp,tp_dst=9,actions=drop")
		if got := sw.DumpFlows("udp"); len(got) != 1 || !strings.Contains(got[0], "priority=7") {
			t.Errorf("after add-flow, udp flows = %q", got)
		}
		want := []string{"priority=7,udp,tp_dst=9 actions=drop"}
		if got := sw.DumpFlows("--no-stats", "udp"); !slices.Equal(got, want) {
			t.Errorf("udp flows without stats = %q, want %q", got, want)
		}
		if got := strings.TrimSpace(sw.Vsctl("get", "Interface", a.Link, "ofport")); got != strconv.Itoa(a.OFPort) {
			t.Errorf("vsctl ofport %q, want %d", got, a.OFPort)
		}
	})

	t.Run("SetController", func(t *testing.T) {
		// A controller we own that only says hello: enough for OVS to count
		// the session as connected. In secure mode the bridge then forwards
		// nothing by itself.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		sw.SetController(l.Addr().String())
		defer sw.DelController()
		hello := make(chan []byte, 1)
		go func() {
			defer close(hello)
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			// OFPT_HELLO: version 4 (OpenFlow 1.3), type 0, length 8, xid 1.
			if _, err := c.Write([]byte{4, 0, 0, 8, 0, 0, 0, 1}); err != nil {
				return
			}
			buf := make([]byte, 8)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			hello <- buf
			// Hold the session open until the listener is closed.
			_, _ = io.Copy(io.Discard, c)
		}()
		select {
		case got := <-hello:
			if len(got) != 8 || got[0] != 4 || got[1] != 0 {
				t.Fatalf("switch hello = % x, want version 4 type 0", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("bridge did not connect to the controller")
		}
		sw.WaitConnected(10 * time.Second)
		if got := strings.TrimSpace(sw.Vsctl("get", "bridge", sw.Name, "fail_mode")); got != "secure" {
			t.Errorf("fail_mode %q, want secure", got)
		}
		if got := strings.TrimSpace(sw.Vsctl("get", "controller", sw.Name, "connection_mode")); got != "out-of-band" {
			t.Errorf("connection_mode %q, want out-of-band", got)
		}
		sw.DelController()
		if got := strings.TrimSpace(sw.Vsctl("get-controller", sw.Name)); got != "" {
			t.Errorf("controller still set: %q", got)
		}
	})
}

// TestHost_HoldVIP checks a DSR member of each family: it takes packets
// for the VIP routed to it, and does not answer ARP or neighbour
// solicitations for it, so a host on the subnet cannot reach the VIP by
// itself.
func TestHost_HoldVIP(t *testing.T) {
	sw := NewSwitch(t)
	a, b := sw.AddHost(t, "a", sw.Addr(1)), sw.AddHost(t, "b", sw.Addr(2))
	for _, tc := range []struct {
		name, vip, member, prefix string
	}{
		{"IPv4", sw.Addr(100), b.IP, "/32"},
		{"IPv6", sw.Addr6(100), b.IP6, "/128"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b.HoldVIP(t, tc.vip)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if out, err := a.Exec(ctx, "ping", "-c", "1", "-W", "1", tc.vip); err == nil {
				t.Fatalf("ping %s on the subnet got a reply: the member claims the VIP\n%s", tc.vip, out)
			}
			if out, err := a.Exec(ctx, "ip", "route", "add", tc.vip+tc.prefix, "via", tc.member); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if out, err := a.Exec(ctx, "ping", "-c", "1", "-W", "2", tc.vip); err != nil {
				t.Fatalf("ping %s through the member: %v\n%s", tc.vip, err, out)
			}
		})
	}
}

// TestSwitch_Close checks that a closed switch leaves no link, namespace or
// daemon behind.
func TestSwitch_Close(t *testing.T) {
	sw := NewSwitch(t)
	h := sw.AddHost(t, "gone", sw.Addr(1))
	pids := daemonPIDs(sw)
	sw.Close()
	for _, name := range []string{sw.Name, h.Link} {
		if linkExists(name) {
			t.Errorf("link %s still exists", name)
		}
	}
	if _, err := os.Stat("/run/netns/" + h.NetNS); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s still exists (%v)", h.NetNS, err)
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("daemon pid %d still alive", pid)
		}
	}
	if _, err := h.Listen("tcp", ":0"); err == nil {
		t.Error("Listen on a closed host succeeded")
	}
}

// TestSeparateSwitch_Router checks a separate switch, cabled to a bed's
// bridge, and a router in front of it: the router's host reaches a host
// of the bridge through both switches (no controller: they switch on their
// own), until the separate switch dies; closing it leaves nothing of it.
func TestSeparateSwitch_Router(t *testing.T) {
	sw, sep := NewSwitch(t), NewSeparateSwitch(t)
	h := sw.AddHost(t, "h", sw.Addr(1))
	LinkSwitches(t, sw, sep)
	r := NewRouter(t, "r")
	r.Link(t, sep, sw.Addr(2)+"/24")
	c := r.AddHost(t, "c", r.Addr(2))
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	if out, err := h.Exec(ctx, "ip", "route", "add", "default", "via", sw.Addr(2)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := c.Exec(ctx, "ping", "-c", "1", "-W", "5", h.IP); err != nil {
		t.Fatalf("ping through the router and both switches: %v\n%s", err, out)
	}
	if edge, err := r.RouteOf(c.Link, c.IP, 40000, h.IP, 80); err != nil || !strings.HasPrefix(edge, namePrefix) {
		t.Errorf("the router's link toward %s: %q, %v", h.IP, edge, err)
	}
	sep.Kill()
	if out, err := c.Exec(ctx, "ping", "-c", "1", "-W", "1", h.IP); err == nil {
		t.Fatalf("ping through a dead switch answered:\n%s", out)
	}
	sep.Close()
	if _, err := os.Stat("/run/netns/" + sep.NetNS); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace %s still exists (%v)", sep.NetNS, err)
	}
}

// TestSwitch_AddBridge checks that a bridge added to a switch's daemons
// reaches the first through patch ports, and that closing it removes it
// and its hosts and leaves the first bridge running.
func TestSwitch_AddBridge(t *testing.T) {
	sw := NewSwitch(t)
	b := sw.AddBridge(t)
	h1, h2 := sw.AddHost(t, "one", sw.Addr(1)), b.AddHost(t, "two", sw.Addr(2))
	sw.AddPatch(t, sw.Name+"-p", b.Name+"-p")
	b.AddPatch(t, b.Name+"-p", sw.Name+"-p")
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	// Without a controller both bridges switch on their own (NORMAL).
	if out, err := h1.Exec(ctx, "ping", "-c", "1", "-W", "5", h2.IP); err != nil {
		t.Fatalf("ping across the patch: %v\n%s", err, out)
	}
	b.Close()
	for _, name := range []string{b.Name, h2.Link} {
		if linkExists(name) {
			t.Errorf("link %s still exists", name)
		}
	}
	if got := strings.TrimSpace(sw.Vsctl("list-br")); got != sw.Name {
		t.Errorf("bridges %q, want %s alone", got, sw.Name)
	}
}

func TestStaleName(t *testing.T) {
	dead := deadPID(t)
	self := strconv.FormatInt(int64(os.Getpid()), 36)
	tests := []struct {
		name string
		link string
		want bool
	}{
		{"DeadOwner", namePrefix + strconv.FormatInt(int64(dead), 36) + "-1br", true},
		{"DeadOwnerNamespace", namePrefix + strconv.FormatInt(int64(dead), 36) + "-1-srv1", true},
		{"LiveOwner", namePrefix + self + "-1v0", false},
		{"OtherPrefix", "veth" + self + "-1", false},
		{"NoDash", namePrefix + "zzz", false},
		{"NotBase36", namePrefix + "!!-1br", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := staleName(tt.link); got != tt.want {
				t.Errorf("staleName(%q) = %v, want %v", tt.link, got, tt.want)
			}
		})
	}
}

func TestValidHostName(t *testing.T) {
	tests := []struct {
		name string
		host string
		want bool
	}{
		{"Plain", "srv1", true},
		{"DashUnderscore", "web_a-1", true},
		{"Empty", "", false},
		{"Slash", "a/b", false},
		{"Space", "a b", false},
		{"TooLong", strings.Repeat("x", 21), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := validHostName(tt.host); got != tt.want {
				t.Errorf("validHostName(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

func TestProcessAlive(t *testing.T) {
	tests := []struct {
		name string
		pid  int
		want bool
	}{
		{"Self", os.Getpid(), true},
		{"Dead", deadPID(t), false},
		{"Zombie", zombiePID(t), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := processAlive(tt.pid); got != tt.want {
				t.Errorf("processAlive(%d) = %v, want %v", tt.pid, got, tt.want)
			}
		})
	}
}

func mustGet(tb testing.TB, h *Host, url, want string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := h.HTTPGet(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	if got != want {
		tb.Fatalf("GET %s from %s = %q, want %q", url, h.Name, got, want)
	}
}

func mustEventuallyGet(tb testing.TB, h *Host, url, want string, within time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(within)
	var lastErr error
	for i := 0; i < 100 && time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got, err := h.HTTPGet(ctx, url)
		cancel()
		if err == nil && got == want {
			return
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	tb.Fatalf("GET %s from %s never returned %q: %v", url, h.Name, want, lastErr)
}

func fileInode(tb testing.TB, path string) uint64 {
	tb.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		tb.Fatal(err)
	}
	return st.Ino
}

// socketNetNS asks the kernel which namespace a socket belongs to
// (ioctl SIOCGSKNS) and returns that namespace's inode.
func socketNetNS(tb testing.TB, c syscall.Conn) uint64 {
	tb.Helper()
	const siocgskns = 0x894C
	raw, err := c.SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	var ino uint64
	var opErr error
	err = raw.Control(func(fd uintptr) {
		nsfd, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, siocgskns, 0)
		if errno != 0 {
			opErr = errno
			return
		}
		defer syscall.Close(int(nsfd))
		var st syscall.Stat_t
		opErr = syscall.Fstat(int(nsfd), &st)
		ino = st.Ino
	})
	if err != nil || opErr != nil {
		tb.Fatalf("SIOCGSKNS: %v %v", err, opErr)
	}
	return ino
}

func daemonPIDs(sw *Switch) []int {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var pids []int
	for _, d := range sw.daemons {
		pids = append(pids, d.cmd.Process.Pid)
	}
	return pids
}

// deadPID returns the PID of a process that has exited and been reaped.
func deadPID(tb testing.TB) int {
	tb.Helper()
	cmd := execTrue(tb)
	if err := cmd.Wait(); err != nil {
		tb.Fatal(err)
	}
	return cmd.Process.Pid
}

// zombiePID returns the PID of an exited child that is not reaped until the
// test ends.
func zombiePID(tb testing.TB) int {
	tb.Helper()
	cmd := execTrue(tb)
	tb.Cleanup(func() { _ = cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 500 && time.Now().Before(deadline); i++ {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
		if err == nil && strings.Contains(string(data), ") Z ") {
			return cmd.Process.Pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	tb.Fatal("child did not become a zombie")
	return 0
}

func execTrue(tb testing.TB) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return cmd
}
