package controller

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sdnlb/sdnlb/controller/dataplane"
	"github.com/sdnlb/sdnlb/controller/model"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/ofp10"
)

// wire is the OpenFlow version one switch connection speaks. The
// controller decides in the ofp package's messages, OpenFlow 1.3's model,
// whatever the switch speaks; the wire encodes them for the switch and
// decodes what the switch sends into the same model. The handshake picks
// it (negotiate).
type wire interface {
	version() uint8
	dataplane.Encoder
	// kind is the type of the message in b in 1.3's numbering.
	kind(b []byte) ofp.Type
	decode(b []byte) (ofp.Message, error)
	// decodeInto decodes a packet-in, a flow-removed or a part of a flow
	// stats reply (ofp.FlowStatsPart) into m, reusing its storage.
	decodeInto(b []byte, m ofp.BodyDecoder) error
	// answered tells the wire that m answers request xid. It may narrow
	// m to what the request asked for, and returns the flow-mods the
	// request stood in for, to be sent now.
	answered(xid uint32, m ofp.Message) []ofp.FlowMod
	// roles reports whether the version has controller roles.
	roles() bool
}

// offeredVersions are the versions sdnlb speaks, in the order of the
// HELLO bitmap.
var offeredVersions = []uint8{ofp10.Version, ofp.Version}

// negotiate picks the wire for a switch whose HELLO offered hello with
// header version v, as OpenFlow 1.3.1 §6.3.1 says: the highest version
// in both bitmaps when the switch sent one (bare says it did not), else
// the lower of the two header versions, which both sides then speak.
func negotiate(v uint8, hello *ofp.Hello, bare bool, xids *atomic.Uint32) (wire, error) {
	agreed := min(v, ofp.Version)
	if !bare {
		agreed = 0
		for _, o := range offeredVersions {
			if hello.Supports(o) {
				agreed = o
			}
		}
	}
	switch agreed {
	case ofp.Version:
		return wire13{}, nil
	case ofp10.Version:
		return &wire10{xids: xids, selections: map[uint32]*cookieSelection{}}, nil
	}
	offered := hello.Versions
	if bare {
		offered = []uint8{v}
	}
	return nil, fmt.Errorf("sdnlb speaks OpenFlow %s; the switch offered %s", versionNames(offeredVersions), versionNames(offered))
}

// versionName is how the specification names a wire version.
func versionName(v uint8) string {
	if v >= 1 && v <= 6 {
		return fmt.Sprintf("1.%d", v-1)
	}
	return fmt.Sprintf("version %#x", v)
}

func versionNames(vs []uint8) string {
	s := ""
	for i, v := range vs {
		switch {
		case i == 0:
		case i == len(vs)-1:
			s += " and "
		default:
			s += ", "
		}
		s += versionName(v)
	}
	return s
}

// wire13 is OpenFlow 1.3, the model's own version.
type wire13 struct{}

func (wire13) version() uint8 { return ofp.Version }

func (wire13) Append(b []byte, xid uint32, m ofp.Message) ([]byte, error) {
	return ofp.AppendChecked(b, xid, m)
}

func (wire13) kind(b []byte) ofp.Type { return ofp.Type(b[1]) }

func (wire13) decode(b []byte) (ofp.Message, error) {
	_, m, err := ofp.Decode(b)
	return m, err
}

func (wire13) decodeInto(b []byte, m ofp.BodyDecoder) error {
	_, err := ofp.DecodeInto(b, m)
	return err
}

func (wire13) answered(uint32, ofp.Message) []ofp.FlowMod { return nil }

func (wire13) roles() bool { return true }

// wire10 is OpenFlow 1.0 (package ofp10). A switch that takes Open
// vSwitch's Nicira extensions (nicira, which the handshake probes) gets
// its flow-mods and flow reads through them where plain 1.0 falls short
// (ofp10.AppendNicira): matches on TCP flags, and selecting flows by
// cookie. Plain 1.0 cannot select flows by cookie, which sdnlb's deletes
// and flow stats do: a flow stats request with a cookie mask goes out
// without it and its reply is narrowed to the cookie here; a delete with
// a cookie mask becomes such a request (after a barrier, so that it sees
// every flow-mod sent before), and the flows its reply shows are deleted
// one by one, strictly, except those added again since the request.
type wire10 struct {
	xids   *atomic.Uint32 // the connection's, for the barriers it adds
	nicira atomic.Bool

	mu         sync.Mutex
	selections map[uint32]*cookieSelection // by the xid of the flow stats request standing in
	scratch    []byte
	deletes    atomic.Int32 // selections standing in for a delete: while any, adds are recorded
	pending    atomic.Int32 // len(selections)
}

