package api

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sdnlb/sdnlb"
)

// How a stats watch stream samples: it reads the counters every
// statsSample, sends a pool's stats at once when a member's health
// changed, and otherwise at most every statsEvery while its counters move.
const (
	statsSample = 250 * time.Millisecond
	statsEvery  = time.Second
)

// allStats is GET /v1/stats: every pool's counters, or with ?limit= or
// ?after= a page of pools.
type allStats struct {
	Pools []*sdnlb.PoolStats `json:"pools"`
	Next  string             `json:"next,omitempty"` // paged: the after of the next page; "" on the last
}

// handleStats returns the live traffic counters of every pool, or of a
// page of pools, encoded pool by pool; with ?watch=true it streams them
// (see handlePoolStats).
//
//	@Summary	Read every pool's traffic counters, or watch them (Server-Sent Events)
//	@ID			stats
//	@Description	Returns the live traffic counters of every pool the controller serves, in pool id order, sent as they are read so that no request holds every member's counters at once; with limit or after, one page of pools and the next cursor. With ?watch=true it streams them (see handlePoolStats).
//	@Tags		stats
//	@Produce	json,text/event-stream
//	@Param		watch	query		bool	false	"stream: one stats event per pool at once, then on every health change and at most once a second while counters move"
//	@Param		limit	query		int		false	"page size, in pools; without limit and after, every pool"	minimum(1)	maximum(1000)
//	@Param		after	query		string	false	"the next cursor of the previous page"
//	@Success	200		{object}	allStats
//	@Failure	400		{object}	errorResponse	"limit is not 1-1000, or watch is not a boolean"
//	@Failure	503		{object}	errorResponse	"no controller, or too many streams open"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/stats [get]
func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) error {
	if s.StatsService == nil {
		return errNoController
	}
	watching, err := queryBool(r, "watch")
	if err != nil {
		return err
	}
	if watching {
		return s.watchStats(w, r, s.StatsService.AllPoolStats)
	}
	pools, next, paging, err := s.statsPools(r)
	if err != nil {
		return err
	}
	return streamJSON(w, func(out *jsonStream) error {
		out.raw(`{"pools":`)
		if err := writeArray(out, s.statsOfPools(r.Context(), pools), func(ps *sdnlb.PoolStats) error { return writePoolStats(out, ps) }); err != nil {
			return err
		}
		if paging {
			out.raw(`,"next":`)
			if err := out.value(next); err != nil {
				return err
			}
		}
		out.raw("}")
		return nil
	})
}

// statsPools reads the pools GET /v1/stats answers: every pool, a page at
// a time, or with ?limit= or ?after= (paging) one page and the cursor of
// the next.
func (s *Server) statsPools(r *http.Request) (pools iter.Seq2[*sdnlb.Pool, error], next string, paging bool, err error) {
	find := func(ctx context.Context, page sdnlb.Page) ([]*sdnlb.Pool, error) {
		return s.PoolService.FindPools(ctx, sdnlb.PoolFilter{Page: page})
	}
	q := r.URL.Query()
	if !q.Has("limit") && !q.Has("after") {
		return paged(r.Context(), poolID, find), "", false, nil
	}
	page, next, err := listPage(r, s.pools(), find)
	return all(page), next, true, err
}

func poolID(p *sdnlb.Pool) *string { return &p.ID }

// statsOfPools reads the stats of each pool. A pool the controller does not
// serve (just created, or deleted since it was listed) is left out.
func (s *Server) statsOfPools(ctx context.Context, pools iter.Seq2[*sdnlb.Pool, error]) iter.Seq2[*sdnlb.PoolStats, error] {
	return func(yield func(*sdnlb.PoolStats, error) bool) {
		for p, err := range pools {
			if err != nil {
				yield(nil, err)
				return
			}
			ps, err := s.StatsService.PoolStats(ctx, p.ID)
			if sdnlb.ErrorCode(err) == sdnlb.ENOTFOUND {
				continue
			}
			if !yield(ps, err) || err != nil {
				return
			}
		}
	}
}

// poolStatsHead is a pool's stats without its members, which
// writePoolStats writes after it one by one.
type poolStatsHead struct {
	*sdnlb.PoolStats
	Members hidden `json:"members,omitzero"`
}

