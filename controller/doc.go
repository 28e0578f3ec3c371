// Package controller is sdnlb's embedded OpenFlow 1.3 controller: switch
// connections, the switch's answers to ARP and neighbour solicitations for
// VIPs, L2 learning and the load-balancing data path, for IPv4 and IPv6.
// Addresses are netip.Addr of either family; addr.go chooses what differs
// on the wire by family.
//
//	c := controller.New(store, controller.Options{Logger: log})
//	go c.Serve(ctx, ln)
//
// Controller implements sdnlb.SwitchService, sdnlb.StatsService,
// sdnlb.HostService and sdnlb.TopologyService.
//
// The code follows the data path:
//
//   - controller.go follows the configuration: a burst of store events
//     builds an immutable snapshot (snapshot.go), or, for health changes
//     alone, patches the last one (patch.go); each switch is synced to it
//     with the flow-mods reconcile.go computes.
//   - switchconn.go is the OpenFlow connection to one switch: handshake,
//     reader, writer, xids, keepalive, requests waiting for replies. Its
//     decide method is the one way to the switch's dataplane: under the
//     connection's decision lock, the reader, configuration syncs and role
//     changes (role.go) decide in turn, and a promotion replaces the
//     dataplane there. What the handshake learns is set once, before the
//     connection is registered, and read without a lock.
//   - dataplane.go is one switch's decision, without I/O: given a snapshot,
//     the time and a packet-in, it appends what to send to an outbox
//     (outbox.go). It is made of parts, one per concern: the L2 learner
//     (l2.go), the in-switch dispatcher (dispatch.go), the held setups
//     (held.go), the recent setups (recent.go) and the accounting
//     (accounting.go, which reads the switch's flows into a ledger the
//     controller keeps across the switch's connections). It sets up connections to VIPs (setup.go) and adopts
//     what a switch holds (adopt.go).
//   - flows.go declares the flow table and builds every flow, tables.go
//     describes each table for the tests to check flows against; cookie.go
//     packs the cookies that let one masked delete purge a VIP or member.
//   - switches.go answers the API's questions about switches and hosts.go
//     which switch learned an address; affinity.go keeps SOURCE_IP
//     persistence; frame.go parses and makes frames (ARP, neighbour
//     discovery, resets).
//   - lldp.go discovers the links between switches: it sends LLDP frames
//     out of every port and reads the ones that come back; topology.go
//     keeps the links and what their ports send, across switches, and
//     answers the API's topology.
//   - fabric.go forwards across linked switches (L2Fabric): where hosts
//     attach, each switch's view of the ports and paths, and the rows
//     that bring a switch to it; paths.go finds the paths by load and the
//     spanning tree floods follow.
//
// docs/ARCHITECTURE.md explains the flow table row by row and why member
// replies are punted.
package controller
