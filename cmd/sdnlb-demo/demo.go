package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/internal/testbed"
)

const (
	vipPort    = 80
	memberPort = 8080
	nMembers   = 3
	nClients   = 2
	// victim is the index of the member the demo fails over (srv2).
	victim = 1

	statusTimeout  = 20 * time.Second
	requestTimeout = 2 * time.Second
)

// demo is one run of the scenario. Its steps call the bed, which stops the
// run through r.Fatal on any error.
type demo struct {
	cfg config
	r   *runner
	out io.Writer
	ctx context.Context

	sw      *testbed.Switch
	lb      *testbed.SDNLB
	clients []*testbed.Host
	hosts   []*testbed.Host
	servers []*testbed.HTTPServer
	members []*sdnlb.Member
	vip     *sdnlb.VIP
	url     string
}

func (d *demo) printf(format string, args ...any) {
	fmt.Fprintf(d.out, format, args...)
}

// checkpoint ends the run when the user asked to stop.
func (d *demo) checkpoint() {
	if d.ctx.Err() != nil {
		d.r.stop(errInterrupted)
	}
}

func (d *demo) run(stdin io.Reader) {
	d.build()
	d.checkpoint()
	d.configure()
	d.checkpoint()
	d.waitAll(sdnlb.MemberUp)
	d.spread("traffic through the VIP", d.servers)
	d.checkpoint()
	d.failover()
	d.checkpoint()
	d.instructions()
	if d.cfg.check {
		d.printf("check passed: the VIP answered from every member, and %s failed over and back\n", d.servers[victim].Name)
		return
	}
	d.interact(stdin)
}

// build brings up the bridge, the hosts, their servers and sdnlb.
func (d *demo) build() {
	r := d.r
	bin := d.cfg.sdnlb
	if bin == "" {
		d.printf("building sdnlb (go build ./cmd/sdnlb)…\n")
		var err error
		if bin, err = testbed.Build(d.ctx, r.TempDir(), "./cmd/sdnlb", false); err != nil {
			r.Fatalf("%v", err)
		}
	}
	if other := testbed.OtherUserspaceOVS(); other != "" {
		r.Fatalf("%s", other)
	}
	d.sw = testbed.NewSwitch(r)
	d.printf("bridge %s (private ovsdb-server and ovs-vswitchd, userspace datapath) on %s\n", d.sw.Name, d.sw.Subnet)
	for i := 0; i < nMembers; i++ {
		n := strconv.Itoa(i + 1)
		h := d.sw.AddHost(r, "m"+n, d.sw.Addr(byte(10+i+1)))
		d.hosts = append(d.hosts, h)
		d.servers = append(d.servers, h.ServeHTTP(r, memberPort, "srv"+n))
		d.printf("  member host m%s  %-12s namespace %s, HTTP server srv%s on :%d\n", n, h.IP, h.NetNS, n, memberPort)
	}
	for i := 0; i < nClients; i++ {
		n := strconv.Itoa(i + 1)
		h := d.sw.AddHost(r, "c"+n, d.sw.Addr(byte(i+1)))
		d.clients = append(d.clients, h)
		d.printf("  client host c%s  %-12s namespace %s\n", n, h.IP, h.NetNS)
	}
	d.lb = testbed.StartSDNLB(r, bin, "--api-addr", d.cfg.apiAddr, "--openflow-addr", d.cfg.ofAddr)
	d.printf("sdnlb: API and dashboard on http://%s/, OpenFlow on %s\n", d.lb.APIAddr, d.lb.OpenFlowAddr)
	d.lb.Connect(d.sw)
	d.printf("the bridge is connected to sdnlb\n")
}

// configure creates the VIP, the pool, the members and the monitor, with
// ids of our choosing so that they are easy to type.
func (d *demo) configure() {
	lb := d.lb
	vipAddr := d.sw.Addr(100)
	d.vip = new(sdnlb.VIP)
	lb.MustAPI(http.MethodPost, "/v1/vips", map[string]any{
		"id": "web", "name": "web", "address": vipAddr, "protocol": "TCP", "port": vipPort,
	}, http.StatusCreated, d.vip)
	d.printf("POST /v1/vips          VIP web %s:%d (TCP)\n", vipAddr, vipPort)
	lb.MustAPI(http.MethodPost, "/v1/pools", map[string]any{
		"id": "web", "name": "web", "vip_id": "web", "lb_method": "ROUND_ROBIN",
	}, http.StatusCreated, nil)
	d.printf("POST /v1/pools         pool web, ROUND_ROBIN, dispatched by the switch\n")
	for i, h := range d.hosts {
		var m sdnlb.Member
		lb.MustAPI(http.MethodPost, "/v1/members", map[string]any{
			"id": d.servers[i].Name, "pool_id": "web", "address": h.IP, "port": memberPort,
		}, http.StatusCreated, &m)
		d.members = append(d.members, &m)
		d.printf("POST /v1/members       member %s %s:%d\n", m.ID, h.IP, memberPort)
	}
	lb.MustAPI(http.MethodPost, "/v1/monitors", map[string]any{
		"id": "http", "name": "http", "type": "HTTP", "delay": 1, "timeout": 0.5,
		"max_retries": 2, "rise": 2, "url_path": "/health", "expected_codes": "200",
	}, http.StatusCreated, nil)
	if status, body := lb.API(http.MethodPost, "/v1/pools/web/monitors", map[string]any{"monitor_id": "http"}); status/100 != 2 {
		d.r.Fatalf("POST /v1/pools/web/monitors: status %d: %s", status, body)
	}
	d.printf("POST /v1/monitors      monitor http: GET /health every 1 s, DOWN after 2 failures, UP after 2 passes\n")
	d.url = fmt.Sprintf("http://%s/", d.vip.Address)
}

