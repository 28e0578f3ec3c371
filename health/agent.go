package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The AGENT monitor is HAProxy's agent check. A probe connects to the
// member's agent, on the monitor's port, and reads one line: words split
// by spaces, tabs or commas, in any case, such as "75% drain". NN% is the
// share of its capacity the member has free; up and ready clear a drain,
// drain and maint set one (maint is HAProxy's maintenance: no new
// connections, the established ones run on); down, fail and stopped say
// the member is out, which takes it DOWN at once. Text after a # is the agent's reason, kept
// in the member's last error. Other words are ignored, but a line without
// any of these is a failed probe, as is one that is too long or never
// ends.

const (
	// MaxAgentLine bounds a reply line, without its end: an agent has a
	// few words to say, and must not make sdnlb buffer more.
	MaxAgentLine = 512
	// maxAgentReason bounds the reason an out member's last error keeps.
	maxAgentReason = 128
)

// The words of an agent's reply that say how its member stands.
const (
	agentUp      = "up"
	agentReady   = "ready"
	agentDrain   = "drain"
	agentDown    = "down"
	agentFail    = "fail"
	agentStopped = "stopped"
	agentMaint   = "maint"
)

// IsAgentState reports whether word, in any case, is one an agent says of
// its member's state: up, ready, drain, down, fail, stopped or maint.
func IsAgentState(word string) bool {
	switch strings.ToLower(word) {
	case agentUp, agentReady, agentDrain, agentDown, agentFail, agentStopped, agentMaint:
		return true
	}
	return false
}

// agentReply is what one line of an agent says of its member.
type agentReply struct {
	available int  // percent of its capacity free, 0-100; -1 when the line names none
	drain     bool // the agent asks for no new connections
	undrain   bool // up or ready: the agent clears a drain
}

// agentOutError is an agent saying its member is out (down, fail or
// stopped): the probe fails and the member goes DOWN at once.
type agentOutError struct {
	word, reason string
}

func (e *agentOutError) Error() string {
	if e.reason == "" {
		return "the agent says " + e.word
	}
	return "the agent says " + e.word + ": " + e.reason
}

// agentReplyError is a reply sdnlb cannot read: a failed probe under the
// monitor's usual rules, which the engine logs at most once a minute per
// monitor.
type agentReplyError struct{ why string }

func (e *agentReplyError) Error() string { return "agent reply: " + e.why }

// parseAgentReply reads one reply line, without its end.
func parseAgentReply(line string) (agentReply, error) {
	words, reason, _ := strings.Cut(line, "#")
	r := agentReply{available: -1}
	known := false
	for _, w := range strings.FieldsFunc(words, func(c rune) bool { return c == ' ' || c == '\t' || c == ',' }) {
		switch w = strings.ToLower(w); w {
		case agentUp, agentReady:
			r.drain, r.undrain = false, true
		case agentDrain, agentMaint:
			r.drain, r.undrain = true, false
		case agentDown, agentFail, agentStopped:
			return agentReply{}, &agentOutError{word: w, reason: agentReason(reason)}
		default:
			p, ok := parseAgentPercent(w)
			if !ok {
				continue // a word for someone else, as HAProxy's maxconn:N
			}
			r.available = p
		}
		known = true
	}
	if !known {
		if strings.TrimSpace(line) == "" {
			return agentReply{}, &agentReplyError{"empty"}
		}
		return agentReply{}, &agentReplyError{fmt.Sprintf("%q has no word sdnlb reads (NN%%, up, ready, drain, down, fail, stopped, maint)",
			truncate(line, 64))}
	}
	return r, nil
}

// parseAgentPercent reads NN% or a fraction such as 75.5%, 0-100, rounded.
func parseAgentPercent(w string) (int, bool) {
	num, ok := strings.CutSuffix(w, "%")
	if !ok || num == "" || strings.Count(num, ".") > 1 || strings.Trim(num, "0123456789.") != "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v > 100 {
		return 0, false
	}
	return int(math.Round(v)), true
}

// agentReason is the reason an agent gave, printable and bounded: control
// characters and format characters (bidirectional overrides such as
// U+202E, which would make the API and the dashboard show other text than
// the agent sent) become spaces.
func agentReason(s string) string {
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s))
	return truncate(s, maxAgentReason)
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// agentProber asks members' agents. Unlike the other probers it brings
// back what the agent said, which the engine applies to the member.
type agentProber struct{ dialer net.Dialer }

// ask reads one reply from the agent of t, on t's port, within ctx.
func (p *agentProber) ask(ctx context.Context, t target) (agentReply, error) {
	ap, err := t.addrPort()
	if err != nil {
		return agentReply{}, err
	}
	conn, err := p.dialer.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return agentReply{}, &netError{err: fmt.Errorf("agent connect: %w", unwrapOp(err))}
	}
	// Reset instead of a FIN, as the TCP prober does, should the agent
	// not have closed first.
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	defer conn.Close()
	// The timeout, or the engine cancelling the probe, ends the read.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	line, err := readAgentLine(conn)
	if err != nil {
		var local netip.Addr
		if a, ok := conn.LocalAddr().(*net.TCPAddr); ok {
			local = a.AddrPort().Addr().Unmap()
		}
		var ne *netError
		if errors.As(err, &ne) {
			ne.local = local
		}
		return agentReply{}, err
	}
	return parseAgentReply(line)
}

// readAgentLine reads one line of at most MaxAgentLine bytes, ended by LF
// (a CR before it dropped) or by the end of the connection.
func readAgentLine(r io.Reader) (string, error) {
	var buf [MaxAgentLine + 1]byte
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		if i := bytes.IndexByte(buf[n:n+m], '\n'); i >= 0 {
			return strings.TrimSuffix(string(buf[:n+i]), "\r"), nil
		}
		n += m
		switch {
		case errors.Is(err, io.EOF):
			return strings.TrimSuffix(string(buf[:n]), "\r"), nil
		case errors.Is(err, os.ErrDeadlineExceeded) && n == 0:
			return "", &netError{err: errors.New("agent: no reply within the timeout")}
		case errors.Is(err, os.ErrDeadlineExceeded):
			return "", &agentReplyError{fmt.Sprintf("no full line within the timeout, only %q", truncate(string(buf[:n]), 64))}
		case err != nil:
			return "", &netError{err: fmt.Errorf("agent read: %w", unwrapOp(err))}
		}
	}
	return "", &agentReplyError{fmt.Sprintf("more than %d bytes without a newline", MaxAgentLine)}
}
