package sdnlb

import (
	"context"
	"slices"
	"time"
)

// LBMethod is the scheduling method by which a pool picks the member of a
// new connection; controller/sched implements each one.
type LBMethod string

const (
	RoundRobin               LBMethod = "ROUND_ROBIN"
	WeightedRoundRobin       LBMethod = "WEIGHTED_ROUND_ROBIN"
	LeastConnections         LBMethod = "LEAST_CONNECTIONS"
	WeightedLeastConnections LBMethod = "WEIGHTED_LEAST_CONNECTIONS"
	Random                   LBMethod = "RANDOM"
	LeastBytes               LBMethod = "LEAST_BYTES"
	SourceIP                 LBMethod = "SOURCE_IP"
	ConsistentHash           LBMethod = "CONSISTENT_HASH"
	Adaptive                 LBMethod = "ADAPTIVE"
)

// LBMethods lists every scheduling method, in documentation order.
var LBMethods = []LBMethod{
	RoundRobin, WeightedRoundRobin, LeastConnections, WeightedLeastConnections,
	Random, LeastBytes, SourceIP, ConsistentHash, Adaptive,
}

// ValidLBMethod reports whether m names a scheduling method.
func ValidLBMethod(m LBMethod) bool { return slices.Contains(LBMethods, m) }

// SwitchPicks reports whether a switch can pick members by m. The switch
// hashes each new connection onto slots the members own in proportion to
// their shares: over many connections that is what ROUND_ROBIN,
// WEIGHTED_ROUND_ROBIN, RANDOM and CONSISTENT_HASH ask for, and ADAPTIVE,
// whose weights the controller turns into the slots'. For SOURCE_IP it
// hashes the client's address instead, so a client keeps its member. The
// other methods need the controller's exact per-connection decision.
func (m LBMethod) SwitchPicks() bool {
	return m == RoundRobin || m == WeightedRoundRobin || m == Random || m == ConsistentHash || m == Adaptive || m == SourceIP
}

// Weighs reports whether a pool balancing by m gives its members shares in
// proportion to their weights, in every dispatch. ROUND_ROBIN, RANDOM,
// LEAST_CONNECTIONS, LEAST_BYTES and SOURCE_IP treat members alike; a
// member's weight then only drains it (0) or not.
func (m LBMethod) Weighs() bool {
	return m == WeightedRoundRobin || m == WeightedLeastConnections || m == ConsistentHash || m == Adaptive
}

// methodsWhere lists the methods for which ok holds, for messages.
func methodsWhere(ok func(LBMethod) bool) []LBMethod {
	var out []LBMethod
	for _, m := range LBMethods {
		if ok(m) {
			out = append(out, m)
		}
	}
	return out
}

// MaxSlowStart bounds a pool's slow start, in seconds. Untyped: a
// constant of type Seconds would make the spec's generator take Seconds
// for an enum.
const MaxSlowStart = 3600

// SwitchSlots is how many slots a switch spreads a pool's new
// connections over: a SWITCH pool holds at most as many members, so that
// each gets a slot.
const SwitchSlots = 256

// Dispatch says who picks the member of a new connection to a pool.
type Dispatch string

const (
	// DispatchSwitch: the switch picks the member itself, from an OpenFlow
	// select group or hash flows; the controller changes them only when
	// members' health, weights or membership change.
	DispatchSwitch Dispatch = "SWITCH"
	// DispatchController: the first packet of every connection goes to the
	// controller, which picks the member with the pool's lb_method and
	// installs the connection's flows (exact per-connection decisions).
	DispatchController Dispatch = "CONTROLLER"
)

// Dispatches lists every dispatch, the default first.
var Dispatches = []Dispatch{DispatchSwitch, DispatchController}

// Valid reports whether d names a dispatch.
func (d Dispatch) Valid() bool { return slices.Contains(Dispatches, d) }

// HashKey says what a CONSISTENT_HASH pool hashes to pick the member of a
// new connection: the same hash, and the same slots, whoever dispatches.
type HashKey string

const (
	// HashKeyConnection: the connection, both directions alike (Open
	// vSwitch's symmetric_l4): the addresses (IP and Ethernet), the
	// protocol and TCP's ports, so a client's TCP connections spread over
	// the members; UDP's ports are not hashed, so a client's UDP flows to
	// a VIP share one member.
	HashKeyConnection HashKey = "CONNECTION"
	// HashKeyClient: the client's address (or its client_ipv6_prefix), so a
	// client keeps its member for every connection.
	HashKeyClient HashKey = "CLIENT"
)

