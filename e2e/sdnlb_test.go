//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/sdnlb/sdnlb/internal/testbed"
)

// sdnlbBinary is the race-instrumented sdnlb that TestMain builds once, so
// that e2e traffic also hunts data races in the controller and monitors.
// SDNLB_E2E_BINARY names a prebuilt one instead (a release build, or a
// candidate fix built from another tree).
var sdnlbBinary = os.Getenv("SDNLB_E2E_BINARY")

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// Without root every test skips in NewSwitch: no need to build.
	if os.Geteuid() == 0 && sdnlbBinary == "" {
		dir, err := os.MkdirTemp("", "sdnlb-e2e-bin")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		if sdnlbBinary, err = testbed.Build(context.Background(), dir, "./cmd/sdnlb", true); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
	}
	return m.Run()
}

// startSDNLB runs the sdnlb that TestMain built (see testbed.StartSDNLB).
func startSDNLB(tb testing.TB, extraArgs ...string) *sdnlbProc {
	tb.Helper()
	return testbed.StartSDNLB(tb, sdnlbBinary, extraArgs...)
}