// cookieSelection is a request that selected flows by cookie, awaiting
// the flows its stand-in request shows.
type cookieSelection struct {
	cookie, mask uint64
	// delete: the request was a delete, of the flow at key if strict.
	delete, strict bool
	key            ofp10.FlowKey
	// readded: flows added since the request, which its reply may still
	// show and which are not to be deleted.
	readded map[ofp10.FlowKey]struct{}
}

func (w *wire10) version() uint8 { return ofp10.Version }

func (w *wire10) roles() bool { return false }

func (w *wire10) kind(b []byte) ofp.Type { return ofp10.Type(b[1]).Model() }

func (w *wire10) decode(b []byte) (ofp.Message, error) {
	_, m, err := ofp10.Decode(b)
	return m, err
}

func (w *wire10) decodeInto(b []byte, m ofp.BodyDecoder) error {
	_, err := ofp10.DecodeInto(b, m)
	return err
}

func (w *wire10) Append(b []byte, xid uint32, m ofp.Message) ([]byte, error) {
	if w.nicira.Load() {
		if _, ok := m.(*ofp.ErrorMsg); !ok {
			return ofp10.AppendNicira(b, xid, m)
		}
	}
	switch m := m.(type) {
	case *ofp.FlowMod:
		return w.appendFlowMod(b, xid, m)
	case ofp.FlowMod:
		return w.appendFlowMod(b, xid, &m)
	case ofp.MultipartRequest:
		return w.appendStatsRequest(b, xid, &m)
	case *ofp.MultipartRequest:
		return w.appendStatsRequest(b, xid, m)
	case *ofp.ErrorMsg:
		return w.appendError(b, xid, m)
	}
	return ofp10.Append(b, xid, m)
}

func (w *wire10) appendFlowMod(b []byte, xid uint32, fm *ofp.FlowMod) ([]byte, error) {
	if fm.CookieMask != 0 && (fm.Command == ofp.FlowDelete || fm.Command == ofp.FlowDeleteStrict) {
		return w.appendDeleteByCookie(b, xid, fm)
	}
	start := len(b)
	b, err := ofp10.Append(b, xid, fm)
	if err == nil && w.deletes.Load() > 0 && (fm.Command == ofp.FlowAdd || fm.Command == ofp.FlowModify || fm.Command == ofp.FlowModifyStrict) {
		key, _ := ofp10.KeyOf(b[start:])
		w.mu.Lock()
		for _, sel := range w.selections {
			if sel.delete {
				sel.readded[key] = struct{}{}
			}
		}
		w.mu.Unlock()
	}
	return b, err
}

// appendDeleteByCookie writes the barrier and the flow stats request that
// stand in for fm.
func (w *wire10) appendDeleteByCookie(b []byte, xid uint32, fm *ofp.FlowMod) ([]byte, error) {
	sel := &cookieSelection{cookie: fm.Cookie, mask: fm.CookieMask, delete: true,
		strict: fm.Command == ofp.FlowDeleteStrict, readded: map[ofp10.FlowKey]struct{}{}}
	if sel.strict {
		w.mu.Lock()
		k, err := w.key(&ofp.FlowMod{Command: ofp.FlowDeleteStrict, Priority: fm.Priority, Match: fm.Match,
			BufferID: ofp.NoBuffer, OutPort: ofp.PortAny, OutGroup: ofp.GroupAny})
		w.mu.Unlock()
		if err != nil {
			return b, err
		}
		sel.key = k
	}
	start := len(b)
	b, _ = ofp10.Append(b, w.xids.Add(1), ofp.BarrierRequest{})
	b, err := ofp10.Append(b, xid, ofp.MultipartRequest{Body: ofp.FlowStatsRequest{
		TableID: fm.TableID, OutPort: fm.OutPort, OutGroup: ofp.GroupAny, Match: fm.Match}})
	if err != nil {
		return b[:start], err
	}
	w.register(xid, sel)
	return b, nil
}

