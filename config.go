package sdnlb

import (
	"context"
	"errors"
	"fmt"
	"reflect"
)

// ApplyOptions says how ApplyConfig converges.
type ApplyOptions struct {
	// Prune deletes every stored object the declared configuration does
	// not list.
	Prune bool
	// DryRun reports the changes without making them. It reads in a read
	// transaction, which makes no write wait, and checks each object
	// alone and the references; the rules that span objects are checked
	// by the writes, so an apply may still refuse what a dry run passed.
	DryRun bool
	// CheckVIP, when set, is asked about every VIP the apply creates or
	// updates once the store's own checks passed, with the stored VIP (nil
	// for a new one); its error refuses the configuration, naming the VIP.
	CheckVIP func(ctx context.Context, old, v *VIP) error
}

// ConfigApplyService converges the stored configuration to a declared one.
type ConfigApplyService interface {
	// ApplyConfig makes the store hold the objects of want, in one write
	// transaction, and reports what changed; a refused configuration
	// changes nothing. Objects are validated as the single-object writes
	// validate them, and a refusal names the object as a path into want
	// (ConfigPath) with the field at fault. Re-applying what is stored
	// changes nothing and publishes no event. With an If-Match in ctx
	// (WithIfMatch), the stored configuration must have that ConfigETag
	// (EPRECONDITION otherwise), checked inside the transaction.
	//
	// Every object is keyed by its ID. One without an ID is keyed by its
	// name (VIPs, pools, monitors), which must then be unique among the
	// objects of its kind in want, and matches the stored object of that
	// name, if exactly one; a member without an ID is keyed by its pool,
	// address and port. Objects that match nothing are created, with a new
	// UUID when they have no ID.
	//
	// Pool.VIPID, Member.PoolID and Pool.MonitorIDs name objects of want
	// or of the store by ID, or an object of want that has no ID by its
	// name. The link between a VIP and its pool is the pool's VIPID and
	// monitors are associated by the pool's MonitorIDs: VIP.PoolID and
	// Monitor.PoolIDs are derived and ignored, as are status, health, MAC
	// and timestamps. Config.Seq is ignored.
	ApplyConfig(ctx context.Context, want *Config, opts ApplyOptions) (*ConfigDiff, error)
}

// ConfigDiff is what ApplyConfig changed, or with DryRun would change.
type ConfigDiff struct {
	DryRun   bool     `json:"dry_run"`
	Changed  bool     `json:"changed"` // something was (or would be) created, updated or deleted
	VIPs     KindDiff `json:"vips"`
	Pools    KindDiff `json:"pools"`
	Members  KindDiff `json:"members"`
	Monitors KindDiff `json:"monitors"`
}

// HasChanges reports whether the lists hold a change, which Changed
// tells clients.
func (d *ConfigDiff) HasChanges() bool {
	for _, k := range d.Kinds() {
		if len(k.Diff.Created)+len(k.Diff.Updated)+len(k.Diff.Deleted) > 0 {
			return true
		}
	}
	return false
}

// NamedKindDiff is the diff of one kind with the kind's name, singular.
type NamedKindDiff struct {
	Kind EventKind
	Diff *KindDiff
}

// Kinds lists the diff of every kind, in the order a configuration is
// written: monitors, VIPs, pools, members.
func (d *ConfigDiff) Kinds() []NamedKindDiff {
	return []NamedKindDiff{{KindMonitor, &d.Monitors}, {KindVIP, &d.VIPs}, {KindPool, &d.Pools}, {KindMember, &d.Members}}
}

// KindDiff is what changes among the objects of one kind; each list is
// sorted by id.
type KindDiff struct {
	Created   []ObjectDiff `json:"created"`
	Updated   []ObjectDiff `json:"updated"`
	Deleted   []ObjectDiff `json:"deleted"`
	Unchanged int          `json:"unchanged"`
}

// ObjectDiff is one object that is created, updated or deleted.
type ObjectDiff struct {
	// ID is the object's id; "" for an object a dry run would create
	// under a new UUID.
	ID string `json:"id,omitempty" example:"shop"`
	// Key is how the configuration named an object it gave no id:
	// "name web", or a member's "198.51.100.21:80 in pool web".
	Key string `json:"key,omitempty"`
	// Fields are the fields an update changes.
	Fields []FieldChange `json:"fields,omitempty"`
}

// FieldChange is one field an update changes, by its JSON name.
type FieldChange struct {
	Field string `json:"field" example:"port"`
	Old   any    `json:"old"`
	New   any    `json:"new"`
}

// specField is a field a client declares, by its JSON name, with its value.
type specField struct {
	name  string
	value any
}

// fieldChanges lists the fields whose values differ between old and new,
// which list the same fields in the same order.
func fieldChanges(old, new []specField) []FieldChange {
	var changes []FieldChange
	for i := range old {
		if !reflect.DeepEqual(old[i].value, new[i].value) {
			changes = append(changes, FieldChange{Field: old[i].name, Old: old[i].value, New: new[i].value})
		}
	}
	return changes
}

