package dataplane

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// reconcile returns the flow-mods that take a switch from the state of old
// to that of new, deletes first, and the VIPs to announce with gratuitous
// ARP; f says what the switch's pipeline can do, l2 who switches what is
// not for a VIP. It is pure. The in-switch dispatch, which depends
// on what the switch learned, is the dataplane's (see dispatch.go).
func reconcile(old, new *model.Snapshot, f model.SwitchFeatures, l2 model.L2Mode) (mods []ofp.FlowMod, announce []*model.VIP) {
	changed := func(a, b *model.VIP) bool { return a.Key != b.Key || a.MAC != b.MAC }
	freedAddrs := map[netip.Addr]bool{}
	for id, ov := range old.VIPByID {
		if nv, ok := new.VIPByID[id]; !ok || changed(ov, nv) {
			mods = append(mods, model.DeleteVIPFlows(ov.Num)...)
			freedAddrs[ov.Key.IP] = true
		}
	}
	for _, op := range old.Pools {
		for _, om := range op.Members {
			mods = appendMemberDiff(mods, om, new.Member(om.Num))
		}
	}
	replies := make([]model.ReplyMatch, 0, len(old.ReplyPunts)+len(new.ReplyPunts))
	for k := range old.ReplyPunts {
		replies = append(replies, k)
	}
	for k := range new.ReplyPunts {
		if _, ok := old.ReplyPunts[k]; !ok {
			replies = append(replies, k)
		}
	}
	if f.OneTable { // OpenFlow 1.0 matches no IPv6
		replies = slices.DeleteFunc(replies, func(k model.ReplyMatch) bool { return k.IP.Is6() })
	}
	mods = appendReplyDiff(mods, old, new, replies, f.Groups)
	for _, nv := range model.SortedVIPs(new) {
		ov, ok := old.VIPByID[nv.ID]
		switch {
		case !ok || changed(ov, nv):
			mods = append(mods, model.VIPFlows(nv, new.VIPByAddr[nv.Key.IP], l2, f)...)
			announce = append(announce, nv)
		case freedAddrs[nv.Key.IP]:
			// A deleted VIP on the same address took the shared ARP and
			// drop flows with it, and may have been the one answering ARP.
			mods = append(mods, model.VIPFlows(nv, new.VIPByAddr[nv.Key.IP], l2, f)...)
		}
	}
	return mods, announce
}

// reconcilePatch is reconcile from old to new, a patch of old: only what
// the patch touched is compared.
func reconcilePatch(old, new *model.Snapshot, groups bool) (mods []ofp.FlowMod) {
	for _, num := range new.Patched.Members {
		if om := old.Member(num); om != nil {
			mods = appendMemberDiff(mods, om, new.Member(num))
		}
	}
	return appendReplyDiff(mods, old, new, new.Patched.Replies, groups)
}

// appendMemberDiff deletes the connection flows of om when its member nm
// is gone (nil), moved, or went DOWN.
func appendMemberDiff(mods []ofp.FlowMod, om, nm *model.Member) []ofp.FlowMod {
	gone := nm == nil || nm.IP != om.IP || nm.Port != om.Port || nm.PoolID != om.PoolID
	if gone || (nm.Status == sdnlb.MemberDown && om.Status != sdnlb.MemberDown) {
		mods = append(mods, model.DeleteMemberFlows(om.Num))
	}
	return mods
}

// appendReplyDiff brings the reply punts of replies from old's to new's.
// A punt whose owner changed is replaced by its adds (same matches and
// priorities), so only punts no longer wanted are deleted, and the
// TableFromMember row of a member no longer tracked. Each member owns at
// most one punt, so cookies order them stably.
func appendReplyDiff(mods []ofp.FlowMod, old, new *model.Snapshot, replies []model.ReplyMatch, groups bool) []ofp.FlowMod {
	byCookie := func(a, b ofp.FlowMod) int { return cmp.Compare(a.Cookie, b.Cookie) }
	from := len(mods)
	for _, k := range replies {
		o, had := old.ReplyPunts[k]
		n, has := new.ReplyPunts[k]
		switch {
		case had && !has:
			mods = append(mods, model.DeleteMemberReplyFlow(o.MemberNum))
		case had && o.Tracked && !n.Tracked:
			mods = append(mods, model.DeleteUntrackedReplyFlow(o.MemberNum), model.DeleteDirectFlow(k))
		}
	}
	slices.SortFunc(mods[from:], byCookie)
	from = len(mods)
	for _, k := range replies {
		if n, has := new.ReplyPunts[k]; has && n != old.ReplyPunts[k] {
			mods = append(mods, model.MemberReplyFlows(k, n, groups)...)
		}
	}
	slices.SortFunc(mods[from:], byCookie)
	return mods
}

// releasedAddrs lists the addresses old's VIPs answer for and new's do
// not (a VIP deleted, disabled or moved to another address), in order.
func releasedAddrs(old, new *model.Snapshot) []netip.Addr {
	var out []netip.Addr
	for ip, v := range old.VIPByAddr {
		if _, held := new.VIPByAddr[ip]; !held {
			out = append(out, v.IP)
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out
}
