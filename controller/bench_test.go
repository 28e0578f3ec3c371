package controller

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// BenchmarkPacketIn measures new-connection setups end to end through a
// session: a fake switch streams SYN packet-ins over net.Pipe and discards
// the flow-mods and packet-outs; each op is one setup. Its allocations
// count too, so it encodes nothing per op.
func BenchmarkPacketIn(b *testing.B) {
	h := startController(b, testConfig(nil), Options{})
	server, client := net.Pipe()
	b.Cleanup(func() { client.Close() })
	h.ln.conns <- server
	br := bufio.NewReader(client)
	sw := &fakeSwitch{tb: b, conn: client}
	benchHandshake(b, sw, br)
	for i := 1; i <= 3; i++ {
		teachMemberRaw(b, sw, br, i)
	}
	go io.Copy(io.Discard, br)

	// A batch of packet-ins that differ in the client address and port,
	// patched in place per batch: no two setups share a 5-tuple.
	const batch = 64
	tmpl := ofp.Append(nil, 0, &ofp.PacketIn{
		BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(clientOF)}}, Data: syn(b, 1),
	})
	frameAt := len(tmpl) - len(syn(b, 1))
	srcIPAt, sportAt := frameAt+14+12, frameAt+14+20
	buf := make([]byte, 0, batch*len(tmpl))
	for range batch {
		buf = append(buf, tmpl...)
	}
	sent := 0
	write := func(n int) {
		for j := range n {
			m := buf[j*len(tmpl):]
			k := sent + j
			binary.BigEndian.PutUint32(m[srcIPAt:], 0x0a010000+uint32(k/50000))
			binary.BigEndian.PutUint16(m[sportAt:], uint16(1024+k%50000))
		}
		if _, err := client.Write(buf[:n*len(tmpl)]); err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	write(batch) // warm up maps and buffers
	waitSetups(b, h.c, sent)

	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; left -= batch {
		write(min(left, batch))
	}
	waitSetups(b, h.c, sent)
}

// benchHandshake plays the switch side of the handshake on a raw conn.
func benchHandshake(tb testing.TB, sw *fakeSwitch, br *bufio.Reader) {
	tb.Helper()
	// net.Pipe does not buffer: take the controller's hello before
	// sending ours.
	if _, err := ofp.ReadMessage(br, nil); err != nil {
		tb.Fatal(err)
	}
	sw.send(0, ofp.Hello{Versions: []uint8{ofp.Version}})
	for {
		b, err := ofp.ReadMessage(br, nil)
		if err != nil {
			tb.Fatal(err)
		}
		h, _ := ofp.ParseHeader(b)
		switch h.Type {
		case ofp.TypeFeaturesRequest:
			sw.send(h.XID, ofp.FeaturesReply{DatapathID: 1})
		case ofp.TypeBarrierRequest:
			sw.send(h.XID, ofp.BarrierReply{})
			return
		}
	}
}

// teachMemberRaw is teachMember on a raw conn.
func teachMemberRaw(tb testing.TB, sw *fakeSwitch, br *bufio.Reader, i int) {
	tb.Helper()
	teach := arpFrame(tb, 2, memberMAC(i), vipMAC, fmt.Sprintf("10.0.0.%d", i), "10.0.0.100", vipMAC)
	sw.packetIn(uint32(i), teach)
	for {
		b, err := ofp.ReadMessage(br, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if h, _ := ofp.ParseHeader(b); h.Type == ofp.TypeFlowMod {
			return
		}
	}
}

// waitSetups waits until the controller has set up n connections.
func waitSetups(tb testing.TB, c *Controller, n int) {
	tb.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var total uint64
		for _, m := range c.snap.Load().members {
			total += m.cnt.total.Load()
		}
		if total >= uint64(n) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d of %d setups done", total, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
