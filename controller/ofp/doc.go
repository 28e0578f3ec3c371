// Package ofp is a pure OpenFlow 1.3 wire codec: no I/O beyond framing
// (ReadMessage), no logging, no reflection.
//
// Encoding appends to a caller buffer: Append(b, xid, msg). Decoding either
// allocates a fresh message (Decode, which returns pointers such as
// *PacketIn) or reuses a caller-owned struct (DecodeInto), reslicing its
// slices to [:0], so a steady-state packet-in path allocates nothing.
//
// Changes from the brief's API sketch, for the controller engineer:
//
//   - OXM.Value and OXM.Mask are methods on *OXM, not []byte fields. The
//     payload lives in a fixed inline array (MaxOXMPayload bytes), so OXM is
//     a comparable value that Match* constructors return without
//     allocating. Read values with o.Uint(), o.IPv4(), o.MAC(), or the
//     Value()/Mask() slices (which alias o). NewOXM builds arbitrary ones.
//     OXMs longer than MaxOXMPayload (OVS tun_metadata) are ErrUnsupported.
//   - ErrorMsg's type field is ErrType (Message needs the method Type()).
//     ErrorMsg also has Experimenter for OFPET_EXPERIMENTER errors.
//   - Action and Instruction interfaces expose ActionType() and
//     InstructionType(). Unknown actions and instructions decode as
//     ActionRaw and InstructionRaw (type plus raw bytes), so flow-stats of
//     foreign flows still decode and re-encode unchanged.
//   - MatchVLANVID sets the OFPVID_PRESENT bit (VLANPresent).
//   - Message types use value receivers: Append accepts T or *T; pass *T
//     for FlowMod and PacketOut so the interface conversion does not copy
//     them to the heap. Likewise []Action may hold *ActionOutput etc.
//   - AppendChecked reports ErrTooLong; Append returns b unchanged then.
//   - ErrorFor(err, msg) maps a decode error to the OFPT_ERROR to answer.
//
// Decode errors: ErrShort (a structure is truncated), ErrBadLength (a
// length field disagrees with the bytes), ErrBadVersion (non-1.3 header,
// header still returned; HELLO is decoded at any version), ErrUnsupported
// (unknown message type, multipart type or match type).
//
// Decoded messages never alias the input: PacketIn.Data and other byte
// slices are copied (into reused storage with DecodeInto).
package ofp
