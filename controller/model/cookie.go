package model

import "github.com/sdnlb/sdnlb"

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
	// The two directions of a connection differ in the lowest bit only, so
	// connMask selects both.
	CatConn      Category = 0x10 // client → member
	CatConnReply Category = 0x11 // member → client
	// A CONTROLLER connection's replies on the switches between its
	// member's and its client's (L2Fabric): on to TableL2, untranslated.
	CatTransit Category = 0x12
)

const (
	MaskApp      uint64 = 0xff << CookieAppShift
	MaskCategory uint64 = 0xff << CookieCatShift
	MaskConnCats uint64 = 0xfe << CookieCatShift // CatConn and CatConnReply
	MaskVIP      uint64 = (CookieNumberLimit - 1) << cookieVIPShift
	maskMember   uint64 = CookieNumberLimit - 1
)

// MakeCookie packs a cookie; numbers are truncated to 24 bits, which the
// allocator guarantees they fit.
func MakeCookie(cat Category, vipNum, memberNum uint32) uint64 {
	return AppID<<CookieAppShift | uint64(cat)<<CookieCatShift |
		uint64(vipNum&(CookieNumberLimit-1))<<cookieVIPShift | uint64(memberNum&(CookieNumberLimit-1))
}

// CookieParts unpacks a cookie; ok is false for a cookie sdnlb did not set.
func CookieParts(c uint64) (cat Category, vipNum, memberNum uint32, ok bool) {
	if c&MaskApp != AppID<<CookieAppShift {
		return 0, 0, 0, false
	}
	return Category(c >> CookieCatShift), uint32((c & MaskVIP) >> cookieVIPShift), uint32(c & maskMember), true
}
