package health

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sdnlb/sdnlb"
)

func TestParseAgentReply(t *testing.T) {
	type want struct {
		available      int
		drain, undrain bool
	}
	for _, tc := range []struct {
		line string
		want want
	}{
		{"75%", want{75, false, false}},
		{"0%", want{0, false, false}},
		{"100%", want{100, false, false}},
		{"75.5%", want{76, false, false}},
		{"75.4%", want{75, false, false}},
		{"007%", want{7, false, false}},
		{"99.%", want{99, false, false}},
		{".5%", want{1, false, false}},
		{"drain", want{-1, true, false}},
		{"DRAIN", want{-1, true, false}},
		{"ready", want{-1, false, true}},
		{"Up", want{-1, false, true}},
		{"75% drain", want{75, true, false}},
		{"drain,75%", want{75, true, false}},
		{"\t75%\t,  drain  ", want{75, true, false}},
		{"drain ready", want{-1, false, true}}, // the last word wins
		{"ready drain", want{-1, true, false}},
		{"up 50% 60%", want{60, false, true}},
		{"maxconn:30 80%", want{80, false, false}}, // HAProxy's maxconn is not sdnlb's
		{"hello 80%", want{80, false, false}},
		{"80% # all fine", want{80, false, false}},
		{"ready #maint", want{-1, false, true}}, // a reason is no word
		{"maint", want{-1, true, false}},        // HAProxy's maintenance: a drain
		{"75% maint # kernel upgrade", want{75, true, false}},
		{"maint ready", want{-1, false, true}},
	} {
		t.Run(tc.line, func(t *testing.T) {
			r, err := parseAgentReply(tc.line)
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if got := (want{r.available, r.drain, r.undrain}); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseAgentReply_Out(t *testing.T) {
	for _, tc := range []struct{ line, word, reason string }{
		{"down", "down", ""},
		{"FAIL", "fail", ""},
		{"stopped", "stopped", ""},
		{"75% drain stopped", "stopped", ""},
		{"down 100% ready", "down", ""}, // out wins whatever else the line says
		{"stopped # kernel upgrade", "stopped", "kernel upgrade"},
		{"down#disk full\tagain", "down", "disk full again"},
		{"down # \u202egnp.exe", "down", "gnp.exe"}, // a right-to-left override shows nothing else
		{"fail # " + strings.Repeat("é", 100), "fail", strings.Repeat("é", maxAgentReason/2) + "…"},
	} {
		t.Run(tc.line, func(t *testing.T) {
			_, err := parseAgentReply(tc.line)
			var out *agentOutError
			if !errors.As(err, &out) || out.word != tc.word || out.reason != tc.reason {
				t.Fatalf("error %#v, want the agent saying %s (reason %q)", err, tc.word, tc.reason)
			}
			if !strings.Contains(err.Error(), "the agent says "+tc.word) {
				t.Fatalf("message %q", err)
			}
		})
	}
}

func TestParseAgentReply_Unreadable(t *testing.T) {
	for _, line := range []string{
		"", "   ", "\t,", "hello", "OK", "# just a reason", "75", "%", ".%", "1.2.3%", "101%", "100.4%", "-5%",
		"1e2%", "0x10%", "inf%", "NaN%", "75%%", "７５%", "drainage", "up-ish", "\x00\x01",
	} {
		t.Run(line, func(t *testing.T) {
			_, err := parseAgentReply(line)
			var bad *agentReplyError
			if !errors.As(err, &bad) {
				t.Fatalf("error %v, want an unreadable reply", err)
			}
		})
	}
	long := strings.Repeat("x", 500)
	if _, err := parseAgentReply(long); len(err.Error()) > 200 {
		t.Errorf("the error quotes the whole reply: %d bytes", len(err.Error()))
	}
}

func FuzzParseAgentReply(f *testing.F) {
	for _, seed := range []string{"75%", "75.5% drain", "ready", "maint # why", "hello", "", "100.0%,up", "\xff%", "9" + strings.Repeat("9", 400) + "%"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := parseAgentReply(line)
		var out *agentOutError
		var bad *agentReplyError
		switch {
		case err == nil:
			if r.available < -1 || r.available > 100 || r.drain && r.undrain {
				t.Fatalf("%q read as %+v", line, r)
			}
		case errors.As(err, &out):
			if !IsAgentState(out.word) || len(out.reason) > maxAgentReason+len("…") || !utf8.ValidString(out.reason) {
				t.Fatalf("%q: %#v", line, out)
			}
		case errors.As(err, &bad):
		default:
			t.Fatalf("%q: unexpected error %T %v", line, err, err)
		}
	})
}

func TestIsAgentState(t *testing.T) {
	for _, w := range []string{"up", "READY", "Drain", "down", "fail", "stopped", "maint"} {
		if !IsAgentState(w) {
			t.Errorf("IsAgentState(%q) = false", w)
		}
	}
	for _, w := range []string{"", "75%", "maintenance", "ok", "maxconn:1"} {
		if IsAgentState(w) {
			t.Errorf("IsAgentState(%q) = true", w)
		}
	}
}

// agentServer is an agent on a loopback address that answers every connection with
// what the test set: writes of the reply (each on its own, a pause
// between them), then the end of the connection unless hold.
type agentServer struct {
	port int

	mu     sync.Mutex
	writes []string
	hold   bool // never close: a reply that never ends
}

func newAgentServer(tb testing.TB, lo netip.Addr, writes ...string) *agentServer {
	tb.Helper()
	ln := listenLoopback(tb, lo)
	s := &agentServer{port: ln.Addr().(*net.TCPAddr).Port, writes: writes}
	done := make(chan struct{})
	var conns sync.WaitGroup
	tb.Cleanup(func() {
		ln.Close()
		close(done)
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				writes, hold := s.reply()
				for i, w := range writes {
					if i > 0 {
						time.Sleep(20 * time.Millisecond)
					}
					if _, err := c.Write([]byte(w)); err != nil {
						return
					}
				}
				if hold {
					<-done
				}
			})
		}
	}()
	return s
}

func (s *agentServer) set(hold bool, writes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes, s.hold = writes, hold
}

func (s *agentServer) reply() ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes, s.hold
}

