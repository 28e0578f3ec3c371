package cluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/cluster"
	"github.com/sdnlb/sdnlb/mock"
)

// fakeLease is one lease row in memory, by the local clock: what the
// database does, with a switch to make it fail or hang.
type fakeLease struct {
	mu       sync.Mutex
	holder   string
	gen      uint64
	expires  time.Time
	fail     error         // set: every call fails
	hang     chan struct{} // set: calls of node hangOf block until it is closed
	hangOf   string
	released int
}

func (f *fakeLease) service() *mock.LeaseService {
	return &mock.LeaseService{
		TakeLeaseFn: func(ctx context.Context, n sdnlb.ClusterNode, gen uint64, d time.Duration) (sdnlb.Lease, error) {
			f.mu.Lock()
			hang, fail := f.hang, f.fail
			if f.hangOf != n.ID {
				hang = nil
			}
			f.mu.Unlock()
			if hang != nil {
				select {
				case <-hang:
				case <-ctx.Done():
					return sdnlb.Lease{}, ctx.Err()
				}
			}
			if fail != nil {
				return sdnlb.Lease{}, fail
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			now := time.Now()
			expired := !now.Before(f.expires)
			if !(f.holder == n.ID && f.gen == gen) && !expired {
				return sdnlb.Lease{Holder: f.holder, Generation: f.gen, Remaining: f.expires.Sub(now)}, nil
			}
			if expired {
				f.gen++
			}
			f.holder, f.expires = n.ID, now.Add(d)
			return sdnlb.Lease{Held: true, Holder: n.ID, Generation: f.gen, Remaining: d}, nil
		},
		ReleaseLeaseFn: func(ctx context.Context, id string, gen uint64) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.holder == id && f.gen == gen {
				f.expires = time.Time{}
				f.released++
			}
			return nil
		},
		ClusterFn: func(ctx context.Context) (*sdnlb.Cluster, error) { return &sdnlb.Cluster{}, nil },
	}
}

func (f *fakeLease) set(fn func(f *fakeLease)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeLease) expiry() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.expires
}

const (
	lease = 300 * time.Millisecond
	renew = 100 * time.Millisecond
)

func start(t *testing.T, f *fakeLease, id string) (*cluster.Elector, context.CancelFunc) {
	t.Helper()
	e := cluster.New(f.service(), cluster.Options{Node: sdnlb.ClusterNode{ID: id}, Lease: lease, Renew: renew})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	stop := func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return")
		}
	}
	t.Cleanup(stop)
	return e, stop
}

// waitState waits, at most 3 s, for e to become leader or follower.
func waitState(t *testing.T, e *cluster.Elector, leader bool) (cluster.State, time.Time) {
	t.Helper()
	timeout := time.After(3 * time.Second)
	for {
		s, changed := e.State()
		if s.Leader == leader {
			return s, time.Now()
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("still %+v after 3s, want leader=%v", s, leader)
		}
	}
}

