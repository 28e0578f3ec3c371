package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// BenchmarkDataplane_Setup measures the decision alone: one SYN packet-in
// from a new client port in, the flow pair and the packet-out encoded into
// the outbox. No socket, no other goroutine.
func BenchmarkDataplane_Setup(b *testing.B) {
	d := newDecision(b, testnet.Config(nil))
	d.teach(1, 2, 3)
	frame := testnet.SYN(b, 1)
	pin := &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(testnet.ClientOF)}}, Data: frame}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		binary.BigEndian.PutUint32(frame[26:], 0x0a010000+uint32(i/50000)) // client address
		binary.BigEndian.PutUint16(frame[34:], uint16(1024+i%50000))       // and port
		d.dp.PacketIn(d.now, d.snap, pin, d.out)
		d.out.Reset()
	}
}
