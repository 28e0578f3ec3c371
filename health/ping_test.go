package health

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

func TestChecksum(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want uint16
	}{
		// RFC 1071 section 3's example: the sum is 0xddf2, its complement 0x220d.
		{"RFC1071", []byte{0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7}, 0x220d},
		{"OddLength", []byte{0x01}, ^uint16(0x0100)},
		{"Empty", nil, 0xffff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checksum(tt.in); got != tt.want {
				t.Fatalf("checksum = %#04x, want %#04x", got, tt.want)
			}
		})
	}
}

func TestEchoRequest(t *testing.T) {
	token := []byte("12345678")
	tests := []struct {
		name     string
		family   icmpFamily
		typ      byte
		checksum bool // filled in; else left to the kernel, zero
	}{
		{"ICMP", icmp4, 8, true},
		{"ICMPv6", icmp6, 128, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.family.echoRequest(0xbeef0102, token)
			want := []byte{
				tt.typ, 0, // type echo request, code 0
				0, 0, // checksum, checked below
				0xbe, 0xef, // identifier
				0x01, 0x02, // sequence
			}
			want = append(want, token...)
			if !bytes.Equal(b[4:], want[4:]) || b[0] != want[0] || b[1] != want[1] {
				t.Fatalf("echo request % x, want % x (checksum aside)", b, want)
			}
			switch {
			case tt.checksum && checksum(b) != 0:
				t.Fatalf("checksum field %#04x does not make the message sum to zero", b[2:4])
			case !tt.checksum && (b[2] != 0 || b[3] != 0):
				t.Fatalf("checksum field %#04x, want zero for the kernel to fill in", b[2:4])
			}
		})
	}
}

func TestParseEchoReply(t *testing.T) {
	token := []byte("12345678")
	for _, fam := range []struct {
		f, other    icmpFamily
		unreachable byte // destination unreachable's type
	}{
		{icmp4, icmp6, 3},
		{icmp6, icmp4, 1},
	} {
		f := fam.f
		t.Run(f.name, func(t *testing.T) {
			reply := func(typ byte, key uint32, payload []byte) []byte {
				b := f.echoRequest(key, payload)
				b[0] = typ
				return b
			}
			tests := []struct {
				name    string
				in      []byte
				wantKey uint32
				wantOK  bool
			}{
				{"OK", reply(f.reply, 0x00070009, token), 0x00070009, true},
				{"ErrRequest", reply(f.request, 1, token), 0, false},
				{"ErrOtherToken", reply(f.reply, 1, []byte("abcdefgh")), 0, false},
				{"ErrShort", reply(f.reply, 1, token)[:12], 0, false},
				{"ErrUnreachable", reply(fam.unreachable, 1, token), 0, false},
				{"ErrOtherFamilysReply", reply(fam.other.reply, 1, token), 0, false},
				{"ErrEmpty", nil, 0, false},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					key, ok := f.parseEchoReply(tt.in, token)
					if key != tt.wantKey || ok != tt.wantOK {
						t.Fatalf("parseEchoReply = %#x, %v; want %#x, %v", key, ok, tt.wantKey, tt.wantOK)
					}
				})
			}
		})
	}
}

// fakeICMPConn stands in for the raw socket: answer decides what comes
// back for each echo request written.
type fakeICMPConn struct {
	answer  func(req []byte, to netip.Addr) (reply []byte, from netip.Addr, ok bool)
	packets chan fakePacket
	closed  chan struct{}
	once    sync.Once
}

type fakePacket struct {
	b    []byte
	from netip.Addr
}

func newFakeICMPConn(answer func([]byte, netip.Addr) ([]byte, netip.Addr, bool)) *fakeICMPConn {
	return &fakeICMPConn{answer: answer, packets: make(chan fakePacket, 64), closed: make(chan struct{})}
}

func (c *fakeICMPConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	to, _ := netip.AddrFromSlice(addr.(*net.IPAddr).IP)
	c.packets <- fakePacket{b: b, from: to} // the raw socket sees our own request too
	if reply, from, ok := c.answer(b, to.Unmap()); ok {
		c.packets <- fakePacket{b: reply, from: from}
	}
	return len(b), nil
}

func (c *fakeICMPConn) ReadFrom(b []byte) (int, net.Addr, error) {
	select {
	case p := <-c.packets:
		return copy(b, p.b), &net.IPAddr{IP: p.from.AsSlice()}, nil
	case <-c.closed:
		return 0, nil, net.ErrClosed
	}
}

func (c *fakeICMPConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *fakeICMPConn) LocalAddr() net.Addr              { return &net.IPAddr{} }
func (c *fakeICMPConn) SetDeadline(time.Time) error      { return nil }
func (c *fakeICMPConn) SetReadDeadline(time.Time) error  { return nil }
func (c *fakeICMPConn) SetWriteDeadline(time.Time) error { return nil }