func askAgent(tb testing.TB, lo netip.Addr, port int, timeout time.Duration) (agentReply, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return (&agentProber{}).ask(ctx, target{Type: "AGENT", Addr: lo, Port: port})
}

func TestAgentProber(t *testing.T) {
	forEachFamily(t, func(t *testing.T, lo netip.Addr) {
		s := newAgentServer(t, lo)
		for _, tc := range []struct {
			name      string
			writes    []string
			available int
			drain     bool
		}{
			{"LF", []string{"75%\n"}, 75, false},
			{"CRLF", []string{"75% drain\r\n"}, 75, true},
			{"EndedByClose", []string{"42%"}, 42, false},
			{"EndedByCloseCR", []string{"42%\r"}, 42, false},
			{"SplitAcrossWrites", []string{"7", "5% dr", "ain\n"}, 75, true},
			{"OnlyTheFirstLine", []string{"10%\ndrain\n"}, 10, false},
			{"LongestLine", []string{strings.Repeat(" ", MaxAgentLine-3) + "60%\n"}, 60, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s.set(false, tc.writes...)
				r, err := askAgent(t, lo, s.port, probeTimeout)
				if err != nil || r.available != tc.available || r.drain != tc.drain {
					t.Fatalf("got %+v, %v; want %d%%, drain %v", r, err, tc.available, tc.drain)
				}
			})
		}
		t.Run("Out", func(t *testing.T) {
			s.set(false, "stopped # upgrading\n")
			_, err := askAgent(t, lo, s.port, probeTimeout)
			if err == nil || err.Error() != "the agent says stopped: upgrading" {
				t.Fatalf("error %v", err)
			}
		})
		for _, tc := range []struct {
			name   string
			hold   bool
			writes []string
			// bad: an unreadable reply (logged), else a failure of the network
			bad  bool
			want string
		}{
			{"Garbage", false, []string{"OK\n"}, true, `"OK" has no word sdnlb reads`},
			{"Empty", false, nil, true, "agent reply: empty"},
			{"TooLong", true, []string{strings.Repeat("9", MaxAgentLine+1)}, true, "more than 512 bytes without a newline"},
			{"TooLongThenNewline", false, []string{strings.Repeat(" ", MaxAgentLine+1) + "5%\n"}, true, "more than 512 bytes"},
			{"NeverEnds", true, []string{"75% dr"}, true, `no full line within the timeout, only "75% dr"`},
			{"Silent", true, nil, false, "agent: no reply within the timeout"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s.set(tc.hold, tc.writes...)
				start := time.Now()
				_, err := askAgent(t, lo, s.port, 300*time.Millisecond)
				var bad *agentReplyError
				var ne *netError
				if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &bad) != tc.bad || errors.As(err, &ne) == tc.bad {
					t.Fatalf("error %v, want one saying %q (unreadable reply: %v)", err, tc.want, tc.bad)
				}
				if took := time.Since(start); took > probeTimeout {
					t.Fatalf("the probe took %v", took)
				}
			})
		}
		t.Run("ClosedPort", func(t *testing.T) {
			_, err := askAgent(t, lo, closedPort(t, lo), probeTimeout)
			var ne *netError
			if !errors.As(err, &ne) || !strings.Contains(err.Error(), "agent connect: connection refused") {
				t.Fatalf("error %v", err)
			}
		})
		t.Run("Cancelled", func(t *testing.T) {
			s.set(true, "75")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := (&agentProber{}).ask(ctx, target{Type: "AGENT", Addr: lo, Port: s.port})
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			cancel()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a cancelled probe passed")
				}
			case <-time.After(probeTimeout):
				t.Fatal("a cancelled probe kept reading")
			}
		})
	})
}

