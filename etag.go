package sdnlb

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strconv"
	"strings"
	"time"
)

// ETag is the entity tag of an object last written at updatedAt: every
// write moves updated_at, so a tag names one version of the object.
func ETag(updatedAt time.Time) string {
	return `"` + strconv.FormatInt(updatedAt.UnixNano(), 36) + `"`
}

// ConfigETag is the entity tag of a whole configuration: a digest of the
// kind, id and updated_at of every object. Any create, update or delete
// changes it, as it changes the objects' own tags; a member's health,
// which no configuration declares, does not.
func ConfigETag(cfg *Config) string {
	d := NewConfigDigest()
	for _, v := range cfg.VIPs {
		d.Add(KindVIP, v.ID, v.UpdatedAt)
	}
	for _, p := range cfg.Pools {
		d.Add(KindPool, p.ID, p.UpdatedAt)
	}
	for _, m := range cfg.Members {
		d.Add(KindMember, m.ID, m.UpdatedAt)
	}
	for _, m := range cfg.Monitors {
		d.Add(KindMonitor, m.ID, m.UpdatedAt)
	}
	return d.ETag()
}

// ConfigDigest computes ConfigETag one object at a time, for a store that
// reads the objects without holding them all: add them in a Config's
// order, VIPs, pools, members, monitors, each kind sorted by id.
type ConfigDigest struct {
	h   hash.Hash
	buf []byte
}

// NewConfigDigest returns the digest of an empty configuration.
func NewConfigDigest() *ConfigDigest { return &ConfigDigest{h: sha256.New()} }

// Add adds an object. Each field is length-prefixed, so that no two lists
// of objects digest alike.
func (d *ConfigDigest) Add(kind EventKind, id string, updatedAt time.Time) {
	d.buf = binary.AppendUvarint(d.buf[:0], uint64(len(kind)))
	d.buf = append(d.buf, kind...)
	d.buf = binary.AppendUvarint(d.buf, uint64(len(id)))
	d.buf = append(d.buf, id...)
	d.buf = binary.BigEndian.AppendUint64(d.buf, uint64(updatedAt.UnixNano()))
	d.h.Write(d.buf)
}

// ETag is the tag of the objects added so far.
func (d *ConfigDigest) ETag() string {
	return `"` + base64.RawURLEncoding.EncodeToString(d.h.Sum(nil)[:18]) + `"`
}

type ifMatchKey struct{}

// WithIfMatch makes the update or delete done with ctx conditional on the
// object's ETag: ifMatch is an If-Match header's value, a comma-separated
// list of tags or "*".
func WithIfMatch(ctx context.Context, ifMatch string) context.Context {
	return context.WithValue(ctx, ifMatchKey{}, ifMatch)
}

// HasIfMatch reports whether ctx carries a condition to check.
func HasIfMatch(ctx context.Context) bool {
	_, ok := ctx.Value(ifMatchKey{}).(string)
	return ok
}

// CheckIfMatch returns EPRECONDITION when ctx carries an If-Match that
// the object's current tag does not satisfy: someone else wrote it since
// the client read it.
func CheckIfMatch(ctx context.Context, updatedAt time.Time) error {
	return checkIfMatch(ctx, "the object", ETag(updatedAt))
}

// CheckConfigIfMatch is CheckIfMatch for a whole configuration, whose tag
// is ConfigETag's; it computes the tag only when ctx carries an If-Match.
func CheckConfigIfMatch(ctx context.Context, cfg *Config) error {
	if !HasIfMatch(ctx) {
		return nil
	}
	return checkIfMatch(ctx, "the configuration", ConfigETag(cfg))
}

// checkIfMatch checks ctx's If-Match against have, the current tag of
// what names.
func checkIfMatch(ctx context.Context, what, have string) error {
	want, ok := ctx.Value(ifMatchKey{}).(string)
	if !ok {
		return nil
	}
	for _, tag := range strings.Split(want, ",") {
		if tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/"); tag == "*" || tag == have {
			return nil
		}
	}
	return Errorf(EPRECONDITION, "%s changed since it was read (its ETag is %s, not %s): read it again", what, have, want)
}
