package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sdnlb/sdnlb/health"
	"github.com/sdnlb/sdnlb/internal/peerlog"
)

// sdnlb agent is what a member runs for an AGENT monitor (HAProxy's
// agent check): to every connection it writes one line and closes, "NN%"
// with NN the share of the host's CPU time idle over the last second,
// then the words of the state file, or "ready" while it holds none.

const agentUsage = `Usage: sdnlb agent [--listen ADDR] [--allow ADDRS] [--state-file FILE]

Answers sdnlb's AGENT monitor on this member: every connection gets one line,
"NN%" (the host's CPU idle over the last second) and the words of the state file,
such as "37% drain", or "ready" while it holds none; then the connection closes.
It listens on loopback unless told otherwise; beyond loopback it answers only
the sdnlb nodes that --allow names:

  sdnlb agent --listen 10.0.0.5:5555 --allow 10.0.0.250,10.0.0.251

`

// agentSample is how often the agent reads the host's CPU times and the
// state file.
const agentSample = time.Second

// maxStateFile bounds what the agent reads of the state file.
const maxStateFile = 512

// runAgent serves the agent protocol until ctx ends.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sdnlb agent", flag.ContinueOnError)
	fs.SetOutput(stdout)
	listen := fs.String("listen", "127.0.0.1:5555", "the address to answer on, with the AGENT monitor's port; beyond loopback, --allow is required")
	allow := fs.String("allow", "", "comma-separated addresses and prefixes the AGENT monitors probe from (every sdnlb node: the leader probes); connections from elsewhere are closed unanswered (0.0.0.0/0,::/0: anyone)")
	stateFile := fs.String("state-file", "", "a file whose words the agent adds to its answer: drain, ready, up, maint, down, fail or stopped, and a reason after #; garbage in it is ignored and logged")
	fs.Usage = func() {
		fmt.Fprint(stdout, agentUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("agent: unexpected argument %q", fs.Arg(0))
	}
	allowed, err := parseAllow("--allow", *allow)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if len(allowed) == 0 && !loopbackAddr(*listen) {
		return fmt.Errorf("agent: --listen %s answers beyond loopback: set --allow to the addresses of the sdnlb nodes that probe it", *listen)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	a := &hostAgent{stat: "/proc/stat", stateFile: *stateFile, allow: allowed, log: log, peer: peerlog.New(log, time.Minute)}
	if err := a.sample(time.Now()); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	a.log.Info("agent listening", "addr", ln.Addr().String(), "allow", *allow, "state_file", *stateFile)
	go func() {
		tick := time.NewTicker(agentSample)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if err := a.sample(now); err != nil {
					a.log.Warn("agent: reading the CPU times failed; the answer stays as it was", "err", err)
				}
			}
		}
	}()
	return a.serve(ctx, ln)
}

// hostAgent answers for the host it runs on.
type hostAgent struct {
	stat      string // the kernel's CPU times: /proc/stat
	stateFile string // "" for none
	// allow holds the sources it answers; empty, any (on loopback only).
	allow []netip.Prefix
	log   *slog.Logger
	peer  *peerlog.Log // what connections cause

	last     cpuTimes
	idle     int       // percent, over the last second
	warnedAt time.Time // when garbage in the state file was last logged
	line     atomic.Pointer[[]byte]
}

// serve writes the current line to every connection and closes it, until
// ctx ends. A line is a few bytes: it fits the socket's buffer at once.
func (a *hostAgent) serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		conn, err := ln.Accept()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil { // out of file descriptors, say: try again
			a.log.Warn("agent: accept failed", "err", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if from, ok := a.allowed(conn.RemoteAddr()); !ok {
			a.peer.Warn(time.Now(), "agent connection refused", from.String(), "agent: connection refused: the source is not in --allow",
				"remote", conn.RemoteAddr().String())
			_ = conn.Close()
			continue
		}
		_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = conn.Write(*a.line.Load())
		_ = conn.Close()
	}
}

// allowed reports whether the agent answers a connection from remote, and
// its source address.
func (a *hostAgent) allowed(remote net.Addr) (netip.Addr, bool) {
	var from netip.Addr
	if tcp, ok := remote.(*net.TCPAddr); ok {
		from = tcp.AddrPort().Addr().Unmap()
	}
	return from, len(a.allow) == 0 || slices.ContainsFunc(a.allow, func(p netip.Prefix) bool { return p.Contains(from) })
}