// waitAll waits until every member has status want.
func (d *demo) waitAll(want sdnlb.MemberStatus) {
	start := time.Now()
	for _, m := range d.members {
		d.waitStatus(m, want)
	}
	d.printf("every member is %s (%s)\n", want, since(start))
}

// waitStatus polls a member until it has status want, stopping early on
// Ctrl-C.
func (d *demo) waitStatus(m *sdnlb.Member, want sdnlb.MemberStatus) {
	deadline := time.Now().Add(statusTimeout)
	var got sdnlb.MemberStatus
	for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
		d.checkpoint()
		if got = d.lb.Member(m.ID).Status; got == want {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.r.Fatalf("member %s is %s after %v, want %s", m.ID, got, statusTimeout, want)
}

// spread sends requests to the VIP from the clients, in turn, until every
// server in want has answered (at least 12 requests, at most 90), and
// prints who answered. A server outside want answering is an error.
func (d *demo) spread(what string, want []*testbed.HTTPServer) {
	counts := map[string]int{}
	missing := func() bool {
		for _, s := range want {
			if counts[s.Name] == 0 {
				return true
			}
		}
		return false
	}
	var failed int
	var lastErr error
	for i := 0; i < 90 && (i < 12 || missing()); i++ {
		d.checkpoint()
		ctx, cancel := context.WithTimeout(d.ctx, requestTimeout)
		body, err := d.clients[i%len(d.clients)].HTTPGet(ctx, d.url)
		cancel()
		if err != nil {
			failed++
			lastErr = err
			continue
		}
		counts[body]++
	}
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	sort.Strings(names)
	var parts []string
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s=%d", name, counts[name]))
	}
	d.printf("%s: %s", what, strings.Join(parts, " "))
	if failed > 0 {
		d.printf(" (%d failed, last: %v)", failed, lastErr)
	}
	d.printf("\n")
	if missing() {
		d.r.Fatalf("%s: not every member answered (%s)", what, strings.Join(parts, " "))
	}
	for _, name := range names {
		if !slices.ContainsFunc(want, func(s *testbed.HTTPServer) bool { return s.Name == name }) {
			d.r.Fatalf("%s: %s answered but should be out of rotation", what, name)
		}
	}
}

// failover stops the victim's server, waits for the monitor to take it
// out of rotation, shows the traffic skipping it, and brings it back.
func (d *demo) failover() {
	s, m := d.servers[victim], d.members[victim]
	d.printf("\nfailover: stopping %s's HTTP server on %s…\n", s.Name, s.Addr)
	s.Stop()
	start := time.Now()
	d.waitStatus(m, sdnlb.MemberDown)
	d.printf("member %s is DOWN after %s: the monitor took it out of rotation\n", m.ID, since(start))
	var rest []*testbed.HTTPServer
	for i, o := range d.servers {
		if i != victim {
			rest = append(rest, o)
		}
	}
	d.spread("traffic while "+s.Name+" is down", rest)
	d.printf("restarting %s…\n", s.Name)
	s.Restart(d.r)
	start = time.Now()
	d.waitStatus(m, sdnlb.MemberUp)
	d.printf("member %s is UP again after %s\n", m.ID, since(start))
	d.spread("traffic with "+s.Name+" back", d.servers)
}

func (d *demo) instructions() {
	api := "http://" + d.lb.APIAddr
	d.printf(`
Open the dashboard:  %s/
Swagger UI:          %s/swagger/
From a client host, through the VIP (run in another shell, as root):
  ip netns exec %s curl -s %s
Drain srv3 (new connections skip it), and undo it:
  curl -s -XPATCH %s/v1/members/srv3 -H 'Content-Type: application/json' -d '{"admin_state_up":false}'
  curl -s -XPATCH %s/v1/members/srv3 -H 'Content-Type: application/json' -d '{"admin_state_up":true}'
`, api, api, d.clients[0].NetNS, d.url, api, api)
}

// interact fails the victim over and back on every Enter, until Ctrl-C.
func (d *demo) interact(stdin io.Reader) {
	s, m := d.servers[victim], d.members[victim]
	d.printf("\nPress Enter to stop %s (and again to start it), Ctrl-C to tear everything down.\n", s.Name)
	lines := waitEnter(stdin)
	down := false
	for {
		select {
		case <-d.ctx.Done():
			d.r.stop(errInterrupted)
		case _, ok := <-lines:
			if !ok {
				lines = nil // stdin closed: wait for Ctrl-C only
				continue
			}
			if down {
				s.Restart(d.r)
				d.printf("%s started; the monitor brings member %s UP within ~3 s\n", s.Name, m.ID)
			} else {
				s.Stop()
				d.printf("%s stopped; the monitor takes member %s DOWN within ~3 s\n", s.Name, m.ID)
			}
			down = !down
		}
	}
}
