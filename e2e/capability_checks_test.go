package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// capabilityCheck says how the e2e matrix (TestCapabilityMatrix) checks a
// row of the capability table in the cells that are not refused (cmd/sdnlb's
// TestCapabilities_Refusals builds those through the API): the row's
// scenario, run with traffic in each cell, or, for a cell another test
// already measures thoroughly, that test.
type capabilityCheck struct {
	scenario string // a key of matrixScenarios; "" for none
	// tests are the tests that measure a cell instead, by Cell.Name: an
	// e2e test's name, or "dir:TestName" for a test of another package.
	tests map[string][]string
	// cluster are the tests, named alike, that measure what the row's
	// cluster column says beyond "the same on every node".
	cluster []string
}

// Cell names, as Cell.Name spells them, of the cells most rows have.
const (
	switch13      = "SWITCH, OpenFlow 1.3: honoured"
	switch10      = "SWITCH, OpenFlow 1.0: by the controller"
	controller    = "CONTROLLER: honoured"
	everyModeCell = "every mode: honoured"
)

// capabilityChecks has an entry for every row of the capability table, by
// its Setting.
var capabilityChecks = map[string]capabilityCheck{
	"`lb_method` ROUND_ROBIN":                {scenario: "shares"},
	"`lb_method` WEIGHTED_ROUND_ROBIN":       {scenario: "shares"},
	"`lb_method` LEAST_CONNECTIONS":          {scenario: "shares", tests: map[string][]string{controller: {"TestSched_LeastConnections"}}},
	"`lb_method` WEIGHTED_LEAST_CONNECTIONS": {scenario: "shares"},
	"`lb_method` RANDOM":                     {scenario: "shares"},
	"`lb_method` LEAST_BYTES":                {scenario: "shares"},
	"`lb_method` SOURCE_IP":                  {scenario: "oneMember"},
	"`lb_method` CONSISTENT_HASH":            {scenario: "shares"},
	"`lb_method` ADAPTIVE": {scenario: "shares", tests: map[string][]string{
		switch13: {"TestAdaptive_EqualisesLoad"}, controller: {"TestAdaptive_EqualisesLoad"}}},
	"`session_persistence` (VIP)": {scenario: "oneMember", cluster: []string{"TestCluster_PersistenceSurvivesTakeover"}},
	"`connection_limit` (VIP)":    {scenario: "limit"},
	"active connections (stats; LEAST_CONNECTIONS, WEIGHTED_LEAST_CONNECTIONS, ADAPTIVE's S term)": {scenario: "active"},
	"`hash_key` (pool)": {scenario: "oneMember", tests: map[string][]string{switch13: {"TestDispatch_ConsistentHashKeys"}}},
	"`weight` (member)": {scenario: "weight"},
	// The ramp takes its window to measure: the test's SWITCH and
	// CONTROLLER pools ramp at once, and the controller's ramp is the one a
	// 1.0 switch gets.
	"`slow_start` (pool)": {tests: map[string][]string{
		switch13: {"TestSlowStart_MemberBackUp"}, switch10: {"TestSlowStart_MemberBackUp"}, controller: {"TestSlowStart_MemberBackUp"}}},
	"agent `NN%` (AGENT monitor)": {tests: map[string][]string{
		switch13: {"TestAdaptive_EqualisesLoad"}, controller: {"TestAdaptive_EqualisesLoad"}}},
	"agent `drain`, `maint` / `down`, `fail`, `stopped`": {tests: map[string][]string{
		switch13: {"TestAgent_Drain"}, controller: {"TestAgent_Drain"}}},
	"`capacity` (member)": {scenario: "capacity", tests: map[string][]string{
		switch13: {"TestMember_CapacityBounds"}, controller: {"TestMember_CapacityBounds"}}},
	"`--flow-idle-timeout` (service)": {tests: map[string][]string{
		"CONTROLLER, OpenFlow 1.3: honoured": {"TestConnection_IdleFlowsAge"}, "CONTROLLER, OpenFlow 1.0: honoured": {"TestConnection_IdleFlowsAge"}}},
	"`forwarding` DSR (pool)": {tests: map[string][]string{
		switch13:   {"TestDispatch_SwitchDSR", "TestDualStack_EveryPath"},
		switch10:   {"TestDispatch_ControllerDSR"}, // its OpenFlow10 subtest: the controller dispatches on 1.0
		controller: {"TestDispatch_ControllerDSR", "TestDualStack_EveryPath"}}},
	"`?take_address=true` (VIP writes, `PUT /v1/config`)": {tests: map[string][]string{
		everyModeCell: {"TestAddress_TakenAddressesRefused", "TestAddress_DeletedVIPGivesTheHostItsAddress"}}},
	"`--max-links`, `--max-links-per-switch`, `--max-hosts`, `--max-hosts-per-switch`": {tests: map[string][]string{
		everyModeCell: {"controller:TestTopology_ForgedLLDP", "controller:TestController_ForgedHosts"}}},
	"members per pool": {scenario: "everyMember"},
	"`--api-client-prefix4`, `--api-client-prefix6` (service)": {tests: map[string][]string{
		everyModeCell: {"api:TestClientPrefixes_Of", "api:TestServer_StreamCapPerClient"}}},
	"`sdnlb agent --allow` (on a member)": {tests: map[string][]string{
		everyModeCell: {"cmd/sdnlb:TestHostAgent_Allow"}}},
	"`announce` (VIP), with `--bgp-asn`, `--bgp-peers`, `--bgp-next-hops` (service)": {tests: map[string][]string{
		switch13:   {"TestBGP_RouteFollowsMembers", "TestBGP_EdgeLostUnderLoad", "TestBGP_EdgeMoveLimits"},
		controller: {"TestBGP_EdgeMoveLimits"}}},
}

