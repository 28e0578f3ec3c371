//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

const (
	browserTimeout = 3 * time.Minute
	pageWait       = 20 * time.Second
)

// browser is a headless Chromium driven over the DevTools protocol.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu   sync.Mutex
	logs []string // console errors and uncaught exceptions of the page
}

// newBrowser starts headless Chromium (the Debian package "chromium",
// which scripts/test.sh installs). Missing, it fails the test: a browser
// test that skips would hide a broken dashboard. On failure a screenshot
// goes to a temp dir that outlives the test, and the page's errors to the
// log.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the dashboard test needs Chromium (apt-get install chromium; scripts/test.sh installs it): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root cannot use Chromium's sandbox
		chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000),
		chromedp.UserDataDir(t.TempDir()),
	)
	b := &browser{t: t}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	t.Cleanup(cancelBrowser)
	// The first Do starts the browser, which lives as long as its context:
	// that one has no timeout, the actions' context has.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	ctx, cancelTimeout := context.WithTimeout(bctx, browserTimeout)
	t.Cleanup(cancelTimeout)
	b.ctx = ctx
	t.Cleanup(b.onFailure)
	return b
}

// listen keeps the page's console errors and uncaught exceptions.
func (b *browser) listen(ev any) {
	{
		var line string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			line = fmt.Sprintf("exception: %s at %s:%d", d.Text, d.URL, d.LineNumber+1)
			if d.Exception != nil {
				line += ": " + d.Exception.Description
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type != runtime.ConsoleAPICalledTypeError {
				return
			}
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			line = "console.error: " + strings.Join(args, " ")
		default:
			return
		}
		b.mu.Lock()
		b.logs = append(b.logs, line)
		b.mu.Unlock()
	}
}

func (b *browser) onFailure() {
	if !b.t.Failed() {
		return
	}
	b.mu.Lock()
	if len(b.logs) > 0 {
		b.t.Logf("page errors:\n%s", strings.Join(b.logs, "\n"))
	}
	b.mu.Unlock()
	dir, err := os.MkdirTemp("", "sdnlb-dashboard-shots")
	if err != nil {
		b.t.Logf("screenshot dir: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
	if err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	file := filepath.Join(dir, strings.ReplaceAll(b.t.Name(), "/", "_")+".png")
	if err := os.WriteFile(file, png, 0o644); err != nil {
		b.t.Logf("screenshot: %v", err)
		return
	}
	b.t.Logf("screenshot of the page: %s\npage text:\n%s", file, text)
}

// run runs chromedp actions and fails the test on error.
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, pageWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text returns the text of the first element that matches the CSS
// selector, "" when there is none.
func (b *browser) text(sel string) string {
	b.t.Helper()
	q, _ := json.Marshal(sel)
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, q)))
	if err != nil {
		b.t.Fatalf("read %s: %v", sel, err)
	}
	return s
}

// waitText waits until the element matching sel contains want.
func (b *browser) waitText(sel, want string) {
	b.t.Helper()
	deadline := time.Now().Add(pageWait)
	var got string
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		if got = b.text(sel); strings.Contains(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("%s shows %q after %v, want it to contain %q", sel, got, pageWait, want)
}

// TestDashboard drives the dashboard in a real browser: it says when no
// switch is connected, creates a VIP through the form (showing the API's
// field error next to the field first), lists it, and shows a member go
// DOWN when its server stops.
func TestDashboard(t *testing.T) {
	sw := NewSwitch(t)
	lb := startSDNLB(t)
	m1 := sw.AddHost(t, "m1", sw.Addr(11))
	m2 := sw.AddHost(t, "m2", sw.Addr(12))
	srv1 := m1.ServeHTTP(t, memberPort, "srv1")
	m2.ServeHTTP(t, memberPort, "srv2")
	// Started last, the browser closes first: sdnlb's graceful shutdown
	// waits for the page's open event stream.
	b := newBrowser(t)

	b.run("open the dashboard", chromedp.Navigate("http://"+lb.APIAddr+"/dashboard/"),
		chromedp.WaitVisible(chromedp.CSS(`#vips`)))
	b.waitText("#switches", "no switch connected")
	b.waitText("#vips", "No VIP yet")

	// A VIP through the form; the API's error shows next to its field.
	vipAddr := sw.Addr(100)
	b.run("fill the VIP form",
		chromedp.Click(chromedp.CSS(`button[data-new="vip"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#form-dialog[open]`)),
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="id"]`), "dash"),
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="name"]`), "dashboard"),
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="address"]`), "10.0.0"),
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="port"]`), "80"),
		chromedp.Click(chromedp.CSS(`#form-submit`)),
		chromedp.WaitVisible(chromedp.CSS(`.field[data-field="address"] .err`)))
	if got := b.text(`.field[data-field="address"] .err`); !strings.Contains(got, "10.0.0") {
		t.Errorf("address error %q does not name the bad address", got)
	}
	b.run("fix the address",
		chromedp.SetValue(chromedp.CSS(`#form-fields [name="address"]`), vipAddr),
		chromedp.Click(chromedp.CSS(`#form-submit`)),
		chromedp.WaitNotPresent(chromedp.CSS(`#form-dialog[open]`)))
	b.waitText(`article.vip[data-id="dash"]`, vipAddr+":80")
	b.waitText(`article.vip[data-id="dash"] .name`, "dashboard")

	// Pool, members and monitor through the API; the page follows the feed.
	lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"id": "dash", "vip_id": "dash"}, http.StatusCreated, nil)
	for i, h := range []*Host{m1, m2} {
		lb.MustAPI(http.MethodPost, "/v1/members", map[string]any{
			"id": fmt.Sprintf("m%d", i+1), "pool_id": "dash", "address": h.IP, "port": memberPort,
		}, http.StatusCreated, nil)
	}
	b.waitText(`tr[data-id="m2"]`, m2.IP)
	// In the configuration the VIP is ACTIVE; with no switch it carries nothing.
	b.waitText(`article.vip[data-id="dash"] h2`, "NO SWITCH")

	lb.Connect(sw)
	b.waitText("#switches", "1 switch connected")
	b.waitText(`article.vip[data-id="dash"] h2`, "ACTIVE")

	lb.MustAPI(http.MethodPost, "/v1/monitors", map[string]any{
		"id": "http", "type": "HTTP", "delay": 0.2, "timeout": 0.1, "max_retries": 2, "rise": 2, "url_path": "/health",
	}, http.StatusCreated, nil)
	if status, body := lb.API(http.MethodPost, "/v1/pools/dash/monitors", map[string]any{"monitor_id": "http"}); status/100 != 2 {
		t.Fatalf("attach the monitor: %d %s", status, body)
	}
	b.waitText(`tr[data-id="m1"] .status`, "UP")
	b.waitText(`tr[data-id="m2"] .status`, "UP")

	srv1.Stop()
	b.waitText(`tr[data-id="m1"] .status`, "DOWN")
	if got := b.text(`tr[data-id="m2"] .status`); got != "UP" {
		t.Errorf("m2 shows %q while only m1 stopped, want UP", got)
	}
}
