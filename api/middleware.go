package api

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/sdnlb/sdnlb"
)

// dropUnsafeRequestID discards a client's X-Request-Id that is too long or
// not plain printable ASCII, so that RequestID makes one instead of echoing
// and logging arbitrary bytes.
func dropUnsafeRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(middleware.RequestIDHeader); id != "" && !safeRequestID(id) {
			r.Header.Del(middleware.RequestIDHeader)
		}
		next.ServeHTTP(w, r)
	})
}

func safeRequestID(id string) bool {
	if len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// echoRequestID hands the request id back so a client can quote it.
func echoRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(middleware.RequestIDHeader, middleware.GetReqID(r.Context()))
		next.ServeHTTP(w, r)
	})
}

// requestLog logs one line per request once it is answered.
func requestLog(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			log.Info("request",
				"method", r.Method,
				"path", r.URL.Path,
				"route", routePattern(r),
				"status", statusOf(ww),
				"duration", time.Since(start),
				"request_id", middleware.GetReqID(r.Context()))
		})
	}
}

// statusOf is 200 for handlers that wrote a body without WriteHeader.
func statusOf(ww middleware.WrapResponseWriter) int {
	if ww.Status() == 0 {
		return http.StatusOK
	}
	return ww.Status()
}

// routePattern is the matched chi pattern, which keeps ids out of metric
// labels; "unmatched" for paths no route takes.
func routePattern(r *http.Request) string {
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		if p := rctx.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}

// recoverer turns a panic in a handler into a logged 500, so one bad request
// cannot take the process down.
func (s *Server) recoverer() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				rec := recover()
				if rec == nil {
					return
				}
				if rec == http.ErrAbortHandler {
					panic(rec)
				}
				// writeError logs it, with the stack, as any internal error.
				s.writeError(w, r, fmt.Errorf("panic: %v\n%s", rec, debug.Stack()))
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// auth requires the bearer token on writes, and on reads when AuthReads.
func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isRead(r.Method) && !s.AuthReads {
			next.ServeHTTP(w, r)
			return
		}
		s.requireToken(next).ServeHTTP(w, r)
	})
}

// requireToken checks the bearer token whatever the method: Floodlight has
// GET routes that write, which must not slip through as reads.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Token != "" {
			if err := s.checkToken(r.Header.Get("Authorization")); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// checkToken checks an Authorization header against the token. A header
// without the Bearer scheme is told what to send, as a bare token pasted
// into Swagger UI's Authorize dialog arrives without it; the answer never
// repeats what was sent.
func (s *Server) checkToken(header string) error {
	// The scheme is case-insensitive (RFC 9110, section 11.1).
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	switch {
	case header == "":
		return sdnlb.Errorf(sdnlb.EUNAUTHORIZED, "a bearer token is required: send the header Authorization: Bearer <token>")
	case !ok || !strings.EqualFold(scheme, "Bearer"):
		return sdnlb.Errorf(sdnlb.EUNAUTHORIZED, `the Authorization header lacks the Bearer scheme: send "Bearer <token>" (in Swagger UI's Authorize dialog, type Bearer, a space, then the token)`)
	case subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(s.Token)) != 1:
		return sdnlb.Errorf(sdnlb.EUNAUTHORIZED, "the bearer token is wrong")
	}
	return nil
}

func isRead(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}
