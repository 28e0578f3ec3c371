package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

// exactPercentile is the nearest-rank percentile of sorted samples.
func exactPercentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p * float64(len(sorted))))
	return sorted[max(rank, 1)-1]
}

func TestHistogram_Percentile(t *testing.T) {
	gen := func(n int, f func(i int) time.Duration) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = f(i)
		}
		return s
	}
	tests := []struct {
		name    string
		samples []time.Duration
	}{
		{"One", []time.Duration{42 * time.Microsecond}},
		{"SmallExact", gen(100, func(i int) time.Duration { return time.Duration(i) })},
		{"Constant", gen(1000, func(int) time.Duration { return 75 * time.Microsecond })},
		{"Uniform", gen(10000, func(i int) time.Duration { return time.Duration(i+1) * 317 * time.Nanosecond })},
		{"Bimodal", gen(10000, func(i int) time.Duration {
			if i%100 < 95 {
				return 60*time.Microsecond + time.Duration(i%7)*time.Microsecond
			}
			return 4*time.Millisecond + time.Duration(i)*time.Nanosecond
		})},
		{"Exponential", gen(5000, func(i int) time.Duration { return time.Duration(math.Pow(1.004, float64(i))) * time.Microsecond })},
		{"Huge", []time.Duration{time.Hour, 90 * time.Minute, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h histogram
			for _, d := range tt.samples {
				h.record(d)
			}
			sorted := slices.Sorted(slices.Values(tt.samples))
			if h.n != uint64(len(sorted)) || h.max != sorted[len(sorted)-1] {
				t.Fatalf("n=%d max=%v, want %d and %v", h.n, h.max, len(sorted), sorted[len(sorted)-1])
			}
			for _, p := range []float64{0.5, 0.9, 0.99, 1} {
				got, want := h.percentile(p), exactPercentile(sorted, p)
				// The bucket bound lies at or above the true value, within 1/64.
				if got < want || float64(got-want) > float64(want)/64 {
					t.Errorf("p%g = %v, want %v (+1/64 at most)", p*100, got, want)
				}
			}
		})
	}
}

func TestHistogram_Merge(t *testing.T) {
	var a, b, all histogram
	for i := range 1000 {
		d := time.Duration(i*i) * time.Nanosecond
		all.record(d)
		if i%3 == 0 {
			a.record(d)
		} else {
			b.record(d)
		}
	}
	a.merge(&b)
	if a != all {
		t.Errorf("merged histogram differs: n %d/%d max %v/%v", a.n, all.n, a.max, all.max)
	}
	a.reset()
	if a.n != 0 || a.percentile(0.5) != 0 {
		t.Errorf("reset left n=%d p50=%v", a.n, a.percentile(0.5))
	}
}

func TestHistIndex_Bounds(t *testing.T) {
	// Every bucket's upper bound falls in that bucket and the next value in
	// the next one: buckets tile the value range without gaps.
	for i := range histBuckets - 1 {
		u := histUpper(i)
		if histIndex(u) != i || histIndex(u+1) != i+1 {
			t.Fatalf("bucket %d: upper %d indexes %d, upper+1 indexes %d", i, u, histIndex(u), histIndex(u+1))
		}
	}
}
