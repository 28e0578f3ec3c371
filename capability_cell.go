package sdnlb

import (
	"net/http"
	"strings"
)

// A Cell is what a setting does in one mode: under a dispatch, on a
// switch speaking one OpenFlow version, for one address family, with the
// configuration that asks for the setting. An empty Dispatch, OpenFlow or
// Family stands for every one. A row lists the cells where the setting
// differs; the tests are generated from them: refused cells through the
// API, the others with traffic on a real Open vSwitch (docs/TESTING.md).
type Cell struct {
	Dispatch Dispatch
	OpenFlow string // "1.3" or "1.0", as Switch.OpenFlow spells it
	Family   string // "IPv4" or "IPv6", as Family spells it
	Verdict  Verdict
	// Status and Field: a refused cell's HTTP status, and the field its
	// JSON body names.
	Status int
	Field  string
	// Shown: where the API shows that the controller carries out a
	// ByController cell: ShownInDispatch or ShownInStats.
	Shown  string
	Config CellConfig
}

// Verdict is what a setting does in a cell.
type Verdict string

const (
	Honoured     Verdict = "honoured"
	Refused      Verdict = "refused"
	ByController Verdict = "by the controller"
)

// Where the API shows that the controller carries out a ByController
// cell.
const (
	// ShownInDispatch: the pool, whose write named no dispatch, reads
	// CONTROLLER.
	ShownInDispatch = "dispatch"
	// ShownInStats: the pool reads the dispatch its write named, and its
	// stats list the switch in controller_dispatched_on.
	ShownInStats = "controller_dispatched_on"
)

// CellConfig is the configuration of a cell as the native API's fields:
// of the VIP, of its pool, and of its first member; Members is how many
// members the pool gets (0: as many as the test needs).
type CellConfig struct {
	VIP, Pool, Member map[string]any
	Members           int
}

// NamesDispatch reports whether the pool's write names the cell's
// dispatch: all but a cell whose dispatch the store chooses.
func (c Cell) NamesDispatch() bool {
	return c.Dispatch != "" && !(c.Verdict == ByController && c.Shown == ShownInDispatch)
}

// Name names the cell's mode and verdict, as "SWITCH, OpenFlow 1.0: by
// the controller".
func (c Cell) Name() string {
	var mode []string
	if c.Dispatch != "" {
		mode = append(mode, string(c.Dispatch))
	}
	if c.OpenFlow != "" {
		mode = append(mode, "OpenFlow "+c.OpenFlow)
	}
	if c.Family != "" {
		mode = append(mode, c.Family)
	}
	if len(mode) == 0 {
		mode = append(mode, "every mode")
	}
	return strings.Join(mode, ", ") + ": " + string(c.Verdict)
}

// methodCells are a method's cells, from what the switch can pick by.
func methodCells(m LBMethod) []Cell {
	config := CellConfig{Pool: map[string]any{"lb_method": m}}
	if !m.SwitchPicks() {
		return []Cell{
			{Dispatch: DispatchSwitch, Verdict: Refused, Status: http.StatusBadRequest, Field: "dispatch", Config: config},
			{Dispatch: DispatchSwitch, Verdict: ByController, Shown: ShownInDispatch, Config: config},
			{Dispatch: DispatchController, Verdict: Honoured, Config: config},
		}
	}
	cells := []Cell{
		{Dispatch: DispatchSwitch, OpenFlow: "1.3", Verdict: Honoured, Config: config},
		{Dispatch: DispatchSwitch, OpenFlow: "1.0", Verdict: ByController, Shown: ShownInStats, Config: config},
		{Dispatch: DispatchController, Verdict: Honoured, Config: config},
	}
	if m == SourceIP {
		short := CellConfig{Pool: map[string]any{"lb_method": m, "client_ipv6_prefix": 64}}
		cells = append(cells,
			// Refused whatever the VIP's family: the pool's setting is.
			Cell{Dispatch: DispatchSwitch, Verdict: Refused, Status: http.StatusBadRequest, Field: "client_ipv6_prefix", Config: short},
			Cell{Dispatch: DispatchSwitch, Family: "IPv6", Verdict: ByController, Shown: ShownInDispatch, Config: short})
	}
	return cells
}

