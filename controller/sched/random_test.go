package sched

import (
	"math/rand/v2"
	"testing"

	"github.com/sdnlb/sdnlb"
)

func TestRandom_Distribution(t *testing.T) {
	tests := []struct {
		name    string
		weights []int
		picks   int
	}{
		{"Two", []int{1, 1}, 20000},
		{"Three", []int{1, 1, 1}, 30000},
		{"WeightsIgnored", []int{256, 1, 1, 1}, 40000},
		{"Seven", []int{1, 2, 3, 4, 5, 6, 7}, 70000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fixed seed keeps the test reproducible; 5 % is over 10 standard deviations here.
			s := newRandom(membersOf(tt.weights...), rand.New(rand.NewPCG(42, 7)).Uint64)
			counts := make([]int, len(tt.weights))
			for _, idx := range mustPickN(t, s, Key{}, tt.picks) {
				counts[idx]++
			}
			want := tt.picks / len(tt.weights)
			for i, c := range counts {
				if c < want*95/100 || c > want*105/100 {
					t.Errorf("member %d picked %d times, want %d ± 5 %% (all %v)", i, c, want, counts)
				}
			}
		})
	}
}

// TestRandom_GlobalSource checks the scheduler New builds reaches every
// member with the unseeded generator.
func TestRandom_GlobalSource(t *testing.T) {
	s := mustNew(t, sdnlb.Random, membersOf(1, 1, 1, 1), nil)
	seen := map[int]bool{}
	for _, idx := range mustPickN(t, s, Key{}, 1000) {
		seen[idx] = true
	}
	if len(seen) != 4 {
		t.Errorf("1000 picks reached members %v, want all 4", seen)
	}
}
