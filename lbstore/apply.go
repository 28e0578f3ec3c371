package lbstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sdnlb/sdnlb"
)

// ApplyConfig converges the store to want; see sdnlb.ConfigApplyService.
// The apply plans and writes in one write transaction, every object by the
// same functions as the single-object writes, which validate it inside the
// transaction. One that changes nothing rolls back, so it publishes no
// event; one that commits publishes one event per object it changed. A
// dry run plans in a read transaction, which never waits for writers nor
// makes them wait, and checks what it can without writing (see check).
func (s *ConfigService) ApplyConfig(ctx context.Context, want *sdnlb.Config, opts sdnlb.ApplyOptions) (*sdnlb.ConfigDiff, error) {
	if opts.DryRun {
		return readTx(ctx, s.db, func(tx *Tx) (*sdnlb.ConfigDiff, error) {
			a, err := planApply(ctx, tx, want, opts)
			if err != nil {
				return nil, err
			}
			if err := a.check(); err != nil {
				return nil, err
			}
			return a.diff(), nil
		})
	}
	var diff *sdnlb.ConfigDiff
	err := execTx(ctx, s.db, func(tx *Tx) error {
		a, err := planApply(ctx, tx, want, opts)
		if err != nil {
			return err
		}
		if diff = a.diff(); !diff.Changed {
			return errRollback
		}
		if err := a.run(); err != nil {
			return err
		}
		tx.events = mergeEvents(tx.events)
		return nil
	})
	if err != nil && !errors.Is(err, errRollback) {
		return nil, err
	}
	return diff, nil
}

// errRollback ends a write transaction that must not commit but did not
// fail.
var errRollback = errors.New("roll back")

// The apply's order lets every write pass the checks the store makes as
// it writes, whatever order the document lists objects in:
//
//  1. delete the members prune deletes;
//  2. unlink the pools whose link to a VIP changes, or whose link's rules
//     (the pool's protocol or forwarding, the VIP's address, protocol or port)
//     change: they are linked again at the end, against the final VIP and
//     members;
//  3. delete the pools, then the VIPs, that prune deletes;
//  4. dissociate the monitors pools no longer list, then delete the
//     monitors prune deletes;
//  5. write monitors, then VIPs, then pools (a new pool is linked to its
//     VIP at once: it has no members yet) and their monitor associations,
//     then members, whose initial health so follows their pool's monitors;
//     within a kind, updates run before creates, as an update may free
//     what a create takes;
//  6. link the pools unlinked in step 2.

// item is one object of the declared configuration and what applying it
// does.
type item[T any] struct {
	path    string // in the document: "vips[2]"
	want    *T     // a copy, its id and references resolved
	have    *T     // the stored object; nil when it is created
	key     string // how the document named an object it gave no id
	changes []sdnlb.FieldChange
}

// kindPlan is the plan of one kind of object.
type kindPlan[T any] struct {
	kind   sdnlb.EventKind
	id     func(*T) *string
	name   func(*T) string // nil for members, which have none
	items  []*item[T]
	byID   map[string]*item[T]
	byName map[string]*item[T] // the items the document keys by name
	stored map[string]*T
	pruned []*T // the stored objects prune deletes, by id
}

// newKindPlan plans the objects of the document's list (as "vips") of a
// kind against the stored ones.
func newKindPlan[T any](list string, kind sdnlb.EventKind, id func(*T) *string, name func(*T) string, stored, want []*T) (*kindPlan[T], error) {
	k := &kindPlan[T]{kind: kind, id: id, name: name,
		byID: map[string]*item[T]{}, byName: map[string]*item[T]{}, stored: make(map[string]*T, len(stored))}
	for _, obj := range stored {
		k.stored[*id(obj)] = obj
	}
	for i, obj := range want {
		path := sdnlb.ConfigPath(list, i)
		if obj == nil {
			return nil, sdnlb.FieldErrorf(sdnlb.EINVALID, path, "%s is null, not a %s", path, kind)
		}
		c := *obj
		k.items = append(k.items, &item[T]{path: path, want: &c})
	}
	return k, nil
}

// keyByID keys the items that have an id, each listed once.
func (k *kindPlan[T]) keyByID() error {
	for _, it := range k.items {
		id := *k.id(it.want)
		if id == "" {
			continue
		}
		if other, dup := k.byID[id]; dup {
			return sdnlb.ConfigObjectError(it.path, id, sdnlb.FieldErrorf(sdnlb.EINVALID, "id",
				"%s %q is listed twice, also as %s", k.kind, id, other.path))
		}
		k.byID[id] = it
		it.have = k.stored[id]
	}
	return nil
}

