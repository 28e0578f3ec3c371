package controller

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// fuzzConn is a switch connection past its handshake whose switch end
// discards everything, with the test configuration loaded.
func fuzzConn(tb testing.TB) *switchConn {
	tb.Helper()
	c := New(newFakeSource(nil), Options{})
	snap, skipped := c.builder.build(testConfig(func(cfg *sdnlb.Config) {
		cfg.VIPs = append(cfg.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.101", Protocol: sdnlb.ProtocolUDP, Port: 53,
			AdminStateUp: true, PoolID: "p1", ConnectionLimit: 3,
			SessionPersistence: &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 10}})
		cfg.VIPs = append(cfg.VIPs, &sdnlb.VIP{ID: "v3", Address: "10.0.0.102", Protocol: sdnlb.ProtocolICMP, AdminStateUp: true, PoolID: "p1"})
	}))
	if len(skipped) > 0 {
		tb.Fatal(skipped)
	}
	c.snap.Store(snap)
	server, client := net.Pipe()
	go io.Copy(io.Discard, client)
	tb.Cleanup(func() { server.Close(); client.Close() })
	s := newSwitchConn(c, server)
	s.dpid = 1
	s.dp = newDataplane(c.dataplaneConfig(1, s.log, switchFeatures{}))
	return s
}

// frameMessage makes b a message of type t with a correct header.
func frameMessage(t ofp.Type, body []byte) []byte {
	b := make([]byte, ofp.HeaderLen, ofp.HeaderLen+len(body))
	b[0], b[1] = ofp.Version, byte(t)
	binary.BigEndian.PutUint16(b[2:], uint16(min(ofp.HeaderLen+len(body), ofp.MaxMessageLen)))
	return append(b, body[:min(len(body), ofp.MaxMessageLen-ofp.HeaderLen)]...)
}

// fuzzSeeds are valid messages a switch sends, to mutate from.
func fuzzSeeds(tb testing.TB) [][]byte {
	pin := func(port uint32, frame []byte) []byte {
		return ofp.Append(nil, 0, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(port)}}, Data: frame})
	}
	fwd := makeCookie(catConn, 1, 1)
	return [][]byte{
		pin(clientOF, syn(tb, 40000)),
		pin(clientOF, tcpFrame(tb, tcpSeg{srcMAC: clientMAC, dstMAC: vipMAC, src: clientIP, dst: "10.0.0.100", sport: 1, dport: 80, ack: true})),
		pin(clientOF, udpFrame(tb, clientMAC, vipMAC, clientIP, "10.0.0.101", 5000, 53)),
		pin(1, arpFrame(tb, 2, memberMAC(1), vipMAC, "10.0.0.1", "10.0.0.100", vipMAC)),
		pin(clientOF, arpFrame(tb, 1, clientMAC, "ff:ff:ff:ff:ff:ff", clientIP, "10.0.0.100", "00:00:00:00:00:00")),
		ofp.Append(nil, 0, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction, Cookie: makeCookie(catLLDP, 0, 0),
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(2)}}, Data: appendLLDP(nil, [6]byte{2}, 1, 3)}),
		ofp.Append(nil, 0, ofp.FlowRemoved{Cookie: fwd, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchIPv4Src([4]byte{10, 0, 1, 5})}}}),
		ofp.Append(nil, 0, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{{Cookie: fwd, ByteCount: 9}}}}),
		ofp.Append(nil, 0, ofp.MultipartReply{Body: ofp.PortDescReply{Ports: []ofp.Port{{PortNo: 1, Name: "p1"}}}}),
		ofp.Append(nil, 0, ofp.PortStatus{Reason: ofp.PortReasonDelete, Desc: ofp.Port{PortNo: 1}}),
		ofp.Append(nil, 0, ofp.EchoRequest{Data: []byte("x")}),
		ofp.Append(nil, 0, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadMatch, Code: 3}),
	}
}

// FuzzSwitchConnHandle feeds one message from a switch to its connection:
// whatever the bytes, the connection handles them or reports an error,
// and never panics.
func FuzzSwitchConnHandle(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed[1], seed[ofp.HeaderLen:])
	}
	s := fuzzConn(f)
	f.Fuzz(func(t *testing.T, typ byte, body []byte) {
		s.receive(frameMessage(ofp.Type(typ), body))
		s.flush()
	})
}

// TestSwitchConn_GarbageAfterHello is the fuzz target's quick sibling for
// plain go test: seeded random mutations of real messages, every one
// through the same connection.
func TestSwitchConn_GarbageAfterHello(t *testing.T) {
	s := fuzzConn(t)
	seeds := fuzzSeeds(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		m := append([]byte(nil), seeds[rng.IntN(len(seeds))]...)
		for range 1 + rng.IntN(4) {
			if len(m) == 0 {
				break
			}
			switch i := rng.IntN(len(m)); rng.IntN(3) {
			case 0:
				m[i] = byte(rng.Uint32())
			case 1:
				m = m[:i]
			default:
				m = append(m, byte(rng.Uint32()))
			}
		}
		if len(m) < ofp.HeaderLen {
			continue
		}
		s.receive(frameMessage(ofp.Type(m[1]), m[ofp.HeaderLen:]))
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseLLDP: whatever the frame, parseLLDP reads it or refuses it, and
// never panics; what it reads, appendLLDP writes back the same.
func FuzzParseLLDP(f *testing.F) {
	f.Add(appendLLDP(nil, [6]byte{2}, 0x1234, 7))
	f.Fuzz(func(t *testing.T, frame []byte) {
		dpid, port, ok := parseLLDP(frame)
		if !ok {
			return
		}
		if d, p, ok := parseLLDP(appendLLDP(nil, [6]byte{2}, dpid, port)); !ok || d != dpid || p != port {
			t.Fatalf("%x:%d read back as %x:%d", dpid, port, d, p)
		}
	})
}
