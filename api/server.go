// Package api serves the REST API of sdnlb: the native JSON routes under /v1,
// the Floodlight-compatible routes under /quantum/v1.0, health and readiness
// probes, Prometheus metrics, the change feed as Server-Sent Events and the
// Swagger UI. Handlers only talk to the sdnlb service interfaces; cmd/sdnlb
// wires the store and the controller in.
package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/web"
)

// Server holds the services the handlers use. Set the fields, then call
// Handler once; the fields must not change afterwards.
type Server struct {
	VIPService     sdnlb.VIPService
	PoolService    sdnlb.PoolService
	MemberService  sdnlb.MemberService
	MonitorService sdnlb.MonitorService
	ConfigService  sdnlb.ConfigService
	EventService   sdnlb.EventService

	// ConfigApplyService serves PUT /v1/config; nil answers 503.
	ConfigApplyService sdnlb.ConfigApplyService

	// From the controller; nil answers 503 on the routes that need them.
	StatsService    sdnlb.StatsService
	SwitchService   sdnlb.SwitchService
	TopologyService sdnlb.TopologyService
	// HostService, from the controller, tells which hosts the switches
	// learned, whose addresses a VIP may not take; nil checks VIP
	// addresses against the store only.
	HostService sdnlb.HostService

	// HealthReporter overlays the live health onto members; may be nil.
	HealthReporter sdnlb.HealthReporter

	// BGPService shows what the node announces over BGP; nil: the node
	// speaks no BGP.
	BGPService sdnlb.BGPService

	// ClusterService shows the cluster; nil answers 503. NodeID is this
	// node's id, which GET /v1/cluster names as self.
	ClusterService sdnlb.ClusterService
	NodeID         string

	Logger *slog.Logger // nil discards

	// Token, when set, is the bearer token writes need; reads need it too
	// when AuthReads.
	Token     string
	AuthReads bool

	// AllowedHosts are the host names, besides localhost, that requests may
	// name in Host: "api.example.com", ".example.com" for its subdomains,
	// "*" for any. IP literals always pass.
	AllowedHosts []string
	// CORSOrigins are the origins ("https://ops.example.com", "*" for any)
	// whose pages may call the API; other sites' pages may not write.
	CORSOrigins []string

	// Ready answers /readyz; nil means always ready.
	Ready func(ctx context.Context) error

	// Registry, when set, gets the API's metrics and is served at /metrics.
	Registry Registry

	// MaxConns caps the API connections open at once and
	// MaxConnsPerClient those from one client (Listener), and
	// MaxStreams the /v1/events streams; 0 takes DefaultMaxConns, a
	// quarter of MaxConns and DefaultMaxStreams.
	MaxConns          int
	MaxConnsPerClient int
	MaxStreams        int
	// ClientPrefix4 and ClientPrefix6 are the prefix lengths that name
	// one client under those caps, by its source address; 0 takes
	// DefaultClientPrefix4 and DefaultClientPrefix6.
	ClientPrefix4 int
	ClientPrefix6 int

	// heartbeat is the interval of SSE keep-alive comments; tests shorten it.
	heartbeat time.Duration
	// timeouts are HTTPServer's; zero takes the defaults.
	timeouts timeouts
	// streams holds a token per open event stream; streamsBy counts them
	// by client (streamClient), under streamsMu.
	streams   chan struct{}
	streamsMu sync.Mutex
	streamsBy map[netip.Prefix]int
	// closing ends every open stream (CloseStreams).
	closing   chan struct{}
	closeOnce sync.Once
}

// CloseStreams ends every open event stream, so a graceful shutdown does
// not wait for clients that never leave (a dashboard left open). Give it
// to http.Server.RegisterOnShutdown; HTTPServer does.
func (s *Server) CloseStreams() { s.closeOnce.Do(func() { close(s.closing) }) }

// maxBodyBytes bounds every request body.
const maxBodyBytes = 1 << 20

// defaultHeartbeat keeps idle SSE connections open through proxies.
const defaultHeartbeat = 15 * time.Second

// handlerFunc is the signature of every handler: it writes the response on
// success and returns the error otherwise, which handle turns into the one
// JSON error body.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

