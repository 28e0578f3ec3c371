package lbstore

import (
	"context"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb"
)

// EventService is the change feed: every committed write is published to
// every subscriber as one event per object it created, updated or deleted.
type EventService struct {
	db *DB
}

var _ sdnlb.EventService = (*EventService)(nil)

// NewEventService returns the change feed of db.
func NewEventService(db *DB) *EventService { return &EventService{db: db} }

// Subscribe returns the events committed after the call and a func that
// ends the subscription and closes the channel. A subscriber whose buffer is
// full loses events and, as soon as it has room again, is sent exactly one
// event with Op OpResync (Kind "", Seq of the first event it lost): it must
// then reload everything with LoadConfig. The writer never waits for a
// subscriber. Closing the DB ends every subscription.
func (s *EventService) Subscribe() (<-chan sdnlb.Event, func()) {
	buffer := s.db.EventBuffer
	if buffer <= 0 {
		buffer = DefaultEventBuffer
	}
	return s.db.events.subscribe(buffer)
}

// feed is how write transactions reach the change feed: localFeed keeps
// it in the process (SQLite), pgFeed passes it through the database
// (PostgreSQL), so that every process sharing the database sees every
// write.
type feed interface {
	// start begins following the database; stop ends it.
	start(ctx context.Context) error
	stop()
	// begin runs first in every write transaction, record last before its
	// commit and committed after it.
	begin(ctx context.Context, tx *Tx) error
	record(ctx context.Context, tx *Tx) error
	committed(tx *Tx)
	// snapshot starts a read transaction and returns the Seq of the last
	// event it holds.
	snapshot(ctx context.Context) (*Tx, uint64, error)
}

type eventHub struct {
	mu     sync.Mutex
	seq    uint64
	subs   map[*subscriber]struct{}
	closed bool
}

func newEventHub() *eventHub {
	return &eventHub{subs: make(map[*subscriber]struct{})}
}

type subscriber struct {
	ch chan sdnlb.Event

	mu      sync.Mutex
	lost    bool          // events were dropped; a resync is on its way
	stop    chan struct{} // closed when the subscription ends
	resyncs sync.WaitGroup
	ended   sync.Once
}

// publish numbers events and offers them to every subscriber without
// blocking.
func (h *eventHub) publish(events []sdnlb.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range events {
		h.seq++
		events[i].Seq = h.seq
		h.offer(events[i])
	}
}

// deliver offers events the database numbered, which come in Seq order.
func (h *eventHub) deliver(events []sdnlb.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range events {
		h.seq = e.Seq
		h.offer(e)
	}
}

// startAt sets the Seq the feed continues from.
func (h *eventHub) startAt(seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq = seq
}

func (h *eventHub) offer(e sdnlb.Event) {
	for s := range h.subs {
		s.offer(e)
	}
}

// lastSeq is the Seq of the last published event.
func (h *eventHub) lastSeq() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// subscribe adds a subscriber; after close it returns a closed channel.
func (h *eventHub) subscribe(buffer int) (<-chan sdnlb.Event, func()) {
	s := &subscriber{ch: make(chan sdnlb.Event, buffer), stop: make(chan struct{})}
	h.mu.Lock()
	closed := h.closed
	if !closed {
		h.subs[s] = struct{}{}
	}
	h.mu.Unlock()
	if closed {
		s.end()
	}
	return s.ch, func() { h.unsubscribe(s) }
}

func (h *eventHub) unsubscribe(s *subscriber) {
	// Once out of the set, publish no longer sends to s; the resync
	// goroutine is the only sender left, and end stops it first.
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
	s.end()
}

// close ends every subscription: the feed is over when the DB closes.
func (h *eventHub) close() {
	h.mu.Lock()
	subs := h.subs
	h.subs = make(map[*subscriber]struct{})
	h.closed = true
	h.mu.Unlock()
	for s := range subs {
		s.end()
	}
}

// end stops a pending resync and closes the channel, once.
func (s *subscriber) end() {
	s.ended.Do(func() {
		close(s.stop)
		s.resyncs.Wait()
		close(s.ch)
	})
}

// offer sends e if there is room. When there is not, the subscriber drops
// events until a goroutine has delivered one resync in their place.
func (s *subscriber) offer(e sdnlb.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost {
		return
	}
	select {
	case s.ch <- e:
		return
	default:
	}
	s.lost = true
	resync := sdnlb.Event{Seq: e.Seq, Op: sdnlb.OpResync, At: e.At}
	s.resyncs.Add(1)
	go s.deliverResync(resync)
}

// resyncPoll is how often a lagging subscriber is checked for room.
const resyncPoll = 5 * time.Millisecond

// deliverResync waits for room and sends the resync under s.mu, so the send
// and the end of dropping are one step: an event is either dropped before
// the resync (and covered by the reload it triggers) or queued after it.
// Waiting for room on a channel without sending needs polling.
func (s *subscriber) deliverResync(resync sdnlb.Event) {
	defer s.resyncs.Done()
	tick := time.NewTicker(resyncPoll)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		select {
		case s.ch <- resync:
			s.lost = false
			s.mu.Unlock()
			return
		default:
			s.mu.Unlock()
		}
	}
}
