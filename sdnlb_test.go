package sdnlb_test

import (
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/sdnlb/sdnlb"
)

func TestErrorCode(t *testing.T) {
	for name, tc := range map[string]struct {
		err  error
		code string
		msg  string
	}{
		"Nil":      {nil, "", ""},
		"Domain":   {sdnlb.Errorf(sdnlb.ENOTFOUND, "vip %s not found", "x"), sdnlb.ENOTFOUND, "vip x not found"},
		"Wrapped":  {fmt.Errorf("ctx: %w", sdnlb.Errorf(sdnlb.ECONFLICT, "taken")), sdnlb.ECONFLICT, "taken"},
		"Internal": {errors.New("disk on fire"), sdnlb.EINTERNAL, "internal error"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := sdnlb.ErrorCode(tc.err); got != tc.code {
				t.Errorf("code = %q, want %q", got, tc.code)
			}
			if got := sdnlb.ErrorMessage(tc.err); got != tc.msg {
				t.Errorf("message = %q, want %q", got, tc.msg)
			}
		})
	}
}

// assertField checks that err is an EINVALID naming field ("" for no error).
func assertField(tb testing.TB, err error, field string) {
	tb.Helper()
	if field == "" {
		if err != nil {
			tb.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if sdnlb.ErrorCode(err) != sdnlb.EINVALID || sdnlb.ErrorField(err) != field {
		tb.Fatalf("err = %v, want invalid %s", err, field)
	}
}

func TestVIP_Validate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit  func(v *sdnlb.VIP)
		field string
	}{
		"OK":                  {func(v *sdnlb.VIP) {}, ""},
		"OKICMPWithoutPort":   {func(v *sdnlb.VIP) { v.Protocol, v.Port = sdnlb.ProtocolICMP, 0 }, ""},
		"OKAnyProtocol":       {func(v *sdnlb.VIP) { v.Protocol, v.Port = sdnlb.ProtocolAny, 0 }, ""},
		"ErrAddress":          {func(v *sdnlb.VIP) { v.Address = "10.0.0.300" }, "address"},
		"ErrAddressLoopback6": {func(v *sdnlb.VIP) { v.Address = "::1" }, "address"},
		"OKAddressIPv6":       {func(v *sdnlb.VIP) { v.Address = "2001:db8::1" }, ""},
		"ErrAddressZero":      {func(v *sdnlb.VIP) { v.Address = "0.0.0.0" }, "address"},
		"ErrAddressMulticast": {func(v *sdnlb.VIP) { v.Address = "224.0.0.1" }, "address"},
		"ErrProtocol":         {func(v *sdnlb.VIP) { v.Protocol = "SCTP" }, "protocol"},
		"ErrPortNegative":     {func(v *sdnlb.VIP) { v.Port = -1 }, "port"},
		"ErrAddressMissing":   {func(v *sdnlb.VIP) { v.Address = "" }, "address"},
		"ErrPortHigh":         {func(v *sdnlb.VIP) { v.Port = 65536 }, "port"},
		"ErrConnectionLimit":  {func(v *sdnlb.VIP) { v.ConnectionLimit = 0 }, "connection_limit"},
		"ErrPersistenceType": {func(v *sdnlb.VIP) {
			v.SessionPersistence = &sdnlb.SessionPersistence{Type: "HTTP_COOKIE", Timeout: 10}
		}, "session_persistence.type"},
		"ErrPersistenceTimeout": {func(v *sdnlb.VIP) {
			v.SessionPersistence = &sdnlb.SessionPersistence{Type: sdnlb.PersistenceSourceIP}
		}, "session_persistence.timeout"},
		"ErrID":               {func(v *sdnlb.VIP) { v.ID = "a/b" }, "id"},
		"ErrAddressThisNet":   {func(v *sdnlb.VIP) { v.Address = "0.1.2.3" }, "address"},
		"ErrAddressReserved":  {func(v *sdnlb.VIP) { v.Address = "240.0.0.1" }, "address"},
		"ErrAddressBroadcast": {func(v *sdnlb.VIP) { v.Address = "255.255.255.255" }, "address"},
		"OKDescription":       {func(v *sdnlb.VIP) { v.Description = "line one\nline two\tend" }, ""},
		"ErrDescriptionLong":  {func(v *sdnlb.VIP) { v.Description = strings.Repeat("x", sdnlb.MaxDescriptionLength+1) }, "description"},
		"ErrDescriptionNUL":   {func(v *sdnlb.VIP) { v.Description = "a\x00b" }, "description"},
		"ErrNameBidi":         {func(v *sdnlb.VIP) { v.Name = "abc\u202edef" }, "name"},
		"ErrNameBadUTF8":      {func(v *sdnlb.VIP) { v.Name = "a\xffb" }, "name"},
	} {
		t.Run(name, func(t *testing.T) {
			v := sdnlb.NewVIP()
			v.Address, v.Port = "10.0.0.100", 80
			tc.edit(v)
			assertField(t, v.Validate(), tc.field)
		})
	}
}

