package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sdnlb/sdnlb/health"
	"github.com/sdnlb/sdnlb/internal/peerlog"
)

// statText is /proc/stat as a 2-CPU host writes it, cut short.
const statText = `cpu  4705 150 1120 16250 520 0 40 10 300 20
cpu0 2355 75 560 8125 260 0 20 5 150 10
cpu1 2350 75 560 8125 260 0 20 5 150 10
intr 114930548 113199788 3 0 5 263 0 4 [... lots more numbers ...]
ctxt 1990473
`

func TestParseCPUTimes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		stat        string
		total, idle uint64
	}{
		// Guest times are in user and nice already: not counted twice.
		{"Linux", statText, 4705 + 150 + 1120 + 16250 + 520 + 0 + 40 + 10, 16250 + 520},
		{"NoSteal", "cpu  10 0 10 70 10 0 0\n", 100, 80},
		{"Old", "cpu  10 0 10 80\n", 100, 80},
		{"NoNewline", "cpu 1 2 3 4 5", 15, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCPUTimes([]byte(tc.stat))
			if err != nil || got.total != tc.total || got.idle != tc.idle {
				t.Fatalf("got %+v, %v; want total %d, idle %d", got, err, tc.total, tc.idle)
			}
		})
	}
	for name, stat := range map[string]string{
		"Empty":      "",
		"NotCPU":     "intr 1 2 3\ncpu  1 2 3 4\n",
		"PerCPU":     "cpu0 1 2 3 4\n",
		"TooFew":     "cpu  1 2 3\n",
		"NotNumbers": "cpu  1 2 x 4\n",
		"Negative":   "cpu  1 2 -3 4\n",
		"Overflow":   "cpu  1 2 3 99999999999999999999999\n",
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := parseCPUTimes([]byte(stat)); err == nil {
				t.Fatalf("%q read as %+v", stat, got)
			}
		})
	}
}

func TestCPUTimes_IdleSince(t *testing.T) {
	for _, tc := range []struct {
		name      string
		last, now cpuTimes
		percent   int
		ok        bool
	}{
		{"SinceBoot", cpuTimes{}, cpuTimes{total: 1000, idle: 250}, 25, true},
		{"Idle", cpuTimes{100, 50}, cpuTimes{200, 150}, 100, true},
		{"Busy", cpuTimes{100, 50}, cpuTimes{200, 50}, 0, true},
		{"RoundsUp", cpuTimes{0, 0}, cpuTimes{200, 75}, 38, true}, // 37.5
		{"RoundsDown", cpuTimes{0, 0}, cpuTimes{300, 112}, 37, true},
		{"NoTimePassed", cpuTimes{100, 50}, cpuTimes{100, 50}, 0, false},
		{"WentBack", cpuTimes{100, 50}, cpuTimes{90, 50}, 0, false},
		{"IdleWentBack", cpuTimes{100, 50}, cpuTimes{200, 40}, 0, false}, // iowait may fall
		{"IdleAboveTotal", cpuTimes{100, 50}, cpuTimes{110, 80}, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if p, ok := tc.now.idleSince(tc.last); p != tc.percent || ok != tc.ok {
				t.Fatalf("got %d%%, %v; want %d%%, %v", p, ok, tc.percent, tc.ok)
			}
		})
	}
}

func TestCheckStateWords(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"\n":                        "",
		"drain\n":                   "drain",
		"DRAIN":                     "drain",
		"  maint  ":                 "maint",
		"drain,ready\tup":           "drain ready up",
		"maint # kernel upgrade\n":  "maint # kernel upgrade",
		"down#disk":                 "down # disk",
		"# nothing to say but this": "",
		"stopped fail":              "stopped fail",
	} {
		if got, err := checkStateWords([]byte(in)); err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"garbage", "75%", "drain 75%", "drain\nready", "maxconn:10", strings.Repeat("up ", 200)} {
		if got, err := checkStateWords([]byte(in)); err == nil {
			t.Errorf("%q: taken as %q", in, got)
		}
	}
}

