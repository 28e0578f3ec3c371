package peerlog

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func lines(b *bytes.Buffer) []string {
	return strings.Split(strings.TrimSpace(b.String()), "\n")
}

// A flood from one source writes one line an interval, and the next says
// how many it withheld; another kind or source has its own interval.
func TestLog_OneLinePerKindAndSource(t *testing.T) {
	var b bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&b, nil)), time.Second)
	now := time.Unix(1_700_000_000, 0)
	for i := range 10_000 {
		l.Warn(now.Add(time.Duration(i)*time.Microsecond), "claim", "10.0.0.1", "a host claims a VIP's address")
	}
	l.Warn(now, "claim", "10.0.0.2", "a host claims a VIP's address")
	l.Warn(now, "error", "10.0.0.1", "switch error")
	if got := lines(&b); len(got) != 3 {
		t.Fatalf("%d lines for 10,002 events, want 3:\n%s", len(got), b.String())
	}
	b.Reset()
	l.Warn(now.Add(2*time.Second), "claim", "10.0.0.1", "a host claims a VIP's address")
	if got := b.String(); !strings.Contains(got, "withheld_since_last=9999") {
		t.Errorf("the line after the interval: %s, want the 9,999 withheld", got)
	}
}

// A peer inventing sources cannot grow the table or the log: past
// MaxSources, new sources share one key.
func TestLog_SourcesBounded(t *testing.T) {
	var b bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&b, nil)), time.Minute)
	now := time.Unix(1_700_000_000, 0)
	for i := range 2 * MaxSources {
		l.Warn(now, "claim", fmt.Sprint("mac-", i), "a host claims a VIP's address")
	}
	if n := len(l.keys); n > MaxSources+1 {
		t.Errorf("%d keys, want at most %d", n, MaxSources+1)
	}
	if got := len(lines(&b)); got > MaxSources+1 {
		t.Errorf("%d lines from %d sources, want at most %d", got, 2*MaxSources, MaxSources+1)
	}
}
