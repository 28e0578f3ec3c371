package ofp

import "testing"

func BenchmarkDecodePacketIn(b *testing.B) {
	wire := mustGolden(b, "packet_in_ovs")
	var pi PacketIn
	b.ReportAllocs()
	b.SetBytes(int64(len(wire)))
	for b.Loop() {
		if _, err := DecodeInto(wire, &pi); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendFlowMod(b *testing.B) {
	fm := natFlowMod()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], 1, fm)
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkAppendPacketOut(b *testing.B) {
	po := &PacketOut{BufferID: NoBuffer, InPort: 1, Actions: []Action{ActionOutput{Port: 3}}, Data: arpFrame}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], 1, po)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkConnectionSetup is the controller's per-connection codec work:
// decode one packet-in, encode two NAT flow-mods and a packet-out.
func BenchmarkConnectionSetup(b *testing.B) {
	wire := mustGolden(b, "packet_in_ovs")
	var pi PacketIn
	fwd, rev := natFlowMod(), natFlowMod()
	po := &PacketOut{BufferID: NoBuffer, Actions: []Action{ActionOutput{Port: 3}}}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeInto(wire, &pi); err != nil {
			b.Fatal(err)
		}
		po.InPort, _ = pi.Match.InPort()
		po.Data = pi.Data
		buf = Append(buf[:0], 1, fwd)
		buf = Append(buf, 2, rev)
		buf = Append(buf, 3, po)
	}
}
