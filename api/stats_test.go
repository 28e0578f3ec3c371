package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/mock"
)

// sseReader reads Server-Sent Events frames, skipping heartbeats.
type sseReader struct {
	tb testing.TB
	rd *bufio.Reader
}

// watch opens an event stream at path; it ends with the test.
func watch(tb testing.TB, ts *httptest.Server, path string) *sseReader {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		tb.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	return &sseReader{tb: tb, rd: bufio.NewReader(resp.Body)}
}

func (r *sseReader) next() map[string]string {
	r.tb.Helper()
	frame := map[string]string{}
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			r.tb.Fatalf("read: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && len(frame) > 0:
			return frame
		case line == "", strings.HasPrefix(line, ":"):
		default:
			k, v, _ := strings.Cut(line, ": ")
			frame[k] = v
		}
	}
}

// The stream sends the stats at once, a health change at once, and
// moving counters at most once a second; each event is the plain GET's
// JSON.
func TestServer_WatchPoolStats(t *testing.T) {
	var mu sync.Mutex
	cur := &sdnlb.PoolStats{PoolID: "p1", Members: []sdnlb.MemberStats{{MemberID: "m1", Status: sdnlb.MemberUp}}}
	set := func(edit func(ps *sdnlb.PoolStats)) {
		mu.Lock()
		defer mu.Unlock()
		next := *cur
		next.Members = append([]sdnlb.MemberStats(nil), cur.Members...)
		edit(&next)
		cur = &next
	}
	stats := &mock.StatsService{PoolStatsFn: func(ctx context.Context, id string) (*sdnlb.PoolStats, error) {
		mu.Lock()
		defer mu.Unlock()
		if id != "p1" {
			return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "pool %s not found", id)
		}
		return cur, nil
	}}
	ts := MustServe(t, &Server{StatsService: stats, heartbeat: time.Hour})

	if resp := testRequest(t, ts, "GET", "/v1/pools/nope/stats?watch=true", ""); resp.Status != http.StatusNotFound {
		t.Errorf("watching a pool that does not exist: status %d, want 404", resp.Status)
	}
	sse := watch(t, ts, "/v1/pools/p1/stats?watch=true")
	decode := func(f map[string]string) *sdnlb.PoolStats {
		t.Helper()
		var ps sdnlb.PoolStats
		if f["event"] != "stats" || f["id"] == "" || json.Unmarshal([]byte(f["data"]), &ps) != nil {
			t.Fatalf("frame %v", f)
		}
		return &ps
	}
	if ps := decode(sse.next()); ps.PoolID != "p1" || ps.Members[0].Status != sdnlb.MemberUp {
		t.Errorf("first event %+v", ps)
	}

	set(func(ps *sdnlb.PoolStats) { ps.TotalConnections, ps.BytesIn = 10, 1000 })
	start := time.Now()
	if ps := decode(sse.next()); ps.TotalConnections != 10 {
		t.Errorf("counters event %+v", ps)
	} else if took := time.Since(start); took < statsEvery-statsSample {
		t.Errorf("counters sent %v after the previous event, want at most one a second", took)
	}

	set(func(ps *sdnlb.PoolStats) { ps.Members[0].Status = sdnlb.MemberDown })
	start = time.Now()
	if ps := decode(sse.next()); ps.Members[0].Status != sdnlb.MemberDown {
		t.Errorf("health event %+v", ps)
	} else if took := time.Since(start); took >= statsEvery {
		t.Errorf("health change sent %v after it, want within a sample", took)
	}
}

