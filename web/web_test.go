package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/web"
)

func TestHandler(t *testing.T) {
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	for path, want := range map[string]string{
		"/":          "<title>sdnlb</title>",
		"/app.js":    "/v1/events",
		"/style.css": ".vip",
	} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
				t.Fatalf("status %d, body without %q", resp.StatusCode, want)
			}
		})
	}
}
