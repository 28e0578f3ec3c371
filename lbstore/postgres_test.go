package lbstore_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/lbstore"
)

// mustOpenProcesses opens n DBs on one fresh database, as n sdnlb
// processes sharing it would.
func mustOpenProcesses(tb testing.TB, n int, dsn string) []*lbstore.DB {
	tb.Helper()
	dbs := make([]*lbstore.DB, n)
	for i := range dbs {
		dbs[i] = lbstore.NewDB(dsn)
		dbs[i].EventBuffer = 100_000
		if err := dbs[i].Open(); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { MustCloseDB(tb, dbs[i]) })
	}
	return dbs
}

// TestDB_TwoProcesses writes from two DBs on one database at once: no
// write may fail or be lost, whichever process made it. On SQLite that is
// the file's locking; on PostgreSQL the feed row both take.
func TestDB_TwoProcesses(t *testing.T) {
	ctx := context.Background()
	dbs := mustOpenProcesses(t, 2, lbstore.NewTestDSN(t))
	v := MustCreateVIP(t, ctx, dbs[0], newVIP("10.0.0.100", 80))
	pool := MustCreatePool(t, ctx, dbs[1], newPool(v.ID))

	const perProcess = 60
	var wg sync.WaitGroup
	var mu sync.Mutex
	wantWeight := make(map[string]int)
	errs := make(chan error, 3*2*perProcess)
	for p, db := range dbs {
		members, vips := lbstore.NewMemberService(db), lbstore.NewVIPService(db)
		for i := range perProcess {
			wg.Go(func() {
				m := newMember(pool.ID, fmt.Sprintf("10.%d.%d.%d", p+1, i/250, i%250+1), 80)
				if err := members.CreateMember(ctx, m); err != nil {
					errs <- fmt.Errorf("process %d create %d: %w", p, i, err)
					return
				}
				weight := (p*perProcess+i)%sdnlb.MaxWeight + 1
				if _, err := members.UpdateMember(ctx, m.ID, sdnlb.MemberUpdate{Weight: &weight}); err != nil {
					errs <- fmt.Errorf("process %d update %d: %w", p, i, err)
					return
				}
				mu.Lock()
				wantWeight[m.ID] = weight
				mu.Unlock()
				// Both processes also update one shared VIP.
				if _, err := vips.UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{Description: ptr(fmt.Sprint(p, i))}); err != nil {
					errs <- fmt.Errorf("process %d update vip %d: %w", p, i, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for p, db := range dbs {
		got, err := lbstore.NewMemberService(db).FindMembers(ctx, sdnlb.MemberFilter{PoolID: &pool.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2*perProcess {
			t.Fatalf("process %d reads %d members, want %d", p, len(got), 2*perProcess)
		}
		for _, m := range got {
			if m.Weight != wantWeight[m.ID] {
				t.Fatalf("process %d: member %s weight %d, want %d: a write was lost", p, m.ID, m.Weight, wantWeight[m.ID])
			}
		}
	}
}

// TestDB_TwoProcessesRaceForAnAddress has one process create a VIP and
// the other a member on the same address at once, for many addresses:
// the checks run inside the write transactions, so exactly one of each
// pair gets the address and the other is refused.
func TestDB_TwoProcessesRaceForAnAddress(t *testing.T) {
	ctx := context.Background()
	dbs := mustOpenProcesses(t, 2, lbstore.NewTestDSN(t))
	pool := MustCreatePool(t, ctx, dbs[1], newPool(""))
	vips, members := lbstore.NewVIPService(dbs[0]), lbstore.NewMemberService(dbs[1])

	const n = 40
	vipErrs, memberErrs := make([]error, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		addr := fmt.Sprintf("10.3.0.%d", i+1)
		wg.Go(func() { vipErrs[i] = vips.CreateVIP(ctx, newVIP(addr, 80)) })
		wg.Go(func() { memberErrs[i] = members.CreateMember(ctx, newMember(pool.ID, addr, 8080)) })
	}
	wg.Wait()
	for i := range n {
		vipErr, memberErr := vipErrs[i], memberErrs[i]
		switch {
		case vipErr == nil && memberErr == nil:
			t.Errorf("10.3.0.%d: both the VIP and the member took it", i+1)
		case vipErr != nil && memberErr != nil:
			t.Errorf("10.3.0.%d: neither took it: %v; %v", i+1, vipErr, memberErr)
		case sdnlb.ErrorCode(vipErr) != sdnlb.ECONFLICT && sdnlb.ErrorCode(memberErr) != sdnlb.ECONFLICT:
			t.Errorf("10.3.0.%d: refused with %v%v, want a conflict", i+1, vipErr, memberErr)
		}
	}
}

// TestEventService_AcrossProcesses checks the feed of several processes
// on one PostgreSQL database: each sees every process's writes, all in the
// same order with the same Seq, without gaps, each object's events in the
// order its writes were made.
func TestEventService_AcrossProcesses(t *testing.T) {
	lbstore.SkipUnlessBackend(t, "postgres", "the SQLite feed holds its own process's writes only")
	ctx := context.Background()
	dbs := mustOpenProcesses(t, 3, lbstore.NewTestDSN(t))
	feeds := make([]<-chan sdnlb.Event, len(dbs))
	for i, db := range dbs {
		var cancel func()
		feeds[i], cancel = lbstore.NewEventService(db).Subscribe()
		defer cancel()
	}

	t.Run("Latency", func(t *testing.T) {
		// Notified, not polled: well under the one-second poll.
		start := time.Now()
		v := MustCreateVIP(t, ctx, dbs[0], newVIP("10.9.9.9", 80))
		for i := range feeds {
			assertEvents(t, receiveEvents(t, feeds[i], 1), []sdnlb.Event{{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: v.ID}})
		}
		if d := time.Since(start); d > 800*time.Millisecond {
			t.Fatalf("the other processes saw the write after %v", d)
		}
	})

	t.Run("HealthCarriesStatus", func(t *testing.T) {
		// The others read it from the events table.
		pool := MustCreatePool(t, ctx, dbs[0], newPool(""))
		m := MustCreateMember(t, ctx, dbs[0], newMember(pool.ID, "10.9.9.1", 80))
		for i := range feeds {
			receiveEvents(t, feeds[i], 2)
		}
		since := time.Date(2026, 2, 3, 4, 5, 6, 700000000, time.UTC)
		if err := lbstore.NewMemberHealthService(dbs[0]).SetMemberHealth(ctx, m.ID, sdnlb.MemberHealth{Status: sdnlb.MemberUp, Since: since}); err != nil {
			t.Fatal(err)
		}
		for i := range feeds {
			evs := receiveEvents(t, feeds[i], 1)
			assertEvents(t, evs, []sdnlb.Event{{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: m.ID, Status: sdnlb.MemberUp}})
			if !evs[0].At.Equal(since) {
				t.Errorf("process %d: health event at %v, want %v", i, evs[0].At, since)
			}
		}

		// An agent's report alone, without a change of status, reaches
		// every process with the report.
		agent := &sdnlb.AgentReport{Available: 35, Drain: true, At: since.Add(time.Second + time.Nanosecond)}
		h := sdnlb.MemberHealth{Status: sdnlb.MemberUp, Since: since, Agent: agent}
		if err := lbstore.NewMemberHealthService(dbs[0]).SetMemberHealth(ctx, m.ID, h); err != nil {
			t.Fatal(err)
		}
		for i := range feeds {
			assertEvents(t, receiveEvents(t, feeds[i], 1),
				[]sdnlb.Event{{Kind: sdnlb.KindMember, Op: sdnlb.OpHealth, ID: m.ID, Status: sdnlb.MemberUp, Agent: agent}})
			got := MustLoadConfig(t, ctx, dbs[i]).Members[0]
			if a := got.Health.Agent; got.Status != sdnlb.MemberDraining || a == nil || a.Available != 35 || !a.Drain || !a.At.Equal(agent.At) {
				t.Errorf("process %d loads %s with agent %+v, want DRAINING with %+v", i, got.Status, got.Health.Agent, agent)
			}
		}
	})

	t.Run("Order", func(t *testing.T) {
		const writers, perWriter = 4, 20 // per process
		var wg sync.WaitGroup
		errs := make(chan error, len(dbs)*writers*perWriter)
		for p, db := range dbs {
			vips := lbstore.NewVIPService(db)
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						v := newVIP(fmt.Sprintf("10.%d.%d.%d", p+1, w, i+1), 80)
						v.ID = fmt.Sprintf("p%d-w%d-%02d", p, w, i)
						if err := vips.CreateVIP(ctx, v); err != nil {
							errs <- err
							return
						}
						if _, err := vips.UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{Description: ptr("updated")}); err != nil {
							errs <- err
							return
						}
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}

		const n = 3 * writers * perWriter * 2
		var first []sdnlb.Event
		for p := range feeds {
			got := receiveEvents(t, feeds[p], n)
			assertNoEvent(t, feeds[p])
			base := got[0].Seq - 1
			created := make(map[string]bool)
			for i, e := range got {
				if e.Seq != base+uint64(i)+1 {
					t.Fatalf("process %d: event %d has seq %d after %d", p, i, e.Seq, got[max(i-1, 0)].Seq)
				}
				switch e.Op {
				case sdnlb.OpCreate:
					created[e.ID] = true
				case sdnlb.OpUpdate:
					if !created[e.ID] {
						t.Fatalf("process %d: vip %s updated before it was created", p, e.ID)
					}
				default:
					t.Fatalf("process %d: unexpected %+v", p, e)
				}
			}
			if len(created) != n/2 {
				t.Fatalf("process %d saw %d creates, want %d", p, len(created), n/2)
			}
			if p == 0 {
				first = got
				continue
			}
			for i := range got {
				if a, b := got[i], first[i]; a.Seq != b.Seq || a.Kind != b.Kind || a.Op != b.Op || a.ID != b.ID || !a.At.Equal(b.At) {
					t.Fatalf("event %d: process %d saw %+v, process 0 %+v", i, p, a, b)
				}
			}
		}
		// Every process loads the same configuration at the same Seq.
		for p, db := range dbs {
			cfg := MustLoadConfig(t, ctx, db)
			if cfg.Seq != first[len(first)-1].Seq || len(cfg.VIPs) != n/2+1 {
				t.Fatalf("process %d loads seq %d with %d vips, want %d with %d", p, cfg.Seq, len(cfg.VIPs), first[len(first)-1].Seq, n/2+1)
			}
		}
	})
}

// TestEventService_ResyncOnMissedEvents takes events away from the
// database's feed, as the trim does for a process away too long: the
// process cannot tell what it missed, so its subscribers get a resync.
func TestEventService_ResyncOnMissedEvents(t *testing.T) {
	lbstore.SkipUnlessBackend(t, "postgres", "SQLite's feed never leaves the process")
	ctx := context.Background()
	dsn := lbstore.NewTestDSN(t)
	db := mustOpenProcesses(t, 1, dsn)[0]
	events, cancel := lbstore.NewEventService(db).Subscribe()
	defer cancel()
	v := MustCreateVIP(t, ctx, db, newVIP("10.0.0.1", 80))
	assertEvents(t, receiveEvents(t, events, 1), []sdnlb.Event{{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: v.ID}})

	// Three writes whose events are gone, then one whose event is kept.
	execRaw(t, dsn, `UPDATE feed SET last_seq = last_seq + 3`)
	other := mustOpenProcesses(t, 1, dsn)[0]
	v2 := MustCreateVIP(t, ctx, other, newVIP("10.0.0.2", 80))
	got := receiveEvents(t, events, 1)
	assertEvents(t, got, []sdnlb.Event{{Op: sdnlb.OpResync}})
	if got[0].Seq != 2 {
		t.Fatalf("resync seq %d, want 2 (the first event missed)", got[0].Seq)
	}
	// What came after the gap is in the load the resync asks for.
	if cfg := MustLoadConfig(t, ctx, db); cfg.Seq != 5 || len(cfg.VIPs) != 2 || cfg.VIPs[1].ID != v2.ID && cfg.VIPs[0].ID != v2.ID {
		t.Fatalf("load after the resync: %s", dumpConfig(cfg))
	}
	v3 := MustCreateVIP(t, ctx, db, newVIP("10.0.0.3", 80))
	after := receiveEvents(t, events, 1)
	if after[0].ID == v2.ID && after[0].Seq == 5 {
		// The once-a-second poll saw the gap before v2's commit: v2's
		// event follows the resync, and nothing after it is lost.
		after = receiveEvents(t, events, 1)
	}
	assertEvents(t, after, []sdnlb.Event{{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: v3.ID}})
	if after[0].Seq != 6 {
		t.Fatalf("seq %d after the resync, want 6", after[0].Seq)
	}
}

func TestDB_OpenPostgres(t *testing.T) {
	lbstore.SkipUnlessBackend(t, "postgres", "postgres:// URLs")
	good, err := url.Parse(lbstore.NewTestDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	down := closedPort(t)
	for _, tc := range []struct {
		name, dsn string
		mentions  []string
	}{
		{"ErrUnreachable", "postgres://sdnlb:s3cret@" + down + "/sdnlb", []string{down, "connect", "xxxxx"}},
		{"ErrNoDatabase", "postgresql://" + good.Host + "/nosuchdb?user=postgres", []string{"nosuchdb", "does not exist"}},
		{"ErrBadURL", "postgres://sdnlb:s3cret@127.0.0.1:notaport/sdnlb", []string{"cannot parse"}},
		{"ErrBadParam", "postgres://" + good.Host + "/x?sslmode=sometimes", []string{"sslmode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := lbstore.NewDB(tc.dsn)
			db.ConnectTimeout = 2 * time.Second
			start := time.Now()
			err := db.Open()
			if err == nil {
				db.Close()
				t.Fatal("opened")
			}
			msg := err.Error()
			if strings.ContainsAny(msg, "\n\r") || strings.Contains(msg, "s3cret") || !strings.HasPrefix(msg, "open db postgres") {
				t.Fatalf("want one line that names the database without its password: %q", msg)
			}
			for _, s := range tc.mentions {
				if !strings.Contains(msg, s) {
					t.Fatalf("%q does not mention %q", msg, s)
				}
			}
			t.Log(msg)
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

// closedPort is a loopback address nothing listens on.
func closedPort(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestDB_DatabaseLost cuts a process off its PostgreSQL database and
// brings it back: meanwhile its writes and reads answer unavailable and
// another process goes on writing; afterwards it writes again by itself
// and its feed delivers what the other wrote, in order.
func TestDB_DatabaseLost(t *testing.T) {
	lbstore.SkipUnlessBackend(t, "postgres", "a database over the network")
	ctx := context.Background()
	dsn := lbstore.NewTestDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startProxy(t, u.Host)
	u.Host = proxy.addr
	cut := mustOpenProcesses(t, 1, u.String())[0]
	other := mustOpenProcesses(t, 1, dsn)[0]
	events, cancel := lbstore.NewEventService(cut).Subscribe()
	defer cancel()
	vips := lbstore.NewVIPService(cut)
	v := MustCreateVIP(t, ctx, cut, newVIP("10.0.0.1", 80))
	receiveEvents(t, events, 1)

	proxy.down()
	_, err = vips.FindVIPByID(ctx, v.ID)
	assertError(t, err, sdnlb.EUNAVAILABLE, "", "database is unavailable")
	// Once a configuration was loaded, reads answer from it.
	proxy.up()
	loaded := MustLoadConfig(t, ctx, cut)
	proxy.down()
	err = vips.CreateVIP(ctx, newVIP("10.0.0.2", 80))
	assertError(t, err, sdnlb.EUNAVAILABLE, "", "database is unavailable")
	_, err = vips.UpdateVIP(ctx, v.ID, sdnlb.VIPUpdate{Name: ptr("x")})
	assertError(t, err, sdnlb.EUNAVAILABLE, "")
	if got, err := vips.FindVIPByID(ctx, v.ID); err != nil || !reflect.DeepEqual(got, loaded.VIPs[0]) {
		t.Fatalf("read from memory: %+v, %v", got, err)
	}
	if got, err := vips.FindVIPs(ctx, sdnlb.VIPFilter{Address: ptr("10.0.0.1")}); err != nil || len(got) != 1 {
		t.Fatalf("list from memory: %v, %v", got, err)
	}
	_, err = vips.FindVIPByID(ctx, "nope")
	assertError(t, err, sdnlb.ENOTFOUND, "")
	// LoadConfig does not: it tells the consumers (and /readyz) the truth.
	_, err = lbstore.NewConfigService(cut).LoadConfig(ctx)
	assertError(t, err, sdnlb.EUNAVAILABLE, "")
	// The other process is not affected, and its writes wait in the
	// database for the one cut off.
	var ids []string
	for i := range 3 {
		ids = append(ids, MustCreateVIP(t, ctx, other, newVIP(fmt.Sprintf("10.0.1.%d", i+1), 80)).ID)
	}
	assertNoEvent(t, events)

	proxy.up()
	// The feed reconnects by itself (backoff up to 2 s) and catches up.
	got := receiveEvents(t, events, 3)
	assertEvents(t, got, []sdnlb.Event{
		{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: ids[0]},
		{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: ids[1]},
		{Kind: sdnlb.KindVIP, Op: sdnlb.OpCreate, ID: ids[2]},
	})
	// Writes work again, with no call to reopen anything.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := vips.CreateVIP(ctx, newVIP("10.0.0.2", 80))
		if err == nil {
			break
		}
		if sdnlb.ErrorCode(err) != sdnlb.EUNAVAILABLE || time.Now().After(deadline) {
			t.Fatalf("after the database came back: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	receiveEvents(t, events, 1)
	if cfg := MustLoadConfig(t, ctx, cut); len(cfg.VIPs) != 5 {
		t.Fatalf("after the database came back: %s", dumpConfig(cfg))
	}
}

// proxy forwards TCP connections to a server; down closes them all and
// refuses new ones until up, as a database host that goes away does.
type proxy struct {
	tb     testing.TB
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(tb testing.TB, target string) *proxy {
	tb.Helper()
	p := &proxy{tb: tb, target: target, conns: make(map[net.Conn]struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	tb.Cleanup(func() { p.down(); p.wg.Wait() })
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			if !p.track(c, s) {
				return
			}
			for _, pair := range [][2]net.Conn{{c, s}, {s, c}} {
				p.wg.Go(func() {
					io.Copy(pair[0], pair[1])
					pair[0].Close()
					pair[1].Close()
				})
			}
		}
	})
}

func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) up() {
	p.tb.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.tb.Fatal(err)
	}
	p.serve(ln)
}
