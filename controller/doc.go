// Package controller is sdnlb's embedded OpenFlow controller (1.3 and
// 1.0, IPv4 and IPv6): the runtime, the top of its three layers.
//
//	c := controller.New(store, controller.Options{Logger: log})
//	go c.Serve(ctx, ln)
//
// Controller implements sdnlb.SwitchService, sdnlb.StatsService,
// sdnlb.HostService and the controller's part of sdnlb.TopologyService.
//
// The layers, each a package, import only downward:
//
//   - controller (this package), the runtime: it follows the store's
//     change feed into snapshots (controller.go), runs one OpenFlow
//     connection per switch (switchconn.go: handshake, wire version in
//     wire.go, reader, writer, xids, echo, stats polling, requests waiting
//     for replies), asks for roles in a cluster (role.go), admits
//     connections (guard.go), discovers links by LLDP (lldp.go), keeps the
//     topology (topology.go) and, under L2Fabric, the fabric that spans
//     switches and the paths it chooses (fabric.go, paths.go), and answers
//     the API (switches.go, hosts.go, stats.go, part.go).
//   - controller/dataplane, one switch's decision: pure, reached only
//     through its connection's decide, which hands on what the decision
//     put in its outbox: messages to the switch, hosts for the fabric,
//     rows for other switches.
//   - controller/model, the flow vocabulary and the snapshot.
//
// Beneath them: controller/ofp and controller/ofp10 (the codecs) and
// controller/sched (the scheduling methods). docs/ARCHITECTURE.md walks
// through the layers; docs/DATAPATH.md explains the flow tables row by row.
package controller
