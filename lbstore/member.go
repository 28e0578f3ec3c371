package lbstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/sdnlb/sdnlb"
)

// MemberService stores members.
type MemberService struct {
	db *DB
}

var _ sdnlb.MemberService = (*MemberService)(nil)

// NewMemberService returns the member service of db.
func NewMemberService(db *DB) *MemberService { return &MemberService{db: db} }

// FindMemberByID returns the member with id, ENOTFOUND if there is none.
func (s *MemberService) FindMemberByID(ctx context.Context, id string) (*sdnlb.Member, error) {
	return readOrRemember(ctx, s.db, func(tx *Tx) (*sdnlb.Member, error) { return findMemberByID(ctx, tx, id) },
		func(cfg *sdnlb.Config) (*sdnlb.Member, error) { return recallByID(cfg.Members, memberID, "member", id) })
}

// FindMembers returns a page of the members the filter selects, by id.
func (s *MemberService) FindMembers(ctx context.Context, filter sdnlb.MemberFilter) ([]*sdnlb.Member, error) {
	return readOrRemember(ctx, s.db, func(tx *Tx) ([]*sdnlb.Member, error) { return findMembers(ctx, tx, filter) },
		func(cfg *sdnlb.Config) ([]*sdnlb.Member, error) { return recallMembers(cfg, filter), nil })
}

// CreateMember validates and stores m. On success m gets its id, health,
// status and timestamps; on failure it is left as it was.
func (s *MemberService) CreateMember(ctx context.Context, m *sdnlb.Member) error {
	return createTx(ctx, s.db, m, createMember)
}

// UpdateMember applies upd to the member with id.
func (s *MemberService) UpdateMember(ctx context.Context, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error) {
	return writeTx(ctx, s.db, func(tx *Tx) (*sdnlb.Member, error) {
		if err := ifMatch(ctx, tx, id, findMemberByID, func(m *sdnlb.Member) time.Time { return m.UpdatedAt }); err != nil {
			return nil, err
		}
		return updateMember(ctx, tx, id, upd)
	})
}

// DeleteMember deletes the member with id.
func (s *MemberService) DeleteMember(ctx context.Context, id string) error {
	return execTx(ctx, s.db, func(tx *Tx) error {
		if err := ifMatch(ctx, tx, id, findMemberByID, func(m *sdnlb.Member) time.Time { return m.UpdatedAt }); err != nil {
			return err
		}
		return deleteMember(ctx, tx, id)
	})
}

// MemberHealthService stores what the health monitors find.
type MemberHealthService struct {
	db *DB
}

var _ sdnlb.MemberHealthService = (*MemberHealthService)(nil)

// NewMemberHealthService returns the member health service of db.
func NewMemberHealthService(db *DB) *MemberHealthService { return &MemberHealthService{db: db} }

// SetMemberHealth stores h, with its agent report, for the member. It
// publishes an OpHealth event, which carries the status and the report,
// only when the status or what the agent said (available, drain) changed,
// and leaves UpdatedAt alone: health is not a change of configuration. A
// zero Since means now.
func (s *MemberHealthService) SetMemberHealth(ctx context.Context, id string, h sdnlb.MemberHealth) error {
	switch h.Status {
	case sdnlb.MemberUp, sdnlb.MemberDown, sdnlb.MemberNoMonitor:
	default:
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "status", "health status must be UP, DOWN or NO_MONITOR, not %q", h.Status)
	}
	if a := h.Agent; a != nil && (a.Available < 0 || a.Available > 100) {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "agent.available", "an agent's available capacity must be 0-100 percent, not %d", a.Available)
	}
	return execTx(ctx, s.db, func(tx *Tx) error { return setMemberHealth(ctx, tx, id, h) })
}

