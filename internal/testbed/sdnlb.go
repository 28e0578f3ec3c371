package testbed

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sdnlb/sdnlb"
)

// Build builds the command pkg ("./cmd/sdnlb") of the module that holds
// the working directory into dir, with the race detector when race is set,
// and returns the binary's path.
func Build(ctx context.Context, dir, pkg string, race bool) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(pkg))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for i := 0; i < 64; i++ {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	return "", errors.New("no go.mod above the working directory")
}

// Bounds of the process's life.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second
	logTailLines = 60
)

// APITimeout bounds every API request the SDNLB helpers send.
const APITimeout = 10 * time.Second

// SDNLB is one running sdnlb process with a private database, listening
// on loopback ports it chose itself.
type SDNLB struct {
	// APIAddr and OpenFlowAddr are the listen addresses from the start log.
	APIAddr      string
	OpenFlowAddr string
	DB           string // the database file, for a restart on the same one

	tb     TB
	binary string
	cmd    *exec.Cmd
	done   chan struct{} // closed once the process has been waited for
	logEOF chan struct{} // closed once stderr has been read to its end
	err    error         // from Wait, valid after done
	killed bool          // by Kill: an exit is expected
	client *http.Client

	mu  sync.Mutex
	log []string // stderr, line by line
}

// StartSDNLB runs the sdnlb binary on 127.0.0.1:0 ports with a temp database
// and JSON logs; extraArgs come last, so they override. On cleanup it sends
// SIGTERM and fails tb if the process exits non-zero, takes too long, or
// logged a data race or a panic; on failure it logs the tail of its log.
func StartSDNLB(tb TB, binary string, extraArgs ...string) *SDNLB {
	tb.Helper()
	requireRoot(tb)
	if binary == "" {
		tb.Fatal("no sdnlb binary (Build builds one)")
	}
	dir := tb.TempDir()
	args := append([]string{
		"--api-addr", "127.0.0.1:0",
		"--openflow-addr", "127.0.0.1:0",
		"--db", filepath.Join(dir, "sdnlb.db"),
		"--log-format", "json",
	}, extraArgs...)
	p := &SDNLB{
		DB:     lastFlag(args, "--db"),
		binary: binary,
		tb:     tb,
		done:   make(chan struct{}),
		logEOF: make(chan struct{}),
		client: &http.Client{Timeout: APITimeout},
	}
	stderr, addrs := p.start(tb, args)
	tb.Cleanup(p.stop)
	go p.readLog(stderr, addrs)

	select {
	case a, ok := <-addrs:
		if !ok {
			tb.Fatalf("sdnlb exited before it started: %v", p.waitErr())
		}
		p.APIAddr, p.OpenFlowAddr = a[0], a[1]
	case <-time.After(startTimeout):
		tb.Fatalf("sdnlb did not log %q within %v", "sdnlb started", startTimeout)
	}
	return p
}

// lastFlag returns the value of the last "name value" pair in args, the
// one the command line keeps.
func lastFlag(args []string, name string) string {
	for i := len(args) - 2; i >= 0; i-- {
		if args[i] == name {
			return args[i+1]
		}
	}
	return ""
}

