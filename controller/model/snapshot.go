package model

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/controller/sched"
)

// VIPKey is what a new connection is classified by.
type VIPKey struct {
	IP    netip.Addr
	Port  uint16 // 0 for ICMP and ANY
	Proto uint8  // protoAny for ANY
}

// VIP is one enabled VIP in a snapshot.
type VIP struct {
	ID      string
	Num     uint32
	Key     VIPKey
	IP      netip.Addr
	MAC     [6]byte
	Proto   uint8
	Port    uint16
	Limit   int64         // 0: none
	Persist time.Duration // SOURCE_IP persistence; 0: none
	Pool    *Pool         // nil: no pool, or the pool is admin down
	Cnt     *VIPCounters
}

// Pool is one pool in a snapshot.
type Pool struct {
	ID         string
	dispatch   sdnlb.Dispatch
	forwarding sdnlb.Forwarding
	Method     sdnlb.LBMethod
	VIP        *VIP      // nil when the pool serves no enabled VIP
	Members    []*Member // every member, by id, for stats
	ByNum      map[uint32]*Member
	Rotation   []*Member // in rotation; sched indexes into it
	Sched      sched.Scheduler
	SlowStart  time.Duration // 0: none (weights.go)
	// AgentRound is the longest delay of the pool's AGENT monitors: how
	// often its members' agents are asked (weights.go); 0: none.
	AgentRound time.Duration
	// clientPrefix is the length of the prefix an IPv6 client is known
	// by, for SOURCE_IP balancing and persistence.
	clientPrefix int
	hashKey      sdnlb.HashKey // what CONSISTENT_HASH hashes
}

// Member is one member in a snapshot.
type Member struct {
	ID      string
	Num     uint32
	PoolID  string
	address string
	IP      netip.Addr
	Port    uint16 // 0: the VIP's port
	Weight  int    // configured
	// The weighting in force (weights.go): the weight it is scheduled
	// by, its weight in units of the configured ones, and the part of its
	// slow start behind it.
	Share     int
	Effective float64
	RampDone  float64
	Capacity  int64              // 0: none
	Agent     *sdnlb.AgentReport // nil: no agent answered
	// Full: it was at its capacity when last weighed (weights.go), so the
	// switches give it no slot.
	Full bool
	// InRotationSince is when it was added or last came UP: where its slow
	// start starts.
	InRotationSince time.Time
	// draining: admin down or weight 0, whatever its health says.
	draining bool
	Status   sdnlb.MemberStatus
	Since    time.Time // of the health status
	Cnt      *MemberCounters
	// MemberZone: a SWITCH NAT pool shares this CONTROLLER pool member's
	// address and port (see connection.memberZone).
	MemberZone bool
}

// Snapshot is one immutable view of the configuration. Packet-in handling
// reads it through an atomic pointer and never locks.
//
// A member's health changes often and touches little, so a snapshot can be
// patched (patch.go): the patch shares every map keyed by member with the
// snapshot it came from, and replaces only the pools, VIPs and reply punts
// the change touches. Members are therefore found through their pool,
// never in a map of their own that a patch would have to copy.
type Snapshot struct {
	Gen       uint64
	VIPs      map[VIPKey]*VIP
	VIPByID   map[string]*VIP
	VIPByNum  map[uint32]*VIP
	VIPByAddr map[netip.Addr]*VIP // the VIP whose MAC answers ARP for an address
	VIPMACs   map[[6]byte]struct{}
	Pools     map[string]*Pool
	// MemberPools holds the pool of every member by number: what a
	// cookie's member number finds its member by (member).
	MemberPools map[uint32]string
	// The reply flows the switches get: one per address of a member that
	// is not DOWN, in a NAT pool with an enabled VIP. A DOWN member has no
	// flow at all, so nothing points at a failed host. Members sharing an
	// address share the flow, installed for the lowest member number.
	ReplyPunts map[ReplyMatch]ReplyOwner
	// replyPools holds, for every reply match, the pools with a member
	// there, whatever its health: who a health change may hand the
	// match's reply punt to.
	replyPools map[ReplyMatch][]string
	// Patched says what a patch changed from the snapshot of generation
	// patched.parent; nil for a snapshot built from a configuration.
	Patched *PatchScope
	// The addresses of the members of tracked pools, with the numbers of
	// those pools' VIPs: the buckets and member routes that change when a
	// switch learns where an address is, or when a member there changes
	// health.
	TrackedMembers map[netip.Addr][]uint32
	// Counters of every VIP and member the configuration has, enabled or
	// not, so flow-removed accounting finds them whatever their state.
	VIPCnt    map[uint32]*VIPCounters
	MemberCnt map[uint32]*MemberCounters
	// The ids of the VIPs and members VIPCnt and MemberCnt hold, by
	// number.
	VIPIDs, MemberIDs map[uint32]string
}

