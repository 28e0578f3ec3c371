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

// fakeMasters is the switch tables in memory, by the fake clock, beside
// a fakeLease: what the database does, with a switch to make one node's
// calls fail.
type fakeMasters struct {
	lease *fakeLease

	mu      sync.Mutex
	seen    map[[2]string]time.Time // by node and dpid
	masters map[string]sdnlb.SwitchMaster
	failOf  string    // this node's calls fail
	takenAt time.Time // when a master was last replaced by another node
}

func newFakeMasters(l *fakeLease) *fakeMasters {
	return &fakeMasters{lease: l, seen: map[[2]string]time.Time{}, masters: map[string]sdnlb.SwitchMaster{}}
}

var errAway = errors.New("connection refused")

func (f *fakeMasters) service() *mock.SwitchMasterService {
	return &mock.SwitchMasterService{
		RecordSwitchesFn: func(ctx context.Context, n sdnlb.ClusterNode, dpids []string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.failOf == n.ID {
				return errAway
			}
			for k := range f.seen {
				if k[0] == n.ID {
					delete(f.seen, k)
				}
			}
			for _, d := range dpids {
				f.seen[[2]string{n.ID, d}] = f.lease.clock.Now()
			}
			return nil
		},
		SwitchMastersFn: func(ctx context.Context, live time.Duration) (*sdnlb.Mastery, error) {
			f.lease.mu.Lock()
			term := f.lease.gen
			f.lease.mu.Unlock()
			now := f.lease.clock.Now()
			f.mu.Lock()
			defer f.mu.Unlock()
			m := &sdnlb.Mastery{Term: term}
			for _, sm := range f.masters {
				m.Masters = append(m.Masters, sm)
			}
			for k, at := range f.seen {
				if age := now.Sub(at); age <= live {
					m.Connections = append(m.Connections, sdnlb.SwitchConnection{Node: k[0], DPID: k[1], Age: age})
				}
			}
			return m, nil
		},
		SetSwitchMastersFn: func(ctx context.Context, id string, term uint64, set []sdnlb.SwitchMaster, drop []string) error {
			now := f.lease.clock.Now()
			f.lease.mu.Lock()
			held := f.lease.holder == id && f.lease.gen == term && now.Before(f.lease.expires)
			f.lease.mu.Unlock()
			if !held {
				return sdnlb.Errorf(sdnlb.ECONFLICT, "not the leader")
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, sm := range set {
				if old, ok := f.masters[sm.DPID]; ok && old.Node != sm.Node {
					f.takenAt = now
				}
				f.masters[sm.DPID] = sm
			}
			for _, d := range drop {
				delete(f.masters, d)
			}
			return nil
		},
		SwitchMastersChangedFn: func() <-chan struct{} { return nil },
	}
}

// startNode runs an elector and its Masters for node id, connected to
// switches, on l's clock: two more loops that wait on it. stop ends both.
func startNode(t *testing.T, l *fakeLease, f *fakeMasters, id string, switches ...string) (*cluster.Masters, *cluster.Elector, func()) {
	t.Helper()
	// A margin of a third of the lease rather than a sixth: the order of
	// a node's lapse and the leader's move is checked by when the test
	// sees them.
	e := cluster.New(l.service(), cluster.Options{Node: sdnlb.ClusterNode{ID: id}, Lease: lease, Renew: renew, Margin: lease / 3, Clock: l.clock})
	ms := cluster.NewMasters(f.service(), e, cluster.MastersOptions{Switches: func() []string { return switches }})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { e.Run(ctx) })
	wg.Go(func() { ms.Run(ctx) })
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(patience):
			t.Error("Run did not return")
		}
	}
	t.Cleanup(stop)
	return ms, e, stop
}

// mastered counts the switches node masters in a.
func mastered(a cluster.Assignment, node string) int {
	n := 0
	for _, sm := range a.Masters {
		if sm.Node == node {
			n++
		}
	}
	return n
}

// waitAssignment steps l's clock, loops waiting on it, until ok holds for
// ms's state, at most for within; it returns the state and the time ok
// held at.
func waitAssignment(t *testing.T, l *fakeLease, loops int, ms *cluster.Masters, what string, ok func(cluster.Assignment) bool) (cluster.Assignment, time.Time) {
	t.Helper()
	var a cluster.Assignment
	at := l.clock.stepUntil(t, loops, within, what, func() bool {
		a, _ = ms.State()
		return ok(a)
	})
	return a, at
}