// start runs the binary on a goroutine locked to its thread for the child's
// whole life: Pdeathsig fires when the creating thread ends, and so kills
// the child if the test process dies, but not before.
func (p *SDNLB) start(tb TB, args []string) (io.ReadCloser, chan [2]string) {
	tb.Helper()
	cmd := exec.Command(p.binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stdout = io.Discard
	p.cmd = cmd
	err = startLocked(cmd, p.done, func() {
		// The log reader must see EOF before Wait closes the pipe.
		<-p.logEOF
		p.err = cmd.Wait()
	})
	if err != nil {
		tb.Fatalf("start sdnlb: %v", err)
	}
	return stderr, make(chan [2]string, 1)
}

// readLog keeps every stderr line and reports the listen addresses from the
// "sdnlb started" line; addrs is closed at EOF if that line never came.
func (p *SDNLB) readLog(r io.Reader, addrs chan<- [2]string) {
	defer close(p.logEOF)
	sent := false
	defer func() {
		if !sent {
			close(addrs)
		}
	}()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.mu.Lock()
		p.log = append(p.log, line)
		p.mu.Unlock()
		if sent {
			continue
		}
		var rec struct {
			Msg          string `json:"msg"`
			APIAddr      string `json:"api_addr"`
			OpenFlowAddr string `json:"openflow_addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "sdnlb started" {
			addrs <- [2]string{rec.APIAddr, rec.OpenFlowAddr}
			sent = true
		}
	}
	// Drain after a scan error (an overlong line) so the child never blocks.
	_, _ = io.Copy(io.Discard, r)
}

func (p *SDNLB) waitErr() error {
	select {
	case <-p.done:
		return p.err
	case <-time.After(stopTimeout):
		return errors.New("still running")
	}
}

// RSS is the process's resident set size in bytes (VmRSS).
func (p *SDNLB) RSS() (int64, error) { return ProcessRSS(p.PID()) }

// PID is the process's id, for ProcessCPU and ProcessRSS.
func (p *SDNLB) PID() int { return p.cmd.Process.Pid }

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (p *SDNLB) Kill() {
	p.killed = true
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Pause stops the process with SIGSTOP, as a long GC or VM pause would:
// it keeps its sockets and sessions but does nothing. Resume continues it.
func (p *SDNLB) Pause() { _ = p.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process.
func (p *SDNLB) Resume() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }

// stop ends the process with SIGTERM and checks how it ended.
func (p *SDNLB) stop() {
	tb := p.tb
	select {
	case <-p.done:
		if !p.killed {
			tb.Errorf("sdnlb exited before the test ended: %v", p.err)
		}
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			if p.err != nil {
				tb.Errorf("sdnlb exit after SIGTERM: %v", p.err)
			}
		case <-time.After(stopTimeout):
			tb.Errorf("sdnlb ignored SIGTERM for %v; killing it", stopTimeout)
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	for _, bad := range []string{"DATA RACE", "panic"} {
		if lines := p.LogLines(bad); len(lines) > 0 {
			tb.Errorf("sdnlb log contains %q (%d lines), first: %s", bad, len(lines), lines[0])
		}
	}
	if tb.Failed() {
		tb.Logf("last %d lines of the sdnlb log:\n%s", logTailLines, strings.Join(p.logTail(logTailLines), "\n"))
	}
	if dir := os.Getenv("SDNLB_E2E_LOGDIR"); dir != "" {
		p.saveLog(filepath.Join(dir, strings.ReplaceAll(tb.Name(), "/", "_")+".log"))
	}
}

// saveLog writes the whole log to file, for SDNLB_E2E_LOGDIR.
func (p *SDNLB) saveLog(file string) {
	p.mu.Lock()
	data := strings.Join(p.log, "\n") + "\n"
	p.mu.Unlock()
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		p.tb.Errorf("save sdnlb log: %v", err)
	}
}

// LogLines returns the log lines that contain substr.
func (p *SDNLB) LogLines(substr string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, l := range p.log {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

func (p *SDNLB) logTail(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log[max(0, len(p.log)-n):]...)
}

// Do sends one API request; body, when not nil, is sent as JSON. It returns
// the status and the response body. Safe for any goroutine.
func (p *SDNLB) Do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+p.APIAddr+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := readAll(resp.Body)
	return resp.StatusCode, data, err
}

// API is Do that fails the test on a transport error. Call it from the
// test's goroutine only.
func (p *SDNLB) API(method, path string, body any) (int, []byte) {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), APITimeout)
	defer cancel()
	status, data, err := p.Do(ctx, method, path, body)
	if err != nil {
		p.tb.Fatalf("%s %s: %v", method, path, err)
	}
	return status, data
}

// MustAPI sends a request, requires the status want and decodes the answer
// into out (unless out is nil).
func (p *SDNLB) MustAPI(method, path string, body any, want int, out any) {
	p.tb.Helper()
	status, data := p.API(method, path, body)
	if status != want {
		p.tb.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			p.tb.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

// MustCreateVIP creates a VIP; extra sets further fields (connection_limit,
// session_persistence, ...).
func (p *SDNLB) MustCreateVIP(name, address string, proto sdnlb.Protocol, port int, extra map[string]any) *sdnlb.VIP {
	p.tb.Helper()
	body := map[string]any{"name": name, "address": address, "protocol": proto, "port": port}
	for k, v := range extra {
		body[k] = v
	}
	var v sdnlb.VIP
	p.MustAPI(http.MethodPost, "/v1/vips", body, http.StatusCreated, &v)
	return &v
}

// MustCreatePool creates a pool serving vip with the VIP's protocol.
func (p *SDNLB) MustCreatePool(name string, vip *sdnlb.VIP, method sdnlb.LBMethod, dispatch sdnlb.Dispatch) *sdnlb.Pool {
	p.tb.Helper()
	var pool sdnlb.Pool
	p.MustAPI(http.MethodPost, "/v1/pools",
		map[string]any{"name": name, "vip_id": vip.ID, "lb_method": method, "protocol": vip.Protocol, "dispatch": dispatch},
		http.StatusCreated, &pool)
	return &pool
}

// MustCreateMember adds address:port with weight 1 to pool.
func (p *SDNLB) MustCreateMember(pool *sdnlb.Pool, address string, port int) *sdnlb.Member {
	p.tb.Helper()
	var m sdnlb.Member
	p.MustAPI(http.MethodPost, "/v1/members",
		map[string]any{"pool_id": pool.ID, "address": address, "port": port, "weight": 1},
		http.StatusCreated, &m)
	return &m
}

// MustCreateMonitor creates a monitor from its fields and associates it with
// pool.
func (p *SDNLB) MustCreateMonitor(pool *sdnlb.Pool, fields map[string]any) *sdnlb.Monitor {
	p.tb.Helper()
	var mon sdnlb.Monitor
	p.MustAPI(http.MethodPost, "/v1/monitors", fields, http.StatusCreated, &mon)
	p.MustAPI(http.MethodPost, "/v1/pools/"+pool.ID+"/monitors", map[string]any{"monitor_id": mon.ID}, http.StatusNoContent, nil)
	return &mon
}

// Member reads one member.
func (p *SDNLB) Member(id string) *sdnlb.Member {
	p.tb.Helper()
	var m sdnlb.Member
	p.MustAPI(http.MethodGet, "/v1/members/"+id, nil, http.StatusOK, &m)
	return &m
}

// VIP reads one VIP.
func (p *SDNLB) VIP(id string) *sdnlb.VIP {
	p.tb.Helper()
	var v sdnlb.VIP
	p.MustAPI(http.MethodGet, "/v1/vips/"+id, nil, http.StatusOK, &v)
	return &v
}

// PoolStats reads a pool's traffic counters.
func (p *SDNLB) PoolStats(poolID string) *sdnlb.PoolStats {
	p.tb.Helper()
	var st sdnlb.PoolStats
	p.MustAPI(http.MethodGet, "/v1/pools/"+poolID+"/stats", nil, http.StatusOK, &st)
	return &st
}

// WaitPoolMembers waits until the controller's configuration has n members
// in the pool: the API commits at once, the controller follows through the
// change feed, and traffic sent in between meets the old configuration.
func (p *SDNLB) WaitPoolMembers(poolID string, n int, timeout time.Duration) {
	p.tb.Helper()
	deadline := time.Now().Add(timeout)
	var got int
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		status, data := p.API(http.MethodGet, "/v1/pools/"+poolID+"/stats", nil)
		var st sdnlb.PoolStats
		if status == http.StatusOK && json.Unmarshal(data, &st) == nil {
			if got = len(st.Members); got == n {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.tb.Fatalf("controller shows %d members in pool %s after %v, want %d", got, poolID, timeout, n)
}

// WaitMemberStatus polls a member until it has status want and returns
// when the API first showed it.
func (p *SDNLB) WaitMemberStatus(id string, want sdnlb.MemberStatus, timeout time.Duration) time.Time {
	p.tb.Helper()
	deadline := time.Now().Add(timeout)
	var got sdnlb.MemberStatus
	for i := 0; i < 5000 && time.Now().Before(deadline); i++ {
		m := p.Member(id)
		if got = m.Status; got == want {
			return time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.tb.Fatalf("member %s is %s after %v, want %s", id, got, timeout, want)
	return time.Time{}
}

// Switches lists the connected switches.
func (p *SDNLB) Switches() []*sdnlb.Switch {
	p.tb.Helper()
	var list struct {
		Switches []*sdnlb.Switch `json:"switches"`
	}
	p.MustAPI(http.MethodGet, "/v1/switches", nil, http.StatusOK, &list)
	return list.Switches
}

// WaitSwitches waits until n switches are connected.
func (p *SDNLB) WaitSwitches(n int, timeout time.Duration) {
	p.tb.Helper()
	deadline := time.Now().Add(timeout)
	var got int
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if got = len(p.Switches()); got == n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.tb.Fatalf("%d switches connected after %v, want %d", got, timeout, n)
}

// Connect points sw at this sdnlb and waits until the session is up.
func (p *SDNLB) Connect(sw *Switch) {
	p.tb.Helper()
	sw.SetController(p.OpenFlowAddr)
	p.WaitSwitches(1, 20*time.Second)
}

// Metric returns the sum of the samples of a Prometheus counter or gauge
// in /metrics that carry the labels series names, e.g.
// `sdnlb_controller_packet_ins_total{kind="lb"}`, or of all its samples
// for just the name (every series also has a node label). A histogram's
// NAME_count and NAME_sum are its observations and their sum.
func (p *SDNLB) Metric(series string) float64 {
	p.tb.Helper()
	want, err := parseMetrics(series + " 0\n")
	if err != nil || len(want) != 1 {
		p.tb.Fatalf("series %q: %v", series, err)
	}
	status, data := p.API(http.MethodGet, "/metrics", nil)
	if status != http.StatusOK {
		p.tb.Fatalf("GET /metrics: status %d", status)
	}
	families, err := parseMetrics(string(data))
	if err != nil {
		p.tb.Fatalf("parse /metrics: %v", err)
	}
	sum, found := 0.0, false
	for name, w := range want {
		value := func(m *dto.Metric) float64 {
			return m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
		family := families[name]
		if base, ok := strings.CutSuffix(name, "_count"); ok && families[base].GetType() == dto.MetricType_HISTOGRAM {
			family, value = families[base], func(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) }
		} else if base, ok := strings.CutSuffix(name, "_sum"); ok && families[base].GetType() == dto.MetricType_HISTOGRAM {
			family, value = families[base], func(m *dto.Metric) float64 { return m.GetHistogram().GetSampleSum() }
		}
		for _, m := range family.GetMetric() {
			if hasLabels(m, w.GetMetric()[0].GetLabel()) {
				sum += value(m)
				found = true
			}
		}
	}
	if !found {
		p.tb.Fatalf("no metric %s in /metrics", series)
	}
	return sum
}

func parseMetrics(text string) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(strings.NewReader(text))
}

// hasLabels says whether m carries every label of want.
func hasLabels(m *dto.Metric, want []*dto.LabelPair) bool {
	for _, w := range want {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool {
			return l.GetName() == w.GetName() && l.GetValue() == w.GetValue()
		}) {
			return false
		}
	}
	return true
}