// TestEngine_AgentBesideTCP runs an AGENT monitor beside a TCP one on a
// fake clock: the agent's reports reach the store as the write rules
// say, an agent that says its member is out takes it DOWN at once, one
// that answers garbage fails like any probe, and either monitor down is
// enough for DOWN.
func TestEngine_AgentBesideTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { ln.Close() }()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	agent := newAgentServer(t, loopback, "80%\n")
	agentMon := tcpMonitor("agent")
	agentMon.Type, agentMon.Port = sdnlb.MonitorAgent, agent.port
	withAgent := &sdnlb.Config{
		VIPs:     []*sdnlb.VIP{testVIP("v1", port)},
		Pools:    []*sdnlb.Pool{testPool("p1", "v1", "agent", "tcp")},
		Monitors: []*sdnlb.Monitor{agentMon, tcpMonitor("tcp")},
		Members:  []*sdnlb.Member{testMember("a", "p1", 0, sdnlb.MemberUp)},
	}
	var logs safeBuffer
	reg := prometheus.NewRegistry()
	h := startEngine(t, withAgent, Options{Registerer: reg, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)

	writes := func() int { return len(h.store.statuses("a")) }
	// step has the agent answer reply, steps a second and checks the
	// writes, the last one, and the live status and drain.
	step := func(t *testing.T, reply string, wantWrites int, status sdnlb.MemberStatus, available int, drain bool) sdnlb.MemberHealth {
		t.Helper()
		agent.set(false, reply)
		h.step(t, time.Second)
		if got := writes(); got != wantWrites {
			t.Fatalf("after %q: %d writes, want %d", reply, got, wantWrites)
		}
		last, _ := h.store.last("a")
		if a := last.Agent; last.Status != status || a == nil || a.Available != available || a.Drain != drain {
			t.Fatalf("after %q: written %s with agent %+v, want %s, %d%%, drain %v", reply, last.Status, a, status, available, drain)
		}
		live, _ := h.e.MemberHealth("a")
		if live.Status != status || live.Agent == nil || live.Agent.Drain != drain {
			t.Fatalf("after %q: live %s with agent %+v, want %s, drain %v", reply, live.Status, live.Agent, status, drain)
		}
		return live
	}
	run := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	run("Reports", func(t *testing.T) {
		step(t, "80%\n", 1, sdnlb.MemberUp, 80, false) // the first report, at once
		step(t, "78%\n", 1, sdnlb.MemberUp, 80, false) // live 78, but 2 points are not worth a write
		if live, _ := h.e.MemberHealth("a"); live.Agent.Available != 78 {
			t.Fatalf("live report %+v, want 78%%", live.Agent)
		}
		step(t, "70%\n", 2, sdnlb.MemberUp, 70, false)
		step(t, "70% drain\n", 3, sdnlb.MemberUp, 70, true)
		step(t, "70% drain\n", 3, sdnlb.MemberUp, 70, true) // nothing changed, nothing written
		step(t, "ready\n", 4, sdnlb.MemberUp, 70, false)
	})
	run("OutAtOnce", func(t *testing.T) {
		live := step(t, "stopped # upgrade\n", 5, sdnlb.MemberDown, 70, false)
		if !strings.Contains(live.LastError, "the agent says stopped: upgrade") {
			t.Fatalf("last error %q, want the agent's words", live.LastError)
		}
		step(t, "75%\n", 6, sdnlb.MemberDown, 75, false) // one success of rise 2; the share moved by 5
		step(t, "75%\n", 7, sdnlb.MemberUp, 75, false)
	})
	run("GarbageFailsAsAnyProbe", func(t *testing.T) {
		step(t, "OK\n", 7, sdnlb.MemberUp, 75, false)
		live := step(t, "OK\n", 7, sdnlb.MemberUp, 75, false)
		if !strings.Contains(live.LastError, `"OK" has no word sdnlb reads`) {
			t.Fatalf("last error %q", live.LastError)
		}
		step(t, strings.Repeat("x", MaxAgentLine+1), 8, sdnlb.MemberDown, 75, false) // max_retries 3
		if n := strings.Count(logs.String(), "unreadable agent reply"); n != 1 {
			t.Fatalf("%d log lines for 3 unreadable replies in a minute, want 1:\n%s", n, logs.String())
		}
		step(t, "75%\n", 8, sdnlb.MemberDown, 75, false)
		step(t, "75%\n", 9, sdnlb.MemberUp, 75, false)
	})
	run("TCPDownIsDown", func(t *testing.T) {
		ln.Close()
		step(t, "75%\n", 9, sdnlb.MemberUp, 75, false)
		step(t, "75%\n", 9, sdnlb.MemberUp, 75, false)
		live := step(t, "75%\n", 10, sdnlb.MemberDown, 75, false)
		if !strings.Contains(live.LastError, "refused") {
			t.Fatalf("last error %q, want the TCP monitor's", live.LastError)
		}
		if got := gatherValues(t, reg)[`sdnlb_member_agent_available_percent{member="a"}`]; got != 75 {
			t.Fatalf("available gauge %v, want 75", got)
		}
	})
	run("MonitorGoneForgetsReport", func(t *testing.T) {
		agent.set(false, "10% drain\n")
		tcpOnly := *withAgent
		tcpOnly.Pools = []*sdnlb.Pool{testPool("p1", "v1", "tcp")}
		h.step(t, reloadInterval)
		h.change(t, &tcpOnly, sdnlb.KindPool, sdnlb.OpUpdate, "p1")
		last, _ := h.store.last("a")
		if writes() != 11 || last.Agent != nil || last.Status != sdnlb.MemberDown {
			t.Fatalf("%d writes, the last %+v; want one more, without a report", writes(), last)
		}
		if _, ok := gatherValues(t, reg)[`sdnlb_member_agent_available_percent{member="a"}`]; ok {
			t.Fatal("the available gauge outlived the agent's monitor")
		}
	})
}