func TestValidID(t *testing.T) {
	for _, id := range []string{"1", "web", "a-b_c.d", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", strings.Repeat("a", sdnlb.MaxIDLength), "..."} {
		if !sdnlb.ValidID(id) {
			t.Errorf("ValidID(%q) = false", id)
		}
	}
	for _, id := range []string{"", ".", "..", "a/b", "a b", "a\x00", "a;b", "a:b", "a+b", "a=b", "a&b", "a%2f", "a\u202eb", "é", strings.Repeat("a", sdnlb.MaxIDLength+1)} {
		if sdnlb.ValidID(id) {
			t.Errorf("ValidID(%q) = true", id)
		}
	}
}

func TestPool_Validate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit  func(p *sdnlb.Pool)
		field string
	}{
		"OK":                 {func(p *sdnlb.Pool) {}, ""},
		"OKController":       {func(p *sdnlb.Pool) { p.Dispatch = sdnlb.DispatchController }, ""},
		"OKDSR":              {func(p *sdnlb.Pool) { p.Forwarding = sdnlb.ForwardingDSR }, ""},
		"ErrLBMethod":        {func(p *sdnlb.Pool) { p.LBMethod = "RR" }, "lb_method"},
		"ErrDispatch":        {func(p *sdnlb.Pool) { p.Dispatch = "HYBRID" }, "dispatch"},
		"ErrDispatchEmpty":   {func(p *sdnlb.Pool) { p.Dispatch = "" }, "dispatch"},
		"ErrDispatchCase":    {func(p *sdnlb.Pool) { p.Dispatch = "switch" }, "dispatch"},
		"ErrForwarding":      {func(p *sdnlb.Pool) { p.Forwarding = "TUNNEL" }, "forwarding"},
		"ErrForwardingEmpty": {func(p *sdnlb.Pool) { p.Forwarding = "" }, "forwarding"},
		"ErrForwardingCase":  {func(p *sdnlb.Pool) { p.Forwarding = "dsr" }, "forwarding"},
		"ErrProtocol":        {func(p *sdnlb.Pool) { p.Protocol = "SCTP" }, "protocol"},
		"OKAdaptiveSwitch":   {func(p *sdnlb.Pool) { p.LBMethod = sdnlb.Adaptive }, ""},
		"OKHashKeyClient":    {func(p *sdnlb.Pool) { p.LBMethod, p.HashKey = sdnlb.ConsistentHash, sdnlb.HashKeyClient }, ""},
		"ErrHashKey":         {func(p *sdnlb.Pool) { p.LBMethod, p.HashKey = sdnlb.ConsistentHash, "PORT" }, "hash_key"},
		"ErrHashKeyEmpty":    {func(p *sdnlb.Pool) { p.HashKey = "" }, "hash_key"},
		"ErrHashKeyMethod":   {func(p *sdnlb.Pool) { p.LBMethod, p.HashKey = sdnlb.SourceIP, sdnlb.HashKeyClient }, "hash_key"},
		"ErrHashKeyClientPrefixSwitch": {func(p *sdnlb.Pool) {
			p.LBMethod, p.HashKey, p.ClientIPv6Prefix = sdnlb.ConsistentHash, sdnlb.HashKeyClient, 64
		}, "client_ipv6_prefix"},
		"OKHashKeyClientPrefixController": {func(p *sdnlb.Pool) {
			p.LBMethod, p.HashKey, p.ClientIPv6Prefix, p.Dispatch = sdnlb.ConsistentHash, sdnlb.HashKeyClient, 64, sdnlb.DispatchController
		}, ""},
		"OKSlowStart": {func(p *sdnlb.Pool) {
			p.LBMethod, p.SlowStart = sdnlb.WeightedRoundRobin, 30.5
		}, ""},
		"OKSlowStartMax": {func(p *sdnlb.Pool) {
			p.LBMethod, p.Dispatch, p.SlowStart = sdnlb.WeightedLeastConnections, sdnlb.DispatchController, sdnlb.MaxSlowStart
		}, ""},
		"OKSlowStartAdaptive":    {func(p *sdnlb.Pool) { p.LBMethod, p.SlowStart = sdnlb.Adaptive, 1 }, ""},
		"OKSlowStartZero":        {func(p *sdnlb.Pool) { p.LBMethod, p.SlowStart = sdnlb.RoundRobin, 0 }, ""},
		"ErrSlowStartNegative":   {func(p *sdnlb.Pool) { p.LBMethod, p.SlowStart = sdnlb.Adaptive, -1 }, "slow_start"},
		"ErrSlowStartHigh":       {func(p *sdnlb.Pool) { p.LBMethod, p.SlowStart = sdnlb.Adaptive, 3600.5 }, "slow_start"},
		"ErrSlowStartNaN":        {func(p *sdnlb.Pool) { p.LBMethod, p.SlowStart = sdnlb.Adaptive, sdnlb.Seconds(math.NaN()) }, "slow_start"},
		"ErrSlowStartInf":        {func(p *sdnlb.Pool) { p.LBMethod, p.SlowStart = sdnlb.Adaptive, sdnlb.Seconds(math.Inf(1)) }, "slow_start"},
		"ErrSlowStartRoundRobin": {func(p *sdnlb.Pool) { p.SlowStart = 10 }, "slow_start"},
		"ErrSlowStartRandom":     {func(p *sdnlb.Pool) { p.LBMethod, p.SlowStart = sdnlb.Random, 10 }, "slow_start"},
		"ErrSlowStartLeastConns": {func(p *sdnlb.Pool) {
			p.LBMethod, p.Dispatch, p.SlowStart = sdnlb.LeastConnections, sdnlb.DispatchController, 10
		}, "slow_start"},
		"ErrDispatchLeastConns":   {func(p *sdnlb.Pool) { p.LBMethod = sdnlb.LeastConnections }, "dispatch"},
		"ErrDispatchWeightedConn": {func(p *sdnlb.Pool) { p.LBMethod = sdnlb.WeightedLeastConnections }, "dispatch"},
	} {
		t.Run(name, func(t *testing.T) {
			p := sdnlb.NewPool()
			tc.edit(p)
			err := p.Validate()
			assertField(t, err, tc.field)
			// The message lists what is allowed.
			switch tc.field {
			case "dispatch":
				assertMentions(t, err, "SWITCH", "CONTROLLER")
			case "forwarding":
				assertMentions(t, err, "NAT", "DSR")
			case "slow_start":
				assertMentions(t, err, "slow_start")
				if p.SlowStart > 0 && p.SlowStart <= sdnlb.MaxSlowStart {
					assertMentions(t, err, "WEIGHTED_ROUND_ROBIN", "WEIGHTED_LEAST_CONNECTIONS", "ADAPTIVE")
				}
			}
			if tc.field == "dispatch" && p.Dispatch == sdnlb.DispatchSwitch {
				assertMentions(t, err, "ROUND_ROBIN", "WEIGHTED_ROUND_ROBIN", "RANDOM", "CONSISTENT_HASH", "ADAPTIVE", "CONTROLLER")
			}
		})
	}
	t.Run("OKEveryValue", func(t *testing.T) {
		p := sdnlb.NewPool()
		for _, m := range sdnlb.LBMethods {
			for _, d := range sdnlb.Dispatches {
				for _, f := range sdnlb.Forwardings {
					p.LBMethod, p.Dispatch, p.Forwarding = m, d, f
					want := ""
					if d == sdnlb.DispatchSwitch && !m.SwitchPicks() {
						want = "dispatch" // needs the controller's exact decision
					}
					assertField(t, p.Validate(), want)
				}
			}
		}
	})
}

