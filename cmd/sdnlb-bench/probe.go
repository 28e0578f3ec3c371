package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller"
)

// probe reads what a topology run reports of the controller besides its
// OpenFlow messages: the links it discovered, and its memory.
type probe interface {
	topology(ctx context.Context) (*sdnlb.Topology, error)
	memory(ctx context.Context) (Memory, error)
}

// embeddedProbe asks the controller in this process, as GET /v1/topology
// would.
type embeddedProbe struct{ c *controller.Controller }

func (p embeddedProbe) topology(ctx context.Context) (*sdnlb.Topology, error) {
	return p.c.Topology(ctx)
}

// memory is the whole process's: the controller's and the simulated
// switches' buffers alike.
func (embeddedProbe) memory(context.Context) (Memory, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return Memory{}, err
	}
	rss, err := vmRSS(status)
	if err != nil {
		return Memory{}, err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return Memory{Of: "this process: controller and simulated switches", RSSBytes: rss, HeapBytes: ms.HeapInuse}, nil
}

// vmRSS reads the resident set size from a /proc/PID/status.
func vmRSS(status []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		f := strings.Fields(sc.Text()) // "VmRSS:", "12345", "kB"
		if len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", f[1], err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmRSS in the process status")
}

// remoteProbe asks a running sdnlb through its REST API.
type remoteProbe struct{ c *apiClient }

func (p remoteProbe) topology(ctx context.Context) (*sdnlb.Topology, error) {
	var top sdnlb.Topology
	return &top, p.c.do(ctx, http.MethodGet, "/v1/topology", nil, &top)
}

// memory reads the controller's own figures from its /metrics: the Go
// and process collectors sdnlb registers.
func (p remoteProbe) memory(ctx context.Context) (Memory, error) {
	text, err := p.c.send(ctx, http.MethodGet, "/metrics", nil)
	if err != nil {
		return Memory{}, err
	}
	m := Memory{Of: "the controller's process, from its /metrics"}
	for name, v := range map[string]*uint64{"process_resident_memory_bytes": &m.RSSBytes, "go_memstats_heap_inuse_bytes": &m.HeapBytes} {
		if *v, err = metric(text, name); err != nil {
			return Memory{}, err
		}
	}
	return m, nil
}

// metric reads a gauge of one series from Prometheus' text format,
// whatever its labels (sdnlb labels every series with its node).
func metric(text []byte, name string) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		i := strings.IndexAny(line, "{ ")
		if i < 0 || line[:i] != name {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("/metrics %s: %w", name, err)
		}
		return uint64(v), nil
	}
	return 0, fmt.Errorf("/metrics has no %s", name)
}
