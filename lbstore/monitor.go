package lbstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"time"

	"github.com/sdnlb/sdnlb"
)

// MonitorService stores health monitors.
type MonitorService struct {
	db *DB
}

var _ sdnlb.MonitorService = (*MonitorService)(nil)

// NewMonitorService returns the monitor service of db.
func NewMonitorService(db *DB) *MonitorService { return &MonitorService{db: db} }

// FindMonitorByID returns the monitor with id, ENOTFOUND if there is none.
func (s *MonitorService) FindMonitorByID(ctx context.Context, id string) (*sdnlb.Monitor, error) {
	return readOrRemember(ctx, s.db, func(tx *Tx) (*sdnlb.Monitor, error) { return findMonitorByID(ctx, tx, id) },
		func(cfg *sdnlb.Config) (*sdnlb.Monitor, error) {
			return recallByID(cfg.Monitors, monitorID, "monitor", id)
		})
}

// FindMonitors returns a page of the monitors the filter selects, by id.
func (s *MonitorService) FindMonitors(ctx context.Context, filter sdnlb.MonitorFilter) ([]*sdnlb.Monitor, error) {
	return readOrRemember(ctx, s.db, func(tx *Tx) ([]*sdnlb.Monitor, error) { return findMonitors(ctx, tx, filter) },
		func(cfg *sdnlb.Config) ([]*sdnlb.Monitor, error) { return recallMonitors(cfg, filter), nil })
}

// CreateMonitor validates and stores m. On success m gets its id and
// timestamps; on failure it is left as it was.
func (s *MonitorService) CreateMonitor(ctx context.Context, m *sdnlb.Monitor) error {
	return createTx(ctx, s.db, m, createMonitor)
}

