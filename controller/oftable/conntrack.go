package oftable

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Tracker is one switch's connection tracker, as far as sdnlb's flows
// rely on it: it remembers connections, per zone, by their original
// direction's tuple, with the mark and label a commit gave them, and
// tells a packet sent through a ct action its state. sdnlb translates
// addresses with its own actions, so NAT is not modelled, nor are
// helpers (alg).
//
// A packet through ct is +trk and:
//
//   - of a connection the zone holds, in its original direction: +est once
//     a packet of the reply direction went through ct in that zone, +new
//     before; in the reply direction: +est+rpl. It gets the connection's
//     ct_mark and ct_label.
//   - of no connection the zone holds: +new, with ct_mark and ct_label 0,
//     or +inv if it cannot open one: a TCP segment with SYN and ACK, RST or
//     FIN; an ICMP or ICMPv6 message other than an echo request; a packet
//     not IP.
//
// ct(commit) stores a +new packet's connection and, with the actions
// inside it, writes the connection's ct_mark and ct_label (bits a move
// does not write keep their value); an invalid packet is not committed.
// ct(commit,force) on the reply direction forgets the connection and
// commits a new one the packet's way.
//
// Not modelled: TCP's state machine and windows (a FIN or RST closes
// nothing, a SYN on a held connection is of that connection, no segment
// is out of window), timeouts (a connection stays until Delete or Flush),
// related connections (+rel: an ICMP error is +inv), ICMP identifiers (a
// client's echo requests to one address are one connection), the
// original-direction fields (ct_nw_src, ct_tp_dst, ...) and NAT (+snat,
// +dnat).
//
// Process commits into the switch's tracker, so a connection's packets
// sent one after another see what the earlier ones left; ProcessAll works
// on a copy. The zero value is empty and ready.
type Tracker struct {
	conns map[connKey]Conn
}

type connKey struct {
	zone uint16
	orig Tuple
}

// Tuple is what a connection is known by in one direction.
type Tuple struct {
	Proto            uint8
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16 // TCP and UDP
	ICMPType         uint8  // ICMP and ICMPv6: the echo request or reply type
}

// Reverse is the tuple of the other direction.
func (t Tuple) Reverse() Tuple {
	r := Tuple{Proto: t.Proto, Src: t.Dst, Dst: t.Src, SrcPort: t.DstPort, DstPort: t.SrcPort}
	if t.Proto == ofp.IPProtoICMP || t.Proto == ofp.IPProtoICMPv6 {
		r.ICMPType = echoPeer[t.ICMPType]
	}
	return r
}

// ICMP and ICMPv6 echo request and reply types, each mapped to its peer.
var echoPeer = map[uint8]uint8{icmpEchoRequest: icmpEchoReply, icmpEchoReply: icmpEchoRequest,
	icmpv6EchoRequest: icmpv6EchoReply, icmpv6EchoReply: icmpv6EchoRequest}

const (
	icmpEchoRequest   uint8 = 8
	icmpEchoReply     uint8 = 0
	icmpv6EchoRequest uint8 = 128
	icmpv6EchoReply   uint8 = 129
)

// isICMP reports whether p is ICMP of its IP version: ICMP in IPv4,
// ICMPv6 in IPv6.
func (p *Packet) isICMP() bool {
	return p.EthType == ofp.EthTypeIPv4 && p.IPProto == ofp.IPProtoICMP || p.EthType == ofp.EthTypeIPv6 && p.IPProto == ofp.IPProtoICMPv6
}

// TupleOf returns the tuple p is tracked by, or false when the tracker
// cannot track it (see Tracker).
func TupleOf(p Packet) (Tuple, bool) {
	t := Tuple{Proto: p.IPProto}
	switch p.EthType {
	case ofp.EthTypeIPv4:
		t.Src, t.Dst = netip.AddrFrom4(p.IPv4Src), netip.AddrFrom4(p.IPv4Dst)
	case ofp.EthTypeIPv6:
		t.Src, t.Dst = netip.AddrFrom16(p.IPv6Src), netip.AddrFrom16(p.IPv6Dst)
	default:
		return Tuple{}, false
	}
	switch {
	case p.IPProto == ofp.IPProtoTCP || p.IPProto == ofp.IPProtoUDP:
		t.SrcPort, t.DstPort = p.L4Src, p.L4Dst
	case p.isICMP():
		if _, echo := echoPeer[p.ICMPType]; !echo || p.ICMPType >= 128 != (p.IPProto == ofp.IPProtoICMPv6) {
			return Tuple{}, false
		}
		t.ICMPType = p.ICMPType
	}
	return t, true
}

// Conn is one connection the tracker holds.
type Conn struct {
	Zone    uint16
	Orig    Tuple // the direction of the packet that committed it
	Mark    uint32
	Label   [16]byte
	Replied bool // a packet of the reply direction went through ct
}

// Conns returns every connection, by zone, then protocol, addresses and
// ports.
func (t *Tracker) Conns() []Conn {
	conns := slices.Collect(maps.Values(t.conns))
	slices.SortFunc(conns, func(a, b Conn) int {
		return cmp.Or(cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Orig.Proto, b.Orig.Proto),
			a.Orig.Src.Compare(b.Orig.Src), a.Orig.Dst.Compare(b.Orig.Dst),
			cmp.Compare(a.Orig.SrcPort, b.Orig.SrcPort), cmp.Compare(a.Orig.DstPort, b.Orig.DstPort),
			cmp.Compare(a.Orig.ICMPType, b.Orig.ICMPType))
	})
	return conns
}

