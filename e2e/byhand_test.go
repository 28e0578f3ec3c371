//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
	"github.com/sdnlb/sdnlb/internal/testbed"
)

// byHandMarker precedes each block of the README's "By hand" section that
// TestReadme_ByHand runs: "<!-- by-hand: NAME -->" on the line before the
// block's opening fence.
const byHandMarker = "<!-- by-hand: "

// byHandBlocks are the marked blocks in the order the README gives them.
var byHandBlocks = []string{"ovs", "bridge", "hosts", "servers", "connect", "configure", "traffic", "teardown"}

// byHandTimeout bounds one block: the traffic block's 60 requests give up
// after 2 s each.
const byHandTimeout = 3 * time.Minute

// byHandRequests is how many requests the traffic block sends.
const byHandRequests = 60

type readmeBlock struct {
	name   string
	script string
}

// TestReadme_ByHand follows the README's "By hand" section word for word
// on a machine of its own (testbed.Machine: the README's fixed names,
// addresses and ports are private to it): it runs the marked blocks in
// order with sdnlb running as its first command does, waits where a reader
// would see the members come UP, checks that the client's requests through
// the VIP reached every member, and tears down with the README's last
// block.
func TestReadme_ByHand(t *testing.T) {
	blocks := readByHandBlocks(t, "../README.md")
	m := testbed.NewMachine(t)
	testbed.StartSDNLB(t, m.Launcher(sdnlbBinary), "--api-addr", "127.0.0.1:8080", "--openflow-addr", ":6653")

	teardown := blocks[len(blocks)-1]
	t.Cleanup(func() {
		out, err := runBlock(m, teardown)
		if err != nil && !t.Failed() {
			t.Errorf("README block %q: %v", teardown.name, err)
		}
		if t.Failed() {
			t.Logf("after the README's teardown: %s", out)
		}
	})

	var traffic string
	for _, b := range blocks[:len(blocks)-1] {
		out, err := runBlock(m, b)
		if err != nil {
			t.Fatalf("README block %q: %v", b.name, err)
		}
		switch b.name {
		case "configure":
			waitByHandMembers(t, m)
		case "traffic":
			traffic = out
		}
	}

	counts, total := map[string]int{}, 0
	for _, line := range strings.Split(strings.TrimSpace(traffic), "\n") {
		f := strings.Fields(line)
		n, err := strconv.Atoi(f[0])
		if len(f) != 2 || err != nil {
			t.Fatalf("traffic block printed %q, want `uniq -c` lines:\n%s", line, traffic)
		}
		counts[f[1]] += n
		total += n
	}
	for _, name := range []string{"srv1", "srv2", "srv3"} {
		if counts[name] == 0 {
			t.Errorf("%s answered none of the requests through the VIP: %v", name, counts)
		}
	}
	if total != byHandRequests || len(counts) != 3 {
		t.Errorf("answers %v (%d), want %d, all from srv1, srv2 and srv3", counts, total, byHandRequests)
	}
	t.Logf("answers through the VIP: %v", counts)
}

// readByHandBlocks returns the README's marked blocks, without the
// indentation of the list items they sit in, and checks that they are
// byHandBlocks in that order.
func readByHandBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []readmeBlock
	var cur *readmeBlock
	var indent string
	inFence := false
	sc := bufio.NewScanner(f)
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, byHandMarker):
			name, ok := strings.CutSuffix(strings.TrimPrefix(trimmed, byHandMarker), " -->")
			if !ok || cur != nil {
				t.Fatalf("%s:%d: a by-hand marker must read %q and come before its block", path, ln, byHandMarker+"NAME -->")
			}
			cur = &readmeBlock{name: name}
		case cur != nil && !inFence:
			if !strings.HasPrefix(trimmed, "```") {
				t.Fatalf("%s:%d: by-hand block %q: its fence must follow the marker, found %q", path, ln, cur.name, line)
			}
			inFence, indent = true, line[:strings.Index(line, "```")]
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur, inFence = nil, false
		case cur != nil:
			cur.script += strings.TrimPrefix(line, indent) + "\n"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(blocks))
	for i, b := range blocks {
		names[i] = b.name
	}
	if !slices.Equal(names, byHandBlocks) {
		t.Fatalf("%s has the by-hand blocks %q, want %q", path, names, byHandBlocks)
	}
	return blocks
}

func runBlock(m *testbed.Machine, b readmeBlock) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), byHandTimeout)
	defer cancel()
	return m.Run(ctx, b.script)
}

// waitByHandMembers waits, as a reader of the README would, until the
// three members are UP with a passing probe (a member counts as UP until
// its first probes fail) and the switch's group spreads over them.
func waitByHandMembers(t *testing.T, m *testbed.Machine) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var members, groups string
	for i := 0; i < 300 && time.Now().Before(deadline); i++ {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		var err error
		members, err = m.Run(ctx, "curl -s localhost:8080/v1/members")
		if err == nil {
			groups, err = m.Run(ctx, "ovs-ofctl -O OpenFlow13 dump-groups lb0")
		}
		cancel()
		if err == nil && byHandMembersUp(members) == 3 && len(groupBuckets(groups)) == 3 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("members not UP behind the switch's group after 30s:\n%s\n%s", members, groups)
}

// byHandMembersUp counts the UP members whose latest probe passed in a GET
// /v1/members answer.
func byHandMembersUp(answer string) int {
	var list struct {
		Members []sdnlb.Member `json:"members"`
	}
	if json.Unmarshal([]byte(answer), &list) != nil {
		return 0
	}
	n := 0
	for _, m := range list.Members {
		if m.Status == sdnlb.MemberUp && m.Health.LastCheck != nil && m.Health.LastError == "" {
			n++
		}
	}
	return n
}