func (s *Server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		var cut *answerCutError
		switch {
		case err == nil:
		case errors.As(err, &cut):
			s.cutAnswer(r, cut.err)
		default:
			s.writeError(w, r, err)
		}
	}
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Handler builds the router. Call it once per Server.
func (s *Server) Handler() http.Handler {
	if s.heartbeat == 0 {
		s.heartbeat = defaultHeartbeat
	}
	maxStreams := s.MaxStreams
	if maxStreams <= 0 {
		maxStreams = DefaultMaxStreams
	}
	s.streams = make(chan struct{}, maxStreams)
	s.streamsBy = map[netip.Prefix]int{}
	s.closing = make(chan struct{})
	log := s.logger().With("component", "api")
	r := chi.NewRouter()
	r.Use(collapseSlashes, dropUnsafeRequestID, middleware.RequestID, echoRequestID, requestLog(log))
	if s.Registry != nil {
		// Outside the recoverer, so that panics are counted as 500s.
		r.Use(newMetrics(s.Registry).middleware)
	}
	r.Use(s.recoverer(), s.checkHost, s.limitBody, s.cors)
	r.NotFound(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return sdnlb.Errorf(sdnlb.ENOTFOUND, "no route for %s %s", r.Method, r.URL.Path)
	}))
	router := r
	r.MethodNotAllowed(s.handle(func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Allow", strings.Join(allowedMethods(router, r), ", "))
		return errMethodNotAllowed
	}))

	// The dashboard's files, Swagger UI and the spec are public, so that a
	// browser can load them before it has the token (Swagger UI offers
	// Authorize); the data they read goes through auth.
	r.Get("/", http.RedirectHandler("/dashboard/", http.StatusFound).ServeHTTP)
	r.Handle("/dashboard/*", http.StripPrefix("/dashboard/", web.Handler()))
	r.Route("/swagger", swaggerRoutes)
	r.Get("/healthz", s.handle(s.handleHealthz))
	r.Get("/readyz", s.handle(s.handleReadyz))

	r.Group(func(r chi.Router) {
		r.Use(s.auth, s.guardWrites)
		if s.Registry != nil {
			r.Method(http.MethodGet, "/metrics", s.metricsHandler())
		}
		r.Route("/v1", s.nativeRoutes)
		r.Route(compatPrefix, s.compatRoutes)
	})
	return r
}

func (s *Server) nativeRoutes(r chi.Router) {
	r.Use(conditionalWrites)
	r.Route("/vips", func(r chi.Router) {
		r.Get("/", s.handle(s.handleVIPList))
		r.Post("/", s.handle(takingAddress(s.handleVIPCreate)))
		r.Get("/{id}", s.handle(s.handleVIPGet))
		r.Put("/{id}", s.handle(takingAddress(s.handleVIPReplace)))
		r.Patch("/{id}", s.handle(takingAddress(s.handleVIPPatch)))
		r.Delete("/{id}", s.handle(s.handleVIPDelete))
	})
	r.Route("/pools", func(r chi.Router) {
		r.Get("/", s.handle(s.handlePoolList))
		r.Post("/", s.handle(s.handlePoolCreate))
		r.Get("/{id}", s.handle(s.handlePoolGet))
		r.Put("/{id}", s.handle(s.handlePoolReplace))
		r.Patch("/{id}", s.handle(s.handlePoolPatch))
		r.Delete("/{id}", s.handle(s.handlePoolDelete))
		r.Get("/{id}/members", s.handle(s.handlePoolMembers))
		r.Post("/{id}/monitors", s.handle(s.handlePoolAssociateMonitor))
		r.Delete("/{id}/monitors/{monitor_id}", s.handle(s.handlePoolDissociateMonitor))
		r.Get("/{id}/stats", s.handle(s.handlePoolStats))
	})
	r.Route("/members", func(r chi.Router) {
		r.Get("/", s.handle(s.handleMemberList))
		r.Post("/", s.handle(s.handleMemberCreate))
		r.Get("/{id}", s.handle(s.handleMemberGet))
		r.Put("/{id}", s.handle(s.handleMemberReplace))
		r.Patch("/{id}", s.handle(s.handleMemberPatch))
		r.Delete("/{id}", s.handle(s.handleMemberDelete))
	})
	r.Route("/monitors", func(r chi.Router) {
		r.Get("/", s.handle(s.handleMonitorList))
		r.Post("/", s.handle(s.handleMonitorCreate))
		r.Get("/{id}", s.handle(s.handleMonitorGet))
		r.Put("/{id}", s.handle(s.handleMonitorReplace))
		r.Patch("/{id}", s.handle(s.handleMonitorPatch))
		r.Delete("/{id}", s.handle(s.handleMonitorDelete))
	})
	r.Get("/config", s.handle(s.handleConfigExport))
	r.Put("/config", s.handle(takingAddress(s.handleConfigApply)))
	r.Get("/cluster", s.handle(s.handleCluster))
	r.Get("/bgp", s.handle(s.handleBGP))
	r.Get("/switches", s.handle(s.handleSwitchList))
	r.Get("/switches/{dpid}/flows", s.handle(s.handleSwitchFlows))
	r.Get("/topology", s.handle(s.handleTopology))
	r.Get("/events", s.handle(s.handleEvents))
	r.Get("/stats", s.handle(s.handleStats))
}

