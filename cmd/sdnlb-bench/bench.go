package main

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sdnlb/sdnlb/controller/ofp"
)

// member is one pool member as the fake switches present it.
type member struct {
	ip     netip.Addr
	port   uint16
	mac    [6]byte
	ofPort uint32 // the switch port it sits behind, on every switch
}

// target is the VIP under test and its members, all of the VIP's family.
type target struct {
	vip     netip.Addr
	vipPort uint16
	members []member
}

func newTarget(vip netip.AddrPort, firstMember netip.Addr, n int) target {
	t := target{vip: vip.Addr(), vipPort: vip.Port()}
	ip := firstMember
	for i := range n {
		b := ip.AsSlice()[ip.BitLen()/8-3:]
		t.members = append(t.members, member{
			ip: ip, port: vip.Port(), ofPort: memberPort0 + uint32(i),
			mac: [6]byte{0x02, 0x5d, 0xb0, b[0], b[1], b[2]},
		})
		ip = ip.Next()
	}
	return t
}

// client is the address of client number v, in the VIP's family.
func (t *target) client(v uint32) netip.Addr { return clientIP(t.vip, v) }

func (t *target) memberIndex(ip netip.Addr) int {
	for i := range t.members {
		if t.members[i].ip == ip {
			return i
		}
	}
	return -1
}

// checkRewrite returns the member a client→VIP rewrite sends to, or -1
// when it is not the NAT rewrite DESIGN.md asks for: eth_dst and ipv4_dst
// (ipv6_dst) of a member, its port (a set-field may be left out when it
// equals the VIP's), one output, to the member's switch port.
func (t *target) checkRewrite(rw *rewrite) int {
	if !rw.set(oxmIPDst(t.vip)) || !rw.set(oxmEthDst) || rw.outputs != 1 {
		return -1
	}
	i := t.memberIndex(rw.ipDst)
	if i < 0 {
		return -1
	}
	m := &t.members[i]
	portOK := rw.set(oxmTCPDst) && rw.tcpDst == m.port || !rw.set(oxmTCPDst) && m.port == t.vipPort
	if !portOK || rw.outPort != m.ofPort || rw.ethDst != m.mac {
		return -1
	}
	return i
}

// run is the state every fake switch of one benchmark shares.
type run struct {
	of      dialect // the OpenFlow version the switches speak
	t       target
	window  int // setups each switch keeps in flight; 0 in latency mode
	timeout time.Duration
	start   time.Time

	sending   atomic.Bool
	stopAt    atomic.Int64 // end of the measured interval (run.now), 0 before
	budget    atomic.Int64 // setups still allowed to start
	resolvedN atomic.Int64 // measured setups resolved (completed or failed)
	count     int64        // 0: no count limit
	countDone chan struct{}
	countOnce sync.Once

	fabric *fabric // the links of a topology run, nil otherwise
}

func (r *run) now() int64 { return int64(time.Since(r.start)) }

func (r *run) takeBudget() bool { return r.budget.Add(-1) >= 0 }

func (r *run) resolved(n int64) {
	if r.count > 0 && r.resolvedN.Add(n) >= r.count {
		r.countOnce.Do(func() { close(r.countDone) })
	}
}

// ringSize holds every setup that can be in flight before it times out,
// within maxRingTotal slots over all switches; a setup still unanswered
// when its slot comes round again counts as timed out.
func ringSize(window int, ratePerSwitch float64, timeout time.Duration, switches int) int {
	need := max(2*window, int(min(2*ratePerSwitch*timeout.Seconds(), maxRingTotal/float64(switches))), 1024)
	return 1 << bits.Len(uint(need-1))
}

// maxRingTotal bounds the memory of the in-flight rings (16 bytes a slot).
const maxRingTotal = 1 << 22

// warmupTimeout bounds each step of the warm-up.
const warmupTimeout = 10 * time.Second

