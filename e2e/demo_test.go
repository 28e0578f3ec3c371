//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/internal/testbed"
)

const demoTimeout = 3 * time.Minute

// demoProc is cmd/sdnlb-demo running as a child, its output kept line by
// line.
type demoProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed at EOF of its output, when it exits
	err   error

	mu  sync.Mutex
	out []string
}

// startDemo builds cmd/sdnlb-demo with -race and runs it with args, using
// the sdnlb that TestMain built. Cleanup interrupts it if it still runs.
func startDemo(t *testing.T, args ...string) *demoProc {
	t.Helper()
	requireRootE2E(t)
	bin := buildDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, append([]string{"--sdnlb", sdnlbBinary, "--api-addr", "127.0.0.1:0"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// Past the deadline: SIGINT first, so that the demo still tears down.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	p := &demoProc{cmd: cmd, done: make(chan struct{})}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		p.wait()
		if t.Failed() {
			t.Logf("demo output:\n%s", p.output())
		}
		requireNoLeftovers(t, p.cmd.Process.Pid)
	})
	return p
}

// buildDemo builds cmd/sdnlb-demo with -race.
func buildDemo(t *testing.T) string {
	t.Helper()
	bin, err := testbed.Build(context.Background(), t.TempDir(), "./cmd/sdnlb-demo", true)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// wait waits for the demo to exit and returns how it ended. Call it from
// the test's goroutine only.
func (p *demoProc) wait() error {
	<-p.done
	if p.cmd.ProcessState == nil {
		p.err = p.cmd.Wait()
	}
	return p.err
}

func (p *demoProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.out, "\n")
}

// waitLine waits until the demo has printed a line containing substr.
func (p *demoProc) waitLine(t *testing.T, substr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for i := 0; i < 10000 && time.Now().Before(deadline); i++ {
		if strings.Contains(p.output(), substr) {
			return
		}
		select {
		case <-p.done:
			if strings.Contains(p.output(), substr) {
				return
			}
			t.Fatalf("demo exited without printing %q", substr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("demo did not print %q within %v", substr, timeout)
}

func requireRootE2E(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the demo needs root (network namespaces, OVS)")
	}
	if sdnlbBinary == "" {
		t.Fatal("sdnlb binary not built (TestMain builds it when run as root)")
	}
}

// requireNoLeftovers checks that no interface or namespace of the demo
// process pid remains.
func requireNoLeftovers(t *testing.T, pid int) {
	t.Helper()
	prefix := "sdt" + strconv.FormatInt(int64(pid), 36) + "-"
	for _, dir := range []string{"/sys/class/net", "/run/netns"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), prefix) {
				t.Errorf("demo left %s/%s behind", dir, e.Name())
			}
		}
	}
}

var answersLine = regexp.MustCompile(`(?m)^traffic with srv2 back: (.*)$`)

// TestDemo runs the demo non-interactively: it must balance the VIP over
// every member, fail srv2 over and back, and leave nothing behind.
func TestDemo(t *testing.T) {
	p := startDemo(t, "--check")
	if err := p.wait(); err != nil {
		t.Fatalf("demo --check: %v\n%s", err, p.output())
	}
	out := p.output()
	if !strings.Contains(out, "check passed") {
		t.Fatalf("demo --check did not pass:\n%s", out)
	}
	m := answersLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no answer counts in the demo output:\n%s", out)
	}
	for _, srv := range []string{"srv1", "srv2", "srv3"} {
		c := regexp.MustCompile(`\b` + srv + `=(\d+)`).FindStringSubmatch(m[1])
		if c == nil || c[1] == "0" {
			t.Errorf("the VIP never answered from %s: %s", srv, m[1])
		}
	}
}

// TestDemo_Interrupt runs the demo as a user would: Enter stops srv2,
// Ctrl-C (SIGINT) tears everything down and exits 0.
func TestDemo_Interrupt(t *testing.T) {
	p := startDemo(t)
	p.waitLine(t, "Press Enter", demoTimeout)
	if _, err := io.WriteString(p.stdin, "\n"); err != nil {
		t.Fatal(err)
	}
	p.waitLine(t, "srv2 stopped", 10*time.Second)
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(); err != nil {
		t.Fatalf("demo after Ctrl-C: %v\n%s", err, p.output())
	}
	if out := p.output(); !strings.Contains(out, "tearing down") || !strings.HasSuffix(out, "done.") {
		t.Errorf("demo output does not end with the teardown:\n%s", out)
	}
}

// TestDemo_OtherOpenvSwitch runs the demo next to another Open vSwitch
// with a userspace datapath, as a system one by hand (README, "By hand"):
// one network namespace has room for one userspace datapath only, and the
// demo must say so and what to do, not end on a raw Open vSwitch log line.
// The two run on a machine of their own, not to stop other tests' bridges.
func TestDemo_OtherOpenvSwitch(t *testing.T) {
	requireRootE2E(t)
	m := testbed.NewMachine(t)
	ctx, cancel := context.WithTimeout(context.Background(), demoTimeout)
	defer cancel()
	if out, err := m.Run(ctx, `/usr/share/openvswitch/scripts/ovs-ctl --no-ovs-vswitchd --system-id=random start
ovs-vswitchd --pidfile --detach --log-file 2>/dev/null
ovs-vsctl add-br br0 -- set bridge br0 datapath_type=netdev`); err != nil {
		t.Fatalf("the other Open vSwitch: %v\n%s", err, out)
	}
	demo := buildDemo(t)
	out, err := m.Run(ctx, demo+" --check --sdnlb "+sdnlbBinary)
	if err == nil {
		t.Fatalf("demo --check next to another userspace Open vSwitch passed:\n%s", out)
	}
	for _, want := range []string{"another Open vSwitch runs a userspace datapath", "ovs-vswitchd (pid ", "ovs-ctl stop"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not ready") {
		t.Errorf("demo output has the raw failure:\n%s", out)
	}
}
