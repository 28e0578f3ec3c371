// Package peerlog writes the log lines a peer can cause: a switch, a host
// on the data plane, an API client, an agent. A peer that misbehaves on
// purpose must not flood the log, so each line has a kind (what happened)
// and a source (who made it happen), and each kind and source gets at
// most one line per interval; the next line that gets through says how
// many were withheld. Sources are bounded too: past MaxSources live ones,
// new sources share one key per kind, so a peer inventing sources cannot
// grow the table either.
package peerlog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// MaxSources bounds the sources a Log tracks at once.
const MaxSources = 4096

// otherSources is the source of every line past MaxSources.
const otherSources = "(other sources)"

// Log is safe for concurrent use.
type Log struct {
	log   *slog.Logger
	every time.Duration

	mu    sync.Mutex
	keys  map[key]*state
	swept time.Time // when forget last ran
}

type key struct{ kind, source string }

type state struct {
	last     time.Time
	withheld int
}

// New returns a Log that writes to log at most one line per kind and
// source every interval.
func New(log *slog.Logger, every time.Duration) *Log {
	return &Log{log: log, every: every, keys: map[key]*state{}}
}

// Warn writes msg at WARN unless a line of kind from source went out less
// than the interval before now, in which case it only counts it.
func (l *Log) Warn(now time.Time, kind, source, msg string, args ...any) {
	l.To(l.log).Warn(now, kind, source, msg, args...)
}

// Info is Warn at INFO.
func (l *Log) Info(now time.Time, kind, source, msg string, args ...any) {
	l.To(l.log).Info(now, kind, source, msg, args...)
}

// To returns a Writer that writes to log, with its attributes, under l's
// limits: one switch connection's lines, say, counted with every other's.
func (l *Log) To(log *slog.Logger) Writer { return Writer{l, log} }

// Writer writes the lines of a Log to a logger of its own.
type Writer struct {
	limits *Log
	log    *slog.Logger
}

// Warn is Log.Warn, written to w's logger.
func (w Writer) Warn(now time.Time, kind, source, msg string, args ...any) {
	w.write(now, slog.LevelWarn, kind, source, msg, args)
}

// Info is Log.Info, written to w's logger.
func (w Writer) Info(now time.Time, kind, source, msg string, args ...any) {
	w.write(now, slog.LevelInfo, kind, source, msg, args)
}

func (w Writer) write(now time.Time, level slog.Level, kind, source, msg string, args []any) {
	if !w.log.Enabled(context.Background(), level) {
		return
	}
	withheld, ok := w.limits.admit(now, key{kind, source})
	if !ok {
		return
	}
	if withheld > 0 {
		args = append(args, "withheld_since_last", withheld)
	}
	w.log.Log(context.Background(), level, msg, args...)
}

// admit reports whether a line of k may go out at now, and how many were
// withheld before it.
func (l *Log) admit(now time.Time, k key) (withheld int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.keys[k]
	if s == nil {
		if len(l.keys) >= MaxSources && now.Sub(l.swept) >= l.every {
			l.forget(now)
		}
		if len(l.keys) >= MaxSources {
			k.source = otherSources
			s = l.keys[k]
		}
	}
	if s == nil {
		s = &state{}
		l.keys[k] = s
	} else if now.Sub(s.last) < l.every {
		s.withheld++
		return 0, false
	}
	withheld, s.last, s.withheld = s.withheld, now, 0
	return withheld, true
}

// forget drops the keys whose interval is over and that withheld
// nothing: what they would say next needs no count.
func (l *Log) forget(now time.Time) {
	l.swept = now
	for k, s := range l.keys {
		if now.Sub(s.last) >= l.every && s.withheld == 0 {
			delete(l.keys, k)
		}
	}
}
