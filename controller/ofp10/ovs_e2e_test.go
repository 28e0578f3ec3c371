//go:build e2e

package ofp10

import (
	"encoding/hex"
	"os/exec"
	"testing"
)

// TestOVS_PrintsGolden re-runs `ovs-ofctl ofp-print`, Open vSwitch's own
// 1.0 decoder, on every vector and compares with the recorded NAME.txt
// that TestGolden_OVSText checks the models against.
func TestOVS_PrintsGolden(t *testing.T) {
	bin, err := exec.LookPath("ovs-ofctl")
	if err != nil {
		t.Skip("ovs-ofctl not installed")
	}
	for _, name := range goldenNames(t) {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(bin, "ofp-print", hex.EncodeToString(mustGolden(t, name))).CombinedOutput()
			if err != nil {
				t.Fatalf("ovs-ofctl ofp-print: %v\n%s", err, out)
			}
			if want := ovsText(t, name); string(out) != want {
				t.Errorf("ovs-ofctl ofp-print:\n%s\nrecorded:\n%s", out, want)
			}
		})
	}
}
