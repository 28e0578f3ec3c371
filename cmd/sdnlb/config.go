package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/sdnlb/sdnlb/api"
	"github.com/sdnlb/sdnlb/bgp"
	"github.com/sdnlb/sdnlb/controller"
	"github.com/sdnlb/sdnlb/controller/model"
)

// Config is every setting of the service. Each comes, by rising precedence,
// from its default, the config file, an SDNLB_* environment variable and a
// command-line flag.
type Config struct {
	APIAddr      string
	OpenFlowAddr string
	DB           string
	APIToken     string
	AuthReads    bool
	// APIInsecure lets the API listen beyond loopback without a token.
	APIInsecure          bool
	APIAllowedHosts      string // comma-separated
	CORSOrigins          string // comma-separated
	APIMaxConns          int
	APIMaxConnsPerClient int // 0: a quarter of APIMaxConns
	APIMaxStreams        int
	// APIClientPrefix4 and APIClientPrefix6 are how much of a source
	// address names one client under the connection and stream caps.
	APIClientPrefix4 int
	APIClientPrefix6 int
	LogLevel         slog.Level
	LogFormat        string

	FlowIdleTimeout time.Duration
	FlowHardTimeout time.Duration
	EchoInterval    time.Duration
	StatsInterval   time.Duration
	L2              string
	LinkMbps        uint64
	MaxProbes       int

	OpenFlowAllow         string // comma-separated addresses and prefixes
	OpenFlowMaxSwitches   int
	OpenFlowMaxHandshakes int

	// The topology's caps: links and learned hosts, per switch and in all.
	MaxLinks, MaxLinksPerSwitch int
	MaxHosts, MaxHostsPerSwitch int

	TLSCert     string
	TLSKey      string
	TLSClientCA string

	// NodeID names this node in the cluster; "" is the host name and the
	// API port.
	NodeID string

	// BGP: this node's AS (0: no BGP), its router id, the routers it
	// peers with (ADDR=ASN,...), the edges' next hops (DPID=ADDR,...) and
	// the graceful restart time asked of the routers.
	BGPASN             uint64
	BGPRouterID        string
	BGPPeers           string
	BGPNextHops        string
	BGPGracefulRestart time.Duration
}

// DefaultConfig is what a bare `sdnlb` runs with.
func DefaultConfig() Config {
	return Config{
		APIAddr:         "127.0.0.1:8080",
		OpenFlowAddr:    ":6653",
		DB:              "sdnlb.db",
		LogLevel:        slog.LevelInfo,
		LogFormat:       "text",
		FlowIdleTimeout: 30 * time.Second,
		EchoInterval:    5 * time.Second,
		StatsInterval:   2 * time.Second,
		LinkMbps:        controller.DefaultLinkCapacity / 1_000_000,
		L2:              "normal",
		MaxProbes:       512,

		OpenFlowMaxSwitches:   controller.DefaultMaxSwitches,
		OpenFlowMaxHandshakes: controller.DefaultMaxHandshakes,
		MaxLinks:              controller.DefaultMaxLinks,
		MaxLinksPerSwitch:     controller.DefaultMaxLinksPerSwitch,
		MaxHosts:              controller.DefaultMaxHosts,
		MaxHostsPerSwitch:     controller.DefaultMaxHostsPerSwitch,
		APIMaxConns:           api.DefaultMaxConns,
		APIMaxStreams:         api.DefaultMaxStreams,
		APIClientPrefix4:      api.DefaultClientPrefix4,
		APIClientPrefix6:      api.DefaultClientPrefix6,
		BGPGracefulRestart:    2 * time.Minute,
	}
}