// Builder turns configurations into snapshots. Across them it keeps the
// cookie number (the configuration's) and the counters of every VIP and
// member id, and each pool's scheduler. Only the goroutine that follows
// the configuration uses it.
type Builder struct {
	gen     uint64
	VIPs    *numbering[VIPCounters]
	Members *numbering[MemberCounters]
	last    *Snapshot // the last one built
	weigher *weigher
	now     func() time.Time // what slow starts are timed by
}

func NewBuilder(now func() time.Time) *Builder {
	return &Builder{VIPs: newNumbering[VIPCounters]("vip"), Members: newNumbering[MemberCounters]("member"),
		last: EmptySnapshot, weigher: NewWeigher(), now: now}
}

// numbering keeps, for the ids of one kind of object, the numbers their
// flows' cookies carry and the counters that outlive snapshots. A number
// is the configuration's (the store gives every VIP and member one at
// creation, so every process and node uses the same); an object without
// one, in a configuration built elsewhere, is numbered after every number
// seen. An id keeps its number for the process's life, and no number
// names two ids or comes back once its id is gone, so a late
// flow-removed of a deleted object finds nothing.
type numbering[C any] struct {
	kind    string
	last    uint32 // the largest number seen or given
	entries map[string]*numbered[C]
	ids     map[uint32]string // the id of each number in entries
}

type numbered[C any] struct {
	num uint32
	cnt *C
}

func newNumbering[C any](kind string) *numbering[C] {
	return &numbering[C]{kind: kind, entries: map[string]*numbered[C]{}, ids: map[uint32]string{}}
}

// Of returns id's number and counters: those it has, else new ones under
// num, the configuration's number (0: none, the next one above every
// number seen). An id whose configuration's number changed is a new object
// that took the id of a deleted one: it gets new counters.
func (n *numbering[C]) Of(id string, num uint32) (*numbered[C], error) {
	if e, ok := n.entries[id]; ok && (num == 0 || num == e.num) {
		return e, nil
	}
	switch {
	case num >= CookieNumberLimit:
		return nil, fmt.Errorf("%s %s: number %d does not fit a cookie", n.kind, id, num)
	case num != 0 && n.ids[num] != "":
		return nil, fmt.Errorf("%s %s: number %d is %s %s's", n.kind, id, num, n.kind, n.ids[num])
	case num == 0 && n.last+1 >= CookieNumberLimit:
		return nil, fmt.Errorf("%s %s: cookie numbers exhausted", n.kind, id)
	case num == 0:
		num = n.last + 1
	}
	n.reserve(num)
	if old, ok := n.entries[id]; ok {
		delete(n.ids, old.num)
	}
	e := &numbered[C]{num: num, cnt: new(C)}
	n.entries[id], n.ids[num] = e, id
	return e, nil
}

// reserve keeps the numbers up to num, the configuration's, from objects
// that have none.
func (n *numbering[C]) reserve(num uint32) {
	if num < CookieNumberLimit {
		n.last = max(n.last, num)
	}
}

// retain forgets every id that is not in keep.
func (n *numbering[C]) retain(keep map[string]bool) {
	for id, e := range n.entries {
		if !keep[id] {
			delete(n.entries, id)
			delete(n.ids, e.num)
		}
	}
}