// handleHealthz reports that the process serves HTTP.
//
//	@Summary	Liveness probe
//	@ID			healthz
//	@Description	Reports that the process serves HTTP.
//	@Tags		probes
//	@Produce	json
//	@Success	200	{object}	statusResponse
//	@Router		/healthz [get]
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, statusResponse{Status: "ok"})
}

// handleReadyz reports whether the dependencies (the store) answer.
//
//	@Summary	Readiness probe
//	@ID			readyz
//	@Description	Reports whether the dependencies (the store) answer.
//	@Tags		probes
//	@Produce	json
//	@Success	200	{object}	statusResponse
//	@Failure	503	{object}	errorResponse
//	@Router		/readyz [get]
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) error {
	if s.Ready != nil {
		if err := s.Ready(r.Context()); err != nil {
			s.logger().Warn("not ready", "component", "api", "err", err)
			return sdnlb.Errorf(sdnlb.EUNAVAILABLE, "not ready")
		}
	}
	return writeJSON(w, http.StatusOK, statusResponse{Status: "ok"})
}

type statusResponse struct {
	Status string `json:"status" example:"ok"`
}

// collapseSlashes routes "//" as "/", as Floodlight does, which scripts
// that join URLs by hand rely on. Unlike path.Clean it keeps a trailing
// slash, which routes such as /dashboard/ need.
func collapseSlashes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; strings.Contains(p, "//") {
			chi.RouteContext(r.Context()).RoutePath = collapse(p)
		}
		next.ServeHTTP(w, r)
	})
}

// collapse turns every run of slashes in path into one, as collapseSlashes routes it.
func collapse(path string) string {
	for strings.Contains(path, "//") {
		path = strings.ReplaceAll(path, "//", "/")
	}
	return path
}

// allowedMethods lists the methods router serves on r's path, for the
// Allow header of a 405. chi's Match answers yes for any method at a
// mounted subrouter, so the routes are walked instead.
func allowedMethods(router chi.Routes, r *http.Request) []string {
	path := strings.TrimSuffix(collapse(r.URL.Path), "/")
	var allowed []string
	_ = chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if routeMatches(strings.TrimSuffix(route, "/"), path) && !slices.Contains(allowed, method) {
			allowed = append(allowed, method)
		}
		return nil
	})
	slices.Sort(allowed)
	return allowed
}

// routeMatches reports whether a chi route pattern takes path: {param}
// takes one segment, a trailing * the rest.
func routeMatches(route, path string) bool {
	rs, ps := strings.Split(route, "/"), strings.Split(path, "/")
	for i, seg := range rs {
		switch {
		case seg == "*":
			return true
		case i >= len(ps):
			return false
		case strings.HasPrefix(seg, "{"):
			if ps[i] == "" {
				return false
			}
		case seg != ps[i]:
			return false
		}
	}
	return len(rs) == len(ps)
}

// conditionalWrites makes a PUT, PATCH or DELETE with If-Match apply only
// to the version of the object the client read (412 otherwise): the store
// checks the object's ETag inside the write's transaction.
func conditionalWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut, http.MethodPatch, http.MethodDelete:
			if h := r.Header.Get("If-Match"); h != "" {
				r = r.WithContext(sdnlb.WithIfMatch(r.Context(), h))
			}
		}
		next.ServeHTTP(w, r)
	})
}
