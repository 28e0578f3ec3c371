package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/sdnlb/sdnlb"
)

// Floodlight's LoadBalancer reads flat JSON objects whose values it takes as
// text, and writes objects whose values are all strings in a fixed key
// order, with the pool's "poolMembers" key repeated once per member. This
// file holds both directions.

// flatRequest is a decoded Floodlight request body: key → value as text.
// Keys whose value is "" or null are left out, as Floodlight skips them.
type flatRequest map[string]string

// decodeFlat reads a Floodlight request body: a JSON object sent as
// application/json or, as Floodlight's own clients may, with no
// Content-Type at all or as curl -d labels it (see curlForm). Other types
// are refused (415): a browser form or a cross-site fetch can send
// text/plain or form-urlencoded without asking the API first. Keys not in
// allowed are refused, naming the key.
func decodeFlat(w http.ResponseWriter, r *http.Request, allowed []string) (flatRequest, error) {
	if r.Header.Get("Content-Type") != "" && !curlForm(r) {
		if err := checkContentType(r); err != nil {
			return nil, err
		}
	}
	body, err := readBody(w, r)
	if err != nil {
		return nil, err
	}
	if err := checkDuplicateKeys(body); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, jsonError(err)
	}
	if raw == nil {
		return nil, errNullBody
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, sdnlb.Errorf(sdnlb.EINVALID, "the body must hold exactly one JSON object")
	}
	req := flatRequest{}
	for key, v := range raw {
		if !contains(allowed, key) {
			return nil, sdnlb.FieldErrorf(sdnlb.EINVALID, key, "unknown field %q; this route takes %s", key, strings.Join(allowed, ", "))
		}
		switch v := v.(type) {
		case nil:
		case string:
			if v != "" {
				req[key] = v
			}
		case json.Number:
			req[key] = v.String()
		case bool:
			req[key] = strconv.FormatBool(v)
		default:
			return nil, sdnlb.FieldErrorf(sdnlb.EINVALID, key, "%s must be a string or a number; nested values are not supported", key)
		}
	}
	return req, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// flatReader reads typed values out of a flatRequest. It keeps the first
// value it cannot read, and reads nothing after it, so that a handler reads
// every key it knows and checks for an error once.
type flatReader struct {
	req flatRequest
	err error
}

// str returns the value of key as it is, nil when the key is absent.
func (f flatRequest) str(key string) *string {
	if v, ok := f[key]; ok {
		return &v
	}
	return nil
}

func (rd *flatReader) str(key string) *string { return rd.req.str(key) }

// ipv4 reads an address. The Floodlight routes take IPv4 only, as
// Floodlight's did; IPv6 VIPs and members are written on /v1. What else
// is wrong with the address the domain's Validate says.
func (rd *flatReader) ipv4(key string) *string {
	v := rd.str(key)
	if v != nil && rd.err == nil && sdnlb.IsIPv6(*v) {
		rd.err = sdnlb.FieldErrorf(sdnlb.EINVALID, key,
			"%s must be an IPv4 address, not %q: the Floodlight routes are IPv4, as Floodlight's were; write IPv6 VIPs and members on /v1", key, *v)
		return nil
	}
	return v
}

// read parses the value of key, nil when the key is absent. want says what
// the value must be, for the error.
func read[T any](rd *flatReader, key, want string, parse func(v string) (T, bool)) *T {
	v, ok := rd.req[key]
	if !ok || rd.err != nil {
		return nil
	}
	x, ok := parse(strings.TrimSpace(v))
	if !ok {
		rd.err = sdnlb.FieldErrorf(sdnlb.EINVALID, key, "%s must be %s, not %q", key, want, v)
		return nil
	}
	return &x
}

func (rd *flatReader) int(key string) *int {
	return read(rd, key, "an integer", parseInt)
}

func (rd *flatReader) seconds(key string) *sdnlb.Seconds {
	return read(rd, key, "a finite number of seconds", func(v string) (sdnlb.Seconds, bool) {
		x, ok := parseDecimal(v)
		return sdnlb.Seconds(x), ok
	})
}

