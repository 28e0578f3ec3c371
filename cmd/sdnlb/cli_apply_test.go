package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/sdnlb/sdnlb/api"
)

// webYAML is webDocument as YAML, with one VIP keyed by its name.
const webYAML = `monitors:
- {id: http, type: HTTP, delay: 1, timeout: 0.5, url_path: /health}
- {id: agent, type: AGENT, port: 5555, delay: 0.2, timeout: 0.15}
vips:
- id: web
  address: 10.0.0.100
  port: 80
- name: api        # no id: keyed by its name
  address: 10.0.0.101
  port: 443
pools:
- {id: web, vip_id: web, lb_method: WEIGHTED_LEAST_CONNECTIONS, slow_start: 30, monitor_ids: [http, agent]}
members:
- {id: m1, pool_id: web, address: 10.0.0.1, port: 8080}
- {id: m2, pool_id: web, address: 10.0.0.2, port: 8080, weight: 3, capacity: 500}
`

func TestCLI_ApplyDiff(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	file := writeFile(t, t.TempDir(), "web.yaml", []byte(webYAML))

	t.Run("DiffBeforeApply", func(t *testing.T) {
		code, out, errOut := runClient(t, m, "diff", "-f", file)
		if code != exitDiffers || !strings.Contains(out, "+ vip web\n") || !strings.Contains(out, "+ vip (name api)\n") ||
			!strings.Contains(out, "would create 7, update 0, delete 0") || errOut != "" {
			t.Fatalf("exit %d, out:\n%s\nerr: %s", code, out, errOut)
		}
		if code, out, _ := runClient(t, m, "get", "vips", "-o", "json"); code != exitOK || strings.TrimSpace(out) != "[]" {
			t.Fatalf("diff changed the configuration: exit %d, %s", code, out)
		}
	})
	t.Run("Apply", func(t *testing.T) {
		code, out, errOut := runClient(t, m, "apply", "-f", file)
		if code != exitOK || !strings.Contains(out, "+ member m2\n") || !strings.Contains(out, "created 7, updated 0, deleted 0") {
			t.Fatalf("exit %d, out:\n%s\nerr: %s", code, out, errOut)
		}
		if code, out, _ := runClient(t, m, "diff", "-f", file); code != exitOK || !strings.Contains(out, "no changes (7 unchanged)") {
			t.Fatalf("diff after apply: exit %d, out:\n%s", code, out)
		}
	})
	t.Run("Stdin", func(t *testing.T) {
		// JSON on stdin, told from YAML by its content.
		doc := `{"members": [{"id": "m1", "pool_id": "web", "address": "10.0.0.1", "port": 8080, "weight": 2}]}`
		code, out, _ := runClientInput(t, m, doc, "diff", "-f", "-")
		if code != exitDiffers || !strings.Contains(out, "~ member m1\n    weight: 1 -> 2\n") {
			t.Fatalf("diff: exit %d, out:\n%s", code, out)
		}
		code, out, _ = runClientInput(t, m, doc, "apply", "--dry-run", "-f", "-")
		if code != exitOK || !strings.Contains(out, "would create 0, update 1, delete 0") {
			t.Fatalf("dry run: exit %d, out:\n%s", code, out)
		}
		if code, out, _ := runClientInput(t, m, webYAML, "diff", "-f", "-"); code != exitOK {
			t.Fatalf("the dry run changed something: exit %d, out:\n%s", code, out)
		}
	})
	t.Run("PruneJSONOutput", func(t *testing.T) {
		pruned := writeFile(t, t.TempDir(), "web.json", []byte(`{"monitors": [{"id": "http", "type": "HTTP", "delay": 1, "timeout": 0.5, "url_path": "/health"}]}`))
		code, out, _ := runClient(t, m, "diff", "-f", pruned, "--prune", "-o", "json")
		var diff struct {
			DryRun bool `json:"dry_run"`
			VIPs   struct {
				Deleted []struct{ ID string } `json:"deleted"`
			} `json:"vips"`
		}
		if code != exitDiffers || json.Unmarshal([]byte(out), &diff) != nil || !diff.DryRun || len(diff.VIPs.Deleted) != 2 {
			t.Fatalf("exit %d, out:\n%s", code, out)
		}
		// Without --prune the file changes nothing.
		if code, out, _ := runClient(t, m, "diff", "-f", pruned); code != exitOK {
			t.Fatalf("exit %d, out:\n%s", code, out)
		}
	})
	t.Run("ErrFile", func(t *testing.T) {
		bad := writeFile(t, t.TempDir(), "bad.yml", []byte(strings.Replace(webYAML, "weight: 3", "weight: 300", 1)))
		code, out, errOut := runClient(t, m, "diff", "-f", bad)
		if code != exitDiffAPIError || out != "" || !strings.Contains(errOut, "field members[1].weight") || !strings.Contains(errOut, "members[1] (id m2)") {
			t.Fatalf("diff: exit %d, out %q, err %q", code, out, errOut)
		}
		if code, _, errOut := runClient(t, m, "apply", "-f", bad); code != exitAPIError || !strings.Contains(errOut, "weight must be 0-256") {
			t.Fatalf("apply: exit %d, err %q", code, errOut)
		}
		if code, _, _ := runClient(t, m, "diff", "-f", file); code != exitOK {
			t.Fatal("a refused file changed the configuration")
		}
		notYAML := writeFile(t, t.TempDir(), "bad.yaml", []byte("vips: [\n"))
		if code, _, errOut := runClient(t, m, "apply", "-f", notYAML); code != exitAPIError || !strings.Contains(errOut, "not valid YAML") {
			t.Fatalf("bad YAML: exit %d, err %q", code, errOut)
		}
	})
	t.Run("ExportRoundTrip", func(t *testing.T) {
		code, exported, _ := runClient(t, m, "get", "config")
		var doc map[string][]map[string]any
		if code != exitOK || yaml.Unmarshal([]byte(exported), &doc) != nil || len(doc["vips"]) != 2 || doc["vips"][0]["mac"] != nil {
			t.Fatalf("get config: exit %d, out:\n%s", code, exported)
		}
		if doc["pools"][0]["slow_start"] != float64(30) || doc["members"][1]["capacity"] != float64(500) || doc["monitors"][0]["port"] != float64(5555) {
			t.Fatalf("the export lost slow_start, capacity or port:\n%s", exported)
		}
		other := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
		if code, out, errOut := runClientInput(t, other, exported, "apply", "-f", "-"); code != exitOK {
			t.Fatalf("apply the export: exit %d, out:\n%s\nerr: %s", code, out, errOut)
		}
		_, again, _ := runClient(t, other, "get", "config")
		if again != exported {
			t.Fatalf("exported again\n%s\nwant\n%s", again, exported)
		}
		_, asJSON, _ := runClient(t, other, "get", "config", "-o", "json")
		var fromJSON map[string][]map[string]any
		if err := json.Unmarshal([]byte(asJSON), &fromJSON); err != nil || len(fromJSON["members"]) != 2 {
			t.Fatalf("get config -o json: %v\n%s", err, asJSON)
		}
	})
	t.Run("GetYAML", func(t *testing.T) {
		code, out, _ := runClient(t, m, "get", "members", "-o", "yaml")
		var members []map[string]any
		if code != exitOK || yaml.Unmarshal([]byte(out), &members) != nil || len(members) != 2 || members[1]["weight"] != float64(3) {
			t.Fatalf("exit %d, out:\n%s", code, out)
		}
	})
	t.Run("Usage", func(t *testing.T) {
		for _, args := range [][]string{{"apply"}, {"diff", "-f", file, "--dry-run"}, {"apply", "-f", file, "extra"},
			{"apply", "-f", filepath.Join(t.TempDir(), "missing.yaml")}, {"get", "vips", "-o", "xml"}} {
			if code, _, _ := runClient(t, m, args...); code != exitUsage {
				t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
			}
		}
		if code, out, _ := runClient(t, m, "apply", "-h"); code != exitOK || !strings.Contains(out, "diff exits 0 when FILE matches") {
			t.Errorf("help: exit %d, out:\n%s", code, out)
		}
		if code, _, _ := runClient(t, m, "diff", "-f", file, "--server", "http://127.0.0.1:1"); code != exitNoServer {
			t.Errorf("no server: exit %d", code)
		}
	})
	t.Run("ErrTooLarge", func(t *testing.T) {
		// Read up to the API's limit and no further: /dev/zero never ends.
		for _, file := range []string{"/dev/zero", "-"} {
			code, out, errOut := runClientInput(t, m, strings.Repeat(" ", api.MaxConfigBodyBytes+1), "apply", "-f", file)
			if code != exitUsage || out != "" || !strings.Contains(errOut, "larger than the 32 MiB the API takes") {
				t.Errorf("-f %s: exit %d, out %q, err %q", file, code, out, errOut)
			}
		}
	})
	t.Run("Completion", func(t *testing.T) {
		_, out, _ := runClient(t, m, "completion", "bash")
		for _, word := range []string{"apply diff", "monitors config", "--prune --dry-run", "table json yaml"} {
			if !strings.Contains(out, word) {
				t.Errorf("the completion lacks %q", word)
			}
		}
	})
}
