package sdnlb

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MonitorType is how a monitor probes a member.
type MonitorType string

const (
	MonitorPING  MonitorType = "PING"  // ICMP echo
	MonitorTCP   MonitorType = "TCP"   // a TCP connect
	MonitorHTTP  MonitorType = "HTTP"  // a request whose status must be in ExpectedCodes
	MonitorHTTPS MonitorType = "HTTPS" // the same over TLS
	MonitorAgent MonitorType = "AGENT" // one line from the member's agent, on Port: how loaded it is, whether it takes connections (HAProxy's agent check)
)

// Valid reports whether t is a monitor type.
func (t MonitorType) Valid() bool {
	return t == MonitorPING || t == MonitorTCP || t == MonitorHTTP || t == MonitorHTTPS || t == MonitorAgent
}

// IsHTTP reports whether monitors of type t send HTTP requests.
func (t MonitorType) IsHTTP() bool { return t == MonitorHTTP || t == MonitorHTTPS }

// Monitor is an active health check, associated with any number of pools.
type Monitor struct {
	ID            string      `json:"id"`
	Name          string      `json:"name"`
	Type          MonitorType `json:"type"`
	Delay         Seconds     `json:"delay"`       // between probes of one member
	Timeout       Seconds     `json:"timeout"`     // for one probe; below Delay
	MaxRetries    int         `json:"max_retries"` // consecutive failures that take a member DOWN
	Rise          int         `json:"rise"`        // consecutive successes that bring it UP
	HTTPMethod    string      `json:"http_method"`
	URLPath       string      `json:"url_path"`
	ExpectedCodes string      `json:"expected_codes"` // "200", "200-299", "200,202"
	TLSVerify     bool        `json:"tls_verify"`     // HTTPS: verify the member's certificate
	Port          int         `json:"port"`           // AGENT: the agent's TCP port on the member; 0 for the other types, which probe the member's port
	AdminStateUp  bool        `json:"admin_state_up"`
	PoolIDs       []string    `json:"pool_ids"` // read-only: the pools it is associated with
	CreatedAt     time.Time   `json:"created_at"`
	UpdatedAt     time.Time   `json:"updated_at"`
}

// NewMonitor returns a monitor with the LBaaS defaults.
func NewMonitor() *Monitor {
	return &Monitor{
		Type: MonitorTCP, Delay: 5, Timeout: 2, MaxRetries: 3, Rise: 2,
		HTTPMethod: "GET", URLPath: "/", ExpectedCodes: "200",
		AdminStateUp: true, PoolIDs: []string{},
	}
}

// MinMonitorDelay bounds how often one member may be probed.
const MinMonitorDelay = Seconds(0.05)

var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "OPTIONS": true, "PATCH": true}

// Validate checks the fields a client sets.
func (m *Monitor) Validate() error {
	if m.ID != "" {
		if err := validateID(m.ID); err != nil {
			return err
		}
	}
	if err := validateName(m.Name); err != nil {
		return err
	}
	if m.Type == "" {
		return FieldErrorf(EINVALID, "type", "type is required")
	}
	if !m.Type.Valid() {
		return FieldErrorf(EINVALID, "type", "type must be PING, TCP, HTTP, HTTPS or AGENT, not %q", m.Type)
	}
	switch {
	case m.Type == MonitorAgent && m.Port == 0:
		return FieldErrorf(EINVALID, "port", "port is required: an AGENT monitor asks the agent on that TCP port of each member")
	case m.Type == MonitorAgent && (m.Port < 1 || m.Port > 65535):
		return FieldErrorf(EINVALID, "port", "port must be 1-65535, not %d", m.Port)
	case m.Type != MonitorAgent && m.Port != 0:
		return FieldErrorf(EINVALID, "port", "port is for AGENT monitors only and must be 0 for a %s monitor, which probes the member's own port, not %d", m.Type, m.Port)
	}
	// Negated, so that NaN fails too.
	if !(m.Delay >= MinMonitorDelay && m.Delay <= 3600) {
		return FieldErrorf(EINVALID, "delay", "delay must be %v-3600 seconds, not %v", float64(MinMonitorDelay), float64(m.Delay))
	}
	if !(m.Timeout > 0 && m.Timeout < m.Delay) {
		return FieldErrorf(EINVALID, "timeout", "timeout must be above 0 and below delay (%v), not %v", float64(m.Delay), float64(m.Timeout))
	}
	if m.MaxRetries < 1 || m.MaxRetries > 10 {
		return FieldErrorf(EINVALID, "max_retries", "max_retries must be 1-10, not %d", m.MaxRetries)
	}
	if m.Rise < 1 || m.Rise > 10 {
		return FieldErrorf(EINVALID, "rise", "rise must be 1-10, not %d", m.Rise)
	}
	if m.Type.IsHTTP() {
		if !httpMethods[m.HTTPMethod] {
			return FieldErrorf(EINVALID, "http_method", "http_method %q is not an HTTP method", m.HTTPMethod)
		}
		if err := validateURLPath(m.URLPath); err != nil {
			return FieldErrorf(EINVALID, "url_path", "url_path must be an absolute path of at most 2048 bytes: %v", err)
		}
		if _, err := ParseExpectedCodes(m.ExpectedCodes); err != nil {
			return FieldErrorf(EINVALID, "expected_codes", "expected_codes: %v", err)
		}
	}
	return nil
}

