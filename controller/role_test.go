package controller

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// answerState answers the promotion's reads (sdnlb's flows, the groups)
// as a switch holding none, and returns what came until the first
// flow-mod, which it includes.
func (sw *fakeSwitch) answerState() []received {
	sw.tb.Helper()
	var got []received
	for {
		r := sw.next()
		got = append(got, r)
		switch m := r.m.(type) {
		case *ofp.MultipartRequest:
			switch m.Body.(type) {
			case ofp.FlowStatsRequest:
				sw.send(r.h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{}})
			case ofp.GroupDescRequest:
				sw.send(r.h.XID, ofp.MultipartReply{Body: ofp.GroupDescReply{}})
			}
		case *ofp.FlowMod:
			return got
		}
	}
}

func roleRequests(got []received) []ofp.RoleRequest {
	var out []ofp.RoleRequest
	for _, r := range got {
		if m, ok := r.m.(*ofp.RoleRequest); ok {
			out = append(out, *m)
		}
	}
	return out
}

func countMods(got []received) (n int) {
	for _, r := range got {
		switch r.m.(type) {
		case *ofp.FlowMod, *ofp.GroupMod, *ofp.PacketOut:
			n++
		}
	}
	return n
}

func TestController_Roles(t *testing.T) {
	var stale atomic.Int32
	switchPool := testConfig(func(c *sdnlb.Config) { c.Pools[0].Dispatch = sdnlb.DispatchSwitch })
	h := startController(t, switchPool, Options{Roles: true, OnStaleRole: func() { stale.Add(1) }})
	h.groups = true

	// A follower: SLAVE, and it leaves the switch alone.
	sw, got := h.connect(t, 1)
	if rr := roleRequests(got); len(rr) != 1 || rr[0] != (ofp.RoleRequest{Role: ofp.RoleSlave}) {
		t.Fatalf("role requests at the handshake: %+v, want one SLAVE", rr)
	}
	if n := countMods(got); n != 0 {
		t.Fatalf("a follower sent %d flow-mods, group-mods or packet-outs at the handshake", n)
	}
	sw.packetIn(1, syn(t, 40000))
	h.src.set(testConfig(func(c *sdnlb.Config) { c.Pools[0].Dispatch = sdnlb.DispatchSwitch; c.Members[0].Weight = 2 })) // reaches no slave
	if r, quiet := sw.quiet(200 * time.Millisecond); !quiet {
		t.Fatalf("a follower sent %s", r.h.Type)
	}

	// Leader: MASTER with the generation first, then the switch's state
	// is read and adopted.
	start := time.Now()
	h.c.SetRole(true, 7)
	got = sw.answerState()
	if rr := roleRequests(got); len(rr) != 1 || rr[0] != (ofp.RoleRequest{Role: ofp.RoleMaster, GenerationID: 7}) {
		t.Fatalf("role requests on promotion: %+v, want MASTER generation 7", rr)
	}
	if _, ok := got[0].m.(*ofp.RoleRequest); !ok {
		t.Fatalf("promotion began with %s, want the role request", got[0].h.Type)
	}
	t.Logf("promoted in %v", time.Since(start))
	// The adoption installs the whole configuration on an empty switch.
	for {
		r, quiet := sw.quiet(200 * time.Millisecond)
		if quiet {
			break
		}
		got = append(got, r)
	}
	if n := countMods(got); n < 3 {
		t.Fatalf("promotion sent %d mods, want the whole configuration", n)
	}

	// The same role again changes nothing.
	h.c.SetRole(true, 7)
	for {
		r, quiet := sw.quiet(200 * time.Millisecond)
		if quiet {
			break
		}
		if _, ok := r.m.(*ofp.RoleRequest); ok {
			t.Fatal("the same role asked twice")
		}
	}

	// Demoted: SLAVE with the new generation, and silence.
	h.c.SetRole(false, 8)
	r := sw.nextOf(ofp.TypeRoleRequest)
	if m := r.m.(*ofp.RoleRequest); *m != (ofp.RoleRequest{Role: ofp.RoleSlave, GenerationID: 8}) {
		t.Fatalf("demotion asked %+v", m)
	}
	sw.packetIn(1, syn(t, 40001))
	h.src.set(switchPool)
	if r, quiet := sw.quiet(200 * time.Millisecond); !quiet {
		t.Fatalf("a demoted controller sent %s", r.h.Type)
	}

	// A stale generation makes the node read the lease again.
	sw.send(r.h.XID, &ofp.ErrorMsg{ErrType: ofp.ErrTypeRoleRequestFailed, Code: ofp.RoleRequestFailedStale})
	waitStale := func(n int32, after string) {
		t.Helper()
		for deadline := time.Now().Add(waitFor); stale.Load() < n; {
			if time.Now().After(deadline) {
				t.Fatalf("OnStaleRole not called after %s", after)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitStale(1, "a stale role error")
	// So does a role status: another controller took MASTER.
	sw.send(0, ofp.Experimenter{Experimenter: ofp.ONFExperimenterID, ExpType: ofp.ONFTypeRoleStatus,
		Data: []byte{0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}})
	waitStale(2, "a role status")
}

func TestController_NoRoles(t *testing.T) {
	// The default: one controller, no role asked, the switch programmed.
	h := startController(t, testConfig(nil), Options{})
	h.c.SetRole(false, 3) // ignored without Roles
	_, got := h.connect(t, 1)
	if rr := roleRequests(got); len(rr) != 0 {
		t.Fatalf("role requests without roles: %+v", rr)
	}
	if countMods(got) == 0 {
		t.Fatal("no flow-mods at the handshake")
	}
}