// sample reads the CPU times and the state file and makes the line the
// agent answers with: over the time since the last sample, or since boot
// at the first.
func (a *hostAgent) sample(now time.Time) error {
	b, err := readHead(a.stat, 1024)
	if err != nil {
		return err
	}
	t, err := parseCPUTimes(b)
	if err != nil {
		return err
	}
	if idle, ok := t.idleSince(a.last); ok { // else no time passed
		a.last, a.idle = t, idle
	}
	line := strconv.AppendInt(make([]byte, 0, 64), int64(a.idle), 10)
	line = append(line, '%')
	if words := a.stateWords(now); words != "" {
		line = append(append(line, ' '), words...)
	}
	line = append(cutLine(line, health.MaxAgentLine), '\n')
	a.line.Store(&line)
	return nil
}

// stateWords are the state file's words, checked; "ready" when the file
// is gone or holds none, so that removing a drain from it, or the file,
// ends the drain; "" without a state file, or when it holds garbage
// (logged at most once a minute), which leaves the member as it was.
func (a *hostAgent) stateWords(now time.Time) string {
	if a.stateFile == "" {
		return ""
	}
	b, err := readHead(a.stateFile, maxStateFile+1)
	if errors.Is(err, os.ErrNotExist) {
		return "ready"
	}
	var words string
	if err == nil {
		if words, err = checkStateWords(b); err == nil && words == "" {
			words = "ready"
		}
	}
	if err != nil {
		if now.Sub(a.warnedAt) >= time.Minute {
			a.warnedAt = now
			a.log.Warn("agent: the state file is ignored", "file", a.stateFile, "err", err)
		}
		return ""
	}
	return words
}

// checkStateWords checks what a state file holds: agent states and a
// reason after #, on one line. It returns them as the agent says them.
func checkStateWords(b []byte) (string, error) {
	if len(b) > maxStateFile {
		return "", fmt.Errorf("longer than %d bytes", maxStateFile)
	}
	text := strings.TrimSpace(string(b))
	if strings.ContainsAny(text, "\r\n") {
		return "", errors.New("more than one line")
	}
	words, reason, _ := strings.Cut(text, "#")
	fields := strings.FieldsFunc(words, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
	for i, w := range fields {
		if !health.IsAgentState(w) {
			return "", fmt.Errorf("%q is not one of drain, ready, up, maint, down, fail, stopped", w)
		}
		fields[i] = strings.ToLower(w)
	}
	out := strings.Join(fields, " ")
	if reason = strings.TrimSpace(reason); out != "" && reason != "" { // a reason goes with a state
		out += " # " + reason
	}
	return out, nil
}

// cutLine cuts line to at most n bytes, on a rune boundary: what goes
// past the monitor's bound is the end of the state file's reason, and a
// line over it would fail the probe and take the member DOWN.
func cutLine(line []byte, n int) []byte {
	if len(line) <= n {
		return line
	}
	for n > 0 && !utf8.RuneStart(line[n]) {
		n--
	}
	return line[:n]
}

// readHead reads at most n bytes of a regular file. Anything else is
// refused: a FIFO would block the agent until someone writes to it, and a
// device could be read forever.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, int64(n)))
}

// cpuTimes are the host's CPU times since boot, in clock ticks: all of
// them, and those idle or waiting for I/O.
type cpuTimes struct{ total, idle uint64 }

// parseCPUTimes reads the first line of /proc/stat, "cpu  user nice
// system idle iowait irq softirq steal guest guest_nice". The guest times
// are in user and nice already; older kernels stop after idle.
func parseCPUTimes(stat []byte) (cpuTimes, error) {
	line, _, _ := bytes.Cut(stat, []byte{'\n'})
	rest, ok := bytes.CutPrefix(line, []byte("cpu "))
	if !ok {
		return cpuTimes{}, fmt.Errorf("/proc/stat starts with %.32q, not the CPU times", line)
	}
	var t cpuTimes
	fields := 0
	for _, f := range bytes.Fields(rest) {
		if fields == 8 { // guest, guest_nice
			break
		}
		v, err := strconv.ParseUint(string(f), 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat: CPU time %.32q: %w", f, err)
		}
		t.total += v
		if fields == 3 || fields == 4 { // idle, iowait
			t.idle += v
		}
		fields++
	}
	if fields < 4 {
		return cpuTimes{}, fmt.Errorf("/proc/stat: %d CPU times, want at least 4", fields)
	}
	return t, nil
}

// idleSince is the share of the CPU time since last that was idle, in
// percent, rounded; ok is false when no time passed.
func (t cpuTimes) idleSince(last cpuTimes) (percent int, ok bool) {
	if t.total <= last.total || t.idle < last.idle {
		return 0, false
	}
	total, idle := t.total-last.total, min(t.idle-last.idle, t.total-last.total)
	return int((200*idle + total) / (2 * total)), true
}
