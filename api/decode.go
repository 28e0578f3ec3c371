package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sdnlb/sdnlb"
)

const (
	mediaJSON       = "application/json"
	mediaMergePatch = "application/merge-patch+json"
)

// decodeJSON reads the body of a native request into v, refusing unknown
// fields, a second value, other content types (415) and bodies over the
// limit (413). Errors name the JSON field at fault where there is one.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if err := checkContentType(r); err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

// decodeStrict decodes body, which must hold one JSON value and not null,
// into v, refusing unknown fields.
func decodeStrict(body []byte, v any) error {
	if isJSONNull(body) {
		return errNullBody
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return sdnlb.Errorf(sdnlb.EINVALID, "the body must hold exactly one JSON object")
	}
	return nil
}

// errNullBody refuses a body of JSON null, which would decode as {}: a PUT
// would reset the object.
var errNullBody = sdnlb.Errorf(sdnlb.EINVALID, "the body must be a JSON object, not null")

func isJSONNull(body []byte) bool {
	return string(bytes.TrimSpace(body)) == "null"
}

// checkContentType requires a JSON body: application/json, or on PATCH
// application/merge-patch+json, in UTF-8; a whole configuration may be
// YAML too.
func checkContentType(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if isJSONMedia(ct, r.Method) {
		return nil
	}
	want := mediaJSON
	switch {
	case r.Method == http.MethodPatch:
		want += " or " + mediaMergePatch
	case isConfigPut(r):
		want += " or " + mediaYAML
	}
	if ct == "" {
		ct = "none"
	}
	return sdnlb.Errorf(sdnlb.EUNSUPPORTED, "Content-Type must be %s (utf-8), not %s", want, ct)
}

// isJSONMedia reports whether the Content-Type ct names JSON, as method
// may carry it.
func isJSONMedia(ct, method string) bool {
	media, params, err := mime.ParseMediaType(ct)
	if err != nil || !(media == mediaJSON || (media == mediaMergePatch && method == http.MethodPatch)) {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8")
}

// readBody reads the whole body, up to bodyLimit, and refuses one that is
// not UTF-8: encoding/json would store replacement characters instead.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	limit := bodyLimit(r)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, errTooLarge(limit)
	} else if err != nil {
		return nil, sdnlb.Errorf(sdnlb.EINVALID, "reading the body: %v", err)
	}
	if !utf8.Valid(body) {
		return nil, sdnlb.Errorf(sdnlb.EINVALID, "the body is not valid UTF-8")
	}
	return body, nil
}

// jsonError maps encoding/json errors to EINVALID naming the field.
func jsonError(err error) error {
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	var domainErr *sdnlb.Error
	switch {
	case errors.As(err, &domainErr): // from a field's own UnmarshalJSON
		return err
	case errors.Is(err, io.EOF):
		return sdnlb.Errorf(sdnlb.EINVALID, "the body is empty; a JSON object is required")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return sdnlb.Errorf(sdnlb.EINVALID, "the body is truncated JSON")
	case errors.As(err, &syntax):
		return sdnlb.Errorf(sdnlb.EINVALID, "the body is not valid JSON at byte %d: %v", syntax.Offset, syntax)
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return sdnlb.Errorf(sdnlb.EINVALID, "the body must be a JSON object, not %s", typeErr.Value)
		}
		return sdnlb.FieldErrorf(sdnlb.EINVALID, typeErr.Field, "%s must be %s, not %s", typeErr.Field, jsonTypeName(typeErr.Type.Kind().String()), typeErr.Value)
	}
	// encoding/json has no typed error for unknown fields; its message is
	// `json: unknown field "name"`.
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if field, uerr := strconv.Unquote(name); uerr == nil {
			return sdnlb.FieldErrorf(sdnlb.EINVALID, field, "unknown field %q", field)
		}
	}
	return sdnlb.Errorf(sdnlb.EINVALID, "the body is not valid: %v", err)
}

func jsonTypeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "bool":
		return "true or false"
	case kind == "string":
		return "a string"
	case kind == "ptr", kind == "struct", kind == "map":
		return "an object"
	case kind == "slice":
		return "an array"
	}
	return "a " + kind
}

// readOnly is a request field a client may not set. It decodes anything so
// that the handler can name the field in a 400 instead of "unknown field".
type readOnly struct{ set bool }

func (ro *readOnly) UnmarshalJSON([]byte) error {
	ro.set = true
	return nil
}

// rejectReadOnly returns EINVALID naming the first read-only field given,
// counting the id on update.
func rejectReadOnly(update bool, id *string, fields ...namedReadOnly) error {
	for _, f := range fields {
		if f.value.set {
			return sdnlb.FieldErrorf(sdnlb.EINVALID, f.name, "%s is read-only", f.name)
		}
	}
	if update && id != nil {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, "id", "id is read-only")
	}
	return nil
}

type namedReadOnly struct {
	name  string
	value readOnly
}

// pageFromQuery reads ?limit= and ?after=.
func pageFromQuery(r *http.Request) (sdnlb.Page, error) {
	q := r.URL.Query()
	page := sdnlb.Page{Limit: sdnlb.DefaultPageLimit, After: q.Get("after")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > sdnlb.MaxPageLimit {
			return page, sdnlb.FieldErrorf(sdnlb.EINVALID, "limit", "limit must be 1-%d, not %q", sdnlb.MaxPageLimit, s)
		}
		page.Limit = n
	}
	return page, nil
}

// queryFilter returns a pointer to the query value, nil when absent.
func queryFilter(r *http.Request, name string) *string {
	if v, ok := r.URL.Query()[name]; ok {
		return &v[0]
	}
	return nil
}