// execute plays cfg.switches switches against the controller at addr:
// connects them, waits in a topology run until p shows every link, warms
// them up (checking the first setup of each), runs the load and measures.
// memStats adds the process' allocations per setup; p is nil unless the
// run has a topology.
func execute(ctx context.Context, cfg *config, addr string, memStats bool, p probe) (*Result, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &run{
		of:        cfg.of,
		t:         newTarget(cfg.vip, cfg.firstMember, cfg.members),
		window:    cfg.window,
		timeout:   cfg.timeout,
		start:     time.Now(),
		count:     int64(cfg.count),
		countDone: make(chan struct{}),
	}
	r.budget.Store(math.MaxInt64)
	if cfg.topology != "" {
		r.fabric = newFabric(newWiring(cfg.topology, cfg.switches, cfg.spines))
	}
	perSwitchRate := cfg.rate / float64(cfg.switches)
	ring := ringSize(cfg.window, perSwitchRate, cfg.timeout, cfg.switches)

	var readers sync.WaitGroup
	var sws []*fakeSwitch
	defer func() {
		for _, s := range sws {
			s.close()
		}
		readers.Wait()
		if r.fabric != nil {
			r.fabric.wg.Wait() // no reader is left to start a delivery
		}
	}()
	for i := range cfg.switches {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return nil, fmt.Errorf("connect switch %d: %w", i, err)
		}
		s := newFakeSwitch(r, i, conn, ring)
		sws = append(sws, s)
		if r.fabric != nil {
			r.fabric.attach(s)
		}
		s.mu.Lock()
		s.send(0, &ofp.Hello{Versions: []uint8{r.of.version()}})
		err = s.flush()
		s.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("switch %d: hello: %w", i, err)
		}
		readers.Go(func() {
			if err := s.readLoop(); err != nil {
				cancel(err)
			}
		})
	}

	var topo *TopologyResult
	if r.fabric != nil {
		var err error
		if topo, err = r.fabric.discover(ctx, cfg, p, time.Now()); err != nil {
			return nil, err
		}
	}

	checks := make([]Check, len(sws))
	if err := eachSwitch(ctx, sws, func(ctx context.Context, s *fakeSwitch) (err error) {
		checks[s.idx], err = s.warmUp(ctx)
		return err
	}); err != nil {
		return nil, err
	}
	for _, s := range sws {
		s.mu.Lock()
		s.recordFlows, s.warmFlows = false, nil
		s.mu.Unlock()
	}

	done := make(chan struct{})
	var drivers sync.WaitGroup
	defer drivers.Wait()
	defer close(done)
	for _, s := range sws {
		if cfg.rate > 0 {
			drivers.Go(func() { s.pace(done, perSwitchRate, len(sws), cancel) })
		}
		drivers.Go(func() { s.sweepEvery(done, cancel) })
	}

	if cfg.warmup > 0 {
		r.startLoad(sws)
		if err := sleepCtx(ctx, cfg.warmup); err != nil {
			return nil, err
		}
	}

	res, err := r.measure(ctx, cfg, sws, memStats)
	if err != nil {
		return nil, err
	}
	res.Checks = checks
	if topo != nil {
		if err := r.fabric.afterLoad(ctx, p, topo); err != nil {
			return nil, err
		}
		res.Topology = topo
	}
	return res, nil
}

// measure runs the measured interval on switches that are warm and
// returns its figures. memStats adds the process' allocations per setup,
// which only mean something when the controller runs in this process.
func (r *run) measure(ctx context.Context, cfg *config, sws []*fakeSwitch, memStats bool) (*Result, error) {
	// Pause and let the warm-up load drain before measuring, so that every
	// setup sent and every flow-mod received from here on is measured.
	r.sending.Store(false)
	if err := drain(ctx, sws, r.timeout); err != nil {
		return nil, err
	}
	var ms0 runtime.MemStats
	if memStats {
		runtime.ReadMemStats(&ms0)
	}
	for _, s := range sws {
		s.mu.Lock()
		s.measuring, s.measureFrom = true, s.next
		s.stats = swStats{perMember: make([]uint64, len(r.t.members))}
		s.hist.reset()
		s.mu.Unlock()
	}
	if cfg.count > 0 {
		r.budget.Store(int64(cfg.count))
	}
	t0 := r.now()
	r.startLoad(sws)

	timer := time.NewTimer(cfg.duration)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-timer.C:
	case <-r.countDone:
	}
	// Completions after stopAt are counted as drained, not in the rate.
	stopAt := r.now()
	r.stopAt.Store(stopAt)
	r.sending.Store(false)
	elapsed := time.Duration(stopAt - t0)
	if err := drain(ctx, sws, r.timeout); err != nil {
		return nil, err
	}
	for _, s := range sws {
		s.mu.Lock()
		s.expireAll()
		s.mu.Unlock()
	}
	var ms1 runtime.MemStats
	if memStats {
		runtime.ReadMemStats(&ms1) // before collect allocates the result
	}

	res := collect(cfg, sws, elapsed)
	if memStats {
		if n := float64(res.Setups + res.Drained); n > 0 {
			allocs := float64(ms1.Mallocs-ms0.Mallocs) / n
			bytes := float64(ms1.TotalAlloc-ms0.TotalAlloc) / n
			res.AllocsPerSetup, res.BytesPerSetup = &allocs, &bytes
		}
	}
	return res, nil
}