// Build turns a configuration into a snapshot. Objects it cannot use (a
// bad address, exhausted numbers) are skipped and reported in skipped, so
// one bad row never takes the data path down.
func (b *Builder) Build(cfg *sdnlb.Config) (snap *Snapshot, skipped []error) {
	b.followNumbering(cfg)
	b.gen++
	s := newSnapshot(b.gen)
	skipped = append(skipped, b.addVIPs(s, cfg.VIPs)...)
	agentRounds := map[string]time.Duration{}
	for _, m := range cfg.Monitors {
		if m.Type == sdnlb.MonitorAgent {
			agentRounds[m.ID] = time.Duration(float64(m.Delay) * float64(time.Second))
		}
	}
	for _, p := range cfg.Pools {
		ps := newPool(p)
		for _, id := range p.MonitorIDs {
			ps.AgentRound = max(ps.AgentRound, agentRounds[id])
		}
		s.Pools[p.ID] = ps
	}
	skipped = append(skipped, b.addMembers(s, cfg.Members)...)
	skipped = append(skipped, b.linkPools(s, cfg.Pools)...)
	b.weigher.forget(s.Pools)
	for _, ps := range s.Pools {
		ps.setMemberZones(s)
	}
	s.indexTrackedMembers()
	b.last = s
	b.shareCounters(s)
	return s, skipped
}

// followNumbering drops the numbers and counters of the VIPs and members
// cfg no longer has, and keeps the numbers cfg gives from those it has
// to number itself.
func (b *Builder) followNumbering(cfg *sdnlb.Config) {
	vipIDs := make(map[string]bool, len(cfg.VIPs))
	for _, v := range cfg.VIPs {
		vipIDs[v.ID] = true
		b.VIPs.reserve(v.Num)
	}
	memberIDs := make(map[string]bool, len(cfg.Members))
	for _, m := range cfg.Members {
		memberIDs[m.ID] = true
		b.Members.reserve(m.Num)
	}
	b.VIPs.retain(vipIDs)
	b.Members.retain(memberIDs)
}

// newSnapshot is an empty snapshot of generation gen, every map made.
func newSnapshot(gen uint64) *Snapshot {
	return &Snapshot{
		Gen:         gen,
		VIPs:        map[VIPKey]*VIP{},
		VIPByID:     map[string]*VIP{},
		VIPByNum:    map[uint32]*VIP{},
		VIPByAddr:   map[netip.Addr]*VIP{},
		VIPMACs:     map[[6]byte]struct{}{},
		Pools:       map[string]*Pool{},
		MemberPools: map[uint32]string{},
		ReplyPunts:  map[ReplyMatch]ReplyOwner{},
		replyPools:  map[ReplyMatch][]string{},

		TrackedMembers: map[netip.Addr][]uint32{},
		VIPCnt:         map[uint32]*VIPCounters{},
		MemberCnt:      map[uint32]*MemberCounters{},
		VIPIDs:         map[uint32]string{},
		MemberIDs:      map[uint32]string{},
	}
}

// shareCounters gives s the counters of every VIP and member the
// configuration has, enabled or not, so that flow-removed accounting
// finds them whatever their state.
func (b *Builder) shareCounters(s *Snapshot) {
	for id, e := range b.VIPs.entries {
		s.VIPCnt[e.num], s.VIPIDs[e.num] = e.cnt, id
	}
	for id, e := range b.Members.entries {
		s.MemberCnt[e.num], s.MemberIDs[e.num] = e.cnt, id
	}
}

// addVIPs indexes the enabled VIPs in s, by id so that the lowest id wins
// a key or an address two VIPs claim, and returns those it skipped.
func (b *Builder) addVIPs(s *Snapshot, cfgVIPs []*sdnlb.VIP) (skipped []error) {
	vips := slices.Clone(cfgVIPs)
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
		if _, dup := s.VIPs[vs.Key]; dup {
			skipped = append(skipped, fmt.Errorf("vip %s: another VIP serves %s %s:%d", v.ID, v.Protocol, v.Address, v.Port))
			continue
		}
		s.VIPs[vs.Key] = vs
		s.VIPByID[v.ID] = vs
		s.VIPByNum[vs.Num] = vs
		if _, ok := s.VIPByAddr[vs.Key.IP]; !ok { // lowest id answers ARP
			s.VIPByAddr[vs.Key.IP] = vs
		}
		s.VIPMACs[vs.MAC] = struct{}{}
	}
	return skipped
}

