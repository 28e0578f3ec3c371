package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

// The benchmarks go through the whole router and middleware chain, without
// a network, against fakes; the lead measures the real store separately.

func BenchmarkVIPCreate(b *testing.B) {
	vips := &mock.VIPService{CreateVIPFn: func(ctx context.Context, v *sdnlb.VIP) error {
		v.ID, v.MAC = "b3c1e0a4-0000-4000-8000-000000000001", "02:00:00:00:00:01"
		return nil
	}}
	body := `{"name":"web","address":"10.0.0.100","protocol":"TCP","port":80,"session_persistence":{"type":"SOURCE_IP","timeout":60}}`
	benchRequest(b, &Server{VIPService: vips}, "POST", "/v1/vips", body, http.StatusCreated)
}

// benchRequest serves one request per iteration through the whole handler,
// without a network, and fails on another status than want.
func benchRequest(b *testing.B, srv *Server, method, path, body string, want int) {
	b.Helper()
	h := srv.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != want {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

func BenchmarkMemberList(b *testing.B) {
	page := make([]*sdnlb.Member, sdnlb.DefaultPageLimit+1)
	for i := range page {
		page[i] = &sdnlb.Member{ID: fmt.Sprintf("m%05d", i), PoolID: "p1", Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1),
			Port: 80, Weight: 1, AdminStateUp: true, Status: sdnlb.MemberUp, Health: sdnlb.MemberHealth{Status: sdnlb.MemberUp}}
	}
	members := &mock.MemberService{FindMembersFn: func(ctx context.Context, f sdnlb.MemberFilter) ([]*sdnlb.Member, error) {
		out := make([]*sdnlb.Member, len(page))
		for i, m := range page { // the store returns fresh objects each call
			c := *m
			out[i] = &c
		}
		return out, nil
	}}
	live := &mock.HealthReporter{MemberHealthFn: func(id string) (sdnlb.MemberHealth, bool) {
		return sdnlb.MemberHealth{Status: sdnlb.MemberUp, LatencyMS: 0.4}, true
	}}
	benchRequest(b, &Server{MemberService: members, HealthReporter: live}, "GET", "/v1/members?pool_id=p1", "", http.StatusOK)
}

func BenchmarkCompatPoolList(b *testing.B) {
	var objects []any
	for i := range 10 {
		p := sdnlb.NewPool()
		p.ID = fmt.Sprintf("p%d", i)
		objects = append(objects, p)
		for j := range 10 {
			m := sdnlb.NewMember()
			m.PoolID, m.Address = p.ID, fmt.Sprintf("10.0.%d.%d", i, j+1)
			objects = append(objects, m)
		}
	}
	benchRequest(b, mustMemStore(b, objects...).server(), "GET", "/quantum/v1.0/pools/", "", http.StatusOK)
}
