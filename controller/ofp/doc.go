// Package ofp is a pure OpenFlow 1.3 wire codec: no I/O beyond framing
// (ReadMessage), no logging, no reflection.
//
// Encoding appends to a caller buffer: Append(b, xid, msg). Decoding either
// allocates a fresh message (Decode, which returns pointers such as
// *PacketIn) or reuses a caller-owned struct (DecodeInto(b, &pin)),
// reslicing its slices to [:0], so the steady-state packet-in path
// allocates nothing. Append of a FlowMod or PacketOut passed by pointer
// allocates nothing either (benchmarks and TestAppend_NoAlloc check both).
//
// Points of the API that differ from a plain transcription of the
// specification:
//
//   - OXM.Value and OXM.Mask are methods on *OXM, not []byte fields. The
//     payload lives in a fixed inline array (MaxOXMPayload = 32 bytes), so
//     OXM is a comparable value that Match* constructors return without
//     allocating. Read values with o.Uint(), o.IPv4(), o.IPv6(), o.MAC(), or the
//     Value()/Mask() slices (which alias o). NewOXM builds any other OXM
//     and checks spec lengths. OXMs longer than 32 bytes (OVS
//     tun_metadata) decode as ErrUnsupported.
//   - ErrorMsg's type field is ErrType and GroupMod's is GroupType
//     (Message needs the method Type()). ErrorMsg also has Experimenter
//     for OFPET_EXPERIMENTER errors.
//   - Action and Instruction expose ActionType() and InstructionType().
//     Unknown actions and instructions (MPLS, PBB, experimenter actions
//     other than the Nicira ones below) decode as ActionRaw and
//     InstructionRaw - type plus raw body - so flow stats of foreign flows
//     still decode and re-encode byte for byte.
//   - Open vSwitch's Nicira extensions that an in-switch load balancer
//     needs are first-class: ActionCT with a nested ActionNAT (conntrack
//     and NAT), ActionCTClear, ActionResubmit, ActionRegMove,
//     ActionMultipath and ActionFinTimeout
//     (nx_action.go, laid out as OVS encodes them), and the NXM_1 match
//     fields ct_state, ct_zone, ct_mark, reg0-15, ct_nw_proto, ct_nw_dst
//     and ct_tp_dst as ordinary OXMs (MatchCTState, MatchReg, ...;
//     nx_oxm.go). Fields in moves and ct zones are NXMHeader values,
//     IPv6 and neighbour discovery ones included (NXMIPv6Src, NXMNDTarget,
//     ...). OVS's nd_reserved and nd_options_type (class
//     OXMClassEricsson: MatchNDReserved, MatchNDOptionsType) let flows
//     turn a neighbour solicitation into the advertisement. It takes two:
//     OVS refuses to set nd_tll in a flow that matches a solicitation, so
//     one retypes the option and sets icmpv6_type 136, and a flow in a
//     later table that matches the advertisement sets nd_tll.
//     ActionCT.Table is the recirculation table: CTRecircNone for none,
//     as 0 is table 0. ActionResubmit.InPort keeps OVS's 16-bit port
//     numbering (ResubmitInPort). Nicira arguments OVS would reject
//     (unknown NAT flags, ct() inside ct(), a zone field not 16 bits
//     wide) decode as ErrUnsupported, answered as OFPBAC_BAD_ARGUMENT.
//   - Groups: GroupMod (OFPT_GROUP_MOD) with Buckets, and the
//     OFPMP_GROUP, OFPMP_GROUP_DESC and OFPMP_GROUP_FEATURES multipart
//     bodies (group.go). A group whose buckets are ErrUnsupported does not
//     fail a group description reply: it goes to GroupDescReply.Unreadable,
//     without buckets.
//   - MatchVLANVID sets the OFPVID_PRESENT bit (VLANPresent).
//   - Messages, actions and instructions use value receivers: Append and
//     []Action accept T or *T. Pass *FlowMod and *PacketOut so the
//     interface conversion does not copy them to the heap.
//   - PacketIn.Data never aliases the input: it is copied into the reused
//     slice, so a PacketIn can outlive the read buffer.
//   - AppendChecked reports ErrTooLong; Append then returns b unchanged.
//   - ErrorFor(err, msg) picks the OFPT_ERROR to answer a bad message with.
//   - The codec also covers Experimenter, DescRequest/DescReply,
//     RoleRequest/RoleReply with the role constants,
//     InstructionWriteMetadata, InstructionMeter and ActionSetQueue.
//
// Decode errors (match with errors.Is): ErrShort (a structure is
// truncated), ErrBadLength (a length field disagrees with the bytes),
// ErrBadVersion (non-1.3 header; the header is still returned; HELLO is
// decoded at any version so the caller can negotiate), ErrUnsupported
// (unknown message, multipart or match type; wrapped with detail).
//
// Rendering for tests and the flows endpoint follows ovs-ofctl dump-flows:
// Match.String ("ct_state=+new+trk,tcp,reg0=0x1,in_port=1,tp_src=4000"),
// FormatActions and FormatInstructions ("set_field:10.0.0.2->ip_dst,output:3",
// "ct(commit,table=2,zone=1,nat(dst=10.0.0.1:80))", "drop" when empty),
// FlowMod.String, an add-flow style line ("cookie=0x1,table=0,priority=100,tcp,... actions=..."),
// GroupMod.String and GroupDesc.String, dump-groups lines
// ("group_id=1,type=select,bucket=weight:10,actions=output:1"; OpenFlow
// 1.3 buckets have no bucket_id), and GroupStats.String, a
// dump-group-stats line. The e2e tests check every one against OVS 3.1.
//
// Golden vectors live in testdata/golden/*.hex, one message per file, with
// every field commented and its source (Ryu's of13 test data, the 1.3.5
// spec, or OVS 3.1's own encoding captured from ovs-ofctl) noted; they
// also seed FuzzDecode.
package ofp
