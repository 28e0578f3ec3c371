package api

import (
	"bufio"
	"encoding/json"
	"iter"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
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
	err    error // the first failed write
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
// fails before anything was sent, its error is the answer; after, the
// answer is cut short (the connection is dropped), so that a client never
// takes a part for the whole, and the error is logged.
func (s *Server) streamJSON(w http.ResponseWriter, r *http.Request, write func(out *jsonStream) error) error {
	answer := &answerWriter{w: w, header: http.Header{}}
	out := &jsonStream{answer: answer, buf: bufio.NewWriterSize(answer, streamBuffer)}
	err := write(out)
	if err == nil {
		out.raw("\n")
		_ = out.buf.Flush() // a failure: the client is gone, nobody to tell
		return nil
	}
	if !answer.started {
		return err
	}
	if r.Context().Err() == nil {
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

// value writes v as encoding/json does.
func (out *jsonStream) value(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if out.err == nil {
		_, out.err = out.buf.Write(data)
	}
	return nil
}

// gone reports whether the client went away.
func (out *jsonStream) gone() bool { return out.err != nil }

// writeArray writes the objects of seq as a JSON array, each as show
// makes it. It returns seq's error, and stops early when the client is
// gone.
func writeArray[T any](out *jsonStream, seq iter.Seq2[T, error], show func(T) any) error {
	out.raw("[")
	first := true
	for obj, err := range seq {
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
		if err := out.value(show(obj)); err != nil {
			return err
		}
	}
	out.raw("]")
	return nil
}