func assertMentions(tb testing.TB, err error, words ...string) {
	tb.Helper()
	for _, w := range words {
		if !strings.Contains(sdnlb.ErrorMessage(err), w) {
			tb.Errorf("message %q does not mention %s", sdnlb.ErrorMessage(err), w)
		}
	}
}

func TestNewPool(t *testing.T) {
	p := sdnlb.NewPool()
	if p.Dispatch != sdnlb.DispatchSwitch || p.Forwarding != sdnlb.ForwardingNAT || p.LBMethod != sdnlb.RoundRobin {
		t.Fatalf("defaults %+v, want SWITCH, NAT, ROUND_ROBIN", p)
	}
	// The lists start with the defaults, which docs and the spec rely on.
	if sdnlb.Dispatches[0] != p.Dispatch || sdnlb.Forwardings[0] != p.Forwarding {
		t.Fatalf("lists %v %v do not start with the defaults", sdnlb.Dispatches, sdnlb.Forwardings)
	}
}

// A method the switch cannot pick by moves the pool to the controller,
// unless the update asks for a dispatch, which validation then checks.
func TestPoolUpdate_ApplyMethodNeedsController(t *testing.T) {
	p := sdnlb.NewPool()
	(&sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.LeastConnections)}).Apply(p)
	if p.Dispatch != sdnlb.DispatchController {
		t.Errorf("LEAST_CONNECTIONS left dispatch %s", p.Dispatch)
	}
	p = sdnlb.NewPool()
	(&sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.LeastBytes), Dispatch: ptr(sdnlb.DispatchSwitch)}).Apply(p)
	if err := p.Validate(); sdnlb.ErrorField(err) != "dispatch" {
		t.Errorf("SWITCH with LEAST_BYTES: %v, want an error on dispatch", err)
	}
	// The switch hashes a client's whole address: a shorter IPv6 prefix
	// needs the controller.
	p = sdnlb.NewPool()
	(&sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.SourceIP), ClientIPv6Prefix: ptr(64)}).Apply(p)
	if p.Dispatch != sdnlb.DispatchController {
		t.Errorf("SOURCE_IP by /64 left dispatch %s", p.Dispatch)
	}
	(&sdnlb.PoolUpdate{Dispatch: ptr(sdnlb.DispatchSwitch)}).Apply(p)
	if err := p.Validate(); sdnlb.ErrorField(err) != "client_ipv6_prefix" {
		t.Errorf("SWITCH with SOURCE_IP by /64: %v, want an error on client_ipv6_prefix", err)
	}
	for _, m := range []sdnlb.LBMethod{sdnlb.ConsistentHash, sdnlb.Adaptive, sdnlb.SourceIP} {
		p = sdnlb.NewPool()
		(&sdnlb.PoolUpdate{LBMethod: ptr(m)}).Apply(p)
		if p.Dispatch != sdnlb.DispatchSwitch {
			t.Errorf("%s moved the pool to %s", m, p.Dispatch)
		}
	}
}

