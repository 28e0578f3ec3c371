//go:build e2e

package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

// ndAnswers returns how many solicitations the switch's neighbour
// discovery answer for vip has answered.
func ndAnswers(tb testing.TB, sw *Switch, vip string) int {
	tb.Helper()
	for _, f := range sw.DumpFlows() {
		if strings.Contains(f, "priority=510,icmp6,") && strings.Contains(f, "nd_target="+vip+" ") {
			if m := nPackets.FindStringSubmatch(f); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n
			}
		}
	}
	tb.Fatalf("the switch holds no neighbour discovery answer for %s:\n%s", vip, strings.Join(sw.DumpFlows(), "\n"))
	return 0
}

// The switch answers neighbour solicitations for its IPv6 VIPs itself, as
// it answers ARP: a client with an empty cache resolves a SWITCH NAT and a
// SWITCH DSR VIP to their MACs through the switch's rows while the
// controller runs and once it is killed, and a cached entry is confirmed
// by a unicast solicitation.
func TestND_AnsweredBySwitch(t *testing.T) {
	b := newAnswerBed(t, families[1])
	natVIP, dsrVIP := b.vips[sdnlb.ForwardingNAT].Address, b.vips[sdnlb.ForwardingDSR].Address
	answered := func() int { return ndAnswers(t, b.sw, natVIP) + ndAnswers(t, b.sw, dsrVIP) }

	before := answered()
	flushNeighbours(t, b.c)
	b.getAll(t, "with the controller")
	b.resolved(t, "with the controller")
	if n := answered() - before; n < 2 {
		t.Errorf("the switch answered %d solicitations for the two VIPs, want both", n)
	}

	b.lb.Kill()
	flushNeighbours(t, b.c)
	b.getAll(t, "without the controller")
	b.resolved(t, "without the controller")
	b.probeCached(t, ndAnswers)
	b.getAll(t, "after the unicast solicitations")
}