// HashKeys lists every hash key, the default first.
var HashKeys = []HashKey{HashKeyConnection, HashKeyClient}

// Valid reports whether k names a hash key.
func (k HashKey) Valid() bool { return slices.Contains(HashKeys, k) }

// Forwarding says how packets to a VIP reach the member and how its
// replies reach the client.
type Forwarding string

const (
	// ForwardingNAT rewrites the destination to the member, and the
	// member's replies back to the VIP.
	ForwardingNAT Forwarding = "NAT"
	// ForwardingDSR is direct server return, as in LVS direct routing:
	// only the destination MAC is rewritten. Members hold the VIP's address
	// on a loopback interface and reply straight to the client. Ports are
	// not rewritten, so members serve on the VIP's port (see
	// AllowsMemberPort).
	ForwardingDSR Forwarding = "DSR"
)

// Forwardings lists every forwarding, the default first.
var Forwardings = []Forwarding{ForwardingNAT, ForwardingDSR}

// Valid reports whether f names a forwarding.
func (f Forwarding) Valid() bool { return slices.Contains(Forwardings, f) }

// PinsMemberPort reports whether a pool that forwards with f to a VIP of
// protocol proto needs its members on the VIP's port: DSR cannot rewrite
// ports, NAT can, and ICMP has none. An ANY VIP's connections keep the
// port the client asked for, which a DSR member's port could not name.
func (f Forwarding) PinsMemberPort(proto Protocol) bool {
	return f == ForwardingDSR && proto != ProtocolICMP
}

// AllowsMemberPort reports whether a member on memberPort can serve a VIP
// of protocol proto on vipPort when its pool forwards with f: where f pins
// the port, only 0 (the VIP's port) and, for TCP and UDP, vipPort itself.
// The store checks it on every write that changes one side of it: a
// member's port, a pool's forwarding or VIP, a VIP's port or pool.
func (f Forwarding) AllowsMemberPort(proto Protocol, vipPort, memberPort int) bool {
	return !f.PinsMemberPort(proto) || memberPort == 0 || proto.HasPorts() && memberPort == vipPort
}

