package dataplane

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// A row that breaks the pipeline's descriptors never reaches the switch,
// and the outbox says why; a row that fits is encoded.
func TestOutbox_ChecksThePipeline(t *testing.T) {
	for _, tc := range []struct {
		name   string
		m      ofp.Message
		broken string
	}{
		{"Fits", &ofp.FlowMod{Command: ofp.FlowAdd, TableID: model.TableL2, Priority: 1}, ""},
		{"UnknownTable", &ofp.FlowMod{Command: ofp.FlowAdd, TableID: 99}, "table 99 is not in the pipeline"},
		{"TrackerFieldUntracked", &ofp.FlowMod{Command: ofp.FlowAdd, TableID: model.TableL2,
			Match: ofp.Match{OXMs: []ofp.OXM{ofp.MatchCTMark(1, 0xffffffff)}}}, "no packet comes back to it from the tracker"},
		{"GotoBackwards", &ofp.FlowMod{Command: ofp.FlowAdd, TableID: model.TableL2,
			Instructions: []ofp.Instruction{ofp.InstructionGotoTable{TableID: model.TableTracked}}}, "which it may not"},
		{"BucketRecirculatesElsewhere", &ofp.GroupMod{Command: ofp.GroupAdd, GroupID: 1, GroupType: ofp.GroupTypeSelect,
			Buckets: []ofp.Bucket{{Weight: 1, Actions: []ofp.Action{ofp.ActionCT{Zone: 1, Table: model.TableL2}}}}}, "which buckets may not"},
		{"DeleteUnchecked", &ofp.FlowMod{Command: ofp.FlowDelete, TableID: ofp.TableAll}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := NewOutbox(new(atomic.Uint32), nil)
			out.Send(tc.m)
			if tc.broken == "" {
				if out.Unsent != nil || out.Empty() {
					t.Fatalf("not sent (%v)", out.Unsent)
				}
				return
			}
			if !out.Empty() {
				t.Error("a row that breaks the pipeline was encoded")
			}
			if out.Unsent == nil || !strings.Contains(out.Unsent.Error(), tc.broken) {
				t.Errorf("unsent because %v, want %q", out.Unsent, tc.broken)
			}
		})
	}
}
