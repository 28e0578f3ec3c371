package controller

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/sched"
)

// vipKey is what a new connection is classified by.
type vipKey struct {
	ip    netip.Addr
	port  uint16 // 0 for ICMP and ANY
	proto uint8  // protoAny for ANY
}

// vipState is one enabled VIP in a snapshot.
type vipState struct {
	id      string
	num     uint32
	key     vipKey
	ip      netip.Addr
	mac     [6]byte
	proto   uint8
	port    uint16
	limit   int64         // 0: none
	persist time.Duration // SOURCE_IP persistence; 0: none
	pool    *poolState    // nil: no pool, or the pool is admin down
	cnt     *vipCounters
}

// poolState is one pool in a snapshot.
type poolState struct {
	id         string
	dispatch   sdnlb.Dispatch
	forwarding sdnlb.Forwarding
	method     sdnlb.LBMethod
	vip        *vipState      // nil when the pool serves no enabled VIP
	members    []*memberState // every member, by id, for stats
	byNum      map[uint32]*memberState
	rotation   []*memberState // in rotation; sched indexes into it
	sched      sched.Scheduler
	slowStart  time.Duration // 0: none (weights.go)
	// clientPrefix is the length of the prefix an IPv6 client is known
	// by, for SOURCE_IP balancing and persistence.
	clientPrefix int
}

// memberState is one member in a snapshot.
type memberState struct {
	id      string
	num     uint32
	poolID  string
	address string
	ip      netip.Addr
	port    uint16 // 0: the VIP's port
	weight  int    // configured
	// The weighting in force (weights.go): the weight it is scheduled
	// by, its weight in units of the configured ones, and the part of its
	// slow start behind it.
	share     int
	effective float64
	rampDone  float64
	capacity  int64              // 0: none
	agent     *sdnlb.AgentReport // nil: no agent answered
	// inRotationSince is when it was added or last came UP: where its slow
	// start starts.
	inRotationSince time.Time
	// draining: admin down or weight 0, whatever its health says.
	draining bool
	status   sdnlb.MemberStatus
	since    time.Time // of the health status
	cnt      *memberCounters
	// memberZone: a SWITCH NAT pool shares this CONTROLLER pool member's
	// address and port (see connection.memberZone).
	memberZone bool
}

// snapshot is one immutable view of the configuration. Packet-in handling
// reads it through an atomic pointer and never locks.
//
// A member's health changes often and touches little, so a snapshot can be
// patched (patch.go): the patch shares every map keyed by member with the
// snapshot it came from, and replaces only the pools, VIPs and reply punts
// the change touches. Members are therefore found through their pool,
// never in a map of their own that a patch would have to copy.
type snapshot struct {
	gen       uint64
	vips      map[vipKey]*vipState
	vipByID   map[string]*vipState
	vipByNum  map[uint32]*vipState
	vipByAddr map[netip.Addr]*vipState // the VIP whose MAC answers ARP for an address
	vipMACs   map[[6]byte]struct{}
	pools     map[string]*poolState
	// memberPools holds the pool of every member by number: what a
	// cookie's member number finds its member by (member).
	memberPools map[uint32]string
	// The reply flows the switches get: one per address of a member that
	// is not DOWN, in a NAT pool with an enabled VIP. A DOWN member has no
	// flow at all, so nothing points at a failed host. Members sharing an
	// address share the flow, installed for the lowest member number.
	replyPunts map[replyMatch]replyOwner
	// replyPools holds, for every reply match, the pools with a member
	// there, whatever its health: who a health change may hand the
	// match's reply punt to.
	replyPools map[replyMatch][]string
	// patched says what a patch changed from the snapshot of generation
	// patched.parent; nil for a snapshot built from a configuration.
	patched *patchScope
	// The addresses of the members of pools the switches dispatch, with
	// the numbers of those pools' VIPs: the buckets and member routes
	// that change when a switch learns where an address is, or when a
	// member there changes health.
	switchedMembers map[netip.Addr][]uint32
	// Counters of every VIP and member the configuration has, enabled or
	// not, so flow-removed accounting finds them whatever their state.
	vipCnt    map[uint32]*vipCounters
	memberCnt map[uint32]*memberCounters
}

