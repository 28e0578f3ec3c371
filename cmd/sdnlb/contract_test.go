package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/sdnlb/sdnlb/controller/ofp"
	"github.com/sdnlb/sdnlb/openapi"
)

// The contract test replays a session of real requests against a real
// server, native and Floodlight, successes and errors, and checks every
// exchange against the spec the server serves (kin-openapi reads the
// Swagger 2.0 document as OpenAPI 3): the answer's status must be one the
// operation documents, its body must match the schema and its Content-Type
// one the operation produces; a request the server accepts (2xx) must be
// one the spec allows; and every operation of the spec must have answered
// 2xx at least once. A null passes only where the spec allows it the way
// Prism reads it (see strictNullable).

// TestOpenAPIContract runs the session on a server without a token, then
// the auth answers on one with a token and --auth-reads.
func TestOpenAPIContract(t *testing.T) {
	spec := newSpecChecker(t)

	m := MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"))
	open := spec.client(t, m, "")
	waitOK(t, open.base+"/readyz")
	open.probes()
	open.native()
	connectSwitch(t, m)
	open.switches()
	open.floodlight()
	open.unrouted()

	guarded := spec.client(t, MustRunMain(t, filepath.Join(t.TempDir(), "sdnlb.db"), func(c *Config) {
		c.APIToken, c.AuthReads = "s3cret", true
	}), "s3cret")
	guarded.auth()

	spec.assertCoverage(t)
}

// specChecker validates exchanges against the spec and remembers which
// statuses each operation answered.
type specChecker struct {
	doc      *openapi3.T
	router   routers.Router
	answered map[string]map[int]bool // operationId → statuses
}

func newSpecChecker(t *testing.T) *specChecker {
	t.Helper()
	var v2 openapi2.T
	if err := json.Unmarshal(openapi.JSON, &v2); err != nil {
		t.Fatal(err)
	}
	doc, err := openapi2conv.ToV3(&v2)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the spec as OpenAPI 3: %v", err)
	}
	strictNullable(doc)
	doc.Servers = nil // routes match on the path, whatever the host
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &specChecker{doc: doc, router: router, answered: map[string]map[int]bool{}}
}

// strictNullable drops nullable where no type stands beside it, as on an
// allOf wrapper of a reference: OpenAPI 3.0.3 gives it no effect there
// (null is added to the type beside it), Prism follows that rule, and
// kin-openapi would let the null through.
func strictNullable(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(ref *openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		s := ref.Value
		seen[s] = true
		if s.Nullable && (s.Type == nil || len(*s.Type) == 0) {
			s.Nullable = false
		}
		for _, p := range s.Properties {
			walk(p)
		}
		for _, sub := range slices.Concat(s.AllOf, s.AnyOf, s.OneOf, openapi3.SchemaRefs{s.Items, s.Not, s.AdditionalProperties.Schema}) {
			walk(sub)
		}
	}
	for _, s := range doc.Components.Schemas {
		walk(s)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			for _, p := range op.Parameters {
				if p.Value != nil {
					walk(p.Value.Schema)
				}
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, mt := range op.RequestBody.Value.Content {
					walk(mt.Schema)
				}
			}
			for _, r := range op.Responses.Map() {
				if r.Value != nil {
					for _, mt := range r.Value.Content {
						walk(mt.Schema)
					}
				}
			}
		}
	}
}

// client sends requests to m, with the bearer token when token is set.
func (s *specChecker) client(t *testing.T, m *Main, token string) *contractClient {
	return &contractClient{t: t, spec: s, base: "http://" + m.APIAddr(), token: token}
}

// assertCoverage fails for every operation of the spec that never
// answered 2xx, and for every error status the session never saw.
func (s *specChecker) assertCoverage(t *testing.T) {
	t.Helper()
	seen := map[int]bool{}
	for path, item := range s.doc.Paths.Map() {
		for method, op := range item.Operations() {
			ok := false
			for status := range s.answered[op.OperationID] {
				seen[status] = true
				ok = ok || status/100 == 2
			}
			if !ok {
				t.Errorf("%s %s (%s) never answered 2xx in the session", method, path, op.OperationID)
			}
		}
	}
	for _, status := range []int{400, 401, 404, 409, 412, 413, 415} {
		if !seen[status] {
			t.Errorf("no operation answered %d in the session", status)
		}
	}
}