// writePoolStats writes a pool's stats as GET /v1/pools/{id}/stats
// answers them, members last, each encoded alone: a pool may have
// hundreds of thousands.
func writePoolStats(out *jsonStream, ps *sdnlb.PoolStats) error {
	head, err := json.Marshal(poolStatsHead{PoolStats: ps})
	if err != nil {
		return err
	}
	out.write(head[:len(head)-1]) // open: the members follow
	out.raw(`,"members":`)
	if err := writeArray(out, all(ps.Members), func(m sdnlb.MemberStats) error { return out.value(m) }); err != nil {
		return err
	}
	out.raw("}")
	return nil
}

// watchStats streams what read returns as Server-Sent Events, one `stats`
// event per pool whose data is the pool's stats as the plain GET gives
// them: every pool at once, then a pool again as soon as one of its
// members changes health, and at most every statsEvery while its counters
// move. Event ids are unix milliseconds. A client that reconnects with
// Last-Event-ID gets every pool at once again, with each member's status
// and status_since: a transition it missed shows as a status_since after
// its last event.
func (s *Server) watchStats(w http.ResponseWriter, r *http.Request, read func(context.Context) ([]*sdnlb.PoolStats, error)) error {
	first, err := read(r.Context())
	if err != nil {
		return err // before the stream starts: a plain error answer
	}
	rc, done, err := s.openStream(w, r)
	if err != nil {
		return err
	}
	defer done()
	var changes <-chan sdnlb.Event // health transitions arrive as member updates
	if s.EventService != nil {
		events, unsubscribe := s.EventService.Subscribe()
		defer unsubscribe()
		changes = events
	}
	if err := startStream(w, rc); err != nil {
		return nil
	}

	sent := map[string]sentStats{}
	send := func(stats []*sdnlb.PoolStats) error {
		now := time.Now()
		for _, ps := range stats {
			last, seen := sent[ps.PoolID]
			health, counters := healthOf(ps), countersOf(ps)
			if seen && health == last.health && (counters == last.counters || now.Sub(last.at) < statsEvery) {
				continue
			}
			data, err := json.Marshal(ps)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: stats\ndata: %s\n\n", now.UnixMilli(), data); err != nil {
				return err
			}
			sent[ps.PoolID] = sentStats{health: health, counters: counters, at: now}
		}
		return rc.Flush()
	}
	if send(first) != nil {
		return nil
	}

	sample := time.NewTicker(statsSample)
	defer sample.Stop()
	heartbeat := time.NewTicker(s.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-s.closing:
			return nil
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return nil
			}
			continue
		case _, ok := <-changes:
			if !ok {
				changes = nil
			}
			// The controller rebuilds its view after the store's change:
			// sample now and again at the next tick.
		case <-sample.C:
		}
		stats, err := read(r.Context())
		if err != nil {
			writeStreamError(w, err)
			return nil
		}
		if send(stats) != nil {
			return nil
		}
	}
}

// sentStats is what a stream last sent of one pool.
type sentStats struct {
	health   string
	counters [6]uint64
	at       time.Time
}

// healthOf sums up a pool's members' statuses, in order.
func healthOf(ps *sdnlb.PoolStats) string {
	var b []byte
	for _, m := range ps.Members {
		b = append(b, m.MemberID...)
		b = append(b, '=')
		b = append(b, m.Status...)
		b = strconv.AppendInt(append(b, '@'), m.StatusSince.UnixNano(), 10)
		b = append(b, ';')
	}
	return string(b)
}

func countersOf(ps *sdnlb.PoolStats) [6]uint64 {
	return [6]uint64{ps.ActiveConnections, ps.TotalConnections, ps.PacketsIn, ps.PacketsOut, ps.BytesIn, ps.BytesOut}
}

// writeStreamError ends a stream with an `error` event carrying the JSON
// error an API answer would (a pool deleted while watched: not_found).
func writeStreamError(w http.ResponseWriter, err error) {
	code := sdnlb.ErrorCode(err)
	if _, known := statusByCode[code]; !known {
		code = sdnlb.EINTERNAL
	}
	data, _ := json.Marshal(errorResponse{Error: errorBody{Code: code, Message: sdnlb.ErrorMessage(err)}})
	fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
}

// poolStatsReader reads the one pool the path names.
func (s *Server) poolStatsReader(r *http.Request) func(context.Context) ([]*sdnlb.PoolStats, error) {
	id := chi.URLParam(r, "id")
	return func(ctx context.Context) ([]*sdnlb.PoolStats, error) {
		ps, err := s.StatsService.PoolStats(ctx, id)
		if err != nil {
			return nil, err
		}
		return []*sdnlb.PoolStats{ps}, nil
	}
}
