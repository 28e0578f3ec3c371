package bgp

import (
	"bytes"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
)

// GoBGP's lines about a peer are limited per message and peer, its debug
// lines dropped, and nothing passes once the speaker silenced it.
func TestGoBGPHandler(t *testing.T) {
	var buf bytes.Buffer
	var quiet atomic.Bool
	base := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	log := slog.New(newGoBGPHandler(base, &quiet))
	peer1 := log.With(slog.String("Topic", "Peer"), slog.String("Key", "192.0.2.1"))
	peer2 := log.With(slog.String("Topic", "Peer"), slog.String("Key", "192.0.2.2"))

	for range 3 {
		peer1.Info("Peer Down", "Reason", "hold timer expired")
		peer1.Warn("malformed update")
	}
	peer2.Info("Peer Down")
	peer1.Debug("sent keepalive")
	quiet.Store(true)
	log.Error("failed to stop BGP server")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=INFO msg="Peer Down" Topic=Peer Key=192.0.2.1 Reason="hold timer expired"`,
		`level=WARN msg="malformed update" Topic=Peer Key=192.0.2.1`,
		`level=INFO msg="Peer Down" Topic=Peer Key=192.0.2.2`,
	}
	if len(lines) != len(want) {
		t.Fatalf("logged:\n%s\nwant %d lines", buf.String(), len(want))
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s\nwant it to hold %s", i, lines[i], w)
		}
	}
}