// GET /v1/stats gives every pool the controller serves, or a page of
// pools; with watch one event per pool.
func TestServer_AllStats(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	served := map[string]*sdnlb.PoolStats{
		"p1": {PoolID: "p1", BytesIn: 10, Members: []sdnlb.MemberStats{{MemberID: "m1", Status: sdnlb.MemberUp, StatusSince: since}, {MemberID: "m2"}}},
		"p2": {PoolID: "p2", Members: []sdnlb.MemberStats{}},
	}
	stats := &mock.StatsService{
		PoolStatsFn: func(ctx context.Context, id string) (*sdnlb.PoolStats, error) {
			if ps, ok := served[id]; ok {
				return ps, nil
			}
			return nil, sdnlb.Errorf(sdnlb.ENOTFOUND, "pool %s not found", id)
		},
		AllPoolStatsFn: func(ctx context.Context) ([]*sdnlb.PoolStats, error) {
			return []*sdnlb.PoolStats{served["p1"], served["p2"]}, nil
		},
	}
	// p3 is stored, but the controller does not serve it yet.
	var stored []any
	for _, id := range []string{"p1", "p2", "p3"} {
		p := sdnlb.NewPool()
		p.ID = id
		stored = append(stored, p)
	}
	srv := mustMemStore(t, stored...).server()
	srv.StatsService, srv.heartbeat = stats, time.Hour
	ts := MustServe(t, srv)
	page := func(path string) allStats {
		t.Helper()
		var all allStats
		resp := testRequest(t, ts, "GET", path, "")
		if err := json.Unmarshal(resp.Body, &all); err != nil || resp.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %v %s", path, resp.Status, err, resp.Body)
		}
		return all
	}
	pools := func(all allStats) []string {
		var ids []string
		for _, ps := range all.Pools {
			ids = append(ids, ps.PoolID)
		}
		return ids
	}

	resp := testRequest(t, ts, "GET", "/v1/stats", "")
	if strings.Contains(string(resp.Body), `"next"`) {
		t.Errorf("unpaged, the answer has a cursor: %s", resp.Body)
	}
	all := page("/v1/stats")
	if !reflect.DeepEqual(pools(all), []string{"p1", "p2"}) || !reflect.DeepEqual(all.Pools[0], served["p1"]) {
		t.Errorf("GET /v1/stats: %+v", all)
	}
	for _, tc := range []struct {
		path, next string
		want       []string
	}{
		{"/v1/stats?limit=1", "p1", []string{"p1"}},
		{"/v1/stats?limit=1&after=p1", "p2", []string{"p2"}},
		{"/v1/stats?after=p2", "", nil},
	} {
		if all := page(tc.path); !reflect.DeepEqual(pools(all), tc.want) || all.Next != tc.next {
			t.Errorf("GET %s: pools %v next %q, want %v next %q", tc.path, pools(all), all.Next, tc.want, tc.next)
		}
	}
	assertError(t, testRequest(t, ts, "GET", "/v1/stats?limit=0", ""), http.StatusBadRequest, sdnlb.EINVALID, "limit")

	sse := watch(t, ts, "/v1/stats?watch=true")
	for _, want := range []string{"p1", "p2"} {
		if f := sse.next(); !strings.Contains(f["data"], `"pool_id":"`+want+`"`) {
			t.Errorf("event %v, want %s's stats", f, want)
		}
	}
}

// CloseStreams ends open streams, so a graceful shutdown does not wait for
// a dashboard left open.
func TestServer_CloseStreamsEndsStreams(t *testing.T) {
	stats := &mock.StatsService{AllPoolStatsFn: func(ctx context.Context) ([]*sdnlb.PoolStats, error) {
		return []*sdnlb.PoolStats{}, nil
	}}
	s := &Server{StatsService: stats, heartbeat: time.Hour}
	ts := MustServe(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/stats?watch=true", nil)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s.CloseStreams()
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("the stream did not end cleanly: %v", err)
	}
}

// watch takes every spelling of true strconv.ParseBool does (Python's
// requests sends True), and refuses what is no boolean instead of
// answering a snapshot.
func TestServer_WatchBoolean(t *testing.T) {
	p1 := &sdnlb.PoolStats{PoolID: "p1"}
	stats := &mock.StatsService{
		AllPoolStatsFn: func(ctx context.Context) ([]*sdnlb.PoolStats, error) { return []*sdnlb.PoolStats{p1}, nil },
		PoolStatsFn:    func(ctx context.Context, id string) (*sdnlb.PoolStats, error) { return p1, nil },
	}
	pools := &mock.PoolService{FindPoolsFn: func(ctx context.Context, f sdnlb.PoolFilter) ([]*sdnlb.Pool, error) {
		if f.Page.After != "" {
			return nil, nil
		}
		return []*sdnlb.Pool{{ID: "p1"}}, nil
	}}
	ts := MustServe(t, &Server{StatsService: stats, PoolService: pools, heartbeat: time.Hour})
	for _, path := range []string{"/v1/stats", "/v1/pools/p1/stats"} {
		for _, value := range []string{"1", "t", "T", "True", "TRUE", "true"} {
			t.Run(path+"/"+value, func(t *testing.T) {
				if f := watch(t, ts, path+"?watch="+value).next(); f["event"] != "stats" {
					t.Errorf("watch=%s: first frame %v", value, f)
				}
			})
		}
		for _, value := range []string{"0", "f", "False", "FALSE", "false"} {
			if resp := testRequest(t, ts, "GET", path+"?watch="+value, ""); resp.Status != http.StatusOK || resp.Header.Get("Content-Type") == "text/event-stream" {
				t.Errorf("%s?watch=%s: %d %s, want a snapshot", path, value, resp.Status, resp.Header.Get("Content-Type"))
			}
		}
		for _, value := range []string{"yes", "on", "2", "tRUE"} {
			assertError(t, testRequest(t, ts, "GET", path+"?watch="+value, ""), http.StatusBadRequest, sdnlb.EINVALID, "watch")
		}
	}
}