// byControllerCells are the cells of a VIP setting that only the
// controller keeps: refused for a pool that asks for SWITCH, carried out
// by the controller for one that names no dispatch.
func byControllerCells(config CellConfig) []Cell {
	return []Cell{
		{Dispatch: DispatchSwitch, Verdict: Refused, Status: http.StatusBadRequest, Field: "dispatch", Config: config},
		{Dispatch: DispatchSwitch, Verdict: ByController, Shown: ShownInDispatch, Config: config},
	}
}

// dispatchCells are the cells of a setting that both dispatches honour,
// the switch's only on a switch with select groups.
func dispatchCells(config CellConfig) []Cell {
	return []Cell{
		{Dispatch: DispatchSwitch, OpenFlow: "1.3", Verdict: Honoured, Config: config},
		{Dispatch: DispatchSwitch, OpenFlow: "1.0", Verdict: ByController, Shown: ShownInStats, Config: config},
		{Dispatch: DispatchController, Verdict: Honoured, Config: config},
	}
}

// slowStartCells: dispatchCells, and refused under every method that does
// not weigh members (those only the controller picks by are refused
// SWITCH first).
func slowStartCells() []Cell {
	cells := dispatchCells(CellConfig{Pool: map[string]any{"lb_method": WeightedRoundRobin, "slow_start": 10}})
	for _, m := range methodsWhere(func(m LBMethod) bool { return !m.Weighs() }) {
		c := Cell{Verdict: Refused, Status: http.StatusBadRequest, Field: "slow_start",
			Config: CellConfig{Pool: map[string]any{"lb_method": m, "slow_start": 10}}}
		if !m.SwitchPicks() {
			c.Dispatch = DispatchController
		}
		cells = append(cells, c)
	}
	return cells
}

// hashKeyCells: CONSISTENT_HASH by the client's address in both
// dispatches; refused with another method, and by a prefix the switch
// cannot hash under SWITCH, which the controller takes for an IPv6 pool
// that names no dispatch.
func hashKeyCells() []Cell {
	byClient := CellConfig{Pool: map[string]any{"lb_method": ConsistentHash, "hash_key": HashKeyClient}}
	short := CellConfig{Pool: map[string]any{"lb_method": ConsistentHash, "hash_key": HashKeyClient, "client_ipv6_prefix": 64}}
	cells := append(dispatchCells(byClient),
		Cell{Dispatch: DispatchSwitch, Verdict: Refused, Status: http.StatusBadRequest, Field: "client_ipv6_prefix", Config: short},
		Cell{Dispatch: DispatchSwitch, Family: "IPv6", Verdict: ByController, Shown: ShownInDispatch, Config: short})
	for _, m := range methodsWhere(func(m LBMethod) bool { return m != ConsistentHash }) {
		c := Cell{Verdict: Refused, Status: http.StatusBadRequest, Field: "hash_key",
			Config: CellConfig{Pool: map[string]any{"lb_method": m, "hash_key": HashKeyClient}}}
		if !m.SwitchPicks() {
			c.Dispatch = DispatchController
		}
		cells = append(cells, c)
	}
	return cells
}

// everyMode is the one cell of a setting that does the same in every
// mode.
var everyMode = []Cell{{Verdict: Honoured}}

// The VIP settings: persistence, which only the controller keeps for a
// client known by a prefix of its address, and a limit, which only the
// controller keeps.
var (
	persistentVIP      = CellConfig{VIP: map[string]any{"session_persistence": map[string]any{"type": PersistenceSourceIP, "timeout": 30}}}
	persistentByPrefix = CellConfig{VIP: persistentVIP.VIP, Pool: map[string]any{"client_ipv6_prefix": 64}}
	limitedVIP         = CellConfig{VIP: map[string]any{"connection_limit": 2}}
)

