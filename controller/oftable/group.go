package oftable

import (
	"encoding/binary"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// group is one entry of the group table.
type group struct {
	typ     ofp.GroupType
	buckets []ofp.Bucket
}

// ApplyGroup applies one group-mod as an OpenFlow 1.3 switch does, or
// rejects it, changing nothing, with an error wrapping the *ofp.ErrorMsg
// a switch would answer with:
//
//   - ADD fails on a group that exists, MODIFY on one that does not;
//     MODIFY replaces the type and buckets.
//   - DELETE removes the group (every group for ofp.GroupAll; one that
//     does not exist is no error) and every flow that sends to it, which
//     it returns, in Flows order.
//
// The model executes all, select and indirect groups (not fast failover).
// A select group's buckets need not weigh the same; a bucket of another
// type must weigh 0 and an indirect group has exactly one. Buckets hold
// the actions a flow's apply-actions may, except group (groups do not
// chain), executed in order as Open vSwitch executes them, and may not
// have their prerequisites checked: no match is known. ApplyGroup copies
// what it keeps.
func (t *Table) ApplyGroup(gm *ofp.GroupMod) (removed []Flow, err error) {
	switch gm.Command {
	case ofp.GroupAdd, ofp.GroupModify:
		if err := checkGroup(gm); err != nil {
			return nil, err
		}
		_, exists := t.groups[gm.GroupID]
		if gm.Command == ofp.GroupAdd && exists {
			return nil, reject(ofp.ErrTypeGroupModFailed, groupModFailedGroupExists, "group %d exists", gm.GroupID)
		}
		if gm.Command == ofp.GroupModify && !exists {
			return nil, reject(ofp.ErrTypeGroupModFailed, groupModFailedUnknownGroup, "group %d does not exist", gm.GroupID)
		}
		buckets := make([]ofp.Bucket, len(gm.Buckets))
		for i, b := range gm.Buckets {
			b.Actions = copyActions(b.Actions)
			buckets[i] = b
		}
		if t.groups == nil {
			t.groups = map[uint32]*group{}
		}
		t.groups[gm.GroupID] = &group{typ: gm.GroupType, buckets: buckets}
		return nil, nil
	case ofp.GroupDelete:
		if gm.GroupID == ofp.GroupAll {
			clear(t.groups)
		} else if _, exists := t.groups[gm.GroupID]; !exists {
			return nil, nil
		}
		delete(t.groups, gm.GroupID)
		t.flows = slices.DeleteFunc(t.flows, func(e entry) bool {
			if sendsToGroup(e.flow.Instructions, gm.GroupID) {
				removed = append(removed, e.flow)
				return true
			}
			return false
		})
		return removed, nil
	}
	return nil, reject(ofp.ErrTypeGroupModFailed, groupModFailedBadCommand, "group-mod command %d", gm.Command)
}

// checkGroup accepts the groups the model executes.
func checkGroup(gm *ofp.GroupMod) error {
	switch {
	case gm.GroupID > ofp.GroupMax:
		return reject(ofp.ErrTypeGroupModFailed, groupModFailedInvalidGroup, "group id %#x is reserved", gm.GroupID)
	case gm.GroupType == ofp.GroupTypeFF:
		return reject(ofp.ErrTypeGroupModFailed, groupModFailedBadType, "group %d: fast failover groups are not modelled", gm.GroupID)
	case gm.GroupType > ofp.GroupTypeFF:
		return reject(ofp.ErrTypeGroupModFailed, groupModFailedBadType, "group %d: type %d", gm.GroupID, gm.GroupType)
	case gm.GroupType == ofp.GroupTypeIndirect && len(gm.Buckets) != 1:
		return reject(ofp.ErrTypeGroupModFailed, groupModFailedInvalidGroup, "indirect group %d has %d buckets, not one", gm.GroupID, len(gm.Buckets))
	}
	for i, b := range gm.Buckets {
		if b.Weight != 0 && gm.GroupType != ofp.GroupTypeSelect {
			return reject(ofp.ErrTypeGroupModFailed, groupModFailedBadBucket, "group %d bucket %d: a weight in a group that does not select", gm.GroupID, i)
		}
		for _, a := range b.Actions {
			if err := checkAction(a, actionContext{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Groups returns every group, by id.
func (t *Table) Groups() []ofp.GroupDesc {
	ids := slices.Sorted(maps.Keys(t.groups))
	descs := make([]ofp.GroupDesc, len(ids))
	for i, id := range ids {
		g := t.groups[id]
		descs[i] = ofp.GroupDesc{GroupType: g.typ, GroupID: id, Buckets: slices.Clone(g.buckets)}
	}
	return descs
}

// GroupLines returns every group as ovs-ofctl dump-groups prints it, by
// id, for tests that compare a group table with the lines they expect.
func (t *Table) GroupLines() []string {
	var lines []string
	for _, g := range t.Groups() {
		lines = append(lines, g.String())
	}
	return lines
}

// Select returns the bucket, by index, that select group id picks for p,
// or false when id is no select group or none of its buckets weighs more
// than 0.
//
// The pick models Open vSwitch's default selection method for a group
// without a selection_method property (ofp's group-mod has none, so every
// group the controller builds): a hash of the packet's 5-tuple as it
// reaches the group, here the EtherType, IP addresses, IP protocol and,
// for TCP and UDP, the ports (a packet not IP: its MACs), spread over the
// buckets by weight. Neither the in_port nor the switch enters it, so two
// switches with the same group pick the same bucket for the same packet,
// and a connection's packets all pick one. The hash is the model's own
// (FNV-1a), not the datapath's: a test may rely on which bucket a packet
// gets being stable and spread, never on it being the one OVS picks.
func (t *Table) Select(id uint32, p Packet) (bucket int, ok bool) {
	g := t.groups[id]
	if g == nil || g.typ != ofp.GroupTypeSelect {
		return 0, false
	}
	return g.pick(&p)
}

// pick is Select for g.
func (g *group) pick(p *Packet) (int, bool) {
	var total uint64
	for _, b := range g.buckets {
		total += uint64(b.Weight)
	}
	if total == 0 {
		return 0, false
	}
	x := selectionHash(p) % total
	for i, b := range g.buckets {
		if x < uint64(b.Weight) {
			return i, true
		}
		x -= uint64(b.Weight)
	}
	return 0, false // not reached
}

// live returns the indexes of g's buckets a select group may pick: those
// weighing more than 0.
func (g *group) live() []int {
	var live []int
	for i, b := range g.buckets {
		if b.Weight > 0 {
			live = append(live, i)
		}
	}
	return live
}

// selectionHash hashes p's 5-tuple (see Select), mixed so that all its
// bits depend on every input byte.
func selectionHash(p *Packet) uint64 {
	h := fnv.New64a()
	h.Write(binary.BigEndian.AppendUint16(nil, p.EthType))
	switch p.EthType {
	case ofp.EthTypeIPv4:
		h.Write(p.IPv4Src[:])
		h.Write(p.IPv4Dst[:])
	case ofp.EthTypeIPv6:
		h.Write(p.IPv6Src[:])
		h.Write(p.IPv6Dst[:])
	default:
		h.Write(p.EthSrc[:])
		h.Write(p.EthDst[:])
	}
	if p.EthType == ofp.EthTypeIPv4 || p.EthType == ofp.EthTypeIPv6 {
		h.Write([]byte{p.IPProto})
		if p.IPProto == ofp.IPProtoTCP || p.IPProto == ofp.IPProtoUDP {
			h.Write(binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, p.L4Src), p.L4Dst))
		}
	}
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
