// Command sdnlb-bench is a cbench-style load tool for the sdnlb
// controller. It plays N OpenFlow 1.3 switches (1.0 with -openflow 1.0)
// over loopback TCP and fires packet-ins carrying TCP SYNs of new
// connections to a VIP, then reports connection setups per second,
// packet-in → packet-out latency percentiles and, with the controller
// embedded, its allocations per setup.
//
//	go run ./cmd/sdnlb-bench -switches 16 -window 64 -duration 5s
//	go run ./cmd/sdnlb-bench -switches 2 -rate 150000 -json
//	go run ./cmd/sdnlb-bench -openflow 1.0 -switches 4 -duration 2s
//	go run ./cmd/sdnlb-bench -vip '[2001:db8:99::100]:80' -first-member 2001:db8:99::1
//	go run ./cmd/sdnlb-bench -controller 127.0.0.1:6653 -api http://127.0.0.1:8080
//	go run ./cmd/sdnlb-bench -topology leaf-spine -spines 4 -duration 5s
//
// By default the controller runs in this process on 127.0.0.1:0 with a
// static configuration: VIP -vip (10.99.0.100:80/TCP), a ROUND_ROBIN pool and
// -members unmonitored members -first-member (10.99.0.1) and up. With -controller the tool
// creates the same objects through the REST API of a running sdnlb (named
// sdnlb-bench, deleted at the end) and connects to it.
//
// Each fake switch answers the handshake, echo, barrier and multipart
// requests as a switch would, announces the members and the client with
// ARP, resolves the VIP's MAC with ARP, and makes one warm-up setup whose
// two NAT flows and packet-out it checks field by field. Until then it
// applies every flow-mod to a controller/oftable model of its table, and
// its packet-ins carry the reason and cookie the flow that takes them
// gives (OFPR_NO_MATCH, cookie -1 if none does). A packet the controller's
// flows send elsewhere is not punted, as on a real switch: the warm-up
// fails on one of its own packets, and an answer to the controller's ARP
// is counted as an error instead.
// Past the warm-up flow-mods are counted, not decoded, so the table stays
// as the warm-up left it.
//
// With -openflow 1.0 the switches speak OpenFlow 1.0 (controller/ofp10),
// as cbench's do: a bare 1.0 hello, which a controller offering 1.0 in its
// version bitmap accepts, the port list in the features reply instead of a
// port-desc reply, flow-mods to the one table, and flow stats that list
// the table model's flows, as a 1.0 controller removes the flows of a
// cookie by dumping them and deleting each strictly. Their packet-ins
// carry no cookie, and OFPR_ACTION for any flow that punts (1.0 has no
// table-miss flow). The NAT rewrite is then SET_DL_DST, SET_NW_DST and
// SET_TP_DST, read as the eth_dst, ipv4_dst and tcp_dst below. 1.0
// matches no IPv6: an IPv6 VIP needs 1.3.
//
// An IPv6 -vip (with an IPv6 -first-member) makes the setups IPv6: SYNs
// from 2001:db8:5db0:c100::/96, whose last 32 bits are the clients of an
// IPv4 run, and the NAT rewrite with ipv6_dst (ipv6_src back). Neighbour
// discovery replaces ARP: the members announce themselves with unsolicited
// advertisements to all nodes, the client solicits the VIP's MAC, and the
// switch answers the controller's solicitations from :: for its hosts
// with advertisements to all nodes, as a packet-in where its flows punt
// them (the controller's copy of such advertisements: OFPR_ACTION, its
// cookie).
//
// Throughput mode (the default) keeps -window setups in flight per switch;
// latency mode (-rate) sends at a fixed total rate, open loop, in steps of
// at least 200 µs. A setup is complete when the packet-out carrying its
// SYN arrives with the NAT rewrite to a member: eth_dst and ipv4_dst (and
// tcp_dst unless the ports are equal) of a member, output to its port.
// Setups still in flight when the interval ends complete while draining
// and count in the latency figures but not in setups per second.
//
// Topology mode (-topology ring or leaf-spine, 64 switches unless
// -switches says otherwise) wires the switches together with links on
// ports 1000 and up, which each switch describes to the controller as it
// does its other ports. An LLDP packet-out to a link port arrives at the
// switch on the far end, which punts it as its flows say (the controller's
// LLDP flow: OFPR_ACTION with its cookie); nothing else crosses a link.
// The tool measures the discovery, from the last switch connected until
// the controller shows every link in both directions (embedded: asked
// directly, as GET /v1/topology asks it; with -controller: GET
// /v1/topology, polled every 10 ms), then runs the load as above, and
// reports the controller's memory once discovered and after the load:
// RSS and Go heap in use, of this whole process when embedded (from
// /proc/self/status and runtime.MemStats), of the controller's own
// process from its /metrics otherwise.
//
// Reading the figures: in embedded mode the tool and the controller share
// the machine's cores (the tool takes roughly a fifth of the CPU); the
// allocation figures are runtime.MemStats deltas of the whole process over
// the measured interval divided by its setups. Percentiles come from a
// log-linear histogram of every sample and are within 1.6 % of the exact
// value. The exit status is 1 when any error was seen (OFPT_ERROR,
// timeout, refusal, wrong rewrite, unexpected packet-out, a flow-mod the
// table model refuses, an ARP answer the table would not punt) or no
// setup completed, 2 for bad flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"
)