// settingCells are the cells of each row of settingCapabilities, by its
// Setting.
var settingCells = map[string][]Cell{
	"`session_persistence` (VIP)": append(dispatchCells(persistentVIP), byControllerCells(persistentByPrefix)...),
	"`connection_limit` (VIP)": append(byControllerCells(limitedVIP),
		Cell{Dispatch: DispatchController, OpenFlow: "1.3", Verdict: Honoured, Config: limitedVIP},
		Cell{Dispatch: DispatchController, OpenFlow: "1.0", Verdict: Honoured, Config: limitedVIP}),
	"active connections (stats; LEAST_CONNECTIONS, WEIGHTED_LEAST_CONNECTIONS, ADAPTIVE's S term)": {
		{Dispatch: DispatchSwitch, OpenFlow: "1.3", Verdict: Honoured},
		{Dispatch: DispatchSwitch, OpenFlow: "1.0", Verdict: ByController, Shown: ShownInStats},
		{Dispatch: DispatchController, OpenFlow: "1.3", Verdict: Honoured},
		{Dispatch: DispatchController, OpenFlow: "1.0", Verdict: Honoured},
	},
	"`hash_key` (pool)":   hashKeyCells(),
	"`weight` (member)":   dispatchCells(CellConfig{Pool: map[string]any{"lb_method": WeightedRoundRobin}}),
	"`slow_start` (pool)": slowStartCells(),
	"agent `NN%` (AGENT monitor)": {
		{Dispatch: DispatchSwitch, OpenFlow: "1.3", Verdict: Honoured},
		{Dispatch: DispatchController, Verdict: Honoured},
	},
	"agent `drain`, `maint` / `down`, `fail`, `stopped`": {
		{Dispatch: DispatchSwitch, OpenFlow: "1.3", Verdict: Honoured},
		{Dispatch: DispatchController, Verdict: Honoured},
	},
	"`capacity` (member)": append(dispatchCells(CellConfig{Member: map[string]any{"capacity": 1}}),
		Cell{Dispatch: DispatchController, OpenFlow: "1.0", Verdict: Honoured, Config: CellConfig{Member: map[string]any{"capacity": 1}}}),
	"`--flow-idle-timeout` (service)": {
		{Dispatch: DispatchController, OpenFlow: "1.3", Verdict: Honoured},
		{Dispatch: DispatchController, OpenFlow: "1.0", Verdict: Honoured},
	},
	"`forwarding` DSR (pool)": append(dispatchCells(CellConfig{Pool: map[string]any{"forwarding": ForwardingDSR}}),
		Cell{Verdict: Refused, Status: http.StatusBadRequest, Field: "port",
			Config: CellConfig{Pool: map[string]any{"forwarding": ForwardingDSR}, Member: map[string]any{"port": 8080}, Members: 1}}),
	"`?take_address=true` (VIP writes, `PUT /v1/config`)":                              everyMode,
	"`--max-links`, `--max-links-per-switch`, `--max-hosts`, `--max-hosts-per-switch`": everyMode,
	"members per pool": {
		{Dispatch: DispatchSwitch, Verdict: Refused, Status: http.StatusConflict, Field: "pool_id",
			Config: CellConfig{Members: SwitchSlots + 1}},
		{Dispatch: DispatchController, Verdict: Honoured, Config: CellConfig{Members: SwitchSlots + 1}},
	},
	"`--api-client-prefix4`, `--api-client-prefix6` (service)": everyMode,
	"`announce` (VIP), with `--bgp-asn`, `--bgp-peers`, `--bgp-next-hops` (service)": {
		{Dispatch: DispatchSwitch, OpenFlow: "1.3", Verdict: Honoured},
		{Dispatch: DispatchController, Verdict: Honoured},
	},
	"`sdnlb agent --allow` (on a member)": everyMode,
}
