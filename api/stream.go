package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/sdnlb/sdnlb"
)

// The answers that grow with the configuration (the export, every pool's
// stats, Floodlight's pool list with its members) are encoded object by
// object as the store reads them, and sent through a buffer, so that no
// request holds a whole configuration in memory.

// streamBuffer is how much of a streamed answer is held before it is
// sent. An answer that fits goes out whole when it ends, so that a failure
// before then is still answered as an error.
const streamBuffer = 64 << 10

// jsonStream is a JSON answer being written. A failed write means the
// client went away: the rest is not encoded.
type jsonStream struct {
	answer *answerWriter
	buf    *bufio.Writer
	enc    *json.Encoder // encodes straight into buf, without a copy per value
	err    error         // the first failed write
}

// answerWriter sends the status and headers with the first bytes of the
// body, so that until then the answer can still become an error.
type answerWriter struct {
	w       http.ResponseWriter
	header  http.Header // added to the answer as it starts
	started bool
}

func (a *answerWriter) Write(p []byte) (int, error) {
	if !a.started {
		a.started = true
		h := a.w.Header()
		for key, values := range a.header {
			h[key] = values
		}
		h.Set("Content-Type", "application/json; charset=utf-8")
		a.w.WriteHeader(http.StatusOK)
	}
	return a.w.Write(p)
}

// streamJSON answers 200 with the JSON write writes into out. When write
// fails before anything was sent, its error is the answer; after, it comes
// back as an answerCutError, on which handle drops the connection, so that
// a client never takes a part of the answer for the whole.
func streamJSON(w http.ResponseWriter, write func(out *jsonStream) error) error {
	answer := &answerWriter{w: w, header: http.Header{}}
	out := &jsonStream{answer: answer, buf: bufio.NewWriterSize(answer, streamBuffer)}
	out.enc = json.NewEncoder(valueWriter{out})
	err := write(out)
	switch {
	case err == nil:
		out.raw("\n")
		_ = out.buf.Flush() // a failure: the client is gone, nobody to tell
		return nil
	case answer.started:
		return &answerCutError{err}
	}
	return err
}

// answerCutError is a failure after the answer started.
type answerCutError struct{ err error }

func (e *answerCutError) Error() string { return "the answer was cut short: " + e.err.Error() }
func (e *answerCutError) Unwrap() error { return e.err }

// cutAnswer drops the connection of an answer that failed after it
// started, which the client sees as a broken answer, and logs why.
func (s *Server) cutAnswer(r *http.Request, err error) {
	if r.Context().Err() == nil { // else the client left first
		s.logger().Error("answer cut short", "component", "api", "method", r.Method, "path", r.URL.Path,
			"request_id", middleware.GetReqID(r.Context()), "err", err)
	}
	panic(http.ErrAbortHandler)
}

// header sets a header of the answer.
func (out *jsonStream) header(key, value string) { out.answer.header.Set(key, value) }

// raw writes JSON text as it is.
func (out *jsonStream) raw(text string) {
	if out.err == nil {
		_, out.err = out.buf.WriteString(text)
	}
}

// write writes encoded JSON.
func (out *jsonStream) write(data []byte) {
	if out.err == nil {
		_, out.err = out.buf.Write(data)
	}
}

// value writes v as json.Marshal encodes it.
func (out *jsonStream) value(v any) error {
	return out.enc.Encode(v)
}

// valueWriter takes what a json.Encoder writes, one whole value per Write
// and a newline after it, into the stream without the newline.
type valueWriter struct{ out *jsonStream }

func (vw valueWriter) Write(p []byte) (int, error) {
	vw.out.write(bytes.TrimSuffix(p, []byte("\n")))
	return len(p), nil
}

// gone reports whether the client went away.
func (out *jsonStream) gone() bool { return out.err != nil }

// writeArray writes the items of seq as a JSON array, each with
// writeItem. It returns seq's error, and stops early when the client is
// gone.
func writeArray[T any](out *jsonStream, seq iter.Seq2[T, error], writeItem func(T) error) error {
	out.raw("[")
	first := true
	for item, err := range seq {
		if err != nil {
			return err
		}
		if out.gone() {
			return nil
		}
		if !first {
			out.raw(",")
		}
		first = false
		if err := writeItem(item); err != nil {
			return err
		}
	}
	out.raw("]")
	return nil
}

// all ranges over items as a sequence that does not fail.
func all[T any](items []T) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for _, item := range items {
			if !yield(item, nil) {
				return
			}
		}
	}
}

// paged ranges over everything find selects, in id order, reading a page
// of sdnlb.MaxPageLimit at a time: no more than a page is held. Pages are
// separate reads, not one snapshot.
func paged[T any](ctx context.Context, id func(*T) *string, find func(context.Context, sdnlb.Page) ([]*T, error)) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		page := sdnlb.Page{Limit: sdnlb.MaxPageLimit}
		for {
			items, err := find(ctx, page)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, item := range items {
				if !yield(item, nil) {
					return
				}
			}
			if len(items) < page.Limit {
				return
			}
			page.After = *id(items[len(items)-1])
		}
	}
}