// Lookup returns the connection of zone that t belongs to, in either
// direction.
func (t *Tracker) Lookup(zone uint16, tu Tuple) (Conn, bool) {
	if c, ok := t.conns[connKey{zone, tu}]; ok {
		return c, true
	}
	c, ok := t.conns[connKey{zone, tu.Reverse()}]
	return c, ok
}

// Delete forgets the connection of zone that tu belongs to, in either
// direction, as its timeout would, and reports whether there was one.
func (t *Tracker) Delete(zone uint16, tu Tuple) bool {
	c, ok := t.Lookup(zone, tu)
	if ok {
		delete(t.conns, connKey{zone, c.Orig})
	}
	return ok
}

// Flush forgets every connection.
func (t *Tracker) Flush() { clear(t.conns) }

func (t *Tracker) clone() Tracker { return Tracker{conns: maps.Clone(t.conns)} }

// track sends p through ct action a in zone and returns it as the
// recirculated packet sees it, with the tracker's fields set.
func (t *Tracker) track(zone uint16, a ofp.ActionCT, p Packet) Packet {
	p.CTState, p.CTZone, p.CTMark, p.CTLabel = ofp.CTStateTrk, zone, 0, [16]byte{}
	tu, ok := TupleOf(p)
	if !ok {
		p.CTState |= ofp.CTStateInv
		return p
	}
	commit := a.Flags&ofp.CTCommit != 0
	k := connKey{zone, tu}
	c, found := t.conns[k]
	reply := false
	if !found {
		if c, found = t.conns[connKey{zone, tu.Reverse()}]; found {
			reply, k = true, connKey{zone, c.Orig}
		}
	}
	if found && reply && commit && a.Flags&ofp.CTForce != 0 {
		delete(t.conns, k)
		found, reply, k = false, false, connKey{zone, tu}
	}
	switch {
	case !found && !opens(&p):
		p.CTState |= ofp.CTStateInv
		return p
	case !found:
		p.CTState |= ofp.CTStateNew
		c = Conn{Zone: zone, Orig: tu}
	case reply:
		c.Replied = true
		p.CTState |= ofp.CTStateEst | ofp.CTStateRpl
	case c.Replied:
		p.CTState |= ofp.CTStateEst
	default:
		p.CTState |= ofp.CTStateNew
	}
	if commit {
		c = c.exec(a.Actions, p)
	}
	if found || commit {
		if t.conns == nil {
			t.conns = map[connKey]Conn{}
		}
		t.conns[k] = c
		p.CTMark, p.CTLabel = c.Mark, c.Label
	}
	return p
}

// opens reports whether p, of no connection, may open one.
func opens(p *Packet) bool {
	switch {
	case p.IPProto == ofp.IPProtoTCP:
		const closing = ofp.TCPFlagACK | ofp.TCPFlagRST | ofp.TCPFlagFIN
		return p.TCPFlags&ofp.TCPFlagSYN == 0 || p.TCPFlags&closing == 0
	case p.isICMP():
		return p.ICMPType == icmpEchoRequest || p.ICMPType == icmpv6EchoRequest
	}
	return true
}

// exec runs the actions inside a ct(commit) on c for packet p: set-fields
// and moves into ct_mark and ct_label, reading p's fields.
func (c Conn) exec(actions []ofp.Action, p Packet) Conn {
	p.CTMark, p.CTLabel = c.Mark, c.Label
	for _, a := range actions {
		switch a := deref(a).(type) {
		case ofp.ActionSetField:
			if f, ok := modelField(&a.Field); ok && fields[f].ctWritable && !a.Field.HasMask {
				p.store(f, a.Field.Value())
			}
		case ofp.ActionRegMove:
			src, dst, ok := movedFields(a)
			if !ok || !fields[dst].ctWritable || !fields[src].in(&p) {
				continue
			}
			var s, d [16]byte
			sn, dn := p.value(src, &s), p.value(dst, &d)
			copyBits(d[:dn], int(a.DstOfs), s[:sn], int(a.SrcOfs), int(a.NBits))
			p.store(dst, d[:dn])
		}
	}
	c.Mark, c.Label = p.CTMark, p.CTLabel
	return c
}

// zoneOf is the zone ct action a tracks p in: its own, or 16 bits of the
// field it names.
func zoneOf(a ofp.ActionCT, p *Packet) uint16 {
	if a.ZoneField == 0 {
		return a.Zone
	}
	f, ok := headerField(a.ZoneField)
	if !ok {
		return 0
	}
	var v [16]byte
	var z [2]byte
	copyBits(z[:], 0, v[:p.value(f, &v)], int(a.ZoneOfs), 16)
	return uint16(z[0])<<8 | uint16(z[1])
}

// clearCT forgets what the tracker said of p, as ct_clear does and as a
// ct action does to the packet that goes on after it.
func (p *Packet) clearCT() {
	p.CTState, p.CTZone, p.CTMark, p.CTLabel = 0, 0, 0, [16]byte{}
}
