package cluster_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/cluster"
	"github.com/sdnlb/sdnlb/mock"
)

func end(dpid string, port uint32) sdnlb.LinkEnd { return sdnlb.LinkEnd{DPID: dpid, Port: port} }

// Switches s1 and s2 joined by their ports 1, s1 mastered by node a and
// s2 by b: each discovered the direction into its own switch, and knows
// the load of its own switch's port.
func splitParts(seen time.Time) (a, b *sdnlb.TopologyPart) {
	a = &sdnlb.TopologyPart{
		Node:     "a",
		Switches: []*sdnlb.TopologySwitch{{DPID: "s1"}, {DPID: "s2"}},
		Links:    []*sdnlb.Link{{Src: end("s2", 1), Dst: end("s1", 1)}},
		Loads:    []sdnlb.PortLoad{{Port: end("s1", 1), RateBPS: 300, CapacityBPS: 1000, Utilisation: 0.3}},
		Hosts: []*sdnlb.Host{
			{Address: "10.0.0.1", DPID: "s1", Port: "2", LastSeen: seen},
			// a mastered s2 before b: what it learned there is older.
			{Address: "10.0.0.2", DPID: "s2", Port: "2", LastSeen: seen.Add(-time.Minute)},
		},
	}
	b = &sdnlb.TopologyPart{
		Node:     "b",
		Switches: []*sdnlb.TopologySwitch{{DPID: "s2"}, {DPID: "s3"}},
		Links:    []*sdnlb.Link{{Src: end("s1", 1), Dst: end("s2", 1)}},
		Loads:    []sdnlb.PortLoad{{Port: end("s2", 1), RateBPS: 600, CapacityBPS: 1000, Utilisation: 0.6}},
		Hosts: []*sdnlb.Host{
			{Address: "10.0.0.2", DPID: "s2", Port: "3", LastSeen: seen},
			// Seen on s1's link port, before the link was found: across
			// the link, not at the edge.
			{Address: "10.0.0.9", DPID: "s1", Port: "1", LastSeen: seen},
		},
	}
	return a, b
}

// TestMerge: the directions of a link two nodes discovered make one
// bidirectional pair, each carrying its source port's load; a host both
// learned shows once, where it was seen last.
func TestMerge(t *testing.T) {
	seen := time.Unix(1_700_000_000, 0)
	a, b := splitParts(seen)
	b.Paths = []*sdnlb.Path{{From: "s2", To: "s3", Hops: []sdnlb.LinkEnd{end("s2", 4)}}}
	top := cluster.Merge([]*sdnlb.TopologyPart{a, b})

	var switches []string
	for _, s := range top.Switches {
		switches = append(switches, s.DPID)
	}
	if want := []string{"s1", "s2", "s3"}; !slices.Equal(switches, want) {
		t.Errorf("switches %q, want %q", switches, want)
	}
	var links []sdnlb.Link
	for _, l := range top.Links {
		links = append(links, *l)
	}
	want := []sdnlb.Link{
		{Src: end("s1", 1), Dst: end("s2", 1), Bidirectional: true, RateBPS: 300, CapacityBPS: 1000, Utilisation: 0.3},
		{Src: end("s2", 1), Dst: end("s1", 1), Bidirectional: true, RateBPS: 600, CapacityBPS: 1000, Utilisation: 0.6},
	}
	if !slices.Equal(links, want) {
		t.Errorf("links %+v, want %+v", links, want)
	}
	var hosts []sdnlb.Host
	for _, h := range top.Hosts {
		hosts = append(hosts, *h)
	}
	wantHosts := []sdnlb.Host{*a.Hosts[0], *b.Hosts[0]}
	if !slices.Equal(hosts, wantHosts) {
		t.Errorf("hosts %+v, want %+v", hosts, wantHosts)
	}
	if len(top.Paths) != 1 || top.Paths[0] != b.Paths[0] {
		t.Errorf("paths %+v, want b's", top.Paths)
	}
	// The parts are left as they were.
	if a.Links[0].Bidirectional || a.Links[0].RateBPS != 0 {
		t.Errorf("a's link became %+v", *a.Links[0])
	}

	// One part alone is what its node discovered: a link without its
	// reverse, and with no load known for its source port.
	top = cluster.Merge([]*sdnlb.TopologyPart{a})
	if len(top.Links) != 1 || *top.Links[0] != (sdnlb.Link{Src: end("s2", 1), Dst: end("s1", 1)}) {
		t.Errorf("a's links alone: %+v", top.Links)
	}
	if len(top.Hosts) != 2 || len(top.Switches) != 2 || len(top.Paths) != 0 {
		t.Errorf("a's part alone: %+v", top)
	}
}

// TestTopology: a node shows its own part, as its controller has it, with
// the other nodes' recorded parts, and its own alone while the database is
// away; it records its part while it runs and forgets it when it stops.
func TestTopology(t *testing.T) {
	seen := time.Unix(1_700_000_000, 0)
	a, b := splitParts(seen)
	var (
		mu       sync.Mutex
		recorded []*sdnlb.TopologyPart
		readErr  error
		first    = make(chan struct{}) // closed at the first record
	)
	store := &mock.TopologyPartService{
		RecordTopologyFn: func(ctx context.Context, n sdnlb.ClusterNode, p *sdnlb.TopologyPart, live time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			if n.ID != "a" || live != 3*time.Second {
				t.Errorf("recorded for %q within %v", n.ID, live)
			}
			recorded = append(recorded, p)
			if len(recorded) == 1 {
				close(first)
			}
			return nil
		},
		TopologyPartsFn: func(ctx context.Context, live time.Duration) ([]*sdnlb.TopologyPart, error) {
			mu.Lock()
			defer mu.Unlock()
			if readErr != nil {
				return nil, readErr
			}
			// a's own record is older than its controller's part.
			stale := &sdnlb.TopologyPart{Node: "a", Links: []*sdnlb.Link{{Src: end("s9", 1), Dst: end("s1", 9)}}}
			return []*sdnlb.TopologyPart{stale, b}, nil
		},
	}
	local := func(ctx context.Context) (*sdnlb.TopologyPart, error) { return a, nil }
	topo := cluster.NewTopology(store, sdnlb.ClusterNode{ID: "a"}, local, nil)

	top, err := topo.Topology(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(top.Links), 2; got != want || !top.Links[0].Bidirectional {
		t.Fatalf("links %+v, want the pair of a's and b's", top.Links)
	}
	mu.Lock()
	readErr = errors.New("connection refused")
	mu.Unlock()
	if top, err = topo.Topology(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(top.Links) != 1 || len(top.Hosts) != 2 {
		t.Fatalf("with the database away: %+v, want a's part alone", top)
	}

	// On SQLite a node is alone: its part is the topology.
	alone, err := cluster.NewTopology(nil, sdnlb.ClusterNode{ID: "a"}, local, nil).Topology(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(alone.Links) != 1 || alone.Links[0].Bidirectional {
		t.Fatalf("alone: %+v, want a's link", alone.Links)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- topo.Run(ctx) }()
	select {
	case <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("Run recorded nothing in 5s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if recorded[0] != a || recorded[len(recorded)-1] != nil {
		t.Fatalf("recorded %v, want a's part first and nil (forgotten) last", recorded)
	}
}
