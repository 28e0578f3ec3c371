// Package model is the controller's vocabulary and the meaning of a
// configuration, independent of any switch: the bottom of its three layers.
//
// The flow vocabulary: the tables and their descriptors (tables.go: what
// each table may match and where its rows may send a packet, checked on
// every flow-mod the decision sends), priorities and cookies (cookie.go),
// matches for either address family (addr.go), the builders of every row
// (flows.go, dispatch.go for the in-switch dispatch, connection.go for a
// CONTROLLER connection's flow pair) and the parsers that read rows back
// from a switch (parse.go).
//
// The snapshot (snapshot.go): an immutable meaning of one configuration —
// VIP, pool and member states, their numbers for the process's life, each
// pool's rotation and scheduler, the reply punts the switches must have —
// built by a Builder from the store's configuration, patched for health
// changes (patch.go) and reweighed for the SRX weights and slow start
// (weights.go). The member and VIP counters it carries are the only state
// in it that changes, atomically.
//
// The package does no I/O, starts no goroutine and keeps no clock: the
// Builder is handed one.
package model