// config is the parsed command line.
type config struct {
	controller  string  // "" runs the controller embedded
	of          dialect // the OpenFlow version the switches speak
	api         string
	token       string
	switches    int
	window      int
	rate        float64
	duration    time.Duration
	warmup      time.Duration
	timeout     time.Duration
	count       uint64
	members     int
	vip         netip.AddrPort
	firstMember netip.Addr
	json        bool
	verbose     bool
	cpuProfile  string
	topology    string // "" for switches with no links between them
	spines      int
}

// Bounds that keep every run finite.
const (
	maxDuration = 5 * time.Minute
	maxWarmup   = time.Minute
	maxCount    = 100_000_000
	maxWindow   = 16384
	maxInFlight = 1 << 18 // setups in flight over all switches
	maxRate     = 10_000_000
	maxMembers  = 250
)

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("sdnlb-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := &config{}
	embedded := fs.Bool("embedded", true, "run the controller in this process on 127.0.0.1:0 (default unless -controller)")
	fs.StringVar(&cfg.controller, "controller", "", "`host:port` of a running sdnlb's OpenFlow listener (configured via -api)")
	fs.StringVar(&cfg.api, "api", "http://127.0.0.1:8080", "`URL` of that sdnlb's REST API")
	fs.StringVar(&cfg.token, "token", "", "bearer `token` for API writes")
	fs.IntVar(&cfg.switches, "switches", 16, "fake switches (64 with -topology)")
	fs.IntVar(&cfg.window, "window", 64, "setups in flight per switch (throughput mode)")
	fs.Float64Var(&cfg.rate, "rate", 0, "latency mode: total setups per second, paced open loop")
	fs.DurationVar(&cfg.duration, "duration", 5*time.Second, "measured interval (at most 5m)")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "load before measuring, not counted")
	fs.DurationVar(&cfg.timeout, "timeout", time.Second, "a setup without packet-out after this is an error")
	fs.Uint64Var(&cfg.count, "count", 0, "stop after this many measured setups (0: none); -duration still caps the run")
	fs.IntVar(&cfg.members, "members", 3, "pool members, from -first-member up")
	vip := fs.String("vip", "10.99.0.100:80", "VIP `address:port` (TCP); an IPv6 one, [address]:port, makes an IPv6 run")
	first := fs.String("first-member", "10.99.0.1", "address of the first member, of the VIP's family")
	openflow := fs.String("openflow", dialects[0].name(), "OpenFlow `version` the switches speak: 1.3 or 1.0")
	fs.BoolVar(&cfg.json, "json", false, "print the result as JSON")
	fs.BoolVar(&cfg.verbose, "v", false, "log the embedded controller at info level to stderr")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (tool and embedded controller) to `file`")
	fs.StringVar(&cfg.topology, "topology", "", "link the switches: `ring` (with chords) or leaf-spine, and measure the discovery")
	fs.IntVar(&cfg.spines, "spines", 4, "leaf-spine: how many of the switches are spines")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	setEmbedded := set["embedded"]
	if cfg.topology != "" && !set["switches"] {
		cfg.switches = 64
	}
	switch {
	case cfg.controller != "" && setEmbedded && *embedded:
		return nil, errors.New("-embedded and -controller exclude each other")
	case cfg.controller == "" && !*embedded:
		return nil, errors.New("-embedded=false needs -controller host:port")
	}
	var ok bool
	if cfg.of, ok = dialectNamed(*openflow); !ok {
		return nil, fmt.Errorf("-openflow must be 1.3 or 1.0, not %q", *openflow)
	}
	var err error
	if cfg.vip, err = netip.ParseAddrPort(*vip); err != nil || !plainAddr(cfg.vip.Addr()) || cfg.vip.Port() == 0 {
		return nil, fmt.Errorf("-vip %q: want an IPv4 address:port or an [IPv6 address]:port", *vip)
	}
	family := familyName(cfg.vip.Addr())
	if cfg.firstMember, err = netip.ParseAddr(*first); err != nil || !plainAddr(cfg.firstMember) || cfg.firstMember.Is4() != cfg.vip.Addr().Is4() {
		return nil, fmt.Errorf("-first-member %q: want an %s address, as the VIP's", *first, family)
	}
	if cfg.vip.Addr().Is6() && cfg.of.version() != dialects[0].version() {
		return nil, fmt.Errorf("-openflow %s matches no IPv6: an IPv6 -vip needs OpenFlow %s", cfg.of.name(), dialects[0].name())
	}
	return cfg, cfg.validate()
}

