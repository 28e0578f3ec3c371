package lbstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sort"
	"time"

	"github.com/sdnlb/sdnlb"
)

// PoolService stores pools and their monitor associations.
type PoolService struct {
	db *DB
}

var _ sdnlb.PoolService = (*PoolService)(nil)

// NewPoolService returns the pool service of db.
func NewPoolService(db *DB) *PoolService { return &PoolService{db: db} }

// FindPoolByID returns the pool with id, ENOTFOUND if there is none.
func (s *PoolService) FindPoolByID(ctx context.Context, id string) (*sdnlb.Pool, error) {
	return readOrRemember(ctx, s.db, func(tx *Tx) (*sdnlb.Pool, error) { return findPoolByID(ctx, tx, id) },
		func(cfg *sdnlb.Config) (*sdnlb.Pool, error) { return recallByID(cfg.Pools, poolID, "pool", id) })
}

// FindPools returns a page of the pools the filter selects, by id.
func (s *PoolService) FindPools(ctx context.Context, filter sdnlb.PoolFilter) ([]*sdnlb.Pool, error) {
	return readOrRemember(ctx, s.db, func(tx *Tx) ([]*sdnlb.Pool, error) { return findPools(ctx, tx, filter) },
		func(cfg *sdnlb.Config) ([]*sdnlb.Pool, error) { return recallPools(cfg, filter), nil })
}

// CreatePool validates and stores p. On success p gets its id and
// timestamps; on failure it is left as it was.
func (s *PoolService) CreatePool(ctx context.Context, p *sdnlb.Pool) error {
	return createTx(ctx, s.db, p, createPool)
}

// UpdatePool applies upd to the pool with id.
func (s *PoolService) UpdatePool(ctx context.Context, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error) {
	return writeTx(ctx, s.db, func(tx *Tx) (*sdnlb.Pool, error) {
		if err := ifMatch(ctx, tx, id, findPoolByID, func(p *sdnlb.Pool) time.Time { return p.UpdatedAt }); err != nil {
			return nil, err
		}
		return updatePool(ctx, tx, id, upd)
	})
}

// DeletePool deletes the pool with id; see sdnlb.PoolService.
func (s *PoolService) DeletePool(ctx context.Context, id string, cascade bool) error {
	return execTx(ctx, s.db, func(tx *Tx) error {
		if err := ifMatch(ctx, tx, id, findPoolByID, func(p *sdnlb.Pool) time.Time { return p.UpdatedAt }); err != nil {
			return err
		}
		return deletePool(ctx, tx, id, cascade)
	})
}

// AssociateMonitor makes the monitor check the pool's members. Associating
// twice changes nothing and publishes nothing.
func (s *PoolService) AssociateMonitor(ctx context.Context, poolID, monitorID string) error {
	return execTx(ctx, s.db, func(tx *Tx) error { return associateMonitor(ctx, tx, poolID, monitorID) })
}

// DissociateMonitor stops the monitor checking the pool's members.
func (s *PoolService) DissociateMonitor(ctx context.Context, poolID, monitorID string) error {
	return execTx(ctx, s.db, func(tx *Tx) error {
		if err := checkAssociation(ctx, tx, poolID, monitorID); err != nil {
			return err
		}
		return dissociateMonitor(ctx, tx, poolID, monitorID)
	})
}

type poolRow struct {
	ID           string         `db:"id"`
	Name         string         `db:"name"`
	Description  string         `db:"description"`
	VIPID        sql.NullString `db:"vip_id"`
	LBMethod     string         `db:"lb_method"`
	Dispatch     string         `db:"dispatch"`
	Forwarding   string         `db:"forwarding"`
	Protocol     string         `db:"protocol"`
	AdminStateUp bool           `db:"admin_state_up"`
	SlowStart    float64        `db:"slow_start"`
	ClientPrefix int            `db:"client_ipv6_prefix"`
	HashKey      string         `db:"hash_key"`
	MonitorIDs   string         `db:"monitor_ids"` // a JSON array
	CreatedAt    string         `db:"created_at"`
	UpdatedAt    string         `db:"updated_at"`

	LBMethodUnset bool `db:"lb_method_unset"`
}