// Every row of the capability table is checked in every cell that is not
// refused, by a scenario of the matrix or by tests that exist; nothing
// here names a row, cell, scenario or test that does not.
func TestCapabilityChecks(t *testing.T) {
	scenarios := mapKeys(t, ".", "matrixScenarios")
	funcs := map[string][]string{}
	// exists reports whether test, named as capabilityCheck names tests,
	// is declared.
	exists := func(test string) bool {
		dir, name, ok := strings.Cut(test, ":")
		if !ok {
			dir, name = ".", test
		} else {
			dir = filepath.Join("..", dir)
		}
		if funcs[dir] == nil {
			funcs[dir] = funcNames(t, dir)
		}
		return slices.Contains(funcs[dir], name)
	}
	rows := map[string]bool{}
	for _, row := range sdnlb.Capabilities() {
		rows[row.Setting] = true
		check, ok := capabilityChecks[row.Setting]
		if !ok {
			t.Errorf("row %s has no entry in capabilityChecks: give it a scenario or name the tests that check it", row.Setting)
			continue
		}
		if check.scenario != "" && !slices.Contains(scenarios, check.scenario) {
			t.Errorf("row %s: no scenario %q in matrixScenarios", row.Setting, check.scenario)
		}
		cells := map[string]bool{}
		for _, cell := range row.Cells {
			cells[cell.Name()] = true
			if cell.Verdict != sdnlb.Refused && check.scenario == "" && len(check.tests[cell.Name()]) == 0 {
				t.Errorf("row %s, cell %q: no scenario and no test checks it", row.Setting, cell.Name())
			}
		}
		for cell, tests := range check.tests {
			if !cells[cell] {
				t.Errorf("row %s has no cell %q", row.Setting, cell)
			}
			for _, test := range tests {
				if !exists(test) {
					t.Errorf("row %s, cell %q: no test %s", row.Setting, cell, test)
				}
			}
		}
		for _, test := range check.cluster {
			if !exists(test) {
				t.Errorf("row %s, cluster: no test %s", row.Setting, test)
			}
		}
	}
	for setting := range capabilityChecks {
		if !rows[setting] {
			t.Errorf("capabilityChecks names %s, which no row of the table does", setting)
		}
	}
}

// parseDir parses every Go file of dir, whatever its build tags.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	var files []*ast.File
	for _, p := range paths {
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// funcNames lists the functions declared in dir.
func funcNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, f := range parseDir(t, dir) {
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				names = append(names, fn.Name.Name)
			}
		}
	}
	return names
}

// mapKeys lists the string keys of the map literal that the package
// variable name of dir is set to.
func mapKeys(t *testing.T, dir, name string) []string {
	t.Helper()
	var keys []string
	for _, f := range parseDir(t, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok || len(spec.Names) != 1 || spec.Names[0].Name != name || len(spec.Values) != 1 {
				return true
			}
			lit, ok := spec.Values[0].(*ast.CompositeLit)
			if !ok {
				return true
			}
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(k.Value)
						keys = append(keys, s)
					}
				}
			}
			return false
		})
	}
	if len(keys) == 0 {
		t.Fatalf("no map literal %s in %s", name, dir)
	}
	return keys
}
