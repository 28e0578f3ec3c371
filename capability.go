package sdnlb

import (
	"fmt"
	"strings"
)

// The capability table: what each setting does in every mode sdnlb runs
// in. A setting is honoured the same way everywhere, carried out another
// way that the API shows, or refused with a 4xx that names it; never
// accepted and ignored. docs/CAPABILITIES.md is written from this table
// (Capabilities, go generate); the tests are generated from each row's
// cells, which say the same as its prose for a machine: validation refuses
// what a cell refuses and nothing else, and the e2e matrix measures the
// rest with traffic.

// Capability is one setting's row.
type Capability struct {
	Setting string
	// What it does under each dispatch of its pool.
	Switch, Controller string
	// What differs on an OpenFlow 1.0 switch, for IPv6, under the L2
	// modes, and in a cluster of nodes.
	OpenFlow10, IPv6, L2, Cluster string
	// Cells: the same facts, for the tests (capability_cell.go).
	Cells []Cell
}

const (
	same       = "the same"
	noL2Effect = "the same in every mode"
	byNode     = "the same on every node: it is configuration, in the shared database"
	on10       = "the controller dispatches the pool (a 1.0 switch has no select groups); `controller_dispatched_on` in the pool's stats names the switch"
)

// Capabilities lists every setting's row: the methods first, from
// LBMethods, then the other settings.
func Capabilities() []Capability {
	rows := make([]Capability, 0, len(LBMethods)+len(settingCapabilities))
	for _, m := range LBMethods {
		c := methodCapability(m)
		c.Cells = methodCells(m)
		rows = append(rows, c)
	}
	for _, c := range settingCapabilities {
		c.Cells = settingCells[c.Setting]
		rows = append(rows, c)
	}
	return rows
}

// methodCapability is a method's row, from what the switch can pick by
// and whether the method weighs members.
func methodCapability(m LBMethod) Capability {
	c := Capability{Setting: "`lb_method` " + string(m), Controller: methodMeaning[m],
		OpenFlow10: on10, IPv6: same, L2: noL2Effect, Cluster: byNode}
	switch {
	case !m.SwitchPicks():
		c.Switch = fmt.Sprintf("refused (400 on `dispatch`); a pool that names no dispatch gets %s", DispatchController)
		c.OpenFlow10 = same
	case m == SourceIP:
		c.Switch = "the switch hashes the client's whole address onto 256 slots, each member an equal part (`multipath`, table 5)"
	case m == ConsistentHash:
		c.Switch = "the switch hashes each connection, or its client's address (`hash_key`), onto 256 slots (`multipath`, table 5), each member's part in proportion to its weight in force, the parts assigned by the members' ids and weights alone"
		c.OpenFlow10 = "the controller dispatches the pool, with the same hash and slots (a 1.0 switch has no Nicira actions); `controller_dispatched_on` in the pool's stats names the switch"
		c.IPv6 = "the same; by CLIENT with `client_ipv6_prefix` 128 under SWITCH: a shorter prefix is refused there (400 on `client_ipv6_prefix`) and taken by the controller, which hashes the prefix, when no dispatch is named"
		c.IPv6 = "the same with `client_ipv6_prefix` 128; a shorter prefix is refused under SWITCH (400 on `client_ipv6_prefix`) and taken by the controller when no dispatch is named"
	case m.Weighs():
		c.Switch = "the switch hashes each connection onto 256 slots, each member's part in proportion to its weight in force"
	default:
		c.Switch = "the switch hashes each connection onto 256 slots, each member an equal part"
	}
	if what, ok := methodCounts[m]; ok {
		c.Cluster = "the same on every node, by the cluster's " + what + ": every node's, the others' as they last recorded them (" + clusterLag + ")"
	}
	return c
}

// methodCounts is what the methods that pick by what was counted count.
var methodCounts = map[LBMethod]string{
	LeastConnections:         "active connections",
	WeightedLeastConnections: "active connections",
	LeastBytes:               "bytes",
	Adaptive:                 "active connections (the S term)",
}

// clusterLag is how far behind a node's view of the other nodes' counts
// is: their record every second, and its read every second.
const clusterLag = "up to 2 s behind"

