package sched

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// sequenceCase is the weights of a pool's members and the first picks a
// method must make from them.
type sequenceCase struct {
	name    string
	weights []int
	want    []int
}

func testSequence(t *testing.T, method sdnlb.LBMethod, cases []sequenceCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, method, membersOf(tt.weights...), nil)
			if got := mustPickN(t, s, Key{}, len(tt.want)); !slices.Equal(got, tt.want) {
				t.Errorf("picks = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRoundRobin_Sequence(t *testing.T) {
	testSequence(t, sdnlb.RoundRobin, []sequenceCase{
		{"Single", []int{1}, []int{0, 0, 0, 0}},
		{"Two", []int{1, 1}, []int{0, 1, 0, 1, 0}},
		{"Three", []int{1, 1, 1}, []int{0, 1, 2, 0, 1, 2, 0}},
		{"WeightsIgnored", []int{5, 1, 1}, []int{0, 1, 2, 0, 1, 2}},
	})
}

func TestWeightedRoundRobin_Sequence(t *testing.T) {
	// Smooth WRR as nginx does it; each want covers two full cycles.
	testSequence(t, sdnlb.WeightedRoundRobin, []sequenceCase{
		{"Single", []int{7}, []int{0, 0, 0}},
		{"Equal", []int{1, 1, 1}, []int{0, 1, 2, 0, 1, 2}},
		{"EqualHeavy", []int{100, 100}, []int{0, 1, 0, 1}},
		{"FiveOneOne", []int{5, 1, 1}, []int{0, 0, 1, 0, 2, 0, 0, 0, 0, 1, 0, 2, 0, 0}},
		{"TwoOne", []int{2, 1}, []int{0, 1, 0, 0, 1, 0}},
		{"GCDReduced", []int{4, 2}, []int{0, 1, 0, 0, 1, 0}},
		{"ThreeTwoOne", []int{3, 2, 1}, []int{0, 1, 0, 2, 1, 0, 0, 1, 0, 2, 1, 0}},
		{"Ascending", []int{1, 2, 3}, []int{2, 1, 0, 2, 1, 2, 2, 1, 0, 2, 1, 2}},
	})
}

// TestWeightedRoundRobin_Proportions checks, on random weight sets, that one
// cycle gives each member exactly its share and that picks are interleaved:
// in any prefix of the cycle a member is at most one pick off its share
// (nginx's smooth WRR keeps that bound).
func TestWeightedRoundRobin_Proportions(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		weights := make([]int, 1+rng.IntN(8))
		for i := range weights {
			weights[i] = 1 + rng.IntN(MaxWeight)
		}
		g, total := 0, 0
		for _, w := range weights {
			g = gcd(g, w)
		}
		for _, w := range weights {
			total += w / g
		}
		s := mustNew(t, sdnlb.WeightedRoundRobin, membersOf(weights...), nil)
		picks := mustPickN(t, s, Key{}, total)
		counts := make([]int, len(weights))
		for step, idx := range picks {
			counts[idx]++
			for i, w := range weights {
				// share of member i after step+1 picks, times total
				ideal := (step + 1) * (w / g)
				if d := counts[i]*total - ideal; d > total || d < -total {
					t.Fatalf("trial %d weights %v: after %d picks member %d has %d, ideal %.2f",
						trial, weights, step+1, i, counts[i], float64(ideal)/float64(total))
				}
			}
		}
		for i, w := range weights {
			if counts[i] != w/g {
				t.Errorf("trial %d weights %v: member %d got %d of %d, want %d", trial, weights, i, counts[i], total, w/g)
			}
		}
	}
}

// smoothWRR is the textbook smooth WRR over all members, the reference the
// grouped simulation in New must match step for step.
func smoothWRR(weights []int, n int) []int {
	current := make([]int, len(weights))
	total := 0
	for _, w := range weights {
		total += w
	}
	out := make([]int, n)
	for step := range out {
		best := 0
		for i, w := range weights {
			current[i] += w
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		out[step] = best
	}
	return out
}

func TestWeightedRoundRobin_MatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		// Few distinct weights so that groups of equal weight are common.
		weights := make([]int, 1+rng.IntN(12))
		for i := range weights {
			weights[i] = []int{1, 2, 3, 6, 7, 12, 256}[rng.IntN(7)]
		}
		total := 0
		for _, w := range weights {
			total += w
		}
		s := mustNew(t, sdnlb.WeightedRoundRobin, membersOf(weights...), nil)
		// The reference is not gcd-reduced; its cycle is a repetition of ours.
		got := mustPickN(t, s, Key{}, total)
		if want := smoothWRR(weights, total); !slices.Equal(got, want) {
			t.Fatalf("trial %d weights %v:\n got %v\nwant %v", trial, weights, got, want)
		}
	}
}
