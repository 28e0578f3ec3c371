package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sdnlb/sdnlb"
)

// The topologies -topology wires the switches in.
const (
	// topoRing links each switch to the next, and the first half of the
	// switches each to the one opposite: 3 links a switch (the last of
	// an odd number has 2).
	topoRing = "ring"
	// topoLeafSpine links every leaf to every spine; the first -spines
	// switches are the spines.
	topoLeafSpine = "leaf-spine"
)

// linkPort0 is the port of a switch's first link, above every member's.
const linkPort0 uint32 = 1000

// end is one end of a link: a port of the switch with that index.
type end struct {
	sw   int
	port uint32
}

// wiring is how the switches are linked: for each switch, the far end of
// each of its link ports, numbered from linkPort0 up.
type wiring struct {
	far []map[uint32]end
}

func newWiring(kind string, switches, spines int) *wiring {
	w := &wiring{far: make([]map[uint32]end, switches)}
	for i := range w.far {
		w.far[i] = map[uint32]end{}
	}
	switch kind {
	case topoRing:
		for i := range switches {
			w.link(i, (i+1)%switches)
		}
		for i := range switches / 2 {
			w.link(i, i+switches/2)
		}
	case topoLeafSpine:
		for leaf := spines; leaf < switches; leaf++ {
			for spine := range spines {
				w.link(leaf, spine)
			}
		}
	}
	return w
}

// link joins the next free port of switch a to the next free one of b.
func (w *wiring) link(a, b int) {
	pa, pb := linkPort0+uint32(len(w.far[a])), linkPort0+uint32(len(w.far[b]))
	w.far[a][pa] = end{b, pb}
	w.far[b][pb] = end{a, pa}
}

// linkPorts is how many link ports switch sw has: linkPort0 and up.
func (w *wiring) linkPorts(sw int) int { return len(w.far[sw]) }

// directed lists every link in both directions as the controller shows
// them: "src dpid/port>dst dpid/port".
func (w *wiring) directed() []string {
	var out []string
	for a, ports := range w.far {
		for p, e := range ports {
			out = append(out, linkKey(switchDPID(a), p, switchDPID(e.sw), e.port))
		}
	}
	slices.Sort(out)
	return out
}

func linkKey(src string, srcPort uint32, dst string, dstPort uint32) string {
	return fmt.Sprintf("%s/%d>%s/%d", src, srcPort, dst, dstPort)
}

// switchDPID is the datapath id of switch idx as the API writes it.
func switchDPID(idx int) string {
	return net.HardwareAddr(binary.BigEndian.AppendUint64(nil, dpidOf(idx))).String()
}

// fabric carries the frames a switch sends out of a link port to the
// switch at the far end, as a cable would. Only the controller's LLDP
// goes out of them: every switch has its own clients and members, so no
// setup crosses a link.
type fabric struct {
	wiring  *wiring
	sws     []atomic.Pointer[fakeSwitch] // by index; nil until connected
	carried atomic.Uint64                // frames delivered, whole run
	wg      sync.WaitGroup               // deliveries under way
}

func newFabric(w *wiring) *fabric {
	return &fabric{wiring: w, sws: make([]atomic.Pointer[fakeSwitch], len(w.far))}
}

func (f *fabric) attach(s *fakeSwitch) { f.sws[s.idx].Store(s) }

// carry delivers frame, sent out of port of switch from, to the far end
// of the link, if port is a link port. A switch not connected yet has no
// controller to punt it to: the frame is lost.
func (f *fabric) carry(from int, port uint32, frame []byte) {
	e, ok := f.wiring.far[from][port]
	if !ok {
		return
	}
	to := f.sws[e.sw].Load()
	if to == nil {
		return
	}
	frame = slices.Clone(frame) // the sender's read buffer is reused
	f.carried.Add(1)
	// On a goroutine of its own: the sender holds its own lock, and two
	// switches that send to each other would wait for each other's.
	f.wg.Go(func() { to.arrive(e.port, frame) })
}

// discoveryTimeout bounds the wait for the controller to show every link.
const discoveryTimeout = 30 * time.Second

// discoveryPoll is how often the bench asks for the topology meanwhile:
// the resolution of the discovery time.
const discoveryPoll = 10 * time.Millisecond

// shown counts the links of want that top shows, and names one it lacks.
func shown(top *sdnlb.Topology, want []string) (n int, missing string) {
	got := make(map[string]bool, len(top.Links))
	for _, l := range top.Links {
		got[linkKey(l.Src.DPID, l.Src.Port, l.Dst.DPID, l.Dst.Port)] = true
	}
	for _, k := range want {
		if got[k] {
			n++
		} else if missing == "" {
			missing = k
		}
	}
	return n, missing
}

// awaitLinks polls the controller's topology until it shows every link of
// the wiring in both directions, and returns how long after since it did.
func (f *fabric) awaitLinks(ctx context.Context, p probe, since time.Time) (time.Duration, error) {
	want := f.wiring.directed()
	deadline := time.Now().Add(discoveryTimeout)
	for {
		top, err := p.topology(ctx)
		if err != nil {
			return 0, fmt.Errorf("read the topology: %w", err)
		}
		n, missing := shown(top, want)
		if n == len(want) {
			return time.Since(since), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("the controller shows %d of the %d links after %v; %s is missing", n, len(want), discoveryTimeout, missing)
		}
		if err := sleepCtx(ctx, discoveryPoll); err != nil {
			return 0, err
		}
	}
}

// discover measures the discovery: how long after since (the last switch
// connected) p shows every link, and the controller's memory then.
func (f *fabric) discover(ctx context.Context, cfg *config, p probe, since time.Time) (*TopologyResult, error) {
	took, err := f.awaitLinks(ctx, p, since)
	if err != nil {
		return nil, err
	}
	mem, err := p.memory(ctx)
	if err != nil {
		return nil, fmt.Errorf("the controller's memory: %w", err)
	}
	res := &TopologyResult{Kind: cfg.topology, Links: len(f.wiring.directed()), DiscoverySeconds: took.Seconds(), MemoryDiscovered: mem}
	if cfg.topology == topoLeafSpine {
		res.Spines = cfg.spines
	}
	return res, nil
}

// afterLoad adds to res what p shows once the measured setups drained:
// the links still there (one whose frames the load held up for 3 s is
// gone until its next frame), the controller's memory, and the frames
// the links carried.
func (f *fabric) afterLoad(ctx context.Context, p probe, res *TopologyResult) error {
	top, err := p.topology(ctx)
	if err != nil {
		return fmt.Errorf("read the topology: %w", err)
	}
	res.LinksAfterLoad, _ = shown(top, f.wiring.directed())
	if res.MemoryAfterLoad, err = p.memory(ctx); err != nil {
		return fmt.Errorf("the controller's memory: %w", err)
	}
	res.LLDPCarried = f.carried.Load()
	return nil
}