// keyByName keys the items without an id by their name, which no other
// item of the kind may have, and matches each to the one stored object of
// that name the document does not list by id; an item that matches none
// is created under a new id.
func (k *kindPlan[T]) keyByName() error {
	names := map[string]int{}
	for _, it := range k.items {
		names[k.name(it.want)]++
	}
	storedByName := map[string][]string{}
	for id, obj := range k.stored {
		if k.byID[id] == nil {
			storedByName[k.name(obj)] = append(storedByName[k.name(obj)], id)
		}
	}
	for _, it := range k.items {
		if *k.id(it.want) != "" {
			continue
		}
		name := k.name(it.want)
		switch {
		case name == "":
			return sdnlb.ConfigObjectError(it.path, "", sdnlb.FieldErrorf(sdnlb.EINVALID, "id",
				"a %s needs an id, or a name that keys it", k.kind))
		case names[name] > 1:
			return sdnlb.ConfigObjectError(it.path, "", sdnlb.FieldErrorf(sdnlb.EINVALID, "name",
				"%d %ss are named %q: an object without an id is keyed by its name, which must then be unique in the document; give it an id",
				names[name], k.kind, name))
		}
		it.key = "name " + name
		k.byName[name] = it
		matches := storedByName[name]
		slices.Sort(matches)
		if len(matches) > 1 {
			return sdnlb.ConfigObjectError(it.path, "", sdnlb.FieldErrorf(sdnlb.EINVALID, "name",
				"%d stored %ss are named %q (%s): give it the id of the one it means", len(matches), k.kind, name, nameIDs(matches)))
		}
		k.keyAs(it, matches)
	}
	return nil
}

// keyAs gives it the id of the one stored object in matches, or a new id
// when there is none.
func (k *kindPlan[T]) keyAs(it *item[T], matches []string) {
	id := newID("")
	if len(matches) == 1 {
		id = matches[0]
		it.have = k.stored[id]
	}
	*k.id(it.want) = id
	k.byID[id] = it
}

// resolve turns a reference, from the field of the object at path, into
// an id: the id of an object of the document or the store, or the name of
// an object the document keys by name. A reference to nothing is refused
// as the write would refuse it, but as a bad value of the document
// (EINVALID); "" (none) is left as it is.
func (k *kindPlan[T]) resolve(path, id, field, ref string) (string, error) {
	if _, ok := k.byID[ref]; ok || ref == "" {
		return ref, nil
	}
	if _, ok := k.stored[ref]; ok {
		return ref, nil
	}
	if it, ok := k.byName[ref]; ok {
		return *k.id(it.want), nil
	}
	return "", sdnlb.ConfigObjectError(path, id, sdnlb.FieldErrorf(sdnlb.EINVALID, field, "%s %q not found", k.kind, ref))
}

// prune lists the stored objects the document does not key.
func (k *kindPlan[T]) prune() {
	for id, obj := range k.stored {
		if k.byID[id] == nil {
			k.pruned = append(k.pruned, obj)
		}
	}
	slices.SortFunc(k.pruned, func(a, b *T) int { return cmp.Compare(*k.id(a), *k.id(b)) })
}

// checkNotPruned refuses a reference, from the field of the object at
// path, to an object of k that prune deletes.
func (k *kindPlan[T]) checkNotPruned(path, id, field, ref string) error {
	if _, stored := k.stored[ref]; stored && k.byID[ref] == nil {
		return sdnlb.ConfigObjectError(path, id, sdnlb.FieldErrorf(sdnlb.EINVALID, field,
			"%s %q is not in the document, and prune deletes it", k.kind, ref))
	}
	return nil
}

// compare works out what changes in the stored objects of the items.
func (k *kindPlan[T]) compare(changes func(have, want *T) []sdnlb.FieldChange) {
	for _, it := range k.items {
		if it.have != nil {
			it.changes = changes(it.have, it.want)
		}
	}
}

