package oftable_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/oftable"
)

// bucket is a bucket of weight w with actions.
func bucket(w uint16, actions ...ofp.Action) ofp.Bucket {
	return ofp.Bucket{Weight: w, WatchPort: ofp.PortAny, WatchGroup: ofp.GroupAny, Actions: actions}
}

func groupMod(cmd ofp.GroupModCommand, typ ofp.GroupType, id uint32, buckets ...ofp.Bucket) *ofp.GroupMod {
	return &ofp.GroupMod{Command: cmd, GroupType: typ, GroupID: id, Buckets: buckets}
}

func mustApplyGroup(tb testing.TB, t *oftable.Table, gms ...*ofp.GroupMod) {
	tb.Helper()
	for _, gm := range gms {
		if _, err := t.ApplyGroup(gm); err != nil {
			tb.Fatalf("apply %v: %v", gm, err)
		}
	}
}

func TestTable_ApplyGroup(t *testing.T) {
	toMember := bucket(1, set(ofp.MatchIPv4Dst(member)), out(memberPort))
	toClient := bucket(3, out(clientPort))
	base := []*ofp.GroupMod{
		groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, toMember, toClient),
		groupMod(ofp.GroupAdd, ofp.GroupTypeAll, 2, bucket(0, out(1)), bucket(0, out(2))),
	}
	baseLines := []string{
		"group_id=1,type=select,bucket=actions=set_field:10.0.0.2->ip_dst,output:3,bucket=weight:3,actions=output:10",
		"group_id=2,type=all,bucket=actions=output:1,bucket=actions=output:2",
	}
	flows := []*ofp.FlowMod{
		add(0xa, 100, tcpTo(vip, 80), ofp.ActionGroup{GroupID: 1}),
		add(0xb, 100, tcpTo(vip, 443), ofp.ActionGroup{GroupID: 2}),
		add(0xc, 0, nil, toController),
	}
	flowLines := []string{
		"cookie=0xa, priority=100, tcp,nw_dst=10.0.0.100,tp_dst=80 actions=group:1",
		"cookie=0xb, priority=100, tcp,nw_dst=10.0.0.100,tp_dst=443 actions=group:2",
		"cookie=0xc, priority=0 actions=CONTROLLER:65535",
	}
	tests := []struct {
		name        string
		gm          *ofp.GroupMod
		wantGroups  []string
		wantFlows   []string
		wantRemoved []string
	}{
		{"AddIndirect", groupMod(ofp.GroupAdd, ofp.GroupTypeIndirect, 7, bucket(0, out(4))),
			append(slices.Clone(baseLines), "group_id=7,type=indirect,bucket=actions=output:4"), flowLines, nil},
		{"AddGroupMax", groupMod(ofp.GroupAdd, ofp.GroupTypeAll, ofp.GroupMax),
			append(slices.Clone(baseLines), "group_id=4294967040,type=all"), flowLines, nil},
		{"ModifyReplacesTypeAndBuckets", groupMod(ofp.GroupModify, ofp.GroupTypeIndirect, 1, bucket(0, out(5))),
			[]string{"group_id=1,type=indirect,bucket=actions=output:5", baseLines[1]}, flowLines, nil},
		{"DeleteTakesItsFlows", groupMod(ofp.GroupDelete, 0, 1), baseLines[1:], flowLines[1:], flowLines[:1]},
		{"DeleteAll", groupMod(ofp.GroupDelete, 0, ofp.GroupAll), nil, flowLines[2:], flowLines[:2]},
		{"DeleteUnknownIsNoError", groupMod(ofp.GroupDelete, 0, 9), baseLines, flowLines, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := oftable.New()
			mustApplyGroup(t, tbl, base...)
			mustApply(t, tbl, flows...)
			removed, err := tbl.ApplyGroup(tt.gm)
			if err != nil {
				t.Fatalf("ApplyGroup: %v", err)
			}
			if got := tbl.GroupLines(); !slices.Equal(got, tt.wantGroups) {
				t.Errorf("groups:\n got  %q\n want %q", got, tt.wantGroups)
			}
			assertLines(t, "flows", tbl.Lines(), tt.wantFlows)
			var got []string
			for _, f := range removed {
				got = append(got, f.String())
			}
			assertLines(t, "removed", got, tt.wantRemoved)
		})
	}
}