func TestMasters(t *testing.T) {
	all := []string{"s1", "s2", "s3", "s4"}
	t.Run("Spread", func(t *testing.T) {
		l := &fakeLease{clock: newFakeClock()}
		f := newFakeMasters(l)
		a, ea, _ := startNode(t, l, f, "a", all...)
		l.clock.stepUntil(t, 2, within, "a the leader", leads(ea))
		waitAssignment(t, l, 2, a, "a the master of all", func(s cluster.Assignment) bool { return s.Live && mastered(s, "a") == 4 })
		b, _, _ := startNode(t, l, f, "b", all...)
		// b joins: two switches move to it, each with a new generation,
		// and both nodes read the same assignment.
		sb, _ := waitAssignment(t, l, 4, b, "b the master of two", func(s cluster.Assignment) bool { return s.Live && mastered(s, "b") == 2 })
		sa, _ := waitAssignment(t, l, 4, a, "a the master of two", func(s cluster.Assignment) bool { return mastered(s, "a") == 2 })
		if sa.Term != sb.Term || len(sa.Masters) != 4 {
			t.Fatalf("a reads %+v, b %+v", sa, sb)
		}
		for _, sm := range sb.Masters {
			if sm.Generation <= sb.Unassigned() {
				t.Errorf("%+v: generation not above the term's first, %d", sm, sb.Unassigned())
			}
		}
		// And it stays so.
		l.clock.run(t, 4, 3*lease)
		if s, _ := a.State(); mastered(s, "a") != 2 || mastered(s, "b") != 2 {
			t.Fatalf("after 3 leases: %+v", s)
		}
	})
	t.Run("NodeGone", func(t *testing.T) {
		// b's database calls fail (b is cut off): b stops mastering its
		// switches before the leader gives them to a, which then masters
		// all.
		l := &fakeLease{clock: newFakeClock()}
		f := newFakeMasters(l)
		a, ea, _ := startNode(t, l, f, "a", all...)
		l.clock.stepUntil(t, 2, within, "a the leader", leads(ea))
		b, _, _ := startNode(t, l, f, "b", all...)
		waitAssignment(t, l, 4, b, "b the master of two", func(s cluster.Assignment) bool { return s.Live && mastered(s, "b") == 2 })
		f.mu.Lock()
		f.failOf = "b"
		f.mu.Unlock()
		_, bDown := waitAssignment(t, l, 4, b, "b no longer live", func(s cluster.Assignment) bool { return !s.Live })
		waitAssignment(t, l, 4, a, "a the master of all", func(s cluster.Assignment) bool { return mastered(s, "a") == 4 })
		f.mu.Lock()
		taken := f.takenAt
		f.mu.Unlock()
		if !bDown.Before(taken) {
			t.Fatalf("the leader gave b's switches to a at %v, before b stopped mastering them at %v", taken, bDown)
		}
		t.Logf("b stopped mastering %v before the leader gave its switches to a", taken.Sub(bDown))
		// b back: it takes two again.
		f.mu.Lock()
		f.failOf = ""
		f.mu.Unlock()
		waitAssignment(t, l, 4, b, "b live and the master of two", func(s cluster.Assignment) bool { return s.Live && mastered(s, "b") == 2 })
	})
	t.Run("LeaderGone", func(t *testing.T) {
		// The leader stops: b takes the lease and at once every switch,
		// with generations of its own term.
		l := &fakeLease{clock: newFakeClock()}
		f := newFakeMasters(l)
		_, ea, stopA := startNode(t, l, f, "a", all...)
		l.clock.stepUntil(t, 2, within, "a the leader", leads(ea))
		b, _, _ := startNode(t, l, f, "b", all...)
		waitAssignment(t, l, 4, b, "b the master of two", func(s cluster.Assignment) bool { return mastered(s, "b") == 2 })
		stopA()
		s, _ := waitAssignment(t, l, 2, b, "b the master of all", func(s cluster.Assignment) bool { return s.Live && mastered(s, "b") == 4 })
		if s.Term != 2 {
			t.Fatalf("%+v: want term 2", s)
		}
		moved := 0
		for _, sm := range s.Masters {
			if sm.Generation > s.Unassigned() {
				moved++
			}
		}
		if moved != 2 {
			t.Fatalf("%+v: want a's two switches given in term 2", s)
		}
	})
	t.Run("NotConnected", func(t *testing.T) {
		// A switch only b is connected to goes to b, however many it has.
		l := &fakeLease{clock: newFakeClock()}
		f := newFakeMasters(l)
		a, ea, _ := startNode(t, l, f, "a", "s1")
		l.clock.stepUntil(t, 2, within, "a the leader", leads(ea))
		startNode(t, l, f, "b", "s1", "s2", "s3")
		s, _ := waitAssignment(t, l, 4, a, "three switches assigned", func(s cluster.Assignment) bool { return len(s.Masters) == 3 })
		if mastered(s, "a") != 1 || mastered(s, "b") != 2 {
			t.Fatalf("%+v: want a master of s1, b of s2 and s3", s)
		}
	})
}