// newPool is p's pool in a snapshot, before it has members or a VIP.
func newPool(p *sdnlb.Pool) *Pool {
	return &Pool{ID: p.ID, dispatch: p.Dispatch, forwarding: p.Forwarding, Method: p.LBMethod,
		ByNum: map[uint32]*Member{}, SlowStart: time.Duration(float64(p.SlowStart) * float64(time.Second)),
		clientPrefix: p.ClientIPv6Prefix, hashKey: p.HashKey}
}

// addMembers puts the members of the pools s has into them, by id, and
// returns those it skipped.
func (b *Builder) addMembers(s *Snapshot, cfgMembers []*sdnlb.Member) (skipped []error) {
	members := slices.Clone(cfgMembers)
	slices.SortFunc(members, func(x, y *sdnlb.Member) int { return cmp.Compare(x.ID, y.ID) })
	for _, m := range members {
		ps, ok := s.Pools[m.PoolID]
		if !ok {
			continue
		}
		ms, err := b.memberState(m)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		b.carryOver(ms)
		s.MemberPools[ms.Num] = ps.ID
		ps.ByNum[ms.Num] = ms
		ps.Members = append(ps.Members, ms)
	}
	return skipped
}

// carryOver takes on to ms what its state in the last snapshot decides:
// a member that goes or was DOWN dispatches nothing more, and one that
// stays in rotation keeps its slow start where it was.
func (b *Builder) carryOver(ms *Member) {
	last := b.last.Member(ms.Num)
	if ms.Status == sdnlb.MemberDown || last != nil && last.Status == sdnlb.MemberDown {
		ms.Cnt.endDispatched()
	}
	if last != nil && InRotation(last.Status) && InRotation(ms.Status) {
		ms.InRotationSince = last.InRotationSince // a monitor attached to a member in rotation brings no slow start
	}
}

// linkPools ties each pool of s to its VIP (the VIP to the pool when the
// pool is up), records its members' reply punts, and gives it its
// rotation and scheduler; it returns the pools whose method it could not
// use.
func (b *Builder) linkPools(s *Snapshot, cfgPools []*sdnlb.Pool) (skipped []error) {
	for _, p := range cfgPools {
		ps := s.Pools[p.ID]
		if v := s.VIPByID[p.VIPID]; v != nil {
			ps.VIP = v
			if p.AdminStateUp {
				v.Pool = ps
			}
		}
		if ps.punts() {
			s.addReplyPunts(ps)
		}
		if err := b.schedule(ps, b.last.Pools[p.ID]); err != nil {
			skipped = append(skipped, err)
		}
	}
	return skipped
}

// addReplyPunts records, for each member of p, a NAT pool with an enabled
// VIP, that p has a member at its reply match, and the member's reply
// punt unless it is DOWN.
func (s *Snapshot) addReplyPunts(p *Pool) {
	for _, m := range p.Members {
		k := replyKeyOf(p.VIP, m)
		if pools := s.replyPools[k]; len(pools) == 0 || pools[len(pools)-1] != p.ID {
			s.replyPools[k] = append(pools, p.ID)
		}
		if m.Status != sdnlb.MemberDown {
			s.addReplyPunt(p.VIP, m, p.Tracked())
		}
	}
}

// indexTrackedMembers records, for each address of a member of a tracked
// pool, the numbers of the VIPs of those pools, in VIP number order.
func (s *Snapshot) indexTrackedMembers() {
	for _, v := range SortedVIPs(s) {
		if !v.Tracked() {
			continue
		}
		for _, m := range v.Pool.Members {
			if vips := s.TrackedMembers[m.IP]; len(vips) == 0 || vips[len(vips)-1] != v.Num {
				s.TrackedMembers[m.IP] = append(vips, v.Num)
			}
		}
	}
}

