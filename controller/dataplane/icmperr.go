package dataplane

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// ICMP errors to a VIP. A router between a VIP and its client that cannot
// carry a member's reply tells the reply's source, the VIP, that it was too
// big (IPv6 packet too big, IPv4 fragmentation needed). The member must get
// it, or path MTU discovery fails and the connection stalls. The controller
// sends it on to the connection's member as the member would have got it
// without the VIP between: for NAT the quoted reply's source becomes the
// member's address and port again. It finds the member two ways:
//
//   - a SWITCH connection's in the switch's tracker, which relates the
//     error to it and sends it up with its label and mark (the member's
//     address and, for NAT, port);
//   - a CONTROLLER connection's in its forward flow, which it asks the
//     switch for (icmpLookups) and reads the member's rewrite from.

// icmpErrorHeader is the ICMP header before the packet an error quotes:
// type, code, checksum, and the MTU (IPv6) or unused and next-hop MTU
// (IPv4).
const icmpErrorHeader = 8

// maxICMPLookups bounds the errors waiting for their connection's flow, so
// that a flood of forged errors asks the switch for little.
const maxICMPLookups = 64

// icmpLookupTimeout is how long an error waits for the switch's answer.
const icmpLookupTimeout = 2 * time.Second

// icmpLookup is an ICMP error waiting for the flow of its connection.
type icmpLookup struct {
	frame    []byte
	inPort   uint32
	l3       int
	proto    uint8 // the quoted packet's, as a VIP names it
	deadline time.Time
}

// forwardICMPError sends an ICMP error about a VIP's reply on to the
// connection's member, or asks the switch for the connection, and reports
// whether it took the error. match is the packet-in's.
func (dp *Switch) forwardICMPError(p *packetIn, match *ofp.Match, out *Outbox) bool {
	src, dst, proto, ok := quotedTuple(p.frame, len(p.eth.Contents))
	if !ok {
		return false
	}
	v := p.snap.VIP(model.VIPKey{IP: src.Addr(), Port: src.Port(), Proto: proto})
	if v == nil {
		return false
	}
	l3 := len(p.eth.Contents)
	label, related := match.GetNX(ofp.NXMCTLabel)
	if !related || len(label.Value()) != 16 {
		return dp.lookUpConnection(p, l3, src, dst, proto, out)
	}
	member := model.LabelAddress([16]byte(label.Value()))
	h, known := dp.Learner.Host(member)
	if !known || h.Port == 0 || member.Is4() != v.IP.Is4() {
		return false
	}
	dp.frame = append(dp.frame[:0], p.frame...)
	if !v.DSR() {
		var port uint16
		if mark, ok := match.GetNX(ofp.NXMCTMark); ok {
			port = uint16(mark.Uint())
		}
		if !unNATError(dp.frame, l3, member, port) {
			return false
		}
	}
	copy(dp.frame[0:6], h.MAC[:])
	dp.packetOut(p.inPort, h.Port, dp.frame, out)
	return true
}

// lookUpConnection asks the switch for the forward flow of the CONTROLLER
// connection client → vip whose reply an error quotes (the reply vip →
// client), and keeps the error until the answer (icmpFlowsAnswer).
func (dp *Switch) lookUpConnection(p *packetIn, l3 int, vip, client netip.AddrPort, proto uint8, out *Outbox) bool {
	for xid, l := range dp.icmpLookups {
		if p.now.After(l.deadline) {
			delete(dp.icmpLookups, xid)
		}
	}
	if len(dp.icmpLookups) >= maxICMPLookups {
		return true // dropped: the errors of a flood wait for nothing
	}
	match := []ofp.OXM{ofp.MatchEthType(model.EthTypeOf(vip.Addr())), ofp.MatchIPProto(model.WireProto(proto, vip.Addr())),
		model.MatchIPSrc(client.Addr()), model.MatchIPDst(vip.Addr())}
	if model.HasPorts(proto) {
		match = append(match, model.L4Src(proto, client.Port()), model.L4Dst(proto, vip.Port()))
	}
	xid := out.request(ofp.MultipartRequest{Body: ofp.FlowStatsRequest{TableID: model.TableClassify, OutPort: ofp.PortAny,
		OutGroup: ofp.GroupAny, Cookie: model.MakeCookie(model.CatConn, 0, 0), CookieMask: model.MaskApp | model.MaskConnDir, Match: ofp.Match{OXMs: match}}})
	if dp.icmpLookups == nil {
		dp.icmpLookups = map[uint32]icmpLookup{}
	}
	dp.icmpLookups[xid] = icmpLookup{frame: slices.Clone(p.frame), inPort: p.inPort, l3: l3, proto: proto,
		deadline: p.now.Add(icmpLookupTimeout)}
	return true
}

// ICMPFlowsAnswer takes the switch's answer to a lookUpConnection, and
// reports whether xid was one: the error goes to the member the
// connection's forward flow sends to, rewritten as that flow rewrites.
func (dp *Switch) ICMPFlowsAnswer(xid uint32, stats []ofp.FlowStats, out *Outbox) bool {
	l, ok := dp.icmpLookups[xid]
	if !ok {
		return false
	}
	delete(dp.icmpLookups, xid)
	for i := range stats {
		st := &stats[i]
		acts := model.Applied(st.Instructions)
		mac, okMAC := model.SetField(acts, ofp.OXMEthDst)
		port, okPort := model.OutputPort(acts)
		if !okMAC || !okPort {
			continue
		}
		if port == ofp.PortInPort { // the member behind the client's port
			port, _ = st.Match.InPort()
		}
		if member, nat := model.SetIPDst(acts); nat {
			var memberPort uint16
			if p, ok := model.SetField(acts, model.L4DstField(l.proto)); ok && model.HasPorts(l.proto) {
				memberPort = uint16(p.Uint())
			}
			if !unNATError(l.frame, l.l3, member, memberPort) {
				return true
			}
		}
		m := mac.MAC()
		copy(l.frame[0:6], m[:])
		if port == l.inPort {
			port = ofp.PortInPort
		}
		dp.packetOut(l.inPort, port, l.frame, out)
		return true
	}
	return true
}

