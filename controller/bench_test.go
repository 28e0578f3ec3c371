package controller

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/lbstore"
)

// BenchmarkPacketIn measures new-connection setups end to end through a
// session: a fake switch streams SYN packet-ins over net.Pipe and discards
// the flow-mods and packet-outs; each op is one setup. Its allocations
// count too, so it encodes nothing per op.
func BenchmarkPacketIn(b *testing.B) {
	h := startController(b, testnet.Config(nil), Options{})
	client, br := benchSwitch(b, h, 1, 2, 3)
	go io.Copy(io.Discard, br)

	// A batch of packet-ins that differ in the client address and port,
	// patched in place per batch: no two setups share a 5-tuple.
	const batch = 64
	syns := newPacketInBatch(b, testnet.ClientOF, testnet.SYN(b, 1), batch)
	sent := 0
	write := func(n int) {
		syns.write(b, client, n, sent, 12, 20) // client address and port as sources
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

// BenchmarkPacketInReply measures member replies that overtook the
// switch's cache revalidation: each op is a SYN-ACK packet-in, answered
// with the reverse NAT from the recent-setup cache. The setups before
// each batch are not timed. Its allocations count too.
func BenchmarkPacketInReply(b *testing.B) {
	reg := prometheus.NewRegistry()
	h := startController(b, testnet.Config(func(c *sdnlb.Config) { c.Members = c.Members[:1] }), Options{Registerer: reg})
	client, br := benchSwitch(b, h, 1)
	// The reader counts packet-outs and wakes the benchmark when the
	// count it waits for is reached: polling would time the sleeps.
	var outs, want atomic.Int64
	reached := make(chan struct{}, 1)
	go func() {
		var msg []byte
		for {
			m, err := ofp.ReadMessage(br, msg)
			if err != nil {
				return
			}
			if hd, _ := ofp.ParseHeader(m); hd.Type == ofp.TypePacketOut && outs.Add(1) == want.Load() {
				reached <- struct{}{}
			}
			msg = m
		}
	}()

	const batch = 64
	syns := newPacketInBatch(b, testnet.ClientOF, testnet.SYN(b, 1), batch)
	replies := newPacketInBatch(b, 1, testnet.SYNACK(b, 1, 1), batch)
	sent := 0
	round := func(n int) {
		b.StopTimer()
		syns.write(b, client, n, sent, 12, 20) // client address and port as sources
		waitSetups(b, h.c, sent+n)
		b.StartTimer()
		want.Store(int64(2 * (sent + n)))
		replies.write(b, client, n, sent, 16, 22) // and as destinations
		sent += n
		select {
		case <-reached:
		case <-time.After(time.Minute):
			b.Fatalf("%d packet-outs for %d setups and replies", outs.Load(), 2*sent)
		}
	}
	round(batch) // warm up maps and buffers

	b.ReportAllocs()
	b.ResetTimer()
	for left := b.N; left > 0; left -= batch {
		round(min(left, batch))
	}
	b.StopTimer()
	// A setup may take the entry of another in its batch, whose reply is
	// then switched by MAC. That must stay rare.
	if got := counter(b, reg, "sdnlb_controller_packet_ins_total", "reply"); got < 0.95*float64(sent) {
		b.Fatalf("%v of %d replies got the reverse NAT", got, sent)
	}
}

// packetInBatch is one packet-in repeated, to be patched per connection.
type packetInBatch struct {
	buf            []byte
	msgLen, ipv4At int
}

func newPacketInBatch(tb testing.TB, inPort uint32, frame []byte, n int) *packetInBatch {
	tb.Helper()
	tmpl := ofp.Append(nil, 0, &ofp.PacketIn{
		BufferID: ofp.NoBuffer, Reason: ofp.ReasonAction,
		Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchInPort(inPort)}}, Data: frame,
	})
	p := &packetInBatch{msgLen: len(tmpl), ipv4At: len(tmpl) - len(frame) + 14}
	for range n {
		p.buf = append(p.buf, tmpl...)
	}
	return p
}

// write sends the first n packet-ins for connections from+0 … from+n-1,
// each with the connection's client address at ipOff and port at portOff
// (offsets from the IPv4 header), as BenchmarkPacketIn numbers them.
func (p *packetInBatch) write(tb testing.TB, w io.Writer, n, from, ipOff, portOff int) {
	tb.Helper()
	for j := range n {
		m := p.buf[j*p.msgLen+p.ipv4At:]
		k := from + j
		binary.BigEndian.PutUint32(m[ipOff:], 0x0a010000+uint32(k/50000))
		binary.BigEndian.PutUint16(m[portOff:], uint16(1024+k%50000))
	}
	if _, err := w.Write(p.buf[:n*p.msgLen]); err != nil {
		tb.Fatal(err)
	}
}