// punts reports whether p's members' replies need reverse NAT flows: a
// NAT pool with an enabled VIP. DSR members reply from the VIP's address,
// past every flow.
func (p *Pool) punts() bool { return p.VIP != nil && p.forwarding != sdnlb.ForwardingDSR }

// setMemberZones marks the members of a NAT pool whose connections have
// their own flows and whose address and port a tracked pool shares (see
// connection.memberZone).
func (p *Pool) setMemberZones(s *Snapshot) {
	if !p.punts() || p.Tracked() {
		return
	}
	for _, m := range p.Members {
		m.MemberZone = s.ReplyPunts[replyKeyOf(p.VIP, m)].Shared
	}
}

// schedule gives p its rotation, weighted (weights.go), and its
// scheduler. p's members are its own to weigh: a build's, or a patch's
// copies.
func (b *Builder) schedule(p, last *Pool) error {
	p.Rotate()
	if p.weighs() && len(p.Rotation) > 0 {
		p.SetWeights(b.weigher.Weigh(p, b.now(), false))
	}
	return p.pickScheduler(last)
}

// Rotate gives p its rotation: the members that take new connections.
func (p *Pool) Rotate() {
	p.Rotation = make([]*Member, 0, len(p.Members))
	for _, m := range p.Members {
		if InRotation(m.Status) {
			p.Rotation = append(p.Rotation, m)
		}
	}
}

// InRotation reports whether a member of status takes new connections.
func InRotation(status sdnlb.MemberStatus) bool {
	return status == sdnlb.MemberUp || status == sdnlb.MemberNoMonitor
}

// pickScheduler gives p its scheduler: last's when p's method and rotation
// are those of last, the pool in the snapshot before (its turn and its
// tables stay), else a new one that takes its turns on from last's.
func (p *Pool) pickScheduler(last *Pool) error {
	if last != nil && last.Method == p.Method && sameRotation(last.Rotation, p.Rotation) {
		p.Sched = last.Sched
		return nil
	}
	sm := make([]sched.Member, len(p.Rotation))
	for i, m := range p.Rotation {
		sm[i] = sched.Member{Index: i, ID: m.ID, Weight: m.Share}
	}
	var err error
	if p.Sched, err = sched.New(p.Method, sm, rotationLoad(p.Rotation)); err != nil {
		// Only a method this build does not know gets here; keep serving.
		p.Sched, _ = sched.New(sdnlb.RoundRobin, sm, nil)
		err = fmt.Errorf("pool %s: %w; using %s", p.ID, err, sdnlb.RoundRobin)
	}
	if last != nil {
		sched.Continue(p.Sched, last.Sched)
	}
	return err
}

// sameRotation reports whether a and b are the same members, in the same
// order and with the same shares: what a scheduler is built from.
func sameRotation(a, b []*Member) bool {
	return slices.EqualFunc(a, b, func(x, y *Member) bool { return x.ID == y.ID && x.Share == y.Share })
}

// addReplyPunt records that m's replies to clients of v need the reverse
// NAT: from the switch's connection tracker when the switch dispatches
// the pool, else from the controller. When pools of both kinds share the
// member's address and port, its replies meet the tracker first (the
// tracked owner wins) and what the tracker does not know goes on to the
// controller.
func (s *Snapshot) addReplyPunt(v *VIP, m *Member, tracked bool) {
	k := replyKeyOf(v, m)
	n := ReplyOwner{VIPNum: v.Num, MemberNum: m.Num, Tracked: tracked}
	o, ok := s.ReplyPunts[k]
	if !ok {
		s.ReplyPunts[k] = n
		return
	}
	shared := o.Shared || o.Tracked != tracked
	if o.Tracked == tracked && m.Num < o.MemberNum || tracked && !o.Tracked {
		o = n
	}
	o.Shared = shared
	s.ReplyPunts[k] = o
}