// safeBuffer is a bytes.Buffer a logger writes while the test reads it.
type safeBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An agent that flips between down and up on every probe moves its
// member every time, but the log says so at most once a minute: a member
// and its agent are peers, and cannot flood the log.
func TestEngine_AgentFlapLogged(t *testing.T) {
	agent := newAgentServer(t, loopback, "80%\n")
	mon := tcpMonitor("agent")
	mon.Type, mon.Port, mon.Rise = sdnlb.MonitorAgent, agent.port, 1
	cfg := &sdnlb.Config{
		VIPs:     []*sdnlb.VIP{testVIP("v1", 80)},
		Pools:    []*sdnlb.Pool{testPool("p1", "v1", "agent")},
		Monitors: []*sdnlb.Monitor{mon},
		Members:  []*sdnlb.Member{testMember("a", "p1", 0, sdnlb.MemberUp)},
	}
	var logs safeBuffer
	h := startEngine(t, cfg, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, nil)
	const flips = 30 // within a minute
	for i := range flips {
		reply := "80%\n"
		if i%2 == 0 {
			reply = "down # flapping\n"
		}
		agent.set(false, reply)
		h.step(t, time.Second)
	}
	if n := len(h.store.statuses("a")); n < flips-2 {
		t.Fatalf("%d health writes for %d flips, want the member moved each time", n, flips)
	}
	for _, line := range []string{"member health changed", "health probe failed"} {
		if n := strings.Count(logs.String(), line); n != 1 {
			t.Errorf("%d %q lines for %d flips in a minute, want 1:\n%s", n, line, flips, logs.String())
		}
	}
}
