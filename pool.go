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

// Pool is a set of members that serve one VIP.
type Pool struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Description  string    `json:"description"`
	VIPID        string    `json:"vip_id"` // "" while the pool serves no VIP; a VIP has at most one pool
	LBMethod     LBMethod  `json:"lb_method"`
	Protocol     Protocol  `json:"protocol"`
	AdminStateUp bool      `json:"admin_state_up"`
	MonitorIDs   []string  `json:"monitor_ids"` // read-only: changed by associating monitors
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// NewPool returns a pool with the defaults: round robin, TCP, admin up.
func NewPool() *Pool {
	return &Pool{LBMethod: RoundRobin, Protocol: ProtocolTCP, AdminStateUp: true, MonitorIDs: []string{}}
}

// Validate checks the fields a client sets. That the protocol matches the
// VIP's is checked by the store, which sees the VIP.
func (p *Pool) Validate() error {
	if p.ID != "" {
		if err := validateID(p.ID); err != nil {
			return err
		}
	}
	if err := validateName(p.Name); err != nil {
		return err
	}
	if !ValidLBMethod(p.LBMethod) {
		return FieldErrorf(EINVALID, "lb_method", "lb_method %q is not one of %v", p.LBMethod, LBMethods)
	}
	if !p.Protocol.Valid() {
		return FieldErrorf(EINVALID, "protocol", "protocol must be TCP, UDP or ICMP, not %q", p.Protocol)
	}
	return nil
}

// PoolUpdate names the fields an update changes; nil leaves a field as it is.
type PoolUpdate struct {
	Name         *string
	Description  *string
	VIPID        *string
	LBMethod     *LBMethod
	Protocol     *Protocol
	AdminStateUp *bool
}

// Apply writes the update onto p.
func (u *PoolUpdate) Apply(p *Pool) {
	setIf(&p.Name, u.Name)
	setIf(&p.Description, u.Description)
	setIf(&p.VIPID, u.VIPID)
	setIf(&p.LBMethod, u.LBMethod)
	setIf(&p.Protocol, u.Protocol)
	setIf(&p.AdminStateUp, u.AdminStateUp)
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
	UpdatePool(ctx context.Context, id string, upd PoolUpdate) (*Pool, error)
	// DeletePool refuses with ECONFLICT while the pool has members, unless
	// cascade, which deletes them too. Monitor associations go with it.
	DeletePool(ctx context.Context, id string, cascade bool) error
	// AssociateMonitor is idempotent.
	AssociateMonitor(ctx context.Context, poolID, monitorID string) error
	// DissociateMonitor fails with ENOTFOUND when they are not associated.
	DissociateMonitor(ctx context.Context, poolID, monitorID string) error
}