// snapshotBuilder turns configurations into snapshots. Across them it
// keeps the cookie number and the counters of every VIP and member id, and
// each pool's scheduler. Only the goroutine that follows the configuration
// uses it.
type snapshotBuilder struct {
	gen     uint64
	vips    *numbering[vipCounters]
	members *numbering[memberCounters]
	last    *snapshot // the last one built
	weigher *weigher
	now     func() time.Time // what slow starts are timed by
}

func newSnapshotBuilder(now func() time.Time) *snapshotBuilder {
	return &snapshotBuilder{vips: newNumbering[vipCounters]("vip"), members: newNumbering[memberCounters]("member"),
		last: emptySnapshot, weigher: newWeigher(), now: now}
}

// numbering gives the ids of one kind of object the numbers their flows'
// cookies carry, and the counters that outlive snapshots. Numbers are
// never reused, so a late flow-removed of a deleted object finds nothing.
type numbering[C any] struct {
	kind    string
	last    uint32
	entries map[string]*numbered[C]
}

type numbered[C any] struct {
	num uint32
	cnt *C
}

func newNumbering[C any](kind string) *numbering[C] {
	return &numbering[C]{kind: kind, entries: map[string]*numbered[C]{}}
}

// of returns id's number and counters, giving it new ones the first time.
func (n *numbering[C]) of(id string) (*numbered[C], error) {
	if e, ok := n.entries[id]; ok {
		return e, nil
	}
	if n.last+1 >= cookieNumberLimit {
		return nil, fmt.Errorf("%s %s: cookie numbers exhausted", n.kind, id)
	}
	n.last++
	e := &numbered[C]{num: n.last, cnt: new(C)}
	n.entries[id] = e
	return e, nil
}

// retain forgets every id that is not in keep.
func (n *numbering[C]) retain(keep map[string]bool) {
	for id := range n.entries {
		if !keep[id] {
			delete(n.entries, id)
		}
	}
}

