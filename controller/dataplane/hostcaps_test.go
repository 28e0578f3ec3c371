package dataplane

import (
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
)

// TestHostCaps: a switch's learner takes new hosts up to its cap, all
// switches' learners together up to the total; what the data path needs
// gets in past them, and a learner that ends gives its hosts back.
func TestHostCaps(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	caps := NewHostCaps(3, 5)
	var refused []bool
	caps.Refused = func(dpid uint64, perSwitch bool) { refused = append(refused, perSwitch) }
	a, b := newL2Learner(model.TableL2, caps, 1), newL2Learner(model.TableL2, caps, 2)
	learn := func(l *L2Learner, n uint32, needed bool) bool {
		return l.learnHost(now, testnet.Addr4(n), [6]byte{2, 0, 0, 0, byte(n >> 8), byte(n)}, 1, needed)
	}
	for n := range uint32(4) {
		learn(&a, n+1, false)
	}
	if len(a.hosts) != 3 || caps.Held() != 3 || len(refused) != 1 || !refused[0] {
		t.Fatalf("a: %d hosts, %d held, refused %v; want 3, 3, [per switch]", len(a.hosts), caps.Held(), refused)
	}
	for n := range uint32(3) {
		learn(&b, 100+n, false)
	}
	if len(b.hosts) != 2 || caps.Held() != 5 || len(refused) != 2 || refused[1] {
		t.Fatalf("b: %d hosts, %d held, refused %v; want 2, 5, [.. total]", len(b.hosts), caps.Held(), refused)
	}
	if !learn(&b, 200, true) || caps.Held() != 6 {
		t.Fatalf("a host the data path needs was refused (%d held)", caps.Held())
	}
	// A known host is seen again past the caps.
	if _, ok := a.SeenHost(now, testnet.Addr4(1)); !ok || learn(&a, 1, false) {
		t.Fatal("a known host was not kept, or changed")
	}
	a.Release()
	if caps.Held() != 3 || len(a.hosts) != 0 {
		t.Fatalf("released: %d held, %d left; want 3, 0", caps.Held(), len(a.hosts))
	}
	// A full table takes a new host once it can forget the stale ones.
	later := now.Add(sdnlb.HostTTL + hostSweep)
	for n := range uint32(3) {
		learn(&a, n+1, false)
	}
	if !a.learnHost(later, testnet.Addr4(9), [6]byte{2, 9}, 1, false) || len(a.hosts) != 1 || caps.Held() != 4 {
		t.Fatalf("after the TTL: %d hosts, %d held; want 1, 4", len(a.hosts), caps.Held())
	}
}