// selectPools reads the monitor ids as a JSON array, which survives any
// character a client-chosen id may hold.
const selectPools = `SELECT p.id, p.name, p.description, p.vip_id, p.lb_method, p.lb_method_unset, p.dispatch, p.forwarding, p.protocol,
	p.admin_state_up, p.slow_start, p.client_ipv6_prefix, p.hash_key, p.created_at, p.updated_at,
	(SELECT json_group_array(pm.monitor_id) FROM pool_monitors pm WHERE pm.pool_id = p.id) AS monitor_ids
FROM pools p`

func (r *poolRow) pool() (*sdnlb.Pool, error) {
	p := &sdnlb.Pool{
		ID:               r.ID,
		Name:             r.Name,
		Description:      r.Description,
		VIPID:            r.VIPID.String,
		LBMethod:         sdnlb.LBMethod(r.LBMethod),
		Dispatch:         sdnlb.Dispatch(r.Dispatch),
		Forwarding:       sdnlb.Forwarding(r.Forwarding),
		Protocol:         sdnlb.Protocol(r.Protocol),
		AdminStateUp:     r.AdminStateUp,
		SlowStart:        sdnlb.Seconds(r.SlowStart),
		ClientIPv6Prefix: r.ClientPrefix,
		HashKey:          sdnlb.HashKey(r.HashKey),

		LBMethodUnset: r.LBMethodUnset,
	}
	var err error
	if p.MonitorIDs, err = parseIDList(r.MonitorIDs); err != nil {
		return nil, err
	}
	if p.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if p.UpdatedAt, err = parseTime(r.UpdatedAt); err != nil {
		return nil, err
	}
	return p, nil
}

// parseIDList decodes a JSON array of ids, sorted and never nil.
func parseIDList(s string) ([]string, error) {
	ids := []string{}
	if err := json.Unmarshal([]byte(s), &ids); err != nil {
		return nil, fmt.Errorf("stored id list %q: %w", s, err)
	}
	if ids == nil {
		ids = []string{}
	}
	sort.Strings(ids)
	return ids, nil
}

func findPoolByID(ctx context.Context, tx *Tx, id string) (*sdnlb.Pool, error) {
	return getRow(ctx, tx, "pool", id, (*poolRow).pool, selectPools+` WHERE p.id = ?`, id)
}

func findPools(ctx context.Context, tx *Tx, filter sdnlb.PoolFilter) ([]*sdnlb.Pool, error) {
	return collect(eachPool(ctx, tx, filter))
}

// eachPool reads the pools the filter selects as they are ranged over.
func eachPool(ctx context.Context, tx *Tx, filter sdnlb.PoolFilter) iter.Seq2[*sdnlb.Pool, error] {
	var w where
	if filter.VIPID != nil {
		w.add("p.vip_id = ?", *filter.VIPID)
	}
	if filter.MonitorID != nil {
		w.add("EXISTS (SELECT 1 FROM pool_monitors pm WHERE pm.pool_id = p.id AND pm.monitor_id = ?)", *filter.MonitorID)
	}
	return queryRows(ctx, tx, "pools", (*poolRow).pool, selectPools+w.pageSQL("p.id", filter.Page), w.args...)
}

