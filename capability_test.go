package sdnlb_test

import (
	"os"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// The table's method cells are what validation does: a method whose
// SWITCH cell says refused is refused under SWITCH dispatch, and the
// others are taken.
func TestCapabilities_MatchValidation(t *testing.T) {
	for _, c := range sdnlb.Capabilities()[:len(sdnlb.LBMethods)] {
		m := sdnlb.LBMethod(strings.TrimPrefix(c.Setting, "`lb_method` "))
		p := sdnlb.NewPool()
		p.LBMethod, p.Dispatch = m, sdnlb.DispatchSwitch
		err := p.Validate()
		if refused := strings.HasPrefix(c.Switch, "refused"); refused != (err != nil) {
			t.Errorf("%s under SWITCH: the table says %q, validation %v", m, c.Switch, err)
		}
	}
}

// docs/CAPABILITIES.md holds the table as Capabilities renders it;
// SDNLB_UPDATE_DOCS=1 rewrites it.
func TestCapabilities_Docs(t *testing.T) {
	const path, begin, end = "docs/CAPABILITIES.md", "<!-- capability table: begin -->\n", "<!-- capability table: end -->"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok1 := strings.Cut(string(doc), begin)
	_, tail, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no table markers", path)
	}
	want := head + begin + sdnlb.CapabilityTable() + end + tail
	if want == string(doc) {
		return
	}
	if os.Getenv("SDNLB_UPDATE_DOCS") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: SDNLB_UPDATE_DOCS=1 go test -run TestCapabilities_Docs .", path)
}
