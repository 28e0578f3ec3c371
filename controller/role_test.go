package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/internal/testnet"
	"github.com/sdnlb/sdnlb/controller/model"
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
		if _, ok := r.m.(*ofp.FlowMod); ok {
			return got
		}
		sw.answerEmpty(r)
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

// setRole assigns switch dpid to this node ("self") as its MASTER, or to
// another node, with generation.
func setRole(c *Controller, dpid uint64, master bool, generation uint64) {
	node := "other"
	if master {
		node = "self"
	}
	c.SetMasters(Masters{Node: "self", Switches: []sdnlb.SwitchMaster{{DPID: model.FormatDPID(dpid), Node: node, Generation: generation}}})
}

func TestController_Roles(t *testing.T) {
	var stale atomic.Int32
	switchPool := testnet.Config(func(c *sdnlb.Config) { c.Pools[0].Dispatch = sdnlb.DispatchSwitch })
	h := startController(t, switchPool, Options{Roles: true, OnStaleRole: func() { stale.Add(1) }})
	h.groups = true

	// A slave: it leaves the switch alone.
	sw, got := h.connect(t, 1)
	if rr := roleRequests(got); len(rr) != 1 || rr[0] != (ofp.RoleRequest{Role: ofp.RoleSlave}) {
		t.Fatalf("role requests at the handshake: %+v, want one SLAVE", rr)
	}
	if n := countMods(got); n != 0 {
		t.Fatalf("a slave sent %d flow-mods, group-mods or packet-outs at the handshake", n)
	}
	sw.packetIn(1, testnet.SYN(t, 40000))
	h.src.set(testnet.Config(func(c *sdnlb.Config) { c.Pools[0].Dispatch = sdnlb.DispatchSwitch; c.Members[0].Weight = 2 })) // reaches no slave
	if r, quiet := sw.quiet(200 * time.Millisecond); !quiet {
		t.Fatalf("a slave sent %s", r.h.Type)
	}

	// Assigned the switch: MASTER with the generation first, then the
	// switch's state is read and adopted.
	start := time.Now()
	setRole(h.c, 1, true, 7)
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
	setRole(h.c, 1, true, 7)
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
	setRole(h.c, 1, false, 8)
	r := sw.nextOf(ofp.TypeRoleRequest)
	if m := r.m.(*ofp.RoleRequest); *m != (ofp.RoleRequest{Role: ofp.RoleSlave, GenerationID: 8}) {
		t.Fatalf("demotion asked %+v", m)
	}
	sw.packetIn(1, testnet.SYN(t, 40001))
	h.src.set(switchPool)
	if r, quiet := sw.quiet(200 * time.Millisecond); !quiet {
		t.Fatalf("a demoted controller sent %s", r.h.Type)
	}

	// A stale generation makes the node read the assignment again.
	sw.send(r.h.XID, &ofp.ErrorMsg{ErrType: ofp.ErrTypeRoleRequestFailed, Code: ofp.RoleRequestFailedStale})
	waitStale := func(n int32, after string) {
		t.Helper()
		for deadline := time.Now().Add(testnet.WaitFor); stale.Load() < n; {
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
	h := startController(t, testnet.Config(nil), Options{})
	setRole(h.c, 1, false, 3) // ignored without Roles
	_, got := h.connect(t, 1)
	if rr := roleRequests(got); len(rr) != 0 {
		t.Fatalf("role requests without roles: %+v", rr)
	}
	if countMods(got) == 0 {
		t.Fatal("no flow-mods at the handshake")
	}
}

// Each switch asks for the role the assignment gives it: MASTER of those
// assigned to this node while it may act as one, SLAVE of the others and
// of those no node masters, each with its own generation; the API shows
// each switch's master.
func TestController_RolesPerSwitch(t *testing.T) {
	h := startController(t, testnet.Config(nil), Options{Roles: true})
	assign := Masters{Node: "self", Unassigned: 5 << 32, Switches: []sdnlb.SwitchMaster{
		{DPID: model.FormatDPID(1), Node: "self", Generation: 5<<32 + 1},
		{DPID: model.FormatDPID(2), Node: "other", Generation: 5<<32 + 2},
	}}
	h.c.SetMasters(assign)
	want := map[uint64]ofp.RoleRequest{
		1: {Role: ofp.RoleMaster, GenerationID: 5<<32 + 1},
		2: {Role: ofp.RoleSlave, GenerationID: 5<<32 + 2},
		3: {Role: ofp.RoleSlave, GenerationID: 5 << 32},
	}
	switches := map[uint64]*fakeSwitch{}
	for dpid := uint64(1); dpid <= 3; dpid++ {
		sw, got := h.connect(t, dpid)
		switches[dpid] = sw
		if rr := roleRequests(got); len(rr) != 1 || rr[0] != want[dpid] {
			t.Fatalf("switch %d asked %+v at the handshake, want %+v", dpid, rr, want[dpid])
		}
		if n := countMods(got); (n > 0) != (dpid == 1) {
			t.Fatalf("switch %d: %d mods at the handshake", dpid, n)
		}
	}
	sws, err := h.c.Switches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"self", "other", ""} {
		if sws[i].Master != want {
			t.Errorf("switch %s: master %q, want %q", sws[i].DPID, sws[i].Master, want)
		}
	}
	if ids := h.c.SwitchIDs(); len(ids) != 3 {
		t.Fatalf("SwitchIDs %q, want the three", ids)
	}

	// No longer sure of the assignment: SLAVE of every switch, the
	// master's with its generation, the others asked nothing new.
	assign.Node = ""
	h.c.SetMasters(assign)
	if m := switches[1].nextOf(ofp.TypeRoleRequest).m.(*ofp.RoleRequest); *m != (ofp.RoleRequest{Role: ofp.RoleSlave, GenerationID: 5<<32 + 1}) {
		t.Fatalf("switch 1 asked %+v, want SLAVE", m)
	}
	for _, dpid := range []uint64{2, 3} {
		if r, quiet := switches[dpid].quiet(200 * time.Millisecond); !quiet {
			t.Fatalf("switch %d was sent %s", dpid, r.h.Type)
		}
	}
}

// A promotion gives the switch a new dataplane while the API lists the
// switches and reads their flows, the stats are polled, members change
// health and the configuration changes. Under -race, this fails if any of them reaches
// the dataplane other than through its connection's lock.
func TestController_RoleChangesWhileServing(t *testing.T) {
	const (
		roleChanges = 100 // alternating promotions and demotions
		maxPerRound = 200 // calls of each loop during one role change
	)
	deadline := time.Now().Add(10 * time.Second)
	h := startController(t, testnet.Config(nil), Options{Roles: true})
	h.groups = true // so the polls and the promotions ask for groups too
	sw, _ := h.connect(t, 1)

	// Each role change is a round: the loops repeat their call until the
	// switch saw the change take effect, so every promotion has them all
	// running around it. A round's channel is closed when it ends.
	var wg sync.WaitGroup
	var rounds []chan chan struct{}
	running := func(ended <-chan struct{}) bool {
		select {
		case <-ended:
			return false
		default:
			return time.Now().Before(deadline)
		}
	}
	during := func(what string, call func(i int) error) {
		next := make(chan chan struct{}, 1)
		rounds = append(rounds, next)
		wg.Go(func() {
			i := 0
			for ended := range next {
				for n := 0; n < maxPerRound && running(ended); n, i = n+1, i+1 {
					if err := call(i); err != nil {
						t.Errorf("%s: %v", what, err)
						for range next { // the rounds go on without this loop
						}
						return
					}
				}
			}
		})
	}
	ctx := context.Background()
	during("Switches", func(int) error {
		sws, err := h.c.Switches(ctx)
		if err == nil && (len(sws) != 1 || !sws[0].SelectGroups) {
			err = fmt.Errorf("%+v, want the one switch, with select groups", sws)
		}
		return err
	})
	during("SwitchFlows", func(int) error {
		_, err := h.c.SwitchFlows(ctx, model.FormatDPID(1))
		return err
	})
	during("stats poll", func(int) error {
		h.c.pollStats()
		return nil
	})
	during("health events", func(i int) error {
		h.src.setHealth("m3", []sdnlb.MemberStatus{sdnlb.MemberDown, sdnlb.MemberUp}[i%2])
		return nil
	})
	during("configuration", func(i int) error {
		h.src.set(testnet.Config(func(c *sdnlb.Config) {
			if i%2 == 0 {
				c.Members[1].Health.Status = sdnlb.MemberDown
			}
		}))
		return nil
	})

	// applied carries each role change as the switch saw it take effect:
	// a SLAVE request, or the first flow-mod after a MASTER request (the
	// adoption's). One per change, so the sends never block.
	applied := make(chan bool, roleChanges)
	wg.Go(func() {
		defer func() {
			for _, next := range rounds {
				close(next)
			}
		}()
		for gen := uint64(1); gen <= roleChanges && time.Now().Before(deadline); gen++ {
			ended := make(chan struct{})
			for _, next := range rounds {
				next <- ended
			}
			master := gen%2 == 1
			setRole(h.c, 1, master, gen)
			select {
			case got := <-applied:
				close(ended)
				if got != master {
					t.Errorf("generation %d: the switch saw master=%v, want %v", gen, got, master)
					return
				}
			case <-time.After(testnet.WaitFor):
				t.Errorf("generation %d: master=%v never took effect", gen, master)
				return
			}
		}
	})

	// The switch answers every request as one that holds none of sdnlb's
	// flows, until the loops are done.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	promoting := false
	for {
		var r received
		select {
		case r = <-sw.msgs:
		case <-finished:
			return
		}
		switch m := r.m.(type) {
		case *ofp.RoleRequest:
			sw.send(r.h.XID, ofp.RoleReply{Role: m.Role, GenerationID: m.GenerationID})
			promoting = m.Role == ofp.RoleMaster
			if !promoting {
				applied <- false
			}
		case *ofp.FlowMod:
			if promoting {
				promoting = false
				applied <- true
			}
		default:
			sw.answerEmpty(r)
		}
	}
}
