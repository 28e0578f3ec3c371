package health

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
)

const icmpHeaderLen = 8

// icmpFamily is what ICMP echo over IPv4 (RFC 792) and ICMPv6 echo
// (RFC 4443) do differently.
type icmpFamily struct {
	name             string // "ICMP" or "ICMPv6", in errors
	network, address string // of the raw socket
	request, reply   byte   // the echo messages' types
	// checksum: the sender fills in the checksum. The kernel does for
	// ICMPv6, whose sum covers the IPv6 header's addresses.
	checksum bool
}

var (
	icmp4 = icmpFamily{name: "ICMP", network: "ip4:icmp", address: "0.0.0.0", request: 8, reply: 0, checksum: true}
	icmp6 = icmpFamily{name: "ICMPv6", network: "ip6:ipv6-icmp", address: "::", request: 128, reply: 129}
)

// pingers runs PING probes with the pinger of the member's address family.
type pingers struct{ v4, v6 *pinger }

func newPingers(log *slog.Logger) *pingers {
	return &pingers{v4: newPinger(icmp4, log), v6: newPinger(icmp6, log)}
}

func (ps *pingers) probe(ctx context.Context, t target) error {
	if t.Addr.Is4() {
		return ps.v4.probe(ctx, t)
	}
	return ps.v6.probe(ctx, t)
}

func (ps *pingers) reset() { ps.v4.reset(); ps.v6.reset() }
func (ps *pingers) close() { ps.v4.close(); ps.v6.close() }

// pinger runs the PING probes of one address family over one raw socket
// shared by all of them, opened at the first such probe (it needs root or
// CAP_NET_RAW). Replies are matched to the waiting probe by identifier and
// sequence (one 32-bit key, so keys do not wrap within any timeout), source
// address, and a per-process token in the payload, which tells our echoes
// from other programs' pings that the raw socket also sees.
type pinger struct {
	family icmpFamily
	token  [8]byte
	listen func() (net.PacketConn, error)
	log    *slog.Logger

	mu      sync.Mutex
	conn    net.PacketConn
	openErr error
	closed  bool
	next    uint32 // key of the next request: identifier<<16 | sequence
	waiting map[uint32]echoWaiter
	done    chan struct{} // closed when the reader returns
}

type echoWaiter struct {
	from  netip.Addr
	reply chan struct{}
}

func newPinger(f icmpFamily, log *slog.Logger) *pinger {
	p := &pinger{family: f, waiting: make(map[uint32]echoWaiter), log: log}
	p.listen = func() (net.PacketConn, error) { return net.ListenPacket(f.network, f.address) }
	_, _ = rand.Read(p.token[:])
	p.next = binary.BigEndian.Uint32(p.token[:4])
	return p
}

// open returns the shared socket, opening it on first use.
func (p *pinger) open() (net.PacketConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return nil, net.ErrClosed
	case p.conn != nil || p.openErr != nil:
		return p.conn, p.openErr
	}
	conn, err := p.listen()
	if err != nil {
		p.openErr = fmt.Errorf("open %s socket (PING monitors need root or CAP_NET_RAW): %w", p.family.name, err)
		p.log.Error("PING monitors cannot run: their members will be DOWN", "family", p.family.name, "err", p.openErr)
		return nil, p.openErr
	}
	p.conn, p.done = conn, make(chan struct{})
	go p.read(conn)
	return conn, nil
}

// reset makes a closed pinger usable again, for a new run of the engine.
func (p *pinger) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed, p.conn, p.openErr = false, nil, nil
	p.waiting = make(map[uint32]echoWaiter)
}

func (p *pinger) close() {
	p.mu.Lock()
	p.closed = true
	conn, done := p.conn, p.done
	p.mu.Unlock()
	if conn != nil {
		_ = conn.Close()
		<-done
	}
}

func (p *pinger) probe(ctx context.Context, t target) error {
	if !t.Addr.IsValid() {
		return errors.New("the member's address is not an IP address")
	}
	conn, err := p.open()
	if err != nil {
		return err
	}
	// Replies come from the address without its zone.
	key, reply := p.register(t.Addr.WithZone(""))
	defer p.unregister(key)
	msg := p.family.echoRequest(key, p.token[:])
	what := strings.ToLower(p.family.name) + " echo"
	if _, err := conn.WriteTo(msg, &net.IPAddr{IP: t.Addr.AsSlice(), Zone: t.Addr.Zone()}); err != nil {
		return &netError{err: fmt.Errorf("%s: %w", what, unwrapOp(err))}
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return &netError{err: fmt.Errorf("%s: no reply within the timeout", what)}
	}
}

// register reserves a key no probe in flight uses.
func (p *pinger) register(to netip.Addr) (uint32, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		key := p.next
		p.next++
		if _, used := p.waiting[key]; !used {
			w := echoWaiter{from: to, reply: make(chan struct{})}
			p.waiting[key] = w
			return key, w.reply
		}
	}
}

func (p *pinger) unregister(key uint32) {
	p.mu.Lock()
	delete(p.waiting, key)
	p.mu.Unlock()
}

// read hands echo replies to their probes until the socket closes.
func (p *pinger) read(conn net.PacketConn) {
	defer close(p.done)
	buf := make([]byte, 1500)
	for {
		n, from, err := conn.ReadFrom(buf)
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		key, ok := p.family.parseEchoReply(buf[:n], p.token[:])
		ipAddr, isIP := from.(*net.IPAddr)
		if !ok || !isIP {
			continue
		}
		src, _ := netip.AddrFromSlice(ipAddr.IP)
		p.mu.Lock()
		if w, found := p.waiting[key]; found && w.from == src.Unmap() {
			close(w.reply)
			delete(p.waiting, key)
		}
		p.mu.Unlock()
	}
}

// echoRequest builds an echo request carrying key and payload.
func (f icmpFamily) echoRequest(key uint32, payload []byte) []byte {
	b := make([]byte, icmpHeaderLen+len(payload))
	b[0] = f.request
	binary.BigEndian.PutUint32(b[4:8], key) // identifier, sequence
	copy(b[icmpHeaderLen:], payload)
	if f.checksum {
		binary.BigEndian.PutUint16(b[2:4], checksum(b))
	}
	return b
}

// parseEchoReply returns the key of an echo reply whose payload starts
// with token; ok is false for any other message.
func (f icmpFamily) parseEchoReply(b, token []byte) (key uint32, ok bool) {
	if len(b) < icmpHeaderLen+len(token) || b[0] != f.reply || b[1] != 0 {
		return 0, false
	}
	if string(b[icmpHeaderLen:icmpHeaderLen+len(token)]) != string(token) {
		return 0, false
	}
	return binary.BigEndian.Uint32(b[4:8]), true
}

// checksum is the Internet checksum (RFC 1071) of b.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
