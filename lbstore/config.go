package lbstore

import (
	"context"
	"fmt"

	"github.com/sdnlb/sdnlb"
)

// ConfigService reads and clears the configuration as a whole.
type ConfigService struct {
	db *DB
}

var _ sdnlb.ConfigService = (*ConfigService)(nil)

// NewConfigService returns the config service of db.
func NewConfigService(db *DB) *ConfigService { return &ConfigService{db: db} }

// LoadConfig reads everything in one read transaction. Its Seq is the Seq
// of the last event the snapshot holds: the read holds every write with
// Seq <= Config.Seq and none after it. So a consumer that first subscribes
// and then loads misses nothing: what the load does not hold, the
// subscription delivers (a few events may be seen twice). The Config is
// also what reads answer from while the database is unavailable, so
// callers must not modify it.
func (s *ConfigService) LoadConfig(ctx context.Context) (*sdnlb.Config, error) {
	cfg, err := loadConfig(ctx, s.db)
	if err != nil {
		return nil, unavailable(ctx, err)
	}
	s.db.remember(cfg)
	return cfg, nil
}

func loadConfig(ctx context.Context, db *DB) (*sdnlb.Config, error) {
	tx, seq, err := db.feed.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	cfg, err := readConfig(ctx, tx)
	if err != nil {
		return nil, err
	}
	cfg.Seq = seq
	return cfg, nil
}

// ExportConfig reads everything in one read transaction, which never
// waits for writers nor makes them wait, and hands it to export as a
// stream; see sdnlb.ConfigService. The ETag comes first, from a pass over
// the objects' ids and timestamps alone.
func (s *ConfigService) ExportConfig(ctx context.Context, export func(*sdnlb.ConfigStream) error) error {
	tx, err := s.db.beginRead(ctx)
	if err != nil {
		return unavailable(ctx, err)
	}
	defer tx.Rollback()
	tag, err := configETag(ctx, tx)
	if err != nil {
		return unavailable(ctx, err)
	}
	return unavailable(ctx, export(&sdnlb.ConfigStream{
		ETag:     tag,
		VIPs:     eachVIP(ctx, tx, sdnlb.VIPFilter{}),
		Pools:    eachPool(ctx, tx, sdnlb.PoolFilter{}),
		Members:  eachMember(ctx, tx, sdnlb.MemberFilter{}),
		Monitors: eachMonitor(ctx, tx, sdnlb.MonitorFilter{}),
	}))
}

// objectVersion is an object's id and updated_at, what its ETag and the
// configuration's are made of.
type objectVersion struct {
	ID        string `db:"id"`
	UpdatedAt string `db:"updated_at"`
}

// configETag is sdnlb.ConfigETag of what tx holds, read without the
// objects: their versions, in the order readConfig reads them.
func configETag(ctx context.Context, tx *Tx) (string, error) {
	d := sdnlb.NewConfigDigest()
	for _, k := range []struct {
		kind  sdnlb.EventKind
		table string
	}{{sdnlb.KindVIP, "vips"}, {sdnlb.KindPool, "pools"}, {sdnlb.KindMember, "members"}, {sdnlb.KindMonitor, "monitors"}} {
		versions := queryRows(ctx, tx, k.table, func(v *objectVersion) (*objectVersion, error) { return v, nil },
			`SELECT id, updated_at FROM `+k.table+` ORDER BY id`)
		for v, err := range versions {
			if err != nil {
				return "", err
			}
			updatedAt, err := parseTime(v.UpdatedAt)
			if err != nil {
				return "", err
			}
			d.Add(k.kind, v.ID, updatedAt)
		}
	}
	return d.ETag(), nil
}

// readConfig reads every object, each kind sorted by id.
func readConfig(ctx context.Context, tx *Tx) (*sdnlb.Config, error) {
	cfg := &sdnlb.Config{}
	var err error
	if cfg.VIPs, err = findVIPs(ctx, tx, sdnlb.VIPFilter{}); err != nil {
		return nil, err
	}
	if cfg.Pools, err = findPools(ctx, tx, sdnlb.PoolFilter{}); err != nil {
		return nil, err
	}
	if cfg.Members, err = findMembers(ctx, tx, sdnlb.MemberFilter{}); err != nil {
		return nil, err
	}
	if cfg.Monitors, err = findMonitors(ctx, tx, sdnlb.MonitorFilter{}); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Clear deletes every VIP, pool, member and monitor in one transaction and
// publishes a single OpResync event (Kind "") instead of one per object.
func (s *ConfigService) Clear(ctx context.Context) error {
	return execTx(ctx, s.db, func(tx *Tx) error {
		for _, table := range []string{"pool_monitors", "members", "pools", "monitors", "vips"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table); err != nil {
				return fmt.Errorf("clear %s: %w", table, err)
			}
		}
		tx.emit("", sdnlb.OpResync, "")
		return nil
	})
}

// Store bundles every service of one DB, for wiring: it implements all the
// sdnlb store interfaces, including what the controller and the health
// monitors need (LoadConfig, Subscribe, SetMemberHealth).
type Store struct {
	*VIPService
	*PoolService
	*MemberService
	*MemberHealthService
	*MonitorService
	*ConfigService
	*EventService
}

// NewStore returns all the services of db.
func NewStore(db *DB) *Store {
	return &Store{
		VIPService:          NewVIPService(db),
		PoolService:         NewPoolService(db),
		MemberService:       NewMemberService(db),
		MemberHealthService: NewMemberHealthService(db),
		MonitorService:      NewMonitorService(db),
		ConfigService:       NewConfigService(db),
		EventService:        NewEventService(db),
	}
}

var (
	_ sdnlb.VIPService          = (*Store)(nil)
	_ sdnlb.PoolService         = (*Store)(nil)
	_ sdnlb.MemberService       = (*Store)(nil)
	_ sdnlb.MemberHealthService = (*Store)(nil)
	_ sdnlb.MonitorService      = (*Store)(nil)
	_ sdnlb.ConfigService       = (*Store)(nil)
	_ sdnlb.ConfigApplyService  = (*Store)(nil)
	_ sdnlb.EventService        = (*Store)(nil)
	_ sdnlb.ConfigSource        = (*Store)(nil)
)
