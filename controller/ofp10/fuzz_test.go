package ofp10

import (
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// FuzzDecode: Decode never panics, and whatever it accepts re-encodes to
// bytes that decode to an equal message. An ofp.FlowStatsPart never
// panics either, and reads a flow stats reply as Decode does.
func FuzzDecode(f *testing.F) {
	for _, name := range goldenNames(f) {
		f.Add(mustGolden(f, name))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b)
		// Mutations mostly break the header length; fix it (and the
		// version) so the body decoders see the mutated bytes too.
		if len(b) >= ofp.HeaderLen && len(b) <= ofp.MaxMessageLen {
			fixed := append([]byte(nil), b...)
			fixed[0] = Version
			binary.BigEndian.PutUint16(fixed[2:], uint16(len(fixed)))
			checkDecode(t, fixed)
		}
	})
}

func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	var part ofp.FlowStatsPart
	_, partErr := DecodeInto(b, &part)
	h, m, err := Decode(b)
	if err != nil {
		if m != nil {
			t.Fatalf("Decode returned %T with error %v", m, err)
		}
		return
	}
	if reply, ok := m.(*ofp.MultipartReply); ok {
		if body, ok := reply.Body.(ofp.FlowStatsReply); ok && body.Unreadable == nil {
			if partErr != nil || part.Flags != reply.Flags || !reflect.DeepEqual(counters(part.Stats), counters(body.Stats)) {
				t.Fatalf("FlowStatsPart disagrees with Decode: %v\n%#v\n%#v", partErr, part, reply)
			}
		}
	}
	if h.Version != Version {
		return // a hello offering another version, which 1.0 cannot send
	}
	wire, err := appendAsDecoded(b, h, m)
	if err != nil {
		t.Fatalf("re-encode %T: %v\nin % x", m, err, b)
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

// appendAsDecoded encodes m, decoded from b, in b's form: a Nicira
// message as one (AppendNicira keeps plain 1.0 for a flow-mod 1.0 can
// express), the others as Append does.
func appendAsDecoded(b []byte, h Header, m ofp.Message) ([]byte, error) {
	switch {
	case h.Type == TypeVendor:
		return appendAs(nil, h.XID, TypeVendor, func(out []byte) ([]byte, error) {
			return appendNXFlowMod(out, m.(*ofp.FlowMod))
		})
	case (h.Type == TypeStatsRequest || h.Type == TypeStatsReply) && ofp.MultipartType(binary.BigEndian.Uint16(b[ofp.HeaderLen:])) == statsVendor:
		return AppendNicira(nil, h.XID, m)
	}
	return Append(nil, h.XID, m)
}

// readable is m without the flow stats entries Decode could not read the
// actions of, which Append leaves out.
func readable(m ofp.Message) ofp.Message {
	reply, ok := m.(*ofp.MultipartReply)
	if !ok {
		return m
	}
	if body, ok := reply.Body.(ofp.FlowStatsReply); ok && body.Unreadable != nil {
		return &ofp.MultipartReply{Flags: reply.Flags, Body: ofp.FlowStatsReply{Stats: body.Stats}}
	}
	return m
}
