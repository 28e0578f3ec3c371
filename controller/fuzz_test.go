package controller

import (
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

// fuzzConn is a switch connection past its handshake, speaking 1.3 or, on
// a 1.0 wire, 1.0, whose switch end discards everything, with the test
// configuration loaded.
func fuzzConn(tb testing.TB, v10 bool) *switchConn {
	tb.Helper()
	c := New(newFakeSource(nil), Options{})
	snap, skipped := c.builder.Build(testnet.Config(func(cfg *sdnlb.Config) {
		cfg.VIPs = append(cfg.VIPs, &sdnlb.VIP{ID: "v2", Address: "10.0.0.101", Protocol: sdnlb.ProtocolUDP, Port: 53,
			AdminStateUp: true, PoolID: "p1", ConnectionLimit: 3,
			SessionPersistence: &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP, Timeout: 10}})
		cfg.VIPs = append(cfg.VIPs, &sdnlb.VIP{ID: "v3", Address: "10.0.0.102", Protocol: sdnlb.ProtocolICMP, AdminStateUp: true, PoolID: "p1"})
		cfg.VIPs = append(cfg.VIPs, &sdnlb.VIP{ID: "v6", Address: testnet.VIP6, Protocol: sdnlb.ProtocolTCP, Port: 80, AdminStateUp: true,
			PoolID: "p6", ConnectionLimit: -1})
		cfg.Pools = append(cfg.Pools, &sdnlb.Pool{ID: "p6", VIPID: "v6", LBMethod: sdnlb.SourceIP, Dispatch: sdnlb.DispatchController,
			Protocol: sdnlb.ProtocolTCP, AdminStateUp: true, ClientIPv6Prefix: 64})
		cfg.Members = append(cfg.Members, &sdnlb.Member{ID: "m61", PoolID: "p6", Address: testnet.Member6(1), Port: 8080, Weight: 1, AdminStateUp: true})
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
	if v10 {
		w := &wire10{xids: &s.xids, selections: map[uint32]*cookieSelection{}}
		s.wire, s.out.Enc = w, w
		s.features.OneTable = true
	}
	s.dp = dataplane.New(c.dataplaneConfig(1, s.log, s.features))
	return s
}

// fuzzSeeds are valid messages a switch sends, to mutate from.
func fuzzSeeds(tb testing.TB) [][]byte {
	pin := func(port uint32, frame []byte) []byte {
		return ofp.Append(nil, 0, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(port)}}, Data: frame})
	}
	fwd := model.MakeCookie(model.CatConn, 1, 1)
	return [][]byte{
		pin(testnet.ClientOF, testnet.SYN(tb, 40000)),
		pin(testnet.ClientOF, testnet.TCPFrame(tb, testnet.TCPSeg{SrcMAC: testnet.ClientMAC, DstMAC: testnet.VIPMAC, Src: testnet.ClientIP, Dst: "10.0.0.100", Sport: 1, Dport: 80, ACK: true})),
		pin(testnet.ClientOF, testnet.UDPFrame(tb, testnet.ClientMAC, testnet.VIPMAC, testnet.ClientIP, "10.0.0.101", 5000, 53)),
		pin(1, testnet.ARPFrame(tb, 2, testnet.MemberMAC(1), testnet.VIPMAC, "10.0.0.1", "10.0.0.100", testnet.VIPMAC)),
		pin(testnet.ClientOF, testnet.ARPFrame(tb, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00")),
		pin(testnet.ClientOF, testnet.SYN6(tb, 40000)),
		ofp.Append(nil, 0, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction, Cookie: model.MakeCookie(model.CatVIP, 4, 0),
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(testnet.ClientOF), ofp.MatchCTLabel(model.AddressLabel(netip.MustParseAddr(testnet.Member6(1)))),
				ofp.MatchCTMark(8080, 0xffffffff)}}, Data: testnet.TooBigFrame(tb, "2001:db8:1::1", testnet.VIP6, testnet.Client6)}),
		ofp.Append(nil, 0, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction, Cookie: model.MakeCookie(model.CatVIP, 1, 0),
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(testnet.ClientOF)}}, Data: testnet.TooBigFrame(tb, "10.0.1.1", "10.0.0.100", testnet.ClientIP)}),
		pin(testnet.ClientOF, testnet.Solicitation(tb)),
		pin(1, testnet.NDFrame(tb, testnet.MemberMAC(1), "33:33:00:00:00:01", testnet.Member6(1), "ff02::1", model.NDAdvertisement, testnet.Member6(1), testnet.MemberMAC(1))),
		ofp.Append(nil, 0, &ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction, Cookie: model.MakeCookie(model.CatLLDP, 0, 0),
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(2)}}, Data: appendLLDP(nil, [6]byte{2}, 1, 3)}),
		ofp.Append(nil, 0, ofp.FlowRemoved{Cookie: fwd, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchIPv4Src([4]byte{10, 0, 1, 5})}}}),
		ofp.Append(nil, 0, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{{Cookie: fwd, ByteCount: 9}}}}),
		ofp.Append(nil, 0, ofp.MultipartReply{Body: ofp.PortDescReply{Ports: []ofp.Port{{PortNo: 1, Name: "p1"}}}}),
		ofp.Append(nil, 0, ofp.PortStatus{Reason: ofp.PortReasonDelete, Desc: ofp.Port{PortNo: 1}}),
		ofp.Append(nil, 0, ofp.EchoRequest{Data: []byte("x")}),
		ofp.Append(nil, 0, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadMatch, Code: 3}),
	}
}