func TestLBMethod_SwitchPicksAndWeighs(t *testing.T) {
	var picks, weighs []sdnlb.LBMethod
	for _, m := range sdnlb.LBMethods {
		if m.SwitchPicks() {
			picks = append(picks, m)
		}
		if m.Weighs() {
			weighs = append(weighs, m)
		}
	}
	if want := []sdnlb.LBMethod{sdnlb.RoundRobin, sdnlb.WeightedRoundRobin, sdnlb.Random, sdnlb.SourceIP, sdnlb.ConsistentHash, sdnlb.Adaptive}; !slices.Equal(picks, want) {
		t.Errorf("the switch picks by %v, want %v", picks, want)
	}
	if want := []sdnlb.LBMethod{sdnlb.WeightedRoundRobin, sdnlb.WeightedLeastConnections, sdnlb.ConsistentHash, sdnlb.Adaptive}; !slices.Equal(weighs, want) {
		t.Errorf("%v weigh members, want %v", weighs, want)
	}
}

// A CONSISTENT_HASH pool by the client with a short IPv6 prefix needs the
// controller, as SOURCE_IP does; a method that hashes nothing takes the
// hash key back to its default unless the update names one.
func TestPoolUpdate_ApplyHashKey(t *testing.T) {
	p := sdnlb.NewPool()
	(&sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.ConsistentHash), HashKey: ptr(sdnlb.HashKeyClient), ClientIPv6Prefix: ptr(64)}).Apply(p)
	if p.Dispatch != sdnlb.DispatchController || p.HashKey != sdnlb.HashKeyClient {
		t.Errorf("CONSISTENT_HASH by CLIENT's /64: dispatch %s, hash_key %s", p.Dispatch, p.HashKey)
	}
	(&sdnlb.PoolUpdate{ClientIPv6Prefix: ptr(128)}).Apply(p)
	(&sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.RoundRobin)}).Apply(p)
	if p.HashKey != sdnlb.HashKeyConnection {
		t.Errorf("ROUND_ROBIN kept hash_key %s", p.HashKey)
	}
	(&sdnlb.PoolUpdate{HashKey: ptr(sdnlb.HashKeyClient)}).Apply(p)
	if err := p.Validate(); sdnlb.ErrorField(err) != "hash_key" {
		t.Errorf("ROUND_ROBIN by CLIENT: %v, want an error on hash_key", err)
	}
}

