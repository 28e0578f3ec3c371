// Package controller is sdnlb's embedded OpenFlow 1.3 controller: switch
// sessions, the ARP proxy, L2 learning and the load-balancing data path.
//
// # Use
//
//	c := controller.New(store, controller.Options{Addr: ":6653", Logger: log})
//	go c.Run(ctx)    // or c.Serve(ctx, ln); c.Addr() once listening
//
// Controller implements sdnlb.SwitchService and sdnlb.StatsService.
//
// # Data path
//
// One table. Priorities, high to low (see flows.go):
//
//	1000  a pair of NAT flows per connection on the full 5-tuple (ICMP: per
//	      client, echo only); idle/hard timeouts from Options, SEND_FLOW_REM
//	 900  per address of a member not DOWN, in a pool with an enabled VIP:
//	      its replies (source address and service port; ICMP: echo
//	      replies) → CONTROLLER
//	 500  per VIP: ARP requests for its address, and its service → CONTROLLER
//	 499  per VIP address: other IPv4 to it → drop, never punted again
//	 100  learned L2 destinations, idle 300 s
//	   0  table miss → CONTROLLER (whole packet; miss_send_len is 0xffff)
//
// Every cookie packs app id | category | VIP number | member number
// (cookie.go), so one masked delete purges a member's or a VIP's
// connections on a switch. Numbers are given per id for the life of the
// process and never reused.
//
// The reply punts exist because Open vSwitch caches what its table decided
// in a datapath flow cache, wildcarding what no flow looked at, and
// revalidates that cache asynchronously after flow-mods. A member's reply
// switched by MAC (say, a retransmit of a connection purged at DOWN) would
// leave a cached entry that the next connection's replies could hit before
// revalidation, reaching the client from the member's address. With the
// punts, every cached entry for a member's replies sends to the controller.
// A DOWN member loses its punt with its connections (no flow names a failed
// host), so an entry cached between its return and its coming UP is
// revalidated only when the punt comes back, together with the member's
// return to rotation: a narrow window left open. Members sharing an
// address share one punt, installed under the lowest member number and
// replaced, not deleted, when that member goes.
//
// Flow generators are pure (baseFlows, vipFlows, connFlows.build,
// reconcile); sessions send what they return.
//
// # Sessions
//
// Per switch one reader goroutine decodes every message and handles
// packet-ins inline, reusing its decode structs, so a packet-in allocates
// nothing in the steady state. Replies are buffered and flushed when no
// more input is buffered (batching). Other goroutines (configuration sync,
// keepalive, stats polls, API calls) write through the same writer under a
// mutex. The handshake sends hello (1.3 bitmap), features request,
// set-config, port-desc request, a delete of every sdnlb flow, the base and
// VIP flows, and a barrier. A switch that speaks no 1.3 gets HELLO_FAILED/
// INCOMPATIBLE; a malformed message closes only its session; a
// reconnecting datapath replaces its old session and gets the whole state
// again. Any message from a switch counts as a keepalive answer; three echo
// intervals without one close the session.
//
// # Configuration
//
// Every store event reloads the configuration into an immutable snapshot
// behind an atomic pointer (bursts coalesce); packet-ins never take a lock
// the API holds. Each session diffs the snapshot it has against the new one:
// new or changed VIPs get their flows and a gratuitous ARP; deleted or
// disabled VIPs lose their flows and connections; a member that is deleted,
// moved or goes DOWN loses its connection flows and its reply punt, which
// comes back when it leaves DOWN; a DRAINING member (admin down or weight
// 0) keeps its connections but takes no new ones. Schedulers
// are built per snapshot from the members in rotation (UP or NO_MONITOR).
//
// # New connections
//
// A packet to a VIP service is classified by (address, protocol, port). A
// TCP segment that is not a SYN has no flow (its member failed and was
// purged): the client gets a RST at once. A new connection is refused
// (TCP: RST; UDP and ICMP: dropped; counted in PoolStats) when the VIP's
// pool is missing, admin down or has no member in rotation, or when the
// VIP's connection_limit is reached. Active connections are counted per VIP
// as installs minus flow-removed of the client → member flow; the slot is
// taken atomically at admission, so the limit holds across switches.
// SOURCE_IP persistence keeps a client on its member while that member is
// in rotation, for timeout seconds after its last connection started or
// ended. Packets of a connection that reach the controller within 2 s of
// its setup follow the first one to the same member, found in a per-session
// cache of recent setups: a UDP burst, a retransmitted SYN, and, on Open
// vSwitch, the client's ACK, which can overtake the revalidation of the
// datapath flow cache and arrive through the VIP's punt flow (without the
// cache it would be reset as a packet of a purged connection). The
// member's replies overtake it the same way and arrive through its reply
// punt: a second cache, keyed by member and client address and port, finds
// their connection and the controller sends them with the reverse NAT.
// Other packets of the reply punts (health-probe replies, traffic to a
// member's own address, replies of purged connections or of setups older
// than 2 s) are switched by MAC with a packet-out and no flow-mod. A purged
// connection's reply so reaches its client from the member's address and
// the client's reset ends it on the member; the controller cannot tell it
// from direct traffic to the member without tracking purged connections,
// so it neither drops nor resets it. A setup that raced a configuration
// change sends the member's or VIP's purge again behind its own flows.
//
// A member's MAC and port are learned per switch from ARP (and from IPv4
// the controller sees); when unknown the controller ARPs for the member
// from the VIP's addresses, flooded, and holds up to 16 setups per member
// for 2 s until the reply comes.
//
// # Accounting
//
// Flow-removed messages add a connection's final counters to its member
// (client → member is "in", member → client "out"). Every StatsInterval a
// cookie-filtered flow-stats request reads the live connection flows; the
// members' live counters move by the difference to the previous poll, so
// totals are removed + live (a flow that just ended may count twice until
// the next poll). LEAST_BYTES and PoolStats read these counters. When a
// session ends, what it contributed to active and live counts is taken
// back.
package controller