// build turns a configuration into a snapshot. Objects it cannot use (a
// bad address, exhausted numbers) are skipped and reported in skipped, so
// one bad row never takes the data path down.
func (b *snapshotBuilder) build(cfg *sdnlb.Config) (snap *snapshot, skipped []error) {
	vipIDs := make(map[string]bool, len(cfg.VIPs))
	for _, v := range cfg.VIPs {
		vipIDs[v.ID] = true
	}
	memberIDs := make(map[string]bool, len(cfg.Members))
	for _, m := range cfg.Members {
		memberIDs[m.ID] = true
	}
	b.vips.retain(vipIDs)
	b.members.retain(memberIDs)
	b.gen++
	s := &snapshot{
		gen:         b.gen,
		vips:        map[vipKey]*vipState{},
		vipByID:     map[string]*vipState{},
		vipByNum:    map[uint32]*vipState{},
		vipByAddr:   map[netip.Addr]*vipState{},
		vipMACs:     map[[6]byte]struct{}{},
		pools:       map[string]*poolState{},
		memberPools: map[uint32]string{},
		replyPunts:  map[replyMatch]replyOwner{},
		replyPools:  map[replyMatch][]string{},

		switchedMembers: map[netip.Addr][]uint32{},
		vipCnt:          map[uint32]*vipCounters{},
		memberCnt:       map[uint32]*memberCounters{},
	}
	defer func() {
		for _, e := range b.vips.entries {
			s.vipCnt[e.num] = e.cnt
		}
		for _, e := range b.members.entries {
			s.memberCnt[e.num] = e.cnt
		}
	}()
	vips := slices.Clone(cfg.VIPs)
	slices.SortFunc(vips, func(x, y *sdnlb.VIP) int { return cmp.Compare(x.ID, y.ID) })
	for _, v := range vips {
		if !v.AdminStateUp {
			continue
		}
		vs, err := b.vipState(v)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		if _, dup := s.vips[vs.key]; dup {
			skipped = append(skipped, fmt.Errorf("vip %s: another VIP serves %s %s:%d", v.ID, v.Protocol, v.Address, v.Port))
			continue
		}
		s.vips[vs.key] = vs
		s.vipByID[v.ID] = vs
		s.vipByNum[vs.num] = vs
		if _, ok := s.vipByAddr[vs.key.ip]; !ok { // lowest id answers ARP
			s.vipByAddr[vs.key.ip] = vs
		}
		s.vipMACs[vs.mac] = struct{}{}
	}

	for _, p := range cfg.Pools {
		s.pools[p.ID] = &poolState{id: p.ID, dispatch: p.Dispatch, forwarding: p.Forwarding, method: p.LBMethod,
			byNum: map[uint32]*memberState{}, slowStart: time.Duration(float64(p.SlowStart) * float64(time.Second)),
			clientPrefix: p.ClientIPv6Prefix}
	}
	members := slices.Clone(cfg.Members)
	slices.SortFunc(members, func(x, y *sdnlb.Member) int { return cmp.Compare(x.ID, y.ID) })
	for _, m := range members {
		ps, ok := s.pools[m.PoolID]
		if !ok {
			continue
		}
		ms, err := b.memberState(m)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		last := b.last.member(ms.num)
		if ms.status == sdnlb.MemberDown || last != nil && last.status == sdnlb.MemberDown {
			ms.cnt.endDispatched()
		}
		if last != nil && inRotation(last.status) && inRotation(ms.status) {
			ms.inRotationSince = last.inRotationSince // a monitor attached to a member in rotation brings no slow start
		}
		s.memberPools[ms.num] = ps.id
		ps.byNum[ms.num] = ms
		ps.members = append(ps.members, ms)
	}

	for _, p := range cfg.Pools {
		ps := s.pools[p.ID]
		if v := s.vipByID[p.VIPID]; v != nil {
			ps.vip = v
			if p.AdminStateUp {
				v.pool = ps
			}
		}
		for _, m := range ps.members {
			if ps.punts() {
				k := replyKeyOf(ps.vip, m)
				if pools := s.replyPools[k]; len(pools) == 0 || pools[len(pools)-1] != ps.id {
					s.replyPools[k] = append(pools, ps.id)
				}
				if m.status != sdnlb.MemberDown {
					s.addReplyPunt(ps.vip, m, ps.switched())
				}
			}
		}
		if err := b.schedule(ps, b.last.pools[p.ID]); err != nil {
			skipped = append(skipped, err)
		}
	}
	b.weigher.forget(s.pools)
	for _, ps := range s.pools {
		ps.setMemberZones(s)
	}
	for _, v := range sortedVIPs(s) {
		if !v.switched() {
			continue
		}
		for _, m := range v.pool.members {
			if vips := s.switchedMembers[m.ip]; len(vips) == 0 || vips[len(vips)-1] != v.num {
				s.switchedMembers[m.ip] = append(vips, v.num)
			}
		}
	}
	b.last = s
	return s, skipped
}

// punts reports whether p's members' replies need reverse NAT flows: a
// NAT pool with an enabled VIP. DSR members reply from the VIP's address,
// past every flow.
func (p *poolState) punts() bool { return p.vip != nil && p.forwarding != sdnlb.ForwardingDSR }

// setMemberZones marks the members of a CONTROLLER NAT pool whose address
// and port a SWITCH pool shares (see connection.memberZone).
func (p *poolState) setMemberZones(s *snapshot) {
	if !p.punts() || p.switched() {
		return
	}
	for _, m := range p.members {
		m.memberZone = s.replyPunts[replyKeyOf(p.vip, m)].shared
	}
}

// schedule gives p its rotation, weighted (weights.go), and its
// scheduler. p's members are its own to weigh: a build's, or a patch's
// copies.
func (b *snapshotBuilder) schedule(p, last *poolState) error {
	p.rotate()
	if p.weighs() && len(p.rotation) > 0 {
		p.setWeights(b.weigher.weigh(p, b.now(), false))
	}
	return p.pickScheduler(last)
}

// rotate gives p its rotation: the members that take new connections.
func (p *poolState) rotate() {
	p.rotation = make([]*memberState, 0, len(p.members))
	for _, m := range p.members {
		if inRotation(m.status) {
			p.rotation = append(p.rotation, m)
		}
	}
}

