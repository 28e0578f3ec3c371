package ofp10

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// counters is what an ofp.FlowStatsPart holds of flow stats entries:
// each without its actions, and a match without fields nil, whatever
// storage the part kept for it.
func counters(stats []ofp.FlowStats) []ofp.FlowStats {
	out := append([]ofp.FlowStats(nil), stats...)
	for i := range out {
		out[i].Instructions = nil
		if len(out[i].Match.OXMs) == 0 {
			out[i].Match.OXMs = nil
		}
	}
	return out
}

func goldenFlowStats(t *testing.T) []ofp.FlowStats {
	t.Helper()
	for _, tc := range goldenCases() {
		if tc.name == "flow_stats_reply" {
			return tc.msg.(*ofp.MultipartReply).Body.(ofp.FlowStatsReply).Stats
		}
	}
	t.Fatal("no golden flow stats reply")
	return nil
}

// A flow stats reply decodes into an ofp.FlowStatsPart as Decode reads
// it, less the actions. Parts of other lengths and matches follow each
// other in one part, which allocates nothing once it has grown.
func TestDecodeInto_FlowStatsPart(t *testing.T) {
	golden := goldenFlowStats(t)
	arp := []ofp.FlowStats{{Priority: 7, PacketCount: 1, ByteCount: 60, Match: arpMatch(), Instructions: toController()}}
	arpWire, err := Append(nil, 3, &ofp.MultipartReply{Flags: ofp.MultipartReplyMore, Body: ofp.FlowStatsReply{Stats: arp}})
	if err != nil {
		t.Fatal(err)
	}
	parts := []struct {
		wire  []byte
		flags uint16
		stats []ofp.FlowStats
	}{
		{mustGolden(t, "flow_stats_reply"), 0, golden},
		{arpWire, ofp.MultipartReplyMore, arp},
		{mustGolden(t, "flow_stats_reply"), 0, golden},
	}
	var p ofp.FlowStatsPart
	for i, part := range parts {
		if _, err := DecodeInto(part.wire, &p); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if p.Flags != part.flags || !reflect.DeepEqual(counters(p.Stats), counters(part.stats)) {
			t.Errorf("part %d: flags %#x, entries\n %#v\nwant flags %#x, entries\n %#v", i, p.Flags, p.Stats, part.flags, counters(part.stats))
		}
	}
	allocs := testing.AllocsPerRun(50, func() {
		for _, part := range parts {
			DecodeInto(part.wire, &p)
		}
	})
	if allocs != 0 {
		t.Errorf("decoding parts into a grown FlowStatsPart allocated %.0f times", allocs)
	}
}

func TestDecodeInto_FlowStatsPartErrors(t *testing.T) {
	golden := mustGolden(t, "flow_stats_reply")
	cut := func(n int) []byte {
		b := append([]byte(nil), golden[:n]...)
		binary.BigEndian.PutUint16(b[2:], uint16(n))
		return b
	}
	const entryAt = ofp.HeaderLen + 4 // after the stats type and flags
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"stats header cut short", cut(ofp.HeaderLen + 2), ofp.ErrShort},
		{"entry cut short", cut(entryAt + 40), ofp.ErrShort},
		{"entry longer than the message", cut(entryAt + flowStatsFixedLen), ofp.ErrBadLength},
		{"port stats", mustGolden(t, "port_stats_reply"), ofp.ErrUnsupported},
		{"a request", mustGolden(t, "flow_stats_request"), ofp.ErrUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p ofp.FlowStatsPart
			if _, err := DecodeInto(tc.b, &p); !errors.Is(err, tc.want) {
				t.Errorf("DecodeInto: %v, want %v", err, tc.want)
			}
		})
	}
}
