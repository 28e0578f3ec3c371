package ofp

import (
	"encoding/binary"
	"errors"
)

// Group numbering (ofp_group).
const (
	GroupMax uint32 = 0xffffff00 // OFPG_MAX: last usable group number
	GroupAll uint32 = 0xfffffffc // OFPG_ALL: every group, in deletes and stats requests
	GroupAny uint32 = 0xffffffff // OFPG_ANY: no group (out_group, watch_group)
)

// GroupModCommand is ofp_group_mod_command.
type GroupModCommand uint16

const (
	GroupAdd    GroupModCommand = 0 // OFPGC_ADD
	GroupModify GroupModCommand = 1 // OFPGC_MODIFY
	GroupDelete GroupModCommand = 2 // OFPGC_DELETE
)

// GroupType is ofp_group_type.
type GroupType uint8

const (
	GroupTypeAll      GroupType = 0 // OFPGT_ALL: every bucket (multicast)
	GroupTypeSelect   GroupType = 1 // OFPGT_SELECT: one bucket, by weight
	GroupTypeIndirect GroupType = 2 // OFPGT_INDIRECT: the single bucket
	GroupTypeFF       GroupType = 3 // OFPGT_FF: the first live bucket
)

// Group capabilities (ofp_group_capabilities), in GroupFeaturesReply.
const (
	GroupCapSelectWeight   uint32 = 1 << 0 // OFPGFC_SELECT_WEIGHT
	GroupCapSelectLiveness uint32 = 1 << 1 // OFPGFC_SELECT_LIVENESS
	GroupCapChaining       uint32 = 1 << 2 // OFPGFC_CHAINING
	GroupCapChainingChecks uint32 = 1 << 3 // OFPGFC_CHAINING_CHECKS
)

// Bucket is ofp_bucket. Weight matters for GroupTypeSelect only (OVS
// rejects a weight on other types); WatchPort and WatchGroup for
// GroupTypeFF only: set them to PortAny and GroupAny otherwise, as 0 is a
// real port and group.
type Bucket struct {
	Weight     uint16
	WatchPort  uint32
	WatchGroup uint32
	Actions    []Action
}

// bucketFixedLen is ofp_bucket before the actions.
const bucketFixedLen = 16

func appendBuckets(b []byte, buckets []Bucket) []byte {
	for i := range buckets {
		bk := &buckets[i]
		start := len(b)
		b = append(b, 0, 0)
		b = binary.BigEndian.AppendUint16(b, bk.Weight)
		b = binary.BigEndian.AppendUint32(b, bk.WatchPort)
		b = binary.BigEndian.AppendUint32(b, bk.WatchGroup)
		b = append(b, 0, 0, 0, 0)
		b = appendActions(b, bk.Actions)
		binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	}
	return b
}

// decodeBuckets decodes a whole bucket list, appending to dst.
func decodeBuckets(b []byte, dst []Bucket) ([]Bucket, error) {
	for len(b) > 0 {
		if len(b) < bucketFixedLen {
			return dst, ErrShort
		}
		n := int(binary.BigEndian.Uint16(b))
		if n < bucketFixedLen || n > len(b) {
			return dst, ErrBadLength
		}
		bk := Bucket{
			Weight:     binary.BigEndian.Uint16(b[2:]),
			WatchPort:  binary.BigEndian.Uint32(b[4:]),
			WatchGroup: binary.BigEndian.Uint32(b[8:]),
		}
		var err error
		if bk.Actions, err = decodeActions(b[bucketFixedLen:n], nil); err != nil {
			return dst, err
		}
		dst = append(dst, bk)
		b = b[n:]
	}
	return dst, nil
}

// GroupMod is OFPT_GROUP_MOD. A delete needs only GroupID (GroupAll for
// every group); OpenFlow 1.3.5 forbids buckets on it. The type field is
// GroupType, not Type, because every Message has a Type() method.
type GroupMod struct {
	Command   GroupModCommand
	GroupType GroupType
	GroupID   uint32
	Buckets   []Bucket
}

// groupModFixedLen is the body before the buckets.
const groupModFixedLen = 8

func (GroupMod) Type() Type { return TypeGroupMod }

