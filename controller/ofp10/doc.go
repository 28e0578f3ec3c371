// Package ofp10 is the OpenFlow 1.0 wire format in terms of the ofp
// package's 1.3 model: the controller keeps deciding in ofp messages, and
// a connection to a 1.0 switch encodes them with Append and decodes what
// the switch sends with Decode into the same ofp types. Like ofp it is a
// pure codec: no I/O, no logging.
//
// Append(b, xid, msg) encodes what 1.0 can express and otherwise returns
// an error wrapping ofp.ErrUnsupported that names the part it cannot: a
// table other than 0 (or TableAll on a delete), goto_table, write or
// clear actions, metadata, meters, groups, conntrack and the other
// Nicira actions, a cookie mask, out_group on a delete, flags beyond
// SEND_FLOW_REM and CHECK_OVERLAP, port-desc requests, match fields
// ofp_match lacks (AppendNicira takes those and the cookie mask of a
// delete). Decode accepts
// the same set in the other direction, so every message round-trips,
// but for one case: a flow stats entry whose actions 1.0 cannot express
// (a switch moved from 1.3 keeps its flows with Nicira actions) does not
// fail the reply; Decode reports it in FlowStatsReply.Unreadable,
// without instructions, and Append leaves it out.
// Errors are the ofp package's (ErrShort, ErrBadLength, ErrBadVersion,
// ErrUnsupported, ErrTooLong); match them with errors.Is.
//
// AppendNicira is Append for a switch that takes Open vSwitch's Nicira
// extensions to 1.0, where plain 1.0 falls short: a flow-mod whose match
// holds a field ofp_match lacks (TCP flags, ...), or a delete that selects
// by cookie, goes as NXT_FLOW_MOD with an NXM match; flow stats requests
// and replies are NXST_FLOW, whose request selects by cookie
// (NXM_NX_COOKIE) and whose entries carry the whole match. Every other
// message, and a flow-mod plain 1.0 expresses, is Append's. Decode reads
// both forms whatever the switch is: NXM fields that ofp_match has
// (NXM_OF_ETH_DST, NXM_OF_IN_PORT's 16 bits, ...) become the
// OpenFlow-basic fields, the others stay as they are (NXM_NX_TCP_FLAGS is
// ofp.MatchTCPFlags), in the order the switch wrote them.
//
// DecodeInto decodes the messages a busy switch sends most, packet-ins
// and flow-removed, into the caller's structs without allocating;
// Type.Model names a 1.0 type in 1.3's numbering; KeyOf gives the key a
// 1.0 switch tells an encoded flow-mod's flow by (priority and match),
// which a caller deleting flows one by one compares.
//
// How the 1.3 model maps onto 1.0:
//
//   - Header types are renumbered (STATS_REQUEST/REPLY stand for
//     MULTIPART_REQUEST/REPLY; BARRIER is 18/19). Decode's Header has
//     the 1.0 Type; the message's Type() is the 1.3 one.
//   - HELLO is the bare header: 1.0 has no version bitmap. Decode gives
//     Versions = [header version].
//   - Ports are 16 bits. Numbers below 0xff00 are the same; 1.0's
//     reserved range 0xff00-0xffff is 1.3's 0xffffff00-0xffffffff with
//     the low 16 bits kept (IN_PORT 0xfff8, NORMAL 0xfffa, FLOOD 0xfffb,
//     ALL 0xfffc, CONTROLLER 0xfffd, LOCAL 0xfffe, NONE 0xffff = ANY),
//     as Open vSwitch maps them. 1.3 ports in between have no 1.0 number.
//   - Matches become the fixed ofp_match with wildcards, encoded bit for
//     bit as ovs-ofctl does. Fields: in_port, eth_src, eth_dst, eth_type,
//     vlan_vid (exact, or 0 for untagged, dl_vlan 0xffff), vlan_pcp with
//     an exact vlan_vid, ip_dscp (nw_tos), ip_proto, ipv4_src/dst with
//     prefix masks, tcp/udp src/dst and icmpv4 type/code (tp_src/tp_dst),
//     arp_op (nw_proto, 8 bits) and arp_spa/tpa (nw_src/nw_dst, prefix
//     masks). Append checks 1.3's prerequisites (ipv4_src needs eth_type
//     0x0800, tcp_dst ip_proto 6, ...) because a 1.0 switch silently
//     ignores a field whose prerequisite is missing. Decode yields the
//     OXMs in OXM field order and drops fields the wildcards leave
//     meaningless, as a 1.0 switch does.
//   - Instructions: none (drop) or one apply-actions, whose actions are
//     output and set_field of eth_src/dst (SET_DL_SRC/DST), ipv4_src/dst
//     (SET_NW_SRC/DST) and tcp or udp src/dst (SET_TP_SRC/DST). SET_TP_*
//     rewrites whichever transport the packet has, so Append takes a tcp
//     or udp set_field only in a flow that matches that ip_proto, or in
//     a packet-out whose frame is of that protocol, and Decode picks tcp
//     or udp the same way (a set-tp action in a flow matching neither, or
//     in a packet-out of another frame, is ErrUnsupported).
//   - Cookies: a 1.0 flow mod has a cookie but no cookie mask, and a
//     1.0 delete does not look at cookies at all. Append therefore
//     refuses any CookieMask (on adds as on deletes) rather than delete
//     or modify flows the caller did not select; deleting "by cookie"
//     on 1.0 means dumping the flows, picking them by cookie and
//     deleting each with FlowDeleteStrict. Flow and aggregate stats
//     requests likewise refuse a cookie mask: ask for everything and
//     filter.
//   - FEATURES_REPLY carries the port list in 1.0: Decode returns a
//     *FeaturesReply, which embeds ofp.FeaturesReply (so it is an
//     ofp.Message) and adds Ports and the 1.0 supported-actions bitmap.
//     Capabilities keep the bits both versions share.
//   - ofp_phy_port to ofp.Port: config keeps PORT_DOWN, NO_RECV, NO_FWD
//     and NO_PACKET_IN (1.3 dropped NO_STP, NO_RECV_STP and NO_FLOOD);
//     state LINK_DOWN stays, STP_BLOCK becomes BLOCKED, and a port whose
//     link is up and that is not administratively down is LIVE. Feature
//     bits keep 10M-10G; the medium bits (copper, fiber, autoneg, pause)
//     move up four places. 1.0 has no speed fields: CurrSpeed and
//     MaxSpeed are the fastest rate bit of curr and supported (10 Mb/s to
//     10 Gb/s), as Open vSwitch derives them.
//   - PACKET_IN gives Match{in_port}, TableID 0 and Cookie 0. FLOW_REMOVED
//     and flow stats have no hard timeout (FlowRemoved) or flags, table 0
//     for flow mods; PortStats have no duration. OutGroup decodes as
//     GroupAny.
//   - ERROR types and codes are translated: 1.0's FLOW_MOD_FAILED (3),
//     PORT_MOD_FAILED (4) and QUEUE_OP_FAILED (5) are 1.3's 5, 7 and 9,
//     and FLOW_MOD_FAILED's codes were renumbered (1.0's UNSUPPORTED reads
//     as UNKNOWN). Errors with no counterpart, including Open vSwitch's
//     Nicira vendor errors, are ErrUnsupported.
//
// Golden vectors live in testdata/golden/NAME.hex in the ofp package's
// format, each with its source: what ovs-ofctl 3.1 sends for a command
// (controller side) or a message built from the 1.0.0 spec (switch side).
// NAME.txt is what `ovs-ofctl ofp-print` prints for the vector; the unit
// tests check the model against it, and the e2e test re-runs ovs-ofctl.
package ofp10