// benchSwitch connects a switch over net.Pipe that knows members, and
// returns its end of the pipe and a reader of what the controller sends.
func benchSwitch(tb testing.TB, h *harness, members ...int) (net.Conn, *bufio.Reader) {
	tb.Helper()
	server, client := net.Pipe()
	tb.Cleanup(func() { client.Close() })
	h.ln.conns <- server
	br := bufio.NewReader(client)
	sw := &fakeSwitch{tb: tb, conn: client}
	benchHandshake(tb, sw, br)
	for _, i := range members {
		teachMemberRaw(tb, sw, br, i)
	}
	client.SetWriteDeadline(time.Time{}) // sendRaw's deadline would end long runs
	return client, br
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
		case ofp.TypeMultipartRequest: // no groups; no flows of sdnlb's
			_, m, _ := ofp.Decode(b)
			switch m.(*ofp.MultipartRequest).Body.(type) {
			case ofp.FlowStatsRequest:
				sw.send(h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{}})
			case ofp.GroupFeaturesRequest:
				sw.send(h.XID, ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadMultipart})
			}
			// The port description goes unanswered: its answer would
			// meet the controller's request for the flows on the pipe,
			// and the controller's reader waits for that write to end.
		case ofp.TypeBarrierRequest:
			sw.send(h.XID, ofp.BarrierReply{})
			return
		}
	}
}

