package model

import (
	"net/netip"

	"github.com/sdnlb/sdnlb"
)

// Every flow the controller installs carries a cookie that packs, from the
// top byte down, the application id, a category, a VIP number and a member
// number (the layout of antrea's cookie allocator). A flow-mod delete with a
// cookie mask then purges a whole class of flows at once: everything sdnlb
// owns, one VIP's flows, or every connection pointing at one member.
//
//	bits 56-63  AppID
//	bits 48-55  category
//	bits 24-47  VIP number    (the VIP's, sdnlb.VIP.Num: the store's)
//	bits  0-23  member number (the member's, sdnlb.Member.Num)
const (
	AppID uint64 = 0x5d

	CookieAppShift    = 56
	CookieCatShift    = 48
	cookieVIPShift    = 24
	CookieNumberLimit = sdnlb.NumLimit
)

type Category uint8

const (
	CatBase Category = 0x01 // table miss
	CatVIP  Category = 0x02 // ARP and IPv4 punts and the drop for one VIP
	CatL2   Category = 0x03 // learned L2 destinations
	// A member's replies → CONTROLLER; VIP and member number of the member
	// the flow is installed for (members sharing an address share one).
	CatMemberReply Category = 0x04
	// A SWITCH VIP's dispatch flows (VIP number) and the route of a
	// member address of a SWITCH NAT pool (member number).
	CatDispatch    Category = 0x05
	CatMemberRoute Category = 0x06
	// The answer to ARP requests for a VIP address, built in the switch;
	// VIP number of the VIP whose MAC answers (VIPs sharing an address
	// share it).
	CatARPAnswer Category = 0x07
	// The punt of LLDP frames, which discover the links between switches.
	CatLLDP Category = 0x08
	// The fabric's rows but the hosts' (L2Fabric): links' ingress, floods
	// and paths.
	CatFabric Category = 0x09
	// A connection's two flows: the category's top bit says connection,
	// its lowest bit the direction, and the six bits between the
	// connection's shard (ConnShard), so that MaskConnCats selects every
	// connection flow and a poll can read one shard of them at a time.
	// CookieParts gives the category without the shard.
	CatConn      Category = 0x80 // client → member
	CatConnReply Category = 0x81 // member → client
	// A CONTROLLER connection's replies on the switches between its
	// member's and its client's (L2Fabric): on to TableL2, untranslated.
	CatTransit Category = 0x12
)

const (
	MaskApp      uint64 = 0xff << CookieAppShift
	MaskCategory uint64 = 0xff << CookieCatShift
	MaskConnCats uint64 = 0x80 << CookieCatShift // CatConn and CatConnReply, every shard
	// MaskConnDir selects one direction of every connection, every shard.
	MaskConnDir uint64 = 0x81 << CookieCatShift
	MaskVIP     uint64 = (CookieNumberLimit - 1) << cookieVIPShift
	maskMember  uint64 = CookieNumberLimit - 1
)

// MakeCookie packs a cookie; numbers are truncated to 24 bits, which the
// allocator guarantees they fit.
func MakeCookie(cat Category, vipNum, memberNum uint32) uint64 {
	return AppID<<CookieAppShift | uint64(cat)<<CookieCatShift |
		uint64(vipNum&(CookieNumberLimit-1))<<cookieVIPShift | uint64(memberNum&(CookieNumberLimit-1))
}

// CookieParts unpacks a cookie, a connection's category without its
// shard; ok is false for a cookie sdnlb did not set.
func CookieParts(c uint64) (cat Category, vipNum, memberNum uint32, ok bool) {
	if c&MaskApp != AppID<<CookieAppShift {
		return 0, 0, 0, false
	}
	cat = Category(c >> CookieCatShift)
	switch {
	case cat&CatConn != 0:
		cat &= CatConnReply
	case cat == legacyConn, cat == legacyConnReply:
		cat += CatConn - legacyConn
	}
	return cat, uint32((c & MaskVIP) >> cookieVIPShift), uint32(c & maskMember), true
}

// The connection categories of a switch's flows installed before
// connections had shards: adoption reads them as connections, and adds
// them again under their shard's cookie.
const (
	legacyConn      Category = 0x10
	legacyConnReply Category = 0x11
)

// ConnShards is how many shards connections are spread over. A poll
// reads every flow but the connections', and one shard of them when the
// switch holds too many to read at once (ShardCookie).
const ConnShards = 64

// connShardShift places a shard in the category byte, above the
// direction bit.
const connShardShift = CookieCatShift + 1

// ConnShard is the shard of the connections of a client's address and
// port: both flows of a connection are in one, and a client's ports
// spread over all of them.
func ConnShard(client netip.Addr, port uint16) uint8 {
	h := Fold32(client)*0x9e3779b1 ^ uint32(port)*0x85ebca6b
	return uint8((h ^ h>>15) * 0x2c1b3c6d >> 26)
}

// ConnCookie packs the cookie of a connection's flow of category cat
// (CatConn or CatConnReply) in shard.
func ConnCookie(cat Category, shard uint8, vipNum, memberNum uint32) uint64 {
	return MakeCookie(cat, vipNum, memberNum) | uint64(shard%ConnShards)<<connShardShift
}

// ShardOf is the shard a connection flow's cookie names; 0 for a flow
// installed before connections had shards.
func ShardOf(cookie uint64) uint8 {
	if Category(cookie>>CookieCatShift)&CatConn == 0 {
		return 0
	}
	return uint8(cookie>>connShardShift) % ConnShards
}

// ShardCookie selects, with its mask, the connection flows of the shards
// that are shard modulo n, a power of two no larger than ConnShards.
func ShardCookie(shard, n uint8) (cookie, mask uint64) {
	return AppID<<CookieAppShift | uint64(CatConn)<<CookieCatShift | uint64(shard%n)<<connShardShift,
		MaskApp | MaskConnCats | uint64(n-1)<<connShardShift
}

// NotConnCookie selects, with its mask, every flow of sdnlb's but the
// connections'.
func NotConnCookie() (cookie, mask uint64) {
	return AppID << CookieAppShift, MaskApp | MaskConnCats
}