// replyKeyOf is what m's replies to clients of v carry.
func replyKeyOf(v *VIP, m *Member) ReplyMatch {
	k := ReplyMatch{IP: m.IP, Port: m.Port, Proto: v.Proto}
	switch {
	case !HasPorts(v.Proto): // ICMP, or every protocol of the member
		k.Port = 0
	case k.Port == 0:
		k.Port = v.Port
	}
	return k
}

func (b *Builder) vipState(v *sdnlb.VIP) (*VIP, error) {
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
	proto, port, err := vipProtocol(v)
	if err != nil {
		return nil, err
	}
	e, err := b.VIPs.Of(v.ID, v.Num)
	if err != nil {
		return nil, err
	}
	vs := &VIP{ID: v.ID, Num: e.num, IP: addr, Proto: proto, Port: port, Cnt: e.cnt}
	copy(vs.MAC[:], hw)
	vs.Key = VIPKey{IP: addr, Port: port, Proto: proto}
	if v.ConnectionLimit > 0 {
		vs.Limit = int64(v.ConnectionLimit)
	}
	if sp := v.SessionPersistence; sp != nil && sp.Type == sdnlb.PersistenceSourceIP && sp.Timeout > 0 {
		vs.Persist = time.Duration(sp.Timeout) * time.Second
	}
	return vs, nil
}

// vipProtocol is the IP protocol and port v's connections are classified
// by: ICMP and ANY VIPs have no port.
func vipProtocol(v *sdnlb.VIP) (proto uint8, port uint16, err error) {
	switch v.Protocol {
	case sdnlb.ProtocolTCP:
		return ofp.IPProtoTCP, uint16(v.Port), nil
	case sdnlb.ProtocolUDP:
		return ofp.IPProtoUDP, uint16(v.Port), nil
	case sdnlb.ProtocolICMP:
		return ofp.IPProtoICMP, 0, nil
	case sdnlb.ProtocolAny:
		return protoAny, 0, nil
	}
	return 0, 0, fmt.Errorf("vip %s: protocol %q", v.ID, v.Protocol)
}

func (b *Builder) memberState(m *sdnlb.Member) (*Member, error) {
	addr, err := netip.ParseAddr(m.Address)
	if err != nil || addr.Zone() != "" || m.Port < 0 || m.Port > 65535 {
		return nil, fmt.Errorf("member %s: bad address %s:%d", m.ID, m.Address, m.Port)
	}
	e, err := b.Members.Of(m.ID, m.Num)
	if err != nil {
		return nil, err
	}
	weight := min(max(m.Weight, sched.MinWeight), sched.MaxWeight)
	ms := &Member{
		ID: m.ID, Num: e.num, PoolID: m.PoolID, address: m.Address,
		IP: addr, Port: uint16(m.Port), draining: !m.AdminStateUp || m.Weight == 0,
		Status: m.EffectiveStatus(), Since: m.Health.Since, Cnt: e.cnt,
		Weight: weight, Share: weight, Effective: float64(weight), RampDone: 1,
		Capacity: int64(m.Capacity), Agent: m.Health.Agent, InRotationSince: m.CreatedAt,
	}
	if ms.Status == sdnlb.MemberUp && m.Health.Since.After(ms.InRotationSince) {
		ms.InRotationSince = m.Health.Since // at a start, the best guess of when it came back UP
	}
	return ms, nil
}

// Member returns the member numbered num, nil when there is none.
func (s *Snapshot) Member(num uint32) *Member {
	if p := s.Pools[s.MemberPools[num]]; p != nil {
		return p.ByNum[num]
	}
	return nil
}

// VIP returns the VIP that serves k: the one on k's port, else one on
// every port of k's address (port 0), else one of every protocol.
func (s *Snapshot) VIP(k VIPKey) *VIP {
	if v := s.VIPs[k]; v != nil {
		return v
	}
	k.Port = 0
	if v := s.VIPs[k]; v != nil {
		return v
	}
	k.Proto = protoAny
	return s.VIPs[k]
}

// Carries reports whether v takes packets of proto.
func (v *VIP) Carries(proto uint8) bool { return v.Proto == proto || v.Proto == protoAny }

