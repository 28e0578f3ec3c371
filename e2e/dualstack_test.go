//go:build e2e

package e2e

import (
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// family is one address family of a dual-stack bed: how a switch and a
// host name their addresses in it.
type family struct {
	name   string
	addr   func(sw *Switch, n byte) string
	hostIP func(h *Host) string
}

var families = []family{
	{"IPv4", (*Switch).Addr, func(h *Host) string { return h.IP }},
	{"IPv6", (*Switch).Addr6, func(h *Host) string { return h.IP6 }},
}

// dualPath is one VIP of a dualBed: a family, a dispatch and a forwarding.
type dualPath struct {
	name    string
	url     string
	pool    sdnlb.Pool
	members []*sdnlb.Member // by server, in the bed's order
}

// dualBed is a switch with one dual-stack client and three dual-stack
// members, and in each family a SWITCH NAT, a SWITCH DSR and a CONTROLLER
// NAT VIP over the same members, each pool with an HTTP monitor. The NAT
// pools' members serve memberPort, the DSR pools' dualDSRPort, with both
// DSR VIPs held on their loopback.
type dualBed struct {
	sw      *Switch
	lb      *sdnlbProc
	client  *Host
	hosts   []*Host
	servers [][]*HTTPServer // per host: memberPort, dualDSRPort
	paths   []*dualPath
}

const dualDSRPort = 8082

func newDualBed(t *testing.T) *dualBed {
	t.Helper()
	b := &dualBed{sw: NewSwitch(t)}
	b.client = b.sw.AddHost(t, "c1", b.sw.Addr(1))
	for i := range 3 {
		h := b.sw.AddHost(t, "m"+strconv.Itoa(i+1), b.sw.Addr(byte(11+i)))
		name := "srv" + strconv.Itoa(i+1)
		b.hosts = append(b.hosts, h)
		b.servers = append(b.servers, []*HTTPServer{h.ServeHTTP(t, memberPort, name), h.ServeHTTP(t, dualDSRPort, name)})
	}
	b.lb = startSDNLB(t)
	b.lb.Connect(b.sw)
	dumpOnFailure(t, b.sw, b.lb)

	kinds := []struct {
		name     string
		dispatch sdnlb.Dispatch
		fwd      sdnlb.Forwarding
	}{
		{"SWITCH NAT", sdnlb.DispatchSwitch, sdnlb.ForwardingNAT},
		{"SWITCH DSR", sdnlb.DispatchSwitch, sdnlb.ForwardingDSR},
		{"CONTROLLER NAT", sdnlb.DispatchController, sdnlb.ForwardingNAT},
	}
	buckets := 0
	for fi, f := range families {
		for ki, k := range kinds {
			addr := f.addr(b.sw, byte(100+3*fi+ki))
			vipPort, memberPort := vipPort, memberPort
			if k.fwd == sdnlb.ForwardingDSR {
				vipPort, memberPort = dualDSRPort, 0
				for _, h := range b.hosts {
					h.HoldVIP(t, addr)
				}
			}
			p := &dualPath{name: f.name + " " + k.name, url: "http://" + net.JoinHostPort(addr, strconv.Itoa(vipPort)) + "/"}
			vip := b.lb.MustCreateVIP(k.name, addr, sdnlb.ProtocolTCP, vipPort, nil)
			b.lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"name": p.name, "vip_id": vip.ID, "lb_method": sdnlb.RoundRobin,
				"protocol": sdnlb.ProtocolTCP, "dispatch": k.dispatch, "forwarding": k.fwd}, http.StatusCreated, &p.pool)
			for _, h := range b.hosts {
				p.members = append(p.members, b.lb.MustCreateMember(&p.pool, f.hostIP(h), memberPort))
			}
			b.lb.MustCreateMonitor(&p.pool, httpMonitorFields())
			for _, m := range p.members {
				b.lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
			}
			if k.dispatch == sdnlb.DispatchSwitch {
				buckets += len(b.hosts)
			}
			b.paths = append(b.paths, p)
		}
	}
	(&lbBed{sw: b.sw}).waitBuckets(t, buckets, 10*time.Second)
	return b
}

// requirePaths sends each path 30 new connections and
// requires that they all get an answer and that the answers come from
// exactly want. The switch hashes each connection's random source port: 30
// leave a member of three without one about once in 60,000 runs.
func (b *dualBed) requirePaths(t *testing.T, step string, want ...string) {
	t.Helper()
	const n = 30
	for _, p := range b.paths {
		counts := spread(t, []*Host{b.client}, p.url, n)
		t.Logf("%s, %s: %v", step, p.name, counts)
		for _, w := range want {
			if counts[w] == 0 {
				t.Errorf("%s, %s: no answer from %s: %v", step, p.name, w, counts)
			}
		}
		if total(counts) != n || len(counts) != len(want) {
			t.Errorf("%s, %s: answers %v, want %d from %v alone", step, p.name, counts, n, want)
		}
	}
}

// An IPv4 and an IPv6 VIP over the same members, in SWITCH NAT, SWITCH
// DSR and CONTROLLER NAT, through the same scenarios: every VIP spreads
// its connections; a member whose server stops leaves every pool and
// comes back; a drained member takes no new connection; a restarted
// controller finds every path working.
func TestDualStack_EveryPath(t *testing.T) {
	b := newDualBed(t)
	b.requirePaths(t, "at the start", "srv1", "srv2", "srv3")

	for _, s := range b.servers[0] {
		s.Stop()
	}
	for _, p := range b.paths {
		b.lb.WaitMemberStatus(p.members[0].ID, sdnlb.MemberDown, 10*time.Second)
	}
	b.requirePaths(t, "with srv1 down", "srv2", "srv3")
	for _, s := range b.servers[0] {
		s.Restart(t)
	}
	for _, p := range b.paths {
		b.lb.WaitMemberStatus(p.members[0].ID, sdnlb.MemberUp, 10*time.Second)
	}

	for _, p := range b.paths {
		b.lb.MustAPI(http.MethodPatch, "/v1/members/"+p.members[1].ID, map[string]any{"admin_state_up": false}, http.StatusOK, nil)
	}
	(&lbBed{sw: b.sw}).waitBuckets(t, 2*2*len(families), 10*time.Second)
	b.requirePaths(t, "with srv2 drained", "srv1", "srv3")
	for _, p := range b.paths {
		b.lb.MustAPI(http.MethodPatch, "/v1/members/"+p.members[1].ID, map[string]any{"admin_state_up": true}, http.StatusOK, nil)
	}
	(&lbBed{sw: b.sw}).waitBuckets(t, 2*3*len(families), 10*time.Second)

	b.lb.Kill()
	b.lb = startSDNLB(t, "--db", b.lb.DB)
	b.lb.Connect(b.sw)
	for _, p := range b.paths {
		for _, m := range p.members {
			b.lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
		}
	}
	b.requirePaths(t, "after a restart", "srv1", "srv2", "srv3")
}
