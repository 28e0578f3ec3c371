package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// ipv6Document is a pool of an IPv6 VIP and two members, as a client may
// spell them.
const ipv6Document = `{
	"vips": [{"id": "web6", "address": "2001:DB8::100", "port": 80}],
	"pools": [{"id": "web6", "vip_id": "web6"}],
	"members": [{"id": "a", "pool_id": "web6", "address": "2001:db8:0::1", "port": 8080},
		{"id": "b", "pool_id": "web6", "address": "2001:DB8::2", "port": 8080}]
}`

// PUT /v1/config and the CLI on a real server and store: IPv6 round
// trips in canonical form, mixed families are 400s naming the field.
func TestMain_IPv6(t *testing.T) {
	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	var diff sdnlb.ConfigDiff
	call(t, m, "PUT", "/v1/config", rawJSON(ipv6Document), 200, &diff)
	var pool sdnlb.Pool
	call(t, m, "GET", "/v1/pools/web6", nil, 200, &pool)
	if pool.Dispatch != sdnlb.DispatchSwitch {
		t.Fatalf("the IPv6 VIP's pool is dispatched by %s, want SWITCH", pool.Dispatch)
	}
	var member sdnlb.Member
	call(t, m, "GET", "/v1/members/a", nil, 200, &member)
	if member.Address != "2001:db8::1" {
		t.Fatalf("member address %q, want 2001:db8::1", member.Address)
	}
	call(t, m, "PUT", "/v1/config", rawJSON(ipv6Document), 200, &diff)
	if diff.Changed {
		t.Fatalf("applying the document again changed %+v", diff)
	}

	for name, tc := range map[string]struct{ address, says string }{
		"ErrMemberIPv4":       {"10.0.0.2", "is IPv4; the pool's VIP web6 (2001:db8::100) is IPv6"},
		"ErrMemberIPv4Mapped": {"::ffff:10.0.0.2", "IPv4-mapped"},
		"ErrMemberLinkLocal":  {"fe80::2", "link-local"},
	} {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(ipv6Document, `"2001:DB8::2"`, `"`+tc.address+`"`, 1)
			status, body := send(t, m, "PUT", "/v1/config", "application/json", doc)
			var e struct {
				Error struct{ Code, Field, Message string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || status != 400 || e.Error.Field != "members[1].address" ||
				!strings.Contains(e.Error.Message, tc.says) {
				t.Fatalf("status %d, body %s; want 400 naming members[1].address and saying %q", status, body, tc.says)
			}
		})
	}

	t.Run("CLIGet", func(t *testing.T) {
		code, out, errOut := runClient(t, m, "get", "members")
		if code != exitOK || !strings.Contains(out, "2001:db8::1") {
			t.Errorf("exit %d, out:\n%s\nerr: %s", code, out, errOut)
		}
	})
	t.Run("CLIApplyRefused", func(t *testing.T) {
		doc := strings.Replace(ipv6Document, `"2001:DB8::2"`, `"10.0.0.2"`, 1)
		code, _, errOut := runClientInput(t, m, doc, "apply", "-f", "-")
		if code != exitAPIError || !strings.Contains(errOut, "is IPv4") {
			t.Errorf("exit %d, err: %s", code, errOut)
		}
	})
}

// The member table writes an IPv6 member's endpoint in brackets.
func TestMemberTable_IPv6(t *testing.T) {
	var b bytes.Buffer
	stats := &sdnlb.PoolStats{Members: []sdnlb.MemberStats{{MemberID: "a", Address: "2001:db8::1", Port: 8080},
		{MemberID: "b", Address: "10.0.0.2", Port: 8080}}}
	if err := memberTable(&b, stats); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "[2001:db8::1]:8080") || !strings.Contains(out, "10.0.0.2:8080") {
		t.Fatalf("table:\n%s", out)
	}
}