// Serves reports whether v takes connections of proto to port: its
// protocol (or any), and for TCP and UDP its port (or every port).
func (v *VIP) Serves(proto uint8, port uint16) bool {
	return v.Carries(proto) && (v.Port == 0 || !HasPorts(proto) || v.Port == port)
}

// Switched reports whether the switch picks the members of v's new
// connections: v has a pool, and the pool SWITCH dispatch.
func (v *VIP) Switched() bool { return v.Pool != nil && v.Pool.Switched() }

// Switched reports whether the switch picks the members of p's new
// connections: SWITCH dispatch, for a VIP without a connection limit, and
// with session persistence only by a client's whole address, which the
// switch hashes (sdnlb.VIP.NeedsController). The store moves a pool that
// serves another VIP to CONTROLLER dispatch; a configuration from
// elsewhere is dispatched the same.
func (p *Pool) Switched() bool {
	return p.dispatch == sdnlb.DispatchSwitch && p.VIP != nil && p.VIP.Limit == 0 &&
		(p.VIP.Persist == 0 || p.clientPrefix <= 0 || p.clientPrefix >= 128)
}

// Tracked reports whether the switch's connection tracker holds v's
// connections, on a switch that has one: v has a pool, and the tracker
// holds the pool's connections.
func (v *VIP) Tracked() bool { return v.Pool != nil && v.Pool.Tracked() }

// Tracked reports whether the switch's connection tracker holds p's
// connections, on a switch that has one (select groups and Nicira
// actions): those of a pool the switch dispatches, and the TCP
// connections of a pool the controller dispatches whose counts need no
// connection's own flows: its VIP has no connection limit and no session
// persistence, and no member a capacity, all of which count connections
// from their flows. The controller picks the member of such a connection
// and commits the connection with it in the packet-out that releases its
// first packet; its later packets and replies stay in the switch, and no
// flow-mod changes the switch's table for it.
func (p *Pool) Tracked() bool {
	if p.Switched() {
		return true
	}
	v := p.VIP
	return v != nil && v.Proto == ofp.IPProtoTCP && v.Limit == 0 && v.Persist == 0 &&
		!slices.ContainsFunc(p.Members, func(m *Member) bool { return m.Capacity > 0 })
}

// Client is who a connection from addr is for p's SOURCE_IP balancing and
// persistence: an IPv6 address's prefix of the pool's length.
func (p *Pool) Client(addr netip.Addr) netip.Addr {
	if addr.Is4() || p.clientPrefix <= 0 || p.clientPrefix >= 128 {
		return addr
	}
	pfx, _ := addr.Prefix(p.clientPrefix)
	return pfx.Addr()
}

// ActiveConns is the cluster's active connections to v: those the
// controllers set up, and the estimate of those the switches dispatched
// to its members in rotation or drained.
func (v *VIP) ActiveConns() uint64 {
	n := uint64(max(0, v.Cnt.ActiveConns()))
	if v.Pool != nil {
		for _, m := range v.Pool.Members {
			if m.Status != sdnlb.MemberDown {
				n += m.Cnt.DispatchedActive()
			}
		}
	}
	return n
}

// DSR reports whether v's pool forwards by direct server return.
func (v *VIP) DSR() bool { return v.Pool != nil && v.Pool.forwarding == sdnlb.ForwardingDSR }

// rotationLoad is the sched.Load of one pool's rotation in one snapshot.
type rotationLoad []*Member

// ActiveConns counts the member's connections the tracker holds too: a
// tracked connection the controller set up counts in its member's routes
// once a poll has read them.
func (l rotationLoad) ActiveConns(i int) int64 { return int64(l[i].Cnt.ActiveConns()) }

func (l rotationLoad) Bytes(i int) uint64 { return l[i].Cnt.bytes() }

// EmptySnapshot is what a switch has right after the handshake purge.
var EmptySnapshot = &Snapshot{}

func SortedVIPs(s *Snapshot) []*VIP {
	out := make([]*VIP, 0, len(s.VIPByID))
	for _, v := range s.VIPByID {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b *VIP) int { return cmp.Compare(a.Num, b.Num) })
	return out
}