func (m GroupMod) appendBody(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(m.Command))
	b = append(b, uint8(m.GroupType), 0)
	b = binary.BigEndian.AppendUint32(b, m.GroupID)
	return appendBuckets(b, m.Buckets)
}

func (m *GroupMod) decodeBody(body []byte) error {
	if len(body) < groupModFixedLen {
		return ErrShort
	}
	m.Command = GroupModCommand(binary.BigEndian.Uint16(body))
	m.GroupType = GroupType(body[2])
	m.GroupID = binary.BigEndian.Uint32(body[4:])
	var err error
	m.Buckets, err = decodeBuckets(body[groupModFixedLen:], m.Buckets[:0])
	return err
}

// GroupStatsRequest is an OFPMP_GROUP request; GroupAll for every group.
type GroupStatsRequest struct{ GroupID uint32 }

func (GroupStatsRequest) MultipartType() MultipartType { return MultipartGroup }

func (r GroupStatsRequest) appendMultipart(b []byte) []byte {
	return append(binary.BigEndian.AppendUint32(b, r.GroupID), 0, 0, 0, 0)
}

// BucketCounter is ofp_bucket_counter: what one bucket of a group has
// forwarded, in bucket order.
type BucketCounter struct {
	PacketCount uint64
	ByteCount   uint64
}

// GroupStats is one ofp_group_stats entry. RefCount is the number of
// flows (and groups) that send to the group.
type GroupStats struct {
	GroupID      uint32
	RefCount     uint32
	PacketCount  uint64
	ByteCount    uint64
	DurationSec  uint32
	DurationNsec uint32
	Buckets      []BucketCounter
}

const (
	groupStatsFixedLen = 40
	bucketCounterLen   = 16
)

// GroupStatsReply is the OFPMP_GROUP reply.
type GroupStatsReply struct{ Stats []GroupStats }

func (GroupStatsReply) MultipartType() MultipartType { return MultipartGroup }
func (GroupStatsReply) replyBody()                   {}

func (r GroupStatsReply) appendMultipart(b []byte) []byte {
	for i := range r.Stats {
		s := &r.Stats[i]
		b = binary.BigEndian.AppendUint16(b, uint16(groupStatsFixedLen+bucketCounterLen*len(s.Buckets)))
		b = append(b, 0, 0)
		b = binary.BigEndian.AppendUint32(b, s.GroupID)
		b = binary.BigEndian.AppendUint32(b, s.RefCount)
		b = append(b, 0, 0, 0, 0)
		b = binary.BigEndian.AppendUint64(b, s.PacketCount)
		b = binary.BigEndian.AppendUint64(b, s.ByteCount)
		b = binary.BigEndian.AppendUint32(b, s.DurationSec)
		b = binary.BigEndian.AppendUint32(b, s.DurationNsec)
		for _, c := range s.Buckets {
			b = binary.BigEndian.AppendUint64(b, c.PacketCount)
			b = binary.BigEndian.AppendUint64(b, c.ByteCount)
		}
	}
	return b
}

func (r *GroupStatsReply) decode(b []byte) error {
	for len(b) > 0 {
		if len(b) < groupStatsFixedLen {
			return ErrShort
		}
		n := int(binary.BigEndian.Uint16(b))
		if n < groupStatsFixedLen || n > len(b) || (n-groupStatsFixedLen)%bucketCounterLen != 0 {
			return ErrBadLength
		}
		s := GroupStats{
			GroupID:      binary.BigEndian.Uint32(b[4:]),
			RefCount:     binary.BigEndian.Uint32(b[8:]),
			PacketCount:  binary.BigEndian.Uint64(b[16:]),
			ByteCount:    binary.BigEndian.Uint64(b[24:]),
			DurationSec:  binary.BigEndian.Uint32(b[32:]),
			DurationNsec: binary.BigEndian.Uint32(b[36:]),
		}
		for c := b[groupStatsFixedLen:n]; len(c) > 0; c = c[bucketCounterLen:] {
			s.Buckets = append(s.Buckets, BucketCounter{
				PacketCount: binary.BigEndian.Uint64(c),
				ByteCount:   binary.BigEndian.Uint64(c[8:]),
			})
		}
		r.Stats = append(r.Stats, s)
		b = b[n:]
	}
	return nil
}

