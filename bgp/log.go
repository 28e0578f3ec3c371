package bgp

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sdnlb/sdnlb/internal/peerlog"
)

// peerLogInterval is how often one message of GoBGP's about one peer is
// written at most.
const peerLogInterval = time.Minute

// goBGPHandler writes GoBGP's log into the node's. A peer causes most of
// GoBGP's lines (its state changes, its malformed messages), so each goes
// through a peerlog, by message and by the peer GoBGP names ("Key"); its
// debug lines are dropped, and quiet drops everything once the speaker
// has stopped GoBGP.
type goBGPHandler struct {
	lines *peerlog.Log
	log   *slog.Logger
	attrs []slog.Attr
	quiet *atomic.Bool
}

func newGoBGPHandler(log *slog.Logger, quiet *atomic.Bool) *goBGPHandler {
	return &goBGPHandler{lines: peerlog.New(log, peerLogInterval), log: log, quiet: quiet}
}

func (h *goBGPHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo && !h.quiet.Load() && h.log.Enabled(ctx, level)
}

func (h *goBGPHandler) Handle(_ context.Context, r slog.Record) error {
	args := make([]any, 0, 2*(len(h.attrs)+r.NumAttrs()))
	source := ""
	add := func(a slog.Attr) bool {
		if a.Key == "Key" {
			source = a.Value.String()
		}
		args = append(args, a)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if r.Level >= slog.LevelWarn {
		h.lines.Warn(r.Time, r.Message, source, r.Message, args...)
	} else {
		h.lines.Info(r.Time, r.Message, source, r.Message, args...)
	}
	return nil
}

func (h *goBGPHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

// WithGroup is not used by GoBGP; the group's attributes stay flat.
func (h *goBGPHandler) WithGroup(string) slog.Handler { return h }
