package main

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// The API benchmarks go through the whole service over loopback HTTP: chi,
// JSON, validation and the SQLite store, as a client sees it.

func BenchmarkAPI_CreateMember(b *testing.B) {
	m := MustRunMain(b, filepath.Join(b.TempDir(), "sdnlb.db"))
	_, pool := mustCreatePool(b, m, 80)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		body := map[string]any{"pool_id": pool.ID, "address": fmt.Sprintf("10.%d.%d.%d", i/62500%250, i/250%250, i%250+1), "port": 80}
		call(b, m, "POST", "/v1/members", body, 201, nil)
	}
}

// BenchmarkAPI_ListMembers walks the members of a 10k-member pool a page
// of 100 at a time.
func BenchmarkAPI_ListMembers(b *testing.B) {
	m := MustRunMain(b, filepath.Join(b.TempDir(), "sdnlb.db"))
	_, pool := mustCreatePool(b, m, 80)
	ctx := context.Background()
	for i := range 10_000 {
		mb := sdnlb.NewMember()
		mb.PoolID, mb.Address, mb.Port = pool.ID, fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), 80
		if err := m.Store.CreateMember(ctx, mb); err != nil {
			b.Fatal(err)
		}
	}
	var page struct {
		Members []object `json:"members"`
		Next    string   `json:"next"`
	}
	after := ""
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		page.Members = page.Members[:0]
		call(b, m, "GET", "/v1/members?limit=100&pool_id="+pool.ID+"&after="+url.QueryEscape(after), nil, 200, &page)
		after = page.Next
	}
}
