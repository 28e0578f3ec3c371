package dataplane

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
)

// A setup is lost only when RecentWays newer setups take its set.
func TestRecent_SetAssociative(t *testing.T) {
	recent := new(recentCache)
	base := model.ConnKey{ClientIP: testnet.Addr4(0x0a000105), VIPNum: 1}
	var same []uint16 // client ports whose setups share a set
	for port := uint16(1); len(same) < model.RecentWays+1; port++ {
		k := base
		k.ClientPort = port
		if k.Set() == base.Set() {
			same = append(same, port)
		}
	}
	now := time.Unix(1_700_000_000, 0)
	for i, port := range same {
		c := model.Connection{ClientIP: netip.AddrFrom4([4]byte{10, 0, 1, 5}), ClientPort: port, VIPNum: 1, MemberNum: uint32(i + 1)}
		recent.remember(now.Add(time.Duration(i)*time.Millisecond), &c)
	}
	for i, port := range same {
		k := base
		k.ClientPort = port
		kept := recent.setup(k).key == k
		if want := i > 0; kept != want {
			t.Errorf("setup %d of %d in one set: kept %v, want %v", i+1, len(same), kept, want)
		}
	}
}

// A switch that reports a counter as all ones (OpenFlow's "unavailable")
// adds nothing to the sums, which never go back.
func TestFlowLedger_UnavailableCounters(t *testing.T) {
	l := NewFlowLedger(false)
	id := flowID{}
	if p, b, _ := l.read(id, 1, countsIn, 2500, 100_000, 1, 0); p != 2500 || b != 100_000 {
		t.Fatalf("first reading counted %d packets %d bytes", p, b)
	}
	if p, b, _ := l.read(id, 1, countsIn, ^uint64(0), ^uint64(0), 2, 0); p != 0 || b != 0 {
		t.Errorf("an unavailable reading counted %d packets %d bytes, want none", p, b)
	}
	if p, b, _ := l.read(id, 1, countsIn, 2600, ^uint64(0), 3, 0); p != 100 || b != 0 {
		t.Errorf("packets 2600 and bytes unavailable counted %d packets %d bytes, want 100 and none", p, b)
	}
}