func TestPoolUpdate_ApplySlowStart(t *testing.T) {
	p := sdnlb.NewPool()
	(&sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.Adaptive), SlowStart: ptr(sdnlb.Seconds(20))}).Apply(p)
	if p.SlowStart != 20 {
		t.Fatalf("slow start %v, want 20", p.SlowStart)
	}
	(&sdnlb.PoolUpdate{Name: ptr("x")}).Apply(p)
	if p.SlowStart != 20 {
		t.Fatalf("an update without it changed slow start to %v", p.SlowStart)
	}
}

// A method no client chose is the default, until one is chosen; an update
// can put the default back as chosen by nobody.
func TestPoolUpdate_ApplyUnsetLBMethod(t *testing.T) {
	p := sdnlb.NewPool()
	(&sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.LeastBytes)}).Apply(p)
	if p.LBMethodUnset {
		t.Fatalf("a chosen method counts as unset")
	}
	(&sdnlb.PoolUpdate{UnsetLBMethod: true}).Apply(p)
	if p.LBMethod != sdnlb.RoundRobin || !p.LBMethodUnset {
		t.Fatalf("after UnsetLBMethod: %s, unset %v; want %s, unset", p.LBMethod, p.LBMethodUnset, sdnlb.RoundRobin)
	}
	(&sdnlb.PoolUpdate{Name: ptr("x")}).Apply(p)
	if !p.LBMethodUnset {
		t.Fatalf("an update without a method chose one")
	}
	(&sdnlb.PoolUpdate{LBMethod: ptr(sdnlb.RoundRobin)}).Apply(p)
	if p.LBMethodUnset {
		t.Fatalf("choosing the default still counts as unset")
	}
}

func TestPoolUpdate_Apply(t *testing.T) {
	p := sdnlb.NewPool()
	(&sdnlb.PoolUpdate{Name: ptr("x")}).Apply(p)
	if p.Dispatch != sdnlb.DispatchSwitch || p.Forwarding != sdnlb.ForwardingNAT {
		t.Fatalf("an update without them changed dispatch or forwarding: %+v", p)
	}
	(&sdnlb.PoolUpdate{Dispatch: ptr(sdnlb.DispatchController), Forwarding: ptr(sdnlb.ForwardingDSR)}).Apply(p)
	if p.Dispatch != sdnlb.DispatchController || p.Forwarding != sdnlb.ForwardingDSR || p.Name != "x" {
		t.Fatalf("got %+v", p)
	}
}