func createPool(ctx context.Context, tx *Tx, p sdnlb.Pool) (*sdnlb.Pool, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.ID != "" {
		if exists, err := rowExists(ctx, tx, `SELECT 1 FROM pools WHERE id = ?`, p.ID); err != nil {
			return nil, err
		} else if exists {
			return nil, sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "pool %q already exists", p.ID)
		}
	}
	p.ID = newID(p.ID)
	if err := checkPoolVIP(ctx, tx, &p, ""); err != nil {
		return nil, err
	}
	now := formatTime(tx.now)
	if _, err := tx.ExecContext(ctx, `INSERT INTO pools (id, name, description, vip_id, lb_method, lb_method_unset, dispatch,
		forwarding, protocol, admin_state_up, slow_start, client_ipv6_prefix, hash_key, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.Name, p.Description, nullIfEmpty(p.VIPID), p.LBMethod, p.LBMethodUnset, p.Dispatch, p.Forwarding, p.Protocol,
		p.AdminStateUp, float64(p.SlowStart), p.ClientIPv6Prefix, p.HashKey, now, now,
	); err != nil {
		return nil, mapError(fmt.Errorf("insert pool: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindPool, sdnlb.OpCreate, p.ID)
	return findPoolByID(ctx, tx, p.ID)
}

func updatePool(ctx context.Context, tx *Tx, id string, upd sdnlb.PoolUpdate) (*sdnlb.Pool, error) {
	p, err := findPoolByID(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	oldVIPID := p.VIPID
	upd.Apply(p)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := checkSwitchPoolSize(ctx, tx, p); err != nil {
		return nil, err
	}
	if err := checkPoolVIP(ctx, tx, p, oldVIPID); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE pools SET name = ?, description = ?, vip_id = ?, lb_method = ?,
		lb_method_unset = ?, dispatch = ?, forwarding = ?, protocol = ?, admin_state_up = ?, slow_start = ?,
		client_ipv6_prefix = ?, hash_key = ?, updated_at = ? WHERE id = ?`,
		p.Name, p.Description, nullIfEmpty(p.VIPID), p.LBMethod, p.LBMethodUnset, p.Dispatch, p.Forwarding, p.Protocol,
		p.AdminStateUp, float64(p.SlowStart), p.ClientIPv6Prefix, p.HashKey, formatTime(tx.now), id,
	); err != nil {
		return nil, mapError(fmt.Errorf("update pool: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindPool, sdnlb.OpUpdate, id)
	return findPoolByID(ctx, tx, id)
}

// deletePool deletes the pool and its monitor associations; with cascade
// its members first, without it refuses while it has any.
func deletePool(ctx context.Context, tx *Tx, id string, cascade bool) error {
	if _, err := findPoolByID(ctx, tx, id); err != nil {
		return err
	}
	var memberIDs []string
	if err := tx.SelectContext(ctx, &memberIDs, `SELECT id FROM members WHERE pool_id = ? ORDER BY id`, id); err != nil {
		return fmt.Errorf("find pool members: %w", err)
	}
	if len(memberIDs) > 0 {
		if !cascade {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "pool %q has %d members (%s): delete them first or delete with cascade",
				id, len(memberIDs), nameIDs(memberIDs))
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM members WHERE pool_id = ?`, id); err != nil {
			return fmt.Errorf("delete pool members: %w", err)
		}
		for _, memberID := range memberIDs {
			tx.emit(sdnlb.KindMember, sdnlb.OpDelete, memberID)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM pool_monitors WHERE pool_id = ?`, id); err != nil {
		return fmt.Errorf("delete pool monitors: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM pools WHERE id = ?`, id); err != nil {
		return mapError(fmt.Errorf("delete pool: %w", err), sdnlb.ECONFLICT)
	}
	tx.emit(sdnlb.KindPool, sdnlb.OpDelete, id)
	return nil
}

// checkPoolVIP checks the VIP p serves: it must exist, have no other pool
// and share p's protocol, and when p is DSR its members must use the VIP's
// port. Linking it anew (from oldVIPID), the members must share its
// address family.
func checkPoolVIP(ctx context.Context, tx *Tx, p *sdnlb.Pool, oldVIPID string) error {
	if p.VIPID == "" {
		return nil
	}
	v, err := findVIPByID(ctx, tx, p.VIPID)
	if sdnlb.ErrorCode(err) == sdnlb.ENOTFOUND {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "vip_id", "vip %q not found", p.VIPID)
	} else if err != nil {
		return err
	}
	if v.PoolID != "" && v.PoolID != p.ID {
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "vip_id", "vip %s is already served by pool %s", v.ID, v.PoolID)
	}
	if v.Protocol != p.Protocol {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "protocol", "pool protocol %s must match the protocol of vip %s (%s)", p.Protocol, v.ID, v.Protocol)
	}
	if setting := v.NeedsController(p); setting != "" && p.Dispatch == sdnlb.DispatchSwitch {
		if p.DispatchAsked {
			return sdnlb.FieldErrorf(sdnlb.EINVALID, "dispatch",
				"dispatch %s cannot keep the %s of vip %s, which only the controller's per-connection decision keeps: use dispatch %s",
				sdnlb.DispatchSwitch, setting, v.ID, sdnlb.DispatchController)
		}
		p.Dispatch = sdnlb.DispatchController
	}
	if m, err := findMemberOffPort(ctx, tx, p.ID, p.Forwarding, v); err != nil {
		return err
	} else if m != nil {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "forwarding",
			"DSR cannot rewrite ports, and member %s of pool %s uses port %d while vip %s serves %s port %d: set the member's port to %s first, or keep NAT",
			m.id, p.ID, m.port, v.ID, v.Protocol, v.Port, dsrMemberPorts(v.Protocol, v.Port))
	}
	if p.VIPID != oldVIPID {
		return checkMembersFamily(ctx, tx, p.ID, v, "vip_id")
	}
	return nil
}