// fuzzSeeds10 are valid messages a 1.0 switch sends, to mutate from.
func fuzzSeeds10(tb testing.TB) [][]byte {
	enc := func(m ofp.Message) []byte {
		b, err := ofp10.Append(nil, 0, m)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	nicira := func(m ofp.Message) []byte { // Open vSwitch's NXST_FLOW reply
		b, err := ofp10.AppendNicira(nil, 0, m)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	pin := func(port uint32, frame []byte) []byte {
		return enc(&ofp.PacketIn{BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(port)}}, Data: frame})
	}
	fwd := model.MakeCookie(model.CatConn, 1, 1)
	return [][]byte{
		pin(testnet.ClientOF, testnet.SYN(tb, 40000)),
		pin(1, testnet.ARPFrame(tb, 2, testnet.MemberMAC(1), testnet.VIPMAC, "10.0.0.1", "10.0.0.100", testnet.VIPMAC)),
		pin(testnet.ClientOF, testnet.ARPFrame(tb, 1, testnet.ClientMAC, "ff:ff:ff:ff:ff:ff", testnet.ClientIP, "10.0.0.100", "00:00:00:00:00:00")),
		pin(2, appendLLDP(nil, [6]byte{2}, 1, 3)),
		enc(ofp.FlowRemoved{Cookie: fwd, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPv4Src([4]byte{10, 0, 1, 5})}}}),
		enc(ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{{Cookie: fwd, ByteCount: 9}}}}),
		nicira(ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{{Cookie: model.MakeCookie(model.CatVIP, 1, 0),
			Priority: 1002, Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchEthType(0x0800), ofp.MatchIPProto(6),
				ofp.MatchTCPFlags(ofp.TCPFlagSYN, ofp.TCPFlagSYN|ofp.TCPFlagACK)}}}}}}),
		enc(ofp.MultipartReply{Body: ofp.PortStatsReply{Stats: []ofp.PortStats{{PortNo: 1, TxBytes: 9}}}}),
		enc(ofp.PortStatus{Reason: ofp.PortReasonDelete, Desc: ofp.Port{PortNo: 1}}),
		enc(ofp.EchoRequest{Data: []byte("x")}),
		enc(&ofp.ErrorMsg{ErrType: ofp.ErrTypeFlowModFailed, Code: ofp.FlowModFailedTableFull}),
	}
}

// FuzzSwitchConnHandle feeds one message from a switch to its connection:
// whatever the bytes, the connection handles them or reports an error,
// and never panics.
func FuzzSwitchConnHandle(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed[1], seed[ofp.HeaderLen:])
	}
	s := fuzzConn(f, false)
	f.Fuzz(func(t *testing.T, typ byte, body []byte) {
		s.receive(testnet.FrameMessage(ofp.Version, typ, body))
		s.flush()
	})
}

// FuzzSwitchConnHandle10 is FuzzSwitchConnHandle for a 1.0 switch, with a
// delete by cookie awaiting its flow read (xid 0, as every fuzzed message
// has) whenever none is.
func FuzzSwitchConnHandle10(f *testing.F) {
	for _, seed := range fuzzSeeds10(f) {
		f.Add(seed[1], seed[ofp.HeaderLen:])
	}
	s := fuzzConn(f, true)
	f.Fuzz(func(t *testing.T, typ byte, body []byte) {
		awaitDeleteRead(s)
		s.receive(testnet.FrameMessage(ofp10.Version, typ, body))
		s.flush()
	})
}