// TestHostAgent runs the agent on loopback over a made-up /proc/stat and
// state file.
func TestHostAgent(t *testing.T) {
	dir := t.TempDir()
	stat, state := filepath.Join(dir, "stat"), filepath.Join(dir, "state")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(stat, "cpu  100 0 0 300 0 0 0 0\n") // 75% idle since boot
	var logs bytes.Buffer
	a := &hostAgent{stat: stat, stateFile: state, log: slog.New(slog.NewTextHandler(&logs, nil))}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if err := a.sample(now); err != nil {
		t.Fatal(err)
	}
	ask, stop := serveAgent(t, a)
	defer stop()
	next := func(statText, stateText string) string {
		t.Helper()
		write(stat, statText)
		if stateText == "" {
			_ = os.Remove(state)
		} else {
			write(state, stateText)
		}
		now = now.Add(time.Second)
		if err := a.sample(now); err != nil {
			t.Fatal(err)
		}
		return ask("127.0.0.1")
	}

	if got := ask("127.0.0.1"); got != "75% ready\n" {
		t.Fatalf("first answer %q, want the idle share since boot, and ready without a state file", got)
	}
	// The last second: 100 ticks, 20 of them idle or waiting.
	if got := next("cpu  180 0 0 310 10 0 0 0\n", ""); got != "20% ready\n" {
		t.Fatalf("answer %q, want 20%% ready", got)
	}
	if got := next("cpu  180 0 0 410 10 0 0 0\n", "drain\n"); got != "100% drain\n" {
		t.Fatalf("answer %q", got)
	}
	// Emptying the file ends the drain.
	if got := next("cpu  180 0 0 410 10 0 0 0\n", "\n"); got != "100% ready\n" {
		t.Fatalf("answer %q with an empty state file, want ready", got)
	}
	if got := next("cpu  180 0 0 410 10 0 0 0\n", "Maint # upgrading"); got != "100% maint # upgrading\n" {
		t.Fatalf("answer with no time passed %q, want the last share and the new state", got)
	}
	// Garbage is ignored, and logged once a minute.
	for i := range 3 {
		if got := next("cpu  230 0 0 460 10 0 0 0\n", "please drain"); got != "50%\n" {
			t.Fatalf("answer %d with garbage in the state file: %q", i, got)
		}
	}
	if n := strings.Count(logs.String(), "the state file is ignored"); n != 1 {
		t.Fatalf("%d warnings in 3 s, want 1:\n%s", n, logs.String())
	}
	if got := next("cpu  230 0 0 460 10 0 0 0\n", "ready"); got != "50% ready\n" {
		t.Fatalf("answer %q", got)
	}
	// A /proc/stat that cannot be read leaves the answer as it was.
	write(stat, "nonsense")
	if err := a.sample(now.Add(time.Second)); err == nil {
		t.Fatal("a bad /proc/stat was read")
	}
	if got := ask("127.0.0.1"); got != "50% ready\n" {
		t.Fatalf("answer %q after a failed sample", got)
	}

	// A state file as long as the agent reads makes a line the monitor
	// takes: the end of the reason is cut, and the member drains.
	reason := strings.Repeat("é", 250)
	got := next("cpu  230 0 0 460 10 0 0 0\n", "drain # "+reason)
	if len(got) > health.MaxAgentLine+1 || !strings.HasPrefix(got, "50% drain # éé") || !utf8.ValidString(got) {
		t.Fatalf("answer of %d bytes %.40q…, want at most %d and the drain", len(got), got, health.MaxAgentLine+1)
	}

	// A FIFO as the state file is refused at once, not waited on.
	_ = os.Remove(state)
	if err := syscall.Mkfifo(state, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() { done <- a.stateWords(now.Add(time.Hour)) }()
	select {
	case words := <-done:
		if words != "" {
			t.Errorf("a FIFO state file read as %q", words)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the agent blocked on a FIFO state file")
	}
}

func TestRunAgent_Usage(t *testing.T) {
	var out bytes.Buffer
	if err := runAgent(context.Background(), []string{"extra"}, &out, io.Discard); err == nil || !strings.Contains(err.Error(), `unexpected argument "extra"`) {
		t.Errorf("an argument: %v", err)
	}
	if err := runAgent(context.Background(), []string{"-h"}, &out, io.Discard); err != errHelp || !strings.Contains(out.String(), "--state-file") {
		t.Errorf("-h: %v, %s", err, out.String())
	}
}

// An agent listens on loopback unless told otherwise, and beyond it
// answers only the sources --allow names.
func TestRunAgent_ListenBeyondLoopback(t *testing.T) {
	for name, args := range map[string][]string{
		"EveryInterface":  {"--listen", ":5555"},
		"AnAddress":       {"--listen", "10.0.0.5:5555"},
		"AllowNothing":    {"--listen", ":5555", "--allow", " , "}, // read as empty, it would answer anyone
		"AllowNotAnAddr":  {"--listen", ":5555", "--allow", "sdnlb-1"},
		"AllowBadPrefix":  {"--listen", ":5555", "--allow", "10.0.0.0/33"},
		"LoopbackBadList": {"--allow", "10.0.0.1," + "x"},
	} {
		t.Run(name, func(t *testing.T) {
			err := runAgent(context.Background(), args, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), "--allow") {
				t.Fatalf("%v: %v, want an error naming --allow", args, err)
			}
		})
	}
}

// An agent with --allow answers an AGENT monitor probing from an allowed
// source, and closes every other connection unanswered, logging it at
// most once a minute per source.
func TestHostAgent_Allow(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	a := &hostAgent{allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, log: log, peer: peerlog.New(log, time.Minute)}
	line := []byte("75%\n")
	a.line.Store(&line)
	ask, stop := serveAgent(t, a)
	if got := ask("127.0.0.2"); got != "75%\n" {
		t.Errorf("the allowed source got %q", got)
	}
	for i := range 20 {
		if got := ask("127.0.0.1"); got != "" {
			t.Fatalf("connection %d from a source not allowed got %q", i, got)
		}
	}
	stop() // the log is written
	if n := strings.Count(logs.String(), "connection refused"); n != 1 {
		t.Errorf("%d log lines for 20 refused connections in a minute, want 1:\n%s", n, logs.String())
	}
}

// serveAgent serves a on a port of 127.0.0.1 until stop. ask connects from
// the loopback address source and reads what the agent says.
func serveAgent(t *testing.T, a *hostAgent) (ask func(source string) string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.serve(ctx, ln) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(stop)
	ask = func(source string) string {
		t.Helper()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(source)}}
		conn, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(conn) // the agent closes after its line
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	return ask, stop
}