// checkMembersFamily refuses to have the pool serve v while one of its
// members has an address of the other family; field is what the write
// changes.
func checkMembersFamily(ctx context.Context, tx *Tx, poolID string, v *sdnlb.VIP, field string) error {
	otherFamily := `address LIKE '%:%'` // addresses are canonical: only IPv6 has a colon
	if sdnlb.IsIPv6(v.Address) {
		otherFamily = `address NOT LIKE '%:%'`
	}
	var m struct {
		ID      string `db:"id"`
		Address string `db:"address"`
	}
	err := tx.GetContext(ctx, &m, `SELECT id, address FROM members WHERE pool_id = ? AND `+otherFamily+` ORDER BY id LIMIT 1`, poolID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("check member address family: %w", err)
	}
	return sdnlb.FieldErrorf(sdnlb.EINVALID, field, "member %s of pool %s is %s (%s); vip %s (%s) is %s: a pool's members share its VIP's address family",
		m.ID, poolID, sdnlb.Family(m.Address), m.Address, v.ID, v.Address, sdnlb.Family(v.Address))
}

// selectMemberOffPort finds a member of a pool on an explicit port other
// than the VIP's; its arguments are pool, port, pool, port.
const selectMemberOffPort = `SELECT id, port FROM members WHERE pool_id = ? AND port <> 0 AND port < ?
	UNION ALL SELECT id, port FROM members WHERE pool_id = ? AND port <> 0 AND port > ? LIMIT 1`

// dsrMemberPorts says which ports the members of a DSR pool may use to
// serve a VIP of proto on vipPort.
func dsrMemberPorts(proto sdnlb.Protocol, vipPort int) string {
	if proto.HasPorts() {
		return fmt.Sprintf("0 (the vip's) or %d", vipPort)
	}
	return "0 (the port each client asks for)"
}

// memberPort is a member's id and port.
type memberPort struct {
	id   string
	port int
}

// findMemberOffPort returns a member of the pool that a pool forwarding
// with f cannot use for v because of its port (see
// sdnlb.Forwarding.AllowsMemberPort); nil when there is none. The two
// ranges, below and above the VIP's port, are two probes of the partial
// index members_pool_port, whose condition port <> 0 each repeats.
func findMemberOffPort(ctx context.Context, tx *Tx, poolID string, f sdnlb.Forwarding, v *sdnlb.VIP) (*memberPort, error) {
	if !f.PinsMemberPort(v.Protocol) {
		return nil, nil
	}
	port := v.Port
	if !v.Protocol.HasPorts() {
		port = 0 // an ANY VIP ignores its port: every member port but 0 is off
	}
	var m memberPort
	err := tx.QueryRowxContext(ctx, selectMemberOffPort, poolID, port, poolID, port).Scan(&m.id, &m.port)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("find member off the vip's port: %w", err)
	}
	return &m, nil
}