// awaitDeleteRead has s's 1.0 wire await the flow read of a delete by
// cookie at xid 0 unless it does.
func awaitDeleteRead(s *switchConn) {
	w := s.wire.(*wire10)
	w.mu.Lock()
	_, waiting := w.selections[0]
	w.mu.Unlock()
	if !waiting {
		w.register(0, &cookieSelection{cookie: model.MakeCookie(model.CatConn, 1, 0), mask: model.MaskApp | model.MaskConnCats | model.MaskVIP,
			delete: true, readded: map[ofp10.FlowKey]struct{}{}})
	}
}

// TestSwitchConn_GarbageAfterHello is the fuzz target's quick sibling for
// plain go test: seeded random mutations of real messages, every one
// through the same connection, in both versions.
func TestSwitchConn_GarbageAfterHello(t *testing.T) {
	t.Run("OpenFlow13", func(t *testing.T) { garbageAfterHello(t, fuzzConn(t, false), ofp.Version, fuzzSeeds(t)) })
	t.Run("OpenFlow10", func(t *testing.T) { garbageAfterHello(t, fuzzConn(t, true), ofp10.Version, fuzzSeeds10(t)) })
}

func garbageAfterHello(t *testing.T, s *switchConn, version uint8, seeds [][]byte) {
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
		if version == ofp10.Version {
			awaitDeleteRead(s)
		}
		s.receive(testnet.FrameMessage(version, m[1], m[ofp.HeaderLen:]))
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseLLDP: whatever the frame, parseLLDP reads it or refuses it, and
// never panics; what it reads, appendLLDP writes back the same.
func FuzzParseLLDP(f *testing.F) {
	for _, seed := range lldpSeeds() {
		f.Add(seed)
	}
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

// lldpSeeds are sdnlb's frames and the ways a forger or a truncation
// bends them.
func lldpSeeds() [][]byte {
	ours := appendLLDP(nil, [6]byte{2}, 0x1234, 7)
	tlvLen := func(b []byte, at int, n uint16) []byte {
		b = append([]byte(nil), b...)
		b[at] = b[at]&0xfe | byte(n>>8)
		b[at+1] = byte(n)
		return b
	}
	port := 14 + 2 + 1 + lldpChassisLen // the port id TLV's header
	withPort := func(id string) []byte {
		b := append([]byte(nil), ours[:port]...)
		b = appendTLVHeader(b, lldpTLVPortID, 1+len(id))
		b = append(append(b, lldpLocal), id...)
		return append(appendTLVHeader(b, lldpTLVTTL, 2), 0, 3, 0, 0)
	}
	nonHex := append([]byte(nil), ours...)
	nonHex[14+2+1+len(lldpChassisPrefix)] = 'g'
	return [][]byte{
		ours,
		appendLLDP(nil, [6]byte{2}, 0xfedcba9876543210, 0xfffffeff),
		ours[:14], ours[:port], ours[:port+3],
		tlvLen(ours, 14, 0x1ff), // a chassis id longer than the frame
		tlvLen(ours, port, 0),   // an empty port id
		withPort("4294967296"),  // past 32 bits
		withPort("-1"), withPort("+7"), withPort("007"), withPort(" 7"),
		nonHex,
	}
}

// FuzzLLDPIn: whatever frame arrives at whatever port, the topology holds
// only links between ports the switches reported, within its caps.
func FuzzLLDPIn(f *testing.F) {
	for _, seed := range lldpSeeds() {
		f.Add(uint32(1), seed)
	}
	f.Add(uint32(2), appendLLDP(nil, [6]byte{2}, 1, 1))
	f.Add(uint32(9), appendLLDP(nil, [6]byte{2}, 1, 1))
	f.Add(ofp.PortLocal, appendLLDP(nil, [6]byte{2}, 1, 2))
	s := fuzzConn(f, false)
	s.c.opts.MaxLinksPerSwitch = 2
	s.c.topo.caps = linkCaps{perSwitch: 2, total: 2}
	s.c.conns[s.dpid] = s
	s.ports.set(ofp.Port{PortNo: 1}, ofp.Port{PortNo: 2})
	f.Fuzz(func(t *testing.T, inPort uint32, frame []byte) {
		s.lldpIn(s.c.now(), &ofp.PacketIn{Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(inPort)}}, Data: frame})
		links := s.c.topo.links(s.c.now())
		if len(links) > 2 {
			t.Fatalf("%d links past the cap of 2", len(links))
		}
		for _, l := range links {
			for _, end := range []model.PortRef{l.src, l.dst} {
				if end.DPID != s.dpid || !s.ports.linkable(end.Port) {
					t.Fatalf("link %v ends at a port the switch did not report", l)
				}
			}
		}
	})
}
