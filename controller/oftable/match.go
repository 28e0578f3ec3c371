package oftable

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Error codes ofp does not name.
const (
	badMatchBadWildcards       uint16 = 5  // OFPBMC_BAD_WILDCARDS
	badMatchBadPrereq          uint16 = 9  // OFPBMC_BAD_PREREQ
	badMatchDupField           uint16 = 10 // OFPBMC_DUP_FIELD
	badActionMatchInconsistent uint16 = 10 // OFPBAC_MATCH_INCONSISTENT
	badActionBadSetType        uint16 = 13 // OFPBAC_BAD_SET_TYPE
	badActionBadSetArgument    uint16 = 15 // OFPBAC_BAD_SET_ARGUMENT
	badActionBadOutGroup       uint16 = 9  // OFPBAC_BAD_OUT_GROUP
	badInstructionUnsupInst    uint16 = 1  // OFPBIC_UNSUP_INST
	badInstructionBadTableID   uint16 = 2  // OFPBIC_BAD_TABLE_ID

	groupModFailedGroupExists  uint16 = 0  // OFPGMFC_GROUP_EXISTS
	groupModFailedInvalidGroup uint16 = 1  // OFPGMFC_INVALID_GROUP
	groupModFailedUnknownGroup uint16 = 8  // OFPGMFC_UNKNOWN_GROUP
	groupModFailedBadType      uint16 = 10 // OFPGMFC_BAD_TYPE
	groupModFailedBadCommand   uint16 = 11 // OFPGMFC_BAD_COMMAND
	groupModFailedBadBucket    uint16 = 12 // OFPGMFC_BAD_BUCKET
)

// reject is the error a switch answers a bad flow-mod with: the detail,
// wrapping the *ofp.ErrorMsg it would send (errors.As finds it).
func reject(t ofp.ErrorType, code uint16, format string, args ...any) error {
	return fmt.Errorf("oftable: "+format+": %w", append(args, &ofp.ErrorMsg{ErrType: t, Code: code})...)
}

// checkMatch accepts a match a switch would: modelled fields only, none
// twice, no value bit outside its mask, every prerequisite present.
func checkMatch(m *ofp.Match) error {
	for i := range m.OXMs {
		o := &m.OXMs[i]
		f := lookupField(o)
		if !f.known {
			return reject(ofp.ErrTypeBadMatch, ofp.BadMatchBadField, "match field %s is not modelled", describe(*o))
		}
		mf, _ := modelField(o)
		for j := range i {
			if other, _ := modelField(&m.OXMs[j]); other == mf {
				return reject(ofp.ErrTypeBadMatch, badMatchDupField, "match field %s appears twice", describe(*o))
			}
		}
		if o.HasMask {
			mask := o.Mask()
			for j, v := range o.Value() {
				if v&^mask[j] != 0 {
					return reject(ofp.ErrTypeBadMatch, badMatchBadWildcards, "match field %s has value bits outside its mask", describe(*o))
				}
			}
		}
		if err := checkPrereq(f, m); err != nil {
			return reject(ofp.ErrTypeBadMatch, badMatchBadPrereq, "match field %s %v", describe(*o), err)
		}
	}
	return nil
}

// checkPrereq reports which prerequisite of f the match lacks: it must
// pin eth_type (and ip_proto, and icmpv6_type) to a value f accepts,
// without a mask.
func checkPrereq(f field, m *ofp.Match) error {
	exact := func(fd ofp.OXMField, want ...uint64) bool {
		o, ok := m.Get(fd)
		return ok && !o.HasMask && slices.Contains(want, o.Uint())
	}
	if f.ethTypes != nil && !exact(ofp.OXMEthType, widen(f.ethTypes)...) {
		names := make([]string, len(f.ethTypes))
		for i, t := range f.ethTypes {
			names[i] = fmt.Sprintf("0x%04x", t)
		}
		return fmt.Errorf("needs eth_type=%s", strings.Join(names, " or "))
	}
	if f.ipProto != 0 && !exact(ofp.OXMIPProto, uint64(f.ipProto)) {
		return fmt.Errorf("needs ip_proto=%d", f.ipProto)
	}
	if f.icmpv6Types != nil && !exact(ofp.OXMICMPv6Type, widen(f.icmpv6Types)...) {
		names := make([]string, len(f.icmpv6Types))
		for i, t := range f.icmpv6Types {
			names[i] = strconv.Itoa(int(t))
		}
		return fmt.Errorf("needs icmpv6_type=%s", strings.Join(names, " or "))
	}
	return nil
}

func widen[T uint8 | uint16](vs []T) []uint64 {
	w := make([]uint64, len(vs))
	for i, v := range vs {
		w[i] = uint64(v)
	}
	return w
}

// maskAt is byte j of o's mask; an OXM without a mask matches exactly.
func maskAt(o *ofp.OXM, j int) byte {
	if !o.HasMask {
		return 0xff
	}
	return o.Mask()[j]
}

// matches reports whether p matches every field of m, which checkMatch
// accepted.
func matches(m *ofp.Match, p *Packet) bool {
	var b [16]byte
	for i := range m.OXMs {
		o := &m.OXMs[i]
		v := o.Value()
		f, _ := modelField(o)
		if p.value(f, &b) != len(v) {
			return false
		}
		for j := range v {
			if (b[j]^v[j])&maskAt(o, j) != 0 {
				return false
			}
		}
	}
	return true
}

// covers reports whether every packet that matches m also matches
// general: m is at least as specific as general, as a non-strict modify or
// delete selects flows.
func covers(general, m *ofp.Match) bool {
	for i := range general.OXMs {
		g := &general.OXMs[i]
		o := find(m, g)
		if o == nil {
			return false
		}
		gv, ov := g.Value(), o.Value()
		for j := range gv {
			gm := maskAt(g, j)
			if maskAt(o, j)&gm != gm || (gv[j]^ov[j])&gm != 0 {
				return false
			}
		}
	}
	return true
}

// overlaps reports whether some packet could match both a and b: no field
// they share disagrees where both masks care.
func overlaps(a, b *ofp.Match) bool {
	for i := range a.OXMs {
		x := &a.OXMs[i]
		y := find(b, x)
		if y == nil {
			continue
		}
		xv, yv := x.Value(), y.Value()
		for j := range xv {
			if (xv[j]^yv[j])&maskAt(x, j)&maskAt(y, j) != 0 {
				return false
			}
		}
	}
	return true
}

// sameMatch reports whether a and b hold the same fields, in any order.
func sameMatch(a, b *ofp.Match) bool {
	if len(a.OXMs) != len(b.OXMs) {
		return false
	}
	for i := range a.OXMs {
		if o := find(b, &a.OXMs[i]); o == nil || *o != a.OXMs[i] {
			return false
		}
	}
	return true
}

// find returns m's OXM for the same field as o, or nil.
func find(m *ofp.Match, o *ofp.OXM) *ofp.OXM {
	for i := range m.OXMs {
		if m.OXMs[i].Class == o.Class && m.OXMs[i].Field == o.Field {
			return &m.OXMs[i]
		}
	}
	return nil
}