func setMemberHealth(ctx context.Context, tx *Tx, id string, h sdnlb.MemberHealth) error {
	var old memberRow
	if err := tx.GetContext(ctx, &old, `SELECT health_status, health_agent_available, health_agent_drain, health_agent_at
		FROM members WHERE id = ?`, id); errors.Is(err, sql.ErrNoRows) {
		return sdnlb.Errorf(sdnlb.ENOTFOUND, "member %q not found", id)
	} else if err != nil {
		return fmt.Errorf("find member health: %w", err)
	}
	if h.Since.IsZero() {
		h.Since = tx.now
	}
	var lastCheck any
	if h.LastCheck != nil {
		lastCheck = formatTime(*h.LastCheck)
	}
	var available, at any // NULL while no agent answered
	drain := false
	if h.Agent != nil {
		a := *h.Agent // the event's own: subscribers share it
		h.Agent = &a
		available, drain, at = a.Available, a.Drain, formatTime(a.At)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE members SET health_status = ?, health_since = ?, health_last_check = ?,
		health_latency_ms = ?, health_error = ?, health_agent_available = ?, health_agent_drain = ?, health_agent_at = ?
		WHERE id = ?`,
		h.Status, formatTime(h.Since), lastCheck, h.LatencyMS, h.LastError, available, drain, at, id,
	); err != nil {
		return fmt.Errorf("set member health: %w", err)
	}
	oldAgent, err := old.agent()
	if err != nil {
		return err
	}
	if sdnlb.MemberStatus(old.HealthStatus) != h.Status || agentChanged(oldAgent, h.Agent) {
		tx.events = append(tx.events, sdnlb.Event{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: id, At: h.Since,
			Status: h.Status, Agent: h.Agent})
	}
	return nil
}

// agentChanged reports whether an agent now says something else of its
// member than it did: when it said it alone does not count.
func agentChanged(old, now *sdnlb.AgentReport) bool {
	if old == nil || now == nil {
		return (old == nil) != (now == nil)
	}
	return old.Available != now.Available || old.Drain != now.Drain
}

// memberRow is a member as selectMembers reads it.
type memberRow struct {
	ID              string         `db:"id"`
	PoolID          string         `db:"pool_id"`
	Address         string         `db:"address"`
	Port            int            `db:"port"`
	Weight          int            `db:"weight"`
	Capacity        int            `db:"capacity"`
	AdminStateUp    bool           `db:"admin_state_up"`
	HealthStatus    string         `db:"health_status"`
	HealthSince     string         `db:"health_since"`
	HealthLastCheck sql.NullString `db:"health_last_check"`
	HealthLatencyMS float64        `db:"health_latency_ms"`
	HealthError     string         `db:"health_error"`
	AgentAvailable  sql.NullInt64  `db:"health_agent_available"`
	AgentDrain      bool           `db:"health_agent_drain"`
	AgentAt         sql.NullString `db:"health_agent_at"`
	CreatedAt       string         `db:"created_at"`
	UpdatedAt       string         `db:"updated_at"`
	Num             uint32         `db:"num"`
}

const selectMembers = `SELECT id, pool_id, address, port, weight, capacity, admin_state_up, health_status, health_since,
	health_last_check, health_latency_ms, health_error, health_agent_available, health_agent_drain, health_agent_at,
	created_at, updated_at, num
FROM members`

// agent is the stored agent report, nil while no agent answered.
func (r *memberRow) agent() (*sdnlb.AgentReport, error) {
	if !r.AgentAt.Valid {
		return nil, nil
	}
	at, err := parseTime(r.AgentAt.String)
	if err != nil {
		return nil, err
	}
	return &sdnlb.AgentReport{Available: int(r.AgentAvailable.Int64), Drain: r.AgentDrain, At: at}, nil
}

func (r *memberRow) member() (*sdnlb.Member, error) {
	m := &sdnlb.Member{
		ID:           r.ID,
		PoolID:       r.PoolID,
		Address:      r.Address,
		Port:         r.Port,
		Weight:       r.Weight,
		Capacity:     r.Capacity,
		AdminStateUp: r.AdminStateUp,
		Num:          r.Num,
		Health: sdnlb.MemberHealth{
			Status:    sdnlb.MemberStatus(r.HealthStatus),
			LatencyMS: r.HealthLatencyMS,
			LastError: r.HealthError,
		},
	}
	var err error
	if m.Health.Agent, err = r.agent(); err != nil {
		return nil, err
	}
	if m.Health.Since, err = parseTime(r.HealthSince); err != nil {
		return nil, err
	}
	if r.HealthLastCheck.Valid {
		t, err := parseTime(r.HealthLastCheck.String)
		if err != nil {
			return nil, err
		}
		m.Health.LastCheck = &t
	}
	if m.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if m.UpdatedAt, err = parseTime(r.UpdatedAt); err != nil {
		return nil, err
	}
	m.Status = m.EffectiveStatus()
	return m, nil
}

func findMemberByID(ctx context.Context, tx *Tx, id string) (*sdnlb.Member, error) {
	return getRow(ctx, tx, "member", id, (*memberRow).member, selectMembers+` WHERE id = ?`, id)
}

func findMembers(ctx context.Context, tx *Tx, filter sdnlb.MemberFilter) ([]*sdnlb.Member, error) {
	return collect(eachMember(ctx, tx, filter))
}

// eachMember reads the members the filter selects as they are ranged over.
func eachMember(ctx context.Context, tx *Tx, filter sdnlb.MemberFilter) iter.Seq2[*sdnlb.Member, error] {
	var w where
	if filter.PoolID != nil {
		w.add("pool_id = ?", *filter.PoolID)
	}
	if filter.Address != nil {
		w.add("address = ?", *filter.Address)
	}
	return queryRows(ctx, tx, "members", (*memberRow).member, selectMembers+w.pageSQL("id", filter.Page), w.args...)
}

func createMember(ctx context.Context, tx *Tx, m sdnlb.Member) (*sdnlb.Member, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if m.ID != "" {
		if exists, err := rowExists(ctx, tx, `SELECT 1 FROM members WHERE id = ?`, m.ID); err != nil {
			return nil, err
		} else if exists {
			return nil, sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "member %q already exists", m.ID)
		}
	}
	m.ID = newID(m.ID)
	health, err := initialHealth(ctx, tx, m.PoolID)
	if err != nil {
		return nil, err
	}
	if err := checkMemberEndpoint(ctx, tx, &m); err != nil {
		return nil, err
	}
	if err := checkMemberNotOnVIP(ctx, tx, &m); err != nil {
		return nil, err
	}
	if err := checkMemberVIP(ctx, tx, &m); err != nil {
		return nil, err
	}
	if err := checkSwitchPoolRoom(ctx, tx, m.PoolID); err != nil {
		return nil, err
	}
	num, err := nextNum(ctx, tx, numMember)
	if err != nil {
		return nil, err
	}
	now := formatTime(tx.now)
	if _, err := tx.ExecContext(ctx, `INSERT INTO members (id, pool_id, address, port, weight, capacity, admin_state_up,
		health_status, health_since, created_at, updated_at, num) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.PoolID, m.Address, m.Port, m.Weight, m.Capacity, m.AdminStateUp, health, now, now, now, num,
	); err != nil {
		return nil, mapError(fmt.Errorf("insert member: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindMember, sdnlb.OpCreate, m.ID)
	return findMemberByID(ctx, tx, m.ID)
}

// checkSwitchPoolRoom refuses a member beyond the slots of a pool the
// switch dispatches: each member must own a slot to get any connection.
func checkSwitchPoolRoom(ctx context.Context, tx *Tx, poolID string) error {
	var dispatch sdnlb.Dispatch
	if err := tx.GetContext(ctx, &dispatch, `SELECT dispatch FROM pools WHERE id = ?`, poolID); err != nil || dispatch != sdnlb.DispatchSwitch {
		return nil // a missing pool is checkMemberVIP's to report
	}
	n, err := countMembers(ctx, tx, poolID)
	if err != nil {
		return err
	}
	if n >= sdnlb.SwitchSlots {
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "pool_id",
			"pool %s has %d members, as many as the %d slots the switch spreads its connections over: set its dispatch to %s for more",
			poolID, n, sdnlb.SwitchSlots, sdnlb.DispatchController)
	}
	return nil
}

func countMembers(ctx context.Context, tx *Tx, poolID string) (int, error) {
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM members WHERE pool_id = ?`, poolID); err != nil {
		return 0, fmt.Errorf("count members: %w", err)
	}
	return n, nil
}

// initialHealth is the health of a new member of the pool: DOWN until
// checked when the pool has an active monitor, else NO_MONITOR. The pool
// must exist.
func initialHealth(ctx context.Context, tx *Tx, poolID string) (sdnlb.MemberStatus, error) {
	var monitors int
	err := tx.GetContext(ctx, &monitors, `SELECT (SELECT COUNT(*) FROM pool_monitors pm JOIN monitors mo ON mo.id = pm.monitor_id
		WHERE pm.pool_id = p.id AND mo.admin_state_up) FROM pools p WHERE p.id = ?`, poolID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "pool %q not found", poolID)
	} else if err != nil {
		return "", fmt.Errorf("find member pool: %w", err)
	}
	if monitors > 0 {
		return sdnlb.MemberDown, nil
	}
	return sdnlb.MemberNoMonitor, nil
}

func updateMember(ctx context.Context, tx *Tx, id string, upd sdnlb.MemberUpdate) (*sdnlb.Member, error) {
	m, err := findMemberByID(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if err := upd.Validate(m); err != nil {
		return nil, err
	}
	oldAddress := m.Address
	upd.Apply(m)
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := checkMemberEndpoint(ctx, tx, m); err != nil {
		return nil, err
	}
	if m.Address != oldAddress {
		if err := checkMemberNotOnVIP(ctx, tx, m); err != nil {
			return nil, err
		}
	}
	if err := checkMemberVIP(ctx, tx, m); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE members SET address = ?, port = ?, weight = ?, capacity = ?, admin_state_up = ?,
		updated_at = ? WHERE id = ?`, m.Address, m.Port, m.Weight, m.Capacity, m.AdminStateUp, formatTime(tx.now), id,
	); err != nil {
		return nil, mapError(fmt.Errorf("update member: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindMember, sdnlb.OpUpdate, id)
	return findMemberByID(ctx, tx, id)
}

func deleteMember(ctx context.Context, tx *Tx, id string) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM members WHERE id = ?`, id)
	if err != nil {
		return mapError(fmt.Errorf("delete member: %w", err), sdnlb.ECONFLICT)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("delete member: %w", err)
	} else if n == 0 {
		return sdnlb.Errorf(sdnlb.ENOTFOUND, "member %q not found", id)
	}
	tx.emit(sdnlb.KindMember, sdnlb.OpDelete, id)
	return nil
}

// checkMemberEndpoint refuses m when another member of its pool has the
// same address and port.
func checkMemberEndpoint(ctx context.Context, tx *Tx, m *sdnlb.Member) error {
	var other string
	err := tx.GetContext(ctx, &other, `SELECT id FROM members WHERE pool_id = ? AND address = ? AND port = ? AND id <> ?`,
		m.PoolID, m.Address, m.Port, m.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("check member endpoint: %w", err)
	}
	return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "member %s of pool %s already has %s", other, m.PoolID, sdnlb.HostPort(m.Address, m.Port))
}

// checkMemberNotOnVIP refuses m's address when a VIP has it: the switch
// answers ARP for it with the VIP's MAC, so the member could not be
// reached.
func checkMemberNotOnVIP(ctx context.Context, tx *Tx, m *sdnlb.Member) error {
	var vipID string
	err := tx.GetContext(ctx, &vipID, `SELECT id FROM vips WHERE address = ? ORDER BY id LIMIT 1`, m.Address)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("check member address: %w", err)
	}
	return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address",
		"%s is the address of vip %s: the switch answers for it with the vip's MAC, so a member there cannot be reached", m.Address, vipID)
}

// checkMemberVIP checks m against the VIP its pool serves: m's address
// must be of the VIP's family, and its port one the VIP can be served on
// when the pool forwards with DSR (see sdnlb.Forwarding.AllowsMemberPort).
// A pool without a VIP takes any member until it is linked, which checks
// its members then.
func checkMemberVIP(ctx context.Context, tx *Tx, m *sdnlb.Member) error {
	var row struct {
		Forwarding string         `db:"forwarding"`
		VIPID      sql.NullString `db:"vip_id"`
		Address    sql.NullString `db:"address"`
		Protocol   sql.NullString `db:"protocol"`
		Port       sql.NullInt64  `db:"port"`
	}
	err := tx.GetContext(ctx, &row, `SELECT p.forwarding, v.id AS vip_id, v.address, v.protocol, v.port
		FROM pools p LEFT JOIN vips v ON v.id = p.vip_id WHERE p.id = ?`, m.PoolID)
	if errors.Is(err, sql.ErrNoRows) {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "pool %q not found", m.PoolID)
	} else if err != nil {
		return fmt.Errorf("find member pool forwarding: %w", err)
	}
	if !row.VIPID.Valid {
		return nil
	}
	if vipAddress := row.Address.String; sdnlb.IsIPv6(m.Address) != sdnlb.IsIPv6(vipAddress) {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "address", "%s is %s; the pool's VIP %s (%s) is %s: a pool's members share its VIP's address family",
			m.Address, sdnlb.Family(m.Address), row.VIPID.String, vipAddress, sdnlb.Family(vipAddress))
	}
	f, proto, vipPort := sdnlb.Forwarding(row.Forwarding), sdnlb.Protocol(row.Protocol.String), int(row.Port.Int64)
	if f.AllowsMemberPort(proto, vipPort, m.Port) {
		return nil
	}
	return sdnlb.FieldErrorf(sdnlb.EINVALID, "port",
		"pool %s forwards with DSR, which cannot rewrite ports: a member's port must be %s to serve vip %s, not %d",
		m.PoolID, dsrMemberPorts(proto, vipPort), row.VIPID.String, m.Port)
}
