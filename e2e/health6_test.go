//go:build e2e

package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdnlb/sdnlb"
)

// TestHealth_IPv6Checks monitors IPv6 members, behind an IPv6 VIP that
// the controller dispatches, with a TCP, an HTTP and a PING (ICMPv6 echo)
// monitor: a member whose server stops goes DOWN, on a failure its last
// error names, and UP again once the server is back; the other member
// stays UP.
func TestHealth_IPv6Checks(t *testing.T) {
	sw := NewSwitch(t)
	lb := startSDNLB(t)
	var servers []*HTTPServer
	var hosts []*Host
	for i := range 2 {
		h := sw.AddHost(t, "m"+strconv.Itoa(i+1), sw.Addr(byte(11+i)))
		hosts = append(hosts, h)
		servers = append(servers, h.ServeHTTP(t, memberPort, "srv"+strconv.Itoa(i+1)))
	}
	lb.Connect(sw)
	dumpOnFailure(t, sw, lb)

	vip := lb.MustCreateVIP("web6", sw.Addr6(100), sdnlb.ProtocolTCP, vipPort, nil)
	pool := lb.MustCreatePool("web6", vip, sdnlb.RoundRobin, sdnlb.DispatchController)
	var mems []*sdnlb.Member
	for _, h := range hosts {
		mems = append(mems, lb.MustCreateMember(pool, h.IP6, memberPort))
	}
	for _, typ := range []sdnlb.MonitorType{sdnlb.MonitorTCP, sdnlb.MonitorHTTP, sdnlb.MonitorPING} {
		fields := httpMonitorFields()
		fields["name"], fields["type"] = strings.ToLower(string(typ)), typ
		if typ != sdnlb.MonitorHTTP {
			delete(fields, "url_path")
			delete(fields, "expected_codes")
		}
		lb.MustCreateMonitor(pool, fields)
	}
	for _, m := range mems {
		lb.WaitMemberStatus(m.ID, sdnlb.MemberUp, 10*time.Second)
	}

	servers[0].Stop()
	lb.WaitMemberStatus(mems[0].ID, sdnlb.MemberDown, 10*time.Second)
	if e := lb.Member(mems[0].ID).Health.LastError; !strings.Contains(e, "connection refused") {
		t.Errorf("last error of the stopped member %q, want its refused connections", e)
	}
	if got := lb.Member(mems[1].ID).Status; got != sdnlb.MemberUp {
		t.Errorf("the other member is %s, want %s", got, sdnlb.MemberUp)
	}

	servers[0].Restart(t)
	lb.WaitMemberStatus(mems[0].ID, sdnlb.MemberUp, 10*time.Second)
}
