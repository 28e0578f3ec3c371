package controller

import (
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
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

// A 1.0 reply part read for its counters is narrowed to the cookie its
// request selected by, in place: the other flows keep their storage past
// its end. One standing in for a delete by cookie shows nothing else and
// yields the deletes of the flows it selects.
func TestWire10_AnsweredFlowStatsPart(t *testing.T) {
	w := &wire10{xids: new(atomic.Uint32), selections: map[uint32]*cookieSelection{}}
	ours := func(member uint32) ofp.FlowStats {
		return ofp.FlowStats{Cookie: model.MakeCookie(model.CatConn, 1, member), Priority: model.PrioConnection,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(ofp.EthTypeIPv4), ofp.MatchIPProto(ofp.IPProtoTCP), ofp.MatchTCPSrc(uint16(40000 + member))}}}
	}
	foreign := ofp.FlowStats{Cookie: 7, Priority: 5}

	if _, err := w.Append(nil, 5, ofp.MultipartRequest{Body: dataplane.StatsRequest()}); err != nil {
		t.Fatal(err)
	}
	part := &ofp.FlowStatsPart{Flags: ofp.MultipartReplyMore, Stats: []ofp.FlowStats{foreign, ours(1), foreign, ours(2)}}
	if deletes := w.answered(5, part); deletes != nil {
		t.Errorf("a poll's part yields deletes %v", deletes)
	}
	if want := []ofp.FlowStats{ours(1), ours(2), foreign, foreign}; !reflect.DeepEqual(part.Stats, want[:2]) || !reflect.DeepEqual(part.Stats[:4], want) {
		t.Errorf("narrowed to %+v, storage %+v; want %+v", part.Stats, part.Stats[:4], want)
	}
	if w.pending.Load() != 1 {
		t.Errorf("the poll ended before its last part")
	}
	if w.answered(5, &ofp.FlowStatsPart{}); w.pending.Load() != 0 {
		t.Errorf("the poll did not end at its last part")
	}

	if _, err := w.Append(nil, 6, &ofp.FlowMod{Command: ofp.FlowDelete, TableID: ofp.TableAll, Cookie: model.MakeCookie(model.CatConn, 1, 2),
		CookieMask: ^uint64(0), OutPort: ofp.PortAny, OutGroup: ofp.GroupAny}); err != nil {
		t.Fatal(err)
	}
	part = &ofp.FlowStatsPart{Stats: []ofp.FlowStats{ours(1), foreign, ours(2)}}
	deletes := w.answered(6, part)
	if want := []ofp.FlowMod{model.StrictDelete(new(ours(2)))}; !reflect.DeepEqual(deletes, want) || len(part.Stats) != 0 {
		t.Errorf("delete's stand-in: deletes %+v, part %+v; want %+v and an empty part", deletes, part.Stats, want)
	}
	if w.pending.Load() != 0 || w.deletes.Load() != 0 {
		t.Errorf("the delete's stand-in did not end with its only part")
	}
}