// flagSet declares the flags onto c, so that parsing overwrites c's fields.
func (c *Config) flagSet(out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("sdnlb", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.APIAddr, "api-addr", c.APIAddr, "REST API listen address")
	fs.StringVar(&c.OpenFlowAddr, "openflow-addr", c.OpenFlowAddr, "OpenFlow 1.3 listen address for switches")
	fs.StringVar(&c.DB, "db", c.DB, "the database: a SQLite file, or a postgres:// URL of a PostgreSQL database that several sdnlb nodes share")
	fs.StringVar(&c.APIToken, "api-token", c.APIToken, "bearer token every API write must carry (empty: no auth)")
	fs.BoolVar(&c.AuthReads, "auth-reads", c.AuthReads, "require the API token for reads too")
	fs.BoolVar(&c.APIInsecure, "api-insecure", c.APIInsecure, "let the API listen beyond loopback without --api-token: anyone who reaches it can change everything")
	fs.StringVar(&c.APIAllowedHosts, "api-allowed-hosts", c.APIAllowedHosts, "comma-separated host names the API answers to besides IP addresses and localhost (\".example.com\": its subdomains; \"*\": any), against DNS rebinding")
	fs.StringVar(&c.CORSOrigins, "cors-origin", c.CORSOrigins, "comma-separated origins (https://ops.example.com) whose pages may call the API; other sites' pages cannot write")
	fs.IntVar(&c.APIMaxConns, "api-max-conns", c.APIMaxConns, "API connections open at once, event streams aside")
	fs.IntVar(&c.APIMaxConnsPerClient, "api-max-conns-per-client", c.APIMaxConnsPerClient, "API connections open at once from one client (0: a quarter of --api-max-conns); over a cap, a new connection takes the place of one of the client holding the most, idle ones first, then the one busy the longest")
	fs.IntVar(&c.APIClientPrefix4, "api-client-prefix4", c.APIClientPrefix4, "the prefix length of the IPv4 source addresses that count as one client under the API's connection and stream caps")
	fs.IntVar(&c.APIClientPrefix6, "api-client-prefix6", c.APIClientPrefix6, "the prefix length of the IPv6 source addresses that count as one client under the API's connection and stream caps (64: one host may send from any address of its /64)")
	fs.IntVar(&c.APIMaxStreams, "api-max-streams", c.APIMaxStreams, "event streams (/v1/events) open at once")
	fs.TextVar(&c.LogLevel, "log-level", c.LogLevel, "log level: debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", c.LogFormat, "log format: text or json")
	fs.DurationVar(&c.FlowIdleTimeout, "flow-idle-timeout", c.FlowIdleTimeout, "idle timeout of connection flows (0: none)")
	fs.DurationVar(&c.FlowHardTimeout, "flow-hard-timeout", c.FlowHardTimeout, "hard timeout of connection flows (0: none)")
	fs.DurationVar(&c.EchoInterval, "echo-interval", c.EchoInterval, "OpenFlow echo keepalive interval; 3 missed replies drop the switch")
	fs.DurationVar(&c.StatsInterval, "stats-interval", c.StatsInterval, "how often flow counters are polled from switches")
	fs.StringVar(&c.L2, "l2", c.L2, "who switches traffic not for a VIP: normal (the switch's own MAC learning, which keeps working without the controller), learn (the controller learns MACs and installs a flow per destination) or fabric (several linked switches: the controller forwards along paths it chooses by load and floods along a spanning tree; keeps working without the controller)")
	fs.Uint64Var(&c.LinkMbps, "link-capacity-mbps", c.LinkMbps, "the speed, in Mbit/s, of links whose ports report none (Open vSwitch patch ports, many virtual NICs): their utilisation is measured against it")
	fs.IntVar(&c.MaxProbes, "max-probes", c.MaxProbes, "health probes in flight at most")
	fs.StringVar(&c.OpenFlowAllow, "openflow-allow", c.OpenFlowAllow, "comma-separated addresses and prefixes (10.0.0.0/24) switches may connect from (empty: any)")
	fs.IntVar(&c.OpenFlowMaxSwitches, "openflow-max-switches", c.OpenFlowMaxSwitches, "switch sessions at once")
	fs.IntVar(&c.OpenFlowMaxHandshakes, "openflow-max-handshakes", c.OpenFlowMaxHandshakes, "switch handshakes in flight at once; at a full cap a new connection takes the place of the oldest handshake of the source with the most")
	fs.IntVar(&c.MaxLinks, "max-links", c.MaxLinks, "links between switches the topology holds, each direction apart; past it new links are refused (logged, counted in sdnlb_topology_refused_total)")
	fs.IntVar(&c.MaxLinksPerSwitch, "max-links-per-switch", c.MaxLinksPerSwitch, "links arriving at one switch the topology holds")
	fs.IntVar(&c.MaxHosts, "max-hosts", c.MaxHosts, "hosts the switches learn, all together; past it new hosts are refused (members the switches dispatch to excepted)")
	fs.IntVar(&c.MaxHostsPerSwitch, "max-hosts-per-switch", c.MaxHostsPerSwitch, "hosts one switch learns")
	fs.StringVar(&c.TLSCert, "openflow-tls-cert", c.TLSCert, "certificate for OpenFlow over TLS (with --openflow-tls-key)")
	fs.StringVar(&c.TLSKey, "openflow-tls-key", c.TLSKey, "private key for OpenFlow over TLS")
	fs.StringVar(&c.NodeID, "node-id", c.NodeID, "this node's name in the cluster of nodes sharing the database, unique among them (empty: host name and API port, host:8080)")
	fs.StringVar(&c.TLSClientCA, "openflow-tls-client-ca", c.TLSClientCA, "CA that switch certificates must chain to (enables client auth)")
	fs.Uint64Var(&c.BGPASN, "bgp-asn", c.BGPASN, "this node's AS number: with it, the node announces over BGP the address of every VIP with a member in rotation whose announce is true, from each edge switch it serves (0: no BGP)")
	fs.StringVar(&c.BGPRouterID, "bgp-router-id", c.BGPRouterID, "this node's BGP router id, an IPv4 address unique among the routers' peers (with --bgp-asn)")
	fs.StringVar(&c.BGPPeers, "bgp-peers", c.BGPPeers, "comma-separated routers this node opens BGP sessions to, as ADDR=ASN, ADDR an address or address:port (192.0.2.1=65000,[2001:db8::1]:179=65000)")
	fs.StringVar(&c.BGPNextHops, "bgp-next-hops", c.BGPNextHops, "comma-separated edge switches and the next hop the routers reach each by, as DPID=ADDR: the address of the switch's own interface on the routers' link, at most one per switch and family (00:00:00:00:00:00:00:01=192.0.2.11); a switch without one is no edge")
	fs.DurationVar(&c.BGPGracefulRestart, "bgp-graceful-restart", c.BGPGracefulRestart, "how long the routers keep this node's routes while it restarts or is stopped (whole seconds, at most 4095s; 0: they drop them when it stops)")
	return fs
}

