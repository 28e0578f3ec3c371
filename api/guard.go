package api

import (
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/sdnlb/sdnlb"
)

// The checks that keep browsers and names the API does not trust away from
// it. docs/SECURITY.md says what each one stops.

// checkHost refuses a request whose Host is a name the API does not know,
// so that a page whose DNS name is rebound to the API's address cannot
// reach it. IP literals and localhost always pass: no DNS answer stands
// behind them.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allowedHost(r.Host) {
			s.writeError(w, r, sdnlb.Errorf(sdnlb.EFORBIDDEN,
				"Host %q is not an address or a name this API answers to (--api-allowed-hosts)", r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) allowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" {
		return true
	}
	for _, allowed := range s.AllowedHosts {
		allowed = strings.ToLower(allowed)
		if allowed == "*" || allowed == host || (strings.HasPrefix(allowed, ".") && strings.HasSuffix(host, allowed)) {
			return true
		}
	}
	return false
}

// guardWrites protects the requests that change state from other sites'
// pages: a body, if any, must be JSON (a form or a simple cross-site fetch
// can only send text/plain, form-urlencoded or multipart), and a browser
// must say that the request comes from this origin or from one that
// --cors-origin allows.
func (s *Server) guardWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isRead(r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		if err := s.checkOrigin(r); err != nil {
			s.writeError(w, r, err)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONMedia(ct, r.Method) && !isYAMLMedia(ct) && !curlForm(r) {
			s.writeError(w, r, checkContentType(r))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// curlForm reports whether r is a Floodlight route's write that `curl -d`
// sent: a JSON body labelled form-urlencoded, curl's default, as
// Floodlight's own load_balancer.py sends every write. A browser says
// where a request comes from (Sec-Fetch-Site, Origin); a request that says
// nothing is not a page's form, so its body is read as the JSON it is.
func curlForm(r *http.Request) bool {
	media, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && media == "application/x-www-form-urlencoded" &&
		strings.HasPrefix(r.URL.Path, compatPrefix+"/") &&
		r.Header.Get("Sec-Fetch-Site") == "" && r.Header.Get("Origin") == ""
}

// checkOrigin refuses a request a browser marks as cross-origin, by its
// Sec-Fetch-Site or its Origin, unless the Origin is one of CORSOrigins.
// Clients that are not browsers send neither header and pass.
func (s *Server) checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin != "" && s.corsAllowed(origin) {
		return nil
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return sdnlb.Errorf(sdnlb.EFORBIDDEN, "a write from another site's page (Sec-Fetch-Site: %s) needs its origin in --cors-origin", site)
	}
	if origin != "" && !sameHost(origin, r.Host) {
		return sdnlb.Errorf(sdnlb.EFORBIDDEN, "a write from the page of %q needs that origin in --cors-origin", origin)
	}
	return nil
}

// sameOriginGet admits a GET that changes state (Floodlight has some) only
// with the bearer token, when one is set, or else when the browser says the
// request comes from this origin: an <img> or a link on another site must
// not change anything. Clients that are not browsers use POST or PUT, which
// the same routes take.
func (s *Server) sameOriginGet(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || s.Token != "" {
			s.requireToken(next).ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		if r.Header.Get("Sec-Fetch-Site") == "same-origin" || (origin != "" && (sameHost(origin, r.Host) || s.corsAllowed(origin))) {
			next.ServeHTTP(w, r)
			return
		}
		s.writeError(w, r, sdnlb.Errorf(sdnlb.EFORBIDDEN,
			"GET changes state here only with the bearer token or from this origin's page; send POST or PUT"))
	})
}

// sameHost reports whether the origin (scheme://host[:port]) names host.
// The scheme is not compared: a TLS proxy may stand in front of the API.
func sameHost(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

func (s *Server) corsAllowed(origin string) bool {
	for _, o := range s.CORSOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// cors answers for the origins CORSOrigins allows: their pages may read and,
// with the token where one is set, write. A preflight is answered here,
// before auth, as browsers send it without credentials.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !s.corsAllowed(origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// limitBody answers 413 at once for a body that declares more than
// bodyLimit, before anything reads it, so that a client waiting on
// Expect: 100-continue is told and never sends it; a body without a length
// is cut at the limit as it is read. What the handler left of a body is
// drained after it.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limit := bodyLimit(r)
		body := r.Body
		defer drainBody(w, r, body)
		if r.ContentLength > limit {
			w.Header().Set("Connection", "close")
			s.writeError(w, r, errTooLarge(limit))
			return
		}
		r.Body = http.MaxBytesReader(w, body, limit)
		next.ServeHTTP(w, r)
	})
}

// maxDrainBytes bounds what drainBody reads: twice the largest body taken.
const maxDrainBytes = 2 * MaxConfigBodyBytes

// drainBody sends the answer and reads what is left of the request's
// body, up to maxDrainBytes: a client that sends a body without waiting
// on Expect: 100-continue (one too large, or one refused unread) must be
// able to send it all and read the answer, while closing the connection
// on bytes unread would reset it and lose the answer. A client waiting on
// 100-continue sends no body once answered; it is left alone.
func drainBody(w http.ResponseWriter, r *http.Request, body io.Reader) {
	if r.ContentLength == 0 || r.ContentLength > maxDrainBytes || strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	var b [1]byte
	if n, _ := body.Read(b[:]); n == 0 {
		return // read to its end: the answer goes as it is
	}
	_ = http.NewResponseController(w).Flush()
	_, _ = io.CopyN(io.Discard, body, maxDrainBytes)
}

// bodyLimit is the most r's body may hold: maxBodyBytes, or for a whole
// configuration MaxConfigBodyBytes.
func bodyLimit(r *http.Request) int64 {
	if isConfigPut(r) {
		return MaxConfigBodyBytes
	}
	return maxBodyBytes
}

func errTooLarge(limit int64) error {
	return sdnlb.Errorf(sdnlb.ETOOLARGE, "the body is larger than %s bytes", strconv.FormatInt(limit, 10))
}