func (w *wire10) appendStatsRequest(b []byte, xid uint32, m *ofp.MultipartRequest) ([]byte, error) {
	var r ofp.FlowStatsRequest
	switch body := m.Body.(type) {
	case ofp.FlowStatsRequest:
		r = body
	case *ofp.FlowStatsRequest:
		r = *body
	default:
		return ofp10.Append(b, xid, m)
	}
	if r.CookieMask == 0 {
		return ofp10.Append(b, xid, m)
	}
	sel := &cookieSelection{cookie: r.Cookie, mask: r.CookieMask}
	r.Cookie, r.CookieMask = 0, 0
	b, err := ofp10.Append(b, xid, ofp.MultipartRequest{Flags: m.Flags, Body: r})
	if err == nil {
		w.register(xid, sel)
	}
	return b, err
}

// appendError writes an error 1.0 has no code for as a bad request of an
// unknown type, which a switch reads as "not understood".
func (w *wire10) appendError(b []byte, xid uint32, e *ofp.ErrorMsg) ([]byte, error) {
	if out, err := ofp10.Append(b, xid, e); err == nil {
		return out, nil
	}
	return ofp10.Append(b, xid, &ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadType, Data: e.Data})
}

func (w *wire10) register(xid uint32, sel *cookieSelection) {
	w.mu.Lock()
	w.selections[xid] = sel
	w.mu.Unlock()
	w.pending.Add(1)
	if sel.delete {
		w.deletes.Add(1)
	}
}

// key is the flow key of fm as encoded. The caller holds w.mu.
func (w *wire10) key(fm *ofp.FlowMod) (ofp10.FlowKey, error) {
	var err error
	if w.scratch, err = ofp10.Append(w.scratch[:0], 0, fm); err != nil {
		return ofp10.FlowKey{}, err
	}
	k, _ := ofp10.KeyOf(w.scratch)
	return k, nil
}

// answered narrows a flow stats reply, the entries it could not read
// too, to the cookie its request selected by, and for a request standing
// in for a delete returns the strict deletes of what it shows. An error,
// the last part or no message (a reply that did not decode) ends the
// request.
func (w *wire10) answered(xid uint32, m ofp.Message) []ofp.FlowMod {
	if w.pending.Load() == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	sel := w.selections[xid]
	if sel == nil {
		return nil
	}
	var flags uint16
	var shown []ofp.FlowStats // what the reply to a delete's stand-in shows
	switch m := m.(type) {
	case *ofp.MultipartReply:
		flags = m.Flags
		if body, ok := m.Body.(ofp.FlowStatsReply); ok {
			selected := ofp.FlowStatsReply{Stats: sel.narrow(body.Stats), Unreadable: sel.narrow(body.Unreadable)}
			m.Body = selected
			if sel.delete { // it answers nothing else
				m.Body, shown = ofp.FlowStatsReply{}, slices.Concat(selected.Stats, selected.Unreadable)
			}
		}
	case *ofp.FlowStatsPart:
		flags = m.Flags
		m.Stats = sel.narrow(m.Stats)
		if sel.delete {
			m.Stats, shown = m.Stats[:0], m.Stats
		}
	}
	if flags&ofp.MultipartReplyMore == 0 {
		delete(w.selections, xid)
		w.pending.Add(-1)
		if sel.delete {
			w.deletes.Add(-1)
		}
	}
	var deletes []ofp.FlowMod
	for _, st := range shown {
		fm := model.StrictDelete(&st)
		k, err := w.key(&fm)
		if _, again := sel.readded[k]; err != nil || again || sel.strict && k != sel.key {
			continue
		}
		deletes = append(deletes, fm)
	}
	return deletes
}

// narrow moves the flows of the cookie sel selects by to the front of
// stats, in their order, and returns them; the others stay past the end,
// so that storage reused for the next part keeps theirs.
func (sel *cookieSelection) narrow(stats []ofp.FlowStats) []ofp.FlowStats {
	n := 0
	for i := range stats {
		if stats[i].Cookie&sel.mask == sel.cookie&sel.mask {
			stats[n], stats[i] = stats[i], stats[n]
			n++
		}
	}
	return stats[:n]
}
