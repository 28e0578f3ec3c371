//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// pingOnce sends one echo request from h to ip and waits up to a second
// for the answer.
func pingOnce(h *Host, ip string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := h.Exec(ctx, "ping", "-c", "1", "-W", "1", ip)
	return err
}

// assertRefused checks that an API answer is a 409 on field whose message
// mentions each of the strings.
func assertRefused(tb testing.TB, status int, data []byte, field string, mentions ...string) {
	tb.Helper()
	var body struct {
		Error struct{ Code, Field, Message string } `json:"error"`
	}
	if err := json.Unmarshal(data, &body); err != nil || status != http.StatusConflict ||
		body.Error.Code != sdnlb.ECONFLICT || body.Error.Field != field {
		tb.Fatalf("status %d %s, want 409 conflict on %s", status, data, field)
	}
	for _, s := range mentions {
		if !strings.Contains(body.Error.Message, s) {
			tb.Errorf("the refusal does not say %q: %s", s, body.Error.Message)
		}
	}
}

// A VIP may not take an address a host holds, nor a member a VIP's: a
// member's address, a client's the switch showed the controller, the
// switch's own host's, and the VIP's for a member are refused, each
// naming what holds the address, and nothing changes: the VIP still
// balances, the hosts still reach each other. The controller learns
// every host that sends under --l2 learn; under --l2 normal it learns
// only the hosts whose packets reach it.
func TestAddress_TakenAddressesRefused(t *testing.T) {
	b := newLBBed(t, 2, 1, sdnlb.RoundRobin, nil, "--l2", "learn")
	c1, c2, m1 := b.clients[0], b.clients[1], b.members[0]
	spread(t, b.clients, b.url, 2)
	// Their ARP goes through the controller, which so learns c1 and the
	// switch's own host (the root namespace, on the LOCAL port).
	if err := pingOnce(c1, c2.IP); err != nil {
		t.Fatalf("ping %s from %s: %v", c2.IP, c1.Name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "ip", "neigh", "flush", "dev", b.sw.Name).CombinedOutput(); err != nil {
		t.Fatalf("flush the root namespace's neighbours on %s: %v: %s", b.sw.Name, err, out)
	}
	if out, err := exec.CommandContext(ctx, "ping", "-c", "1", "-W", "2", m1.IP).CombinedOutput(); err != nil {
		t.Fatalf("ping %s from the root namespace: %v: %s", m1.IP, err, out)
	}
	dpid := b.lb.Switches()[0].DPID
	_, before := b.lb.API(http.MethodGet, "/v1/config", nil)

	for _, tt := range []struct {
		name, path string
		body       map[string]any
		mentions   []string
	}{
		{"VIPOnMember", "/v1/vips", map[string]any{"name": "taken", "address": m1.IP, "port": vipPort},
			[]string{"member " + b.mems[0].ID + " of pool " + b.pool.ID}},
		{"VIPOnClient", "/v1/vips", map[string]any{"name": "taken", "address": c1.IP, "port": vipPort},
			[]string{"host " + c1.IP + " (MAC " + c1.MAC.String() + ")",
				"switch " + dpid + " port " + strconv.Itoa(c1.OFPort) + " (" + c1.Link + ")"}},
		{"VIPOnSwitchHost", "/v1/vips", map[string]any{"name": "taken", "address": b.sw.LocalIP, "port": vipPort},
			[]string{"host " + b.sw.LocalIP, "switch " + dpid + " port LOCAL (" + b.sw.Name + ")"}},
		{"MemberOnVIP", "/v1/members", map[string]any{"pool_id": b.pool.ID, "address": b.vip.Address, "port": memberPort},
			[]string{"vip " + b.vip.ID}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, data := b.lb.API(http.MethodPost, tt.path, tt.body)
			assertRefused(t, status, data, "address", tt.mentions...)
		})
	}

	if _, after := b.lb.API(http.MethodGet, "/v1/config", nil); string(after) != string(before) {
		t.Errorf("the refusals changed the configuration:\nbefore %s\nafter  %s", before, after)
	}
	if counts := spread(t, b.clients, b.url, 2); counts["srv1"] != 4 {
		t.Errorf("after the refusals: answers %v, want 4 from srv1", counts)
	}
	if err := pingOnce(c2, c1.IP); err != nil {
		t.Errorf("ping %s from %s after the refusals: %v", c1.IP, c2.Name, err)
	}
	if body, err := get(c1, "http://"+b.servers[0].Addr+"/", 5*time.Second); err != nil || body != "srv1" {
		t.Errorf("GET member %s from %s after the refusals = %q, %v; want srv1", b.servers[0].Addr, c1.Name, body, err)
	}
}

