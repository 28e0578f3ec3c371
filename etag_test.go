package sdnlb_test

import (
	"context"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// A configuration's tag follows its objects' versions: it moves when one
// is written, created or deleted, and not with a member's health.
func TestConfigETag(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	config := func(edit func(c *sdnlb.Config)) *sdnlb.Config {
		c := &sdnlb.Config{
			VIPs:     []*sdnlb.VIP{{ID: "web", UpdatedAt: at}},
			Pools:    []*sdnlb.Pool{{ID: "web", UpdatedAt: at}},
			Members:  []*sdnlb.Member{{ID: "m1", UpdatedAt: at}, {ID: "m2", UpdatedAt: at}},
			Monitors: []*sdnlb.Monitor{{ID: "http", UpdatedAt: at}},
		}
		if edit != nil {
			edit(c)
		}
		return c
	}
	base := sdnlb.ConfigETag(config(nil))
	if again := sdnlb.ConfigETag(config(nil)); again != base {
		t.Fatalf("one configuration, two tags: %s %s", base, again)
	}
	if sdnlb.ConfigETag(config(func(c *sdnlb.Config) { c.Members[0].Health.Status = sdnlb.MemberDown })) != base {
		t.Error("the tag follows health")
	}
	for name, edit := range map[string]func(c *sdnlb.Config){
		"written": func(c *sdnlb.Config) { c.Members[1].UpdatedAt = at.Add(time.Nanosecond) },
		"deleted": func(c *sdnlb.Config) { c.Members = c.Members[:1] },
		"renamed": func(c *sdnlb.Config) { c.Monitors[0].ID = "tcp" },
		"other kind": func(c *sdnlb.Config) {
			c.VIPs, c.Monitors = nil, []*sdnlb.Monitor{{ID: "web", UpdatedAt: at}, c.Monitors[0]}
		},
		"ids joined": func(c *sdnlb.Config) { c.Members = []*sdnlb.Member{{ID: "m1m2", UpdatedAt: at}} },
		"empty":      func(c *sdnlb.Config) { *c = sdnlb.Config{} },
		"moved pools": func(c *sdnlb.Config) {
			c.Pools, c.Members = nil, append(c.Members, &sdnlb.Member{ID: "web", UpdatedAt: at})
		},
	} {
		if sdnlb.ConfigETag(config(edit)) == base {
			t.Errorf("%s: the tag did not change", name)
		}
	}
}

func TestCheckConfigIfMatch(t *testing.T) {
	cfg := &sdnlb.Config{VIPs: []*sdnlb.VIP{{ID: "web"}}}
	tag := sdnlb.ConfigETag(cfg)
	ctx := context.Background()
	for _, ifMatch := range []string{tag, "*", "W/" + tag, `"x", ` + tag} {
		if err := sdnlb.CheckConfigIfMatch(sdnlb.WithIfMatch(ctx, ifMatch), cfg); err != nil {
			t.Errorf("If-Match %s: %v", ifMatch, err)
		}
	}
	if err := sdnlb.CheckConfigIfMatch(ctx, cfg); err != nil {
		t.Errorf("without If-Match: %v", err)
	}
	err := sdnlb.CheckConfigIfMatch(sdnlb.WithIfMatch(ctx, `"stale"`), cfg)
	if sdnlb.ErrorCode(err) != sdnlb.EPRECONDITION {
		t.Errorf("a stale tag: %v", err)
	}
}
