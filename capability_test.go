package sdnlb_test

import (
	"os"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// Every row has cells the tests can be generated from, and every cell
// says what its verdict needs: a refusal its 4xx and field, the
// controller's dispatch where the API shows it. validation and the e2e
// matrix are held to the cells elsewhere (cmd/sdnlb's
// TestCapabilities_Refusals, e2e's TestCapabilityMatrix).
func TestCapabilities_Cells(t *testing.T) {
	settings := map[string]bool{}
	for _, c := range sdnlb.Capabilities() {
		settings[c.Setting] = true
		if len(c.Cells) == 0 {
			t.Errorf("row %s has no cells: say what it does in each mode, in capability_cell.go", c.Setting)
		}
		for _, cell := range c.Cells {
			switch cell.Verdict {
			case sdnlb.Refused:
				if cell.Status < 400 || cell.Status > 499 || cell.Field == "" {
					t.Errorf("%s, %s: status %d field %q, want a 4xx naming a field", c.Setting, cell.Name(), cell.Status, cell.Field)
				}
			case sdnlb.ByController:
				if cell.Dispatch != sdnlb.DispatchSwitch || (cell.Shown != sdnlb.ShownInDispatch && cell.Shown != sdnlb.ShownInStats) {
					t.Errorf("%s, %s: shown in %q, want a SWITCH cell shown in the pool's dispatch or stats", c.Setting, cell.Name(), cell.Shown)
				}
			case sdnlb.Honoured:
			default:
				t.Errorf("%s: a cell with verdict %q", c.Setting, cell.Verdict)
			}
		}
	}
	for _, row := range sdnlb.SettingCellRows() {
		if !settings[row] {
			t.Errorf("cells for %s, which no row names", row)
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