// inRotation reports whether a member of status takes new connections.
func inRotation(status sdnlb.MemberStatus) bool {
	return status == sdnlb.MemberUp || status == sdnlb.MemberNoMonitor
}

// pickScheduler gives p its scheduler: last's when p's method and rotation
// are those of last, the pool in the snapshot before (its turn and its
// tables stay), else a new one that takes its turns on from last's.
func (p *poolState) pickScheduler(last *poolState) error {
	if last != nil && last.method == p.method && sameRotation(last.rotation, p.rotation) {
		p.sched = last.sched
		return nil
	}
	sm := make([]sched.Member, len(p.rotation))
	for i, m := range p.rotation {
		sm[i] = sched.Member{Index: i, ID: m.id, Weight: m.share}
	}
	var err error
	if p.sched, err = sched.New(p.method, sm, rotationLoad(p.rotation)); err != nil {
		// Only a method this build does not know gets here; keep serving.
		p.sched, _ = sched.New(sdnlb.RoundRobin, sm, nil)
		err = fmt.Errorf("pool %s: %w; using %s", p.id, err, sdnlb.RoundRobin)
	}
	if last != nil {
		sched.Continue(p.sched, last.sched)
	}
	return err
}

// sameRotation reports whether a and b are the same members, in the same
// order and with the same shares: what a scheduler is built from.
func sameRotation(a, b []*memberState) bool {
	return slices.EqualFunc(a, b, func(x, y *memberState) bool { return x.id == y.id && x.share == y.share })
}

// addReplyPunt records that m's replies to clients of v need the reverse
// NAT: from the switch's connection tracker when the switch dispatches
// the pool, else from the controller. When pools of both kinds share the
// member's address and port, its replies meet the tracker first (the
// tracked owner wins) and what the tracker does not know goes on to the
// controller.
func (s *snapshot) addReplyPunt(v *vipState, m *memberState, tracked bool) {
	k := replyKeyOf(v, m)
	n := replyOwner{vipNum: v.num, memberNum: m.num, tracked: tracked}
	o, ok := s.replyPunts[k]
	if !ok {
		s.replyPunts[k] = n
		return
	}
	shared := o.shared || o.tracked != tracked
	if o.tracked == tracked && m.num < o.memberNum || tracked && !o.tracked {
		o = n
	}
	o.shared = shared
	s.replyPunts[k] = o
}

// replyKeyOf is what m's replies to clients of v carry.
func replyKeyOf(v *vipState, m *memberState) replyMatch {
	k := replyMatch{ip: m.ip, port: m.port, proto: v.proto}
	switch {
	case !hasPorts(v.proto): // ICMP, or every protocol of the member
		k.port = 0
	case k.port == 0:
		k.port = v.port
	}
	return k
}

func (b *snapshotBuilder) vipState(v *sdnlb.VIP) (*vipState, error) {
	addr, err := netip.ParseAddr(v.Address)
	if err != nil || addr.Zone() != "" || addr.Is4In6() {
		return nil, fmt.Errorf("vip %s: bad address %q", v.ID, v.Address)
	}
	mac := v.MAC
	if mac == "" {
		mac = sdnlb.VIPMAC(v.ID)
	}
	hw, err := net.ParseMAC(mac)
	if err != nil || len(hw) != 6 {
		return nil, fmt.Errorf("vip %s: bad mac %q", v.ID, mac)
	}
	var proto uint8
	port := uint16(v.Port)
	switch v.Protocol {
	case sdnlb.ProtocolTCP:
		proto = protoTCP
	case sdnlb.ProtocolUDP:
		proto = protoUDP
	case sdnlb.ProtocolICMP:
		proto, port = protoICMP, 0
	case sdnlb.ProtocolAny:
		proto, port = protoAny, 0
	default:
		return nil, fmt.Errorf("vip %s: protocol %q", v.ID, v.Protocol)
	}
	e, err := b.vips.of(v.ID)
	if err != nil {
		return nil, err
	}
	vs := &vipState{id: v.ID, num: e.num, ip: addr, proto: proto, port: port, cnt: e.cnt}
	copy(vs.mac[:], hw)
	vs.key = vipKey{ip: addr, port: port, proto: proto}
	if v.ConnectionLimit > 0 {
		vs.limit = int64(v.ConnectionLimit)
	}
	if sp := v.SessionPersistence; sp != nil && sp.Type == sdnlb.PersistenceSourceIP && sp.Timeout > 0 {
		vs.persist = time.Duration(sp.Timeout) * time.Second
	}
	return vs, nil
}