func TestTable_ApplyGroup_Errors(t *testing.T) {
	tests := []struct {
		name     string
		gm       *ofp.GroupMod
		wantType ofp.ErrorType
		wantCode uint16
		wantText string
	}{
		{"ErrAddExisting", groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, bucket(1, out(1))),
			ofp.ErrTypeGroupModFailed, 0, "group 1 exists"},
		{"ErrModifyUnknown", groupMod(ofp.GroupModify, ofp.GroupTypeSelect, 2, bucket(1, out(1))),
			ofp.ErrTypeGroupModFailed, 8, "group 2 does not exist"},
		{"ErrReservedID", groupMod(ofp.GroupAdd, ofp.GroupTypeAll, ofp.GroupAll),
			ofp.ErrTypeGroupModFailed, 1, "reserved"},
		{"ErrFastFailover", groupMod(ofp.GroupAdd, ofp.GroupTypeFF, 3, bucket(0, out(1))),
			ofp.ErrTypeGroupModFailed, 10, "fast failover groups are not modelled"},
		{"ErrBadType", groupMod(ofp.GroupAdd, 9, 3), ofp.ErrTypeGroupModFailed, 10, "type 9"},
		{"ErrIndirectTwoBuckets", groupMod(ofp.GroupAdd, ofp.GroupTypeIndirect, 3, bucket(0, out(1)), bucket(0, out(2))),
			ofp.ErrTypeGroupModFailed, 1, "has 2 buckets"},
		{"ErrWeightInAllGroup", groupMod(ofp.GroupAdd, ofp.GroupTypeAll, 3, bucket(2, out(1))),
			ofp.ErrTypeGroupModFailed, 12, "bucket 0: a weight"},
		{"ErrBadCommand", groupMod(7, ofp.GroupTypeAll, 3), ofp.ErrTypeGroupModFailed, 11, "command 7"},
		{"ErrChained", groupMod(ofp.GroupAdd, ofp.GroupTypeAll, 3, bucket(0, ofp.ActionGroup{GroupID: 1})),
			ofp.ErrTypeBadAction, ofp.BadActionBadType, "group:1 is not modelled"},
		{"ErrUnmodelledAction", groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 3, bucket(1, ofp.ActionPopVLAN{})),
			ofp.ErrTypeBadAction, ofp.BadActionBadType, "pop_vlan"},
		{"ErrCTActionWithoutCommit", groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 3,
			bucket(1, ct(0, 1, 1, set(ofp.MatchCTMark(1, 0xffffffff))))), ofp.ErrTypeBadAction, ofp.BadActionBadArgument, "need commit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := oftable.New()
			mustApplyGroup(t, tbl, groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, bucket(1, out(1))))
			before := tbl.GroupLines()
			_, err := tbl.ApplyGroup(tt.gm)
			var msg *ofp.ErrorMsg
			if !errors.As(err, &msg) || msg.ErrType != tt.wantType || msg.Code != tt.wantCode {
				t.Fatalf("ApplyGroup = %v, want %v code %d", err, tt.wantType, tt.wantCode)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("ApplyGroup = %q, want it to say %q", err, tt.wantText)
			}
			if got := tbl.GroupLines(); !slices.Equal(got, before) {
				t.Errorf("groups after a rejected group-mod: %q, want %q", got, before)
			}
		})
	}
}

// The table keeps what was applied, not the group-mod's storage.
func TestTable_ApplyGroup_CopiesGroupMod(t *testing.T) {
	sf := ofp.ActionSetField{Field: ofp.MatchIPv4Dst(member)}
	exec := []ofp.Action{&ofp.ActionSetField{Field: ofp.MatchCTMark(1, 0xffffffff)}}
	gm := groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, bucket(1, &sf, &ofp.ActionCT{Flags: ofp.CTCommit, Table: 2, Actions: exec}))
	tbl := oftable.New()
	mustApplyGroup(t, tbl, gm)
	want := tbl.GroupLines()
	sf.Field = ofp.MatchIPv4Dst(client)
	exec[0] = ofp.ActionSetField{Field: ofp.MatchCTMark(2, 0xffffffff)}
	gm.Buckets[0].Weight = 9
	if got := tbl.GroupLines(); !slices.Equal(got, want) {
		t.Errorf("groups after the group-mod's storage was reused: %q, want %q", got, want)
	}
}

