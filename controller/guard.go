package controller

import (
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
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
// the session and handshake caps.
type guard struct {
	allow         []netip.Prefix // empty: every address
	maxSwitches   int64
	maxHandshakes int64
	sessions      atomic.Int64
	handshakes    atomic.Int64
	refusals      *limitedLog
}

// admit reports whether a connection from remote may start a session,
// counting it when it may; done ends the session.
func (g *guard) admit(remote net.Addr) (ok bool, why string) {
	if len(g.allow) > 0 {
		ap, err := netip.ParseAddrPort(remote.String())
		if err != nil || !g.allowed(ap.Addr().Unmap()) {
			return false, "address not in --openflow-allow"
		}
	}
	if g.sessions.Add(1) > g.maxSwitches {
		g.sessions.Add(-1)
		return false, "too many switch sessions"
	}
	if g.handshakes.Add(1) > g.maxHandshakes {
		g.handshakes.Add(-1)
		g.sessions.Add(-1)
		return false, "too many handshakes in flight"
	}
	return true, ""
}

func (g *guard) allowed(a netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// handshakeDone releases the connection's handshake slot; done its session.
func (g *guard) handshakeDone() { g.handshakes.Add(-1) }
func (g *guard) done()          { g.sessions.Add(-1) }

// limitedLog writes one line per interval and counts what it held back,
// so that a peer failing on purpose cannot flood the log.
type limitedLog struct {
	log      *slog.Logger
	every    time.Duration
	mu       sync.Mutex
	last     time.Time
	withheld int
}

func (l *limitedLog) warn(now time.Time, msg string, args ...any) {
	l.mu.Lock()
	if now.Sub(l.last) < l.every {
		l.withheld++
		l.mu.Unlock()
		return
	}
	withheld := l.withheld
	l.last, l.withheld = now, 0
	l.mu.Unlock()
	if withheld > 0 {
		args = append(args, "withheld_since_last", withheld)
	}
	l.log.Warn(msg, args...)
}