func (b *snapshotBuilder) memberState(m *sdnlb.Member) (*memberState, error) {
	addr, err := netip.ParseAddr(m.Address)
	if err != nil || addr.Zone() != "" || m.Port < 0 || m.Port > 65535 {
		return nil, fmt.Errorf("member %s: bad address %s:%d", m.ID, m.Address, m.Port)
	}
	e, err := b.members.of(m.ID)
	if err != nil {
		return nil, err
	}
	weight := min(max(m.Weight, sched.MinWeight), sched.MaxWeight)
	ms := &memberState{
		id: m.ID, num: e.num, poolID: m.PoolID, address: m.Address,
		ip: addr, port: uint16(m.Port), draining: !m.AdminStateUp || m.Weight == 0,
		status: m.EffectiveStatus(), since: m.Health.Since, cnt: e.cnt,
		weight: weight, share: weight, effective: float64(weight), rampDone: 1,
		capacity: int64(m.Capacity), agent: m.Health.Agent, inRotationSince: m.CreatedAt,
	}
	if ms.status == sdnlb.MemberUp && m.Health.Since.After(ms.inRotationSince) {
		ms.inRotationSince = m.Health.Since // at a start, the best guess of when it came back UP
	}
	return ms, nil
}

// member returns the member numbered num, nil when there is none.
func (s *snapshot) member(num uint32) *memberState {
	if p := s.pools[s.memberPools[num]]; p != nil {
		return p.byNum[num]
	}
	return nil
}

// vip returns the VIP that serves k: the one on k's port, else one on
// every port of k's address (port 0), else one of every protocol.
func (s *snapshot) vip(k vipKey) *vipState {
	if v := s.vips[k]; v != nil {
		return v
	}
	k.port = 0
	if v := s.vips[k]; v != nil {
		return v
	}
	k.proto = protoAny
	return s.vips[k]
}

// carries reports whether v takes packets of proto.
func (v *vipState) carries(proto uint8) bool { return v.proto == proto || v.proto == protoAny }

// serves reports whether v takes connections of proto to port: its
// protocol (or any), and for TCP and UDP its port (or every port).
func (v *vipState) serves(proto uint8, port uint16) bool {
	return v.carries(proto) && (v.port == 0 || !hasPorts(proto) || v.port == port)
}

// switched reports whether the switch picks the members of v's new
// connections: v has a pool, and the pool SWITCH dispatch.
func (v *vipState) switched() bool { return v.pool != nil && v.pool.switched() }

// switched reports whether the switch picks the members of p's new
// connections: SWITCH dispatch, for a VIP without session persistence,
// which only the controller keeps.
func (p *poolState) switched() bool {
	return p.dispatch == sdnlb.DispatchSwitch && p.vip != nil && p.vip.persist == 0
}

// client is who a connection from addr is for p's SOURCE_IP balancing and
// persistence: an IPv6 address's prefix of the pool's length.
func (p *poolState) client(addr netip.Addr) netip.Addr {
	if addr.Is4() || p.clientPrefix <= 0 || p.clientPrefix >= 128 {
		return addr
	}
	pfx, _ := addr.Prefix(p.clientPrefix)
	return pfx.Addr()
}

// dsr reports whether v's pool forwards by direct server return.
func (v *vipState) dsr() bool { return v.pool != nil && v.pool.forwarding == sdnlb.ForwardingDSR }

// rotationLoad is the sched.Load of one pool's rotation in one snapshot.
type rotationLoad []*memberState

func (l rotationLoad) ActiveConns(i int) int64 { return l[i].cnt.active.Load() }
func (l rotationLoad) Bytes(i int) uint64      { return l[i].cnt.bytes() }

// emptySnapshot is what a switch has right after the handshake purge.
var emptySnapshot = &snapshot{}
