package controller

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/sdnlb/sdnlb/internal/peerlog"
)

// Defaults of the OpenFlow listener's limits.
const (
	DefaultMaxSwitches   = 1024 // sessions, handshakes included
	DefaultMaxHandshakes = 64   // sessions still in their handshake
)

// How a connection that claims a connected switch's datapath id is told
// from the switch reconnecting: the old session is asked for an echo.
const (
	dpidProbeTimeout = time.Second
	refusalLogEvery  = time.Minute
)

// guard admits switch connections: from allowed addresses only, within
// the session and handshake caps. At a full cap a new connection takes
// the place of the oldest handshake of the source address with the most
// in flight, so that idle connections from one source cannot keep a
// switch from another out. A connection is refused only when sessions
// past their handshake fill the session cap.
type guard struct {
	allow         []netip.Prefix // empty: every address
	maxSwitches   int
	maxHandshakes int
	log           *peerlog.Log

	mu         sync.Mutex
	sessions   int          // handshakes included
	handshakes []*admission // in flight, oldest first
	bySource   map[netip.Addr]int
}

// admission is a connection the guard let in. Its flags are guarded by
// guard.mu.
type admission struct {
	conn      net.Conn
	source    netip.Addr
	handshake bool // holds a handshake place
	session   bool // holds a session place
	dropped   bool // its places went to a newer connection, which closed conn
}

// admit reports whether conn may start a session, counting it when it
// may; handshakeDone and done end its handshake and its session.
func (g *guard) admit(now time.Time, conn net.Conn) (a *admission, why string) {
	var source netip.Addr // every connection without an IP address is one source
	if ap, err := netip.ParseAddrPort(conn.RemoteAddr().String()); err == nil {
		source = ap.Addr().Unmap()
	}
	if len(g.allow) > 0 && !g.allowed(source) {
		return nil, "address not in --openflow-allow"
	}
	g.mu.Lock()
	var dropped *admission
	var fromSource int // handshakes in flight from dropped's source
	if g.sessions >= g.maxSwitches || len(g.handshakes) >= g.maxHandshakes {
		if dropped = g.busiestOldest(); dropped == nil {
			g.mu.Unlock()
			return nil, "too many switch sessions"
		}
		fromSource = g.bySource[dropped.source]
		g.end(dropped)
		dropped.dropped = true
	}
	a = &admission{conn: conn, source: source, handshake: true, session: true}
	g.handshakes = append(g.handshakes, a)
	g.bySource[source]++
	g.sessions++
	g.mu.Unlock()
	if dropped != nil {
		dropped.conn.Close()
		g.log.Warn(now, "handshake dropped", source.String(), "switch handshake dropped for a newer connection: the caps are full and its source has the most handshakes in flight",
			"remote", dropped.conn.RemoteAddr().String(), "handshakes_from_source", fromSource)
	}
	return a, ""
}

// busiestOldest is the oldest handshake of the source with the most in
// flight, nil when there is none; g.mu must be held.
func (g *guard) busiestOldest() *admission {
	var found *admission
	for _, a := range g.handshakes {
		if found == nil || g.bySource[a.source] > g.bySource[found.source] {
			found = a
		}
	}
	return found
}

// endHandshake gives a's handshake place back; g.mu must be held.
func (g *guard) endHandshake(a *admission) {
	if !a.handshake {
		return
	}
	a.handshake = false
	g.handshakes = slices.DeleteFunc(g.handshakes, func(h *admission) bool { return h == a })
	if g.bySource[a.source]--; g.bySource[a.source] == 0 {
		delete(g.bySource, a.source)
	}
}

// end gives both of a's places back; g.mu must be held.
func (g *guard) end(a *admission) {
	g.endHandshake(a)
	if a.session {
		a.session = false
		g.sessions--
	}
}

func (g *guard) allowed(a netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// handshakeDone ends a's handshake, and reports whether its place went to
// a newer connection meanwhile, which closed a's.
func (g *guard) handshakeDone(a *admission) (dropped bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.endHandshake(a)
	return a.dropped
}

// done ends a's session.
func (g *guard) done(a *admission) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.end(a)
}