// validateURLPath checks that path, with its query, can go on a request
// line as it is: no spaces, control characters or fragment, and only
// well-formed %-escapes.
func validateURLPath(path string) error {
	if len(path) > 2048 {
		return fmt.Errorf("%d bytes", len(path))
	}
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("%q does not start with /", path)
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c <= ' ' || c == 0x7f || c == '#' || c >= 0x80 {
			return fmt.Errorf("%q holds %q: escape it as %%%02X", path, c, c)
		}
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return fmt.Errorf("%q: a bad %%-escape", path)
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return fmt.Errorf("%q: a bad query", path)
	}
	return nil
}

// MonitorUpdate names the fields an update changes; nil leaves a field as it is.
type MonitorUpdate struct {
	Name          *string
	Type          *MonitorType
	Delay         *Seconds
	Timeout       *Seconds
	MaxRetries    *int
	Rise          *int
	HTTPMethod    *string
	URLPath       *string
	ExpectedCodes *string
	TLSVerify     *bool
	Port          *int
	AdminStateUp  *bool
}

// Apply writes the update onto m.
func (u *MonitorUpdate) Apply(m *Monitor) {
	setIf(&m.Name, u.Name)
	setIf(&m.Type, u.Type)
	setIf(&m.Delay, u.Delay)
	setIf(&m.Timeout, u.Timeout)
	setIf(&m.MaxRetries, u.MaxRetries)
	setIf(&m.Rise, u.Rise)
	setIf(&m.HTTPMethod, u.HTTPMethod)
	setIf(&m.URLPath, u.URLPath)
	setIf(&m.ExpectedCodes, u.ExpectedCodes)
	setIf(&m.TLSVerify, u.TLSVerify)
	setIf(&m.Port, u.Port)
	setIf(&m.AdminStateUp, u.AdminStateUp)
}

// MonitorFilter selects monitors; nil fields match everything.
type MonitorFilter struct {
	PoolID *string
	Page
}

// MonitorService manages monitors.
type MonitorService interface {
	FindMonitorByID(ctx context.Context, id string) (*Monitor, error)
	FindMonitors(ctx context.Context, filter MonitorFilter) ([]*Monitor, error)
	CreateMonitor(ctx context.Context, m *Monitor) error
	UpdateMonitor(ctx context.Context, id string, upd MonitorUpdate) (*Monitor, error)
	// UpdateAllMonitors applies upd to every monitor in one transaction
	// (Floodlight's enable/disable-all and period routes) and returns how
	// many it changed. Each result must still validate.
	UpdateAllMonitors(ctx context.Context, upd MonitorUpdate) (int, error)
	// DeleteMonitor refuses with ECONFLICT while pools use the monitor,
	// unless cascade, which dissociates it from them.
	DeleteMonitor(ctx context.Context, id string, cascade bool) error
}

// CodeRange is an inclusive range of HTTP status codes.
type CodeRange struct{ Lo, Hi int }

// ExpectedCodes is a parsed expected_codes value.
type ExpectedCodes []CodeRange

// Match reports whether status is expected.
func (e ExpectedCodes) Match(status int) bool {
	for _, r := range e {
		if status >= r.Lo && status <= r.Hi {
			return true
		}
	}
	return false
}

// ParseExpectedCodes parses "200", "200-299" or "200,202" (and mixes such as
// "200,300-302"); codes are 100-599.
func ParseExpectedCodes(s string) (ExpectedCodes, error) {
	if s == "" {
		return nil, fmt.Errorf("empty")
	}
	var codes ExpectedCodes
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		if !isRange {
			hi = lo
		}
		l, err1 := parseStatusCode(lo)
		h, err2 := parseStatusCode(hi)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q is not a status code or range of codes 100-599", part)
		}
		if l > h {
			return nil, fmt.Errorf("range %q runs backwards", part)
		}
		codes = append(codes, CodeRange{l, h})
	}
	return codes, nil
}

func parseStatusCode(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 100 || n > 599 {
		return 0, fmt.Errorf("bad code %q", s)
	}
	return n, nil
}
