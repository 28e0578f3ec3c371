package ofp

import (
	"errors"
	"reflect"
	"testing"
)

// natFlowStats is a reply part of n load-balanced connections' flows,
// each with its own client port: the entries a stats poll reads most.
func natFlowStats(n int, flags uint16) *MultipartReply {
	var stats []FlowStats
	for i := range n {
		fm := natFlowMod()
		fm.Match.OXMs[5] = MatchTCPSrc(uint16(40000 + i))
		stats = append(stats, FlowStats{TableID: 1, DurationSec: 7, Priority: fm.Priority, IdleTimeout: fm.IdleTimeout,
			HardTimeout: fm.HardTimeout, Flags: fm.Flags, Cookie: fm.Cookie, PacketCount: uint64(i), ByteCount: uint64(100 * i),
			Match: fm.Match, Instructions: fm.Instructions})
	}
	return &MultipartReply{Flags: flags, Body: FlowStatsReply{Stats: stats}}
}

// partOf is what a FlowStatsPart holds of a decoded flow stats reply: its
// entries without their instructions. A match without fields is nil in
// both, whatever storage a part kept for it.
func partOf(flags uint16, stats []FlowStats) FlowStatsPart {
	p := FlowStatsPart{Flags: flags}
	for _, s := range stats {
		s.Instructions = nil
		if len(s.Match.OXMs) == 0 {
			s.Match.OXMs = nil
		}
		p.Stats = append(p.Stats, s)
	}
	return p
}

// checkPart decodes wire into p and compares it with what Decode reads.
func checkPart(t *testing.T, wire []byte, p *FlowStatsPart) {
	t.Helper()
	_, m, err := Decode(wire)
	if err != nil {
		t.Fatal(err)
	}
	reply := m.(*MultipartReply)
	if _, err := DecodeInto(wire, p); err != nil {
		t.Fatalf("DecodeInto: %v", err)
	}
	if got, want := partOf(p.Flags, p.Stats), partOf(reply.Flags, reply.Body.(FlowStatsReply).Stats); !reflect.DeepEqual(got, want) {
		t.Fatalf("FlowStatsPart:\n got %#v\nwant %#v", got, want)
	}
}

func TestFlowStatsPart_DecodesAsDecode(t *testing.T) {
	tests := []struct {
		name string
		wire []byte
	}{
		{"Golden", mustGolden(t, "flow_stats_reply")},
		{"Connections", Append(nil, 7, natFlowStats(3, MultipartReplyMore))},
		{"Empty", Append(nil, 7, &MultipartReply{Body: FlowStatsReply{}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p FlowStatsPart
			checkPart(t, tt.wire, &p)
			// It encodes as the reply it was, less the instructions.
			_, m, err := Decode(Append(nil, 7, p))
			if err != nil {
				t.Fatal(err)
			}
			reply := m.(*MultipartReply)
			if got := partOf(reply.Flags, reply.Body.(FlowStatsReply).Stats); !reflect.DeepEqual(got, partOf(p.Flags, p.Stats)) {
				t.Errorf("re-encoded:\n got %#v\nwant %#v", got, p)
			}
		})
	}
}

// Parts of other lengths and matches follow each other in one
// FlowStatsPart: none shows what an earlier one left, and once the
// storage has grown to the longest, decoding allocates nothing.
func TestFlowStatsPart_ReusesStorage(t *testing.T) {
	long := Append(nil, 7, natFlowStats(40, MultipartReplyMore))
	short := mustGolden(t, "flow_stats_reply") // fewer fields, an entry without any
	var p FlowStatsPart
	for _, wire := range [][]byte{short, long, short, long} {
		checkPart(t, wire, &p)
	}
	allocs := testing.AllocsPerRun(50, func() {
		for _, wire := range [][]byte{long, short} {
			if _, err := DecodeInto(wire, &p); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("decoding parts into a grown FlowStatsPart allocated %.0f times", allocs)
	}
}

// Truncated parts fail as Decode fails them (TestDecode_Errors); so do
// messages that are no flow stats reply.
func TestFlowStatsPart_OtherMessages(t *testing.T) {
	for _, name := range []string{"port_stats_reply", "flow_stats_request", "echo_request"} {
		if _, err := DecodeInto(mustGolden(t, name), new(FlowStatsPart)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: DecodeInto error = %v, want ErrUnsupported", name, err)
		}
	}
}

// A part is read for its counters: instructions Decode rejects do not
// fail it.
func TestFlowStatsPart_SkipsInstructions(t *testing.T) {
	wire := message(t, TypeMultipartReply, "00 01 00 00 00 00 00 00"+
		" 00 40 07 00 00*8 00 0a 00 00 00*8 00*8 00 00 00 00 00 00 00 03 00*8  00 01 00 04 00 00 00 00"+
		" 00 01 00 00 00 00 00 00") // an instruction of length 0
	if _, _, err := Decode(wire); !errors.Is(err, ErrBadLength) {
		t.Fatalf("Decode error = %v, want ErrBadLength", err)
	}
	var p FlowStatsPart
	if _, err := DecodeInto(wire, &p); err != nil {
		t.Fatal(err)
	}
	want := FlowStatsPart{Stats: []FlowStats{{TableID: 7, Priority: 10, PacketCount: 3}}}
	if got := partOf(p.Flags, p.Stats); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}
