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

// VIPService stores VIPs.
type VIPService struct {
	db *DB
}

var _ sdnlb.VIPService = (*VIPService)(nil)

// NewVIPService returns the VIP service of db.
func NewVIPService(db *DB) *VIPService { return &VIPService{db: db} }

// FindVIPByID returns the VIP with id, ENOTFOUND if there is none.
func (s *VIPService) FindVIPByID(ctx context.Context, id string) (*sdnlb.VIP, error) {
	return readOrRemember(ctx, s.db, func(tx *Tx) (*sdnlb.VIP, error) { return findVIPByID(ctx, tx, id) },
		func(cfg *sdnlb.Config) (*sdnlb.VIP, error) { return recallByID(cfg.VIPs, vipID, "vip", id) })
}

// FindVIPs returns a page of the VIPs the filter selects, by id.
func (s *VIPService) FindVIPs(ctx context.Context, filter sdnlb.VIPFilter) ([]*sdnlb.VIP, error) {
	return readOrRemember(ctx, s.db, func(tx *Tx) ([]*sdnlb.VIP, error) { return findVIPs(ctx, tx, filter) },
		func(cfg *sdnlb.Config) ([]*sdnlb.VIP, error) { return recallVIPs(cfg, filter), nil })
}

// CreateVIP validates and stores v and links the pool it names. On
// success v gets its id, MAC, derived fields and timestamps; on failure it
// is left as it was.
func (s *VIPService) CreateVIP(ctx context.Context, v *sdnlb.VIP) error {
	return createTx(ctx, s.db, v, createVIP)
}

// UpdateVIP applies upd to the VIP with id, relinking pools when PoolID
// changes.
func (s *VIPService) UpdateVIP(ctx context.Context, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
	return writeTx(ctx, s.db, func(tx *Tx) (*sdnlb.VIP, error) {
		if err := ifMatch(ctx, tx, id, findVIPByID, func(v *sdnlb.VIP) time.Time { return v.UpdatedAt }); err != nil {
			return nil, err
		}
		return updateVIP(ctx, tx, id, upd)
	})
}

// DeleteVIP deletes the VIP with id; see sdnlb.VIPService.
func (s *VIPService) DeleteVIP(ctx context.Context, id string, cascade bool) error {
	return execTx(ctx, s.db, func(tx *Tx) error {
		if err := ifMatch(ctx, tx, id, findVIPByID, func(v *sdnlb.VIP) time.Time { return v.UpdatedAt }); err != nil {
			return err
		}
		return deleteVIP(ctx, tx, id, cascade)
	})
}

// vipRow is a VIP as the select below reads it, with what the status is
// derived from.
type vipRow struct {
	ID                 string         `db:"id"`
	Name               string         `db:"name"`
	Description        string         `db:"description"`
	Address            string         `db:"address"`
	Protocol           string         `db:"protocol"`
	Port               int            `db:"port"`
	ConnectionLimit    int            `db:"connection_limit"`
	PersistenceType    sql.NullString `db:"persistence_type"`
	PersistenceTimeout int            `db:"persistence_timeout"`
	AdminStateUp       bool           `db:"admin_state_up"`
	Announce           bool           `db:"announce"`
	MAC                string         `db:"mac"`
	CreatedAt          string         `db:"created_at"`
	UpdatedAt          string         `db:"updated_at"`
	PoolID             string         `db:"pool_id"`
	PoolAdminStateUp   sql.NullBool   `db:"pool_admin_state_up"`
	PoolInRotation     bool           `db:"pool_in_rotation"`
	Num                uint32         `db:"num"`
}

// selectVIPs joins the pool that serves each VIP and asks whether one of
// its members is in rotation (the same rule as Member.InRotation, its
// agent's drain included). The
// condition matches the partial index members_in_rotation word for word,
// so the answer is one index probe however many members are down.
const selectVIPs = `SELECT v.id, v.name, v.description, v.address, v.protocol, v.port,
	v.connection_limit, v.persistence_type, v.persistence_timeout, v.admin_state_up, v.announce,
	v.mac, v.created_at, v.updated_at, v.num,
	COALESCE(p.id, '') AS pool_id,
	p.admin_state_up AS pool_admin_state_up,
	EXISTS (SELECT 1 FROM members m WHERE m.pool_id = p.id
		AND m.admin_state_up AND m.weight > 0 AND NOT m.health_agent_drain AND m.health_status IN ('UP', 'NO_MONITOR')) AS pool_in_rotation
FROM vips v LEFT JOIN pools p ON p.vip_id = v.id`

