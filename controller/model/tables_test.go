package model

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
		flow Flow
		want string // in the error; "" for none
	}{
		{"ClassifyIntoTracker", Flow{Table: TableClassify, Actions: []ofp.Action{trackVIP}}, ""},
		{"TrackedMatchesTracker", Flow{Table: TableTracked, Match: []ofp.OXM{tracked}, GotoTable: TableToMember}, ""},
		{"UnknownTable", Flow{Table: 6}, "table 6 is not in the pipeline"},
		{"ClassifyMatchesTracker", Flow{Table: TableClassify, Match: []ofp.OXM{tracked}}, "table classify matches ct_state=+trk"},
		{"BackwardGoto", Flow{Table: TableFromMember, GotoTable: TableToMember}, "table from-member sends to table to-member"},
		{"RecirculationElsewhere", Flow{Table: TableToMember, Actions: []ofp.Action{ofp.ActionCT{Zone: ctZoneVIP, Table: TableFromMember}}},
			"table to-member sends to table from-member"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm := tt.flow.Add()
			err := CheckFlow(&fm)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("rejected: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one saying %q", err, tt.want)
			}
		})
	}
	t.Run("BucketRecirculatesElsewhere", func(t *testing.T) {
		gm := ofp.GroupMod{GroupID: 1, Buckets: []ofp.Bucket{{Actions: []ofp.Action{ofp.ActionCT{Zone: ctZoneVIP, Table: TableToMember}}}}}
		if err := CheckGroup(&gm); err == nil || !strings.Contains(err.Error(), "to-member") {
			t.Errorf("error %v, want the bucket's table named", err)
		}
	})
}
