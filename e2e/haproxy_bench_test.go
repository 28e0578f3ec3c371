//go:build e2e && e2e_bench

package e2e

// The HAProxy failover comparison is a measurement, not a check, so it
// stays out of scripts/test.sh. Run it as root on a quiet machine:
//
//	go test -race -count=1 -tags 'e2e e2e_bench' -run TestFailoverComparison -v ./e2e/

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// haproxyConfig balances the members like the sdnlb scenario: round robin,
// an HTTP check of /health every 200 ms, DOWN after 2 failures, UP after 2
// passes, and the check bounded as sdnlb's monitor bounds its probe
// (monTimeout).
const haproxyConfig = `global
	stats socket {{SOCK}} mode 600 level admin
	maxconn 4096

defaults
	mode {{MODE}}
	timeout connect 100ms
	timeout check {{CHECK}}
	timeout client 5s
	timeout server 5s

frontend web
	bind {{VIP}}
	default_backend members

backend members
	balance roundrobin
	option httpchk GET /health
{{SERVERS}}`

// haproxyProc is HAProxy running in the foreground in a host's namespace.
type haproxyProc struct {
	sock string
	cmd  *exec.Cmd
	done chan struct{}

	mu  sync.Mutex
	out bytes.Buffer
}

// startHAProxy runs HAProxy in h's namespace, balancing members (name →
// address:port) on port 80 of addr, one of h's, in mode ("http" or
// "tcp"), and waits until every server is UP.
func startHAProxy(tb testing.TB, h *Host, addr, mode string, members map[string]string) *haproxyProc {
	tb.Helper()
	if _, err := exec.LookPath("haproxy"); err != nil {
		tb.Fatalf("haproxy not installed (apt-get install -y haproxy): %v", err)
	}
	dir := tb.TempDir()
	names := make([]string, 0, len(members))
	for name := range members {
		names = append(names, name)
	}
	slices.Sort(names)
	var servers strings.Builder
	for _, name := range names {
		fmt.Fprintf(&servers, "\tserver %s %s check inter 200 fall 2 rise 2\n", name, members[name])
	}
	p := &haproxyProc{sock: filepath.Join(dir, "haproxy.sock"), done: make(chan struct{})}
	cfg := strings.NewReplacer("{{SOCK}}", p.sock, "{{MODE}}", mode, "{{VIP}}", net.JoinHostPort(addr, "80"),
		"{{CHECK}}", strconv.FormatInt(monTimeout.Milliseconds(), 10)+"ms", "{{SERVERS}}", servers.String()).Replace(haproxyConfig)
	cfgFile := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}

	p.cmd = exec.Command("ip", "netns", "exec", h.NetNS, "haproxy", "-db", "-f", cfgFile)
	p.cmd.Stdout, p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.out}, &lockedWriter{mu: &p.mu, w: &p.out}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig follows the creating thread: keep it for the child's life.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(p.done)
		if err := p.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = p.cmd.Wait()
	}()
	if err := <-started; err != nil {
		tb.Fatalf("start haproxy: %v", err)
	}
	tb.Cleanup(func() { p.stop(tb) })

	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 500; i++ {
		up := 0
		for _, name := range names {
			if st, err := p.serverStatus(name); err == nil && st == "UP" {
				up++
			}
		}
		if up == len(names) {
			return p
		}
		select {
		case <-p.done:
			tb.Fatalf("haproxy exited: %s", p.output())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("haproxy servers not all UP after 10s: %s", p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *haproxyProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *haproxyProc) stop(tb testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		tb.Logf("haproxy ignored SIGTERM for 5s, killing it")
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// serverStatus asks the stats socket for a server's check status: "UP",
// "DOWN", or a transition such as "UP 1/2" (up, one check failed) or
// "DOWN 1/2" (down, one check passed).
func (p *haproxyProc) serverStatus(server string) (string, error) {
	conn, err := net.DialTimeout("unix", p.sock, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return "", err
	}
	data, err := readAll(conn)
	if err != nil {
		return "", err
	}
	rows, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(data), "# "))).ReadAll()
	if err != nil || len(rows) < 2 {
		return "", fmt.Errorf("show stat: %q: %v", data, err)
	}
	col := slices.Index(rows[0], "status")
	svCol := slices.Index(rows[0], "svname")
	if col < 0 || svCol < 0 {
		return "", fmt.Errorf("show stat: no status or svname column in %q", rows[0])
	}
	for _, row := range rows[1:] {
		if len(row) > col && row[svCol] == server {
			return row[col], nil
		}
	}
	return "", fmt.Errorf("show stat: no server %s", server)
}

