package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/sdnlb/sdnlb"
)

// target is what one probe checks: a member seen through one monitor.
// It is comparable, so a reload can tell whether a probe must change.
type target struct {
	Type      sdnlb.MonitorType
	Addr      netip.Addr
	Port      int // 0 when neither the member nor its VIP has one
	Method    string
	Path      string
	Codes     string // expected_codes, parsed when probing
	TLSVerify bool
}

// prober runs one probe; a nil error is a success. It returns when ctx,
// which carries the monitor's timeout, is done.
type prober interface {
	probe(ctx context.Context, t target) error
}

var errNoPort = errors.New("no port to probe: the member's port is 0 and its pool has no VIP with a port")

func (t target) addrPort() (netip.AddrPort, error) {
	if !t.Addr.IsValid() {
		return netip.AddrPort{}, errors.New("the member's address is not an IP address")
	}
	if t.Port <= 0 || t.Port > 65535 {
		return netip.AddrPort{}, errNoPort
	}
	return netip.AddrPortFrom(t.Addr, uint16(t.Port)), nil
}

// tcpProber passes when a TCP connection opens within the timeout.
type tcpProber struct{ dialer net.Dialer }

func (p *tcpProber) probe(ctx context.Context, t target) error {
	ap, err := t.addrPort()
	if err != nil {
		return err
	}
	conn, err := p.dialer.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return &netError{err: fmt.Errorf("tcp connect: %w", unwrapOp(err))}
	}
	// Reset instead of a FIN: at thousands of probes a second, TIME_WAIT
	// sockets would pile up on the controller host (HAProxy does the same).
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	return conn.Close()
}

// unwrapOp drops net.OpError's "dial tcp 10.0.0.1:80:" prefix, which the
// member's address in every log line already says, and the system call's
// name: "connection refused" is what an operator needs.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	var sc *os.SyscallError
	if errors.As(err, &sc) && sc.Err != nil {
		err = sc.Err
	}
	return err
}
