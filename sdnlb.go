// Package sdnlb holds the domain of the sdnlb load balancer: VIPs, pools,
// members and health monitors, their validation, the one Error type, and the
// small service interfaces that the store, the API, the OpenFlow controller
// and the health monitors implement or consume. It imports nothing outside
// the standard library; cmd/sdnlb wires the implementations together.
//
// The services validate every write, inside the transaction that makes it
// and so against the objects it will sit beside: callers hand on what
// clients sent and turn the EINVALID *Error, which names the field, into
// their answer.
package sdnlb

import (
	"context"
	"iter"
	"slices"
	"time"
)

// Protocol is the transport a VIP and its pool serve.
type Protocol string

const (
	ProtocolTCP  Protocol = "TCP"
	ProtocolUDP  Protocol = "UDP"
	ProtocolICMP Protocol = "ICMP"
	// ProtocolAny serves every IP protocol to the VIP's address, on every
	// port: Floodlight's VIP without a protocol. Like ICMP it ignores the
	// VIP's port, and it is the only VIP on its address.
	ProtocolAny Protocol = "ANY"
)

// Protocols lists every protocol, in documentation order.
var Protocols = []Protocol{ProtocolTCP, ProtocolUDP, ProtocolICMP, ProtocolAny}

// Valid reports whether p is a protocol sdnlb balances.
func (p Protocol) Valid() bool { return slices.Contains(Protocols, p) }

// HasPorts reports whether connections of p are told apart by L4 ports.
func (p Protocol) HasPorts() bool { return p == ProtocolTCP || p == ProtocolUDP }

// Page limits for list calls. A filter's Limit of 0 means everything, which
// only internal callers use; the API applies DefaultPageLimit.
const (
	DefaultPageLimit = 100
	MaxPageLimit     = 1000
)

// Page is the keyset pagination every list filter embeds: up to Limit
// objects whose id sorts after After.
type Page struct {
	Limit int
	After string
}

// Config is one consistent read of the whole configuration, from which the
// controller and the health monitors build their immutable snapshots.
type Config struct {
	Seq      uint64 // the Seq of the last Event the read includes
	VIPs     []*VIP
	Pools    []*Pool
	Members  []*Member
	Monitors []*Monitor
}

// ConfigStream is a configuration read one object at a time: its ETag
// (ConfigETag), then each kind's objects sorted by id, read from the store
// as they are ranged over, so that a large configuration is never whole
// in memory. A sequence that fails ends with its error. It is good only
// inside the ExportConfig call that hands it out.
type ConfigStream struct {
	ETag     string
	VIPs     iter.Seq2[*VIP, error]
	Pools    iter.Seq2[*Pool, error]
	Members  iter.Seq2[*Member, error]
	Monitors iter.Seq2[*Monitor, error]
}

// ConfigService reads and clears the configuration as a whole.
type ConfigService interface {
	LoadConfig(ctx context.Context) (*Config, error)
	// ExportConfig reads the configuration in one read transaction, as
	// LoadConfig does, and hands it to export as a stream.
	ExportConfig(ctx context.Context, export func(*ConfigStream) error) error
	// Clear deletes every VIP, pool, member and monitor in one transaction.
	Clear(ctx context.Context) error
}

// EventKind is the type of object an Event is about.
type EventKind string

const (
	KindVIP     EventKind = "vip"
	KindPool    EventKind = "pool"
	KindMember  EventKind = "member"
	KindMonitor EventKind = "monitor"
)

// EventOp is what happened to the object.
type EventOp string

const (
	OpCreate EventOp = "create"
	OpUpdate EventOp = "update"
	OpDelete EventOp = "delete"
	OpHealth EventOp = "health" // a member's health status changed
	OpResync EventOp = "resync" // events were lost: reload everything
)

// Event says that one committed write changed an object.
type Event struct {
	Seq  uint64    `json:"seq"`
	Kind EventKind `json:"kind"` // "" on OpResync, which is about everything
	Op   EventOp   `json:"op"`
	ID   string    `json:"id"`
	At   time.Time `json:"at"` // on OpHealth: when the member's status changed
	// Status is the member's new health status on OpHealth, so that a
	// follower can apply the change without reloading everything.
	Status MemberStatus `json:"status,omitempty"`
	// Agent is the member's agent report on OpHealth, when it has one.
	Agent *AgentReport `json:"agent,omitempty"`
}

// EventService is the change feed of the store.
type EventService interface {
	// Subscribe returns the events committed after the call, in commit
	// order, and a func that ends the subscription and closes the channel.
	// A subscriber that falls behind loses events and is then sent one
	// with Op OpResync.
	Subscribe() (<-chan Event, func())
}

// ConfigSource is the configuration and its change feed: what the
// controller and the health monitors follow. They subscribe first and load
// second, so that no write falls between the two (Config.Seq tells which
// events the load already holds), and reload when events arrive.
type ConfigSource interface {
	LoadConfig(ctx context.Context) (*Config, error)
	Subscribe() (<-chan Event, func())
}