// A flow may send only to a group that exists; a delete's out_group
// selects the flows that send to it.
func TestTable_Apply_Groups(t *testing.T) {
	tbl := oftable.New()
	_, err := tbl.Apply(add(1, 1, nil, ofp.ActionGroup{GroupID: 5}))
	var msg *ofp.ErrorMsg
	if !errors.As(err, &msg) || msg.ErrType != ofp.ErrTypeBadAction || msg.Code != 9 {
		t.Fatalf("flow to a missing group: %v, want BAD_ACTION BAD_OUT_GROUP", err)
	}
	mustApplyGroup(t, tbl, groupMod(ofp.GroupAdd, ofp.GroupTypeAll, 5), groupMod(ofp.GroupAdd, ofp.GroupTypeAll, 6))
	mustApply(t, tbl, add(1, 1, tcpTo(vip, 80), ofp.ActionGroup{GroupID: 5}),
		add(2, 1, tcpTo(vip, 81), ofp.ActionGroup{GroupID: 6}), add(3, 1, tcpTo(vip, 82), out(1)))
	fm := del(false, 0, 0, 0)
	fm.OutGroup = 6
	removed, err := tbl.Apply(fm)
	if err != nil || len(removed) != 1 || removed[0].Cookie != 2 {
		t.Errorf("delete out_group=6 removed %v (%v), want the flow with cookie 2", removed, err)
	}
}

func TestTable_Process_Groups(t *testing.T) {
	syn := tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 80)
	natted := syn
	natted.IPv4Dst = member
	tests := []struct {
		name         string
		group        *ofp.GroupMod
		after        []ofp.Action // in the flow, after the group action
		wantOutputs  []oftable.Output
		wantSelected []oftable.Selection
	}{
		{"AllRunsEveryBucketOnACopy", groupMod(ofp.GroupAdd, ofp.GroupTypeAll, 1,
			bucket(0, set(ofp.MatchIPv4Dst(member)), out(memberPort)), bucket(0, out(clientPort))),
			[]ofp.Action{out(4)},
			[]oftable.Output{{memberPort, natted}, {clientPort, syn}, {4, syn}}, nil},
		{"Indirect", groupMod(ofp.GroupAdd, ofp.GroupTypeIndirect, 1, bucket(0, out(ofp.PortInPort))), nil,
			[]oftable.Output{{clientPort, syn}}, nil},
		{"SelectOneBucket", groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, bucket(1, out(7))), nil,
			[]oftable.Output{{7, syn}}, []oftable.Selection{{GroupID: 1, Bucket: 0}}},
		{"SelectSkipsWeightZero", groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, bucket(0, out(6)), bucket(5, out(7)), bucket(0, out(8))), nil,
			[]oftable.Output{{7, syn}}, []oftable.Selection{{GroupID: 1, Bucket: 1}}},
		{"SelectAllWeightZeroDrops", groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, bucket(0, out(6))), nil, nil, nil},
		{"EmptyAllGroupDrops", groupMod(ofp.GroupAdd, ofp.GroupTypeAll, 1), nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := oftable.New()
			mustApplyGroup(t, tbl, tt.group)
			mustApply(t, tbl, add(1, 1, tcpTo(vip, 80), append([]ofp.Action{ofp.ActionGroup{GroupID: 1}}, tt.after...)...))
			r := tbl.Process(syn)
			if !slices.Equal(r.Outputs, tt.wantOutputs) || !slices.Equal(r.Selected, tt.wantSelected) {
				t.Errorf("outputs %v selected %v\nwant    %v selected %v", r.Outputs, r.Selected, tt.wantOutputs, tt.wantSelected)
			}
			if r.Out != syn {
				t.Errorf("the packet after the group is %v, want it as it was", r.Out)
			}
		})
	}
}

