package main

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// A script that read an object can write it back only if nobody changed
// it in between: ETag on reads and writes, If-Match on PUT, PATCH and
// DELETE, 412 when stale, nothing changed then.
func TestETag_IfMatch(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	call(t, m, "POST", "/v1/vips", map[string]any{"id": "web", "address": "10.0.0.100", "protocol": "TCP", "port": 80}, 201, nil)
	send := func(method, body, ifMatch string) (int, string, string) {
		t.Helper()
		return sendIfMatch(t, method, "http://"+m.APIAddr()+"/v1/vips/web", body, ifMatch)
	}
	_, read, _ := send("GET", "", "")
	if read == "" {
		t.Fatal("GET gives no ETag")
	}
	status, written, _ := send("PATCH", `{"name":"first"}`, read)
	if status != 200 || written == "" || written == read {
		t.Fatalf("PATCH with the current ETag: %d, ETag %q (read %q)", status, written, read)
	}
	if status, _, body := send("PATCH", `{"name":"second"}`, read); status != http.StatusPreconditionFailed || !strings.Contains(body, "precondition_failed") {
		t.Errorf("PATCH with a stale ETag: %d %s", status, body)
	}
	if status, _, body := send("DELETE", "", read); status != http.StatusPreconditionFailed {
		t.Errorf("DELETE with a stale ETag: %d %s", status, body)
	}
	if _, _, body := send("GET", "", ""); !strings.Contains(body, `"name":"first"`) {
		t.Errorf("a refused write changed the VIP: %s", body)
	}
	if status, _, body := send("DELETE", "", "*"); status != http.StatusNoContent {
		t.Errorf("DELETE with If-Match *: %d %s", status, body)
	}
}

// The same for the whole configuration: GET /v1/config tags the version
// it exports, and PUT /v1/config with If-Match applies only to that
// version, so a script cannot undo a write it never saw.
func TestETag_ConfigIfMatch(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	call(t, m, "POST", "/v1/vips", map[string]any{"id": "web", "address": "10.0.0.100", "protocol": "TCP", "port": 80}, 201, nil)
	send := func(method, body, ifMatch string) (int, string, string) {
		t.Helper()
		return sendIfMatch(t, method, "http://"+m.APIAddr()+"/v1/config?prune=true", body, ifMatch)
	}
	_, read, doc := send("GET", "", "")
	if read == "" || strings.HasPrefix(read, "W/") {
		t.Fatalf("GET /v1/config gives the ETag %q, want a strong one", read)
	}
	if status, _, body := send("PUT", doc, read); status != 200 {
		t.Fatalf("PUT with the current ETag: %d %s", status, body)
	}
	if _, again, _ := send("GET", "", ""); again != read {
		t.Errorf("an apply that changed nothing moved the ETag from %s to %s", read, again)
	}
	call(t, m, "POST", "/v1/vips", map[string]any{"id": "api", "address": "10.0.0.101", "protocol": "TCP", "port": 80}, 201, nil)
	// The document read before would prune the new VIP.
	if status, _, body := send("PUT", doc, read); status != http.StatusPreconditionFailed || !strings.Contains(body, "precondition_failed") {
		t.Errorf("PUT with a stale ETag: %d %s", status, body)
	}
	call(t, m, "GET", "/v1/vips/api", nil, 200, nil)
	if status, _, body := send("PUT", doc, "*"); status != 200 {
		t.Errorf("PUT with If-Match *: %d %s", status, body)
	}
	call(t, m, "GET", "/v1/vips/api", nil, 404, nil)
}

// sendIfMatch sends body (JSON, or none) to url with If-Match when ifMatch
// is set, and returns the status, the ETag and the body of the answer.
func sendIfMatch(t *testing.T, method, url, body, ifMatch string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewBufferString(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("ETag"), string(data)
}