// TestFailoverComparison runs the failover of the health scenarios on
// HAProxy and then on sdnlb, on one fresh test bed per kind of failure, and
// logs both side by side.
func TestFailoverComparison(t *testing.T) {
	for _, tt := range []struct {
		name   string
		kill   func(t *testing.T, h *Host, s *HTTPServer)
		revive func(t *testing.T, h *Host, s *HTTPServer)
	}{
		{"ServerStopped",
			func(t *testing.T, h *Host, s *HTTPServer) { s.Stop() },
			func(t *testing.T, h *Host, s *HTTPServer) { s.Restart(t) }},
		{"HostGone",
			func(t *testing.T, h *Host, s *HTTPServer) { h.SetDown(t) },
			func(t *testing.T, h *Host, s *HTTPServer) { h.SetUp(t) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const victim = 1
			sw := NewSwitch(t)
			b := &lbBed{sw: sw}
			for i := 0; i < 2; i++ {
				b.clients = append(b.clients, sw.AddHost(t, "c"+strconv.Itoa(i+1), sw.Addr(byte(1+i))))
			}
			for i := 0; i < 3; i++ {
				b.addMemberHost(t)
			}
			h, srv := b.members[victim], b.servers[victim]
			kill := func() { tt.kill(t, h, srv) }
			revive := func() { tt.revive(t, h, srv) }

			// HAProxy first, while the bridge switches on its own (NORMAL).
			lbHost := sw.AddHost(t, "lb", sw.Addr(100))
			backends := map[string]string{}
			for i, s := range b.servers {
				backends[s.Name] = net.JoinHostPort(b.members[i].IP, strconv.Itoa(memberPort))
			}
			hp := startHAProxy(t, lbHost, lbHost.IP, "http", backends)
			hf := measureFailover(t, failoverRun{
				clients: b.clients, url: "http://" + net.JoinHostPort(lbHost.IP, "80") + "/",
				srv: srv, kill: kill, revive: revive,
				isUp: func() bool {
					st, err := hp.serverStatus(srv.Name)
					if err != nil {
						t.Errorf("haproxy stats: %v", err)
					}
					return strings.HasPrefix(st, "UP")
				},
			})
			logFailover(t, "haproxy", hf)
			hp.stop(t)

			// Then sdnlb takes the bridge over, with a VIP of its own.
			b.lb = startSDNLB(t)
			b.lb.Connect(sw)
			dumpOnFailure(t, sw, b.lb)
			b.vip = b.lb.MustCreateVIP("web", sw.Addr(101), sdnlb.ProtocolTCP, vipPort, nil)
			b.pool = b.lb.MustCreatePool("web", b.vip, sdnlb.RoundRobin, sdnlb.DispatchController)
			for _, m := range b.members {
				b.mems = append(b.mems, b.lb.MustCreateMember(b.pool, m.IP, memberPort))
			}
			b.lb.WaitPoolMembers(b.pool.ID, len(b.mems), 10*time.Second)
			b.lb.MustCreateMonitor(b.pool, httpMonitorFields())
			for _, m := range b.mems {
				b.lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
			}
			b.url = "http://" + net.JoinHostPort(b.vip.Address, strconv.Itoa(vipPort)) + "/"
			sf := runFailover(t, b, victim, kill, revive)

			var table strings.Builder
			fmt.Fprintf(&table, "failover %s (check every %v, fall %d, rise %d, check timeout %v; load: 2 clients, a new connection every %v each):\n",
				tt.name, monDelay, monMaxRetries, monRise, monTimeout, loadEvery)
			fmt.Fprintf(&table, "%-8s %10s %10s %9s %8s %9s\n", "", "detection", "recovery", "requests", "failed", "in window")
			for _, row := range []struct {
				name string
				f    failover
			}{{"haproxy", hf}, {"sdnlb", sf}} {
				all, outside := row.f.failures()
				fmt.Fprintf(&table, "%-8s %10v %10v %9d %8d %9d\n", row.name,
					row.f.detection().Round(time.Millisecond), row.f.recovery().Round(time.Millisecond),
					len(row.f.results), all, all-outside)
			}
			t.Log("\n" + table.String())
		})
	}
}
