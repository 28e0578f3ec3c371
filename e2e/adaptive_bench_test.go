//go:build e2e && e2e_bench

package e2e

import (
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// TestAdaptive_RoundRobinBaseline measures, on TestAdaptive_EqualisesLoad's
// bed, what round robin leaves: the dearest member saturated, the cheapest
// mostly idle. A measurement beside the check, not a check.
func TestAdaptive_RoundRobinBaseline(t *testing.T) {
	b := newCostBed(t, sdnlb.RoundRobin, sdnlb.DispatchController)
	shares := busyShares(b, 16*time.Second, 8*time.Second)
	t.Logf("round robin: busy %.2f, spread %.2f", shares, spreadOf(shares))
}
