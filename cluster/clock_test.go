package cluster_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/cluster"
)

// fakeClock is a cluster.Clock whose time moves only when the test steps
// it, one timer at a time: a step moves the time to the timer due first
// (the one armed first of those due together) and fires it, running an
// AfterFunc's function in the step itself and sending a NewTimer's time on
// its channel.
//
// The code under test runs loops (an elector's, a Masters') that each
// wait on a timer of their own between rounds. Before each step the test
// waits until all of them wait again (settle), so that what one step set
// off has run before the next; a call the test makes hang (block) counts
// as waiting. A Masters also wakes when its elector has tried the lease or
// changed state, which settle cannot see until the Masters stops its
// timer: such a round may run a step late, so the Masters tests assert
// what holds in any order.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     uint64 // arming order
	armed   []*fakeTimer
	blocked int           // calls hung in block
	changed chan struct{} // closed at the next change of armed or blocked
}

var _ cluster.Clock = (*fakeClock)(nil)

// patience bounds, in real time, how long settle waits for the loops: it
// fails a test whose code never gets back to its timers, rather than hang.
const patience = 10 * time.Second

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), changed: make(chan struct{})}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) cluster.Timer {
	t := &fakeTimer{clock: c, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

func (c *fakeClock) AfterFunc(d time.Duration, f func()) cluster.Timer {
	t := &fakeTimer{clock: c, f: f}
	t.Reset(d)
	return t
}

// notify wakes those waiting in settle; c.mu is held.
func (c *fakeClock) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// waiting is how many loops wait: the NewTimer timers armed and the calls
// hung in block.
func (c *fakeClock) waiting() (int, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.blocked
	for _, t := range c.armed {
		if t.c != nil {
			n++
		}
	}
	return n, c.changed
}

// block hangs the calling loop until release is closed.
func (c *fakeClock) block(release <-chan struct{}) {
	c.mu.Lock()
	c.blocked++
	c.notify()
	c.mu.Unlock()
	<-release
	c.mu.Lock()
	c.blocked--
	c.notify()
	c.mu.Unlock()
}

// settle waits until loops loops wait.
func (c *fakeClock) settle(tb testing.TB, loops int) {
	tb.Helper()
	timeout := time.After(patience)
	for {
		n, changed := c.waiting()
		if n == loops {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			tb.Fatalf("%d loops wait on the clock after %v, want %d", n, patience, loops)
		}
	}
}

// step fires the timer due first if it is due by limit, and moves the time
// to it; otherwise it moves the time to limit and reports false.
func (c *fakeClock) step(limit time.Time) bool {
	c.mu.Lock()
	var first *fakeTimer
	for _, t := range c.armed {
		if first == nil || t.at.Before(first.at) || (t.at.Equal(first.at) && t.seq < first.seq) {
			first = t
		}
	}
	if first == nil || first.at.After(limit) {
		if limit.After(c.now) {
			c.now = limit
		}
		c.mu.Unlock()
		return false
	}
	if first.at.After(c.now) {
		c.now = first.at
	}
	first.disarm()
	if first.c != nil {
		first.c <- c.now // room: disarm and Reset drain it
	}
	c.notify()
	c.mu.Unlock()
	if first.f != nil {
		first.f()
	}
	return true
}

// maxSteps fails a test whose code keeps arming timers due at once.
const maxSteps = 100_000

// stepUntil steps, letting the loops settle before each step and checking
// cond after, until cond holds; it fails the test if that takes longer
// than within. It returns the time at which cond held.
func (c *fakeClock) stepUntil(tb testing.TB, loops int, within time.Duration, what string, cond func() bool) time.Time {
	tb.Helper()
	end := c.Now().Add(within)
	for range maxSteps {
		c.settle(tb, loops)
		if cond() {
			return c.Now()
		}
		if !c.step(end) {
			tb.Fatalf("not %s after %v", what, within)
		}
	}
	tb.Fatalf("not %s after %d steps", what, maxSteps)
	return time.Time{}
}

// run steps through d, letting the loops settle before each step and at
// the end.
func (c *fakeClock) run(tb testing.TB, loops int, d time.Duration) {
	tb.Helper()
	end := c.Now().Add(d)
	for range maxSteps {
		c.settle(tb, loops)
		if !c.step(end) {
			return
		}
	}
	tb.Fatalf("still running after %d steps", maxSteps)
}

type fakeTimer struct {
	clock *fakeClock
	f     func()         // AfterFunc's
	c     chan time.Time // NewTimer's
	at    time.Time      // while armed
	seq   uint64
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Reset(d time.Duration) bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.disarm()
	c.seq++
	t.at, t.seq = c.now.Add(d), c.seq
	c.armed = append(c.armed, t)
	c.notify()
	return was
}

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	was := t.disarm()
	c.notify()
	return was
}

// disarm takes t off the clock and drains its channel, as the time package
// does for Stop and Reset; it reports whether t was armed. t.clock.mu is
// held.
func (t *fakeTimer) disarm() bool {
	if t.c != nil {
		select {
		case <-t.c:
		default:
		}
	}
	c := t.clock
	for i, a := range c.armed {
		if a == t {
			c.armed = append(c.armed[:i], c.armed[i+1:]...)
			return true
		}
	}
	return false
}
