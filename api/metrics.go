package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newMetrics registers the request metrics on reg, reusing collectors that a
// previous Handler call already registered there.
func newMetrics(reg *prometheus.Registry) *metrics {
	return &metrics{
		requests: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sdnlb_http_requests_total",
			Help: "HTTP requests answered, by method, route pattern and status code.",
		}, []string{"method", "route", "code"})),
		duration: register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sdnlb_http_request_duration_seconds",
			Help:    "Time to answer HTTP requests, by method and route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"})),
	}
}

func register[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		// Another collector with the same name and different labels is a
		// wiring bug in cmd/sdnlb, found at the first start.
		panic(err)
	}
	return c
}

func (m *metrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := routePattern(r)
		m.requests.WithLabelValues(r.Method, route, strconv.Itoa(statusOf(ww))).Inc()
		m.duration.WithLabelValues(r.Method, route).Observe(time.Since(start).Seconds())
	})
}

func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.Registry, promhttp.HandlerOpts{Registry: s.Registry})
}
