package sched

import (
	"slices"
	"testing"

	"github.com/sdnlb/sdnlb"
)

func TestSourceIP_StablePerClient(t *testing.T) {
	s := mustNew(t, sdnlb.SourceIP, membersOf(1, 1, 1, 1, 1), nil)
	for ip := uint32(0x0a000000); ip < 0x0a000000+200; ip++ {
		first, _ := s.Pick(Key{ClientIP: ip, ClientPort: 1024, Proto: 6})
		for port := uint16(1025); port < 1060; port++ {
			for _, proto := range []uint8{1, 6, 17} {
				if idx, _ := s.Pick(Key{ClientIP: ip, ClientPort: port, Proto: proto}); idx != first {
					t.Fatalf("client %08x port %d proto %d went to %d, first to %d", ip, port, proto, idx, first)
				}
			}
		}
	}
}

// TestSourceIP_IndependentOfOrder checks that the same member set listed in
// another order sends every client to the same member ID.
func TestSourceIP_IndependentOfOrder(t *testing.T) {
	members := membersOf(1, 1, 1, 1, 1, 1)
	reversed := slices.Clone(members)
	slices.Reverse(reversed)
	for i := range reversed {
		reversed[i].Index = i
	}
	a := mustNew(t, sdnlb.SourceIP, members, nil)
	b := mustNew(t, sdnlb.SourceIP, reversed, nil)
	for ip := range uint32(1000) {
		k := Key{ClientIP: 0xc0a80000 + ip}
		ia, _ := a.Pick(k)
		ib, _ := b.Pick(k)
		if members[ia].ID != reversed[ib].ID {
			t.Fatalf("client %08x: %s in one order, %s in the other", k.ClientIP, members[ia].ID, reversed[ib].ID)
		}
	}
}

func TestSourceIP_Spread(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		first uint32
		step  uint32
	}{
		{"Sequential/4", 4, 0x0a000001, 1},
		{"Sequential/7", 7, 0xc0a80001, 1},
		{"Subnets/5", 5, 0x0a000001, 256}, // one client per /24
		{"EvenOnly/2", 2, 0x0a000000, 2},  // a hash mod n of the raw address would put all on one
	}
	const clients = 20000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			weights := make([]int, tt.n)
			for i := range weights {
				weights[i] = 1
			}
			s := mustNew(t, sdnlb.SourceIP, membersOf(weights...), nil)
			counts := make([]int, tt.n)
			for i := range uint32(clients) {
				idx, _ := s.Pick(Key{ClientIP: tt.first + i*tt.step})
				counts[idx]++
			}
			want := clients / tt.n
			for i, c := range counts {
				if c < want*90/100 || c > want*110/100 {
					t.Errorf("member %d got %d clients, want %d ± 10 %% (all %v)", i, c, want, counts)
				}
			}
		})
	}
}