// A host that comes up on a VIP's address, unseen until then, loses its
// traffic to the VIP: its neighbours resolved the address to the VIP's
// MAC. When the VIP is deleted, the controller announces the host it saw
// claim the address, and a neighbour that cached the VIP's MAC reaches
// the host at once instead of when its entry goes stale (half a minute
// and more).
func TestAddress_DeletedVIPGivesTheHostItsAddress(t *testing.T) {
	sw := NewSwitch(t)
	lb := startSDNLB(t, "--l2", "learn")
	c := sw.AddHost(t, "c1", sw.Addr(1))
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)
	addr := sw.Addr(50)
	vip := lb.MustCreateVIP("early", addr, sdnlb.ProtocolTCP, vipPort, nil)

	// The switch answers the client's request for the address with the
	// VIP's MAC (the ping itself is dropped: no VIP serves ICMP there).
	var got string
	for i := 0; i < 10 && !sameMAC(got, vip.MAC); i++ {
		_ = pingOnce(c, addr)
		got = neighMAC(t, c, addr)
	}
	if !sameMAC(got, vip.MAC) {
		t.Fatalf("the client resolved %s to %q, want the VIP's MAC %s", addr, got, vip.MAC)
	}

	// The host's ARP claims the VIP's address: the controller learns it
	// and sends it no further. Once it did, a VIP on the address is
	// refused naming the host; a dry run shows it without writing.
	h := sw.AddHost(t, "h", addr)
	probe := map[string]any{"vips": []map[string]any{{"name": "probe", "address": addr, "port": vipPort + 1}}}
	var status int
	var data []byte
	for i := 0; i < 10 && status != http.StatusConflict; i++ {
		_ = pingOnce(h, c.IP)
		status, data = lb.API(http.MethodPut, "/v1/config?dry_run=true", probe)
	}
	assertRefused(t, status, data, "vips[0].address", "vips[0] (id ", "host "+addr+" (MAC "+h.MAC.String()+")")
	// The host gives up asking for the client (its requests, once the VIP
	// is gone, would reach the client and tell it the host's MAC).
	if state := waitNeighState(t, h, c.IP, "FAILED", 10*time.Second); state != "FAILED" && state != "" {
		t.Fatalf("the host still asks for the client: its entry is %s", state)
	}
	if got := neighMAC(t, c, addr); !sameMAC(got, vip.MAC) {
		t.Fatalf("before the delete the client holds %q for %s, want the VIP's MAC %s", got, addr, vip.MAC)
	}

	lb.MustAPI(http.MethodDelete, "/v1/vips/"+vip.ID, nil, http.StatusNoContent, nil)
	var err error
	tries := 0
	for err = pingOnce(c, addr); err != nil && tries < 3; err = pingOnce(c, addr) {
		tries++
	}
	if err != nil {
		t.Fatalf("the client still cannot reach the host at %s after the VIP's delete and %d pings: %v (it holds %s for it)",
			addr, tries+1, err, neighMAC(t, c, addr))
	}
	t.Logf("the client reached the host at %s at ping %d after the VIP's delete", addr, tries+1)
	if got := neighMAC(t, c, addr); !sameMAC(got, h.MAC.String()) {
		t.Errorf("the client holds %q for %s, want the host's MAC %s", got, addr, h.MAC)
	}
}
