package ofp

import (
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to
// bytes that decode to an equal message. A FlowStatsPart never panics
// either, and reads a flow stats reply as Decode does.
func FuzzDecode(f *testing.F) {
	for _, name := range goldenNames(f) {
		f.Add(mustGolden(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b)
		// Mutations mostly break the header length; fix it (and the
		// version) so the body decoders see the mutated bytes too.
		if len(b) >= HeaderLen && len(b) <= MaxMessageLen {
			fixed := append([]byte(nil), b...)
			fixed[0] = Version
			binary.BigEndian.PutUint16(fixed[2:], uint16(len(fixed)))
			checkDecode(t, fixed)
		}
	})
}

func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	var part FlowStatsPart
	_, partErr := DecodeInto(b, &part)
	h, m, err := Decode(b)
	if err != nil {
		return
	}
	if reply, ok := m.(*MultipartReply); ok {
		if body, ok := reply.Body.(FlowStatsReply); ok {
			if want := partOf(reply.Flags, body.Stats); partErr != nil || !reflect.DeepEqual(partOf(part.Flags, part.Stats), want) {
				t.Fatalf("FlowStatsPart disagrees with Decode: %v\n%#v\n%#v", partErr, part, want)
			}
		}
	}
	if reuse := newMessage(h.Type); reuse != nil {
		if _, err := DecodeInto(b, reuse); err != nil || !reflect.DeepEqual(reuse, m) {
			t.Fatalf("DecodeInto disagrees with Decode: %v\n%#v\n%#v", err, reuse, m)
		}
	}
	render(m)
	wire, err := AppendChecked(nil, h.XID, m)
	if err != nil {
		t.Fatalf("re-encode %T: %v", m, err)
	}
	h2, m2, err := Decode(wire)
	if err != nil {
		t.Fatalf("decode of re-encoded %T: %v\nin  % x\nout % x", m, err, b, wire)
	}
	if h2.XID != h.XID || h2.Type != h.Type {
		t.Fatalf("header changed: %+v -> %+v", h, h2)
	}
	if want := readable(m); !reflect.DeepEqual(want, m2) {
		t.Fatalf("round trip changed %T:\n got %#v\nwant %#v", m, m2, want)
	}
}

// readable is m without the groups Decode could not read the buckets of,
// which Append leaves out.
func readable(m Message) Message {
	reply, ok := m.(*MultipartReply)
	if !ok {
		return m
	}
	if body, ok := reply.Body.(GroupDescReply); ok && body.Unreadable != nil {
		return &MultipartReply{Flags: reply.Flags, Body: GroupDescReply{Groups: body.Groups}}
	}
	return m
}

// render runs the ovs-ofctl renderers over whatever decoded: they see
// switch input too (flow and group dumps), so they must not panic either.
func render(m Message) {
	switch m := m.(type) {
	case *FlowMod:
		_ = m.String()
	case *FlowRemoved:
		_ = m.Match.String()
	case *PacketIn:
		_ = m.Match.String()
	case *PacketOut:
		_ = FormatActions(m.Actions)
	case *GroupMod:
		_ = m.String()
	case *MultipartReply:
		switch b := m.Body.(type) {
		case FlowStatsReply:
			for _, s := range b.Stats {
				_ = s.Match.String() + FormatInstructions(s.Instructions)
			}
		case GroupDescReply:
			for _, g := range b.Groups {
				_ = g.String()
			}
		case GroupStatsReply:
			for _, s := range b.Stats {
				_ = s.String()
			}
		}
	}
}
