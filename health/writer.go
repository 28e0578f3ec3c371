package health

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb"
)

// writeRetryDelay is how long the writer waits after the store failed.
const writeRetryDelay = time.Second

// healthWriter writes transitions to the store off the scheduler's
// goroutine: a store write may take milliseconds, and 10,000 members going
// down together must not stall probing. Members are written in the order
// they changed; a member that changes again before its write only gets its
// latest health written.
type healthWriter struct {
	svc   sdnlb.MemberHealthService
	clock clock
	log   *slog.Logger
	kick  chan<- struct{} // tells the scheduler that the writer went quiet

	wake chan struct{}

	mu      sync.Mutex
	pending map[string]sdnlb.MemberHealth
	queue   []string // ids in change order; ids no longer pending are skipped
	writing bool
	retryAt time.Time        // while backing off after a failed write
	retryC  <-chan time.Time // fires at retryAt
}

func newHealthWriter(svc sdnlb.MemberHealthService, c clock, log *slog.Logger, kick chan<- struct{}) *healthWriter {
	return &healthWriter{
		svc: svc, clock: c, log: log, kick: kick,
		wake:    make(chan struct{}, 1),
		pending: make(map[string]sdnlb.MemberHealth),
	}
}

// reset drops what is pending, before a new run; no write is in flight.
func (w *healthWriter) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = make(map[string]sdnlb.MemberHealth)
	w.queue = nil
	w.writing = false
	w.retryAt, w.retryC = time.Time{}, nil
}

// put queues h as the member's health to write.
func (w *healthWriter) put(id string, h sdnlb.MemberHealth) {
	w.mu.Lock()
	if _, queued := w.pending[id]; !queued {
		w.queue = append(w.queue, id)
	}
	w.pending[id] = h
	w.mu.Unlock()
	notify(w.wake)
}

// drop forgets a deleted member's pending write.
func (w *healthWriter) drop(id string) {
	w.mu.Lock()
	delete(w.pending, id)
	w.mu.Unlock()
}

// quiet reports whether the writer has nothing to do at now.
func (w *healthWriter) quiet(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !w.writing && (len(w.pending) == 0 || w.retryAt.After(now))
}

// take removes the oldest pending write; ok is false when there is none.
func (w *healthWriter) take() (id string, h sdnlb.MemberHealth, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.queue) > 0 {
		id, w.queue = w.queue[0], w.queue[1:]
		if h, ok = w.pending[id]; ok {
			delete(w.pending, id)
			w.writing = true
			return id, h, true
		}
	}
	w.queue = nil
	return "", sdnlb.MemberHealth{}, false
}

// finish ends a write; a failed one is queued again unless the member
// changed meanwhile, and the writer backs off for writeRetryDelay.
func (w *healthWriter) finish(id string, h sdnlb.MemberHealth, failed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing = false
	if !failed {
		return
	}
	// Under the lock with retryAt, so whoever sees retryAt (quiet) knows
	// the timer that ends it is already running.
	w.retryAt = w.clock.now().Add(writeRetryDelay)
	w.retryC = w.clock.after(writeRetryDelay)
	if _, newer := w.pending[id]; !newer {
		w.pending[id] = h
		w.queue = append([]string{id}, w.queue...)
	}
}

// run writes until ctx ends.
func (w *healthWriter) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		}
		for {
			id, h, ok := w.take()
			if !ok {
				break
			}
			err := w.svc.SetMemberHealth(ctx, id, h)
			if ctx.Err() != nil {
				return
			}
			// ENOTFOUND: the member was deleted after it changed.
			failed := err != nil && sdnlb.ErrorCode(err) != sdnlb.ENOTFOUND
			w.finish(id, h, failed)
			if !failed {
				continue
			}
			w.log.Warn("store refused a health transition; retrying", "member", id, "status", h.Status, "err", err)
			notify(w.kick)
			w.mu.Lock()
			retry := w.retryC
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-retry:
			}
			w.mu.Lock()
			w.retryAt, w.retryC = time.Time{}, nil
			w.mu.Unlock()
		}
		notify(w.kick)
	}
}

// notify wakes the reader of a one-slot channel without blocking.
func notify(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