// find returns the spec's operation for req. kin-openapi's router also
// matches a path parameter to nothing ("/v1/vips" to "/v1/vips/{id}"),
// which no server route does: such a match is no match.
func (s *specChecker) find(req *http.Request) (*routers.Route, map[string]string, bool) {
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		return nil, nil, false
	}
	for _, v := range params {
		if v == "" {
			return nil, nil, false
		}
	}
	return route, params, true
}

// methods lists the methods the spec documents on path, sorted.
func (s *specChecker) methods(path string) []string {
	var methods []string
	for _, method := range []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"} {
		req, _ := http.NewRequest(method, path, nil)
		if _, _, ok := s.find(req); ok {
			methods = append(methods, method)
		}
	}
	return methods
}

type contractClient struct {
	t     *testing.T
	spec  *specChecker
	base  string
	token string
}

// answer is what the server answered; a stream's body is not read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// step is one request and the status it must get; for an error, the field
// it must name and a part of its message. refused says the spec itself
// refuses the request (a required field left out, a wrong type), so that
// spec and server are seen to agree on it.
type step struct {
	method, path, body string
	headers            []string
	status             int
	field, message     string
	refused            bool
}

func (c *contractClient) run(steps []step) {
	c.t.Helper()
	for _, st := range steps {
		c.do(st)
	}
}

// do sends the step's request, checks the exchange against the spec and
// the step's expectations, and returns the answer.
func (c *contractClient) do(st step) answer {
	c.t.Helper()
	where := st.method + " " + st.path
	send, err := c.request(st)
	if err != nil {
		c.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(send)
	if err != nil {
		c.t.Fatalf("%s: %v", where, err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header}
	if !isStream(resp.Header) {
		a.body, _ = io.ReadAll(resp.Body)
	}
	resp.Body.Close()

	if a.status != st.status {
		c.t.Errorf("%s: status %d, want %d: %s", where, a.status, st.status, a.body)
	}
	if st.field != "" || st.message != "" {
		var e struct {
			Error struct{ Field, Message string }
		}
		_ = json.Unmarshal(a.body, &e)
		if e.Error.Field != st.field || !strings.Contains(e.Error.Message, st.message) {
			c.t.Errorf("%s: error field %q, message %q; want field %q, a message with %q", where, e.Error.Field, e.Error.Message, st.field, st.message)
		}
	}
	c.check(st, a)
	return a
}

func (c *contractClient) request(st step) (*http.Request, error) {
	req, err := http.NewRequest(st.method, c.base+st.path, strings.NewReader(st.body))
	if err != nil {
		return nil, err
	}
	if st.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for _, h := range st.headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Set(name, strings.TrimSpace(value))
	}
	return req, nil
}

func isStream(h http.Header) bool {
	return strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
}

// check validates the exchange against the spec.
func (c *contractClient) check(st step, a answer) {
	c.t.Helper()
	where := st.method + " " + st.path
	req, _ := c.request(st)
	route, params, ok := c.spec.find(req)
	if !ok {
		c.checkUnrouted(where, req.URL.Path, a)
		return
	}
	ctx := context.Background()
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearerPresent}}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	switch {
	case a.status/100 == 2 && reqErr != nil:
		c.t.Errorf("%s: answered %d to a request the spec refuses: %v", where, a.status, reqErr)
	case st.refused && reqErr == nil:
		c.t.Errorf("%s: the server refuses the request (%d) but the spec allows it", where, a.status)
	}

	opts := &openapi3filter.Options{IncludeResponseStatus: true}
	if isStream(a.header) {
		opts.ExcludeResponseBody = true
		if resp := route.Operation.Responses.Status(a.status); resp == nil || resp.Value.Content.Get(a.header.Get("Content-Type")) == nil {
			c.t.Errorf("%s: %d with Content-Type %q, which the spec does not document", where, a.status, a.header.Get("Content-Type"))
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: a.status, Header: a.header, Options: opts}
	if err := openapi3filter.ValidateResponse(ctx, out.SetBodyBytes(a.body)); err != nil {
		c.t.Errorf("%s: the answer breaks the spec: %v\nbody: %.500s", where, err, a.body)
	}
	id := route.Operation.OperationID
	if c.spec.answered[id] == nil {
		c.spec.answered[id] = map[int]bool{}
	}
	c.spec.answered[id][a.status] = true
}

