package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// clusterSection is the heading of the OBSERVABILITY.md section whose PromQL
// must be alerts.yml's cluster records, word for word: promtool tests the
// rules (alerts_test.yml), this test keeps the doc the same as them.
const clusterSection = "## A cluster in Prometheus"

func TestObservabilityDoc_ClusterRecords(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "OBSERVABILITY.md"))
	if err != nil {
		t.Fatal(err)
	}
	rules := mustReadRules(t, filepath.Join("prometheus", "alerts.yml"))
	documented, err := documentedRecords(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range compareRecords(documented, rules) {
		t.Error(problem)
	}
}

func TestCompareRecords(t *testing.T) {
	rules := ruleFile{Groups: []ruleGroup{{Name: "sdnlb-cluster", Rules: []rule{
		{Record: "sdnlb:a", Expr: "sum without (node, instance) (rate(a_total[1m]))"},
		{Record: "sdnlb:b", Expr: "max without (node, instance) (b)\n"},
	}}}}
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"OK", "```promql\n# sdnlb:a\nsum without (node, instance) (rate(a_total[1m]))\n# sdnlb:b\nmax without (node, instance) (b)\n```\n", nil},
		{"ErrExprDiffers", "```promql\n# sdnlb:a\nsum by (vip) (rate(a_total[1m]))\n# sdnlb:b\nmax without (node, instance) (b)\n```\n",
			[]string{"sdnlb:a"}},
		{"ErrNotARule", "```promql\n# sdnlb:a\nsum without (node, instance) (rate(a_total[1m]))\n# sdnlb:b\nmax without (node, instance) (b)\n# sdnlb:c\nc\n```\n",
			[]string{"sdnlb:c"}},
		{"ErrUndocumented", "```promql\n# sdnlb:a\nsum without (node, instance) (rate(a_total[1m]))\n```\n", []string{"sdnlb:b"}},
		{"ErrNoName", "```promql\nsum without (node, instance) (rate(a_total[1m]))\n```\n", []string{"names no record"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			documented, err := documentedRecords("# Doc\n\n" + clusterSection + "\n\n" + tt.doc + "\n## Next\n\n```promql\n# sdnlb:z\nz\n```\n")
			var got []string
			if err != nil {
				got = []string{err.Error()}
			} else {
				got = compareRecords(documented, rules)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q, want one naming each of %q", got, tt.want)
			}
			for i, want := range tt.want {
				if !strings.Contains(got[i], want) {
					t.Errorf("problem %q does not name %q", got[i], want)
				}
			}
		})
	}
}

type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Record string `json:"record"`
	Alert  string `json:"alert"`
	Expr   string `json:"expr"`
}

func mustReadRules(tb testing.TB, path string) ruleFile {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return f
}

// documentedRecord is a recording rule as the doc shows it: a "# name" line
// in a promql block, then its expression.
type documentedRecord struct {
	name, expr string
}

// documentedRecords reads the promql blocks of the cluster section of doc.
func documentedRecords(doc string) ([]documentedRecord, error) {
	_, section, ok := strings.Cut(doc, "\n"+clusterSection+"\n")
	if !ok {
		return nil, fmt.Errorf("no section %q", clusterSection)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var records []documentedRecord
	for _, block := range strings.Split(section, "```promql\n")[1:] {
		block, _, ok := strings.Cut(block, "```")
		if !ok {
			return nil, fmt.Errorf("a promql block without its end")
		}
		for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
			if name, ok := strings.CutPrefix(line, "# "); ok {
				records = append(records, documentedRecord{name: strings.TrimSpace(name)})
				continue
			}
			if len(records) == 0 || records[len(records)-1].name == "" {
				return nil, fmt.Errorf("a promql block names no record before %q", line)
			}
			r := &records[len(records)-1]
			r.expr = strings.TrimSpace(r.expr + "\n" + line)
		}
	}
	if len(records) == 0 {
		return nil, fmt.Errorf("section %q has no promql block", clusterSection)
	}
	return records, nil
}

// compareRecords says where the documented records and the rules of group
// sdnlb-cluster differ: a record the rules lack or compute otherwise, and
// a rule the doc leaves out.
func compareRecords(documented []documentedRecord, rules ruleFile) []string {
	exprs := map[string]string{}
	var cluster []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Record == "" {
				continue
			}
			exprs[r.Record] = strings.TrimSpace(r.Expr)
			if g.Name == "sdnlb-cluster" {
				cluster = append(cluster, r.Record)
			}
		}
	}
	var problems []string
	for _, d := range documented {
		expr, ok := exprs[d.name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("the doc shows %s, which alerts.yml does not record", d.name))
		case expr != d.expr:
			problems = append(problems, fmt.Sprintf("the doc computes %s as\n%s\nalerts.yml as\n%s", d.name, d.expr, expr))
		}
	}
	for _, name := range cluster {
		if !slices.ContainsFunc(documented, func(d documentedRecord) bool { return d.name == name }) {
			problems = append(problems, fmt.Sprintf("alerts.yml records %s, which the doc does not show", name))
		}
	}
	return problems
}
