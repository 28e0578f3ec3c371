package sched

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// fakeLoad serves fixed per-index counters; indexes it does not know read 0.
// Tests that mutate it do so between picks, never concurrently.
type fakeLoad struct {
	conns []int64
	bytes []uint64
}

var _ Load = (*fakeLoad)(nil)

func (f *fakeLoad) ActiveConns(index int) int64 {
	if index < 0 || index >= len(f.conns) {
		return 0
	}
	return f.conns[index]
}

func (f *fakeLoad) Bytes(index int) uint64 {
	if index < 0 || index >= len(f.bytes) {
		return 0
	}
	return f.bytes[index]
}

// membersOf returns members m0, m1, ... with Index i and the given weights.
func membersOf(weights ...int) []Member {
	ms := make([]Member, len(weights))
	for i, w := range weights {
		ms[i] = Member{Index: i, ID: fmt.Sprintf("m%d", i), Weight: w}
	}
	return ms
}

func mustNew(tb testing.TB, method sdnlb.LBMethod, members []Member, load Load) Scheduler {
	tb.Helper()
	s, err := New(method, members, load)
	if err != nil {
		tb.Fatalf("New(%s): %v", method, err)
	}
	return s
}

// mustPickN picks n times with k and returns the indexes.
func mustPickN(tb testing.TB, s Scheduler, k Key, n int) []int {
	tb.Helper()
	out := make([]int, n)
	for i := range out {
		idx, ok := s.Pick(k)
		if !ok {
			tb.Fatalf("pick %d: ok=false", i)
		}
		out[i] = idx
	}
	return out
}

func TestMethods(t *testing.T) {
	// The API's lb_method names: a contract with clients, so spelled out here.
	want := []sdnlb.LBMethod{
		"ROUND_ROBIN", "WEIGHTED_ROUND_ROBIN", "LEAST_CONNECTIONS", "WEIGHTED_LEAST_CONNECTIONS",
		"RANDOM", "LEAST_BYTES", "SOURCE_IP", "CONSISTENT_HASH", "ADAPTIVE",
	}
	if !slices.Equal(sdnlb.LBMethods, want) {
		t.Fatalf("sdnlb.LBMethods = %v, want %v", sdnlb.LBMethods, want)
	}
	// The API validates lb_method against that list: every name it accepts
	// must build a scheduler.
	load := &fakeLoad{conns: make([]int64, 1), bytes: make([]uint64, 1)}
	for _, m := range sdnlb.LBMethods {
		t.Run(string(m), func(t *testing.T) {
			if _, err := New(m, membersOf(1), load); err != nil {
				t.Errorf("New(%q): %v", m, err)
			}
		})
	}
	for _, name := range []sdnlb.LBMethod{"", "round_robin", "LEAST_CONN", "ROUND_ROBIN ", "WRR"} {
		t.Run("Invalid/"+string(name), func(t *testing.T) {
			if _, err := New(name, membersOf(1), load); !errors.Is(err, ErrUnknownMethod) {
				t.Errorf("New(%q) err = %v, want ErrUnknownMethod", name, err)
			}
		})
	}
}

func TestNew_Errors(t *testing.T) {
	load := &fakeLoad{}
	tooMany := make([]Member, MaxMembers+1)
	for i := range tooMany {
		tooMany[i] = Member{Index: i, ID: fmt.Sprint(i), Weight: 1}
	}
	tests := []struct {
		name    string
		method  sdnlb.LBMethod
		members []Member
		load    Load
		want    error
	}{
		{"ErrUnknownMethod", "FASTEST", membersOf(1), load, ErrUnknownMethod},
		{"ErrUnknownMethodEmpty", "", nil, load, ErrUnknownMethod},
		{"ErrWeightZero", sdnlb.RoundRobin, membersOf(1, 0), load, ErrInvalidMember},
		{"ErrWeightTooLarge", sdnlb.WeightedRoundRobin, membersOf(257), load, ErrInvalidMember},
		{"ErrNegativeIndex", sdnlb.RoundRobin, []Member{{Index: -1, ID: "a", Weight: 1}}, load, ErrInvalidMember},
		{"ErrEmptyID", sdnlb.ConsistentHash, []Member{{Index: 0, Weight: 1}}, load, ErrInvalidMember},
		{"ErrDuplicateID", sdnlb.SourceIP, []Member{{Index: 0, ID: "a", Weight: 1}, {Index: 1, ID: "a", Weight: 1}}, load, ErrInvalidMember},
		{"ErrTooManyMembers", sdnlb.RoundRobin, tooMany, load, ErrInvalidMember},
		{"ErrNoLoad/LEAST_CONNECTIONS", sdnlb.LeastConnections, membersOf(1), nil, ErrNoLoad},
		{"ErrNoLoad/WEIGHTED_LEAST_CONNECTIONS", sdnlb.WeightedLeastConnections, membersOf(1), nil, ErrNoLoad},
		{"ErrNoLoad/LEAST_BYTES", sdnlb.LeastBytes, membersOf(1), nil, ErrNoLoad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.method, tt.members, tt.load)
			if !errors.Is(err, tt.want) {
				t.Fatalf("New() error = %v, want %v", err, tt.want)
			}
			if s != nil {
				t.Errorf("New() returned a scheduler with error %v", err)
			}
		})
	}
}