// checkUnrouted checks an answer to a path or method the spec does not
// have: 404 (no such path) or 405 whose Allow header lists what the spec
// documents on the path; either way the usual error body.
func (c *contractClient) checkUnrouted(where, path string, a answer) {
	c.t.Helper()
	switch a.status {
	case http.StatusNotFound:
	case http.StatusMethodNotAllowed:
		if want := strings.Join(c.spec.methods(path), ", "); a.header.Get("Allow") != want {
			c.t.Errorf("%s: 405 with Allow %q, the spec documents %q", where, a.header.Get("Allow"), want)
		}
	default:
		c.t.Errorf("%s: answered %d on a route the spec does not have", where, a.status)
		return
	}
	var body any
	if err := json.Unmarshal(a.body, &body); err != nil {
		c.t.Errorf("%s: %d body is not JSON: %s", where, a.status, a.body)
		return
	}
	if err := c.spec.doc.Components.Schemas["api.errorResponse"].Value.VisitJSON(body); err != nil {
		c.t.Errorf("%s: %d body is not an errorResponse: %v", where, a.status, err)
	}
}

// bearerPresent satisfies the Bearer scheme when an Authorization: Bearer
// header is sent; the spec makes it optional ([{}, {Bearer: []}]).
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return errors.New("no bearer token")
	}
	return nil
}

// etag reads the ETag of the object at path.
func (c *contractClient) etag(path string) string {
	c.t.Helper()
	tag := c.do(step{method: "GET", path: path, status: 200}).header.Get("ETag")
	if tag == "" {
		c.t.Fatalf("GET %s: no ETag", path)
	}
	return tag
}

func (c *contractClient) probes() {
	c.t.Helper()
	c.do(step{method: "GET", path: "/healthz", status: 200})
	c.do(step{method: "GET", path: "/readyz", status: 200})
}

