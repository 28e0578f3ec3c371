package sdnlb

import (
	"context"
	"time"
)

// MemberStatus is a member's place in rotation.
type MemberStatus string

const (
	MemberUp        MemberStatus = "UP"         // its monitors pass
	MemberDown      MemberStatus = "DOWN"       // a monitor failed max_retries times, or it was never seen up
	MemberNoMonitor MemberStatus = "NO_MONITOR" // its pool has no monitor: in rotation, unchecked
	MemberDraining  MemberStatus = "DRAINING"   // admin down or weight 0: no new connections, old ones run out
)

// MaxWeight is the largest member weight, as in LBaaS.
const MaxWeight = 256

// MaxCapacity is the largest member capacity, in connections.
const MaxCapacity = 10_000_000

// MemberHealth is what the health monitors last found. Status is UP, DOWN
// or NO_MONITOR; only the health monitors write it.
type MemberHealth struct {
	Status    MemberStatus `json:"status"`
	Since     time.Time    `json:"since"`
	LastCheck *time.Time   `json:"last_check,omitempty"`
	LatencyMS float64      `json:"last_latency_ms"`
	LastError string       `json:"last_error,omitempty"`
	// Agent is what the member's agent (an AGENT monitor) last said; nil
	// while none has answered.
	Agent *AgentReport `json:"agent,omitempty"`
}

// AgentReport is what a member's agent said of the member.
type AgentReport struct {
	// Available is the share of its capacity the member has free, in
	// percent (0-100): ADAPTIVE's Ci. 100 until the agent names one.
	Available int `json:"available"`
	// Drain: the agent asked for no new connections; the member is
	// DRAINING until it says ready or up.
	Drain bool      `json:"drain"`
	At    time.Time `json:"at"` // when the agent said so
}

// Member is one server of a pool. (PoolID, Address, Port) is unique, and
// the address is of the family of the pool's VIP's.
type Member struct {
	ID      string `json:"id"`
	PoolID  string `json:"pool_id"`
	Address string `json:"address"` // IPv4 or IPv6 as the pool's VIP, in canonical form
	Port    int    `json:"port"`    // 0 means the VIP's port; in a DSR pool 0 or the VIP's port
	Weight  int    `json:"weight"`
	// Capacity is how many connections the member can hold, 0 for no
	// bound: at capacity it takes no new connection, under every method;
	// ADAPTIVE's Si is 1 - active/capacity.
	Capacity     int          `json:"capacity"`
	AdminStateUp bool         `json:"admin_state_up"`
	Status       MemberStatus `json:"status"` // derived: DRAINING, else Health.Status
	Health       MemberHealth `json:"health"`
	CreatedAt    time.Time    `json:"created_at"`
	UpdatedAt    time.Time    `json:"updated_at"`
	// Num is the member's number, which the cookies of its flows carry;
	// see VIP.Num.
	Num uint32 `json:"-"`
}

// NewMember returns a member with the defaults: weight 1, admin up.
func NewMember() *Member {
	return &Member{Weight: 1, AdminStateUp: true}
}

// EffectiveStatus derives Status from the admin state, weight and health.
func (m *Member) EffectiveStatus() MemberStatus {
	if !m.AdminStateUp || m.Weight == 0 || m.Health.Agent != nil && m.Health.Agent.Drain {
		return MemberDraining
	}
	if m.Health.Status == "" {
		return MemberNoMonitor
	}
	return m.Health.Status
}

// InRotation reports whether new connections may go to m.
func (m *Member) InRotation() bool {
	s := m.EffectiveStatus()
	return s == MemberUp || s == MemberNoMonitor
}

// Validate checks the fields a client sets and writes the address in its
// canonical form (see ParseUnicastIP), which the store compares.
func (m *Member) Validate() error {
	if m.ID != "" {
		if err := validateID(m.ID); err != nil {
			return err
		}
	}
	if m.PoolID == "" {
		return FieldErrorf(EINVALID, "pool_id", "pool_id is required")
	}
	if m.Address == "" {
		return FieldErrorf(EINVALID, "address", "address is required")
	}
	a, err := ParseUnicastIP(m.Address)
	if err != nil {
		return FieldErrorf(EINVALID, "address", "address: %v", err)
	}
	m.Address = a.String()
	if m.Port < 0 || m.Port > 65535 {
		return FieldErrorf(EINVALID, "port", "port must be 0-65535 (0: the VIP's port), not %d", m.Port)
	}
	if m.Weight < 0 || m.Weight > MaxWeight {
		return FieldErrorf(EINVALID, "weight", "weight must be 0-%d, not %d", MaxWeight, m.Weight)
	}
	if m.Capacity < 0 || m.Capacity > MaxCapacity {
		return FieldErrorf(EINVALID, "capacity", "capacity must be 0-%d connections (0: no bound), not %d", MaxCapacity, m.Capacity)
	}
	return nil
}

// MemberUpdate names the fields an update changes; nil leaves a field as it
// is. PoolID may repeat the member's pool, as clients send back what they
// read, but not name another (see Validate). Only the health monitors
// change the status.
type MemberUpdate struct {
	PoolID       *string
	Address      *string
	Port         *int
	Weight       *int
	Capacity     *int
	AdminStateUp *bool
}

// Validate checks the update against m, the member it is for, before it is
// applied. Members do not move between pools: a member of another pool is
// another member, with its own health and connections.
func (u *MemberUpdate) Validate(m *Member) error {
	if u.PoolID != nil && *u.PoolID != m.PoolID {
		return FieldErrorf(EINVALID, "pool_id", "pool_id cannot change; create a member in the other pool")
	}
	return nil
}

// Apply writes the update onto m.
func (u *MemberUpdate) Apply(m *Member) {
	setIf(&m.PoolID, u.PoolID)
	setIf(&m.Address, u.Address)
	setIf(&m.Port, u.Port)
	setIf(&m.Weight, u.Weight)
	setIf(&m.Capacity, u.Capacity)
	setIf(&m.AdminStateUp, u.AdminStateUp)
}

// MemberFilter selects members; nil fields match everything.
type MemberFilter struct {
	PoolID  *string
	Address *string
	Page
}

// MemberService manages members.
type MemberService interface {
	FindMemberByID(ctx context.Context, id string) (*Member, error)
	FindMembers(ctx context.Context, filter MemberFilter) ([]*Member, error)
	// CreateMember refuses a PoolID that does not exist (ENOTFOUND, field
	// pool_id). A member of a pool without monitors starts NO_MONITOR, one
	// of a monitored pool starts DOWN until its monitors pass. In a DSR
	// pool that serves a VIP, a port other than 0 and the VIP's is
	// EINVALID, field port (see Forwarding.AllowsMemberPort); so is
	// UpdateMember's. A VIP's address is ECONFLICT, field address, on
	// both.
	CreateMember(ctx context.Context, m *Member) error
	UpdateMember(ctx context.Context, id string, upd MemberUpdate) (*Member, error)
	DeleteMember(ctx context.Context, id string) error
}

// MemberHealthService records health transitions; the health monitors use
// it on every status change, not on every probe.
type MemberHealthService interface {
	// SetMemberHealth stores h for the member and emits an Event with Op
	// OpHealth when the status changed. ENOTFOUND when the member is gone.
	SetMemberHealth(ctx context.Context, id string, h MemberHealth) error
}

// HealthReporter gives the live result of the latest probes, which is
// fresher than what the store keeps (last check, latency, error). The API
// lays it over members it reads from the store.
type HealthReporter interface {
	MemberHealth(memberID string) (MemberHealth, bool)
}