func TestForwarding_AllowsMemberPort(t *testing.T) {
	for name, tc := range map[string]struct {
		f              sdnlb.Forwarding
		proto          sdnlb.Protocol
		vipPort, port  int
		pinned, allows bool
	}{
		"NATOtherPort":     {sdnlb.ForwardingNAT, sdnlb.ProtocolTCP, 80, 8080, false, true},
		"DSRVIPPort":       {sdnlb.ForwardingDSR, sdnlb.ProtocolTCP, 80, 0, true, true},
		"DSRSamePort":      {sdnlb.ForwardingDSR, sdnlb.ProtocolTCP, 80, 80, true, true},
		"DSROtherPort":     {sdnlb.ForwardingDSR, sdnlb.ProtocolTCP, 80, 8080, true, false},
		"DSROtherPortUDP":  {sdnlb.ForwardingDSR, sdnlb.ProtocolUDP, 53, 5353, true, false},
		"DSRICMPHasNoPort": {sdnlb.ForwardingDSR, sdnlb.ProtocolICMP, 0, 8080, false, true},
		"NATAnyOtherPort":  {sdnlb.ForwardingNAT, sdnlb.ProtocolAny, 0, 8080, false, true},
		"DSRAnyClientPort": {sdnlb.ForwardingDSR, sdnlb.ProtocolAny, 80, 0, true, true},
		// An ANY VIP ignores its port: a member on it would be served on
		// every other port too.
		"DSRAnyVIPPort": {sdnlb.ForwardingDSR, sdnlb.ProtocolAny, 80, 80, true, false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.f.PinsMemberPort(tc.proto); got != tc.pinned {
				t.Errorf("PinsMemberPort = %v, want %v", got, tc.pinned)
			}
			if got := tc.f.AllowsMemberPort(tc.proto, tc.vipPort, tc.port); got != tc.allows {
				t.Errorf("AllowsMemberPort = %v, want %v", got, tc.allows)
			}
		})
	}
}

func TestMember_Validate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit  func(m *sdnlb.Member)
		field string
	}{
		"OK":            {func(m *sdnlb.Member) {}, ""},
		"OKDrain":       {func(m *sdnlb.Member) { m.Weight = 0 }, ""},
		"ErrPool":       {func(m *sdnlb.Member) { m.PoolID = "" }, "pool_id"},
		"ErrAddress":    {func(m *sdnlb.Member) { m.Address = "web1" }, "address"},
		"ErrNoAddress":  {func(m *sdnlb.Member) { m.Address = "" }, "address"},
		"ErrPort":       {func(m *sdnlb.Member) { m.Port = -1 }, "port"},
		"ErrWeightHigh": {func(m *sdnlb.Member) { m.Weight = 257 }, "weight"},
		"OKCapacity":    {func(m *sdnlb.Member) { m.Capacity = 1000 }, ""},
		"OKCapacityMax": {func(m *sdnlb.Member) { m.Capacity = sdnlb.MaxCapacity }, ""},
		"ErrCapacity":   {func(m *sdnlb.Member) { m.Capacity = -1 }, "capacity"},
		"ErrCapacityHi": {func(m *sdnlb.Member) { m.Capacity = sdnlb.MaxCapacity + 1 }, "capacity"},
	} {
		t.Run(name, func(t *testing.T) {
			m := sdnlb.NewMember()
			m.PoolID, m.Address, m.Port = "p1", "10.0.0.1", 80
			tc.edit(m)
			assertField(t, m.Validate(), tc.field)
		})
	}
}

