package dataplane

import (
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
)

func TestL2Learner_Hosts(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	mac := [6]byte{0xaa, 0, 0, 0, 0, 1}
	l := newL2Learner(model.TableL2, NewHostCaps(MaxLearned, MaxLearned), 1)
	if !l.learnHost(now, testnet.Addr4(1), mac, 3, false) {
		t.Error("a new host did not change the table")
	}
	if _, ok := l.SeenHost(now.Add(sdnlb.HostTTL), testnet.Addr4(1)); !ok {
		t.Errorf("a host seen %v ago is not known", sdnlb.HostTTL)
	}
	if _, ok := l.SeenHost(now.Add(sdnlb.HostTTL+time.Nanosecond), testnet.Addr4(1)); ok {
		t.Errorf("a host seen over %v ago is known", sdnlb.HostTTL)
	}
	if _, ok := l.Host(testnet.Addr4(1)); !ok {
		t.Error("the data path lost a host that was not seen for a while")
	}
	// A packet from it again: no change, but seen now.
	later := now.Add(time.Hour)
	if l.learnHost(later, testnet.Addr4(1), mac, 3, false) {
		t.Error("seeing a host again changed the table")
	}
	if _, ok := l.SeenHost(later, testnet.Addr4(1)); !ok {
		t.Error("a host seen again is not known")
	}
	// A host only the switch's flows named was never seen.
	l.seedHost(testnet.Addr4(2), mac, 0)
	if _, ok := l.SeenHost(later, testnet.Addr4(2)); ok {
		t.Error("a host the switch's flows named counts as seen")
	}
}