// parseInt reads a decimal integer: digits with an optional minus sign, as
// JSON writes them, and in the range of an int.
func parseInt(v string) (int, bool) {
	if !isJSONNumber(v) || strings.ContainsAny(v, ".eE") {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// parseDecimal reads a number as JSON writes it, refusing what
// strconv.ParseFloat takes besides (NaN, Inf, hex, underscores) and
// exponents beyond a float64.
func parseDecimal(v string) (float64, bool) {
	if !isJSONNumber(v) {
		return 0, false
	}
	x, err := strconv.ParseFloat(v, 64)
	return x, err == nil && !math.IsInf(x, 0) && !math.IsNaN(x)
}

// isJSONNumber reports whether v is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(v string) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(v) && '0' <= v[i] && v[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(v) && v[i] == '-' {
		i++
	}
	if i < len(v) && v[i] == '0' {
		i++
	} else if !digits() {
		return false
	}
	if i < len(v) && v[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(v)
}

// protocol reads TCP, UDP, ICMP or ANY in any case, or the IP protocol
// numbers Floodlight shows them by (0 for any).
func (rd *flatReader) protocol(key string) *sdnlb.Protocol {
	return read(rd, key, "TCP, UDP, ICMP or ANY (6, 17, 1 or 0)", func(v string) (sdnlb.Protocol, bool) {
		for p, number := range ipProtocolNumbers {
			if v == number {
				return p, true
			}
		}
		p := sdnlb.Protocol(strings.ToUpper(v))
		return p, p.Valid()
	})
}

// adminState reads Floodlight's admin_state: 1/0, true/false or up/down.
func (rd *flatReader) adminState(key string) *bool {
	return read(rd, key, "1 (up) or 0 (down)", func(v string) (bool, bool) {
		switch strings.ToLower(v) {
		case "1", "true", "up":
			return true, true
		case "0", "false", "down":
			return false, true
		}
		return false, false
	})
}

var compatLBMethods = map[string]sdnlb.LBMethod{
	"RR": sdnlb.RoundRobin, "1": sdnlb.RoundRobin,
	"STATISTICS": sdnlb.LeastBytes, "2": sdnlb.LeastBytes,
	"WRR": sdnlb.WeightedRoundRobin, "3": sdnlb.WeightedRoundRobin,
}

// lbMethod maps Floodlight's RR, STATISTICS and WRR (or 1, 2, 3) and
// accepts the native names too.
func (rd *flatReader) lbMethod(key string) *sdnlb.LBMethod {
	want := fmt.Sprintf("RR, WRR, STATISTICS (1, 3, 2) or one of %v", sdnlb.LBMethods)
	return read(rd, key, want, func(v string) (sdnlb.LBMethod, bool) {
		m := sdnlb.LBMethod(strings.ToUpper(v))
		if native, ok := compatLBMethods[string(m)]; ok {
			m = native
		}
		return m, sdnlb.ValidLBMethod(m)
	})
}

// monitorType maps Floodlight's ICMP to PING; TCP, HTTP and HTTPS are ours.
func (rd *flatReader) monitorType(key string) *sdnlb.MonitorType {
	return read(rd, key, "ICMP (PING), TCP, HTTP or HTTPS", func(v string) (sdnlb.MonitorType, bool) {
		t := sdnlb.MonitorType(strings.ToUpper(v))
		if t == "ICMP" {
			t = sdnlb.MonitorPING
		}
		return t, t.Valid() && t != sdnlb.MonitorAgent // an agent needs a port, which Floodlight has no key for
	})
}

// orderedObject is a JSON object written in the order of its pairs, keys
// repeating where Floodlight repeats them. A nil value is written as null.
type orderedObject []pair

type pair struct {
	key   string
	value *string
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, p := range o {
		if i > 0 {
			b = append(b, ',')
		}
		b = p.appendJSON(b)
	}
	return append(b, '}'), nil
}

// appendJSON appends "key":value to b.
func (p pair) appendJSON(b []byte) []byte {
	k, _ := json.Marshal(p.key)
	b = append(append(b, k...), ':')
	if p.value == nil {
		return append(b, "null"...)
	}
	v, _ := json.Marshal(*p.value)
	return append(b, v...)
}

func text(s string) *string { return &s }

// nullIfEmpty writes "" as null, as Floodlight does for unset fields.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func itoa(n int) *string { return text(strconv.Itoa(n)) }

// ipProtocolNumbers are the protocols as Floodlight shows them: its IP
// protocol number, 0 for every protocol.
var ipProtocolNumbers = map[sdnlb.Protocol]string{sdnlb.ProtocolICMP: "1", sdnlb.ProtocolTCP: "6", sdnlb.ProtocolUDP: "17",
	sdnlb.ProtocolAny: "0"}

func compatVIP(v *sdnlb.VIP) orderedObject {
	return orderedObject{
		{"name", nullIfEmpty(v.Name)},
		{"id", text(v.ID)},
		{"address", text(v.Address)},
		{"protocol", text(ipProtocolNumbers[v.Protocol])},
		{"port", itoa(v.Port)},
	}
}

var compatLBMethodNames = map[sdnlb.LBMethod]string{
	sdnlb.RoundRobin:         "Round-Robin",
	sdnlb.LeastBytes:         "Statistics",
	sdnlb.WeightedRoundRobin: "Weighted Round-Robin",
}

// compatUnsetLBMethod is how Floodlight shows a pool whose method was
// never set (lbMethod 0).
const compatUnsetLBMethod = "Invalid Method"

// compatPool is a pool as Floodlight shows it, but for its poolMembers,
// which compatPools repeats after these.
func compatPool(p *sdnlb.Pool) orderedObject {
	method, ok := compatLBMethodNames[p.LBMethod]
	switch {
	case p.LBMethodUnset:
		method = compatUnsetLBMethod
	case !ok:
		method = string(p.LBMethod) // a method Floodlight does not have keeps its own name
	}
	return orderedObject{
		{"id", text(p.ID)},
		{"name", nullIfEmpty(p.Name)},
		{"vipId", nullIfEmpty(p.VIPID)},
		{"lbMethod", text(method)},
	}
}

var compatMemberStatus = map[sdnlb.MemberStatus]string{
	sdnlb.MemberNoMonitor: "Alive",
	sdnlb.MemberUp:        "Active",
	sdnlb.MemberDown:      "Inactive",
	sdnlb.MemberDraining:  "Inactive",
}

func compatMember(m *sdnlb.Member, vipID string) orderedObject {
	return orderedObject{
		{"id", text(m.ID)},
		{"address", text(m.Address)},
		{"port", itoa(m.Port)},
		{"poolId", text(m.PoolID)},
		{"vipId", nullIfEmpty(vipID)},
		{"weight", itoa(m.Weight)},
		{"status", text(compatMemberStatus[m.Status])},
	}
}

var compatMonitorTypes = map[sdnlb.MonitorType]string{sdnlb.MonitorPING: "1", sdnlb.MonitorTCP: "6"}

func compatMonitor(m *sdnlb.Monitor) orderedObject {
	typ, ok := compatMonitorTypes[m.Type]
	if !ok {
		typ = string(m.Type) // HTTP and HTTPS have no IP protocol number
	}
	var poolID *string
	if len(m.PoolIDs) > 0 {
		poolID = text(m.PoolIDs[0])
	}
	return orderedObject{
		{"id", text(m.ID)},
		{"address", nil}, // sdnlb probes every member, not one address
		{"name", nullIfEmpty(m.Name)},
		{"type", text(typ)},
		{"poolId", poolID},
	}
}

func compatStats(st *sdnlb.PoolStats) orderedObject {
	return orderedObject{
		{"Bytes In", text(strconv.FormatUint(st.BytesIn, 10))},
		{"Bytes Out", text(strconv.FormatUint(st.BytesOut, 10))},
		// Every connection is a pair of flows, client→member and back.
		{"Active Flows", text(strconv.FormatUint(2*st.ActiveConnections, 10))},
	}
}

// writeRaw writes a body Floodlight builds by hand, spacing included.
func writeRaw(w http.ResponseWriter, body string) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(body))
	return nil
}
