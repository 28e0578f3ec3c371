package controller

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// reconcile returns the flow-mods that take a switch from the state of old
// to that of new, deletes first, and the VIPs to announce with gratuitous
// ARP; f says what the switch's pipeline can do, l2 who switches what is
// not for a VIP. It is pure. The in-switch dispatch, which depends
// on what the switch learned, is the dataplane's (see dispatch.go).
func reconcile(old, new *snapshot, f switchFeatures, l2 L2Mode) (mods []ofp.FlowMod, announce []*vipState) {
	changed := func(a, b *vipState) bool { return a.key != b.key || a.mac != b.mac }
	freedAddrs := map[netip.Addr]bool{}
	for id, ov := range old.vipByID {
		if nv, ok := new.vipByID[id]; !ok || changed(ov, nv) {
			mods = append(mods, deleteVIPFlows(ov.num)...)
			freedAddrs[ov.key.ip] = true
		}
	}
	for _, op := range old.pools {
		for _, om := range op.members {
			mods = appendMemberDiff(mods, om, new.member(om.num))
		}
	}
	replies := make([]replyMatch, 0, len(old.replyPunts)+len(new.replyPunts))
	for k := range old.replyPunts {
		replies = append(replies, k)
	}
	for k := range new.replyPunts {
		if _, ok := old.replyPunts[k]; !ok {
			replies = append(replies, k)
		}
	}
	if f.oneTable { // OpenFlow 1.0 matches no IPv6
		replies = slices.DeleteFunc(replies, func(k replyMatch) bool { return k.ip.Is6() })
	}
	mods = appendReplyDiff(mods, old, new, replies, f.groups)
	for _, nv := range sortedVIPs(new) {
		ov, ok := old.vipByID[nv.id]
		switch {
		case !ok || changed(ov, nv):
			mods = append(mods, vipFlows(nv, new.vipByAddr[nv.key.ip], l2, f)...)
			announce = append(announce, nv)
		case freedAddrs[nv.key.ip]:
			// A deleted VIP on the same address took the shared ARP and
			// drop flows with it, and may have been the one answering ARP.
			mods = append(mods, vipFlows(nv, new.vipByAddr[nv.key.ip], l2, f)...)
		}
	}
	return mods, announce
}

// reconcilePatch is reconcile from old to new, a patch of old: only what
// the patch touched is compared.
func reconcilePatch(old, new *snapshot, groups bool) (mods []ofp.FlowMod) {
	for _, num := range new.patched.members {
		if om := old.member(num); om != nil {
			mods = appendMemberDiff(mods, om, new.member(num))
		}
	}
	return appendReplyDiff(mods, old, new, new.patched.replies, groups)
}

// appendMemberDiff deletes the connection flows of om when its member nm
// is gone (nil), moved, or went DOWN.
func appendMemberDiff(mods []ofp.FlowMod, om, nm *memberState) []ofp.FlowMod {
	gone := nm == nil || nm.ip != om.ip || nm.port != om.port || nm.poolID != om.poolID
	if gone || (nm.status == sdnlb.MemberDown && om.status != sdnlb.MemberDown) {
		mods = append(mods, deleteMemberFlows(om.num))
	}
	return mods
}

// appendReplyDiff brings the reply punts of replies from old's to new's.
// A punt whose owner changed is replaced by its adds (same matches and
// priorities), so only punts no longer wanted are deleted, and the
// tableFromMember row of a member no longer tracked. Each member owns at
// most one punt, so cookies order them stably.
func appendReplyDiff(mods []ofp.FlowMod, old, new *snapshot, replies []replyMatch, groups bool) []ofp.FlowMod {
	byCookie := func(a, b ofp.FlowMod) int { return cmp.Compare(a.Cookie, b.Cookie) }
	from := len(mods)
	for _, k := range replies {
		o, had := old.replyPunts[k]
		n, has := new.replyPunts[k]
		switch {
		case had && !has:
			mods = append(mods, deleteMemberReplyFlow(o.memberNum))
		case had && o.tracked && !n.tracked:
			mods = append(mods, deleteUntrackedReplyFlow(o.memberNum), deleteDirectFlow(k))
		}
	}
	slices.SortFunc(mods[from:], byCookie)
	from = len(mods)
	for _, k := range replies {
		if n, has := new.replyPunts[k]; has && n != old.replyPunts[k] {
			mods = append(mods, memberReplyFlows(k, n, groups)...)
		}
	}
	slices.SortFunc(mods[from:], byCookie)
	return mods
}

// releasedAddrs lists the addresses old's VIPs answer for and new's do
// not (a VIP deleted, disabled or moved to another address), in order.
func releasedAddrs(old, new *snapshot) []netip.Addr {
	var out []netip.Addr
	for ip, v := range old.vipByAddr {
		if _, held := new.vipByAddr[ip]; !held {
			out = append(out, v.ip)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}

func sortedVIPs(s *snapshot) []*vipState {
	out := make([]*vipState, 0, len(s.vipByID))
	for _, v := range s.vipByID {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *vipState) int { return cmp.Compare(a.num, b.num) })
	return out
}
