package main

import (
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one benchmark run, as printed with -json.
type Result struct {
	Mode             string   `json:"mode"`       // "throughput" or "latency"
	Controller       string   `json:"controller"` // "embedded" or its address
	OpenFlow         string   `json:"openflow"`   // the version the switches spoke: "1.3" or "1.0"
	Family           string   `json:"family"`     // the VIP's and the setups': "IPv4" or "IPv6"
	Switches         int      `json:"switches"`
	Window           int      `json:"window,omitempty"`
	Rate             float64  `json:"rate,omitempty"` // setups/s asked for, all switches
	Members          int      `json:"members"`
	GOMAXPROCS       int      `json:"gomaxprocs"`
	DurationSeconds  float64  `json:"duration_seconds"`
	Setups           uint64   `json:"setups"`  // completed within the interval
	Drained          uint64   `json:"drained"` // in flight at its end, completed after
	SetupsPerSecond  float64  `json:"setups_per_second"`
	Latency          Latency  `json:"latency"`
	FlowAdds         uint64   `json:"flow_adds"`
	FlowAddsPerSetup float64  `json:"flow_adds_per_setup"`
	FlowOthers       uint64   `json:"flow_others"` // flow-mods that modify or delete
	PerMember        []Share  `json:"per_member"`
	Errors           Errors   `json:"errors"`
	AllocsPerSetup   *float64 `json:"allocs_per_setup,omitempty"` // embedded only: whole process
	BytesPerSetup    *float64 `json:"bytes_per_setup,omitempty"`
	Checks           []Check  `json:"warmup_checks"`
	// Topology is a topology run's discovery and the controller's memory.
	Topology *TopologyResult `json:"topology,omitempty"`
}

// TopologyResult is what a run with -topology measured besides setups.
type TopologyResult struct {
	Kind   string `json:"kind"`             // "ring" or "leaf-spine"
	Spines int    `json:"spines,omitempty"` // leaf-spine only
	Links  int    `json:"links"`            // both directions of every link
	// DiscoverySeconds is from the last switch connected until the
	// controller showed every link.
	DiscoverySeconds float64 `json:"discovery_seconds"`
	LinksAfterLoad   int     `json:"links_after_load"` // shown once the measured setups drained
	LLDPCarried      uint64  `json:"lldp_frames_carried"`
	MemoryDiscovered Memory  `json:"memory_discovered"` // once every link was shown
	MemoryAfterLoad  Memory  `json:"memory_after_load"`
}

// Memory is the controller's memory at one point of a run.
type Memory struct {
	Of        string `json:"of"` // whose figures these are
	RSSBytes  uint64 `json:"rss_bytes"`
	HeapBytes uint64 `json:"heap_inuse_bytes"` // Go heap spans in use
}

// Latency is packet-in → packet-out time of the measured setups, in µs.
type Latency struct {
	Samples uint64  `json:"samples"`
	P50     float64 `json:"p50_us"`
	P90     float64 `json:"p90_us"`
	P99     float64 `json:"p99_us"`
	Max     float64 `json:"max_us"`
}

// Share is how many setups went to one member.
type Share struct {
	Member string `json:"member"`
	Setups uint64 `json:"setups"`
}

// Errors counts what went wrong; any of them makes the run fail.
type Errors struct {
	Total      uint64 `json:"total"`
	OFPErrors  uint64 `json:"ofp_errors"` // OFPT_ERROR received, whole run
	FirstOFP   string `json:"first_ofp_error,omitempty"`
	Timeouts   uint64 `json:"timeouts"`
	Refused    uint64 `json:"refused"`     // answered with a TCP RST
	BadRewrite uint64 `json:"bad_rewrite"` // packet-out without the NAT rewrite
	Unmatched  uint64 `json:"unmatched"`   // packet-out for no setup sent, or a second one
	Late       uint64 `json:"late"`        // answers to timed-out setups; not counted again in Total
	// Flow-mods the fake switch's table model refused (a field or an
	// instruction it does not model), whole run: packet-ins may then
	// carry another reason or cookie than a real switch would give them.
	TableRejects     uint64 `json:"table_rejects"`
	FirstTableReject string `json:"first_table_reject,omitempty"`
	// ARP replies to the controller and LLDP frames from a link not sent,
	// whole run: the switch's flows take them elsewhere, so a real switch
	// would not punt them.
	NotPunted      uint64 `json:"not_punted"`
	FirstNotPunted string `json:"first_not_punted,omitempty"`
}

// collect sums the switches' counters; the caller holds no switch lock
// and the drivers have stopped.
func collect(cfg *config, sws []*fakeSwitch, elapsed time.Duration) *Result {
	res := &Result{
		Mode: "throughput", Controller: "embedded", OpenFlow: cfg.of.name(), Family: familyName(cfg.vip.Addr()), Switches: cfg.switches, Window: cfg.window,
		Members: cfg.members, GOMAXPROCS: runtime.GOMAXPROCS(0), DurationSeconds: elapsed.Seconds(),
	}
	if cfg.rate > 0 {
		res.Mode, res.Window, res.Rate = "latency", 0, cfg.rate
	}
	if cfg.controller != "" {
		res.Controller = cfg.controller
	}
	var h histogram
	perMember := make([]uint64, cfg.members)
	e := &res.Errors
	for _, s := range sws {
		s.mu.Lock()
		st := &s.stats
		res.Setups += st.setups
		res.Drained += st.drained
		res.FlowAdds += st.flowAdds
		res.FlowOthers += st.flowOthers
		e.OFPErrors += s.ofpErrors
		if s.firstErr != nil && e.FirstOFP == "" {
			e.FirstOFP = s.firstErr.Error()
		}
		e.TableRejects += s.tableRejects
		if s.firstReject != nil && e.FirstTableReject == "" {
			e.FirstTableReject = s.firstReject.Error()
		}
		e.NotPunted += s.notPunted
		if s.firstNotPunted != nil && e.FirstNotPunted == "" {
			e.FirstNotPunted = s.firstNotPunted.Error()
		}
		e.Timeouts += st.timeouts
		e.Refused += st.refused
		e.BadRewrite += st.badRewrite
		e.Unmatched += st.unmatched
		e.Late += st.late
		for i, n := range st.perMember {
			perMember[i] += n
		}
		h.merge(&s.hist)
		s.mu.Unlock()
	}
	e.Total = e.OFPErrors + e.Timeouts + e.Refused + e.BadRewrite + e.Unmatched + e.TableRejects + e.NotPunted
	if elapsed > 0 {
		res.SetupsPerSecond = float64(res.Setups) / elapsed.Seconds()
	}
	if n := res.Setups + res.Drained; n > 0 {
		res.FlowAddsPerSetup = float64(res.FlowAdds) / float64(n)
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	res.Latency = Latency{
		Samples: h.n, P50: us(h.percentile(0.50)), P90: us(h.percentile(0.90)),
		P99: us(h.percentile(0.99)), Max: us(h.max),
	}
	t := newTarget(cfg.vip, cfg.firstMember, cfg.members)
	for i, m := range t.members {
		res.PerMember = append(res.PerMember, Share{Member: netip.AddrPortFrom(m.ip, m.port).String(), Setups: perMember[i]})
	}
	return res
}

// writeTable prints res for a human.
func writeTable(w io.Writer, res *Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	load := fmt.Sprintf("window %d per switch", res.Window)
	if res.Mode == "latency" {
		load = fmt.Sprintf("rate %.0f setups/s in total", res.Rate)
	}
	fmt.Fprintf(tw, "mode\t%s, controller %s, OpenFlow %s, %s, %d switches, %s, %d members, GOMAXPROCS %d\n",
		res.Mode, res.Controller, res.OpenFlow, res.Family, res.Switches, load, res.Members, res.GOMAXPROCS)
	fmt.Fprintf(tw, "duration\t%.3f s\n", res.DurationSeconds)
	fmt.Fprintf(tw, "setups\t%d (%.0f/s), %d more drained after the end\n", res.Setups, res.SetupsPerSecond, res.Drained)
	l := res.Latency
	fmt.Fprintf(tw, "latency\tp50 %.1f µs  p90 %.1f µs  p99 %.1f µs  max %.1f µs  (%d samples)\n", l.P50, l.P90, l.P99, l.Max, l.Samples)
	fmt.Fprintf(tw, "flow-mods\t%d adds (%.2f per setup), %d modify/delete\n", res.FlowAdds, res.FlowAddsPerSetup, res.FlowOthers)
	var shares []string
	for _, s := range res.PerMember {
		shares = append(shares, fmt.Sprintf("%s %d", s.Member, s.Setups))
	}
	fmt.Fprintf(tw, "members\t%s\n", strings.Join(shares, ", "))
	byMember := map[string]int{}
	for _, c := range res.Checks {
		byMember[c.Member]++
	}
	fmt.Fprintf(tw, "warm-up\tNAT flow pair and packet-out checked on %d switches (first setups went to %d distinct members)\n", len(res.Checks), len(byMember))
	if len(res.Checks) > 0 {
		for _, f := range res.Checks[0].Flows {
			fmt.Fprintf(tw, "\t%s\n", f)
		}
	}
	e := res.Errors
	late := ""
	if e.Late > 0 {
		late = fmt.Sprintf(" (%d answered late)", e.Late)
	}
	fmt.Fprintf(tw, "errors\t%d (ofp_error %d, timeout %d%s, refused %d, bad_rewrite %d, unmatched %d, table_reject %d, not_punted %d)\n",
		e.Total, e.OFPErrors, e.Timeouts, late, e.Refused, e.BadRewrite, e.Unmatched, e.TableRejects, e.NotPunted)
	if e.FirstOFP != "" {
		fmt.Fprintf(tw, "first ofp error\t%s\n", e.FirstOFP)
	}
	if e.FirstTableReject != "" {
		fmt.Fprintf(tw, "first table reject\t%s\n", e.FirstTableReject)
	}
	if e.FirstNotPunted != "" {
		fmt.Fprintf(tw, "first not punted\t%s\n", e.FirstNotPunted)
	}
	if t := res.Topology; t != nil {
		kind := t.Kind
		if t.Spines > 0 {
			kind = fmt.Sprintf("%s, %d spines", kind, t.Spines)
		}
		fmt.Fprintf(tw, "topology\t%s: all %d links (both directions) shown %.3f s after the last switch connected; %d shown after the load; %d LLDP frames carried\n",
			kind, t.Links, t.DiscoverySeconds, t.LinksAfterLoad, t.LLDPCarried)
		mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
		fmt.Fprintf(tw, "memory\tonce discovered: RSS %.1f MiB, Go heap %.1f MiB; after the load: RSS %.1f MiB, Go heap %.1f MiB (%s)\n",
			mib(t.MemoryDiscovered.RSSBytes), mib(t.MemoryDiscovered.HeapBytes), mib(t.MemoryAfterLoad.RSSBytes), mib(t.MemoryAfterLoad.HeapBytes), t.MemoryAfterLoad.Of)
	}
	if res.AllocsPerSetup != nil {
		fmt.Fprintf(tw, "allocations\t%.3g allocs, %.3g bytes per setup (whole process)\n", *res.AllocsPerSetup, *res.BytesPerSetup)
	}
	return tw.Flush()
}
