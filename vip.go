package sdnlb

import (
	"context"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// VIPStatus says whether a VIP can take new connections. The store derives
// it when it reads a VIP.
type VIPStatus string

const (
	VIPActive   VIPStatus = "ACTIVE"   // at least one member is in rotation
	VIPDown     VIPStatus = "DOWN"     // no pool, or no member in rotation: new connections are refused
	VIPDisabled VIPStatus = "DISABLED" // admin_state_up is false
)

// PersistenceSourceIP is the only session persistence type: a client's new
// connections go to the member its last one went to, for Timeout seconds.
const PersistenceSourceIP = "SOURCE_IP"

// SessionPersistence keeps a client on one member across connections.
type SessionPersistence struct {
	Type    string `json:"type" enums:"SOURCE_IP" example:"SOURCE_IP"`
	Timeout int    `json:"timeout" example:"60" minimum:"1" maximum:"86400"` // seconds after the client's last connection ends, 1-86400
}

// VIP is a virtual address clients connect to, IPv4 or IPv6. (Address, Protocol, Port) is
// unique; Port is ignored for ICMP and ANY, and an ANY VIP is alone on its
// address. Port 0 serves every port of the address (as Floodlight does for
// a VIP without a port); a VIP on the connection's own port takes
// precedence.
type VIP struct {
	ID                 string              `json:"id"`
	Name               string              `json:"name"`
	Description        string              `json:"description"`
	Address            string              `json:"address"` // IPv4 or IPv6, in canonical form
	Protocol           Protocol            `json:"protocol"`
	Port               int                 `json:"port"`
	PoolID             string              `json:"pool_id"` // the pool whose vip_id is this VIP, "" when none
	ConnectionLimit    int                 `json:"connection_limit"`
	SessionPersistence *SessionPersistence `json:"session_persistence" extensions:"x-nullable"` // null: none
	AdminStateUp       bool                `json:"admin_state_up"`
	// Announce lets a node that speaks BGP announce the VIP's address
	// (a /32 or /128) while a member of its pool is in rotation.
	Announce  bool      `json:"announce"`
	MAC       string    `json:"mac"`    // set by the store from the id
	Status    VIPStatus `json:"status"` // derived by the store
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Num is the VIP's number, which the cookies of its flows carry: the
	// store gives it at creation and never again to another VIP, so every
	// process and node names the VIP alike on the switches. It is not in
	// the API: it means something only on the switches, and a store that
	// imports an exported configuration gives its own numbers.
	Num uint32 `json:"-"`
}

// NumLimit bounds the numbers of VIPs and members (VIP.Num, Member.Num):
// the cookies of their flows carry them in 24 bits. 0 is no number.
const NumLimit = 1 << 24

// NeedsController names the setting of v that only the controller's
// per-connection decision keeps when pool p serves v, "" when none does:
// p is then dispatched by the controller. A connection limit needs it;
// session persistence only when p knows an IPv6 client by less than its
// whole address, since the switch hashes a client's whole address.
func (v *VIP) NeedsController(p *Pool) string {
	switch {
	case v.ConnectionLimit > 0:
		return "connection_limit"
	case v.SessionPersistence != nil && p.ClientIPv6Prefix != 128:
		return fmt.Sprintf("session_persistence by client_ipv6_prefix %d", p.ClientIPv6Prefix)
	}
	return ""
}

// NewVIP returns a VIP with the defaults: no connection limit, admin up,
// announced.
func NewVIP() *VIP {
	return &VIP{Protocol: ProtocolTCP, ConnectionLimit: -1, AdminStateUp: true, Announce: true}
}

// Validate checks the fields a client sets and writes the address in its
// canonical form (see ParseUnicastIP), which the store compares. It does
// not look at other objects.
func (v *VIP) Validate() error {
	if v.ID != "" {
		if err := validateID(v.ID); err != nil {
			return err
		}
	}
	if err := validateName(v.Name); err != nil {
		return err
	}
	if err := validateDescription(v.Description); err != nil {
		return err
	}
	if v.Address == "" {
		return FieldErrorf(EINVALID, "address", "address is required")
	}
	a, err := ParseUnicastIP(v.Address)
	if err != nil {
		return FieldErrorf(EINVALID, "address", "address: %v", err)
	}
	v.Address = a.String()
	if !v.Protocol.Valid() {
		return FieldErrorf(EINVALID, "protocol", "protocol must be one of %v, not %q", Protocols, v.Protocol)
	}
	if v.Port < 0 || v.Port > 65535 {
		return FieldErrorf(EINVALID, "port", "port must be 0-65535 (0: every port), not %d", v.Port)
	}
	if v.ConnectionLimit < -1 || v.ConnectionLimit == 0 {
		return FieldErrorf(EINVALID, "connection_limit", "connection_limit must be -1 (none) or positive, not %d", v.ConnectionLimit)
	}
	if sp := v.SessionPersistence; sp != nil {
		if sp.Type != PersistenceSourceIP {
			return FieldErrorf(EINVALID, "session_persistence.type", "session_persistence.type must be %s, not %q", PersistenceSourceIP, sp.Type)
		}
		if sp.Timeout < 1 || sp.Timeout > 86400 {
			return FieldErrorf(EINVALID, "session_persistence.timeout", "session_persistence.timeout must be 1-86400 seconds, not %d", sp.Timeout)
		}
	}
	return nil
}

// VIPUpdate names the fields an update changes; nil leaves a field as it is.
// SessionPersistence is changed when SetSessionPersistence is true (to nil
// to remove it).
type VIPUpdate struct {
	Name                  *string
	Description           *string
	Address               *string
	Protocol              *Protocol
	Port                  *int
	PoolID                *string
	ConnectionLimit       *int
	SetSessionPersistence bool
	SessionPersistence    *SessionPersistence
	AdminStateUp          *bool
	Announce              *bool
}

// Apply writes the update onto v.
func (u *VIPUpdate) Apply(v *VIP) {
	setIf(&v.Name, u.Name)
	setIf(&v.Description, u.Description)
	setIf(&v.Address, u.Address)
	setIf(&v.Protocol, u.Protocol)
	setIf(&v.Port, u.Port)
	setIf(&v.PoolID, u.PoolID)
	setIf(&v.ConnectionLimit, u.ConnectionLimit)
	setIf(&v.AdminStateUp, u.AdminStateUp)
	setIf(&v.Announce, u.Announce)
	if u.SetSessionPersistence {
		v.SessionPersistence = u.SessionPersistence
	}
}

// VIPFilter selects VIPs; nil fields match everything.
type VIPFilter struct {
	Address *string
	PoolID  *string
	Page
}

// VIPService manages VIPs. Creating or updating a VIP with a PoolID links
// that pool to it (the pool's VIPID is the stored side of the link).
type VIPService interface {
	FindVIPByID(ctx context.Context, id string) (*VIP, error)
	FindVIPs(ctx context.Context, filter VIPFilter) ([]*VIP, error)
	// CreateVIP validates v, stores it and fills in the id (a new UUID when
	// empty), MAC, status and timestamps. An address a member of any pool
	// has is ECONFLICT, field address, as is one where another VIP listens
	// on the same protocol and port; UpdateVIP's address likewise.
	CreateVIP(ctx context.Context, v *VIP) error
	// UpdateVIP refuses a port that a member of the VIP's DSR pool cannot
	// serve (EINVALID, field port). Both refuse a pool_id that would link
	// a DSR pool with such a member (EINVALID, field pool_id).
	UpdateVIP(ctx context.Context, id string, upd VIPUpdate) (*VIP, error)
	// DeleteVIP refuses with ECONFLICT while a pool points at the VIP,
	// unless cascade, which deletes the pool and its members too.
	DeleteVIP(ctx context.Context, id string, cascade bool) error
}

func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// MaxIDLength, MaxNameLength and MaxDescriptionLength bound what a client
// may write, in bytes.
const (
	MaxIDLength          = 64
	MaxNameLength        = 255
	MaxDescriptionLength = 1024
)

// ValidID reports whether id is in the alphabet of client-chosen ids
// (Floodlight scripts use "1", "2"): 1 to MaxIDLength ASCII letters, digits,
// '-', '_' and '.', but not "." or "..". Such an id is one path segment as
// it is, so every Location header the API writes resolves.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDLength || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func validateID(id string) error {
	if !ValidID(id) {
		return FieldErrorf(EINVALID, "id", "id must be 1-%d letters, digits, '-', '_' or '.' (not \".\" or \"..\"), not %q", MaxIDLength, id)
	}
	return nil
}

// validateName accepts up to MaxNameLength bytes of UTF-8 text without
// control characters.
func validateName(name string) error {
	if len(name) > MaxNameLength {
		return FieldErrorf(EINVALID, "name", "name must be at most %d bytes", MaxNameLength)
	}
	if !printableText(name, false) {
		return FieldErrorf(EINVALID, "name", "name must be UTF-8 text without control characters")
	}
	return nil
}

// validateDescription accepts up to MaxDescriptionLength bytes of UTF-8
// text; line breaks and tabs are its only control characters.
func validateDescription(desc string) error {
	if len(desc) > MaxDescriptionLength {
		return FieldErrorf(EINVALID, "description", "description must be at most %d bytes", MaxDescriptionLength)
	}
	if !printableText(desc, true) {
		return FieldErrorf(EINVALID, "description", "description must be UTF-8 text without control characters other than tabs and line breaks")
	}
	return nil
}

// printableText reports whether s is valid UTF-8 free of control and
// bidirectional-override characters; multiline allows \t, \n and \r.
func printableText(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case multiline && (r == '\t' || r == '\n' || r == '\r'):
		case unicode.IsControl(r), r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return false
		}
	}
	return true
}