// native runs every /v1 operation, with the errors each documents.
func (c *contractClient) native() {
	c.t.Helper()
	tooLarge := `{"name":"` + strings.Repeat("x", 1<<20) + `"}`
	c.run([]step{
		{method: "POST", path: "/v1/vips", body: `{"id":"web","name":"web","address":"10.0.0.100","protocol":"TCP","port":80}`, status: 201},
		{method: "POST", path: "/v1/vips", body: `{"id":"sticky","address":"10.0.0.101","port":443,"session_persistence":{"type":"SOURCE_IP","timeout":60}}`, status: 201},
		{method: "POST", path: "/v1/vips", body: `{"name":"x","port":80}`, status: 400, field: "address", message: "address is required", refused: true},
		{method: "POST", path: "/v1/vips", body: `{"address":"10.0.0.102","port":"80"}`, status: 400, field: "port", refused: true},
		{method: "POST", path: "/v1/vips", body: `{"address":"127.0.0.1"}`, status: 400, field: "address"},
		{method: "POST", path: "/v1/vips", body: `{"id":"web","address":"10.0.0.102"}`, status: 409, field: "id"},
		{method: "POST", path: "/v1/vips", body: `{"address":"10.0.0.102","pool_id":"nope"}`, status: 404},
		{method: "POST", path: "/v1/vips", body: `{"address":"10.0.0.102"}`, headers: []string{"Content-Type: text/plain"}, status: 415},
		{method: "POST", path: "/v1/vips", body: tooLarge, status: 413},
		{method: "GET", path: "/v1/vips", status: 200},
		{method: "GET", path: "/v1/vips?address=10.0.0.100&limit=1", status: 200},
		{method: "GET", path: "/v1/vips?limit=0", status: 400, field: "limit", refused: true},
		{method: "GET", path: "/v1/vips/web", status: 200},
		{method: "GET", path: "/v1/vips/nope", status: 404},

		{method: "POST", path: "/v1/pools", body: `{"id":"web-pool","name":"web","vip_id":"web","lb_method":"ROUND_ROBIN"}`, status: 201},
		{method: "POST", path: "/v1/pools", body: `{"id":"spare"}`, status: 201},
		{method: "POST", path: "/v1/pools", body: `{"vip_id":"web"}`, status: 409, field: "vip_id"},
		{method: "POST", path: "/v1/pools", body: `{"vip_id":"nope"}`, status: 404, field: "vip_id"},
		{method: "POST", path: "/v1/pools", body: `{"lb_method":"FASTEST"}`, status: 400, field: "lb_method", refused: true},
		{method: "POST", path: "/v1/pools", body: `{"id":"adaptive","lb_method":"ADAPTIVE","slow_start":30}`, status: 201},
		{method: "POST", path: "/v1/pools", body: `{"lb_method":"ROUND_ROBIN","slow_start":30}`, status: 400, field: "slow_start"},
		{method: "GET", path: "/v1/pools?vip_id=web", status: 200},
		{method: "GET", path: "/v1/pools/web-pool", status: 200},

		{method: "POST", path: "/v1/members", body: `{"id":"web-1","pool_id":"web-pool","address":"10.0.0.3","port":8080}`, status: 201},
		{method: "POST", path: "/v1/members", body: `{"id":"web-2","pool_id":"web-pool","address":"10.0.0.4"}`, status: 201},
		{method: "POST", path: "/v1/members", body: `{"id":"adaptive-1","pool_id":"adaptive","address":"10.0.0.6","capacity":500}`, status: 201},
		{method: "POST", path: "/v1/members", body: `{"pool_id":"adaptive","address":"10.0.0.7","capacity":-1}`, status: 400, field: "capacity"},
		{method: "POST", path: "/v1/members", body: `{"address":"10.0.0.5"}`, status: 400, field: "pool_id", message: "pool_id is required", refused: true},
		{method: "POST", path: "/v1/members", body: `{"pool_id":"web-pool","port":80}`, status: 400, field: "address", message: "address is required", refused: true},
		{method: "POST", path: "/v1/members", body: `{"pool_id":"nope","address":"10.0.0.5"}`, status: 404, field: "pool_id"},
		{method: "POST", path: "/v1/members", body: `{"pool_id":"web-pool","address":"10.0.0.3","port":8080}`, status: 409, field: "address"},
		{method: "GET", path: "/v1/members?pool_id=web-pool&address=10.0.0.3", status: 200},
		{method: "GET", path: "/v1/members/web-1", status: 200},
		{method: "GET", path: "/v1/members/nope", status: 404},
		{method: "GET", path: "/v1/pools/web-pool/members?limit=1", status: 200},
		{method: "GET", path: "/v1/pools/nope/members", status: 404},

		{method: "POST", path: "/v1/monitors", body: `{"id":"http-check","type":"HTTP","delay":5,"timeout":2,"url_path":"/health","expected_codes":"200-299"}`, status: 201},
		{method: "POST", path: "/v1/monitors", body: `{"id":"no-type","delay":5}`, status: 400, field: "type", message: "type is required", refused: true},
		{method: "POST", path: "/v1/monitors", body: `{"type":"TCP","delay":1,"timeout":1}`, status: 400, field: "timeout"},
		{method: "POST", path: "/v1/monitors", body: `{"id":"http-check","type":"TCP"}`, status: 409, field: "id"},
		{method: "POST", path: "/v1/monitors", body: `{"id":"agent-check","type":"AGENT","port":5555,"delay":0.5,"timeout":0.2}`, status: 201},
		{method: "POST", path: "/v1/monitors", body: `{"type":"AGENT"}`, status: 400, field: "port"},
		{method: "POST", path: "/v1/pools/adaptive/monitors", body: `{"monitor_id":"agent-check"}`, status: 204},
		{method: "POST", path: "/v1/pools/web-pool/monitors", body: `{"monitor_id":"http-check"}`, status: 204},
		{method: "POST", path: "/v1/pools/web-pool/monitors", body: `{}`, status: 400, field: "monitor_id", message: "monitor_id is required", refused: true},
		{method: "POST", path: "/v1/pools/web-pool/monitors", body: `{"monitor_id":"nope"}`, status: 404},
		{method: "GET", path: "/v1/monitors?pool_id=web-pool", status: 200},
		{method: "GET", path: "/v1/monitors/http-check", status: 200},
		{method: "GET", path: "/v1/monitors/nope", status: 404},
	})

	tag := c.etag("/v1/vips/web")
	c.run([]step{
		{method: "PUT", path: "/v1/vips/web", body: `{"address":"10.0.0.100","port":80,"pool_id":"web-pool"}`, headers: []string{"If-Match: " + tag}, status: 200},
		{method: "PUT", path: "/v1/vips/web", body: `{"address":"10.0.0.100","port":80}`, headers: []string{"If-Match: " + tag}, status: 412},
		{method: "PUT", path: "/v1/vips/web", body: `{"port":80}`, status: 400, field: "address", message: "address is required", refused: true},
		{method: "PUT", path: "/v1/vips/web", body: `{"id":"web","address":"10.0.0.100"}`, status: 400, field: "id", message: "read-only"},
		{method: "PUT", path: "/v1/vips/web", body: `{"address":"10.0.0.101","port":443}`, status: 409, field: "address"},
		{method: "PUT", path: "/v1/vips/nope", body: `{"address":"10.0.0.100"}`, status: 404},
		{method: "PATCH", path: "/v1/vips/web", body: `{"session_persistence":{"type":"SOURCE_IP","timeout":30}}`, headers: []string{"Content-Type: application/merge-patch+json"}, status: 200},
		{method: "PATCH", path: "/v1/vips/web", body: `{"session_persistence":null,"connection_limit":1000}`, status: 200},
		{method: "PATCH", path: "/v1/vips/web", body: `{"connection_limit":0}`, status: 400, field: "connection_limit"},
		{method: "PATCH", path: "/v1/vips/sticky", body: `{"address":"10.0.0.100","port":80}`, status: 409, field: "address"},
		{method: "PATCH", path: "/v1/vips/nope", body: `{"name":"x"}`, status: 404},
		{method: "PATCH", path: "/v1/vips/web", body: `{"name":"x"}`, headers: []string{"Content-Type: text/plain"}, status: 415},

		{method: "PUT", path: "/v1/pools/web-pool", body: `{"vip_id":"web","lb_method":"LEAST_CONNECTIONS"}`, status: 200},
		{method: "PUT", path: "/v1/pools/spare", body: `{"vip_id":"web"}`, status: 409, field: "vip_id"},
		{method: "PUT", path: "/v1/pools/nope", body: `{}`, status: 404},
		{method: "PATCH", path: "/v1/pools/web-pool", body: `{"forwarding":"DSR"}`, status: 400, field: "forwarding"},
		{method: "PATCH", path: "/v1/pools/web-pool", body: `{"name":"web","admin_state_up":true}`, status: 200},
		{method: "PATCH", path: "/v1/pools/spare", body: `{"vip_id":"nope"}`, status: 404, field: "vip_id"},
		{method: "PATCH", path: "/v1/pools/spare", body: `{"vip_id":"web"}`, status: 409, field: "vip_id"},

		{method: "PUT", path: "/v1/members/web-1", body: `{"pool_id":"web-pool","address":"10.0.0.3","port":8080,"weight":2}`, status: 200},
		{method: "PUT", path: "/v1/members/web-1", body: `{"port":8080}`, status: 400, field: "address", message: "address is required", refused: true},
		{method: "PUT", path: "/v1/members/web-1", body: `{"address":"10.0.0.4"}`, status: 409, field: "address"},
		{method: "PUT", path: "/v1/members/nope", body: `{"address":"10.0.0.4"}`, status: 404},
		{method: "PATCH", path: "/v1/members/web-2", body: `{"weight":0}`, status: 200},
		{method: "PATCH", path: "/v1/members/web-2", body: `{"pool_id":"spare"}`, status: 400, field: "pool_id"},
		{method: "PATCH", path: "/v1/members/web-2", body: `{"address":"10.0.0.3","port":8080}`, status: 409, field: "address"},
		{method: "PATCH", path: "/v1/members/nope", body: `{"weight":1}`, status: 404},

		{method: "PUT", path: "/v1/monitors/http-check", body: `{"type":"HTTP","url_path":"/health"}`, status: 200},
		{method: "PUT", path: "/v1/monitors/http-check", body: `{"url_path":"/health"}`, status: 400, field: "type", message: "type is required", refused: true},
		{method: "PUT", path: "/v1/monitors/nope", body: `{"type":"TCP"}`, status: 404},
		{method: "PATCH", path: "/v1/monitors/http-check", body: `{"delay":1,"timeout":0.5,"max_retries":2}`, status: 200},
		{method: "PATCH", path: "/v1/monitors/http-check", body: `{"delay":0.01}`, status: 400, field: "delay"},
		{method: "PATCH", path: "/v1/monitors/nope", body: `{"delay":10}`, status: 404},
		{method: "PATCH", path: "/v1/monitors/agent-check", body: `{"port":6000}`, status: 200},
		{method: "PATCH", path: "/v1/pools/adaptive", body: `{"slow_start":0}`, status: 200},
		{method: "PATCH", path: "/v1/members/adaptive-1", body: `{"capacity":0}`, status: 200},
	})
	waitOK(c.t, c.base+"/v1/pools/web-pool/stats")
	c.run([]step{
		{method: "GET", path: "/v1/stats", status: 200},
		{method: "GET", path: "/v1/stats?watch=true", status: 200},
		{method: "GET", path: "/v1/pools/web-pool/stats", status: 200},
		{method: "GET", path: "/v1/pools/web-pool/stats?watch=true", status: 200},
		{method: "GET", path: "/v1/pools/nope/stats", status: 404},
		{method: "GET", path: "/v1/events", status: 200},
		{method: "GET", path: "/v1/switches", status: 200},
		{method: "GET", path: "/v1/switches/00:00:00:00:00:00:00:09/flows", status: 404},
		{method: "GET", path: "/v1/topology", status: 200},
		{method: "GET", path: "/v1/cluster", status: 200},
		{method: "GET", path: "/v1/bgp", status: 200},
		{method: "GET", path: "/v1/config", status: 200},
		{method: "PUT", path: "/v1/config?dry_run=true", body: `{"monitors":[{"id":"tcp-check","type":"TCP"}]}`, status: 200},
		{method: "PUT", path: "/v1/config", body: `{"monitors":[{"id":"tcp-check","type":"TCP"}]}`, status: 200},
		{method: "PUT", path: "/v1/config", body: "monitors:\n  - id: tcp-check\n    type: TCP\n", headers: []string{"Content-Type: application/yaml"}, status: 200},
		{method: "PUT", path: "/v1/config", body: `{"monitors":[{"id":"tcp-check","type":"TCP","delay":-1}]}`, status: 400, field: "monitors[0].delay"},

		// A delete that would orphan others says how to take them along.
		{method: "DELETE", path: "/v1/vips/web", status: 409, message: "?cascade=true"},
		{method: "DELETE", path: "/v1/pools/web-pool", status: 409, message: "?cascade=true"},
		{method: "DELETE", path: "/v1/monitors/http-check", status: 409, message: "?cascade=true"},
		{method: "DELETE", path: "/v1/vips/web?cascade=maybe", status: 400, field: "cascade", refused: true},
		{method: "DELETE", path: "/v1/pools/web-pool/monitors/http-check", status: 204},
		{method: "DELETE", path: "/v1/pools/web-pool/monitors/http-check", status: 404},
		{method: "DELETE", path: "/v1/monitors/http-check", status: 204},
		{method: "DELETE", path: "/v1/monitors/http-check", status: 404},
		{method: "DELETE", path: "/v1/members/web-1", headers: []string{`If-Match: "stale"`}, status: 412},
		{method: "DELETE", path: "/v1/members/web-1", status: 204},
		{method: "DELETE", path: "/v1/members/web-1", status: 404},
		{method: "DELETE", path: "/v1/pools/spare", status: 204},
		{method: "DELETE", path: "/v1/pools/adaptive?cascade=true", status: 204},
		{method: "DELETE", path: "/v1/monitors/agent-check", status: 204},
		{method: "DELETE", path: "/v1/pools/spare", status: 404},
		{method: "DELETE", path: "/v1/vips/web?cascade=true", status: 204},
		{method: "DELETE", path: "/v1/vips/web", status: 404},
		{method: "GET", path: "/v1/pools/web-pool", status: 404},
		{method: "DELETE", path: "/v1/vips/sticky", status: 204},
	})
}