// methodMeaning is what each method does under CONTROLLER dispatch.
var methodMeaning = map[LBMethod]string{
	RoundRobin:               "exact rotation, weights ignored",
	WeightedRoundRobin:       "exact smooth weighted rotation",
	LeastConnections:         "fewest active connections, weights ignored",
	WeightedLeastConnections: "fewest active connections per weight",
	Random:                   "uniform, weights ignored",
	LeastBytes:               "fewest bytes carried, weights ignored",
	SourceIP:                 "per client: a hash of its address (or `client_ipv6_prefix`) over the members",
	ConsistentHash:           "the same hash of the packet as the switch's `multipath`, and the member of its slot in the same slots: a connection reaches the member the switch would give it (over 256 members, Maglev over that hash)",
	Adaptive:                 "weighted rotation over the weights the agents' reports and sessions adapt",
}

var settingCapabilities = []Capability{
	{
		Setting: "`session_persistence` (VIP)",
		Switch: "the switch hashes the client's whole address onto 256 slots (`multipath`, table 5), each member's part as the pool's method gives it: a client keeps its member while the members stay, also with the controller down, past `timeout`; a member that joins or leaves moves the clients of the slots that change (about 1/n). " +
			"With `client_ipv6_prefix` below 128 refused (400 on the pool's `dispatch`): a pool that names no dispatch gets CONTROLLER, and a VIP that gains it moves its SWITCH pool to CONTROLLER",
		Controller: "a client keeps its member for `timeout` seconds after its last connection, across member changes",
		OpenFlow10: on10 + ", which keeps `timeout`", IPv6: "the same; an IPv6 client is known by its `client_ipv6_prefix`", L2: noL2Effect,
		Cluster: "SWITCH: the switch keeps it, whichever node masters it; CONTROLLER: each node keeps the bindings of the switches it masters, and a node taking a switch over rebuilds them from the connection flows the switch holds: a client none of whose flows is left (a TCP connection's go 10 s after its close, others' once idle for `--flow-idle-timeout`) gets a fresh pick",
	},
	{
		Setting: "`hash_key` (pool)",
		Switch: "what CONSISTENT_HASH hashes: CONNECTION (the default), Open vSwitch's `symmetric_l4` (IP and Ethernet addresses, protocol, TCP's ports, both directions alike; a client's UDP flows share a member); CLIENT, the client's address (`nw_src`), so a client keeps its member; " +
			"CLIENT with another `lb_method` is refused (400 on `hash_key`), and a method other than CONSISTENT_HASH puts back CONNECTION",
		Controller: "the same: the controller computes the switch's hash of the packet",
		OpenFlow10: "the same: the controller dispatches, with the same hash",
		IPv6:       "the same; CLIENT hashes the whole address under SWITCH, the `client_ipv6_prefix` under CONTROLLER",
		L2:         noL2Effect, Cluster: byNode,
	},
	{
		Setting:    "`connection_limit` (VIP)",
		Switch:     "refused (400 on the pool's `dispatch`); a pool that names no dispatch gets CONTROLLER, and a VIP that gains it moves its SWITCH pool to CONTROLLER",
		Controller: "new connections past the limit are refused (TCP reset, ICMP unreachable); a TCP connection counts until its client's FIN or reset, which the switch sends up so that it ends at once; UDP and ICMP until their flows idle out",
		OpenFlow10: "on Open vSwitch as under CONTROLLER (its FIN and reset punts come through Nicira's 1.0 flow-mods); on another 1.0 switch, which matches no TCP flags, a connection counts until its flows idle out", IPv6: same, L2: noL2Effect,
		Cluster: "counts the cluster's connections: the node's own at once, the others' as they last recorded them (" + clusterLag + "), so connections opened through several nodes' switches within that while may pass the limit, each node admitting up to it",
	},
	{
		Setting:    "active connections (stats; LEAST_CONNECTIONS, WEIGHTED_LEAST_CONNECTIONS, ADAPTIVE's S term)",
		Switch:     "an estimate per member from the switch's counting rows, read each `--stats-interval`: connections opened less those whose client sent a FIN or reset, each counted once (NAT: or the member a reset); UDP ones never end",
		Controller: "TCP to a VIP without `connection_limit` or session persistence whose members have no `capacity` (the switch's tracker holds the connection, no flow of its own): counted from its SYN, by the controller until the next `--stats-interval` poll, then as under SWITCH by the switch's counting rows, until its client's FIN or reset (NAT: or the member's reset); one whose client and member both vanish stays counted until the member goes DOWN. The others have flows of their own, and count while open: a TCP connection from its SYN until its client's FIN or reset, which the switch sends up, and every connection until its flows go, idle for `--flow-idle-timeout`; a poll reads every connection flow of a switch that holds up to about 8,000 connections, and past that one shard of them in turn, so each is read every 2 to 64 polls",
		OpenFlow10: "on Open vSwitch as under CONTROLLER on 1.3 (the FIN and reset punts come through Nicira's 1.0 flow-mods, and the polls read by cookie, in shards); another 1.0 switch, which matches no TCP flags, counts them until their flows idle out and is read whole at every poll", IPv6: same, L2: noL2Effect,
		Cluster: "the cluster's, on every node: its own and the others' as they last recorded them (" + clusterLag + "); the stats' `nodes` give each node's share",
	},
	{
		Setting:    "`weight` (member)",
		Switch:     "the member's part of the slots under the methods that weigh members; 0 drains it under every method",
		Controller: "the member's part of the picks under the methods that weigh members; 0 drains it under every method",
		OpenFlow10: on10, IPv6: same, L2: noL2Effect, Cluster: byNode,
	},
	{
		Setting:    "`slow_start` (pool)",
		Switch:     "a member added or back UP ramps its slots linearly over the window; refused (400) under the methods that do not weigh members",
		Controller: "a member added or back UP ramps its share of picks linearly over the window; refused (400) under the methods that do not weigh members",
		OpenFlow10: on10, IPv6: same, L2: noL2Effect,
		Cluster: "each node ramps from when it saw the member come back",
	},
	{
		Setting:    "agent `NN%` (AGENT monitor)",
		Switch:     "scales the member's weight under the methods that weigh members; ADAPTIVE's formula reads it, stepping a member on each report of its own and rereading standing reports after 2 × (the monitor's `delay` + 1 s)",
		Controller: "scales the member's weight under the methods that weigh members; ADAPTIVE's formula reads it, stepping a member on each report of its own and rereading standing reports after 2 × (the monitor's `delay` + 1 s)",
		OpenFlow10: on10, IPv6: same, L2: noL2Effect,
		Cluster: "each node probes and weighs on its own reports",
	},
	{
		Setting:    "agent `drain`, `maint` / `down`, `fail`, `stopped`",
		Switch:     "DRAINING: no new connections, established ones run on / DOWN: the member's slots go, its connections are reset",
		Controller: "DRAINING: no new connections, established ones run on / DOWN: the member's flows go, its connections are reset",
		OpenFlow10: same, IPv6: same, L2: noL2Effect, Cluster: byNode,
	},
	{
		Setting:    "`capacity` (member)",
		Switch:     "a bound under every method, on the switch's estimate of active connections: a member whose estimate reaches it loses its slots at the next weighing (every second, on counts read every `--stats-interval`) and gets them back below it; none left: new connections go to the controller, which refuses them; a connection whose client sends its FIN and a reset together, or whose member resets it after its client's FIN, lowers the estimate by two, so the bound can let more through; ADAPTIVE also weighs its free sessions",
		Controller: "a bound under every method: a member at capacity is passed over at every pick, exactly (its clients' FINs and resets come up), and a connection no member has room for is refused (TCP reset; `capacity` in the refusals metric); ADAPTIVE also weighs its free sessions",
		OpenFlow10: "the controller dispatches the pool, on Open vSwitch as under CONTROLLER; on another 1.0 switch, which matches no TCP flags, its connections count until their flows idle out, so a member's room frees that late", IPv6: same, L2: noL2Effect,
		Cluster: "on the cluster's active connections (" + clusterLag + " for the other nodes'): each node bounds what it sends by them",
	},
	{
		Setting:    "`--flow-idle-timeout` (service)",
		Switch:     "does not apply: the switch's connection tracker holds the connections, and ages them by its own timeouts",
		Controller: "a connection with flows of its own (see active connections) ends once idle this long (default 30 s; 0: never). On Open vSwitch its flows carry no idle timeout while it is open: the stats polls delete a flow whose packet count stood still this long, so it goes between the timeout and two reads of its shard later (every 2 s, up to 32 s beside 200,000 flows); a TCP connection's flows get 10 s (the timeout, if shorter) at its client's FIN or reset, which the switch then ages. The tracker's connections: as under SWITCH",
		OpenFlow10: "the controller dispatches every pool: on Open vSwitch as under CONTROLLER; another 1.0 switch, which matches no TCP flags, gets the timeout in the flows and ages them itself",
		IPv6:       same, L2: "the same in every mode; under `fabric`, the rows that pass a connection's replies through the switches between its member's and its client's carry it as their idle timeout",
		Cluster: "each node ages the flows of the switches it masters; a node that takes a switch over reads each flow afresh, so an idle connection may stay up to one timeout longer",
	},
	{
		Setting:    "`forwarding` DSR (pool)",
		Switch:     "only the destination MAC is rewritten; members serve on the VIP's port (other ports refused, 400)",
		Controller: "only the destination MAC is rewritten; members serve on the VIP's port (other ports refused, 400)",
		OpenFlow10: "the same (SET_DL_DST)", IPv6: "the same; the member holds the VIP on its loopback", L2: noL2Effect, Cluster: byNode,
	},
	{
		Setting:    "`?take_address=true` (VIP writes, `PUT /v1/config`)",
		Switch:     "the VIP takes the address of a host the switches learned within 15 minutes; without it the write is refused (409 naming the host's MAC, switch and port)",
		Controller: "the same",
		OpenFlow10: same, IPv6: same,
		L2:      "the same; what the controller learned differs: under `normal` only the ARP that comes up to it, under `learn` every sender, under `fabric` the hosts on the edge",
		Cluster: "only the hosts the node the request reaches learned (on the switches it masters) are checked",
	},
	{
		Setting:    "`--max-links`, `--max-links-per-switch`, `--max-hosts`, `--max-hosts-per-switch`",
		Switch:     "new links (LLDP) and learned hosts past a cap are refused, counted and logged; members the switch dispatches to are learned regardless",
		Controller: "the same; an address a setup waits for is learned regardless",
		OpenFlow10: same, IPv6: "the same; IPv6 hosts count as IPv4 ones",
		L2:      "the same in every mode; under `fabric` the fabric's own table of hosts holds 65,536 network-wide besides",
		Cluster: "per node: each node's part of the topology, which it stores, stays within its caps",
	},
	{
		Setting:    "members per pool",
		Switch:     "at most 256, one slot each at least: the 257th is refused (409 naming the number), and a larger pool cannot take SWITCH",
		Controller: "no bound but the scheduler's (65,536)",
		OpenFlow10: "no bound: the controller dispatches", IPv6: same, L2: noL2Effect, Cluster: byNode,
	},
	{
		Setting:    "`--api-client-prefix4`, `--api-client-prefix6` (service)",
		Switch:     apiOnly,
		Controller: apiOnly,
		OpenFlow10: same, IPv6: "an IPv6 client is its /64 by default: one host holds a whole /64", L2: noL2Effect,
		Cluster: "each node caps the API connections it serves",
	},
	{
		Setting: "`announce` (VIP), with `--bgp-asn`, `--bgp-peers`, `--bgp-next-hops` (service)",
		Switch: "the VIP's address is announced over BGP from every edge switch the node serves while a member is in rotation, and withdrawn within a second of the last leaving, of the VIP's deletion or of the edge's loss; a connection the router moves to another edge keeps its member there, the edges holding the same buckets and hashing its addresses, protocol and ports alike, " +
			"except under CONSISTENT_HASH by CONNECTION, whose hash takes the Ethernet addresses too, which differ from edge to edge (a moved connection keeps its member by chance), and under NAT, where a connection works only while its member's replies pass the tracker of the edge that took it in",
		Controller: "announced the same way; a connection the router moves to another edge is reset there, where neither a flow nor the tracker holds it",
		OpenFlow10: "the controller dispatches the pool: a connection the router moves to another edge is reset there",
		IPv6:       "the same, a /128 announced from the edges with an IPv6 next hop",
		L2:         "`fabric` carries the edges' traffic to the members' switches, as between any switches; under `normal` and `learn` each edge reaches the members itself",
		Cluster:    "each node announces the edges it is the MASTER of over its own sessions, so the routers hear every edge from the node that serves it",
	},
	{
		Setting:    "`sdnlb agent --allow` (on a member)",
		Switch:     agentAllow,
		Controller: agentAllow,
		OpenFlow10: same, IPv6: "the same, with IPv6 prefixes", L2: noL2Effect,
		Cluster: "name every node: whichever leads probes",
	},
}

// agentAllow is what the agent's source list does under either dispatch.
const agentAllow = "which sources the agent answers; an AGENT monitor probing from elsewhere fails its probes and takes the member DOWN"

// apiOnly is what a setting of the API's own limits does to dispatch.
const apiOnly = "no part in dispatch: which API connections and event streams count as one client under `--api-max-conns-per-client` and the streams' cap"

// CapabilityTable renders the table as Markdown, one row a setting.
func CapabilityTable() string {
	var b strings.Builder
	b.WriteString("| setting | `SWITCH` dispatch | `CONTROLLER` dispatch | OpenFlow 1.0 | IPv6 | L2 modes | cluster |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, c := range Capabilities() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", c.Setting, c.Switch, c.Controller, c.OpenFlow10, c.IPv6, c.L2, c.Cluster)
	}
	return b.String()
}
