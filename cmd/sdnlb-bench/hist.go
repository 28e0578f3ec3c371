package main

import (
	"math"
	"math/bits"
	"time"
)

// histogram counts latencies in HDR-style log-linear buckets: exact below
// 128 ns, then 64 buckets per power of two, so a reported percentile is
// within 1/64 (1.6 %) of the true value. Fixed size, no allocation per
// sample, and histograms of several switches merge by addition.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    time.Duration
}

const (
	histSubBits = 7
	histHalf    = 1 << (histSubBits - 1) // 64
	histLinear  = 1 << histSubBits       // 128
	histBuckets = histLinear + 56*histHalf
)

func histIndex(v uint64) int {
	if v < histLinear {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits // v>>shift is in [64, 128)
	i := histLinear + (shift-1)*histHalf + int(v>>shift) - histHalf
	return min(i, histBuckets-1)
}

// histUpper is the largest value that falls in bucket i.
func histUpper(i int) uint64 {
	if i < histLinear {
		return uint64(i)
	}
	shift := (i-histLinear)/histHalf + 1
	m := uint64((i-histLinear)%histHalf + histHalf)
	return (m+1)<<shift - 1
}

func (h *histogram) record(d time.Duration) {
	d = max(d, 0)
	h.counts[histIndex(uint64(d))]++
	h.n++
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

func (h *histogram) reset() { *h = histogram{} }

// percentile returns the smallest bucket bound at or below which a
// fraction p of the samples lie (never above the maximum seen).
func (h *histogram) percentile(p float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(p * float64(h.n)))
	rank = min(max(rank, 1), h.n)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(time.Duration(histUpper(i)), h.max)
		}
	}
	return h.max
}