// envName maps a flag name to its environment variable: api-addr → SDNLB_API_ADDR.
func envName(flagName string) string {
	return "SDNLB_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// errHelp says that --help was asked for and printed.
var errHelp = flag.ErrHelp

// LoadConfig builds the configuration from args (without the program name
// and subcommand) and the environment. A --config file, if named by flag or
// SDNLB_CONFIG, holds "name = value" lines with flag names.
func LoadConfig(args []string, getenv func(string) string, out io.Writer) (Config, error) {
	c := DefaultConfig()
	probe := c.flagSet(io.Discard)
	configFile := getenv("SDNLB_CONFIG")
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "config" {
			if hasValue {
				configFile = value
			} else if i+1 < len(args) {
				configFile = args[i+1]
			}
		}
	}
	if configFile != "" {
		if err := applyFile(probe, configFile); err != nil {
			return c, err
		}
	}
	var envErr error
	probe.VisitAll(func(f *flag.Flag) {
		if v := getenv(envName(f.Name)); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %w", envName(f.Name), v, err)
			}
		}
	})
	if envErr != nil {
		return c, envErr
	}
	// Flags last: they start from what file and environment gave.
	fs := c.flagSet(out)
	fs.String("config", configFile, "file of \"name = value\" lines using these flag names (env SDNLB_CONFIG)")
	fs.Usage = func() {
		fmt.Fprintf(out, "Usage: sdnlb [serve] [flags]\n\nEvery flag can also be set with SDNLB_<NAME> (e.g. SDNLB_API_ADDR) or in the --config file.\n\n")
		fmt.Fprintf(out, "Client commands talk to a running sdnlb: %s (sdnlb get -h tells more).\n", strings.Join(cliCommands, ", "))
		fmt.Fprintf(out, "On a member, sdnlb agent answers an AGENT monitor (sdnlb agent -h tells more).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return c, c.validate()
}

func applyFile(fs *flag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.Trim(strings.TrimSpace(value), `"`)
		if !ok || fs.Lookup(name) == nil {
			return fmt.Errorf("%s:%d: want \"name = value\" with a flag name, got %q", path, n, line)
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, n, name, err)
		}
	}
	return sc.Err()
}

