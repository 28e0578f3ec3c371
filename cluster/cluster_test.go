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

// fakeLease is one lease row in memory, by the fake clock: what the
// database does, with a switch to make it fail or hang.
type fakeLease struct {
	clock *fakeClock

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
				// As a paused process: nothing, not even the call's
				// timeout, ends it before the test does.
				f.clock.block(hang)
			}
			if fail != nil {
				return sdnlb.Lease{}, fail
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			now := f.clock.Now()
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
	// within bounds, in the fake time, how long a test waits for a state.
	within = 10 * lease
)

// start runs an elector for node id on f's clock; stop ends it.
func start(t *testing.T, f *fakeLease, id string) (e *cluster.Elector, stop func()) {
	t.Helper()
	e = cluster.New(f.service(), cluster.Options{Node: sdnlb.ClusterNode{ID: id}, Lease: lease, Renew: renew, Clock: f.clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.Run(ctx) }()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(patience):
			t.Error("Run did not return")
		}
	}
	t.Cleanup(stop)
	return e, stop
}

func leads(e *cluster.Elector) func() bool {
	return func() bool { s, _ := e.State(); return s.Leader }
}

func follows(e *cluster.Elector) func() bool {
	return func() bool { s, _ := e.State(); return !s.Leader }
}

func TestElector(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := &fakeLease{clock: newFakeClock()}
		e, _ := start(t, f, "a")
		f.clock.stepUntil(t, 1, within, "a the leader", leads(e))
		if s, _ := e.State(); s.Generation != 1 || !e.IsLeader() {
			t.Fatalf("state %+v, IsLeader %v", s, e.IsLeader())
		}
		// It keeps renewing: still leader, same generation, after several
		// leases, each longer than its local deadline.
		f.clock.run(t, 1, 3*lease)
		if s, _ := e.State(); !s.Leader || s.Generation != 1 || !e.IsLeader() {
			t.Fatalf("after 3 leases: %+v", s)
		}
	})
	t.Run("OneLeader", func(t *testing.T) {
		f := &fakeLease{clock: newFakeClock()}
		a, _ := start(t, f, "a")
		f.clock.stepUntil(t, 1, within, "a the leader", leads(a))
		b, _ := start(t, f, "b")
		f.clock.run(t, 2, 3*lease)
		if s, _ := b.State(); s.Leader || s.Generation != 1 {
			t.Fatalf("b: %+v while a renews, want a follower that saw generation 1", s)
		}
	})
	t.Run("Takeover", func(t *testing.T) {
		f := &fakeLease{clock: newFakeClock()}
		a, stopA := start(t, f, "a")
		f.clock.stepUntil(t, 1, within, "a the leader", leads(a))
		b, _ := start(t, f, "b")
		stopA() // releases the lease
		f.clock.stepUntil(t, 1, within, "b the leader", leads(b))
		if s, _ := b.State(); s.Generation != 2 || f.released != 1 {
			t.Fatalf("b: %+v, released %d", s, f.released)
		}
	})
	t.Run("TakeoverAfterExpiry", func(t *testing.T) {
		// The leader's database calls hang (a paused or cut-off leader):
		// it steps down before the lease expires, and the other takes it
		// only after.
		f := &fakeLease{clock: newFakeClock()}
		a, _ := start(t, f, "a")
		f.clock.stepUntil(t, 1, within, "a the leader", leads(a))
		b, _ := start(t, f, "b")
		hang := make(chan struct{})
		t.Cleanup(func() { close(hang) }) // before the electors stop
		f.set(func(f *fakeLease) { f.hang, f.hangOf = hang, "a" })
		aDown := f.clock.stepUntil(t, 2, within, "a a follower", follows(a))
		expires := f.expiry()
		if !aDown.Before(expires) {
			t.Fatalf("a stepped down at %v, after its lease expired at %v", aDown, expires)
		}
		if a.IsLeader() {
			t.Fatal("IsLeader after stepping down")
		}
		bUp := f.clock.stepUntil(t, 2, within, "b the leader", leads(b))
		if bUp.Before(expires) {
			t.Fatalf("b led at %v, before a's lease expired at %v", bUp, expires)
		}
		if s, _ := b.State(); s.Generation != 2 {
			t.Fatalf("b: %+v, want generation 2", s)
		}
		t.Logf("a stepped down %v before expiry; b took over %v after it", expires.Sub(aDown), bUp.Sub(expires))
	})
	t.Run("DatabaseAway", func(t *testing.T) {
		f := &fakeLease{clock: newFakeClock()}
		a, _ := start(t, f, "a")
		f.clock.stepUntil(t, 1, within, "a the leader", leads(a))
		f.set(func(f *fakeLease) { f.fail = errors.New("connection refused") })
		down := f.clock.stepUntil(t, 1, within, "a a follower", follows(a))
		if exp := f.expiry(); !down.Before(exp) {
			t.Fatalf("stepped down at %v, after expiry %v", down, exp)
		}
		f.set(func(f *fakeLease) { f.fail = nil })
		f.clock.stepUntil(t, 1, within, "a the leader again", leads(a))
		if s, _ := a.State(); s.Generation != 2 {
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
	// join runs Join on a fake clock, stepping it whenever Join waits,
	// and returns what Join did and how long it took.
	join := func(t *testing.T, refusals int) (err error, calls int, took time.Duration) {
		t.Helper()
		clock := newFakeClock()
		e := cluster.New(recorder(refusals, &calls), cluster.Options{Node: sdnlb.ClusterNode{ID: "a"}, Lease: lease, Renew: renew, Clock: clock})
		begin := clock.Now()
		done := make(chan error, 1)
		go func() { done <- e.Join(context.Background()) }()
		timeout := time.After(patience)
		for {
			if n, changed := clock.waiting(); n == 1 {
				clock.step(clock.Now().Add(within))
			} else {
				select {
				case err := <-done:
					return err, calls, clock.Now().Sub(begin)
				case <-changed:
				case <-timeout:
					t.Fatalf("Join neither returned nor waited in %v", patience)
				}
			}
		}
	}
	t.Run("OK", func(t *testing.T) {
		if err, calls, took := join(t, 0); err != nil || calls != 1 || took != 0 {
			t.Fatalf("Join: %v after %d calls and %v", err, calls, took)
		}
	})
	t.Run("Restarted", func(t *testing.T) {
		// The previous process's row lapses within a lease: Join waits,
		// a renewal between tries.
		if err, calls, took := join(t, 2); err != nil || calls != 3 || took != 2*renew {
			t.Fatalf("Join: %v after %d calls and %v, want success on the third, after %v", err, calls, took, 2*renew)
		}
	})
	t.Run("ErrInUse", func(t *testing.T) {
		// It gives up after a lease and a renewal.
		err, calls, took := join(t, 1000)
		if sdnlb.ErrorCode(err) != sdnlb.ECONFLICT || calls != 5 || took != lease+renew {
			t.Fatalf("Join: %v after %d calls and %v, want ECONFLICT after 5 tries and %v", err, calls, took, lease+renew)
		}
	})
}
