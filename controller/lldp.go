package controller

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
)

// Link discovery: the controller sends an LLDP frame out of every port of
// every switch it decides for, each lldpInterval, and the frame that comes
// back as another switch's packet-in names the port it left by. One second
// finds a new link within a second and a lost one within linkTimeout, for
// one small frame per port per second: a switch of a hundred ports costs
// a hundred packet-outs and a hundred packet-ins a second.
const (
	lldpInterval = time.Second
	// linkTimeout: a link whose frame three rounds in a row did not bring
	// back is gone.
	linkTimeout = 3 * lldpInterval
)

// LLDP TLV types and the subtype sdnlb's chassis and port ids use.
const (
	lldpTLVEnd       = 0
	lldpTLVChassisID = 1
	lldpTLVPortID    = 2
	lldpTLVTTL       = 3
	lldpLocal        = 7 // locally assigned, for both the chassis id and the port id
)

// lldpChassisPrefix starts the chassis id of sdnlb's frames, followed by
// the datapath id in 16 hex digits: frames of other LLDP speakers (hosts,
// other controllers) do not look like it and are ignored.
const lldpChassisPrefix = "sdnlb:"

const lldpChassisLen = len(lldpChassisPrefix) + 16

// appendLLDP appends the frame that discovers the link from port of
// switch dpid, sent from src (the port's MAC).
func appendLLDP(b []byte, src [6]byte, dpid uint64, port uint32) []byte {
	start := len(b)
	b = append(b, model.LLDPMAC[:]...)
	b = append(b, src[:]...)
	b = binary.BigEndian.AppendUint16(b, ofp.EthTypeLLDP)

	b = appendTLVHeader(b, lldpTLVChassisID, 1+lldpChassisLen)
	b = append(b, lldpLocal)
	b = append(b, lldpChassisPrefix...)
	for i := 60; i >= 0; i -= 4 {
		b = append(b, "0123456789abcdef"[dpid>>i&0xf])
	}

	portAt := len(b)
	b = appendTLVHeader(b, lldpTLVPortID, 0)
	b = append(b, lldpLocal)
	b = strconv.AppendUint(b, uint64(port), 10)
	binary.BigEndian.PutUint16(b[portAt:], lldpTLVPortID<<9|uint16(len(b)-portAt-2))

	b = appendTLVHeader(b, lldpTLVTTL, 2)
	b = binary.BigEndian.AppendUint16(b, uint16(linkTimeout/time.Second))
	b = appendTLVHeader(b, lldpTLVEnd, 0)
	return dataplane.PadFrame(b, start)
}

func appendTLVHeader(b []byte, typ uint8, n int) []byte {
	return binary.BigEndian.AppendUint16(b, uint16(typ)<<9|uint16(n))
}

// isLLDP reports whether frame is LLDP to the nearest bridge, which the
// LLDP row takes.
func isLLDP(frame []byte) bool {
	return len(frame) >= 14 && bytes.Equal(frame[:6], model.LLDPMAC[:]) && binary.BigEndian.Uint16(frame[12:]) == ofp.EthTypeLLDP
}

// parseLLDP reads the switch and port an sdnlb LLDP frame was sent from;
// ok is false for any other frame, including a truncated one.
func parseLLDP(frame []byte) (dpid uint64, port uint32, ok bool) {
	if !isLLDP(frame) {
		return 0, 0, false
	}
	rest := frame[14:]
	// The chassis id, port id and TTL come first, in that order (IEEE
	// 802.1AB 8.2).
	next := func(want uint8) []byte {
		if len(rest) < 2 {
			return nil
		}
		h := binary.BigEndian.Uint16(rest)
		typ, n := uint8(h>>9), int(h&0x1ff)
		if typ != want || n > len(rest)-2 {
			return nil
		}
		v := rest[2 : 2+n]
		rest = rest[2+n:]
		return v
	}
	chassis, portID := next(lldpTLVChassisID), next(lldpTLVPortID)
	if len(chassis) != 1+lldpChassisLen || chassis[0] != lldpLocal || string(chassis[1:1+len(lldpChassisPrefix)]) != lldpChassisPrefix ||
		len(portID) < 2 || portID[0] != lldpLocal || len(next(lldpTLVTTL)) != 2 {
		return 0, 0, false
	}
	d, err := strconv.ParseUint(string(chassis[1+len(lldpChassisPrefix):]), 16, 64)
	if err != nil {
		return 0, 0, false
	}
	p, err := strconv.ParseUint(string(portID[1:]), 10, 32)
	if err != nil {
		return 0, 0, false
	}
	return d, uint32(p), true
}

// discoverLinks sends the LLDP frames, each lldpInterval, and forgets the
// links whose frames stopped coming back.
func (c *Controller) discoverLinks() {
	c.topo.expire(c.now())
	for _, s := range c.switchConns() {
		if s.master.Load() {
			s.sendLLDP()
		}
	}
}

// sendLLDP sends an LLDP frame out of each of the switch's physical ports
// that is up, in one write. Once a second, it need not reuse its buffers.
func (s *switchConn) sendLLDP() { s.sendLLDPOn(s.ports.all()) }

// sendLLDPOn sends an LLDP frame out of each of ports that is up: a port
// that comes up is asked at once whether it is a link, so that it counts
// as a host's port, or not, within a round.
func (s *switchConn) sendLLDPOn(ports []ofp.Port) {
	var msgs []ofp.Message
	for _, p := range ports {
		if p.PortNo > ofp.PortMax || !portUp(p) {
			continue
		}
		msgs = append(msgs, &ofp.PacketOut{BufferID: ofp.NoBuffer, InPort: ofp.PortController,
			Actions: []ofp.Action{ofp.ActionOutput{Port: p.PortNo}}, Data: appendLLDP(nil, p.HWAddr, s.dpid, p.PortNo)})
	}
	if len(msgs) > 0 {
		s.send(msgs...)
	}
}

// lldpIn records the link an sdnlb LLDP frame came in on: from the port
// of a connected switch it names to the port it arrived at. Frames of
// other speakers, frames naming a switch not connected, and frames naming
// a port either switch did not report (a forgery from a host, or from a
// switch that makes up its packet-ins) find no link; a new link past the
// caps is refused.
func (s *switchConn) lldpIn(now time.Time, pin *ofp.PacketIn) {
	inPort, ok := pin.Match.InPort()
	if !ok {
		return
	}
	dpid, port, ok := parseLLDP(pin.Data)
	if !ok {
		return
	}
	src := s.c.switchConn(dpid)
	if src == nil || !src.ports.linkable(port) || !s.ports.linkable(inPort) {
		return
	}
	if cp := s.c.topo.discovered(now, model.PortRef{DPID: dpid, Port: port}, model.PortRef{DPID: s.dpid, Port: inPort}); cp != capNone {
		s.c.capReached(itemLink, s.dpid, cp)
	}
}