// eachSwitch runs f for every switch at once; the first error cancels
// the others' ctx and is returned.
func eachSwitch(ctx context.Context, sws []*fakeSwitch, f func(context.Context, *fakeSwitch) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, s := range sws {
		wg.Go(func() {
			if err := f(ctx, s); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// startLoad lets the switches send; in throughput mode it fills each
// switch's window, in latency mode the pacers take over.
func (r *run) startLoad(sws []*fakeSwitch) {
	r.sending.Store(true)
	if r.window == 0 {
		return
	}
	for _, s := range sws {
		s.mu.Lock()
		now := r.now()
		for s.outstanding < r.window && s.sendSetup(now) {
		}
		err := s.flush()
		s.mu.Unlock()
		if err != nil {
			s.conn.Close() // the reader reports it
		}
	}
}

// drain waits until no setup is in flight, at most one timeout.
func drain(ctx context.Context, sws []*fakeSwitch, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		inFlight := 0
		for _, s := range sws {
			s.mu.Lock()
			inFlight += s.outstanding
			s.mu.Unlock()
		}
		if inFlight == 0 {
			return nil
		}
		if err := sleepCtx(ctx, 2*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// expireAll counts whatever is still in flight as timed out.
func (s *fakeSwitch) expireAll() {
	for ; s.oldest < s.next; s.oldest++ {
		if slot := &s.ring[s.oldest&s.mask]; slot.inFlight(s.oldest) {
			s.expire(slot)
		}
	}
}

// sweepEvery expires late setups (and refills the window) until done.
func (s *fakeSwitch) sweepEvery(done <-chan struct{}, fail func(error)) {
	t := time.NewTicker(max(s.run.timeout/4, 5*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		s.sweep(s.run.now())
		err := s.flush()
		s.mu.Unlock()
		if err != nil {
			fail(fmt.Errorf("switch %d: %w", s.idx, err))
			return
		}
	}
}

// maxBurst bounds how many overdue setups a pacer sends at once.
const maxBurst = 256

// paceStep is the shortest sleep of a pacer: below it, setups that fall
// due together go out in one write. Waking once per setup would make the
// tool's own timer wake-ups and write calls compete with the controller.
const paceStep = 200 * time.Microsecond

// pace sends setups at rate per second, open loop: each is timestamped
// when it is written, whatever the controller's backlog. The switches'
// schedules are staggered so their batches do not coincide.
func (s *fakeSwitch) pace(done <-chan struct{}, rate float64, switches int, fail func(error)) {
	interval := int64(float64(time.Second) / rate)
	next := s.run.now() + min(interval, int64(paceStep))*int64(s.idx)/int64(switches)
	t := time.NewTimer(time.Duration(next - s.run.now()))
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		s.mu.Lock()
		now := s.run.now()
		if !s.run.sending.Load() {
			next = now + interval // no debt builds up while paused
		}
		for k := 0; next <= now && k < maxBurst; k++ {
			s.sendSetup(now)
			next += interval
		}
		err := s.flush()
		s.mu.Unlock()
		if err != nil {
			fail(fmt.Errorf("switch %d: %w", s.idx, err))
			return
		}
		t.Reset(time.Duration(max(next-s.run.now(), int64(paceStep))))
	}
}