// Select spreads clients over the buckets by weight, picks one bucket for
// one 5-tuple whatever port or MAC it comes with, and ignores buckets of
// weight 0.
func TestTable_Select(t *testing.T) {
	tbl := oftable.New()
	mustApplyGroup(t, tbl,
		groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, bucket(1, out(1)), bucket(1, out(2)), bucket(1, out(3)), bucket(1, out(4))),
		groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 2, bucket(3, out(1)), bucket(0, out(2)), bucket(1, out(3))),
		groupMod(ofp.GroupAdd, ofp.GroupTypeAll, 3, bucket(0, out(1))))
	const n = 4000
	count := func(id uint32, vary func(p *oftable.Packet, i int)) map[int]int {
		counts := map[int]int{}
		for i := range n {
			p := tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 80)
			vary(&p, i)
			b, ok := tbl.Select(id, p)
			if !ok {
				t.Fatalf("Select(%d, %v) found no bucket", id, p)
			}
			counts[b]++
		}
		return counts
	}
	t.Run("SpreadBySourcePort", func(t *testing.T) {
		counts := count(1, func(p *oftable.Packet, i int) { p.L4Src = uint16(20000 + i) })
		for b := range 4 {
			if counts[b] < n/4*8/10 || counts[b] > n/4*12/10 {
				t.Errorf("bucket %d got %d of %d clients, want about a quarter", b, counts[b], n)
			}
		}
	})
	t.Run("SpreadBySourceAddress", func(t *testing.T) {
		counts := count(1, func(p *oftable.Packet, i int) { p.IPv4Src = [4]byte{10, 1, byte(i >> 8), byte(i)} })
		for b := range 4 {
			if counts[b] < n/4*8/10 {
				t.Errorf("bucket %d got %d of %d clients, want about a quarter", b, counts[b], n)
			}
		}
	})
	t.Run("ByWeight", func(t *testing.T) {
		counts := count(2, func(p *oftable.Packet, i int) { p.L4Src = uint16(20000 + i) })
		if counts[1] != 0 || counts[0] < n*3/4*9/10 || counts[2] < n/4*8/10 {
			t.Errorf("buckets of weight 3, 0, 1 got %v of %d", counts, n)
		}
	})
	t.Run("IgnoresPortAndMACs", func(t *testing.T) {
		for sport := uint16(30000); sport < 30100; sport++ {
			p := tcpPacket(clientPort, clientMAC, vipMAC, client, sport, vip, 80)
			q := p
			q.InPort, q.EthSrc, q.EthDst, q.Metadata, q.Regs[0] = 99, memberMAC, clientMAC, 7, 7
			a, _ := tbl.Select(1, p)
			b, _ := tbl.Select(1, q)
			if a != b {
				t.Fatalf("port %d: bucket %d, but %d from another port and MAC", sport, a, b)
			}
		}
	})
	t.Run("NotASelectGroup", func(t *testing.T) {
		for _, id := range []uint32{3, 9} {
			if b, ok := tbl.Select(id, oftable.Packet{}); ok {
				t.Errorf("Select(%d) = %d, want none", id, b)
			}
		}
	})
}

// ProcessAll runs every bucket a packet may take, group after group, and
// leaves the tracker alone.
func TestTable_ProcessAll(t *testing.T) {
	tbl := oftable.New()
	mustApplyGroup(t, tbl,
		groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 1, bucket(1, out(1)), bucket(0, out(2)), bucket(2, out(3))),
		groupMod(ofp.GroupAdd, ofp.GroupTypeSelect, 2, bucket(1, out(4)), bucket(1, out(5))))
	mustApply(t, tbl, add(1, 1, tcpTo(vip, 80), ofp.ActionGroup{GroupID: 1}, ofp.ActionGroup{GroupID: 2}))
	var got [][]uint32
	for _, r := range tbl.ProcessAll(tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 80)) {
		got = append(got, r.Ports)
	}
	want := [][]uint32{{1, 4}, {3, 4}, {1, 5}, {3, 5}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("ProcessAll ports %v, want %v", got, want)
	}
	if r := tbl.ProcessAll(tcpPacket(clientPort, clientMAC, vipMAC, client, 40000, vip, 81)); len(r) != 1 || r[0].Flow != nil {
		t.Errorf("ProcessAll of a miss = %+v, want one result", r)
	}
}