// UpdateMonitor applies upd to the monitor with id.
func (s *MonitorService) UpdateMonitor(ctx context.Context, id string, upd sdnlb.MonitorUpdate) (*sdnlb.Monitor, error) {
	return writeTx(ctx, s.db, func(tx *Tx) (*sdnlb.Monitor, error) {
		m, err := findMonitorByID(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if err := sdnlb.CheckIfMatch(ctx, m.UpdatedAt); err != nil {
			return nil, err
		}
		upd.Apply(m)
		if err := updateMonitor(ctx, tx, m); err != nil {
			return nil, err
		}
		return findMonitorByID(ctx, tx, id)
	})
}

// UpdateAllMonitors applies upd to every monitor in one transaction and
// returns how many it changed; monitors it leaves as they were are not
// written and publish nothing. If any result is invalid, nothing changes.
func (s *MonitorService) UpdateAllMonitors(ctx context.Context, upd sdnlb.MonitorUpdate) (int, error) {
	return writeTx(ctx, s.db, func(tx *Tx) (int, error) { return updateAllMonitors(ctx, tx, upd) })
}

func updateAllMonitors(ctx context.Context, tx *Tx, upd sdnlb.MonitorUpdate) (int, error) {
	monitors, err := findMonitors(ctx, tx, sdnlb.MonitorFilter{})
	if err != nil {
		return 0, err
	}
	changed := 0
	for _, m := range monitors {
		before := *m
		upd.Apply(m)
		if reflect.DeepEqual(before, *m) {
			continue
		}
		if err := updateMonitor(ctx, tx, m); err != nil {
			var e *sdnlb.Error
			if errors.As(err, &e) {
				return 0, sdnlb.FieldErrorf(e.Code, e.Field, "monitor %s: %s", m.ID, e.Message)
			}
			return 0, err
		}
		changed++
	}
	return changed, nil
}

// DeleteMonitor deletes the monitor with id; see sdnlb.MonitorService.
func (s *MonitorService) DeleteMonitor(ctx context.Context, id string, cascade bool) error {
	return execTx(ctx, s.db, func(tx *Tx) error {
		if err := ifMatch(ctx, tx, id, findMonitorByID, func(m *sdnlb.Monitor) time.Time { return m.UpdatedAt }); err != nil {
			return err
		}
		return deleteMonitor(ctx, tx, id, cascade)
	})
}

type monitorRow struct {
	ID            string  `db:"id"`
	Name          string  `db:"name"`
	Type          string  `db:"type"`
	Delay         float64 `db:"delay"`
	Timeout       float64 `db:"timeout"`
	MaxRetries    int     `db:"max_retries"`
	Rise          int     `db:"rise"`
	HTTPMethod    string  `db:"http_method"`
	URLPath       string  `db:"url_path"`
	ExpectedCodes string  `db:"expected_codes"`
	TLSVerify     bool    `db:"tls_verify"`
	Port          int     `db:"port"`
	AdminStateUp  bool    `db:"admin_state_up"`
	PoolIDs       string  `db:"pool_ids"` // a JSON array
	CreatedAt     string  `db:"created_at"`
	UpdatedAt     string  `db:"updated_at"`
}

const selectMonitors = `SELECT mo.id, mo.name, mo.type, mo.delay, mo.timeout, mo.max_retries, mo.rise,
	mo.http_method, mo.url_path, mo.expected_codes, mo.tls_verify, mo.port, mo.admin_state_up, mo.created_at, mo.updated_at,
	(SELECT json_group_array(pm.pool_id) FROM pool_monitors pm WHERE pm.monitor_id = mo.id) AS pool_ids
FROM monitors mo`

func (r *monitorRow) monitor() (*sdnlb.Monitor, error) {
	m := &sdnlb.Monitor{
		ID:            r.ID,
		Name:          r.Name,
		Type:          sdnlb.MonitorType(r.Type),
		Delay:         sdnlb.Seconds(r.Delay),
		Timeout:       sdnlb.Seconds(r.Timeout),
		MaxRetries:    r.MaxRetries,
		Rise:          r.Rise,
		HTTPMethod:    r.HTTPMethod,
		URLPath:       r.URLPath,
		ExpectedCodes: r.ExpectedCodes,
		TLSVerify:     r.TLSVerify,
		Port:          r.Port,
		AdminStateUp:  r.AdminStateUp,
	}
	var err error
	if m.PoolIDs, err = parseIDList(r.PoolIDs); err != nil {
		return nil, err
	}
	if m.CreatedAt, err = parseTime(r.CreatedAt); err != nil {
		return nil, err
	}
	if m.UpdatedAt, err = parseTime(r.UpdatedAt); err != nil {
		return nil, err
	}
	return m, nil
}

func findMonitorByID(ctx context.Context, tx *Tx, id string) (*sdnlb.Monitor, error) {
	return getRow(ctx, tx, "monitor", id, (*monitorRow).monitor, selectMonitors+` WHERE mo.id = ?`, id)
}

func findMonitors(ctx context.Context, tx *Tx, filter sdnlb.MonitorFilter) ([]*sdnlb.Monitor, error) {
	return collect(eachMonitor(ctx, tx, filter))
}

// eachMonitor reads the monitors the filter selects as they are ranged over.
func eachMonitor(ctx context.Context, tx *Tx, filter sdnlb.MonitorFilter) iter.Seq2[*sdnlb.Monitor, error] {
	var w where
	if filter.PoolID != nil {
		w.add("EXISTS (SELECT 1 FROM pool_monitors pm WHERE pm.monitor_id = mo.id AND pm.pool_id = ?)", *filter.PoolID)
	}
	return queryRows(ctx, tx, "monitors", (*monitorRow).monitor, selectMonitors+w.pageSQL("mo.id", filter.Page), w.args...)
}

func createMonitor(ctx context.Context, tx *Tx, m sdnlb.Monitor) (*sdnlb.Monitor, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if m.ID != "" {
		if exists, err := rowExists(ctx, tx, `SELECT 1 FROM monitors WHERE id = ?`, m.ID); err != nil {
			return nil, err
		} else if exists {
			return nil, sdnlb.FieldErrorf(sdnlb.ECONFLICT, "id", "monitor %q already exists", m.ID)
		}
	}
	m.ID = newID(m.ID)
	now := formatTime(tx.now)
	if _, err := tx.ExecContext(ctx, `INSERT INTO monitors (id, name, type, delay, timeout, max_retries, rise,
		http_method, url_path, expected_codes, tls_verify, port, admin_state_up, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.ID, m.Name, m.Type, float64(m.Delay), float64(m.Timeout), m.MaxRetries, m.Rise,
		m.HTTPMethod, m.URLPath, m.ExpectedCodes, m.TLSVerify, m.Port, m.AdminStateUp, now, now,
	); err != nil {
		return nil, mapError(fmt.Errorf("insert monitor: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindMonitor, sdnlb.OpCreate, m.ID)
	return findMonitorByID(ctx, tx, m.ID)
}

// updateMonitor validates and writes m, whose update is already applied.
func updateMonitor(ctx context.Context, tx *Tx, m *sdnlb.Monitor) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE monitors SET name = ?, type = ?, delay = ?, timeout = ?,
		max_retries = ?, rise = ?, http_method = ?, url_path = ?, expected_codes = ?, tls_verify = ?, port = ?,
		admin_state_up = ?, updated_at = ? WHERE id = ?`,
		m.Name, m.Type, float64(m.Delay), float64(m.Timeout), m.MaxRetries, m.Rise, m.HTTPMethod, m.URLPath,
		m.ExpectedCodes, m.TLSVerify, m.Port, m.AdminStateUp, formatTime(tx.now), m.ID,
	); err != nil {
		return mapError(fmt.Errorf("update monitor: %w", err), sdnlb.ENOTFOUND)
	}
	tx.emit(sdnlb.KindMonitor, sdnlb.OpUpdate, m.ID)
	return nil
}

// deleteMonitor deletes the monitor; with cascade it first dissociates it
// from its pools, without it refuses while any pool uses it.
func deleteMonitor(ctx context.Context, tx *Tx, id string, cascade bool) error {
	m, err := findMonitorByID(ctx, tx, id)
	if err != nil {
		return err
	}
	if len(m.PoolIDs) > 0 && !cascade {
		return sdnlb.Errorf(sdnlb.ECONFLICT, "monitor %q is used by pools %s: dissociate it first or delete with cascade",
			id, nameIDs(m.PoolIDs))
	}
	for _, poolID := range m.PoolIDs {
		if err := dissociateMonitor(ctx, tx, poolID, id); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM monitors WHERE id = ?`, id); err != nil {
		return mapError(fmt.Errorf("delete monitor: %w", err), sdnlb.ECONFLICT)
	}
	tx.emit(sdnlb.KindMonitor, sdnlb.OpDelete, id)
	return nil
}
