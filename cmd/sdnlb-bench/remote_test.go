package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// fakeAPI is the slice of sdnlb's REST API the bench uses, recording the
// writes it receives in order.
type fakeAPI struct {
	mu         sync.Mutex
	vips       []map[string]any // existing and created
	writes     []string         // "POST /v1/pools {...}", "DELETE /v1/vips/x?cascade=true"
	rejectPool bool
	token      string
	badAuth    int
	created    map[string]int // per kind, for ids like "pool-1"
}

func (f *fakeAPI) handler() http.Handler {
	mux := http.NewServeMux()
	body := func(r *http.Request) (map[string]any, error) {
		var m map[string]any
		err := json.NewDecoder(r.Body).Decode(&m)
		return m, err
	}
	record := func(r *http.Request, m map[string]any) {
		b, _ := json.Marshal(m)
		f.writes = append(f.writes, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+string(b)))
	}
	create := func(kind string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			m, err := body(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			record(r, m)
			if kind == "pool" && f.rejectPool {
				w.WriteHeader(http.StatusBadRequest)
				w.Write([]byte(`{"code":"invalid","message":"lb_method is bad"}`))
				return
			}
			f.created[kind]++
			m["id"] = fmt.Sprintf("%s-%d", kind, f.created[kind])
			if kind == "vip" {
				f.vips = append(f.vips, m)
			}
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(m)
		}
	}
	mux.HandleFunc("GET /v1/vips", func(w http.ResponseWriter, r *http.Request) {
		var found []map[string]any
		for _, v := range f.vips {
			if v["address"] == r.URL.Query().Get("address") {
				found = append(found, v)
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"vips": found, "next": ""})
	})
	mux.HandleFunc("POST /v1/vips", create("vip"))
	mux.HandleFunc("POST /v1/pools", create("pool"))
	mux.HandleFunc("POST /v1/members", create("member"))
	mux.HandleFunc("DELETE /v1/vips/{id}", func(w http.ResponseWriter, r *http.Request) {
		record(r, nil)
		w.WriteHeader(http.StatusNoContent)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
			f.badAuth++
		}
		mux.ServeHTTP(w, r)
	})
}

func TestConfigureRemote(t *testing.T) {
	const (
		vip     = `POST /v1/vips {"address":"10.99.0.100","name":"sdnlb-bench","port":80,"protocol":"TCP"}`
		pool    = `POST /v1/pools {"dispatch":"CONTROLLER","lb_method":"ROUND_ROBIN","name":"sdnlb-bench","protocol":"TCP","vip_id":"vip-1"}`
		member1 = `POST /v1/members {"address":"10.99.0.1","pool_id":"pool-1","port":80,"weight":1}`
		member2 = `POST /v1/members {"address":"10.99.0.2","pool_id":"pool-1","port":80,"weight":1}`
		cleanup = `DELETE /v1/vips/vip-1?cascade=true null`
	)
	tests := []struct {
		name       string
		existing   []map[string]any
		rejectPool bool
		token      string
		wantErr    string
		want       []string // writes, cleanup included
	}{
		{"Fresh", nil, false, "", "", []string{vip, pool, member1, member2, cleanup}},
		{"WithToken", nil, false, "s3cret", "", []string{vip, pool, member1, member2, cleanup}},
		{"LeftoverOfAnEarlierRun", []map[string]any{{"id": "old", "name": "sdnlb-bench", "address": "10.99.0.100"}}, false, "", "",
			[]string{`DELETE /v1/vips/old?cascade=true null`, vip, pool, member1, member2, cleanup}},
		{"ErrSomeoneElsesVIP", []map[string]any{{"id": "web", "name": "web", "address": "10.99.0.100"}}, false, "", "will not touch it", nil},
		{"ErrPoolRejected", nil, true, "", "lb_method is bad", []string{vip, pool, cleanup}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := &fakeAPI{vips: tt.existing, rejectPool: tt.rejectPool, token: tt.token, created: map[string]int{}}
			srv := httptest.NewServer(api.handler())
			defer srv.Close()
			cfg := mustConfig(t, "-controller", "127.0.0.1:1", "-api", srv.URL, "-members", "2", "-token", tt.token)

			clean, err := configureRemote(context.Background(), newAPIClient(cfg), cfg)
			if clean != nil {
				if cerr := clean(); cerr != nil {
					t.Errorf("cleanup: %v", cerr)
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("configureRemote = %v, want an error about %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("configureRemote: %v", err)
			}
			got := api.writes
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if api.badAuth != 0 {
				t.Errorf("%d requests without the bearer token", api.badAuth)
			}
		})
	}
}
