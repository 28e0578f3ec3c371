//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// twoBridges is two bridges of one ovs-vswitchd joined by a pair of patch
// ports, a host on each, both driven by one sdnlb that learns L2 through
// the controller.
type twoBridges struct {
	s1, s2       *Switch
	p1, p2       string // the patch ports' names
	port1, port2 int    // and their OpenFlow port numbers
	h1, h2       *Host
	d1, d2       string // the bridges' datapath ids as the API writes them
	lb           *sdnlbProc
}

func newTwoBridges(t *testing.T) *twoBridges {
	t.Helper()
	b := &twoBridges{s1: NewSwitch(t)}
	b.s2 = b.s1.AddBridge(t)
	b.p1, b.p2 = b.s1.Name+"-p", b.s2.Name+"-p"
	b.port1 = b.s1.AddPatch(t, b.p1, b.p2)
	b.port2 = b.s2.AddPatch(t, b.p2, b.p1)
	b.h1, b.h2 = b.s1.AddHost(t, "h1", b.s1.Addr(1)), b.s2.AddHost(t, "h2", b.s1.Addr(2))
	// Learning L2 through the controller, each bridge shows it both hosts.
	b.lb = startSDNLB(t, "--l2", "learn")
	b.s1.SetController(b.lb.OpenFlowAddr)
	b.s2.SetController(b.lb.OpenFlowAddr)
	b.lb.WaitSwitches(2, 20*time.Second)
	b.d1, b.d2 = dpidOf(t, b.s1), dpidOf(t, b.s2)
	return b
}

// showHosts has each host reach the other across the link. A bridge shows
// the controller a host's packets only while it has no flow to their
// destination: each host's ARP broadcast, sent with an empty cache, shows
// it to its own bridge.
func (b *twoBridges) showHosts(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	for _, pair := range [][2]*Host{{b.h1, b.h2}, {b.h2, b.h1}} {
		if out, err := pair[0].Exec(ctx, "sh", "-c", "ip neigh flush dev eth0 && ping -c 1 -W 5 "+pair[1].IP); err != nil {
			t.Fatalf("%s cannot reach %s across the link: %v\n%s", pair[0].Name, pair[1].Name, err, out)
		}
	}
}

// Two bridges joined by a pair of patch ports, both driven by one sdnlb:
// the topology shows the link both ways and a host on each bridge at its
// own port (not at the far end of the link, where the other bridge also
// showed it), loses the link when one end goes, and finds it again when
// it comes back.
func TestTopology_TwoBridges(t *testing.T) {
	b := newTwoBridges(t)
	// Both directions, in the API's order: by source datapath id.
	both := func(port1, port2 uint32) []sdnlb.Link {
		links := []sdnlb.Link{
			{Src: sdnlb.LinkEnd{DPID: b.d1, Port: port1}, Dst: sdnlb.LinkEnd{DPID: b.d2, Port: port2}, Bidirectional: true},
			{Src: sdnlb.LinkEnd{DPID: b.d2, Port: port2}, Dst: sdnlb.LinkEnd{DPID: b.d1, Port: port1}, Bidirectional: true},
		}
		if b.d2 < b.d1 {
			links[0], links[1] = links[1], links[0]
		}
		return links
	}

	waitLinks(t, b.lb, both(uint32(b.port1), uint32(b.port2)))

	b.showHosts(t)
	wantHosts := []string{
		b.h1.IP + " " + b.d1 + " " + strconv.Itoa(b.h1.OFPort),
		b.h2.IP + " " + b.d2 + " " + strconv.Itoa(b.h2.OFPort),
	}
	var gotHosts []string
	for i := 0; i < 100 && !slices.Equal(gotHosts, wantHosts); i++ {
		var top sdnlb.Topology
		b.lb.MustAPI(http.MethodGet, "/v1/topology", nil, http.StatusOK, &top)
		gotHosts = gotHosts[:0]
		for _, h := range top.Hosts {
			gotHosts = append(gotHosts, h.Address+" "+h.DPID+" "+h.Port)
		}
		slices.Sort(gotHosts)
		time.Sleep(50 * time.Millisecond)
	}
	if !slices.Equal(gotHosts, wantHosts) {
		t.Fatalf("hosts %q, want %q", gotHosts, wantHosts)
	}

	b.s2.Vsctl("del-port", b.s2.Name, b.p2)
	waitLinks(t, b.lb, nil)
	port2 := b.s2.AddPatch(t, b.p2, b.p1)
	waitLinks(t, b.lb, both(uint32(b.port1), uint32(port2)))
}

// dpidOf is the bridge's datapath id as the API writes it.
func dpidOf(t *testing.T, s *Switch) string {
	t.Helper()
	hex := strings.Trim(strings.TrimSpace(s.Vsctl("get", "bridge", s.Name, "datapath_id")), `"`)
	if len(hex) != 16 {
		t.Fatalf("bridge %s datapath id %q", s.Name, hex)
	}
	pairs := make([]string, 8)
	for i := range pairs {
		pairs[i] = hex[2*i : 2*i+2]
	}
	return strings.Join(pairs, ":")
}

// waitLinks waits, a bounded number of times, until GET /v1/topology shows
// exactly want.
func waitLinks(t *testing.T, lb *sdnlbProc, want []sdnlb.Link) {
	t.Helper()
	var got []sdnlb.Link
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 400 && time.Now().Before(deadline); i++ {
		var top sdnlb.Topology
		lb.MustAPI(http.MethodGet, "/v1/topology", nil, http.StatusOK, &top)
		got = got[:0]
		for _, l := range top.Links {
			got = append(got, sdnlb.Link{Src: l.Src, Dst: l.Dst, Bidirectional: l.Bidirectional}) // what it carries varies
		}
		if slices.Equal(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("links %+v, want %+v", got, want)
}