// diff reports the items and the pruned objects. A dry run reports no id
// for an object the document gave none and that it would create: the
// apply makes up a new one.
func (k *kindPlan[T]) diff(dryRun bool) sdnlb.KindDiff {
	d := sdnlb.KindDiff{Created: []sdnlb.ObjectDiff{}, Updated: []sdnlb.ObjectDiff{}, Deleted: []sdnlb.ObjectDiff{}}
	for _, it := range k.items {
		id := *k.id(it.want)
		switch {
		case it.have == nil:
			if dryRun && it.key != "" {
				id = ""
			}
			d.Created = append(d.Created, sdnlb.ObjectDiff{ID: id, Key: it.key})
		case len(it.changes) > 0:
			d.Updated = append(d.Updated, sdnlb.ObjectDiff{ID: id, Key: it.key, Fields: it.changes})
		default:
			d.Unchanged++
		}
	}
	for _, obj := range k.pruned {
		d.Deleted = append(d.Deleted, sdnlb.ObjectDiff{ID: *k.id(obj)})
	}
	byIDKey := func(a, b sdnlb.ObjectDiff) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Key, b.Key)) }
	slices.SortFunc(d.Created, byIDKey)
	slices.SortFunc(d.Updated, byIDKey)
	return d
}

// applier plans one configuration in one transaction and, unless it is a
// dry run, applies it.
type applier struct {
	ctx      context.Context
	tx       *Tx
	opts     sdnlb.ApplyOptions
	vips     *kindPlan[sdnlb.VIP]
	pools    *kindPlan[sdnlb.Pool]
	members  *kindPlan[sdnlb.Member]
	monitors *kindPlan[sdnlb.Monitor]
	// linked is the VIP each stored pool of the document is linked to
	// while the apply runs.
	linked map[string]string
}

// planApply reads the stored configuration, keys every object of want,
// resolves references and works out what changes.
func planApply(ctx context.Context, tx *Tx, want *sdnlb.Config, opts sdnlb.ApplyOptions) (*applier, error) {
	have, err := readConfig(ctx, tx)
	if err != nil {
		return nil, err
	}
	if err := sdnlb.CheckConfigIfMatch(ctx, have); err != nil {
		return nil, err
	}
	a := &applier{ctx: ctx, tx: tx, opts: opts, linked: map[string]string{}}
	if a.vips, err = newKindPlan("vips", sdnlb.KindVIP, func(v *sdnlb.VIP) *string { return &v.ID },
		func(v *sdnlb.VIP) string { return v.Name }, have.VIPs, want.VIPs); err != nil {
		return nil, err
	}
	if a.pools, err = newKindPlan("pools", sdnlb.KindPool, func(p *sdnlb.Pool) *string { return &p.ID },
		func(p *sdnlb.Pool) string { return p.Name }, have.Pools, want.Pools); err != nil {
		return nil, err
	}
	if a.members, err = newKindPlan("members", sdnlb.KindMember, func(m *sdnlb.Member) *string { return &m.ID },
		nil, have.Members, want.Members); err != nil {
		return nil, err
	}
	if a.monitors, err = newKindPlan("monitors", sdnlb.KindMonitor, func(m *sdnlb.Monitor) *string { return &m.ID },
		func(m *sdnlb.Monitor) string { return m.Name }, have.Monitors, want.Monitors); err != nil {
		return nil, err
	}
	for _, key := range []func() error{a.monitors.keyByID, a.monitors.keyByName, a.vips.keyByID, a.vips.keyByName,
		a.pools.keyByID, a.pools.keyByName} {
		if err := key(); err != nil {
			return nil, err
		}
	}
	for _, it := range a.vips.items {
		it.want.PoolID = "" // derived: the pools hold the links
		it.want.Address = sdnlb.CanonicalAddress(it.want.Address)
	}
	for _, it := range a.members.items {
		it.want.Address = sdnlb.CanonicalAddress(it.want.Address) // keys and compares as stored
	}
	for _, it := range a.monitors.items {
		it.want.PoolIDs = nil // derived: the pools hold the associations
	}
	for _, it := range a.pools.items {
		if err := a.resolvePool(it); err != nil {
			return nil, err
		}
	}
	if err := a.keyMembers(); err != nil {
		return nil, err
	}
	if opts.Prune {
		a.vips.prune()
		a.pools.prune()
		a.members.prune()
		a.monitors.prune()
		if err := a.checkNotPruned(); err != nil {
			return nil, err
		}
	}
	a.vips.compare((*sdnlb.VIP).Changes)
	a.pools.compare((*sdnlb.Pool).Changes)
	a.members.compare((*sdnlb.Member).Changes)
	a.monitors.compare((*sdnlb.Monitor).Changes)
	for _, it := range a.pools.items {
		if it.have != nil {
			a.linked[it.have.ID] = it.have.VIPID
		}
	}
	return a, nil
}

