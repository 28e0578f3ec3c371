package controller

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

func TestNegotiate(t *testing.T) {
	tests := []struct {
		name     string
		header   uint8
		versions []uint8 // nil: a bare hello
		want     uint8   // 0: refused
		refusal  string
	}{
		{"Bare10", 1, nil, 1, ""},
		{"Bare13", 4, nil, 4, ""},
		{"BareNewer", 6, nil, 4, ""}, // a 1.5 switch that sends no bitmap speaks every version up to its own
		{"Bare11", 2, nil, 0, "sdnlb speaks OpenFlow 1.0 and 1.3; the switch offered 1.1"},
		{"BitmapBoth", 6, []uint8{1, 4, 5, 6}, 4, ""},
		{"Bitmap10", 6, []uint8{1, 6}, 1, ""},
		{"BitmapNone", 6, []uint8{5, 6}, 0, "sdnlb speaks OpenFlow 1.0 and 1.3; the switch offered 1.4 and 1.5"},
		{"BitmapThree", 6, []uint8{2, 3, 6}, 0, "the switch offered 1.1, 1.2 and 1.5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hello := &ofp.Hello{Versions: tt.versions}
			if tt.versions == nil {
				hello.Versions = []uint8{tt.header}
			}
			w, err := negotiate(tt.header, hello, tt.versions == nil, new(atomic.Uint32))
			switch {
			case tt.want == 0 && err == nil:
				t.Errorf("agreed on %s, want a refusal", versionName(w.version()))
			case tt.want == 0:
				if !strings.Contains(err.Error(), tt.refusal) {
					t.Errorf("refusal %q, want it to say %q", err, tt.refusal)
				}
			case err != nil:
				t.Errorf("refused: %v", err)
			case w.version() != tt.want:
				t.Errorf("agreed on %s, want %s", versionName(w.version()), versionName(tt.want))
			}
		})
	}
}
