package sched

import (
	"fmt"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// BenchmarkPick picks from a 10-member pool from all Ps at once, as the
// switch goroutines do; every method must report 0 allocs/op.
func BenchmarkPick(b *testing.B) {
	const n = 10
	weights := make([]int, n)
	load := &fakeLoad{conns: make([]int64, n), bytes: make([]uint64, n)}
	for i := range n {
		weights[i] = 1 + i*25
		load.conns[i] = int64(100 - i)
		load.bytes[i] = uint64(1e9 - i)
	}
	for _, m := range sdnlb.LBMethods {
		b.Run(string(m), func(b *testing.B) {
			s := mustNew(b, m, membersOf(weights...), load)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				k := Key{ClientIP: 0x0a000001, Proto: 6}
				for pb.Next() {
					k.ClientPort++
					s.Pick(k)
				}
			})
		})
	}
}

// BenchmarkNew measures the per-snapshot build cost of the methods with a
// table.
func BenchmarkNew(b *testing.B) {
	for _, m := range []sdnlb.LBMethod{sdnlb.ConsistentHash, sdnlb.WeightedRoundRobin} {
		for _, n := range []int{10, 256, 1000} {
			b.Run(fmt.Sprintf("%s/%d", m, n), func(b *testing.B) {
				members := uuidMembers(n, 1)
				for i := range members {
					members[i].Weight = 1 + i%MaxWeight
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := New(m, members, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
