//go:build e2e

// Package e2e holds end-to-end tests that drive a real Open vSwitch (userspace
// datapath) with hosts in network namespaces. It needs root, ovs-vswitchd,
// iproute2 and ethtool; everything it creates is private to one test run.
// The bed itself (switch, hosts, servers, the sdnlb process) is
// internal/testbed, which the demo shares.
package e2e

import (
	"io"
	"testing"

	"github.com/sdnlb/sdnlb/internal/testbed"
)

type (
	Switch     = testbed.Switch
	Host       = testbed.Host
	HTTPServer = testbed.HTTPServer
	UDPServer  = testbed.UDPServer
	sdnlbProc  = testbed.SDNLB
)

// apiTimeout bounds one API request.
const apiTimeout = testbed.APITimeout

// NewSwitch starts a private bridge that the test's cleanup removes.
func NewSwitch(tb testing.TB) *Switch {
	tb.Helper()
	return testbed.NewSwitch(tb)
}

// readAll is io.ReadAll with a size cap, for test servers' peers.
func readAll(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, 1<<20))
}
