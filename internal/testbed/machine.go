package testbed

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// machineEnv marks every process a Machine's commands start: its value is
// the creating process's PID in base 36, a dash and a sequence number.
const machineEnv = "SDNLB_TESTBED_MACHINE"

// machineDirs get an empty tmpfs in a Machine: the run directory (network
// namespace names, daemons' sockets and pidfiles), files served by hand,
// and Open vSwitch's database and logs at their default paths.
var machineDirs = []string{"/run", "/srv", "/etc/openvswitch", "/var/log/openvswitch"}

var machineSeq atomic.Int64

// Machine stands in for a whole machine, for commands written for one
// (the README's): a mount and a network namespace of its own, with an empty
// /run, /srv, /etc/openvswitch and /var/log/openvswitch, a fresh /sys and
// loopback up. The network namespaces, bridges and links the commands name,
// the ports they listen on and the daemons they start at default paths are
// the machine's own, so fixed names never meet another test's or the real
// machine's. A sleeping process holds the namespaces; every process the
// commands start carries a marker in its environment, so Close ends them
// all, and a later run ends those a crashed run left behind.
type Machine struct {
	tb     TB
	marker string
	env    []string
	holder *exec.Cmd
	done   chan struct{} // closed once the holder has been waited for

	closeOnce sync.Once
}

// NewMachine starts a machine and registers Close with tb.Cleanup.
func NewMachine(tb TB) *Machine {
	tb.Helper()
	requireRoot(tb)
	for _, bin := range []string{"unshare", "nsenter", "bash"} {
		if _, err := exec.LookPath(bin); err != nil {
			tb.Fatalf("a test machine needs %s: %v", bin, err)
		}
	}
	endStaleMachines(tb)
	m := &Machine{
		tb:     tb,
		marker: strconv.FormatInt(int64(os.Getpid()), 36) + "-" + strconv.FormatInt(machineSeq.Add(1), 36),
		done:   make(chan struct{}),
	}
	m.env = append(os.Environ(), machineEnv+"="+m.marker)

	var setup strings.Builder
	for _, dir := range machineDirs {
		fmt.Fprintf(&setup, "mount -t tmpfs tmpfs %s && ", dir)
	}
	setup.WriteString("mount -t sysfs sysfs /sys && ip link set lo up && echo ready && exec sleep infinity")
	cmd := exec.Command("unshare", "--mount", "--net", "--propagation", "private", "sh", "-c", setup.String())
	cmd.Env = m.env
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	m.holder = cmd
	if err := startLocked(cmd, m.done, func() { _ = cmd.Wait() }); err != nil {
		tb.Fatalf("start the machine's namespaces: %v", err)
	}
	tb.Cleanup(m.Close)
	ready := make(chan bool, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line) == "ready"
	}()
	select {
	case ok := <-ready:
		if !ok {
			tb.Fatalf("the machine's namespaces did not come up (its setup: %s)", setup.String())
		}
	case <-time.After(cmdTimeout):
		tb.Fatalf("the machine's namespaces not up after %v", cmdTimeout)
	}
	return m
}

// Run runs script with bash (-e, -o pipefail) inside the machine, from /,
// and returns its combined output. Processes it leaves in the background
// must not hold its output open: send theirs elsewhere.
func (m *Machine) Run(ctx context.Context, script string) (string, error) {
	cmd := exec.CommandContext(ctx, "nsenter", m.enter("bash", "-e", "-o", "pipefail", "-c", script)...)
	cmd.Env = m.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w\n%s", err, out.String())
	}
	return out.String(), nil
}

// Launcher writes a script that runs binary inside the machine with the
// arguments it is given, and returns its path, for StartSDNLB. The script
// execs, so the process started is the binary itself and gets its signals.
// Unlike the commands of Run, it carries no marker: its starter stops it.
func (m *Machine) Launcher(binary string) string {
	m.tb.Helper()
	args := m.enter(binary)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	path := filepath.Join(m.tb.TempDir(), filepath.Base(binary))
	script := "#!/bin/sh\nexec nsenter " + strings.Join(quoted, " ") + ` "$@"` + "\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		m.tb.Fatalf("launcher: %v", err)
	}
	return path
}

// enter returns nsenter's arguments that run name with args in the machine.
func (m *Machine) enter(name string, args ...string) []string {
	return append([]string{"--target", strconv.Itoa(m.holder.Process.Pid), "--mount", "--net", "--", name}, args...)
}

// Close ends every process the machine's commands started, then the
// holder; the namespaces, and everything in them, go with the last one.
func (m *Machine) Close() {
	m.closeOnce.Do(func() {
		endMarked(m.tb, machineEnv, func(v string) bool { return v == m.marker })
		<-m.done
	})
}

// endStaleMachines ends the processes of machines whose creator is dead.
func endStaleMachines(tb TB) {
	tb.Helper()
	endMarked(tb, machineEnv, func(v string) bool {
		pid36, _, ok := strings.Cut(v, "-")
		pid, err := strconv.ParseInt(pid36, 36, 32)
		return ok && err == nil && !processAlive(int(pid))
	})
}

// endMarked sends SIGTERM to the processes whose marker, the environment
// variable env, match accepts, then SIGKILL to those still there 5 s later.
func endMarked(tb TB, env string, match func(string) bool) {
	tb.Helper()
	pids := markedProcesses(env, match)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; i < 500 && len(pids) > 0 && time.Now().Before(deadline); i++ {
		time.Sleep(10 * time.Millisecond)
		pids = markedProcesses(env, match)
	}
	for _, pid := range pids {
		tb.Logf("process %d of a test machine ignored SIGTERM for 5s, killing it", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// markedProcesses lists the live processes whose marker, the environment
// variable env, match accepts.
func markedProcesses(env string, match func(string) bool) []int {
	return liveProcesses(func(proc string) bool {
		environ, err := os.ReadFile(proc + "/environ")
		if err != nil {
			return false // gone, or a kernel thread
		}
		for _, kv := range bytes.Split(environ, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte(env+"=")); ok && match(string(v)) {
				return true
			}
		}
		return false
	})
}
