package controller

// Every flow the controller installs carries a cookie that packs, from the
// top byte down, the application id, a category, a VIP number and a member
// number (the layout of antrea's cookie allocator). A flow-mod delete with a
// cookie mask then purges a whole class of flows at once: everything sdnlb
// owns, one VIP's flows, or every connection pointing at one member.
//
//	bits 56-63  appID
//	bits 48-55  category
//	bits 24-47  VIP number    (assigned per VIP id, stable for the process)
//	bits  0-23  member number (assigned per member id, stable for the process)
const (
	appID uint64 = 0x5d

	cookieAppShift    = 56
	cookieCatShift    = 48
	cookieVIPShift    = 24
	cookieNumberLimit = 1 << 24
)

type category uint8

const (
	catBase category = 0x01 // table miss
	catVIP  category = 0x02 // ARP and IPv4 punts and the drop for one VIP
	catL2   category = 0x03 // learned L2 destinations
	// A member's replies → CONTROLLER; VIP and member number of the member
	// the flow is installed for (members sharing an address share one).
	catMemberReply category = 0x04
	// A SWITCH VIP's dispatch flows (VIP number) and the route of a
	// member address of a SWITCH NAT pool (member number).
	catDispatch    category = 0x05
	catMemberRoute category = 0x06
	// The answer to ARP requests for a VIP address, built in the switch;
	// VIP number of the VIP whose MAC answers (VIPs sharing an address
	// share it).
	catARPAnswer category = 0x07
	// The punt of LLDP frames, which discover the links between switches.
	catLLDP category = 0x08
	// The fabric's rows but the hosts' (L2Fabric): links' ingress, floods
	// and paths.
	catFabric category = 0x09
	// The two directions of a connection differ in the lowest bit only, so
	// connMask selects both.
	catConn      category = 0x10 // client → member
	catConnReply category = 0x11 // member → client
	// A CONTROLLER connection's replies on the switches between its
	// member's and its client's (L2Fabric): on to tableL2, untranslated.
	catTransit category = 0x12
)

const (
	maskApp      uint64 = 0xff << cookieAppShift
	maskCategory uint64 = 0xff << cookieCatShift
	maskConnCats uint64 = 0xfe << cookieCatShift // catConn and catConnReply
	maskVIP      uint64 = (cookieNumberLimit - 1) << cookieVIPShift
	maskMember   uint64 = cookieNumberLimit - 1
)

// makeCookie packs a cookie; numbers are truncated to 24 bits, which the
// allocator guarantees they fit.
func makeCookie(cat category, vipNum, memberNum uint32) uint64 {
	return appID<<cookieAppShift | uint64(cat)<<cookieCatShift |
		uint64(vipNum&(cookieNumberLimit-1))<<cookieVIPShift | uint64(memberNum&(cookieNumberLimit-1))
}

// cookieParts unpacks a cookie; ok is false for a cookie sdnlb did not set.
func cookieParts(c uint64) (cat category, vipNum, memberNum uint32, ok bool) {
	if c&maskApp != appID<<cookieAppShift {
		return 0, 0, 0, false
	}
	return category(c >> cookieCatShift), uint32((c & maskVIP) >> cookieVIPShift), uint32(c & maskMember), true
}