func (v *VIP) spec() []specField {
	return []specField{{"name", v.Name}, {"description", v.Description}, {"address", v.Address},
		{"protocol", v.Protocol}, {"port", v.Port}, {"connection_limit", v.ConnectionLimit},
		{"session_persistence", v.SessionPersistence}, {"admin_state_up", v.AdminStateUp},
		{"announce", v.Announce}}
}

// Changes lists the fields a client declares that differ in to. The
// derived pool_id is not one of them: the pool holds the link.
func (v *VIP) Changes(to *VIP) []FieldChange { return fieldChanges(v.spec(), to.spec()) }

// Replacement is the update that sets every field a client sets to v's.
func (v *VIP) Replacement() VIPUpdate {
	return VIPUpdate{
		Name: &v.Name, Description: &v.Description, Address: &v.Address, Protocol: &v.Protocol, Port: &v.Port,
		PoolID: &v.PoolID, ConnectionLimit: &v.ConnectionLimit, AdminStateUp: &v.AdminStateUp, Announce: &v.Announce,
		SetSessionPersistence: true, SessionPersistence: v.SessionPersistence,
	}
}

func (p *Pool) spec() []specField {
	return []specField{{"name", p.Name}, {"description", p.Description}, {"vip_id", p.VIPID},
		{"lb_method", p.LBMethod}, {"dispatch", p.Dispatch}, {"forwarding", p.Forwarding},
		{"protocol", p.Protocol}, {"admin_state_up", p.AdminStateUp}, {"slow_start", p.SlowStart},
		{"client_ipv6_prefix", p.ClientIPv6Prefix}, {"hash_key", p.HashKey}, {"monitor_ids", p.MonitorIDs}}
}

// Changes lists the fields a client declares that differ in to, the
// link to the VIP and the associated monitors (in the same order in
// both) among them.
func (p *Pool) Changes(to *Pool) []FieldChange { return fieldChanges(p.spec(), to.spec()) }

// Replacement is the update that sets every field a client sets to p's.
func (p *Pool) Replacement() PoolUpdate {
	return PoolUpdate{
		Name: &p.Name, Description: &p.Description, VIPID: &p.VIPID, LBMethod: &p.LBMethod,
		Dispatch: &p.Dispatch, Forwarding: &p.Forwarding, Protocol: &p.Protocol, AdminStateUp: &p.AdminStateUp,
		SlowStart: &p.SlowStart, ClientIPv6Prefix: &p.ClientIPv6Prefix, HashKey: &p.HashKey,
	}
}

func (m *Member) spec() []specField {
	return []specField{{"pool_id", m.PoolID}, {"address", m.Address}, {"port", m.Port},
		{"weight", m.Weight}, {"capacity", m.Capacity}, {"admin_state_up", m.AdminStateUp}}
}

// Changes lists the fields a client declares that differ in to.
func (m *Member) Changes(to *Member) []FieldChange { return fieldChanges(m.spec(), to.spec()) }

// Replacement is the update that sets every field a client sets to m's;
// the pool cannot change, so it is only there to be checked.
func (m *Member) Replacement() MemberUpdate {
	return MemberUpdate{PoolID: &m.PoolID, Address: &m.Address, Port: &m.Port, Weight: &m.Weight, Capacity: &m.Capacity,
		AdminStateUp: &m.AdminStateUp}
}

func (m *Monitor) spec() []specField {
	return []specField{{"name", m.Name}, {"type", m.Type}, {"delay", m.Delay}, {"timeout", m.Timeout},
		{"max_retries", m.MaxRetries}, {"rise", m.Rise}, {"http_method", m.HTTPMethod}, {"url_path", m.URLPath},
		{"expected_codes", m.ExpectedCodes}, {"tls_verify", m.TLSVerify}, {"port", m.Port}, {"admin_state_up", m.AdminStateUp}}
}

// Changes lists the fields a client declares that differ in to. The
// derived pool_ids is not one of them: pools hold the associations.
func (m *Monitor) Changes(to *Monitor) []FieldChange { return fieldChanges(m.spec(), to.spec()) }

// ConfigPath names an object of a configuration document: its list and
// index, as "vips[2]".
func ConfigPath(list string, index int) string { return fmt.Sprintf("%s[%d]", list, index) }

// ConfigObjectError names the object at path (ConfigPath), and id when
// known, in err: the field becomes a path into the document ("vips[2].port")
// and the message starts with the object. Errors that are not *Error are
// internal and returned as they are.
func ConfigObjectError(path, id string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	field := path
	if e.Field != "" {
		field += "." + e.Field
	}
	object := path
	if id != "" {
		object = fmt.Sprintf("%s (id %s)", path, id)
	}
	return &Error{Code: e.Code, Field: field, Message: object + ": " + e.Message}
}
