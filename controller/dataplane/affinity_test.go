package dataplane

import (
	"net/netip"
	"testing"
	"time"
)

// A binding adopted from a switch, whose newest connection of the client
// started 10 s ago, meets what the node's table holds: the newer of the
// two names the member, and a binding to the same member keeps the later
// expiry.
func TestAffinityTable_Adopt(t *testing.T) {
	const persist = time.Minute
	now := time.Unix(1_700_000_000, 0)
	since := now.Add(-10 * time.Second)
	client := netip.MustParseAddr("10.2.0.1")
	for _, tc := range []struct {
		name        string
		held        bool
		heldMember  uint32
		heldExpires time.Time
		member      uint32
		expires     time.Time
	}{
		{"None", false, 0, time.Time{}, 2, now.Add(persist)},
		{"Expired", true, 1, now.Add(-time.Second), 2, now.Add(persist)},
		{"OlderToAnother", true, 1, since.Add(persist - time.Second), 2, now.Add(persist)},
		{"NewerToAnother", true, 1, since.Add(persist + time.Second), 1, since.Add(persist + time.Second)},
		{"SameLater", true, 2, now.Add(persist + time.Second), 2, now.Add(persist + time.Second)},
		{"SameEarlier", true, 2, now.Add(time.Second), 2, now.Add(persist)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := NewAffinityTable()
			if tc.held {
				table.put(1, client, tc.heldMember, tc.heldExpires)
			}
			table.adopt(1, client, 2, since, now, persist)
			if m, ok := table.get(1, client, tc.expires); !ok || m != tc.member {
				t.Errorf("at %v the client is bound to %d (%v), want %d", tc.expires.Sub(now), m, ok, tc.member)
			}
			if _, ok := table.get(1, client, tc.expires.Add(time.Nanosecond)); ok {
				t.Errorf("the binding outlasts %v", tc.expires.Sub(now))
			}
		})
	}
}
