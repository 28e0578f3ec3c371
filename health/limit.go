package health

import (
	"log/slog"
	"time"
)

// limitedLog writes at most one line per key (a monitor) per interval
// and counts what it held back, so that a member that keeps answering
// badly cannot flood the log. Only the engine's goroutine uses it.
type limitedLog struct {
	log   *slog.Logger
	every time.Duration
	keys  map[string]*logKey
}

type logKey struct {
	last     time.Time
	withheld int
}

func newLimitedLog(log *slog.Logger, every time.Duration) *limitedLog {
	return &limitedLog{log: log, every: every, keys: make(map[string]*logKey)}
}

func (l *limitedLog) warn(key string, now time.Time, msg string, args ...any) {
	k := l.keys[key]
	if k == nil {
		k = &logKey{}
		l.keys[key] = k
	} else if now.Sub(k.last) < l.every {
		k.withheld++
		return
	}
	if k.withheld > 0 {
		args = append(args, "withheld_since_last", k.withheld)
	}
	k.last, k.withheld = now, 0
	l.log.Warn(msg, args...)
}

// keep forgets the keys live no longer holds (monitors deleted).
func (l *limitedLog) keep(live func(key string) bool) {
	for key := range l.keys {
		if !live(key) {
			delete(l.keys, key)
		}
	}
}