// GroupDescRequest is an OFPMP_GROUP_DESC request (every group: OpenFlow
// 1.3 has no filter).
type GroupDescRequest struct{}

func (GroupDescRequest) MultipartType() MultipartType    { return MultipartGroupDesc }
func (GroupDescRequest) appendMultipart(b []byte) []byte { return b }

// GroupDesc is one ofp_group_desc entry: a group as installed.
type GroupDesc struct {
	GroupType GroupType
	GroupID   uint32
	Buckets   []Bucket
}

const groupDescFixedLen = 8

// GroupDescReply is the OFPMP_GROUP_DESC reply.
type GroupDescReply struct {
	Groups []GroupDesc
	// Unreadable are the groups whose buckets the decoder could not read
	// (an OXM longer than MaxOXMPayload, such as a wide tun_metadata),
	// without buckets: another controller's group does not fail the
	// reply. Encoders ignore it.
	Unreadable []GroupDesc
}

func (GroupDescReply) MultipartType() MultipartType { return MultipartGroupDesc }
func (GroupDescReply) replyBody()                   {}

func (r GroupDescReply) appendMultipart(b []byte) []byte {
	for i := range r.Groups {
		g := &r.Groups[i]
		start := len(b)
		b = append(b, 0, 0, uint8(g.GroupType), 0)
		b = binary.BigEndian.AppendUint32(b, g.GroupID)
		b = appendBuckets(b, g.Buckets)
		binary.BigEndian.PutUint16(b[start:], uint16(len(b)-start))
	}
	return b
}

func (r *GroupDescReply) decode(b []byte) error {
	for len(b) > 0 {
		if len(b) < groupDescFixedLen {
			return ErrShort
		}
		n := int(binary.BigEndian.Uint16(b))
		if n < groupDescFixedLen || n > len(b) {
			return ErrBadLength
		}
		g := GroupDesc{GroupType: GroupType(b[2]), GroupID: binary.BigEndian.Uint32(b[4:])}
		buckets, err := decodeBuckets(b[groupDescFixedLen:n], nil)
		switch {
		case errors.Is(err, ErrUnsupported):
			r.Unreadable = append(r.Unreadable, g)
		case err != nil:
			return err
		default:
			g.Buckets = buckets
			r.Groups = append(r.Groups, g)
		}
		b = b[n:]
	}
	return nil
}

// GroupFeaturesRequest is an OFPMP_GROUP_FEATURES request.
type GroupFeaturesRequest struct{}

func (GroupFeaturesRequest) MultipartType() MultipartType    { return MultipartGroupFeatures }
func (GroupFeaturesRequest) appendMultipart(b []byte) []byte { return b }

// GroupFeaturesReply is the OFPMP_GROUP_FEATURES reply (ofp_group_features).
// Types has bit 1<<GroupType set per supported type; MaxGroups and Actions
// are indexed by GroupType, Actions[t] having bit 1<<ActionType set per
// action a bucket of that type may hold.
type GroupFeaturesReply struct {
	Types        uint32
	Capabilities uint32 // GroupCap*
	MaxGroups    [4]uint32
	Actions      [4]uint32
}

const groupFeaturesLen = 40

func (GroupFeaturesReply) MultipartType() MultipartType { return MultipartGroupFeatures }
func (GroupFeaturesReply) replyBody()                   {}

func (r GroupFeaturesReply) appendMultipart(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, r.Types)
	b = binary.BigEndian.AppendUint32(b, r.Capabilities)
	for _, v := range r.MaxGroups {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	for _, v := range r.Actions {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func (r *GroupFeaturesReply) decode(b []byte) error {
	if len(b) != groupFeaturesLen {
		return ErrBadLength
	}
	r.Types = binary.BigEndian.Uint32(b)
	r.Capabilities = binary.BigEndian.Uint32(b[4:])
	for i := range r.MaxGroups {
		r.MaxGroups[i] = binary.BigEndian.Uint32(b[8+4*i:])
		r.Actions[i] = binary.BigEndian.Uint32(b[24+4*i:])
	}
	return nil
}
