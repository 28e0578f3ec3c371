package sdnlb

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// ETag is the entity tag of an object last written at updatedAt: every
// write moves updated_at, so a tag names one version of the object.
func ETag(updatedAt time.Time) string {
	return `"` + strconv.FormatInt(updatedAt.UnixNano(), 36) + `"`
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
	want, ok := ctx.Value(ifMatchKey{}).(string)
	if !ok {
		return nil
	}
	have := ETag(updatedAt)
	for _, tag := range strings.Split(want, ",") {
		if tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/"); tag == "*" || tag == have {
			return nil
		}
	}
	return Errorf(EPRECONDITION, "the object changed since it was read (its ETag is %s, not %s): read it again", have, want)
}
