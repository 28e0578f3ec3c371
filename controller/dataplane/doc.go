// Package dataplane is the decision for one switch, the middle of the
// controller's three layers, in the manner of faucet's valve.
//
// A Switch is given the snapshot, the time and what its switch said — a
// packet-in (PacketIn), a flow-removed (FlowRemoved), a stats reply
// (BeginPoll, PollPart, Settle), what the switch holds when it is adopted
// (Adopt) — and appends what to send to an Outbox; Configure brings it to
// a new snapshot. What other switches and the topology say is passed in:
// the fabric's paths (Config.Fabric, read only) and the fabric's view of
// this switch (ReconcileFabric). What the decision learns that spans
// switches (hosts seen, rows another switch must hold) leaves in the
// outbox too, for the runtime to hand on. No sockets, no goroutines, no
// clock.
//
// A Switch is made of parts, each the owner of its state: the L2 learner
// (l2.go), the in-switch dispatcher of SWITCH pools (dispatch.go), the
// held and recent setups (held.go, recent.go), the accounting (accounting.go),
// the connection setup of CONTROLLER pools (setup.go), ICMP errors sent on
// to members (icmperr.go) and under L2Fabric the fabric's rows it holds
// (fabric.go). What needs several parts is the Switch's own. reconcile.go
// is the pure diff from one snapshot's rows to the next.
package dataplane
