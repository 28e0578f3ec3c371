//go:build e2e && e2e_bench

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// TestSoak runs the three paths side by side for SDNLB_SOAK (default 10
// minutes) under traffic that looks like users': three clients, each over
// every VIP (SWITCH NAT, SWITCH DSR, CONTROLLER) in bursts separated by
// pauses of 30 to 90 s; a member flapping under its HTTP monitor; a
// configuration change through PUT /v1/config every 20 s; two kill -9
// restarts of sdnlb. It reports the failed requests (a failure during a
// DOWN transition of the flapping member is counted apart: sdnlb resets
// the connections a DOWN member still holds), the switch's rows and
// groups against where they started, and sdnlb's RSS one minute after
// its last start and at the end.
func TestSoak(t *testing.T) {
	duration := envDuration(t, "SDNLB_SOAK", 10*time.Minute)
	const (
		natPort, ctlPort, dsrPort = 8080, 8081, 8082
		flapEvery                 = 40 * time.Second
		applyEvery                = 20 * time.Second
		requestGap                = 50 * time.Millisecond // per client in a burst
	)
	sw := NewSwitch(t)
	var clients []*Host
	for i := range 3 {
		clients = append(clients, sw.AddHost(t, "c"+strconv.Itoa(i+1), sw.Addr(byte(1+i))))
	}
	natVIP, dsrVIP, ctlVIP := sw.Addr(100), sw.Addr(101), sw.Addr(102)
	var members []*Host
	var flapping []*HTTPServer
	for i := range 4 {
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		h.HoldVIP(t, dsrVIP)
		name := "srv" + strconv.Itoa(i+1)
		for _, port := range []int{natPort, ctlPort, dsrPort} {
			s := h.ServeHTTP(t, port, name)
			if i == 3 {
				flapping = append(flapping, s)
			}
		}
		members = append(members, h)
	}
	lb := startSDNLB(t)
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	type path struct {
		name     string
		vip      *sdnlb.VIP
		dispatch sdnlb.Dispatch
		fwd      sdnlb.Forwarding
		port     int
		url      string
	}
	paths := []*path{
		{name: "SWITCH NAT", dispatch: sdnlb.DispatchSwitch, fwd: sdnlb.ForwardingNAT, port: natPort},
		{name: "SWITCH DSR", dispatch: sdnlb.DispatchSwitch, fwd: sdnlb.ForwardingDSR},
		{name: "CONTROLLER", dispatch: sdnlb.DispatchController, fwd: sdnlb.ForwardingNAT, port: ctlPort},
	}
	for _, p := range paths {
		switch p.fwd {
		case sdnlb.ForwardingDSR:
			p.vip = lb.MustCreateVIP("dsr", dsrVIP, sdnlb.ProtocolTCP, dsrPort, nil)
		default:
			addr := natVIP
			if p.dispatch == sdnlb.DispatchController {
				addr = ctlVIP
			}
			p.vip = lb.MustCreateVIP(strings.ToLower(strings.Fields(p.name)[0])+strconv.Itoa(p.port), addr, sdnlb.ProtocolTCP, vipPort, nil)
		}
		port := vipPort
		if p.fwd == sdnlb.ForwardingDSR {
			port = dsrPort
		}
		p.url = "http://" + net.JoinHostPort(p.vip.Address, strconv.Itoa(port)) + "/"
		var pool sdnlb.Pool
		lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{"name": p.vip.Name, "vip_id": p.vip.ID, "lb_method": sdnlb.WeightedRoundRobin,
			"protocol": sdnlb.ProtocolTCP, "dispatch": p.dispatch, "forwarding": p.fwd}, http.StatusCreated, &pool)
		for _, h := range members {
			lb.MustCreateMember(&pool, h.IP, p.port)
		}
		lb.MustCreateMonitor(&pool, httpMonitorFields())
		lb.WaitPoolMembers(pool.ID, len(members), 10*time.Second)
	}
	(&lbBed{sw: sw}).waitBuckets(t, 2*len(members), 10*time.Second)
	baseline := flowState(sw)

	var lbMu sync.Mutex // lb is replaced at each restart
	current := func() *sdnlbProc {
		lbMu.Lock()
		defer lbMu.Unlock()
		return lb
	}
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup

	// Clients: bursts over every VIP, then a pause.
	type outcome struct {
		path string
		at   time.Time
		err  error
	}
	var mu sync.Mutex
	var results []outcome
	for i, c := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 42))
			for n := 0; ctx.Err() == nil; {
				burstEnd := time.Now().Add(time.Duration(5+r.IntN(15)) * time.Second)
				for time.Now().Before(burstEnd) && ctx.Err() == nil {
					p := paths[n%len(paths)]
					n++
					_, err := get(c, p.url, clientTimeout)
					mu.Lock()
					results = append(results, outcome{path: p.name, at: time.Now(), err: err})
					mu.Unlock()
					time.Sleep(requestGap)
				}
				select {
				case <-ctx.Done():
				case <-time.After(time.Duration(30+r.IntN(60)) * time.Second):
				}
			}
		})
	}

	// The flapping member: its health checks fail and recover in turns.
	var downs []time.Time
	wg.Go(func() {
		healthy := true
		for {
			select {
			case <-ctx.Done():
				for _, s := range flapping {
					s.SetHealth(http.StatusOK)
				}
				return
			case <-time.After(flapEvery / 2):
			}
			healthy = !healthy
			code := http.StatusOK
			if !healthy {
				code = http.StatusServiceUnavailable
				mu.Lock()
				downs = append(downs, time.Now())
				mu.Unlock()
			}
			for _, s := range flapping {
				s.SetHealth(code)
			}
		}
	})

	// A configuration change every applyEvery: the first member's weight in
	// every pool goes between 1 and 2.
	applies, applyFailures := 0, 0
	wg.Go(func() {
		for weight := 2; ; weight = 3 - weight {
			select {
			case <-ctx.Done():
				return
			case <-time.After(applyEvery):
			}
			if err := applyWeight(current(), members[0].IP, weight); err != nil {
				t.Logf("PUT /v1/config: %v", err)
				applyFailures++
			}
			applies++
		}
	})

	// Two crashes and restarts, and sdnlb's RSS one minute after each start.
	var rssMinute, rssEnd int64
	for _, at := range []time.Duration{duration / 3, 2 * duration / 3} {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(at))):
		}
		lbMu.Lock()
		db := lb.DB
		lb.Kill()
		lb = startSDNLB(t, "--db", db)
		lb.Connect(sw)
		lbMu.Unlock()
	}
	restarted := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		rssMinute, _ = current().RSS()
	}
	<-ctx.Done()
	rssEnd, _ = current().RSS()
	wg.Wait()

	// The switch back where it started once the CONTROLLER connections idled
	// out and the flapping member is UP again.
	settled := time.Now().Add(time.Minute)
	var state []string
	for state = flowState(sw); !sameRows(baseline, state) && time.Now().Before(settled); state = flowState(sw) {
		time.Sleep(time.Second)
	}

	mu.Lock()
	defer mu.Unlock()
	failed, atDown := map[string]int{}, map[string]int{}
	total := map[string]int{}
	for _, r := range results {
		total[r.path]++
		if r.err == nil {
			continue
		}
		nearDown := false
		for _, d := range downs {
			if r.at.After(d) && r.at.Sub(d) < 3*clientTimeout {
				nearDown = true
			}
		}
		if nearDown {
			atDown[r.path]++
		} else {
			failed[r.path]++
			t.Logf("%s: failed at %v: %v", r.path, r.at.Sub(start).Round(time.Second), r.err)
		}
	}
	for _, p := range paths {
		t.Logf("%s: %d requests, %d failed, %d more failed during a DOWN transition", p.name, total[p.name], failed[p.name], atDown[p.name])
		if failed[p.name] > 0 {
			t.Errorf("%s: %d requests failed outside DOWN transitions", p.name, failed[p.name])
		}
	}
	t.Logf("%d configuration changes (%d refused), %d DOWN transitions, 2 restarts, %v", applies, applyFailures, len(downs), duration)
	if !sameRows(baseline, state) {
		t.Errorf("the switch's rows and groups differ from where they started:\nbefore:\n%s\nafter:\n%s",
			strings.Join(baseline, "\n"), strings.Join(state, "\n"))
	} else {
		t.Logf("the switch's %d rows and groups are back where they started", len(state))
	}
	if rssMinute > 0 {
		t.Logf("sdnlb's RSS: %.1f MiB a minute after its last start (%v), %.1f MiB at the end (%.2f×)",
			float64(rssMinute)/(1<<20), restarted.Sub(start).Round(time.Second), float64(rssEnd)/(1<<20), float64(rssEnd)/float64(rssMinute))
	}
}

// sameRows reports whether two flowState snapshots hold the same rows and
// as many groups: the groups' buckets follow the weights applyWeight
// changes.
func sameRows(a, b []string) bool {
	split := func(s []string) (rows []string, groups int) {
		for _, l := range s {
			if strings.HasPrefix(l, "group:G") {
				groups++
			} else {
				rows = append(rows, l)
			}
		}
		return rows, groups
	}
	ra, ga := split(a)
	rb, gb := split(b)
	return ga == gb && slices.Equal(ra, rb)
}

// applyWeight sets the weight of every member at address through PUT
// /v1/config: the whole configuration read, changed and sent back.
func applyWeight(lb *sdnlbProc, address string, weight int) error {
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	status, data, err := lb.Do(ctx, http.MethodGet, "/v1/config", nil)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("GET /v1/config: %d %v", status, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return err
	}
	members, _ := doc["members"].([]any)
	for _, m := range members {
		if m, ok := m.(map[string]any); ok && m["address"] == address {
			m["weight"] = weight
		}
	}
	status, data, err = lb.Do(ctx, http.MethodPut, "/v1/config", doc)
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("PUT /v1/config: %d %v %s", status, err, data)
	}
	return nil
}