// teachMemberRaw is teachMember on a raw conn.
func teachMemberRaw(tb testing.TB, sw *fakeSwitch, br *bufio.Reader, i int) {
	tb.Helper()
	teach := testnet.ARPFrame(tb, 2, testnet.MemberMAC(i), testnet.VIPMAC, fmt.Sprintf("10.0.0.%d", i), "10.0.0.100", testnet.VIPMAC)
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
		for _, m := range testnet.MembersByID(c.snap.Load()) {
			total += m.Cnt.Total.Load()
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

// BenchmarkStatsPoll measures the controller's side of a stats poll of a
// switch that holds live connections (newPolledSwitch): each op is one
// poll, from the requests to the last part of the replies decoded and
// read into the ledger. Past the flows a poll reads at once, a poll reads
// one shard of the connections' (dataplane.NextPoll), so the time is
// given per flow read. Besides it reports the heap the controller holds
// per connection, set up and read once, after a GC.
func BenchmarkStatsPoll(b *testing.B) {
	for _, flows := range []int{10_000, 100_000, 200_000} {
		b.Run(fmt.Sprintf("flows=%d", flows), func(b *testing.B) { benchStatsPoll(b, flows/2) })
	}
}

func benchStatsPoll(b *testing.B, conns int) {
	p := newPolledSwitch(b, conns)
	p.poll(b)
	perConn := float64(heapInUse()-p.heapBefore-uint64(p.sw.held)) / float64(conns-p.warm)

	read := 0
	for b.Loop() {
		read += p.poll(b)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(read), "ns/flow")
	b.ReportMetric(perConn, "heapB/conn") // after the loop, which resets what was reported
}

// polledSwitch is a switch over net.Pipe that holds the flows of live
// connections, for the controller's stats poll to read.
type polledSwitch struct {
	s      *switchConn
	client net.Conn
	sw     *holdingSwitch
	// heapBefore is the heap in use once warm connections were set up,
	// which warm up what every switch holds whatever its connections
	// (buffers, the recent-setup caches).
	heapBefore uint64
	warm       int
	none, echo []byte // an empty flow stats reply; an echo request
	selected   []uint64
}

// newPolledSwitch connects a switch that answers the stats poll with the
// flows of conns connections, set up through the controller first, so
// that it counts them as its own: the flows the controller installed for
// them, two per connection.
func newPolledSwitch(tb testing.TB, conns int) *polledSwitch {
	tb.Helper()
	h := startController(tb, testnet.Config(nil), Options{})
	client, br := benchSwitch(tb, h, 1, 2, 3)
	p := &polledSwitch{s: h.c.switchConns()[0], client: client, warm: 64,
		sw: &holdingSwitch{want: 2 * conns, full: make(chan struct{}), polls: make(chan []flowsAsked, 1), echoed: make(chan struct{}, 1),
			byCookie: map[uint64][]byte{}, flows: map[uint64]int{}},
		none: ofp.Append(nil, 0, ofp.MultipartReply{Body: ofp.FlowStatsReply{}}),
		echo: ofp.Append(nil, 0, ofp.EchoRequest{})}
	go p.sw.read(br)

	const batch = 64
	syns := newPacketInBatch(tb, testnet.ClientOF, testnet.SYN(tb, 1), batch)
	syns.write(tb, client, p.warm, 0, 12, 20) // client address and port as sources
	waitSetups(tb, h.c, p.warm)
	p.heapBefore = heapInUse()
	for sent := p.warm; sent < conns; sent += batch {
		syns.write(tb, client, min(batch, conns-sent), sent, 12, 20)
	}
	select {
	case <-p.sw.full:
	case <-time.After(time.Minute):
		tb.Fatalf("the controller installed fewer than %d connection flows in a minute", 2*conns)
	}
	return p
}

// poll has the controller poll the switch, answers each request with the
// flows it selects, and returns how many once the controller has read
// them all.
func (p *polledSwitch) poll(tb testing.TB) (flows int) {
	tb.Helper()
	p.s.pollStats()
	var asked []flowsAsked
	select {
	case asked = <-p.sw.polls:
	case <-time.After(time.Minute):
		tb.Fatal("no stats poll in a minute")
	}
	for _, a := range asked {
		selected := p.selected[:0] // cookies whose flows the request selects
		for cookie := range p.sw.byCookie {
			if cookie&a.mask == a.cookie&a.mask {
				selected = append(selected, cookie)
			}
		}
		p.selected = selected
		if len(selected) == 0 {
			setXID(p.none, a.xid, false)
			p.write(tb, p.none)
		}
		for i, cookie := range selected {
			reply := p.sw.byCookie[cookie]
			setXID(reply, a.xid, i < len(selected)-1)
			p.write(tb, reply)
			flows += p.sw.flows[cookie]
		}
	}
	// The controller reads in order: its echo reply follows the poll's
	// last part read.
	p.write(tb, p.echo)
	select {
	case <-p.sw.echoed:
	case <-time.After(time.Minute):
		tb.Fatal("the controller did not read the reply in a minute")
	}
	return flows
}

func (p *polledSwitch) write(tb testing.TB, b []byte) {
	if _, err := p.client.Write(b); err != nil {
		tb.Fatal(err)
	}
}

// setXID gives the messages in b xid and, if they are multipart replies,
// the flag that more follow, on all but the last unless more.
func setXID(b []byte, xid uint32, more bool) {
	for len(b) > 0 {
		hd, _ := ofp.ParseHeader(b)
		binary.BigEndian.PutUint32(b[4:], xid)
		if hd.Type == ofp.TypeMultipartReply {
			flags := ofp.MultipartReplyMore
			if !more && int(hd.Length) == len(b) {
				flags = 0
			}
			binary.BigEndian.PutUint16(b[ofp.HeaderLen+2:], flags)
		}
		b = b[hd.Length:]
	}
}

// heapInUse is the heap in use after a GC.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// holdingSwitch is the switch side of BenchmarkStatsPoll: it keeps the
// connection flows the controller installs as the flow stats replies of
// a switch that holds them, by cookie, which is all a poll's requests of
// connections select by, and tells the requests of each stats poll and
// the echo replies it reads.
type holdingSwitch struct {
	want int           // connection flows to hold before full is closed
	full chan struct{} // closed once byCookie holds them
	// byCookie holds the flow stats replies of the flows of each cookie,
	// 256 a part; flows counts them.
	byCookie map[uint64][]byte
	flows    map[uint64]int
	held     int               // the bytes of byCookie
	polls    chan []flowsAsked // the flow stats requests of each poll
	echoed   chan struct{}     // each echo reply
}

// flowsAsked is a flow stats request: its xid, and the cookie it selects.
type flowsAsked struct {
	xid          uint32
	cookie, mask uint64
}

// flowsPerPart keeps a reply part within an OpenFlow message's 64 KiB: a
// connection flow takes about 200 bytes.
const flowsPerPart = 256

func (sw *holdingSwitch) read(br *bufio.Reader) {
	parts := map[uint64][]ofp.FlowStats{}
	var asked []flowsAsked
	n := 0
	for {
		m, err := ofp.ReadMessage(br, nil) // a buffer each: parts alias them
		if err != nil {
			return
		}
		hd, _ := ofp.ParseHeader(m)
		switch hd.Type {
		case ofp.TypeFlowMod:
			if n == sw.want {
				continue
			}
			_, dm, _ := ofp.Decode(m)
			fm := dm.(*ofp.FlowMod)
			if cat, _, _, _ := model.CookieParts(fm.Cookie); cat != model.CatConn && cat != model.CatConnReply {
				continue
			}
			c := fm.Cookie
			parts[c] = append(parts[c], ofp.FlowStats{TableID: fm.TableID, DurationSec: 1, Priority: fm.Priority,
				IdleTimeout: fm.IdleTimeout, HardTimeout: fm.HardTimeout, Flags: fm.Flags, Cookie: fm.Cookie,
				PacketCount: 5, ByteCount: 500, Match: fm.Match, Instructions: fm.Instructions})
			sw.flows[c]++
			if len(parts[c]) == flowsPerPart {
				sw.byCookie[c] = ofp.Append(sw.byCookie[c], 0, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: parts[c]}})
				parts[c] = parts[c][:0]
			}
			if n++; n == sw.want {
				for c := range parts {
					if len(parts[c]) > 0 {
						sw.byCookie[c] = ofp.Append(sw.byCookie[c], 0, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: parts[c]}})
					}
					sw.held += cap(sw.byCookie[c])
				}
				parts = nil // they hold every flow-mod read
				close(sw.full)
			}
		case ofp.TypeMultipartRequest:
			_, dm, _ := ofp.Decode(m)
			switch r := dm.(*ofp.MultipartRequest).Body.(type) {
			case ofp.FlowStatsRequest:
				asked = append(asked, flowsAsked{xid: hd.XID, cookie: r.Cookie, mask: r.CookieMask})
			case ofp.PortStatsRequest: // it follows a poll's flow stats requests
				sw.polls <- asked
				asked = asked[:0] // the next poll's come once the poll read these
			}
		case ofp.TypeEchoReply:
			sw.echoed <- struct{}{}
		}
	}
}