func (r *vipRow) vip() (*sdnlb.VIP, error) {
	v := &sdnlb.VIP{
		ID:              r.ID,
		Name:            r.Name,
		Description:     r.Description,
		Address:         r.Address,
		Protocol:        sdnlb.Protocol(r.Protocol),
		Port:            r.Port,
		PoolID:          r.PoolID,
		ConnectionLimit: r.ConnectionLimit,
		AdminStateUp:    r.AdminStateUp,
		Announce:        r.Announce,
		MAC:             r.MAC,
		Num:             r.Num,
	}
	if r.PersistenceType.Valid {
		v.SessionPersistence = &sdnlb.SessionPersistence{Type: r.PersistenceType.String, Timeout: r.PersistenceTimeout}
	}
	switch {
	case !r.AdminStateUp:
		v.Status = sdnlb.VIPDisabled
	case r.PoolAdminStateUp.Bool && r.PoolInRotation:
		v.Status = sdnlb.VIPActive
	default:
		v.Status = sdnlb.VIPDown
	}
	var err error
	if v.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if v.UpdatedAt, err = parseTime(r.UpdatedAt); err != nil {
		return nil, err
	}
	return v, nil
}

func findVIPByID(ctx context.Context, tx *Tx, id string) (*sdnlb.VIP, error) {
	return getRow(ctx, tx, "vip", id, (*vipRow).vip, selectVIPs+` WHERE v.id = ?`, id)
}

func findVIPs(ctx context.Context, tx *Tx, filter sdnlb.VIPFilter) ([]*sdnlb.VIP, error) {
	return collect(eachVIP(ctx, tx, filter))
}

// eachVIP reads the VIPs the filter selects as they are ranged over.
func eachVIP(ctx context.Context, tx *Tx, filter sdnlb.VIPFilter) iter.Seq2[*sdnlb.VIP, error] {
	var w where
	if filter.Address != nil {
		w.add("v.address = ?", *filter.Address)
	}
	if filter.PoolID != nil {
		w.add("p.id = ?", *filter.PoolID)
	}
	return queryRows(ctx, tx, "vips", (*vipRow).vip, selectVIPs+w.pageSQL("v.id", filter.Page), w.args...)
}

