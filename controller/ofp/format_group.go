package ofp

import (
	"math"
	"strconv"
	"strings"
)

// Rendering of groups as ovs-ofctl prints them under OpenFlow 1.3
// (lib/ofp-group.c): buckets carry no bucket_id, which OVS shows only for
// OpenFlow 1.5.

var groupTypeNames = [...]string{"all", "select", "indirect", "ff"}

// String renders g as one line of ovs-ofctl dump-groups, for example
// "group_id=1,type=select,bucket=weight:10,actions=output:1".
func (g GroupDesc) String() string { return formatGroup(g.GroupType, g.GroupID, g.Buckets) }

// String renders m in ovs-ofctl add-group syntax, the line dump-groups
// would print for the group, for example
// "group_id=1,type=select,bucket=weight:10,actions=output:1". Commands
// other than add lead with their name ("modify,group_id=1,...",
// "delete,group_id=1").
func (m GroupMod) String() string {
	switch m.Command {
	case GroupAdd:
		return formatGroup(m.GroupType, m.GroupID, m.Buckets)
	case GroupModify:
		return "modify," + formatGroup(m.GroupType, m.GroupID, m.Buckets)
	case GroupDelete:
		return "delete,group_id=" + strconv.FormatUint(uint64(m.GroupID), 10)
	}
	return "command_" + strconv.Itoa(int(m.Command)) + "," + formatGroup(m.GroupType, m.GroupID, m.Buckets)
}

func formatGroup(t GroupType, id uint32, buckets []Bucket) string {
	var b strings.Builder
	b.WriteString("group_id=" + strconv.FormatUint(uint64(id), 10) + ",type=")
	if int(t) < len(groupTypeNames) {
		b.WriteString(groupTypeNames[t])
	} else {
		b.WriteString("unknown")
	}
	for i := range buckets {
		bk := &buckets[i]
		b.WriteString(",bucket=")
		defaultWeight := uint16(0)
		if t == GroupTypeSelect {
			defaultWeight = 1
		}
		if bk.Weight != defaultWeight {
			b.WriteString("weight:" + strconv.Itoa(int(bk.Weight)) + ",")
		}
		if bk.WatchPort != PortAny {
			b.WriteString("watch_port:" + FormatPort(bk.WatchPort) + ",")
		}
		if bk.WatchGroup != GroupAny {
			b.WriteString("watch_group:" + strconv.FormatUint(uint64(bk.WatchGroup), 10) + ",")
		}
		b.WriteString("actions=" + FormatActions(bk.Actions))
	}
	return b.String()
}

// String renders s as one line of ovs-ofctl dump-group-stats, for example
// "group_id=1,duration=9.609s,ref_count=2,packet_count=123,byte_count=12345,bucket0:packet_count=234,byte_count=2345".
func (s GroupStats) String() string {
	var b strings.Builder
	b.WriteString("group_id=" + strconv.FormatUint(uint64(s.GroupID), 10))
	b.WriteString(",duration=" + formatDuration(s.DurationSec, s.DurationNsec))
	b.WriteString(",ref_count=" + strconv.FormatUint(uint64(s.RefCount), 10))
	b.WriteString(",packet_count=" + strconv.FormatUint(s.PacketCount, 10))
	b.WriteString(",byte_count=" + strconv.FormatUint(s.ByteCount, 10))
	for i, c := range s.Buckets {
		if c.PacketCount == math.MaxUint64 { // OVS: counter not kept
			continue
		}
		b.WriteString(",bucket" + strconv.Itoa(i) + ":packet_count=" + strconv.FormatUint(c.PacketCount, 10))
		b.WriteString(",byte_count=" + strconv.FormatUint(c.ByteCount, 10))
	}
	return b.String()
}

// formatDuration is OVS's ofp_print_duration: seconds, then milliseconds
// when they are exact, else as many nanosecond digits as needed.
func formatDuration(sec, nsec uint32) string {
	s := strconv.FormatUint(uint64(sec), 10)
	if nsec > 0 {
		if msec := nsec / 1000000; msec*1000000 == nsec {
			ms := strconv.Itoa(int(msec))
			s += "." + strings.Repeat("0", max(0, 3-len(ms))) + ms
		} else {
			ns := strconv.Itoa(int(nsec))
			s += "." + strings.TrimRight(strings.Repeat("0", max(0, 9-len(ns)))+ns, "0")
		}
	}
	return s + "s"
}