// resolvePool resolves a pool's references; its monitors are a sorted set,
// as the store reads them.
func (a *applier) resolvePool(it *item[sdnlb.Pool]) error {
	p := it.want
	var err error
	if p.VIPID, err = a.vips.resolve(it.path, p.ID, "vip_id", p.VIPID); err != nil {
		return err
	}
	ids := make([]string, 0, len(p.MonitorIDs))
	for _, ref := range p.MonitorIDs {
		id, err := a.monitors.resolve(it.path, p.ID, "monitor_ids", ref)
		if err != nil {
			return err
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	p.MonitorIDs = slices.Compact(ids)
	return nil
}

// keyMembers keys members by id, or by their pool, address and port, which
// the store keeps unique; such a member's key names its pool as the
// document does.
func (a *applier) keyMembers() error {
	k := a.members
	poolRefs := make([]string, len(k.items))
	for i, it := range k.items {
		poolRefs[i] = it.want.PoolID
		poolID, err := a.pools.resolve(it.path, it.want.ID, "pool_id", it.want.PoolID)
		if err != nil {
			return err
		}
		it.want.PoolID = poolID
	}
	if err := k.keyByID(); err != nil {
		return err
	}
	stored := map[string]string{} // endpoint → id, of the members the document does not list by id
	for id, m := range k.stored {
		if k.byID[id] == nil {
			stored[memberEndpoint(m)] = id
		}
	}
	keyed := map[string]string{} // endpoint → path, of the members keyed by it
	for i, it := range k.items {
		if it.want.ID != "" {
			continue
		}
		endpoint := memberEndpoint(it.want)
		it.key = fmt.Sprintf("%s in pool %s", sdnlb.HostPort(it.want.Address, it.want.Port), poolRefs[i])
		if other, dup := keyed[endpoint]; dup {
			return sdnlb.ConfigObjectError(it.path, "", sdnlb.FieldErrorf(sdnlb.EINVALID, "address",
				"member %s is listed twice, also as %s: a member without an id is keyed by its pool, address and port", it.key, other))
		}
		keyed[endpoint] = it.path
		var matches []string
		if id, ok := stored[endpoint]; ok {
			matches = []string{id}
		}
		k.keyAs(it, matches)
	}
	return nil
}

// memberEndpoint is what keys a member without an id.
func memberEndpoint(m *sdnlb.Member) string {
	return fmt.Sprintf("%s in pool %s", sdnlb.HostPort(m.Address, m.Port), m.PoolID)
}

// checkNotPruned refuses references to objects prune deletes.
func (a *applier) checkNotPruned() error {
	for _, it := range a.pools.items {
		if err := a.vips.checkNotPruned(it.path, it.want.ID, "vip_id", it.want.VIPID); err != nil {
			return err
		}
		for _, ref := range it.want.MonitorIDs {
			if err := a.monitors.checkNotPruned(it.path, it.want.ID, "monitor_ids", ref); err != nil {
				return err
			}
		}
	}
	for _, it := range a.members.items {
		if err := a.pools.checkNotPruned(it.path, it.want.ID, "pool_id", it.want.PoolID); err != nil {
			return err
		}
	}
	return nil
}

// run makes the changes in the order above.
func (a *applier) run() error {
	steps := []func() error{
		a.deletePrunedMembers, a.unlinkPools, a.deletePrunedPools, a.deletePrunedVIPs,
		a.dissociateMonitors, a.deletePrunedMonitors,
		a.writeMonitors, a.writeVIPs, a.writePools, a.writeMembers, a.linkPools,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// diff reports what the plan changes.
func (a *applier) diff() *sdnlb.ConfigDiff {
	dryRun := a.opts.DryRun
	diff := &sdnlb.ConfigDiff{DryRun: dryRun, VIPs: a.vips.diff(dryRun), Pools: a.pools.diff(dryRun),
		Members: a.members.diff(dryRun), Monitors: a.monitors.diff(dryRun)}
	diff.Changed = diff.HasChanges()
	return diff
}

// check is what a dry run checks instead of writing, in the order of the
// writes: each object the apply would create or update passes the checks
// of the object alone (its Validate; a member stays in its pool; the
// caller's CheckVIP). The rules that span objects (an address or endpoint
// taken, a VIP on a member's address or a member on a VIP's, a pool's
// protocol against its VIP's, a DSR pool's member ports) are checked
// against what the writes before have written, so only the apply checks
// them.
func (a *applier) check() error {
	if err := checkKind(a.monitors, func(_, m *sdnlb.Monitor) error { return m.Validate() }); err != nil {
		return err
	}
	if err := checkKind(a.vips, func(have, v *sdnlb.VIP) error {
		if err := v.Validate(); err != nil {
			return err
		}
		return a.checkVIP(have, v)
	}); err != nil {
		return err
	}
	if err := checkKind(a.pools, func(_, p *sdnlb.Pool) error { return p.Validate() }); err != nil {
		return err
	}
	return checkKind(a.members, func(have, m *sdnlb.Member) error {
		if have != nil {
			upd := m.Replacement()
			if err := upd.Validate(have); err != nil {
				return err
			}
		}
		return m.Validate()
	})
}

// checkKind checks with validate each object of k the apply would create
// (have is nil) or update.
func checkKind[T any](k *kindPlan[T], validate func(have, want *T) error) error {
	for _, it := range k.items {
		if it.have != nil && len(it.changes) == 0 {
			continue
		}
		if err := validate(it.have, it.want); err != nil {
			return objectError(it.path, *k.id(it.want), err)
		}
	}
	return nil
}

// objectError names the object in a write's error. In a document, a
// reference to what does not exist is a bad value, not a missing
// resource: EINVALID.
func objectError(path, id string, err error) error {
	if sdnlb.ErrorCode(err) == sdnlb.ENOTFOUND {
		err = &sdnlb.Error{Code: sdnlb.EINVALID, Field: sdnlb.ErrorField(err), Message: sdnlb.ErrorMessage(err)}
	}
	return sdnlb.ConfigObjectError(path, id, err)
}

// pruneError names the object prune could not delete.
func pruneError(kind sdnlb.EventKind, id string, err error) error {
	var e *sdnlb.Error
	if !errors.As(err, &e) {
		return err
	}
	return &sdnlb.Error{Code: e.Code, Message: fmt.Sprintf("pruning %s %s: %s", kind, id, e.Message)}
}

// deletePruned deletes the objects of k prune deletes, without cascade:
// the order of the steps has removed their dependants.
func deletePruned[T any](k *kindPlan[T], del func(id string) error) error {
	for _, obj := range k.pruned {
		if err := del(*k.id(obj)); err != nil {
			return pruneError(k.kind, *k.id(obj), err)
		}
	}
	return nil
}

func (a *applier) deletePrunedMembers() error {
	return deletePruned(a.members, func(id string) error { return deleteMember(a.ctx, a.tx, id) })
}

// unlinkPools unlinks the stored pools whose link changes, or whose link's
// rules do (see step 2).
func (a *applier) unlinkPools() error {
	for _, it := range a.pools.items {
		p := it.have
		if p == nil || p.VIPID == "" {
			continue
		}
		vip := a.vips.byID[p.VIPID]
		if it.want.VIPID == p.VIPID && !touches(it.changes, "protocol", "forwarding") &&
			(vip == nil || !touches(vip.changes, "address", "protocol", "port")) {
			continue
		}
		if err := setPoolVIP(a.ctx, a.tx, p.ID, ""); err != nil {
			return objectError(it.path, p.ID, err)
		}
		a.linked[p.ID] = ""
	}
	return nil
}

// touches reports whether changes change one of fields.
func touches(changes []sdnlb.FieldChange, fields ...string) bool {
	return slices.ContainsFunc(changes, func(c sdnlb.FieldChange) bool { return slices.Contains(fields, c.Field) })
}

func (a *applier) deletePrunedPools() error {
	return deletePruned(a.pools, func(id string) error { return deletePool(a.ctx, a.tx, id, false) })
}

func (a *applier) deletePrunedVIPs() error {
	return deletePruned(a.vips, func(id string) error { return deleteVIP(a.ctx, a.tx, id, false) })
}

// dissociateMonitors dissociates from stored pools the monitors they no
// longer list.
func (a *applier) dissociateMonitors() error {
	for _, it := range a.pools.items {
		if it.have == nil {
			continue
		}
		for _, monitorID := range it.have.MonitorIDs {
			if _, keep := slices.BinarySearch(it.want.MonitorIDs, monitorID); keep {
				continue
			}
			if err := dissociateMonitor(a.ctx, a.tx, it.have.ID, monitorID); err != nil {
				return objectError(it.path, it.have.ID, err)
			}
		}
	}
	return nil
}

func (a *applier) deletePrunedMonitors() error {
	return deletePruned(a.monitors, func(id string) error { return deleteMonitor(a.ctx, a.tx, id, false) })
}

// writeKind updates the stored objects of k that change, then creates the
// new ones: an update may free what a create takes (a VIP's address, a
// member's endpoint). Errors name the object.
func writeKind[T any](k *kindPlan[T], update, create func(*T) error) error {
	for _, updating := range []bool{true, false} {
		for _, it := range k.items {
			var err error
			switch {
			case updating && it.have != nil && len(it.changes) > 0:
				err = update(it.want)
			case !updating && it.have == nil:
				err = create(it.want)
			}
			if err != nil {
				return objectError(it.path, *k.id(it.want), err)
			}
		}
	}
	return nil
}

func (a *applier) writeMonitors() error {
	return writeKind(a.monitors,
		func(m *sdnlb.Monitor) error { return updateMonitor(a.ctx, a.tx, m) },
		func(m *sdnlb.Monitor) error { _, err := createMonitor(a.ctx, a.tx, *m); return err })
}

func (a *applier) writeVIPs() error {
	return writeKind(a.vips,
		func(v *sdnlb.VIP) error {
			upd := v.Replacement()
			upd.PoolID = nil // the pools hold the links
			if _, err := updateVIP(a.ctx, a.tx, v.ID, upd); err != nil {
				return err
			}
			return a.checkVIP(a.vips.stored[v.ID], v)
		},
		func(v *sdnlb.VIP) error {
			if _, err := createVIP(a.ctx, a.tx, *v); err != nil {
				return err
			}
			return a.checkVIP(nil, v)
		})
}

// checkVIP asks the caller's check (ApplyOptions.CheckVIP) about a VIP
// the apply wrote over old, nil for a new one; a refusal rolls the
// write back with the rest.
func (a *applier) checkVIP(old, v *sdnlb.VIP) error {
	if a.opts.CheckVIP == nil {
		return nil
	}
	return a.opts.CheckVIP(a.ctx, old, v)
}

// writePools creates and updates pools, then associates the monitors they
// list. A new pool is linked to its VIP as it is created; a stored pool
// keeps the link it has until linkPools.
func (a *applier) writePools() error {
	err := writeKind(a.pools,
		func(p *sdnlb.Pool) error {
			upd := p.Replacement()
			upd.VIPID = nil
			_, err := updatePool(a.ctx, a.tx, p.ID, upd)
			return err
		},
		func(p *sdnlb.Pool) error { _, err := createPool(a.ctx, a.tx, *p); return err })
	if err != nil {
		return err
	}
	for _, it := range a.pools.items {
		for _, monitorID := range it.want.MonitorIDs {
			if it.have != nil && slices.Contains(it.have.MonitorIDs, monitorID) {
				continue
			}
			if err := associateMonitor(a.ctx, a.tx, it.want.ID, monitorID); err != nil {
				var e *sdnlb.Error
				if errors.As(err, &e) {
					err = &sdnlb.Error{Code: e.Code, Field: "monitor_ids", Message: e.Message}
				}
				return objectError(it.path, it.want.ID, err)
			}
		}
	}
	return nil
}

func (a *applier) writeMembers() error {
	return writeKind(a.members,
		func(m *sdnlb.Member) error { _, err := updateMember(a.ctx, a.tx, m.ID, m.Replacement()); return err },
		func(m *sdnlb.Member) error { _, err := createMember(a.ctx, a.tx, *m); return err })
}

// linkPools links the stored pools to the VIPs they name, checked against
// the final VIPs and members.
func (a *applier) linkPools() error {
	for _, it := range a.pools.items {
		p := it.want
		if it.have == nil || a.linked[p.ID] == p.VIPID {
			continue
		}
		if _, err := updatePool(a.ctx, a.tx, p.ID, sdnlb.PoolUpdate{VIPID: &p.VIPID}); err != nil {
			return objectError(it.path, p.ID, err)
		}
	}
	return nil
}

// mergeEvents keeps one event per object: an object created or updated in
// several writes of the apply (a pool unlinked and linked again, touched
// by its monitor associations) is reported by its first.
func mergeEvents(events []sdnlb.Event) []sdnlb.Event {
	type object struct {
		kind sdnlb.EventKind
		id   string
	}
	seen := map[object]bool{}
	merged := events[:0]
	for _, e := range events {
		o := object{e.Kind, e.ID}
		if e.Op == sdnlb.OpUpdate && seen[o] {
			continue
		}
		seen[o] = true
		merged = append(merged, e)
	}
	return merged
}
