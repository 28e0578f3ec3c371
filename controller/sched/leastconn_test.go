package sched

import (
	"math"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// TestLoadAware_Picks gives each load-aware method a fixed load and checks
// the first picks; the scan starts at position 0, 1, 2, ... on successive
// picks, which decides ties.
func TestLoadAware_Picks(t *testing.T) {
	tests := []struct {
		name    string
		method  sdnlb.LBMethod
		weights []int
		conns   []int64
		bytes   []uint64
		want    []int
	}{
		{"LC/Fewest", sdnlb.LeastConnections, []int{1, 1, 1}, []int64{5, 2, 9}, nil, []int{1, 1, 1}},
		{"LC/WeightsIgnored", sdnlb.LeastConnections, []int{1, 100, 1}, []int64{4, 5, 6}, nil, []int{0, 0, 0}},
		{"LC/AllTiedRotates", sdnlb.LeastConnections, []int{1, 1, 1}, []int64{0, 0, 0}, nil, []int{0, 1, 2, 0}},
		{"LC/PartialTie", sdnlb.LeastConnections, []int{1, 1, 1}, []int64{3, 1, 1}, nil, []int{1, 1, 2, 1}},
		// Negative counts read as 0: member 0 must not beat member 1 when the scan starts at 1.
		{"LC/NegativeIsZero", sdnlb.LeastConnections, []int{1, 1, 1}, []int64{-5, 0, 3}, nil, []int{0, 1, 0}},
		{"LC/Huge", sdnlb.LeastConnections, []int{1, 1}, []int64{math.MaxInt64, math.MaxInt64 - 1}, nil, []int{0, 1}},

		{"WLC/PerWeight", sdnlb.WeightedLeastConnections, []int{1, 2, 5}, []int64{10, 10, 10}, nil, []int{2, 2, 2}},
		{"WLC/HeavyButBusy", sdnlb.WeightedLeastConnections, []int{1, 4}, []int64{2, 5}, nil, []int{1, 1}},
		{"WLC/LightAndIdle", sdnlb.WeightedLeastConnections, []int{1, 4}, []int64{0, 1}, nil, []int{0, 0}},
		{"WLC/RatioTieRotates", sdnlb.WeightedLeastConnections, []int{1, 2}, []int64{2, 4}, nil, []int{0, 1, 0}},
		{"WLC/NegativeIsZero", sdnlb.WeightedLeastConnections, []int{1, 1}, []int64{-3, 0}, nil, []int{0, 1}},
		{"WLC/NoOverflow", sdnlb.WeightedLeastConnections, []int{256, 1}, []int64{math.MaxInt64, 1}, nil, []int{1, 1}},

		{"LB/Fewest", sdnlb.LeastBytes, []int{1, 1, 1}, nil, []uint64{100, 50, 70}, []int{1, 1, 1}},
		{"LB/WeightsIgnored", sdnlb.LeastBytes, []int{256, 1}, nil, []uint64{10, 11}, []int{0, 0}},
		{"LB/TiedRotates", sdnlb.LeastBytes, []int{1, 1}, nil, []uint64{7, 7}, []int{0, 1, 0}},
		{"LB/Huge", sdnlb.LeastBytes, []int{1, 1}, nil, []uint64{math.MaxUint64, math.MaxUint64 - 1}, []int{1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, tt.method, membersOf(tt.weights...), &fakeLoad{conns: tt.conns, bytes: tt.bytes})
			if got := mustPickN(t, s, Key{}, len(tt.want)); !slices.Equal(got, tt.want) {
				t.Errorf("picks = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestLoadAware_UnderLoad feeds every pick back as one more active
// connection, as the controller does on flow install, and checks where the
// connections end up.
func TestLoadAware_UnderLoad(t *testing.T) {
	tests := []struct {
		name    string
		method  sdnlb.LBMethod
		weights []int
		picks   int
		want    []int64
	}{
		{"LC/Even", sdnlb.LeastConnections, []int{5, 1, 1}, 30, []int64{10, 10, 10}},
		{"WLC/ByWeight", sdnlb.WeightedLeastConnections, []int{5, 1, 1}, 70, []int64{50, 10, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			load := &fakeLoad{conns: make([]int64, len(tt.weights))}
			s := mustNew(t, tt.method, membersOf(tt.weights...), load)
			for range tt.picks {
				idx, ok := s.Pick(Key{})
				if !ok {
					t.Fatal("Pick ok=false")
				}
				load.conns[idx]++
			}
			if !slices.Equal(load.conns, tt.want) {
				t.Errorf("connections = %v, want %v", load.conns, tt.want)
			}
		})
	}
}

// TestLeastBytes_FollowsStats checks LEAST_BYTES moves as byte counters
// change between picks.
func TestLeastBytes_FollowsStats(t *testing.T) {
	load := &fakeLoad{bytes: []uint64{0, 0, 0}}
	s := mustNew(t, sdnlb.LeastBytes, membersOf(1, 1, 1), load)
	for _, step := range []struct {
		bytes []uint64
		want  int
	}{
		{[]uint64{1000, 10, 500}, 1},
		{[]uint64{1000, 2000, 500}, 2},
		{[]uint64{1000, 2000, 5000}, 0},
	} {
		copy(load.bytes, step.bytes)
		if idx, _ := s.Pick(Key{}); idx != step.want {
			t.Errorf("bytes %v: picked %d, want %d", step.bytes, idx, step.want)
		}
	}
}
