package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
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
	body, err := readJSON(w, r)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

// readJSON reads the body of a native request, refusing other content
// types (415) and bodies over the limit (413).
func readJSON(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if err := checkContentType(r); err != nil {
		return nil, err
	}
	return readBody(w, r)
}

// decodeStrict decodes body, which must hold one JSON value and not null,
// into v, refusing unknown fields.
func decodeStrict(body []byte, v any) error {
	if isJSONNull(body) {
		return errNullBody
	}
	if err := checkDuplicateKeys(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			typeErr.Field = dropEmbedded(reflect.TypeOf(v), typeErr.Field)
		}
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return sdnlb.Errorf(sdnlb.EINVALID, "the body must hold exactly one JSON object")
	}
	return nil
}

// checkDuplicateKeys refuses a body with an object that holds a key twice,
// in any case: encoding/json matches keys without regard to case and lets
// the last win, so {"vips":[A],"vips":[]} would quietly mean no VIPs.
// A body that is not valid JSON is left to the decoder to report.
func checkDuplicateKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := duplicateKeysIn(dec, "")
	var dup *duplicateKeyError
	if errors.As(err, &dup) {
		return sdnlb.FieldErrorf(sdnlb.EINVALID, dup.path, "%s appears twice in one object (keys are matched without regard to case)", dup.path)
	}
	return nil
}

type duplicateKeyError struct{ path string }

func (e *duplicateKeyError) Error() string { return "duplicate key " + e.path }

// duplicateKeysIn reads one value from dec, at path, and every value in
// it.
func duplicateKeysIn(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := key.(string)
			at := name
			if path != "" {
				at = path + "." + name
			}
			folded := strings.ToLower(name)
			if seen[folded] {
				return &duplicateKeyError{at}
			}
			seen[folded] = true
			if err := duplicateKeysIn(dec, at); err != nil {
				return err
			}
		}
		_, err = dec.Token() // }
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := duplicateKeysIn(dec, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ]
		return err
	}
	return nil
}

// dropEmbedded removes from path, the dotted field path of an
// encoding/json error, the names of the structs t embeds: encoding/json
// puts them in, though they are no keys of the body.
func dropEmbedded(t reflect.Type, path string) string {
	embedded := map[string]bool{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.Anonymous {
				embedded[f.Name] = true
				collect(f.Type)
			}
		}
	}
	collect(t)
	keys := slices.DeleteFunc(strings.Split(path, "."), func(key string) bool { return embedded[key] })
	return strings.Join(keys, ".")
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
// that checkFields can name the field in a 400 instead of "unknown field".
type readOnly struct{ set bool }

func (ro *readOnly) UnmarshalJSON([]byte) error {
	ro.set = true
	return nil
}

// checkFields returns EINVALID naming the first read-only field req sets,
// else the first required field it lacks, in the order the struct declares
// them (embedded structs in place).
func checkFields(req any) error {
	v := reflect.Indirect(reflect.ValueOf(req))
	if err := firstField(v, isSetReadOnly, "%s is read-only"); err != nil {
		return err
	}
	return firstField(v, isMissing, "%s is required")
}

// firstField returns EINVALID, with the message format, naming the first
// field of the struct v for which is holds.
func firstField(v reflect.Value, is func(reflect.StructField, reflect.Value) bool, format string) error {
	t := v.Type()
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if err := firstField(fv, is, format); err != nil {
				return err
			}
			continue
		}
		if is(f, fv) {
			return sdnlb.FieldErrorf(sdnlb.EINVALID, jsonName(f), format, jsonName(f))
		}
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

var readOnlyType = reflect.TypeFor[readOnly]()

func isSetReadOnly(f reflect.StructField, v reflect.Value) bool {
	return f.Type == readOnlyType && v.Interface().(readOnly).set
}

// required reports whether the request field f is required. The rule is
// the one by which the spec marks fields required (internal/specgen), so
// that the two agree: every field is, unless tagged validate:"optional",
// json omitempty or swaggerignore (the read-only fields).
func required(f reflect.StructField) bool {
	return f.Tag.Get("swaggerignore") != "true" && f.Tag.Get("validate") != "optional" &&
		!strings.Contains(f.Tag.Get("json"), ",omitempty")
}

// requiredFields lists the JSON names of the fields of the request type
// t that are required (see required), embedded structs' included, sorted
// as the spec lists them.
func requiredFields(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		switch f := t.Field(i); {
		case f.Anonymous:
			names = append(names, requiredFields(f.Type)...)
		case required(f):
			names = append(names, jsonName(f))
		}
	}
	slices.Sort(names)
	return names
}

// isMissing reports whether v leaves out the required field f: nil, or an
// empty string, as the domain's validation calls an empty address missing.
func isMissing(f reflect.StructField, v reflect.Value) bool {
	if !required(f) {
		return false
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return true
		}
		v = v.Elem()
	}
	return v.Kind() == reflect.String && v.Len() == 0
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

// queryBool reads the boolean query parameter name, false when absent or
// empty. Every boolean parameter goes through it, so each takes what
// strconv.ParseBool takes (true, True, TRUE, t, T, 1 and their false
// counterparts: clients spell booleans differently, Python's requests as
// True) and refuses anything else rather than reading it as false.
func queryBool(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, sdnlb.FieldErrorf(sdnlb.EINVALID, name, "%s must be true or false (or 1, t, True, TRUE, 0, f, False, FALSE), not %q", name, s)
	}
	return b, nil
}

// queryFilter returns a pointer to the query value, nil when absent.
func queryFilter(r *http.Request, name string) *string {
	if v, ok := r.URL.Query()[name]; ok {
		return &v[0]
	}
	return nil
}

// addressFilter reads ?address= in the canonical form the store keeps,
// so that any spelling of an IPv6 address finds it.
func addressFilter(r *http.Request) *string {
	a := queryFilter(r, "address")
	if a != nil {
		*a = sdnlb.CanonicalAddress(*a)
	}
	return a
}
