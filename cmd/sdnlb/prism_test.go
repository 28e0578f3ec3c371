package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/openapi"
)

// prismSession is a scripted session of valid requests, successes and
// documented errors: objects with and without persistence, a null sent to
// clear it, reads of every kind, and the deletes.
var prismSession = []step{
	{method: "GET", path: "/healthz", status: 200},
	{method: "GET", path: "/readyz", status: 200},
	{method: "POST", path: "/v1/vips", body: `{"id":"web","address":"10.0.0.100","port":80}`, status: 201},
	{method: "POST", path: "/v1/vips", body: `{"id":"sticky","address":"10.0.0.101","port":443,"session_persistence":{"type":"SOURCE_IP","timeout":60}}`, status: 201},
	{method: "POST", path: "/v1/vips", body: `{"id":"web","address":"10.0.0.102"}`, status: 409},
	{method: "GET", path: "/v1/vips", status: 200},
	{method: "GET", path: "/v1/vips/web", status: 200},
	{method: "GET", path: "/v1/vips/nope", status: 404},
	{method: "POST", path: "/v1/pools", body: `{"id":"web-pool","vip_id":"web","lb_method":"ROUND_ROBIN"}`, status: 201},
	{method: "GET", path: "/v1/pools", status: 200},
	{method: "GET", path: "/v1/pools/web-pool", status: 200},
	{method: "POST", path: "/v1/members", body: `{"id":"web-1","pool_id":"web-pool","address":"10.0.0.3","port":8080}`, status: 201},
	{method: "GET", path: "/v1/members", status: 200},
	{method: "GET", path: "/v1/members/web-1", status: 200},
	{method: "GET", path: "/v1/pools/web-pool/members", status: 200},
	{method: "POST", path: "/v1/monitors", body: `{"id":"check","type":"HTTP","url_path":"/health"}`, status: 201},
	{method: "POST", path: "/v1/pools/web-pool/monitors", body: `{"monitor_id":"check"}`, status: 204},
	{method: "GET", path: "/v1/monitors", status: 200},
	{method: "PATCH", path: "/v1/vips/web", body: `{"session_persistence":{"type":"SOURCE_IP","timeout":30}}`, status: 200},
	{method: "PATCH", path: "/v1/vips/web", body: `{"session_persistence":null}`, status: 200},
	{method: "PUT", path: "/v1/vips/sticky", body: `{"address":"10.0.0.101","port":443,"session_persistence":null}`, status: 200},
	{method: "GET", path: "/v1/stats", status: 200},
	{method: "GET", path: "/v1/pools/web-pool/stats", status: 200},
	{method: "GET", path: "/v1/switches", status: 200},
	{method: "GET", path: "/v1/cluster", status: 200},
	{method: "GET", path: "/v1/config", status: 200},
	{method: "DELETE", path: "/v1/vips/web", status: 409},
	{method: "DELETE", path: "/v1/members/web-1", status: 204},
	{method: "DELETE", path: "/v1/monitors/check?cascade=true", status: 204},
	{method: "DELETE", path: "/v1/pools/web-pool", status: 204},
	{method: "DELETE", path: "/v1/vips/web", status: 204},
	{method: "DELETE", path: "/v1/vips/sticky", status: 204},
}

// TestOpenAPIPrism sends prismSession through Stoplight Prism's validating
// proxy in front of a real server: Prism reads the Swagger 2.0 spec its own
// way (x-nullable among others), checks every request and answer against
// it and names what breaks it in an sl-violations header, which no
// exchange may carry. SDNLB_PRISM names the prism command; scripts/test.sh
// installs it with the OpenAPI linters and sets it.
func TestOpenAPIPrism(t *testing.T) {
	prism := os.Getenv("SDNLB_PRISM")
	if prism == "" {
		t.Skip("SDNLB_PRISM is not set: scripts/test.sh installs Prism (openapi/lint) and sets it")
	}
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	waitOK(t, "http://"+m.APIAddr()+"/readyz")
	connectSwitch(t, m)
	c := &contractClient{t: t, base: startPrism(t, prism, "http://"+m.APIAddr())}
	for _, st := range prismSession {
		where := st.method + " " + st.path
		req, err := c.request(st)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s through Prism: %v", where, err)
		}
		resp.Body.Close()
		if resp.StatusCode != st.status {
			t.Errorf("%s through Prism: status %d, want %d", where, resp.StatusCode, st.status)
		}
		if v := resp.Header.Get("sl-violations"); v != "" {
			t.Errorf("%s: Prism finds the exchange breaks the spec: %s", where, v)
		}
	}
}

var prismListening = regexp.MustCompile(`Prism is listening on (http://\S+)`)

// startPrism runs "prism proxy" on a port of its choosing in front of
// upstream, with the spec the server serves, and returns its base URL.
func startPrism(t *testing.T, prism, upstream string) string {
	t.Helper()
	spec := filepath.Join(t.TempDir(), "swagger.json")
	if err := os.WriteFile(spec, openapi.JSON, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prism, "proxy", "--host", "127.0.0.1", "--port", "0", spec, upstream)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start prism: %v", err)
	}
	var mu sync.Mutex
	var lines []string
	listening := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if m := prismListening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			mu.Lock()
			t.Logf("prism's output:\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
			mu.Unlock()
		}
	})
	select {
	case base := <-listening:
		return base
	case <-done:
		t.Fatal("prism exited before it listened")
	case <-time.After(60 * time.Second):
		t.Fatal("prism did not listen within 60s")
	}
	return ""
}