// Pool is a set of members that serve one VIP.
type Pool struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	Description  string     `json:"description"`
	VIPID        string     `json:"vip_id"` // "" while the pool serves no VIP; a VIP has at most one pool
	LBMethod     LBMethod   `json:"lb_method"`
	Dispatch     Dispatch   `json:"dispatch"`   // who picks the member: the switch or the controller
	Forwarding   Forwarding `json:"forwarding"` // how packets reach the member: NAT or DSR
	Protocol     Protocol   `json:"protocol"`
	AdminStateUp bool       `json:"admin_state_up"`
	// SlowStart is how long a member added or back UP takes to ramp its
	// weight linearly from nothing to all of it, as HAProxy's slowstart
	// does; 0: at once. Only methods that weigh members ramp.
	SlowStart Seconds `json:"slow_start"`
	// ClientIPv6Prefix is the length of the prefix an IPv6 client is
	// known by for SOURCE_IP balancing and its VIP's SOURCE_IP
	// persistence: 128, the default, is the address; 64 keeps a host
	// whose privacy addresses change within its /64 on one member.
	ClientIPv6Prefix int `json:"client_ipv6_prefix"`
	// HashKey is what CONSISTENT_HASH hashes; the other methods keep the
	// default.
	HashKey    HashKey   `json:"hash_key"`
	MonitorIDs []string  `json:"monitor_ids"` // read-only: changed by associating monitors
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`

	// LBMethodUnset is true while no client has chosen the method: the
	// pool balances by LBMethod, the default, and the Floodlight routes
	// show it as Floodlight shows a pool whose method was never set.
	LBMethodUnset bool `json:"-"`
	// DispatchAsked is true when the write that made this pool named its
	// dispatch; otherwise the dispatch is a default, which the store
	// moves to CONTROLLER when the pool's VIP needs it (VIP.NeedsController).
	DispatchAsked bool `json:"-"`
}

// NewPool returns a pool with the defaults: round robin, dispatched by
// the switch, NAT, TCP, admin up. Pools stored before dispatch existed
// were migrated to DispatchController, the path they had always taken.
func NewPool() *Pool {
	return &Pool{LBMethod: RoundRobin, Dispatch: DispatchSwitch, Forwarding: ForwardingNAT, Protocol: ProtocolTCP,
		AdminStateUp: true, ClientIPv6Prefix: 128, HashKey: HashKeyConnection, MonitorIDs: []string{}}
}

// Validate checks the fields a client sets. That the protocol matches the VIP's, and that
// a DSR pool's members use the VIP's port, is checked by the store, which
// sees the VIP and the members.
func (p *Pool) Validate() error {
	if p.ID != "" {
		if err := validateID(p.ID); err != nil {
			return err
		}
	}
	if err := validateName(p.Name); err != nil {
		return err
	}
	if err := validateDescription(p.Description); err != nil {
		return err
	}
	if !ValidLBMethod(p.LBMethod) {
		return FieldErrorf(EINVALID, "lb_method", "lb_method %q is not one of %v", p.LBMethod, LBMethods)
	}
	if !p.Dispatch.Valid() {
		return FieldErrorf(EINVALID, "dispatch", "dispatch %q is not one of %v", p.Dispatch, Dispatches)
	}
	if p.Dispatch == DispatchSwitch {
		if err := p.switchCannotPick(); err != nil {
			return err
		}
	}
	// Negated, so that NaN fails too.
	if !(p.SlowStart >= 0 && p.SlowStart <= MaxSlowStart) {
		return FieldErrorf(EINVALID, "slow_start", "slow_start must be 0-%v seconds, not %v", float64(MaxSlowStart), float64(p.SlowStart))
	}
	if p.SlowStart > 0 && !p.LBMethod.Weighs() {
		return FieldErrorf(EINVALID, "slow_start",
			"%s does not weigh members, so it cannot ramp one up: slow_start needs one of %v, or 0",
			p.LBMethod, methodsWhere(LBMethod.Weighs))
	}
	if p.ClientIPv6Prefix < 1 || p.ClientIPv6Prefix > 128 {
		return FieldErrorf(EINVALID, "client_ipv6_prefix", "client_ipv6_prefix must be 1-128, not %d", p.ClientIPv6Prefix)
	}
	if !p.HashKey.Valid() {
		return FieldErrorf(EINVALID, "hash_key", "hash_key %q is not one of %v", p.HashKey, HashKeys)
	}
	if p.HashKey != HashKeyConnection && p.LBMethod != ConsistentHash {
		return FieldErrorf(EINVALID, "hash_key", "hash_key %s chooses what %s hashes, and the pool balances by %s: use lb_method %s, or hash_key %s",
			p.HashKey, ConsistentHash, p.LBMethod, ConsistentHash, HashKeyConnection)
	}
	if !p.Forwarding.Valid() {
		return FieldErrorf(EINVALID, "forwarding", "forwarding %q is not one of %v", p.Forwarding, Forwardings)
	}
	if !p.Protocol.Valid() {
		return FieldErrorf(EINVALID, "protocol", "protocol must be one of %v, not %q", Protocols, p.Protocol)
	}
	return nil
}

// switchCannotPick says why a switch cannot pick p's members, nil when it
// can: a method only the controller has, or a client known by less than
// its whole IPv6 address, which the switch's hash of a client takes.
func (p *Pool) switchCannotPick() error {
	if !p.LBMethod.SwitchPicks() {
		return FieldErrorf(EINVALID, "dispatch",
			"dispatch %s cannot pick members by %s, only by the members' shares or the client's address (%v): use dispatch %s",
			DispatchSwitch, p.LBMethod, methodsWhere(LBMethod.SwitchPicks), DispatchController)
	}
	if p.HashesClient() && p.ClientIPv6Prefix != 128 {
		return FieldErrorf(EINVALID, "client_ipv6_prefix",
			"dispatch %s hashes a client's whole address, so %s with it keeps client_ipv6_prefix 128, not %d: use dispatch %s for a shorter prefix",
			DispatchSwitch, p.clientHashing(), p.ClientIPv6Prefix, DispatchController)
	}
	return nil
}

// HashesClient reports whether p picks a client's member by a hash of its
// address: SOURCE_IP, and CONSISTENT_HASH by the client.
func (p *Pool) HashesClient() bool {
	return p.LBMethod == SourceIP || p.LBMethod == ConsistentHash && p.HashKey == HashKeyClient
}

// clientHashing names what hashes p's clients, for messages.
func (p *Pool) clientHashing() string {
	if p.LBMethod == SourceIP {
		return string(SourceIP)
	}
	return string(ConsistentHash) + " by hash_key " + string(HashKeyClient)
}

// PoolUpdate names the fields an update changes; nil leaves a field as it is.
type PoolUpdate struct {
	Name         *string
	Description  *string
	VIPID        *string
	LBMethod     *LBMethod
	Dispatch     *Dispatch
	Forwarding   *Forwarding
	Protocol     *Protocol
	AdminStateUp *bool
	SlowStart    *Seconds
	// ClientIPv6Prefix: see Pool.
	ClientIPv6Prefix *int
	HashKey          *HashKey
	// UnsetLBMethod puts back the default method, as chosen by no client
	// (a Floodlight client posting the pool again without lb_method).
	UnsetLBMethod bool
	// UnsetDispatch puts back the default dispatch, as asked for by no
	// client: SWITCH, or CONTROLLER where the method or the VIP needs it.
	UnsetDispatch bool
}

// Apply writes the update onto p. A method (or client prefix) the switch
// cannot pick by moves the pool to CONTROLLER dispatch unless the update
// names one; a method other than CONSISTENT_HASH puts back the default
// hash key unless the update names one.
func (u *PoolUpdate) Apply(p *Pool) {
	setIf(&p.Name, u.Name)
	setIf(&p.Description, u.Description)
	setIf(&p.VIPID, u.VIPID)
	if u.UnsetLBMethod {
		p.LBMethod, p.LBMethodUnset = NewPool().LBMethod, true
	}
	if u.LBMethod != nil {
		p.LBMethod, p.LBMethodUnset = *u.LBMethod, false
	}
	if u.UnsetDispatch {
		p.Dispatch = NewPool().Dispatch
	}
	setIf(&p.Dispatch, u.Dispatch)
	p.DispatchAsked = u.Dispatch != nil
	setIf(&p.Forwarding, u.Forwarding)
	setIf(&p.Protocol, u.Protocol)
	setIf(&p.AdminStateUp, u.AdminStateUp)
	setIf(&p.SlowStart, u.SlowStart)
	setIf(&p.ClientIPv6Prefix, u.ClientIPv6Prefix)
	setIf(&p.HashKey, u.HashKey)
	if u.HashKey == nil && p.LBMethod != ConsistentHash {
		p.HashKey = HashKeyConnection // another method hashes nothing: the key goes with CONSISTENT_HASH
	}
	if u.Dispatch == nil && p.switchCannotPick() != nil {
		p.Dispatch = DispatchController // the method or the prefix needs it, and no dispatch was asked for
	}
}

// PoolFilter selects pools; nil fields match everything.
type PoolFilter struct {
	VIPID     *string
	MonitorID *string
	Page
}

// PoolService manages pools and their monitor associations.
type PoolService interface {
	FindPoolByID(ctx context.Context, id string) (*Pool, error)
	FindPools(ctx context.Context, filter PoolFilter) ([]*Pool, error)
	// CreatePool refuses a VIPID that does not exist (ENOTFOUND, field
	// vip_id) or that another pool serves (ECONFLICT).
	CreatePool(ctx context.Context, p *Pool) error
	// UpdatePool refuses to make a pool DSR, or to link a DSR pool to a
	// VIP, while one of its members uses a port other than 0 and the
	// VIP's (EINVALID, field forwarding).
	UpdatePool(ctx context.Context, id string, upd PoolUpdate) (*Pool, error)
	// DeletePool refuses with ECONFLICT while the pool has members, unless
	// cascade, which deletes them too. Monitor associations go with it.
	DeletePool(ctx context.Context, id string, cascade bool) error
	// AssociateMonitor is idempotent.
	AssociateMonitor(ctx context.Context, poolID, monitorID string) error
	// DissociateMonitor fails with ENOTFOUND when they are not associated.
	DissociateMonitor(ctx context.Context, poolID, monitorID string) error
}