func createVIP(ctx context.Context, tx *Tx, v sdnlb.VIP) (*sdnlb.VIP, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	if v.ID != "" {
		if exists, err := rowExists(ctx, tx, `SELECT 1 FROM vips WHERE id = ?`, v.ID); err != nil {
			return nil, err
		} else if exists {
			return nil, sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "vip %q already exists", v.ID)
		}
	}
	v.ID = newID(v.ID)
	if err := checkVIPListener(ctx, tx, &v); err != nil {
		return nil, err
	}
	if err := checkVIPNotOnMember(ctx, tx, &v); err != nil {
		return nil, err
	}
	num, err := nextNum(ctx, tx, numVIP)
	if err != nil {
		return nil, err
	}
	persistenceType, persistenceTimeout := persistenceColumns(v.SessionPersistence)
	now := formatTime(tx.now)
	if _, err := tx.ExecContext(ctx, `INSERT INTO vips (id, name, description, address, protocol, port,
		connection_limit, persistence_type, persistence_timeout, admin_state_up, announce, mac, created_at, updated_at, num)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ID, v.Name, v.Description, v.Address, v.Protocol, v.Port, v.ConnectionLimit,
		persistenceType, persistenceTimeout, v.AdminStateUp, v.Announce, sdnlb.VIPMAC(v.ID), now, now, num,
	); err != nil {
		return nil, mapError(fmt.Errorf("insert vip: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindVIP, sdnlb.OpCreate, v.ID)
	if err := linkVIPPool(ctx, tx, &v, "", ""); err != nil {
		return nil, err
	}
	return findVIPByID(ctx, tx, v.ID)
}

func updateVIP(ctx context.Context, tx *Tx, id string, upd sdnlb.VIPUpdate) (*sdnlb.VIP, error) {
	v, err := findVIPByID(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	oldPoolID, oldAddress := v.PoolID, v.Address
	upd.Apply(v)
	if err := v.Validate(); err != nil {
		return nil, err
	}
	if err := checkVIPListener(ctx, tx, v); err != nil {
		return nil, err
	}
	if v.Address != oldAddress {
		if err := checkVIPNotOnMember(ctx, tx, v); err != nil {
			return nil, err
		}
	}
	persistenceType, persistenceTimeout := persistenceColumns(v.SessionPersistence)
	if _, err := tx.ExecContext(ctx, `UPDATE vips SET name = ?, description = ?, address = ?, protocol = ?,
		port = ?, connection_limit = ?, persistence_type = ?, persistence_timeout = ?, admin_state_up = ?,
		announce = ?, updated_at = ? WHERE id = ?`,
		v.Name, v.Description, v.Address, v.Protocol, v.Port, v.ConnectionLimit,
		persistenceType, persistenceTimeout, v.AdminStateUp, v.Announce, formatTime(tx.now), id,
	); err != nil {
		return nil, mapError(fmt.Errorf("update vip: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindVIP, sdnlb.OpUpdate, id)
	if err := linkVIPPool(ctx, tx, v, oldPoolID, oldAddress); err != nil {
		return nil, err
	}
	return findVIPByID(ctx, tx, id)
}

func deleteVIP(ctx context.Context, tx *Tx, id string, cascade bool) error {
	v, err := findVIPByID(ctx, tx, id)
	if err != nil {
		return err
	}
	if v.PoolID != "" {
		if !cascade {
			return sdnlb.Errorf(sdnlb.ECONFLICT, "vip %q is served by pool %s: delete the pool first or delete with cascade", id, v.PoolID)
		}
		if err := deletePool(ctx, tx, v.PoolID, true); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM vips WHERE id = ?`, id); err != nil {
		return mapError(fmt.Errorf("delete vip: %w", err), sdnlb.ECONFLICT)
	}
	tx.emit(sdnlb.KindVIP, sdnlb.OpDelete, id)
	return nil
}

// checkVIPListener refuses v when another VIP already listens on its
// address, protocol and port (any port, for ICMP), or when either is an
// ANY VIP, which takes the whole address.
func checkVIPListener(ctx context.Context, tx *Tx, v *sdnlb.VIP) error {
	var other struct {
		ID       string `db:"id"`
		Protocol string `db:"protocol"`
	}
	err := tx.GetContext(ctx, &other, `SELECT id, protocol FROM vips WHERE address = ? AND id <> ?
		AND (protocol = 'ANY' OR ? = 'ANY' OR protocol = ? AND (protocol = 'ICMP' OR port = ?)) LIMIT 1`,
		v.Address, v.ID, v.Protocol, v.Protocol, v.Port)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("check vip listener: %w", err)
	}
	switch {
	case v.Protocol == sdnlb.ProtocolAny || other.Protocol == string(sdnlb.ProtocolAny):
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address",
			"vip %s (%s) already uses %s, and a vip of protocol %s is alone on its address", other.ID, other.Protocol, v.Address, sdnlb.ProtocolAny)
	case v.Protocol.HasPorts():
		return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "vip %s already listens on %s %s", other.ID, v.Protocol, sdnlb.HostPort(v.Address, v.Port))
	}
	return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address", "vip %s already answers %s on %s", other.ID, v.Protocol, v.Address)
}

// checkVIPNotOnMember refuses v's address when a member of any pool has
// it: the switch would answer ARP for the address with the VIP's MAC and
// take the member's traffic.
func checkVIPNotOnMember(ctx context.Context, tx *Tx, v *sdnlb.VIP) error {
	var m struct {
		ID     string `db:"id"`
		PoolID string `db:"pool_id"`
	}
	err := tx.GetContext(ctx, &m, `SELECT id, pool_id FROM members WHERE address = ? ORDER BY id LIMIT 1`, v.Address)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return fmt.Errorf("check vip address: %w", err)
	}
	return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "address",
		"%s is the address of member %s of pool %s: a vip there would take the member's traffic", v.Address, m.ID, m.PoolID)
}