func TestMemberUpdate_Validate(t *testing.T) {
	for name, tc := range map[string]struct {
		poolID *string
		field  string
	}{
		"OKNoPool":   {nil, ""},
		"OKSamePool": {ptr("p1"), ""},
		"ErrMove":    {ptr("p2"), "pool_id"},
	} {
		t.Run(name, func(t *testing.T) {
			m := sdnlb.NewMember()
			m.PoolID = "p1"
			upd := sdnlb.MemberUpdate{PoolID: tc.poolID}
			assertField(t, upd.Validate(m), tc.field)
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestMember_EffectiveStatus(t *testing.T) {
	for name, tc := range map[string]struct {
		admin  bool
		weight int
		health sdnlb.MemberStatus
		want   sdnlb.MemberStatus
		rot    bool
	}{
		"Up":         {true, 1, sdnlb.MemberUp, sdnlb.MemberUp, true},
		"Down":       {true, 1, sdnlb.MemberDown, sdnlb.MemberDown, false},
		"NoMonitor":  {true, 1, sdnlb.MemberNoMonitor, sdnlb.MemberNoMonitor, true},
		"Unset":      {true, 1, "", sdnlb.MemberNoMonitor, true},
		"AdminDown":  {false, 1, sdnlb.MemberUp, sdnlb.MemberDraining, false},
		"Weight0":    {true, 0, sdnlb.MemberUp, sdnlb.MemberDraining, false},
		"Agent":      {true, 1, sdnlb.MemberUp, sdnlb.MemberUp, true},
		"AgentDrain": {true, 1, sdnlb.MemberUp, sdnlb.MemberDraining, false},
	} {
		t.Run(name, func(t *testing.T) {
			m := &sdnlb.Member{AdminStateUp: tc.admin, Weight: tc.weight, Health: sdnlb.MemberHealth{Status: tc.health}}
			if strings.HasPrefix(name, "Agent") {
				m.Health.Agent = &sdnlb.AgentReport{Available: 50, Drain: name == "AgentDrain"}
			}
			if got := m.EffectiveStatus(); got != tc.want {
				t.Errorf("status = %s, want %s", got, tc.want)
			}
			if got := m.InRotation(); got != tc.rot {
				t.Errorf("in rotation = %v, want %v", got, tc.rot)
			}
		})
	}
}

func TestMonitor_Validate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit  func(m *sdnlb.Monitor)
		field string
	}{
		"OK":              {func(m *sdnlb.Monitor) {}, ""},
		"OKFractional":    {func(m *sdnlb.Monitor) { m.Delay, m.Timeout = 0.2, 0.1 }, ""},
		"ErrType":         {func(m *sdnlb.Monitor) { m.Type = "UDP" }, "type"},
		"ErrDelay":        {func(m *sdnlb.Monitor) { m.Delay = 0 }, "delay"},
		"ErrTimeoutAbove": {func(m *sdnlb.Monitor) { m.Delay, m.Timeout = 1, 1 }, "timeout"},
		"ErrRetries":      {func(m *sdnlb.Monitor) { m.MaxRetries = 11 }, "max_retries"},
		"ErrRise":         {func(m *sdnlb.Monitor) { m.Rise = 0 }, "rise"},
		"ErrMethod":       {func(m *sdnlb.Monitor) { m.HTTPMethod = "FETCH" }, "http_method"},
		"ErrPath":         {func(m *sdnlb.Monitor) { m.URLPath = "health" }, "url_path"},
		"ErrCodes":        {func(m *sdnlb.Monitor) { m.ExpectedCodes = "200-" }, "expected_codes"},
		"ErrDelayNaN":     {func(m *sdnlb.Monitor) { m.Delay = sdnlb.Seconds(math.NaN()) }, "delay"},
		"ErrDelayInf":     {func(m *sdnlb.Monitor) { m.Delay = sdnlb.Seconds(math.Inf(1)) }, "delay"},
		"ErrTimeoutNaN":   {func(m *sdnlb.Monitor) { m.Timeout = sdnlb.Seconds(math.NaN()) }, "timeout"},
		"OKPathQuery":     {func(m *sdnlb.Monitor) { m.URLPath = "/health?deep=1&x=%20" }, ""},
		"ErrPathControl":  {func(m *sdnlb.Monitor) { m.URLPath = "/health\x01" }, "url_path"},
		"ErrPathDEL":      {func(m *sdnlb.Monitor) { m.URLPath = "/health\x7f" }, "url_path"},
		"ErrPathEscape":   {func(m *sdnlb.Monitor) { m.URLPath = "/health%zz" }, "url_path"},
		"ErrPathQuery":    {func(m *sdnlb.Monitor) { m.URLPath = "/health?a=%zz" }, "url_path"},
		"ErrPathFragment": {func(m *sdnlb.Monitor) { m.URLPath = "/health#x" }, "url_path"},
		"OKCodesIgnoredForTCP": {func(m *sdnlb.Monitor) {
			m.Type, m.ExpectedCodes = sdnlb.MonitorTCP, "x"
		}, ""},
		"OKAgent": {func(m *sdnlb.Monitor) {
			m.Type, m.Port, m.URLPath, m.ExpectedCodes = sdnlb.MonitorAgent, 5555, "x", "x"
		}, ""},
		"OKAgentPortMax":   {func(m *sdnlb.Monitor) { m.Type, m.Port = sdnlb.MonitorAgent, 65535 }, ""},
		"ErrAgentNoPort":   {func(m *sdnlb.Monitor) { m.Type = sdnlb.MonitorAgent }, "port"},
		"ErrAgentPortHigh": {func(m *sdnlb.Monitor) { m.Type, m.Port = sdnlb.MonitorAgent, 65536 }, "port"},
		"ErrAgentPortNeg":  {func(m *sdnlb.Monitor) { m.Type, m.Port = sdnlb.MonitorAgent, -1 }, "port"},
		"ErrAgentDelay":    {func(m *sdnlb.Monitor) { m.Type, m.Port, m.Delay = sdnlb.MonitorAgent, 5555, 0 }, "delay"},
		"ErrAgentRise":     {func(m *sdnlb.Monitor) { m.Type, m.Port, m.Rise = sdnlb.MonitorAgent, 5555, 0 }, "rise"},
		"ErrPortOnHTTP":    {func(m *sdnlb.Monitor) { m.Port = 5555 }, "port"},
		"ErrPortOnTCP":     {func(m *sdnlb.Monitor) { m.Type, m.Port = sdnlb.MonitorTCP, 80 }, "port"},
		"ErrPortOnPING":    {func(m *sdnlb.Monitor) { m.Type, m.Port = sdnlb.MonitorPING, 1 }, "port"},
	} {
		t.Run(name, func(t *testing.T) {
			m := sdnlb.NewMonitor()
			m.Type = sdnlb.MonitorHTTP
			tc.edit(m)
			assertField(t, m.Validate(), tc.field)
		})
	}
}

func TestParseExpectedCodes(t *testing.T) {
	for in, tc := range map[string]struct {
		ok       bool
		match    []int
		mismatch []int
	}{
		"200":          {true, []int{200}, []int{201, 199}},
		"200-299":      {true, []int{200, 250, 299}, []int{300, 199}},
		"200,202":      {true, []int{200, 202}, []int{201}},
		"200, 300-302": {true, []int{200, 301}, []int{303}},
		"":             {ok: false},
		"abc":          {ok: false},
		"299-200":      {ok: false},
		"99":           {ok: false},
		"200,":         {ok: false},
	} {
		t.Run(in, func(t *testing.T) {
			codes, err := sdnlb.ParseExpectedCodes(in)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			for _, c := range tc.match {
				if !codes.Match(c) {
					t.Errorf("%d should match", c)
				}
			}
			for _, c := range tc.mismatch {
				if codes.Match(c) {
					t.Errorf("%d should not match", c)
				}
			}
		})
	}
}

func TestVIPMAC(t *testing.T) {
	a, b := sdnlb.VIPMAC("vip-1"), sdnlb.VIPMAC("vip-2")
	if a == b {
		t.Fatalf("two VIPs share MAC %s", a)
	}
	if a != sdnlb.VIPMAC("vip-1") {
		t.Fatal("MAC is not stable")
	}
	mac, err := net.ParseMAC(a)
	if err != nil {
		t.Fatal(err)
	}
	if mac[0]&0x01 != 0 || mac[0]&0x02 == 0 {
		t.Errorf("MAC %s is not unicast and locally administered", a)
	}
}

func TestSeconds_Duration(t *testing.T) {
	if got := sdnlb.Seconds(0.2).Duration().Milliseconds(); got != 200 {
		t.Errorf("0.2 s = %d ms", got)
	}
}

// A missing required field is named as missing, not as a bad value.
func TestValidate_Required(t *testing.T) {
	vip := sdnlb.NewVIP()
	memberWithoutPool := sdnlb.NewMember()
	memberWithoutPool.Address = "10.0.0.1"
	memberWithoutAddress := sdnlb.NewMember()
	memberWithoutAddress.PoolID = "p"
	monitor := sdnlb.NewMonitor()
	monitor.Type = ""
	for name, tt := range map[string]struct {
		err   error
		field string
	}{
		"VIPAddress":    {vip.Validate(), "address"},
		"MemberPoolID":  {memberWithoutPool.Validate(), "pool_id"},
		"MemberAddress": {memberWithoutAddress.Validate(), "address"},
		"MonitorType":   {monitor.Validate(), "type"},
	} {
		t.Run(name, func(t *testing.T) {
			want := tt.field + " is required"
			if field, msg := sdnlb.ErrorField(tt.err), sdnlb.ErrorMessage(tt.err); field != tt.field || msg != want {
				t.Errorf("field %q, message %q; want %q, %q", field, msg, tt.field, want)
			}
		})
	}
}
