package cluster

import "time"

// Clock is the time an Elector and its Masters keep: their local
// deadlines, the timers that end them, and when they next try the lease
// and record their switches. It is the real clock unless Options.Clock
// says otherwise; a test passes a clock that moves only when it says.
type Clock interface {
	Now() time.Time
	// NewTimer and AfterFunc are those of the time package.
	NewTimer(d time.Duration) Timer
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a *time.Timer of a Clock.
type Timer interface {
	// C is the channel of a timer from NewTimer; nil from AfterFunc.
	C() <-chan time.Time
	Reset(d time.Duration) bool
	Stop() bool
}

// realClock is the time package's clock.
type realClock struct{}

func (realClock) Now() time.Time                 { return time.Now() }
func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }
func (realClock) AfterFunc(d time.Duration, f func()) Timer {
	return realTimer{time.AfterFunc(d, f)}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