func TestPick_Empty(t *testing.T) {
	for _, m := range sdnlb.LBMethods {
		t.Run(string(m), func(t *testing.T) {
			for _, members := range [][]Member{nil, {}} {
				s := mustNew(t, m, members, &fakeLoad{})
				if idx, ok := s.Pick(Key{ClientIP: 0x0a000001}); ok {
					t.Errorf("Pick() = %d, true; want ok=false", idx)
				}
			}
		})
	}
}

// TestPick_ReturnsMemberIndex checks that every method answers with
// Member.Index, not the member's position, and never anything else.
func TestPick_ReturnsMemberIndex(t *testing.T) {
	members := []Member{
		{Index: 30, ID: "c", Weight: 3},
		{Index: 10, ID: "a", Weight: 1},
		{Index: 20, ID: "b", Weight: 2},
	}
	load := &fakeLoad{conns: make([]int64, 31), bytes: make([]uint64, 31)}
	for _, m := range sdnlb.LBMethods {
		t.Run(string(m), func(t *testing.T) {
			s := mustNew(t, m, members, load)
			seen := map[int]bool{}
			for i := range 300 {
				idx, ok := s.Pick(Key{ClientIP: uint32(i) * 2654435761, ClientPort: uint16(i), Proto: 6})
				if !ok {
					t.Fatal("Pick ok=false")
				}
				seen[idx] = true
			}
			for idx := range seen {
				if idx != 10 && idx != 20 && idx != 30 {
					t.Errorf("Pick returned %d, not a member index", idx)
				}
			}
		})
	}
}

func TestPick_SingleMember(t *testing.T) {
	members := []Member{{Index: 7, ID: "only", Weight: 200}}
	load := &fakeLoad{conns: []int64{7: 1 << 50}, bytes: []uint64{7: 1 << 63}}
	for _, m := range sdnlb.LBMethods {
		t.Run(string(m), func(t *testing.T) {
			s := mustNew(t, m, members, load)
			for i := range 50 {
				idx, ok := s.Pick(Key{ClientIP: uint32(i), ClientPort: uint16(i)})
				if !ok || idx != 7 {
					t.Fatalf("pick %d = %d, %v; want 7, true", i, idx, ok)
				}
			}
		})
	}
}

func TestPick_NoAllocs(t *testing.T) {
	load := &fakeLoad{conns: []int64{3, 1, 4, 1, 5}, bytes: []uint64{9, 2, 6, 5, 3}}
	for _, m := range sdnlb.LBMethods {
		t.Run(string(m), func(t *testing.T) {
			s := mustNew(t, m, membersOf(5, 1, 3, 2, 4), load)
			k := Key{ClientIP: 0xc0a80001, ClientPort: 40000, Proto: 6}
			if allocs := testing.AllocsPerRun(1000, func() { s.Pick(k) }); allocs != 0 {
				t.Errorf("Pick allocates %v times", allocs)
			}
		})
	}
}

// TestPick_Concurrent runs under -race: many goroutines pick from one
// scheduler. For the counter-driven methods the totals are exact.
func TestPick_Concurrent(t *testing.T) {
	const goroutines, perGoroutine = 8, 3 * 6 * 100 // a multiple of both cycles below
	exact := map[sdnlb.LBMethod]map[int]int{
		sdnlb.RoundRobin:         {0: goroutines * perGoroutine / 3, 1: goroutines * perGoroutine / 3, 2: goroutines * perGoroutine / 3},
		sdnlb.WeightedRoundRobin: {0: goroutines * perGoroutine * 3 / 6, 1: goroutines * perGoroutine * 2 / 6, 2: goroutines * perGoroutine / 6},
	}
	load := &fakeLoad{conns: []int64{2, 1, 3}, bytes: []uint64{5, 9, 1}}
	for _, m := range sdnlb.LBMethods {
		t.Run(string(m), func(t *testing.T) {
			s := mustNew(t, m, membersOf(3, 2, 1), load)
			counts := make([][3]int, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range perGoroutine {
						idx, ok := s.Pick(Key{ClientIP: uint32(g<<16 | i), ClientPort: uint16(i), Proto: 17})
						if !ok || idx < 0 || idx > 2 {
							t.Errorf("Pick() = %d, %v", idx, ok)
							return
						}
						counts[g][idx]++
					}
				})
			}
			wg.Wait()
			total := map[int]int{}
			for _, c := range counts {
				for idx, n := range c {
					total[idx] += n
				}
			}
			if want, ok := exact[m]; ok {
				for idx, n := range want {
					if total[idx] != n {
						t.Errorf("member %d picked %d times, want %d (all: %v)", idx, total[idx], n, total)
					}
				}
			}
		})
	}
}