// plainAddr reports whether a is an IPv4 address, or an IPv6 one that is
// neither IPv4-mapped nor zoned: the addresses a VIP and members have.
func plainAddr(a netip.Addr) bool { return a.Is4() || a.Is6() && !a.Is4In6() && a.Zone() == "" }

func (c *config) validate() error {
	switch {
	case c.switches < 1 || c.switches > maxSwitches:
		return fmt.Errorf("-switches must be 1-%d, not %d", maxSwitches, c.switches)
	case c.rate == 0 && (c.window < 1 || c.window > maxWindow):
		return fmt.Errorf("-window must be 1-%d, not %d", maxWindow, c.window)
	case c.rate == 0 && c.switches*c.window > maxInFlight:
		return fmt.Errorf("-switches × -window must be at most %d, not %d", maxInFlight, c.switches*c.window)
	case c.rate < 0 || c.rate > maxRate:
		return fmt.Errorf("-rate must be 0 (throughput mode) to %d, not %g", maxRate, c.rate)
	case c.duration <= 0 || c.duration > maxDuration:
		return fmt.Errorf("-duration must be above 0 and at most %v, not %v", maxDuration, c.duration)
	case c.warmup < 0 || c.warmup > maxWarmup:
		return fmt.Errorf("-warmup must be 0-%v, not %v", maxWarmup, c.warmup)
	case c.timeout < time.Millisecond || c.timeout > 30*time.Second:
		return fmt.Errorf("-timeout must be 1ms-30s, not %v", c.timeout)
	case c.count > maxCount:
		return fmt.Errorf("-count must be at most %d, not %d", maxCount, c.count)
	case c.members < 1 || c.members > maxMembers:
		return fmt.Errorf("-members must be 1-%d, not %d", maxMembers, c.members)
	case c.topology != "" && c.topology != topoRing && c.topology != topoLeafSpine:
		return fmt.Errorf("-topology must be %s or %s, not %q", topoRing, topoLeafSpine, c.topology)
	case c.topology == topoRing && c.switches < 4:
		return fmt.Errorf("-topology ring needs at least 4 switches, not %d", c.switches)
	case c.topology == topoLeafSpine && (c.spines < 1 || c.spines >= c.switches):
		return fmt.Errorf("-spines must be 1-%d (fewer than the switches), not %d", c.switches-1, c.spines)
	}
	last := c.firstMember
	for range c.members - 1 {
		last = last.Next()
	}
	if vip := c.vip.Addr(); vip.Compare(c.firstMember) >= 0 && vip.Compare(last) <= 0 {
		return fmt.Errorf("the VIP %v is one of the members %v-%v", vip, c.firstMember, last)
	}
	if c.rate > 0 {
		c.window = 0 // latency mode keeps no window
	}
	return nil
}

// benchmark sets the controller up (embedded or through the API), runs,
// and tears down.
func benchmark(ctx context.Context, cfg *config, stderr io.Writer) (res *Result, err error) {
	if cfg.controller != "" {
		api := newAPIClient(cfg)
		cleanup, err := configureRemote(ctx, api, cfg)
		if cleanup != nil {
			defer func() {
				if cerr := cleanup(); cerr != nil {
					err = errors.Join(err, fmt.Errorf("remove the bench VIP: %w", cerr))
				}
			}()
		}
		if err != nil {
			return nil, fmt.Errorf("configure %s: %w", cfg.api, err)
		}
		return execute(ctx, cfg, cfg.controller, false, remoteProbe{api})
	}
	var log *slog.Logger
	if cfg.verbose {
		log = slog.New(slog.NewTextHandler(stderr, nil))
	}
	addr, c, stop, err := startEmbedded(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if serr := stop(); serr != nil {
			err = errors.Join(err, serr)
		}
	}()
	return execute(ctx, cfg, addr, true, embeddedProbe{c})
}

func realMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sdnlb-bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(stderr, "sdnlb-bench: cpu profile:", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	res, err := benchmark(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sdnlb-bench:", err)
		return 1
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	} else {
		err = writeTable(stdout, res)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sdnlb-bench:", err)
		return 1
	}
	switch {
	case res.Errors.Total > 0:
		fmt.Fprintf(stderr, "sdnlb-bench: %d errors\n", res.Errors.Total)
		return 1
	case res.Setups == 0:
		fmt.Fprintln(stderr, "sdnlb-bench: no setup completed")
		return 1
	}
	return 0
}

func main() { os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr)) }