// setPoolVIP points the pool at vipID ("" for none).
func setPoolVIP(ctx context.Context, tx *Tx, poolID, vipID string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE pools SET vip_id = ?, updated_at = ? WHERE id = ?`,
		nullIfEmpty(vipID), formatTime(tx.now), poolID); err != nil {
		return mapError(fmt.Errorf("link pool: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindPool, sdnlb.OpUpdate, poolID)
	return nil
}

// checkSwitchPoolSize keeps a pool with more members than the switch has
// slots off SWITCH dispatch: refused when the write asks for it, else the
// pool stays with the controller.
func checkSwitchPoolSize(ctx context.Context, tx *Tx, p *sdnlb.Pool) error {
	if p.Dispatch != sdnlb.DispatchSwitch {
		return nil
	}
	n, err := countMembers(ctx, tx, p.ID)
	if err != nil || n <= sdnlb.SwitchSlots {
		return err
	}
	if !p.DispatchAsked {
		p.Dispatch = sdnlb.DispatchController
		return nil
	}
	return sdnlb.FieldErrorf(sdnlb.EINVALID, "dispatch",
		"dispatch %s spreads connections over %d slots, one member each at least, and pool %s has %d members: keep dispatch %s",
		sdnlb.DispatchSwitch, sdnlb.SwitchSlots, p.ID, n, sdnlb.DispatchController)
}

// dispatchByController moves pool p, which serves v, to CONTROLLER
// dispatch when v needs it and the switch dispatches the pool: a VIP write
// names no pool's dispatch, as a pool write that names none takes the one
// its method needs.
func dispatchByController(ctx context.Context, tx *Tx, p *sdnlb.Pool, v *sdnlb.VIP) error {
	if v.NeedsController(p) == "" {
		return nil
	}
	id := p.ID
	res, err := tx.ExecContext(ctx, `UPDATE pools SET dispatch = ?, updated_at = ? WHERE id = ? AND dispatch = ?`,
		sdnlb.DispatchController, formatTime(tx.now), id, sdnlb.DispatchSwitch)
	if err != nil {
		return fmt.Errorf("pool dispatch: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("pool dispatch: %w", err)
	} else if n > 0 {
		tx.emit(sdnlb.KindPool, sdnlb.OpUpdate, id)
	}
	return nil
}

// touchPool records that the pool's monitors changed.
func touchPool(ctx context.Context, tx *Tx, poolID string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE pools SET updated_at = ? WHERE id = ?`, formatTime(tx.now), poolID); err != nil {
		return fmt.Errorf("touch pool: %w", err)
	}
	tx.emit(sdnlb.KindPool, sdnlb.OpUpdate, poolID)
	return nil
}

// checkAssociation checks that both ends of an association exist.
func checkAssociation(ctx context.Context, tx *Tx, poolID, monitorID string) error {
	if exists, err := rowExists(ctx, tx, `SELECT 1 FROM pools WHERE id = ?`, poolID); err != nil {
		return err
	} else if !exists {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "pool %q not found", poolID)
	}
	if exists, err := rowExists(ctx, tx, `SELECT 1 FROM monitors WHERE id = ?`, monitorID); err != nil {
		return err
	} else if !exists {
		return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "monitor_id", "monitor %q not found", monitorID)
	}
	return nil
}

func associateMonitor(ctx context.Context, tx *Tx, poolID, monitorID string) error {
	if err := checkAssociation(ctx, tx, poolID, monitorID); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO pool_monitors (pool_id, monitor_id) VALUES (?, ?) ON CONFLICT DO NOTHING`, poolID, monitorID)
	if err != nil {
		return mapError(fmt.Errorf("associate monitor: %w", err), sdnlb.ENOTFOUND)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("associate monitor: %w", err)
	} else if n == 0 {
		return nil // already associated: nothing changed, nothing to publish
	}
	return touchPool(ctx, tx, poolID)
}

func dissociateMonitor(ctx context.Context, tx *Tx, poolID, monitorID string) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM pool_monitors WHERE pool_id = ? AND monitor_id = ?`, poolID, monitorID)
	if err != nil {
		return fmt.Errorf("dissociate monitor: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("dissociate monitor: %w", err)
	} else if n == 0 {
		return sdnlb.Errorf(sdnlb.ENOTFOUND, "monitor %q is not associated with pool %q", monitorID, poolID)
	}
	return touchPool(ctx, tx, poolID)
}
