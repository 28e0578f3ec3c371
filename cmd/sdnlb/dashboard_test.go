package main

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"sigs.k8s.io/yaml"
)

// The shipped Grafana dashboard queries only series that a running sdnlb
// with a monitored member exports, directly or through the recording
// rules of the shipped alerts.yml.
func TestGrafanaDashboard_NamesExportedSeries(t *testing.T) {
	_, families := mustRunMonitored(t, "lb-1")
	records := mustReadRecords(t, "../../deploy/prometheus/alerts.yml")

	data, err := os.ReadFile("../../deploy/grafana/sdnlb.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	queries, recorded := 0, 0
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			queries++
			series, unknown := seriesOf(target.Expr, records)
			for _, name := range unknown {
				t.Errorf("panel %q queries %s, which alerts.yml does not record", p.Title, name)
			}
			for _, name := range series {
				if families[name] == nil {
					t.Errorf("panel %q queries %s, which sdnlb does not export", p.Title, name)
				}
			}
			if recordName.MatchString(target.Expr) {
				recorded++
			}
		}
	}
	if queries == 0 || recorded == 0 {
		t.Fatalf("the dashboard has %d queries, %d of them on recording rules; want some of each", queries, recorded)
	}
}

var (
	seriesName = regexp.MustCompile(`\bsdnlb_[a-z_]+`)
	recordName = regexp.MustCompile(`\bsdnlb:[a-z0-9_:]+`)
)

// seriesOf returns the sdnlb series expr reads, those of the recording
// rules it names included, and the rules it names that records lacks.
func seriesOf(expr string, records map[string]string) (series, unknown []string) {
	series = seriesName.FindAllString(expr, -1)
	for _, name := range recordName.FindAllString(expr, -1) {
		rule, ok := records[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		s, u := seriesOf(rule, records)
		series, unknown = append(series, s...), append(unknown, u...)
	}
	return series, unknown
}

// mustReadRecords reads a Prometheus rule file's recording rules, by name.
func mustReadRecords(tb testing.TB, path string) map[string]string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Record string `json:"record"`
				Expr   string `json:"expr"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	records := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = r.Expr
			}
		}
	}
	return records
}