// quotedTuple is the source and destination of the packet the ICMP error
// in frame (its IP header at l3) quotes, and its protocol as a VIP names
// it.
func quotedTuple(frame []byte, l3 int) (src, dst netip.AddrPort, proto uint8, ok bool) {
	var srcIP, dstIP netip.Addr
	var l4 int
	if len(frame) > l3 && frame[l3]>>4 == 6 {
		inner := l3 + 40 + icmpErrorHeader
		if len(frame) < inner+40 {
			return src, dst, 0, false
		}
		srcIP, dstIP = netip.AddrFrom16([16]byte(frame[inner+8:inner+24])), netip.AddrFrom16([16]byte(frame[inner+24:inner+40]))
		proto, l4 = frame[inner+6], inner+40
	} else {
		if len(frame) < l3+20 {
			return src, dst, 0, false
		}
		inner := l3 + int(frame[l3]&0x0f)*4 + icmpErrorHeader
		if len(frame) < inner+20 {
			return src, dst, 0, false
		}
		srcIP, dstIP = netip.AddrFrom4([4]byte(frame[inner+12:inner+16])), netip.AddrFrom4([4]byte(frame[inner+16:inner+20]))
		proto, l4 = frame[inner+9], inner+int(frame[inner]&0x0f)*4
	}
	var sport, dport uint16
	if model.HasPorts(proto) {
		if len(frame) < l4+4 {
			return src, dst, 0, false
		}
		sport, dport = binary.BigEndian.Uint16(frame[l4:]), binary.BigEndian.Uint16(frame[l4+2:])
	}
	if proto == ofp.IPProtoICMPv6 {
		proto = ofp.IPProtoICMP
	}
	return netip.AddrPortFrom(srcIP, sport), netip.AddrPortFrom(dstIP, dport), proto, true
}

// unNATError rewrites, in place, the ICMP error in frame (its IP header at
// l3) for member: the error goes to the member, and the packet it quotes,
// a reply the switch sent from the VIP, comes from the member's address
// and, when port is not 0, port, as the member sent it. The checksums the
// rewrite touches are made again; the quoted packet's transport checksum,
// which no receiver checks, is left. It reports false for a frame too short
// to hold what it rewrites.
func unNATError(frame []byte, l3 int, member netip.Addr, port uint16) bool {
	if member.Is6() {
		return unNATError6(frame, l3, member, port)
	}
	return unNATError4(frame, l3, member, port)
}

// unNATError6 is unNATError for an ICMPv6 error, whose checksum covers
// the addresses it is sent between.
func unNATError6(frame []byte, l3 int, member netip.Addr, port uint16) bool {
	const ipLen = 40 // an error that reaches the tracker has no extension header
	icmp := l3 + ipLen
	inner := icmp + icmpErrorHeader
	if len(frame) < inner+ipLen || frame[l3+6] != ofp.IPProtoICMPv6 {
		return false
	}
	addr := member.As16()
	copy(frame[l3+24:l3+40], addr[:]) // destination
	copy(frame[inner+8:inner+24], addr[:])
	if next := frame[inner+6]; port != 0 && model.HasPorts(next) && len(frame) >= inner+ipLen+2 {
		binary.BigEndian.PutUint16(frame[inner+ipLen:], port)
	}
	src := netip.AddrFrom16([16]byte(frame[l3+8 : l3+24]))
	n := int(binary.BigEndian.Uint16(frame[l3+4:]))
	if icmp+n > len(frame) {
		return false
	}
	binary.BigEndian.PutUint16(frame[icmp+2:], 0)
	binary.BigEndian.PutUint16(frame[icmp+2:], checksum(frame[icmp:icmp+n], pseudoHeaderSum(src, member, ofp.IPProtoICMPv6, n)))
	return true
}

// unNATError4 is unNATError for an ICMPv4 error, whose outer and quoted
// IP headers each carry a checksum of their own.
func unNATError4(frame []byte, l3 int, member netip.Addr, port uint16) bool {
	ihl := int(frame[l3]&0x0f) * 4
	icmp := l3 + ihl
	inner := icmp + icmpErrorHeader
	total := int(binary.BigEndian.Uint16(frame[l3+2:]))
	if ihl < 20 || len(frame) < inner+20 || l3+total > len(frame) {
		return false
	}
	addr := member.As4()
	copy(frame[l3+16:l3+20], addr[:])
	binary.BigEndian.PutUint16(frame[l3+10:], 0)
	binary.BigEndian.PutUint16(frame[l3+10:], checksum(frame[l3:icmp], 0))
	innerIHL := int(frame[inner]&0x0f) * 4
	if innerIHL < 20 || len(frame) < inner+innerIHL {
		return false
	}
	copy(frame[inner+12:inner+16], addr[:])
	binary.BigEndian.PutUint16(frame[inner+10:], 0)
	binary.BigEndian.PutUint16(frame[inner+10:], checksum(frame[inner:inner+innerIHL], 0))
	if next := frame[inner+9]; port != 0 && model.HasPorts(next) && len(frame) >= inner+innerIHL+2 {
		binary.BigEndian.PutUint16(frame[inner+innerIHL:], port)
	}
	binary.BigEndian.PutUint16(frame[icmp+2:], 0)
	binary.BigEndian.PutUint16(frame[icmp+2:], checksum(frame[icmp:l3+total], 0))
	return true
}