// linkVIPPool makes v.PoolID the pool that serves v, releasing oldPoolID.
// The pool must exist, serve no other VIP and share v's protocol, and when
// it is DSR its members must use v's port; the last two are checked even
// when the link stays, since v's protocol or port may have changed. Its
// members must share v's address family, checked when the link is new or
// v's address (oldAddress before) changes family.
func linkVIPPool(ctx context.Context, tx *Tx, v *sdnlb.VIP, oldPoolID, oldAddress string) error {
	if v.PoolID != "" {
		p, err := findPoolByID(ctx, tx, v.PoolID)
		if sdnlb.ErrorCode(err) == sdnlb.ENOTFOUND {
			return sdnlb.FieldErrorf(sdnlb.ENOTFOUND, "pool_id", "pool %q not found", v.PoolID)
		} else if err != nil {
			return err
		}
		if p.VIPID != "" && p.VIPID != v.ID {
			return sdnlb.FieldErrorf(sdnlb.ECONFLICT, "pool_id", "pool %s already serves vip %s", p.ID, p.VIPID)
		}
		if p.Protocol != v.Protocol {
			return sdnlb.FieldErrorf(sdnlb.EINVALID, "protocol", "pool %s is %s but the vip is %s", p.ID, p.Protocol, v.Protocol)
		}
		if err := checkVIPMemberPorts(ctx, tx, v, p, oldPoolID); err != nil {
			return err
		}
		switch {
		case v.PoolID != oldPoolID:
			err = checkMembersFamily(ctx, tx, p.ID, v, "pool_id")
		case sdnlb.IsIPv6(v.Address) != sdnlb.IsIPv6(oldAddress):
			err = checkMembersFamily(ctx, tx, p.ID, v, "address")
		}
		if err != nil {
			return err
		}
		if err := dispatchByController(ctx, tx, p, v); err != nil {
			return err
		}
	}
	if v.PoolID == oldPoolID {
		return nil
	}
	if oldPoolID != "" {
		if err := setPoolVIP(ctx, tx, oldPoolID, ""); err != nil {
			return err
		}
	}
	if v.PoolID != "" {
		if err := setPoolVIP(ctx, tx, v.PoolID, v.ID); err != nil {
			return err
		}
	}
	return nil
}

// checkVIPMemberPorts refuses v when pool p, which is to serve it, forwards
// with DSR and has a member on a port other than 0 and v's. The field at
// fault is pool_id when the write links p, else port.
func checkVIPMemberPorts(ctx context.Context, tx *Tx, v *sdnlb.VIP, p *sdnlb.Pool, oldPoolID string) error {
	m, err := findMemberOffPort(ctx, tx, p.ID, p.Forwarding, v)
	if err != nil || m == nil {
		return err
	}
	if v.PoolID != oldPoolID {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "pool_id",
			"pool %s forwards with DSR, which cannot rewrite ports, and its member %s uses port %d: to serve %s port %d its port must be %s",
			p.ID, m.id, m.port, v.Protocol, v.Port, dsrMemberPorts(v.Protocol, v.Port))
	}
	return sdnlb.FieldErrorf(sdnlb.EINVALID, "port",
		"pool %s forwards with DSR, which cannot rewrite ports, and its member %s uses port %d: the vip cannot serve %s port %d unless the member's port is %s",
		p.ID, m.id, m.port, v.Protocol, v.Port, dsrMemberPorts(v.Protocol, v.Port))
}

func persistenceColumns(sp *sdnlb.SessionPersistence) (any, int) {
	if sp == nil {
		return nil, 0
	}
	return sp.Type, sp.Timeout
}

// rowExists reports whether query returns a row.
func rowExists(ctx context.Context, tx *Tx, query string, args ...any) (bool, error) {
	var one int
	err := tx.GetContext(ctx, &one, query, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("exists: %w", err)
	}
	return true, nil
}
