package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/api"
	"github.com/sdnlb/sdnlb/internal/storetest"
	"github.com/sdnlb/sdnlb/lbstore"
)

// GET /v1/config of 450,000 members, some 60 MB of JSON, is encoded as the
// store reads it: the heap grows by a few MB, not by the document or the
// members behind it, for one reader or three at once. docs/BENCHMARKS.md
// ("Store and API") records what this logs.
func TestExport_MemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("450,000 members: some 15 s, and minutes under the race detector")
	}
	const (
		pools          = 9
		membersPerPool = 50_000
		maxGrowth      = 50 << 20
	)
	path := filepath.Join(t.TempDir(), "sdnlb.db")
	db, err := lbstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store := lbstore.NewStore(db)
	ctx := context.Background()
	for i := range pools {
		p := sdnlb.NewPool()
		p.ID = fmt.Sprintf("pool-%d", i)
		if err := store.CreatePool(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	seedMembers(t, path, pools, membersPerPool)
	ts := httptest.NewServer((&api.Server{ConfigService: store}).Handler())
	t.Cleanup(ts.Close)

	for _, readers := range []int{1, 3} {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		sink := &memorySink{every: 1 << 20}
		var wg sync.WaitGroup
		for range readers {
			wg.Go(func() { exportInto(t, ts, sink) })
		}
		wg.Wait()
		sink.sample()
		if want := readers * pools * membersPerPool; sink.members != want {
			t.Fatalf("%d readers read %d members, want %d", readers, sink.members, want)
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		growth := sink.peakHeap - before.HeapAlloc
		t.Logf("%d reader(s), %d MB of JSON: heap grew at most %.1f MB, memory from the OS by %.1f MB; %d MB allocated in all",
			readers, sink.bytes>>20, float64(growth)/(1<<20), float64(sink.peakSys-before.Sys)/(1<<20),
			(after.TotalAlloc-before.TotalAlloc)>>20)
		if growth > maxGrowth {
			t.Errorf("%d reader(s): the heap grew by %d MB, more than %d MB", readers, growth>>20, maxGrowth>>20)
		}
	}
}

// seedMembers gives each of the pools ("pool-0"...) n members, straight
// into the SQLite file.
func seedMembers(t *testing.T, path string, pools, n int) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlx.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for i := range pools {
		if err := storetest.SeedMembers(ctx, tx, fmt.Sprintf("pool-%d", i), n); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// exportInto reads GET /v1/config into sink.
func exportInto(t *testing.T, ts *httptest.Server, sink *memorySink) {
	resp, err := ts.Client().Get(ts.URL + "/v1/config")
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /v1/config: %d", resp.StatusCode)
	}
	buf := make([]byte, len(memberKey)-1+32<<10)
	kept := 0 // the end of the last read, where a key may start
	for {
		n, err := resp.Body.Read(buf[kept:])
		read := buf[:kept+n]
		sink.count(n, bytes.Count(read, memberKey))
		kept = copy(buf, read[max(0, len(read)-len(memberKey)+1):])
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Error(err)
			return
		}
	}
}

// memberKey is a key only members have in an export.
var memberKey = []byte(`"pool_id":`)

// memorySink counts what the readers read and samples the heap every
// `every` bytes of it, keeping the highest reading.
type memorySink struct {
	every int

	mu                sync.Mutex
	bytes, members    int
	unsampled         int
	peakHeap, peakSys uint64
}

func (s *memorySink) count(bytes, members int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes += bytes
	s.members += members
	if s.unsampled += bytes; s.unsampled >= s.every {
		s.unsampled = 0
		s.sampleLocked()
	}
}

func (s *memorySink) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sampleLocked()
}

func (s *memorySink) sampleLocked() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.peakHeap = max(s.peakHeap, ms.HeapAlloc)
	s.peakSys = max(s.peakSys, ms.Sys)
}
