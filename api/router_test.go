package api

import (
	"net/http"
	"testing"
)

// "//" routes as "/", and a trailing slash is kept: /dashboard/ is served.
func TestServer_Slashes(t *testing.T) {
	ts := MustServe(t, newMemStore().server())
	for path, want := range map[string]int{"/dashboard/": 200, "//healthz": 200, "/quantum/v1.0//vips//": 200, "//v1/vips": 200} {
		if resp := testRequest(t, ts, "GET", path, ""); resp.Status != want {
			t.Errorf("GET %s: status %d, want %d", path, resp.Status, want)
		}
	}
}

// A 405 says which methods the path takes.
func TestServer_MethodNotAllowedAllow(t *testing.T) {
	ts := MustServe(t, newMemStore().server())
	resp := testRequest(t, ts, "PUT", "/v1/vips", "")
	if resp.Status != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, POST" {
		t.Errorf("PUT /v1/vips: %d, Allow %q, want 405 and GET, POST", resp.Status, resp.Header.Get("Allow"))
	}
	resp = testRequest(t, ts, "POST", "/v1/vips/x", "")
	if resp.Status != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "DELETE, GET, PATCH, PUT" {
		t.Errorf("POST /v1/vips/x: %d, Allow %q", resp.Status, resp.Header.Get("Allow"))
	}
}