func TestElector(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := &fakeLease{}
		e, _ := start(t, f, "a")
		s, _ := waitState(t, e, true)
		if s.Generation != 1 || !e.IsLeader() {
			t.Fatalf("state %+v, IsLeader %v", s, e.IsLeader())
		}
		// It keeps renewing: still leader, same generation, after several leases.
		time.Sleep(3 * lease)
		if s, _ := e.State(); !s.Leader || s.Generation != 1 || !e.IsLeader() {
			t.Fatalf("after 3 leases: %+v", s)
		}
	})
	t.Run("OneLeader", func(t *testing.T) {
		f := &fakeLease{}
		a, _ := start(t, f, "a")
		waitState(t, a, true)
		b, _ := start(t, f, "b")
		time.Sleep(3 * lease)
		if s, _ := b.State(); s.Leader || s.Generation != 1 {
			t.Fatalf("b: %+v while a renews, want a follower that saw generation 1", s)
		}
	})
	t.Run("Takeover", func(t *testing.T) {
		f := &fakeLease{}
		a, stopA := start(t, f, "a")
		waitState(t, a, true)
		b, _ := start(t, f, "b")
		stopA() // releases the lease
		s, _ := waitState(t, b, true)
		if s.Generation != 2 || f.released != 1 {
			t.Fatalf("b: %+v, released %d", s, f.released)
		}
	})
	t.Run("TakeoverAfterExpiry", func(t *testing.T) {
		// The leader's database calls hang (a paused or cut-off leader):
		// it steps down before the lease expires, and the other takes it
		// only after.
		f := &fakeLease{}
		a, _ := start(t, f, "a")
		waitState(t, a, true)
		b, _ := start(t, f, "b")
		hang := make(chan struct{})
		f.set(func(f *fakeLease) { f.hang, f.hangOf = hang, "a" })
		_, aDown := waitState(t, a, false)
		expires := f.expiry()
		if !aDown.Before(expires) {
			t.Fatalf("a stepped down at %v, after its lease expired at %v", aDown, expires)
		}
		if a.IsLeader() {
			t.Fatal("IsLeader after stepping down")
		}
		s, bUp := waitState(t, b, true)
		close(hang)
		if bUp.Before(expires) {
			t.Fatalf("b led at %v, before a's lease expired at %v", bUp, expires)
		}
		if s.Generation != 2 {
			t.Fatalf("b: %+v, want generation 2", s)
		}
		t.Logf("a stepped down %v before expiry; b took over %v after it", expires.Sub(aDown), bUp.Sub(expires))
	})
	t.Run("DatabaseAway", func(t *testing.T) {
		f := &fakeLease{}
		a, _ := start(t, f, "a")
		waitState(t, a, true)
		f.set(func(f *fakeLease) { f.fail = errors.New("connection refused") })
		_, down := waitState(t, a, false)
		if exp := f.expiry(); !down.Before(exp) {
			t.Fatalf("stepped down at %v, after expiry %v", down, exp)
		}
		f.set(func(f *fakeLease) { f.fail = nil })
		if s, _ := waitState(t, a, true); s.Generation != 2 {
			t.Fatalf("back: %+v, want generation 2", s)
		}
	})
}

func TestElector_Join(t *testing.T) {
	// recorder refuses the node id the first refusals times, as the
	// store does while another process's row is fresh.
	recorder := func(refusals int, calls *int) *mock.LeaseService {
		return &mock.LeaseService{RecordNodeFn: func(ctx context.Context, n sdnlb.ClusterNode, d time.Duration) error {
			*calls++
			if n.Instance == "" || d != lease {
				t.Errorf("RecordNode(%+v, %v): want an instance token and the lease", n, d)
			}
			if *calls <= refusals {
				return sdnlb.Errorf(sdnlb.ECONFLICT, "node id %q is in use", n.ID)
			}
			return nil
		}}
	}
	opts := cluster.Options{Node: sdnlb.ClusterNode{ID: "a"}, Lease: lease, Renew: renew}
	t.Run("OK", func(t *testing.T) {
		calls := 0
		if err := cluster.New(recorder(0, &calls), opts).Join(context.Background()); err != nil || calls != 1 {
			t.Fatalf("Join: %v after %d calls", err, calls)
		}
	})
	t.Run("Restarted", func(t *testing.T) {
		// The previous process's row lapses within a lease: Join waits.
		calls := 0
		if err := cluster.New(recorder(2, &calls), opts).Join(context.Background()); err != nil || calls != 3 {
			t.Fatalf("Join: %v after %d calls, want success on the third", err, calls)
		}
	})
	t.Run("ErrInUse", func(t *testing.T) {
		calls := 0
		err := cluster.New(recorder(1000, &calls), opts).Join(context.Background())
		if sdnlb.ErrorCode(err) != sdnlb.ECONFLICT || calls < 2 || calls > 10 {
			t.Fatalf("Join: %v after %d calls, want ECONFLICT after a few tries", err, calls)
		}
	})
}