// BenchmarkHealthEvent measures what a member's health change costs the
// controller at 10,000 members (100 VIPs with a pool of 100 each, in an
// SQLite store): from the store's event to the flow-mods in the outbox of
// the one switch connected. Each op takes a member down or back up; the
// store write that makes the event is not timed.
func BenchmarkHealthEvent(b *testing.B) {
	const pools, perPool = 100, 100
	ctx := context.Background()
	db, err := lbstore.Open("file:" + filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	cfg := &sdnlb.Config{}
	for i := range pools {
		v := sdnlb.NewVIP()
		v.ID, v.Address, v.Port, v.PoolID = fmt.Sprintf("vip-%d", i), fmt.Sprintf("10.9.%d.%d", i/250, i%250+1), 80, fmt.Sprintf("pool-%d", i)
		p := sdnlb.NewPool()
		p.ID, p.VIPID = v.PoolID, v.ID
		cfg.VIPs, cfg.Pools = append(cfg.VIPs, v), append(cfg.Pools, p)
		for j := range perPool {
			m := sdnlb.NewMember()
			m.ID, m.PoolID, m.Address, m.Port = fmt.Sprintf("%s-m%d", p.ID, j), p.ID, fmt.Sprintf("10.%d.%d.%d", 10+i/100, i%100, j+1), 8080
			cfg.Members = append(cfg.Members, m)
		}
	}
	if _, err := lbstore.NewConfigService(db).ApplyConfig(ctx, cfg, sdnlb.ApplyOptions{}); err != nil {
		b.Fatal(err)
	}
	// The controller's own feed stays quiet: the benchmark hands it the
	// events, so that only applying them is timed.
	h := startControllerOn(b, quietSource{lbstore.NewConfigService(db)}, Options{})
	sw, _ := h.connect(b, 1)
	go func() {
		for range sw.msgs {
		}
	}()
	events, unsubscribe := lbstore.NewEventService(db).Subscribe()
	defer unsubscribe()
	health := lbstore.NewMemberHealthService(db)

	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		member := cfg.Members[i%len(cfg.Members)].ID
		status := [2]sdnlb.MemberStatus{sdnlb.MemberDown, sdnlb.MemberUp}[i/len(cfg.Members)%2]
		if err := health.SetMemberHealth(ctx, member, sdnlb.MemberHealth{Status: status}); err != nil {
			b.Fatal(err)
		}
		ev := <-events
		b.StartTimer()
		if err := h.c.apply(ctx, []sdnlb.Event{ev}); err != nil {
			b.Fatal(err)
		}
	}
}

// quietSource is a configuration whose change feed never speaks.
type quietSource struct{ *lbstore.ConfigService }

func (quietSource) Subscribe() (<-chan sdnlb.Event, func()) { return nil, func() {} }