// FuzzNew builds every method from arbitrary members: New either fails or
// returns a scheduler whose picks are always one of the members.
func FuzzNew(f *testing.F) {
	f.Add(uint8(0), []byte{1, 2, 3}, uint32(0x0a000001), uint16(80))
	f.Add(uint8(7), []byte{0, 255, 9}, uint32(0), uint16(0))
	f.Add(uint8(8), []byte{}, uint32(1<<31), uint16(65535))
	f.Fuzz(func(t *testing.T, method uint8, weights []byte, ip uint32, port uint16) {
		if len(weights) > 64 {
			weights = weights[:64]
		}
		members := make([]Member, len(weights))
		for i, w := range weights {
			members[i] = Member{Index: i * 3, ID: fmt.Sprintf("id-%d", w) + fmt.Sprint(i%4), Weight: int(w)}
		}
		load := &fakeLoad{conns: make([]int64, 3*len(weights)), bytes: make([]uint64, 3*len(weights))}
		for i := range load.conns {
			load.conns[i] = int64(ip) - int64(i)*int64(port)
			load.bytes[i] = uint64(ip) * uint64(i)
		}
		m := sdnlb.LBMethods[int(method)%len(sdnlb.LBMethods)]
		s, err := New(m, members, load)
		if err != nil {
			return
		}
		for i := range 20 {
			idx, ok := s.Pick(Key{ClientIP: ip + uint32(i), ClientPort: port, Proto: 6})
			if ok != (len(members) > 0) || ok && (idx%3 != 0 || idx/3 >= len(members)) {
				t.Fatalf("%s: Pick() = %d, %v with %d members", m, idx, ok, len(members))
			}
		}
	})
}

// TestContinue checks that a rebuilt scheduler takes its turns on from the
// one it replaces, for every method that has turns, and that a rebuild after
// every pick still spreads evenly.
func TestContinue(t *testing.T) {
	t.Run("RoundRobinGrows", func(t *testing.T) {
		prev := mustNew(t, sdnlb.RoundRobin, membersOf(1, 1), nil)
		mustPickN(t, prev, Key{}, 3) // 0 1 0
		next := mustNew(t, sdnlb.RoundRobin, membersOf(1, 1, 1), nil)
		Continue(next, prev)
		if got, want := mustPickN(t, next, Key{}, 4), []int{0, 1, 2, 0}; !slices.Equal(got, want) {
			t.Errorf("picks after the rebuild = %v, want %v", got, want)
		}
	})
	t.Run("RebuiltEveryPick", func(t *testing.T) {
		for _, method := range []sdnlb.LBMethod{sdnlb.RoundRobin, sdnlb.WeightedRoundRobin,
			sdnlb.LeastConnections, sdnlb.WeightedLeastConnections, sdnlb.LeastBytes, sdnlb.Adaptive} {
			t.Run(string(method), func(t *testing.T) {
				load := &fakeLoad{conns: make([]int64, 3), bytes: make([]uint64, 3)}
				var s Scheduler
				counts := make([]int, 3)
				for range 30 {
					next := mustNew(t, method, membersOf(1, 1, 1), load)
					if s != nil {
						Continue(next, s)
					}
					s = next
					counts[mustPickN(t, s, Key{}, 1)[0]]++
				}
				if !slices.Equal(counts, []int{10, 10, 10}) {
					t.Errorf("picks by member = %v, want 10 each", counts)
				}
			})
		}
	})
	t.Run("WithoutTurns", func(t *testing.T) {
		prev := mustNew(t, sdnlb.SourceIP, membersOf(1, 1), nil)
		next := mustNew(t, sdnlb.RoundRobin, membersOf(1, 1), nil)
		Continue(next, prev) // nothing to carry
		if got := mustPickN(t, next, Key{}, 1)[0]; got != 0 {
			t.Errorf("first pick = %d, want 0", got)
		}
	})
}

// ADAPTIVE picks by its weights as WEIGHTED_ROUND_ROBIN does: the
// controller moves them.
func TestAdaptive_IsWeightedRoundRobin(t *testing.T) {
	a := mustPickN(t, mustNew(t, sdnlb.Adaptive, membersOf(4, 2, 1), nil), Key{}, 14)
	w := mustPickN(t, mustNew(t, sdnlb.WeightedRoundRobin, membersOf(4, 2, 1), nil), Key{}, 14)
	if !slices.Equal(a, w) {
		t.Errorf("ADAPTIVE picks %v, WEIGHTED_ROUND_ROBIN %v", a, w)
	}
}