func (c *Config) validate() error {
	if _, err := c.openFlowAllow(); err != nil {
		return err
	}
	if _, err := c.bgpOptions(); err != nil {
		return err
	}
	switch {
	case c.LogFormat != "text" && c.LogFormat != "json":
		return errors.New("--log-format must be text or json")
	case len(c.NodeID) > 255 || strings.ContainsFunc(c.NodeID, unicode.IsControl):
		return errors.New("--node-id must be at most 255 characters, none a control character")
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return errors.New("--openflow-tls-cert and --openflow-tls-key go together")
	case c.TLSClientCA != "" && c.TLSCert == "":
		return errors.New("--openflow-tls-client-ca needs --openflow-tls-cert and --openflow-tls-key")
	case c.FlowIdleTimeout < 0 || c.FlowHardTimeout < 0 || c.FlowIdleTimeout > 65535*time.Second || c.FlowHardTimeout > 65535*time.Second:
		return errors.New("flow timeouts must be 0-65535s")
	case c.EchoInterval <= 0 || c.StatsInterval <= 0:
		return errors.New("--echo-interval and --stats-interval must be positive")
	case c.MaxProbes < 1:
		return errors.New("--max-probes must be at least 1")
	case c.L2 != string(model.L2Normal) && c.L2 != string(model.L2Learn) && c.L2 != string(model.L2Fabric):
		return errors.New("--l2 must be normal, learn or fabric")
	case c.LinkMbps < 1 || c.LinkMbps > 1<<40:
		return errors.New("--link-capacity-mbps must be at least 1")
	case c.APIMaxConns < 1 || c.APIMaxStreams < 1:
		return errors.New("--api-max-conns and --api-max-streams must be at least 1")
	case c.APIMaxConnsPerClient < 0:
		return errors.New("--api-max-conns-per-client must be at least 0 (0: a quarter of --api-max-conns)")
	case c.MaxLinks < 1 || c.MaxLinksPerSwitch < 1 || c.MaxHosts < 1 || c.MaxHostsPerSwitch < 1:
		return errors.New("--max-links, --max-links-per-switch, --max-hosts and --max-hosts-per-switch must be at least 1")
	case c.APIClientPrefix4 < 1 || c.APIClientPrefix4 > 32:
		return errors.New("--api-client-prefix4 must be 1-32")
	case c.APIClientPrefix6 < 1 || c.APIClientPrefix6 > 128:
		return errors.New("--api-client-prefix6 must be 1-128")
	case c.OpenFlowMaxSwitches < 1 || c.OpenFlowMaxHandshakes < 1:
		return errors.New("--openflow-max-switches and --openflow-max-handshakes must be at least 1")
	case c.APIToken == "" && !c.APIInsecure && !loopbackAddr(c.APIAddr):
		return fmt.Errorf("--api-addr %s listens beyond loopback: set --api-token (SDNLB_API_TOKEN), or --api-insecure to serve it open", c.APIAddr)
	}
	return nil
}

// loopbackAddr reports whether the listen address addr is on loopback only:
// an empty host (":8080") listens on every interface.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// openFlowAllow parses --openflow-allow.
func (c *Config) openFlowAllow() ([]netip.Prefix, error) {
	return parseAllow("--openflow-allow", c.OpenFlowAllow)
}

// parseAllow parses the value of the flag name, a list of addresses and
// prefixes of peers allowed in. A value that names none (",") is refused
// rather than read as empty, which would allow everyone.
func parseAllow(name, value string) ([]netip.Prefix, error) {
	items := splitList(value)
	if len(items) == 0 && strings.TrimSpace(value) != "" {
		return nil, fmt.Errorf("%s: %q names no address or prefix; leave it empty to allow everyone", name, value)
	}
	var allow []netip.Prefix
	for _, item := range items {
		if p, err := netip.ParsePrefix(item); err == nil {
			allow = append(allow, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is neither an address nor a prefix", name, item)
		}
		allow = append(allow, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return allow, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// bgpOptions parses the BGP settings, nil without --bgp-asn. A BGP setting
// without --bgp-asn is refused, not ignored.
func (c *Config) bgpOptions() (*bgp.Options, error) {
	if c.BGPASN == 0 {
		if c.BGPRouterID != "" || c.BGPPeers != "" || c.BGPNextHops != "" {
			return nil, errors.New("--bgp-router-id, --bgp-peers and --bgp-next-hops need --bgp-asn")
		}
		return nil, nil
	}
	if c.BGPASN > math.MaxUint32 {
		return nil, errors.New("--bgp-asn must be 1-4294967295")
	}
	id, err := netip.ParseAddr(c.BGPRouterID)
	if err != nil || !id.Is4() || id.IsUnspecified() {
		return nil, fmt.Errorf("--bgp-router-id %q: want an IPv4 address, unique among the routers' peers", c.BGPRouterID)
	}
	peers, err := bgp.ParsePeers(c.BGPPeers)
	if err != nil {
		return nil, fmt.Errorf("--bgp-peers: %w", err)
	}
	if len(peers) == 0 {
		return nil, errors.New("--bgp-peers: name at least one router, as ADDR=ASN")
	}
	hops, err := bgp.ParseNextHops(c.BGPNextHops)
	if err != nil {
		return nil, fmt.Errorf("--bgp-next-hops: %w", err)
	}
	if len(hops) == 0 {
		return nil, errors.New("--bgp-next-hops: name at least one edge switch, as DPID=ADDR")
	}
	gr := c.BGPGracefulRestart
	if gr < 0 || gr > bgp.MaxGracefulRestart || gr%time.Second != 0 {
		return nil, fmt.Errorf("--bgp-graceful-restart %v: want whole seconds, 0-%v", gr, bgp.MaxGracefulRestart)
	}
	return &bgp.Options{ASN: uint32(c.BGPASN), RouterID: id, Peers: peers, NextHops: hops, GracefulRestart: gr}, nil
}
