package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func runClient(t *testing.T, m *Main, args ...string) (code int, out, errOut string) {
	t.Helper()
	return runClientInput(t, m, "", args...)
}

// runClientInput runs a client command with stdin as its input.
func runClientInput(t *testing.T, m *Main, stdin string, args ...string) (code int, out, errOut string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := map[string]string{"SDNLB_SERVER": "http://" + m.APIAddr()}
	code = runCLI(args, func(k string) string { return env[k] }, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestCLI(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	call(t, m, "POST", "/v1/vips", map[string]any{"id": "web", "address": "10.0.0.100", "protocol": "TCP", "port": 80}, 201, nil)
	call(t, m, "POST", "/v1/pools", map[string]any{"id": "web", "vip_id": "web", "lb_method": "ADAPTIVE", "slow_start": 30}, 201, nil)
	call(t, m, "POST", "/v1/members", map[string]any{"id": "m1", "pool_id": "web", "address": "10.0.0.1", "port": 8080, "capacity": 750}, 201, nil)
	waitStatsMembers(t, m, "web", "m1")

	t.Run("GetTable", func(t *testing.T) {
		code, out, errOut := runClient(t, m, "get", "members")
		if code != exitOK || !strings.Contains(out, "CAPACITY") || !strings.Contains(out, "10.0.0.1") || !strings.Contains(out, "750") {
			t.Errorf("exit %d, out:\n%s\nerr: %s", code, out, errOut)
		}
	})
	t.Run("GetJSON", func(t *testing.T) {
		code, out, _ := runClient(t, m, "get", "vips", "-o", "json")
		var vips []map[string]any
		if code != exitOK || json.Unmarshal([]byte(out), &vips) != nil || len(vips) != 1 || vips[0]["id"] != "web" {
			t.Errorf("exit %d, out:\n%s", code, out)
		}
	})
	t.Run("Describe", func(t *testing.T) {
		code, out, _ := runClient(t, m, "describe", "pool", "web")
		if code != exitOK || !strings.Contains(out, "ADAPTIVE, dispatched by the switch, NAT, slow start 30s") || !strings.Contains(out, "m1") {
			t.Errorf("exit %d, out:\n%s", code, out)
		}
	})
	t.Run("DrainAndBack", func(t *testing.T) {
		if code, out, _ := runClient(t, m, "drain", "m1"); code != exitOK || !strings.Contains(out, "DRAINING") {
			t.Errorf("drain: exit %d, out %q", code, out)
		}
		if code, out, _ := runClient(t, m, "undrain", "m1"); code != exitOK || strings.Contains(out, "DRAINING") {
			t.Errorf("undrain: exit %d, out %q", code, out)
		}
	})
	t.Run("ExitCodes", func(t *testing.T) {
		if code, _, errOut := runClient(t, m, "describe", "pool", "nope"); code != exitAPIError || !strings.Contains(errOut, "not_found") {
			t.Errorf("unknown pool: exit %d, %q", code, errOut)
		}
		if code, _, _ := runClient(t, m, "get", "things"); code != exitUsage {
			t.Errorf("unknown kind: exit %d", code)
		}
		code, _, errOut := runClient(t, m, "get", "vips", "--server", "http://127.0.0.1:1")
		if code != exitNoServer || !strings.Contains(errOut, "--server or SDNLB_SERVER") {
			t.Errorf("no server: exit %d, %q", code, errOut)
		}
	})
	t.Run("FlagsBeforeTheCommand", func(t *testing.T) {
		// SDNLB_SERVER names no server: only --server reaches it.
		env := func(k string) string { return map[string]string{"SDNLB_SERVER": "http://127.0.0.1:1"}[k] }
		for _, tt := range []struct {
			args    []string
			code    int
			message string
		}{
			{[]string{"--server", "http://" + m.APIAddr(), "get", "vips", "-o", "json"}, exitOK, ""},
			{[]string{"-o=json", "--server=http://" + m.APIAddr(), "describe", "pool", "web"}, exitOK, ""},
			{[]string{"--server", "http://" + m.APIAddr(), "vips"}, exitUsage, `unknown command "vips": the commands are get, describe`},
			{[]string{"--server", "http://" + m.APIAddr()}, exitUsage, "no command: the commands are get"},
		} {
			args, ok := cliArgs(tt.args)
			if !ok {
				t.Errorf("%q: taken for the service's arguments", tt.args)
				continue
			}
			var stdout, stderr bytes.Buffer
			code := runCLI(args, env, strings.NewReader(""), &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.message) || strings.Count(stderr.String(), "\n") > 1 {
				t.Errorf("%q: exit %d, out %q, err %q", tt.args, code, stdout.String(), stderr.String())
			}
		}
		for _, args := range [][]string{nil, {"serve"}, {"--api-addr", ":0"}, {"-h"}, {"vips"}} {
			if _, ok := cliArgs(args); ok {
				t.Errorf("%q: taken for a client command", args)
			}
		}
	})
	t.Run("Watch", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w := &firstTable{cancel: cancel}
		c := &apiClient{base: "http://" + m.APIAddr(), http: newHTTPClient()}
		if err := c.watchPool(ctx, w, "web", "table"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(w.String(), "m1") {
			t.Errorf("watch printed:\n%s", w.String())
		}
	})
}

// When the server goes, watch says so and exits as when it cannot be
// reached.
func TestCLI_WatchLosesTheServer(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	_, pool := mustCreatePool(t, m, 80)
	waitStatsMembers(t, m, pool.ID)
	shown := make(chan struct{})
	var once sync.Once
	out := &firstTable{cancel: func() { once.Do(func() { close(shown) }) }}
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		env := map[string]string{"SDNLB_SERVER": "http://" + m.APIAddr()}
		code <- runCLI([]string{"watch", "pool", pool.ID}, func(k string) string { return env[k] }, strings.NewReader(""), out, &stderr)
	}()
	select {
	case <-shown:
	case <-time.After(10 * time.Second):
		t.Fatalf("watch printed no table:\n%s", out.String())
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		if c != exitNoServer || !strings.Contains(stderr.String(), "lost http://"+m.APIAddr()) {
			t.Errorf("exit %d, err %q", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("watch goes on without the server")
	}
}

// firstTable collects what watch prints and stops it after one table.
type firstTable struct {
	mu     sync.Mutex
	b      bytes.Buffer
	cancel func()
}

func (f *firstTable) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if string(p) == "\n" {
		f.cancel()
	}
	return f.b.Write(p)
}

func (f *firstTable) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b.String()
}
