package controller

import (
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// The pipeline check rejects what no table may do, and passes every flow
// the decision tests see (they run it on every flow-mod and group-mod).
func TestTables_Check(t *testing.T) {
	tracked := ofp.MatchCTState(ofp.CTStateTrk, ofp.CTStateTrk)
	tests := []struct {
		name string
		flow flow
		want string // in the error; "" for none
	}{
		{"ClassifyIntoTracker", flow{table: tableClassify, actions: []ofp.Action{trackVIP}}, ""},
		{"TrackedMatchesTracker", flow{table: tableTracked, match: []ofp.OXM{tracked}, gotoTable: tableToMember}, ""},
		{"UnknownTable", flow{table: 5}, "table 5 is not in the pipeline"},
		{"ClassifyMatchesTracker", flow{table: tableClassify, match: []ofp.OXM{tracked}}, "table classify matches ct_state=+trk"},
		{"BackwardGoto", flow{table: tableFromMember, gotoTable: tableToMember}, "table from-member sends to table to-member"},
		{"RecirculationElsewhere", flow{table: tableToMember, actions: []ofp.Action{ofp.ActionCT{Zone: ctZoneVIP, Table: tableFromMember}}},
			"table to-member sends to table from-member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := tt.flow.add()
			err := checkFlow(&fm)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
	t.Run("BucketRecirculatesElsewhere", func(t *testing.T) {
		gm := ofp.GroupMod{GroupID: 1, Buckets: []ofp.Bucket{{Actions: []ofp.Action{ofp.ActionCT{Zone: ctZoneVIP, Table: tableToMember}}}}}
		if err := checkGroup(&gm); err == nil || !strings.Contains(err.Error(), "to-member") {
			t.Errorf("error %v, want the bucket's table named", err)
		}
	})
}