// echoAnswer turns an echo request of family f into its reply,
// optionally altered.
func echoAnswer(f icmpFamily, alter func(reply []byte)) func([]byte, netip.Addr) ([]byte, netip.Addr, bool) {
	return func(req []byte, to netip.Addr) ([]byte, netip.Addr, bool) {
		reply := append([]byte(nil), req...)
		reply[0] = f.reply
		alter(reply)
		return reply, to, true
	}
}

// icmpOf is the ICMP family of addr.
func icmpOf(addr netip.Addr) icmpFamily {
	if addr.Is4() {
		return icmp4
	}
	return icmp6
}

func TestPinger_Matching(t *testing.T) {
	forEachFamily(t, func(t *testing.T, lo netip.Addr) {
		f := icmpOf(lo)
		member, elsewhere := netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("10.0.0.6")
		if lo.Is6() {
			member, elsewhere = netip.MustParseAddr("fd00::5"), netip.MustParseAddr("fd00::6")
		}
		tests := []struct {
			name    string
			answer  func([]byte, netip.Addr) ([]byte, netip.Addr, bool)
			wantErr string
		}{
			{"OK", echoAnswer(f, func([]byte) {}), ""},
			{"ErrNoReply", func([]byte, netip.Addr) ([]byte, netip.Addr, bool) { return nil, netip.Addr{}, false }, "no reply within the timeout"},
			{"ErrReplyFromElsewhere", func(req []byte, _ netip.Addr) ([]byte, netip.Addr, bool) {
				reply, _, ok := echoAnswer(f, func([]byte) {})(req, member)
				return reply, elsewhere, ok
			}, "no reply"},
			{"ErrOtherSequence", echoAnswer(f, func(b []byte) { b[7]++ }), "no reply"},
			{"ErrOtherProgramsToken", echoAnswer(f, func(b []byte) { b[icmpHeaderLen]++ }), "no reply"},
			{"ErrNotAReply", echoAnswer(f, func(b []byte) { b[0] = 3 }), "no reply"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				p := newPinger(f, slog.New(slog.DiscardHandler))
				p.listen = func() (net.PacketConn, error) { return newFakeICMPConn(tt.answer), nil }
				defer p.close()
				err := runProbe(t, p, target{Type: sdnlb.MonitorPING, Addr: member}, 100*time.Millisecond)
				checkProbeErr(t, err, tt.wantErr)
				p.mu.Lock()
				n := len(p.waiting)
				p.mu.Unlock()
				if n != 0 {
					t.Fatalf("%d echoes still registered after the probe returned", n)
				}
			})
		}
	})
}

// TestPingers_ByFamily checks that each member is pinged on the socket of
// its address family.
func TestPingers_ByFamily(t *testing.T) {
	ps := newPingers(slog.New(slog.DiscardHandler))
	defer ps.close()
	for _, p := range []*pinger{ps.v4, ps.v6} {
		p.listen = func() (net.PacketConn, error) { return newFakeICMPConn(echoAnswer(p.family, func([]byte) {})), nil }
	}
	forEachFamily(t, func(t *testing.T, lo netip.Addr) {
		if err := runProbe(t, ps, target{Type: sdnlb.MonitorPING, Addr: lo}, probeTimeout); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ErrNoAddress", func(t *testing.T) {
		checkProbeErr(t, runProbe(t, ps, target{Type: sdnlb.MonitorPING}, probeTimeout), "not an IP address")
	})
}

func TestPinger_OpenOnceAndFail(t *testing.T) {
	forEachFamily(t, func(t *testing.T, lo netip.Addr) {
		opens := 0
		p := newPinger(icmpOf(lo), slog.New(slog.DiscardHandler))
		p.listen = func() (net.PacketConn, error) {
			opens++
			return nil, errors.New("operation not permitted")
		}
		defer p.close()
		for range 3 {
			checkProbeErr(t, runProbe(t, p, target{Type: sdnlb.MonitorPING, Addr: lo}, probeTimeout),
				"open "+p.family.name+" socket (PING monitors need root or CAP_NET_RAW)")
		}
		if opens != 1 {
			t.Fatalf("the socket was opened %d times, want once", opens)
		}
	})
}

func TestPinger_Loopback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("PING probes need a raw ICMP socket: run as root (or with CAP_NET_RAW)")
	}
	forEachFamily(t, func(t *testing.T, lo netip.Addr) {
		p := newPinger(icmpOf(lo), slog.New(slog.DiscardHandler))
		defer p.close()
		ping := target{Type: sdnlb.MonitorPING, Addr: lo}
		t.Run("OK", func(t *testing.T) {
			if err := runProbe(t, p, ping, probeTimeout); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("ConcurrentShareOneSocket", func(t *testing.T) {
			var wg sync.WaitGroup
			errs := make(chan error, 50)
			for range 50 {
				wg.Go(func() { errs <- runProbe(t, p, ping, probeTimeout) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Error(err)
				}
			}
		})
	})
}
