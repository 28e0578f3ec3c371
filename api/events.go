package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/sdnlb/sdnlb"
)

// handleEvents streams the store's change feed as Server-Sent Events until
// the client goes away. Each event is `event: <kind>` (`resync` when the
// subscriber fell behind and must reload) and `data: <Event JSON>`.
//
//	@Summary	Stream configuration changes (Server-Sent Events)
//	@ID			events
//	@Description	Streams the store's change feed as Server-Sent Events until the client goes away. Each event is `event: <kind>` (`resync` when the subscriber fell behind and must reload) and `data: <Event JSON>`.
//	@Tags		events
//	@Produce	text/event-stream,json
//	@Success	200	{object}	sdnlb.Event	"text/event-stream: one event per data: line; errors are JSON"
//	@Failure	503	{object}	errorResponse	"no change feed, or too many streams open"
//	@Failure	401	{object}	errorResponse	"the bearer token is missing or wrong (with --auth-reads)"
//	@Security	Bearer
//	@Router		/v1/events [get]
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) error {
	if s.EventService == nil {
		return sdnlb.Errorf(sdnlb.EUNAVAILABLE, "no change feed")
	}
	rc, done, err := s.openStream(w, r)
	if err != nil {
		return err
	}
	defer done()
	events, unsubscribe := s.EventService.Subscribe()
	defer unsubscribe()
	if err := startStream(w, rc); err != nil {
		return nil // the writer cannot stream: nothing more to say
	}

	heartbeat := time.NewTicker(s.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return nil
		case <-s.closing:
			return nil
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil {
				return nil
			}
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if err := writeEvent(w, ev); err != nil {
				return nil
			}
		}
		if err := rc.Flush(); err != nil {
			return nil
		}
	}
}

// openStream takes one of the event streams the API serves at once, and
// one of its client's, and lifts the connection's cap and deadlines for
// it; done gives them back.
func (s *Server) openStream(w http.ResponseWriter, r *http.Request) (rc *http.ResponseController, done func(), err error) {
	client := s.clientPrefixes().of(r.RemoteAddr)
	perClient := max(cap(s.streams)/streamsPerClientShare, 1)
	s.streamsMu.Lock()
	if s.streamsBy[client] >= perClient {
		s.streamsMu.Unlock()
		return nil, nil, sdnlb.Errorf(sdnlb.EUNAVAILABLE, "%d event streams are open from %s, the most one client gets", perClient, client)
	}
	s.streamsBy[client]++
	s.streamsMu.Unlock()
	release := func() {
		s.streamsMu.Lock()
		if s.streamsBy[client]--; s.streamsBy[client] == 0 {
			delete(s.streamsBy, client)
		}
		s.streamsMu.Unlock()
	}
	select {
	case s.streams <- struct{}{}:
	default:
		release()
		return nil, nil, sdnlb.Errorf(sdnlb.EUNAVAILABLE, "%d event streams are open, the most this API serves", cap(s.streams))
	}
	// A stream runs under its own cap, not the connections' one, and its
	// connection closes with it so it cannot serve requests outside both.
	releaseConn(r)
	w.Header().Set("Connection", "close")
	rc = http.NewResponseController(w)
	// The server's read and write timeouts would cut the stream (its read
	// deadline cancels the request once it passes); an error only means
	// the server has none to lift.
	_ = rc.SetWriteDeadline(time.Time{})
	_ = rc.SetReadDeadline(time.Time{})
	return rc, func() { <-s.streams; release() }, nil
}

// streamsPerClientShare: one client may hold this part of the streams.
const streamsPerClientShare = 8

// startStream sends the headers of a Server-Sent Events stream.
func startStream(w http.ResponseWriter, rc *http.ResponseController) error {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx would hold the stream back
	w.WriteHeader(http.StatusOK)
	return rc.Flush()
}

func writeEvent(w http.ResponseWriter, ev sdnlb.Event) error {
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	name := string(ev.Kind)
	if ev.Op == sdnlb.OpResync || name == "" {
		name = string(ev.Op)
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, name, data)
	return err
}