// switches reads the switch connectSwitch plays.
func (c *contractClient) switches() {
	c.t.Helper()
	c.do(step{method: "GET", path: "/v1/switches", status: 200})
	c.do(step{method: "GET", path: "/v1/switches/" + fakeDPID + "/flows", status: 200})
}

// fakeDPID is the datapath id connectSwitch plays.
const fakeDPID = "00:00:00:00:00:00:00:01"

// connectSwitch connects an OpenFlow 1.3 switch to m, as much of one as
// the switch routes need: it has one port and no select groups, answers
// every flow request with one flow, and takes every other message in
// silence. It returns once the controller lists the switch, and runs
// until the test ends.
func connectSwitch(t *testing.T, m *Main) {
	t.Helper()
	conn, err := net.Dial("tcp", m.OpenFlowAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	port := ofp.Port{PortNo: 1, HWAddr: [6]byte{2, 0, 0, 0, 0, 1}, Name: "eth1", State: ofp.PortStateLive}
	flow := ofp.FlowStats{Priority: 100, IdleTimeout: 30, PacketCount: 3, ByteCount: 180}
	go func() {
		r := bufio.NewReader(conn)
		var buf, out []byte
		reply := func(xid uint32, m ofp.Message) bool {
			out = ofp.Append(out[:0], xid, m)
			_, err := conn.Write(out)
			return err == nil
		}
		for {
			msg, err := ofp.ReadMessage(r, buf)
			if err != nil {
				return
			}
			buf = msg[:0]
			h, decoded, err := ofp.Decode(msg)
			if err != nil {
				continue // a message this switch has no use for
			}
			ok := true
			switch m := decoded.(type) {
			case *ofp.Hello:
				ok = reply(h.XID, ofp.Hello{Versions: []uint8{ofp.Version}})
			case *ofp.FeaturesRequest:
				ok = reply(h.XID, ofp.FeaturesReply{DatapathID: 1, NTables: 254})
			case *ofp.EchoRequest:
				ok = reply(h.XID, ofp.EchoReply{Data: m.Data})
			case *ofp.BarrierRequest:
				ok = reply(h.XID, ofp.BarrierReply{})
			case *ofp.MultipartRequest:
				switch m.Body.(type) {
				case ofp.PortDescRequest:
					ok = reply(h.XID, ofp.MultipartReply{Body: ofp.PortDescReply{Ports: []ofp.Port{port}}})
				case ofp.FlowStatsRequest:
					ok = reply(h.XID, ofp.MultipartReply{Body: ofp.FlowStatsReply{Stats: []ofp.FlowStats{flow}}})
				default:
					ok = reply(h.XID, ofp.ErrorMsg{ErrType: ofp.ErrTypeBadRequest, Code: ofp.BadRequestBadMultipart})
				}
			}
			if !ok {
				return
			}
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var list struct{ Switches []json.RawMessage }
		call(t, m, "GET", "/v1/switches", nil, 200, &list)
		if len(list.Switches) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the switch is not listed after 10 s")
		}
	}
}

// floodlight runs the Floodlight operations as Floodlight's scripts call
// them, with JSON bodies.
func (c *contractClient) floodlight() {
	c.t.Helper()
	const fl = "/quantum/v1.0"
	c.run([]step{
		{method: "POST", path: fl + "/vips/", body: `{"id":"1","name":"vip1","protocol":"tcp","address":"10.0.0.200","port":"80"}`, status: 200},
		{method: "POST", path: fl + "/vips/", body: `{"id":"2","protocol":"tcp","address":"10.0.0.200","port":"80"}`, status: 409},
		{method: "POST", path: fl + "/vips/", body: `{"id":"3","port":"80"}`, status: 400, field: "address", message: "address is required"},
		{method: "POST", path: fl + "/vips/", body: `{"id":"3","address":"10.0.0.201"}`, headers: []string{"Content-Type: text/plain"}, status: 415},
		{method: "GET", path: fl + "/vips/", status: 200},
		{method: "GET", path: fl + "/vips/1/", status: 200},
		{method: "GET", path: fl + "/vips/9/", status: 404},
		{method: "PUT", path: fl + "/vips/1/", body: `{"name":"web"}`, status: 200},
		{method: "PUT", path: fl + "/vips/9/", body: `{"name":"web"}`, status: 404},

		{method: "POST", path: fl + "/pools/", body: `{"id":"1","name":"pool1","lb_method":"RR","vip_id":"1"}`, status: 200},
		{method: "POST", path: fl + "/pools/", body: `{"id":"2","vip_id":"9"}`, status: 404, field: "vip_id"},
		{method: "GET", path: fl + "/pools/", status: 200},
		{method: "GET", path: fl + "/pools/1/", status: 200},
		{method: "PUT", path: fl + "/pools/1/", body: `{"lb_method":"WRR"}`, status: 200},
		{method: "PUT", path: fl + "/pools/1/", body: `{"lb_method":"FASTEST"}`, status: 400, field: "lb_method"},

		// Floodlight's members need no port: 0 serves the VIP's.
		{method: "POST", path: fl + "/members/", body: `{"id":"1","address":"10.0.0.11","pool_id":"1","weight":"1"}`, status: 200},
		{method: "POST", path: fl + "/members/", body: `{"id":"2","address":"10.0.0.12","pool_id":"1","port":"80"}`, status: 200},
		{method: "POST", path: fl + "/members/", body: `{"id":"3","pool_id":"1"}`, status: 400, field: "address", message: "address is required"},
		{method: "POST", path: fl + "/members/", body: `{"id":"3","address":"10.0.0.13","pool_id":"9"}`, status: 404, field: "pool_id"},
		{method: "GET", path: fl + "/members/", status: 200},
		{method: "GET", path: fl + "/members/1/", status: 200},
		{method: "PUT", path: fl + "/members/1/", body: `{"weight":"2"}`, status: 200},
		{method: "PUT", path: fl + "/members/1/3/", status: 200},
		{method: "PUT", path: fl + "/members/1/x/", status: 400, field: "weight"},
		{method: "GET", path: fl + "/pools/1/members/", status: 200},
		{method: "PUT", path: fl + "/pools/1/members/2/", status: 200},
		{method: "PUT", path: fl + "/pools/1/members/9/", status: 404},

		// Floodlight's monitors need no type: TCP.
		{method: "POST", path: fl + "/health_monitors/", body: `{"id":"1","name":"monitor1"}`, status: 200},
		{method: "POST", path: fl + "/pools/1/health_monitors/", body: `{"id":"1"}`, status: 200},
		{method: "POST", path: fl + "/pools/1/health_monitors/", body: `{"name":"x"}`, status: 400, field: "id"},
		{method: "GET", path: fl + "/pools/1/health_monitors/", status: 200},
		{method: "GET", path: fl + "/health_monitors/", status: 200},
		{method: "GET", path: fl + "/health_monitors/1/", status: 200},
		{method: "PUT", path: fl + "/health_monitors/1/", body: `{"delay":"10","timeout":"3"}`, status: 200},
		{method: "PUT", path: fl + "/health_monitors/1/", body: `{"attempts_before_deactivation":"0"}`, status: 400, field: "attempts_before_deactivation"},
		{method: "POST", path: fl + "/health_monitors/all/disable/", status: 200},
		{method: "POST", path: fl + "/health_monitors/all/enable/", status: 200},
		{method: "POST", path: fl + "/health_monitors/monitors/10/", status: 200},
		{method: "POST", path: fl + "/health_monitors/monitors/x/", status: 400, field: "period"},
	})
	waitOK(c.t, c.base+fl+"/pools/1/stats/")
	c.run([]step{
		{method: "GET", path: fl + "/pools/1/stats/", status: 200},

		{method: "DELETE", path: fl + "/pools/1/health_monitors/1/", status: 200},
		{method: "DELETE", path: fl + "/pools/1/health_monitors/1/", status: 404},
		{method: "DELETE", path: fl + "/members/2/", status: 200},
		{method: "DELETE", path: fl + "/members/2/", status: 404},
		{method: "DELETE", path: fl + "/health_monitors/1/", status: 200},
		{method: "DELETE", path: fl + "/vips/1/", status: 200},
		{method: "DELETE", path: fl + "/pools/1/", status: 200},
		{method: "DELETE", path: fl + "/pools/1/", status: 404},
		{method: "DELETE", path: fl + "/clear/", status: 200},
	})
}

// unrouted sends what the spec has no operation for.
func (c *contractClient) unrouted() {
	c.t.Helper()
	c.run([]step{
		{method: "DELETE", path: "/v1/vips", status: 405},
		{method: "POST", path: "/v1/vips/web", body: `{}`, status: 405},
		{method: "PUT", path: "/v1/pools/p/stats", body: `{}`, status: 405},
		{method: "GET", path: "/v1/nothing", status: 404},
	})
}

// auth runs on a server with a token and --auth-reads: without the token
// every route answers 401, with it as usual.
func (c *contractClient) auth() {
	c.t.Helper()
	none := []string{"Authorization:"}
	wrong := []string{"Authorization: Bearer wrong"}
	c.run([]step{
		{method: "GET", path: "/v1/vips", headers: none, status: 401},
		{method: "GET", path: "/v1/events", headers: none, status: 401},
		{method: "GET", path: "/v1/stats?watch=true", headers: none, status: 401},
		{method: "POST", path: "/v1/vips", body: `{"address":"10.0.0.100"}`, headers: wrong, status: 401},
		{method: "DELETE", path: "/quantum/v1.0/clear/", headers: none, status: 401},
		{method: "GET", path: "/quantum/v1.0/vips/", headers: none, status: 401},
		{method: "POST", path: "/v1/vips", body: `{"id":"web","address":"10.0.0.100"}`, status: 201},
		{method: "GET", path: "/v1/vips/web", status: 200},
		{method: "DELETE", path: "/v1/vips/web", status: 204},
	})
}
